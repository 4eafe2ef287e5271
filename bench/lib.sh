# shellcheck shell=bash disable=SC2034 # its globals are the scripts'
# bench/lib.sh — shared parts of bench/file-lock.sh, redis-lock.sh, cache.sh,
# crowd.sh and outputs.sh, sourced by each right after its header comment:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # sets here, BL, TRUE, CC ...
#   bench_args "$@"                             # --quick (quick=1), --help
#
# It defines functions and a few globals only; it starts nothing by itself.
# The scripts run with set -euo pipefail, and so does everything here.

NAME=${BASH_SOURCE[-1]##*/} # the script's name, for its error messages
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) # bench/
repo=$(dirname "$here")
BL=${BUFFERLOCK_BIN:-$repo/build/bufferlock}
[[ $BL == /* ]] || BL=$PWD/$BL
TRUE=/bin/true
CC=${CC:-cc}
tmp=
redis_pid=
tls_redis_pid=
extra_pids=() # servers of start_servers and start_cluster
errors=0
OUT=

# bench_args "$@": --quick sets quick=1; --help prints the script's header
# comment (line 2 up to the first line that is not a comment).
bench_args() {
    local arg
    quick=0
    for arg in "$@"; do
        case $arg in
            --quick) quick=1 ;;
            -h | --help)
                sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[-1]}"
                exit 0
                ;;
            *)
                echo "$NAME: unknown argument: $arg (try --help)" >&2
                exit 2
                ;;
        esac
    done
}

note() { printf '  note: %s\n' "$*"; }
err() {
    printf '  ERROR: %s\n' "$*"
    errors=$((errors + 1))
}
hr() { printf '\n== %s\n' "$*"; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# bench_exit: the last step; exit 1 if any err() was reported
bench_exit() {
    if ((errors)); then
        echo "  $errors error(s): see ERROR lines above"
        exit 1
    fi
}

# ------------------------------------------------------------ set-up -------

# want CMD PKG...: if CMD is missing, PKGs go on the list install_missing takes
need=()
want() {
    command -v "$1" >/dev/null || need+=("${@:2}")
}
# install_missing NOUN [FAILNOTE]: as root, apt-get install what want() listed
install_missing() {
    ((${#need[@]})) || return 0
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "installing missing $1: ${need[*]}"
        apt-get update -qq || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "${need[@]}" >/dev/null ||
            echo "  apt-get install failed${2:-}" >&2
    else
        echo "missing (not root, not installing): ${need[*]}" >&2
    fi
}

require_cc() {
    command -v "$CC" >/dev/null || {
        echo "$NAME: no C compiler ($CC)" >&2
        exit 2
    }
}
require_bl() {
    [[ -x $BL ]] || {
        echo "$NAME: no bufferlock at $BL (build it, or set BUFFERLOCK_BIN)" >&2
        exit 2
    }
}

# make_tmp PROG...: a temporary directory, removed at exit (after stopping the
# redis-server, if one was started), and bench/PROG.c built into it.  Static
# links keep the driver's own RSS (a floor under every ru_maxrss it reports)
# and clocknow's start-up small; fall back to dynamic if there is no libc.a.
make_tmp() {
    local p
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/bufferlock-bench.XXXXXX")
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    for p in "$@"; do
        "$CC" -O2 -static -o "$tmp/$p" "$here/$p.c" 2>/dev/null ||
            "$CC" -O2 -o "$tmp/$p" "$here/$p.c"
    done
    SPAWN=$tmp/spawn
    CLOCKNOW=$tmp/clocknow
}
cleanup() {
    stop_redis
    stop_nginx
    rm -rf "$tmp"
}

# bench_header WHAT: the first lines of the report
bench_header() {
    echo "bufferlock $1 bench ($( ((quick)) && echo quick || echo full) run)"
    echo "  $(nproc) CPUs, kernel $(uname -r), load $(loadavg)"
}

# ------------------------------------------------------- redis-server ------

# port_busy PORT: is something listening on 127.0.0.1:PORT?
port_busy() {
    if command -v ss >/dev/null; then
        [[ -n $(ss -Hltn "sport = :$1" 2>/dev/null) ]]
    else
        (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null
    fi
}
# _start_server PIDVAR PORTVAR DIR TLS: a private redis-server on a free
# loopback port, run in DIR (log DIR/log), with the extra arguments in the
# array srv_args; TLS=1: TLS only (--port 0 --tls-port PORT).  Ready when
# redis-cli with the options in the array cli_args answers PING and reports
# the server's own pid.  Sets PIDVAR (at once, so cleanup can stop it) and
# PORTVAR; returns 1 if no try came up.
_start_server() {
    local -n _pid=$1 _port=$2
    local dir=$3 tls=$4 try i portargs
    mkdir -p "$dir"
    for try in 1 2 3 4 5 6 7 8; do
        # (PORT_MAX: a cluster node's bus port is its port + 10000)
        _port=$((20000 + RANDOM % (${PORT_MAX:-60000} - 20000)))
        port_busy "$_port" && continue
        portargs=(--port "$_port")
        ((tls)) && portargs=(--port 0 --tls-port "$_port")
        redis-server "${portargs[@]}" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$dir" --daemonize no --logfile "$dir/log" "${srv_args[@]}" \
            </dev/null >/dev/null 2>&1 &
        _pid=$!
        for ((i = 0; i < 100; i++)); do
            if [[ $(redis-cli "${cli_args[@]}" -p "$_port" PING 2>/dev/null) == PONG ]]; then
                # answering, and it is ours (not a server that was there)
                [[ $(redis-cli "${cli_args[@]}" -p "$_port" INFO server 2>/dev/null |
                    sed -n 's/^process_id:\([0-9]*\).*/\1/p') == "$_pid" ]] && return 0
                break
            fi
            kill -0 "$_pid" 2>/dev/null || break
            sleep 0.05
        done
        kill "$_pid" 2>/dev/null || true
        wait "$_pid" 2>/dev/null || true
        _pid=
        echo "  (port $_port: redis-server did not come up, try $try)" >&2
    done
    return 1
}
# start_redis: a private server on a free loopback port; sets PORT, redis_pid
start_redis() {
    local srv_args=() cli_args=()
    _start_server redis_pid PORT "$tmp/redis" 0 && return 0
    echo "$NAME: could not start redis-server; log:" >&2
    tail -n 5 "$tmp/redis/log" >&2 || true
    exit 2
}
# make_tls_certs DIR: in DIR, a CA (ca.pem) and a server certificate for
# IP:127.0.0.1 and DNS:localhost signed by it (server.pem, server.key), EC
# P-256 keys; returns non-zero if openssl failed
make_tls_certs() {
    local d=$1
    mkdir -p "$d"
    (
        set -e
        cd "$d"
        openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
            -keyout ca.key -out ca.pem -subj '/CN=bufferlock bench CA' -days 30 \
            -addext 'basicConstraints=critical,CA:true' -addext 'keyUsage=critical,keyCertSign'
        openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
            -keyout server.key -out server.csr -subj '/CN=bufferlock bench server'
        printf '%s\n' 'basicConstraints=critical,CA:false' 'extendedKeyUsage=serverAuth' \
            'subjectAltName=IP:127.0.0.1,DNS:localhost' >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
            -days 30 -sha256 -extfile server.ext -out server.pem
    ) >"$d/openssl.log" 2>&1
}
# start_tls_redis DIR: a TLS-only private server presenting DIR/server.pem
# (make_tls_certs); sets TLS_PORT, tls_redis_pid.  Returns 1 (no exit) if it
# did not come up, e.g. a redis-server built without TLS.
start_tls_redis() {
    local d=$1
    local srv_args=(--tls-cert-file "$d/server.pem" --tls-key-file "$d/server.key"
        --tls-ca-cert-file "$d/ca.pem" --tls-auth-clients no)
    local cli_args=(--tls --cacert "$d/ca.pem")
    _start_server tls_redis_pid TLS_PORT "$tmp/redis-tls" 1
}
# start_servers NAME N: N more independent private servers (for a quorum),
# in $tmp/NAME.I; appends their pids to extra_pids and sets the array
# NAME_urls to their redis:// URLs.  Exits if one does not come up.
start_servers() {
    local -n _urls=${1}_urls
    local srv_args=() cli_args=() i srv_pid srv_port
    _urls=()
    for ((i = 1; i <= $2; i++)); do
        _start_server srv_pid srv_port "$tmp/$1.$i" 0 || {
            echo "$NAME: could not start redis-server $1.$i; log:" >&2
            tail -n 5 "$tmp/$1.$i/log" >&2 || true
            exit 2
        }
        extra_pids+=("$srv_pid")
        _urls+=("redis://127.0.0.1:$srv_port/0")
    done
}
# start_cluster: a 3-master Redis Cluster of private servers (slots spread by
# redis-cli --cluster create); appends their pids to extra_pids and sets the
# array cluster_ports.  Returns 1 (no exit) if it did not form.
start_cluster() {
    local srv_args=(--cluster-enabled yes --cluster-config-file nodes.conf
        --cluster-node-timeout 5000)
    local cli_args=() PORT_MAX=50000 i srv_pid srv_port addrs=() ok
    cluster_ports=()
    for i in 1 2 3; do
        _start_server srv_pid srv_port "$tmp/cluster.$i" 0 || return 1
        extra_pids+=("$srv_pid")
        cluster_ports+=("$srv_port")
        addrs+=("127.0.0.1:$srv_port")
    done
    redis-cli --cluster create "${addrs[@]}" --cluster-yes >"$tmp/cluster.log" 2>&1 || return 1
    for ((i = 0; i < 200; i++)); do
        ok=0
        for srv_port in "${cluster_ports[@]}"; do
            redis-cli -p "$srv_port" CLUSTER INFO | tr -d '\r' | grep -qx 'cluster_state:ok' && ok=$((ok + 1))
        done
        ((ok == 3)) && return 0
        sleep 0.05
    done
    return 1
}
# stop_redis: stop the servers start_redis, start_tls_redis, start_servers
# and start_cluster started, by their pids (if any)
stop_redis() {
    local p
    for p in "$redis_pid" "$tls_redis_pid" "${extra_pids[@]}"; do
        if [[ -n $p ]]; then
            kill "$p" 2>/dev/null || true
            wait "$p" 2>/dev/null || true
        fi
    done
    redis_pid='' tls_redis_pid='' extra_pids=()
}

# ------------------------------------------------------- nginx WebDAV ------

nginx_pid=
# stop_nginx: stop start_nginx's nginx by the pid it wrote (a daemon, not our
# child), SIGKILL after a bounded wait.
stop_nginx() {
    local i
    if [[ -z $nginx_pid || $(cat "/proc/$nginx_pid/comm" 2>/dev/null) != nginx ]]; then
        nginx_pid=
        return 0
    fi
    kill "$nginx_pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        [[ -d /proc/$nginx_pid ]] || break
        sleep 0.05
    done
    [[ ! -d /proc/$nginx_pid ]] || kill -KILL "$nginx_pid" 2>/dev/null || true
    nginx_pid=
    return 0
}
# nginx_conf DIR PORT [RATE]: WebDAV PUT/DELETE under /cache/ with no size
# limit, every temp path in DIR, the body temp path on the root's file system
# (so a PUT ends in a rename); as root, workers that can write DIR.  With
# RATE (nginx's limit_rate, e.g. 150m), each response is sent at most that
# many bytes a second.
nginx_conf() {
    [[ $(id -u) != 0 ]] || echo 'user root root;'
    cat <<EOF
daemon on;
worker_processes 1;
pid $1/nginx.pid;
error_log $1/error.log;
events { worker_connections 64; }
http {
    access_log off;
    default_type application/octet-stream;
    sendfile on;
    client_body_temp_path $1/data/.body;
    proxy_temp_path $1/tmp/proxy;
    fastcgi_temp_path $1/tmp/fastcgi;
    uwsgi_temp_path $1/tmp/uwsgi;
    scgi_temp_path $1/tmp/scgi;
    server {
        listen 127.0.0.1:$2;
        root $1/data;
        location /cache/ {
            dav_methods PUT DELETE MKCOL COPY MOVE;
            create_full_put_path on;
            client_max_body_size 0;
            dav_access user:rw;${3:+
            limit_rate $3;}
        }
    }
}
EOF
}
# start_nginx [RATE]: nginx_conf's server (in $tmp/nginx) on a free loopback
# port; sets HPORT and nginx_pid; returns 1 if it did not come up.  NGINX and
# CURL name the programs.  cleanup stops it.
start_nginx() {
    local d=$tmp/nginx try i
    mkdir -p "$d/data/cache" "$d/data/.body" "$d/tmp"
    for try in 1 2 3 4 5 6 7 8; do
        HPORT=$((20000 + RANDOM % 12000))
        port_busy "$HPORT" && continue
        nginx_conf "$d" "$HPORT" "${1:-}" >"$d/nginx.conf"
        rm -f "$d/nginx.pid"
        "$NGINX" -p "$d" -c "$d/nginx.conf" -e "$d/error.log" </dev/null >"$d/start.log" 2>&1 || continue
        for ((i = 0; i < 100; i++)); do
            nginx_pid=$(cat "$d/nginx.pid" 2>/dev/null || true)
            [[ -n $nginx_pid ]] && "$CURL" -s -o /dev/null --max-time 1 "http://127.0.0.1:$HPORT/cache/" && return 0
            sleep 0.05
        done
        stop_nginx
        echo "  (port $HPORT: nginx did not come up, try $try)" >&2
    done
    return 1
}

# ------------------------------------------------------------ numbers ------

# ratio X Y: X/Y with 2 decimals ("-" if either is missing)
ratio() {
    if [[ -z ${1:-} || -z ${2:-} ]]; then
        echo -
    else
        awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'
    fi
}
# us NS / ms NS [DECIMALS]: nanoseconds as microseconds (1 decimal) /
# milliseconds (3 decimals unless told); "-" if NS is missing or "-"
us() { ns_in 1e3 1 "${1:-}"; }
ms() { ns_in 1e6 "${2:-3}" "${1:-}"; }
ns_in() { # UNIT DECIMALS NS
    if [[ -z $3 || $3 == - ]]; then
        echo -
    else
        awk -v x="$3" -v u="$1" -v f="%.$2f" 'BEGIN { printf f, x / u }'
    fi
}

# rotate ARRAYNAME K: print the array's elements rotated left by K
rotate() {
    local -n arr=$1
    local n=${#arr[@]} i
    for ((i = 0; i < n; i++)); do printf '%s\n' "${arr[(i + $2) % n]}"; done
}

# ------------------------------------------------- interleaved timing ------

# interleave DIR ROUNDS FN FAILS TOOL...: ROUNDS rounds, each running the
# driver once for every TOOL, the order rotating each round (so noise hits
# all tools alike).  FN TOOL sets ARGS, the driver's arguments for TOOL; its
# lines go to DIR/TOOL.dat, and the array named FAILS gets [TOOL]=1 if a run
# of it failed, else 0.
interleave() {
    local dir=$1 rounds=$2 fn=$3 r t
    local -n fails=$4
    local -a order
    shift 4
    local tools=("$@")
    for t in "${tools[@]}"; do
        : >"$dir/$t.dat"
        fails["$t"]=0
    done
    for ((r = 0; r < rounds; r++)); do
        mapfile -t order < <(rotate tools "$r")
        for t in "${order[@]}"; do
            "$fn" "$t"
            "$SPAWN" "${ARGS[@]}" >>"$dir/$t.dat" || fails["$t"]=1
        done
    done
}

declare -A a_n a_mean a_med a_rssmed a_rss a_fail
# time_rounds DIR ROUNDS BATCH WARMUP TOOL...: WARMUP untimed runs of every
# TOOL, then interleaved ROUNDS of BATCH timed runs (spawn run).  cmd_a
# TOOL sets CMD, and OUT if the command's stdout is to be null or pipe
# (spawn run's word).  Then a_n, a_mean, a_med (wall ns), a_rssmed, a_rss
# (peak RSS KiB, median and max) and a_fail (1: some run exited non-zero)
# are set for each TOOL.
time_rounds() {
    local dir=$1 rounds=$2 batch=$3 warmup=$4 t
    shift 4
    for t in "$@"; do # warm-up: page cache, lock files created
        cmd_a "$t"
        "$SPAWN" run "$warmup" ${OUT:+"$OUT"} -- "${CMD[@]}" >/dev/null || true
    done
    interleave "$dir" "$rounds" run_args a_fail "$@"
    for t in "$@"; do
        read -r "a_n[$t]" "a_mean[$t]" "a_med[$t]" < <(sort -n -k1,1 "$dir/$t.dat" | awk '
            { w[NR] = $1; s += $1 }
            END { m = NR % 2 ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2
                  printf "%d %.0f %.0f\n", NR, s / NR, m }')
        read -r "a_rssmed[$t]" "a_rss[$t]" < <(sort -n -k2,2 "$dir/$t.dat" | awk '
            { r[NR] = $2 } END { printf "%d %d\n", r[int((NR + 1) / 2)], r[NR] }')
    done
}

# run_args TOOL: ARGS for time_rounds' runs (BATCH is time_rounds' own)
run_args() {
    cmd_a "$1"
    ARGS=(run "$batch" ${OUT:+"$OUT"} -- "${CMD[@]}")
}

# ---------------------------------------------------- contended counter ----

declare -A cs_ns cs_bad cs_count cs_rate cs_ok
# The critical section: a non-atomic read-modify-write of the counter file.
# shellcheck disable=SC2016 # expanded by the sh -c of each run, not here
RMW='n=$(cat "$1"); echo $((n + 1)) > "$1"'
# rmw_par TOOL PROCS N: one spawn par of PROCS x N runs of RMW under TOOL's
# lock (TOOL "none": no lock); prints the driver's "<wall_ns> <failed>"
rmw_par() {
    local d=$tmp/rmw.$1
    LOCK=()
    [[ $1 == none ]] || cmd_lock "$1" "$d"
    "$SPAWN" par "$2" "$3" -- "${LOCK[@]}" /bin/sh -c "$RMW" sh "$d/C" || true
}
# contend PROCS ITERS CHUNKS FMT TOOL...: PROCS processes x ITERS blocking
# acquisitions of TOOL's lock around RMW, in CHUNKS interleaved passes, then
# a control run with no lock.  cmd_lock TOOL DIR sets LOCK, the command
# line that runs the rest under TOOL's lock (DIR is TOOL's own, for its lock
# files).  Prints a line per TOOL with printf FMT (tool, count, want,
# OK|FAIL, seconds, rate) and sets cs_ns, cs_bad, cs_count, cs_rate
# (critical sections/s), cs_ok (OK|FAIL) and cs_verdict.
contend() {
    local procs=$1 iters=$2 chunks=$3 fmt=$4 r t ns bad ctl ctl_want
    local -a order
    shift 4
    local tools=("$@") total=$((procs * iters)) per_chunk=$((iters / chunks))
    for t in "${tools[@]}" none; do
        mkdir "$tmp/rmw.$t"
        echo 0 >"$tmp/rmw.$t/C"
        cs_ns[$t]=0 cs_bad[$t]=0
    done
    # CHUNKS passes of ITERS/CHUNKS acquisitions per process each; the
    # counter carries over, so it must end at exactly PROCS x ITERS.
    for ((r = 0; r < chunks; r++)); do
        mapfile -t order < <(rotate tools "$r")
        for t in "${order[@]}"; do
            read -r ns bad < <(rmw_par "$t" "$procs" "$per_chunk")
            cs_ns[$t]=$((cs_ns[$t] + ${ns:-0}))
            cs_bad[$t]=$((cs_bad[$t] + ${bad:-1}))
        done
    done
    cs_verdict=OK
    for t in "${tools[@]}"; do
        cs_count[$t]=$(cat "$tmp/rmw.$t/C")
        cs_rate[$t]=$(awk -v n="$total" -v ns="${cs_ns[$t]}" 'BEGIN { printf "%.0f", ns ? n / (ns / 1e9) : 0 }')
        cs_ok[$t]=OK
        if [[ ${cs_count[$t]} != "$total" || ${cs_bad[$t]} != 0 ]]; then
            cs_ok[$t]=FAIL
            cs_verdict=FAIL
            err "$t: counter ${cs_count[$t]} (want $total), ${cs_bad[$t]} failed runs"
        fi
        # shellcheck disable=SC2059 # the caller's format
        printf "$fmt" "$t" "${cs_count[$t]}" "$total" "${cs_ok[$t]}" \
            "$(awk -v ns="${cs_ns[$t]}" 'BEGIN { printf "%.2f", ns / 1e9 }')" "${cs_rate[$t]}"
    done
    # Control: the same workload with no lock must lose updates, or the test
    # could not tell a broken lock from a working one.
    read -r _ _ < <(rmw_par none "$procs" "$per_chunk")
    ctl=$(cat "$tmp/rmw.none/C")
    ctl_want=$((procs * per_chunk))
    if ((ctl < ctl_want)); then
        echo "  control (no lock, $ctl_want increments): counter $ctl -- lost updates, so the check can catch a broken lock"
    else
        note "control run without a lock lost no updates this time ($ctl/$ctl_want): the race window was not hit"
    fi
}

# ------------------------------------------------------------ callgrind ----

# cg_collected LOG: the total of callgrind's "Collected" line in LOG, if any
cg_collected() { sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$1" | head -n1; }
# cg_parts_sum DIR: the sum of the --dump-before parts among DIR/cg.* (empty
# if there are none): a process's count up to entry to exec*()
cg_parts_sum() {
    local parts
    parts=$(grep -l -e '^desc: Trigger: --dump-before' "$1"/cg.* 2>/dev/null || true)
    [[ -z $parts ]] && return 0
    # shellcheck disable=SC2086 # $parts: file names without spaces
    awk '/^summary:/ { s += $2 } END { print s }' $parts
}

# ir_to_exec fills these: TOOL -> instructions, TOOL -> how they were counted
declare -A ir ir_note
# ir_to_exec TOOL CMD...: callgrind instructions from the first instruction
# (ld.so included) up to entry to exec*() of the command.  A process that
# execs never reaches callgrind's exit report, so there is no "Collected"
# line for it; --dump-before='*execv*' writes a dump part at each exec*()
# entry, and the parts add up to that process's count so far (a forked child
# inherits its parent's counts).
ir_to_exec() {
    local t=$1
    shift
    local d=$tmp/cg.$t log parts collected
    mkdir -p "$d"
    log=$d/log
    "$VALGRIND" --tool=callgrind --dump-before='*execv*' \
        --callgrind-out-file="$d/cg.%p" "$@" >/dev/null 2>"$log" || true
    parts=$(cg_parts_sum "$d")
    collected=$(cg_collected "$log")
    if [[ -n $parts ]]; then
        ir[$t]=$parts
        if [[ -n $collected ]]; then
            ir_note[$t]="tool process 'Collected' (forks, waits, exits): $collected"
        else
            ir_note[$t]="process exec'd: no 'Collected' line"
        fi
    elif [[ -n $collected ]]; then
        ir[$t]=$collected
        ir_note[$t]="'Collected' at exit (no exec*() entry seen)"
    else
        # No exec*() symbol seen (stripped static binary?): make the exec
        # fail instead, so the process exits and callgrind reports a total.
        local argv=("$@")
        argv[-1]=$tmp/no-such-command
        "$VALGRIND" --tool=callgrind --callgrind-out-file=/dev/null \
            "${argv[@]}" >/dev/null 2>"$log" || true
        ir[$t]=$(cg_collected "$log")
        if [[ -n ${ir[$t]} ]]; then
            ir_note[$t]="FALLBACK: no exec*() symbol; 'Collected' with a command that fails to exec (includes the error path)"
        else
            ir_note[$t]="callgrind failed: $(tail -n 2 "$log" | tr '\n' ' ')"
        fi
    fi
}

# ------------------------------------------------------------- summary -----

# target LABEL VALUE OP LIMIT: one summary line, VALUE against the target,
# printed with printf TARGET_FMT (label, value, op, limit, verdict).
# check LABEL OK|FAIL: one line for an exact target, with printf CHECK_FMT
# (label, value, verdict).  Each script sets both formats.
target() {
    local label=$1 value=$2 op=$3 limit=$4 v
    if [[ -z $value || $value == - || $limit == - ]]; then
        v="n/a"
    elif awk -v x="$value" -v y="$limit" -v op="$op" 'BEGIN {
            exit !((op == "<=" && x <= y) || (op == "<" && x < y) || (op == ">=" && x >= y)) }'; then
        v=MET
    else
        v="NOT MET"
    fi
    # shellcheck disable=SC2059 # the script's format
    printf "$TARGET_FMT" "$label" "${value:--}" "$op" "$limit" "$v"
}
check() {
    # shellcheck disable=SC2059 # the script's format
    printf "$CHECK_FMT" "$1" "$2" "$([[ $2 == OK ]] && echo MET || echo "NOT MET")"
}
