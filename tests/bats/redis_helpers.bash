# shellcheck shell=bash
# Helpers for the black-box suites of bufferlock's Redis backend.
#
# A redis_*.bats file does `load redis_helpers` (which loads helpers.bash) and
# usually uses the suite-level set-up below:
#
#   setup_file()    { redis_setup_file; }      # one shared server per file
#   teardown_file() { redis_teardown_file; }
#   setup()         { redis_setup; }           # common_setup + FLUSHALL
#   teardown()      { redis_teardown; }        # kill test processes + private servers
#
# Servers are started with `start_redis_as NAME [redis-server args...]`, which
# sets NAME_PORT, NAME_PID, NAME_URL, NAME_DIR, NAME_SOCK (unix servers) and the
# array NAME_ARGS.  `start_redis` is `start_redis_as REDIS` plus export, the
# suite's shared server.  A TLS-only server (tls_helpers.bash) is started the
# same way with REDIS_SPAWN_TLS_CA (and _CERT, _KEY, _INSECURE) set around the
# call; NAME_TLS_CA, NAME_TLS_CERT, NAME_TLS_KEY and NAME_TLS_INSECURE record
# them for rcli_to and restart_redis (empty for a plain server).  Every server
# is recorded in a PID registry (per test when started inside a test, per file
# when started in setup_file) and stopped by PID -- never by name -- in
# teardown, even when the test failed.  A server stopped with SIGSTOP is
# resumed (SIGCONT) before it is terminated.

load helpers

REDIS_SERVER_BIN=${REDIS_SERVER_BIN:-redis-server}
REDIS_CLI_BIN=${REDIS_CLI_BIN:-redis-cli}

# --- ports --------------------------------------------------------------------

# port_in_use PORT: something listens on 127.0.0.1:PORT (or any address).
port_in_use() {
    [[ -n $(ss -Hltn "sport = :$1" 2>/dev/null) ]]
}

# free_port: print a loopback TCP port in 20000-32767 (FREE_PORT_MAX, when
# set, lowers the top: a cluster node's bus port is its port + 10000) that
# nothing listens on. Below Linux's ephemeral ports (32768-60999): a port
# in their range may meanwhile become some connection's source port, and a
# client retrying a port nobody listens on may get it as its own source
# port and connect to itself.
free_port() {
    local i p
    for ((i = 0; i < 200; i++)); do
        p=$((20000 + ((RANDOM << 15) | RANDOM) % (${FREE_PORT_MAX:-32767} - 19999)))
        if ! port_in_use "$p"; then
            printf '%s\n' "$p"
            return 0
        fi
    done
    echo "free_port: no free port found" >&2
    return 1
}

# --- the server registry ---------------------------------------------------------

_redis_registry() {
    if [[ -n ${BATS_TEST_TMPDIR:-} ]]; then
        printf '%s\n' "$BATS_TEST_TMPDIR/.redis-servers"
    else
        printf '%s\n' "$BATS_FILE_TMPDIR/.redis-servers"
    fi
}

_redis_register() {
    printf '%s\n' "$1" >>"$(_redis_registry)"
}

_redis_unregister() {
    local reg
    reg=$(_redis_registry)
    [[ -f $reg ]] || return 0
    grep -vx -- "$1" "$reg" >"$reg.new" || true
    mv -f -- "$reg.new" "$reg"
}

# _is_redis_pid PID: PID is (still) a redis-server, so that a recycled PID is
# never killed.
_is_redis_pid() {
    local comm
    [[ $1 =~ ^[0-9]+$ ]] || return 1
    comm=$(cat "/proc/$1/comm" 2>/dev/null) || return 1
    [[ $comm == redis-server* || $comm == redis-check* ]]
}

# stop_redis PID: terminate one server by PID (SIGCONT first in case it was
# stopped, then SIGTERM, SIGKILL after a bounded wait) and reap it.
stop_redis() {
    local pid=$1
    [[ $pid =~ ^[0-9]+$ ]] || return 0
    if _is_redis_pid "$pid"; then
        kill -CONT "$pid" 2>/dev/null || true
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_for_exit "$pid" 5; then
            kill -KILL "$pid" 2>/dev/null || true
            wait_for_exit "$pid" 5 || true
        fi
    fi
    wait "$pid" 2>/dev/null || true
    _redis_unregister "$pid"
    return 0
}

# stop_all_redis: stop every server of the current scope (test or file).
stop_all_redis() {
    local reg pids=() pid
    reg=$(_redis_registry)
    [[ -s $reg ]] || return 0
    mapfile -t pids <"$reg"
    # Resume all first: a stopped server must not delay the others.
    for pid in "${pids[@]}"; do
        _is_redis_pid "$pid" && kill -CONT "$pid" 2>/dev/null
    done
    for pid in "${pids[@]}"; do
        stop_redis "$pid"
    done
    : >"$reg"
}

# --- starting servers ---------------------------------------------------------------

# rcli_raw ARGS...: redis-cli, bounded so that a stopped server cannot hang a test.
rcli_raw() {
    timeout 10 "$REDIS_CLI_BIN" --no-auth-warning "$@"
}

# _redis_tls_opts CA CERT KEY INSECURE: set _REDIS_TLS_OPTS to redis-cli's
# options for a TLS server (none when CA is empty: a plain server).  INSECURE
# non-empty: skip the verification of the server's certificate (for a server
# whose certificate is meant to fail it, e.g. an expired one).
_redis_tls_opts() {
    _REDIS_TLS_OPTS=()
    [[ -n ${1:-} ]] || return 0
    _REDIS_TLS_OPTS=(--tls --cacert "$1")
    [[ -n ${2:-} ]] && _REDIS_TLS_OPTS+=(--cert "$2" --key "$3")
    [[ -n ${4:-} ]] && _REDIS_TLS_OPTS+=(--insecure)
    return 0
}

# _redis_ping_ok PORT SOCK: the server answers (PONG, or NOAUTH when it wants a
# password), over TLS when REDIS_SPAWN_TLS_CA is set.
_redis_ping_ok() {
    local out
    if [[ -n $2 ]]; then
        out=$(timeout 2 "$REDIS_CLI_BIN" --no-auth-warning -s "$2" ping 2>&1) || true
    else
        _redis_tls_opts "${REDIS_SPAWN_TLS_CA:-}" "${REDIS_SPAWN_TLS_CERT:-}" \
            "${REDIS_SPAWN_TLS_KEY:-}" "${REDIS_SPAWN_TLS_INSECURE:-}"
        out=$(timeout 2 "$REDIS_CLI_BIN" --no-auth-warning "${_REDIS_TLS_OPTS[@]}" \
            -h 127.0.0.1 -p "$1" ping 2>&1) || true
    fi
    [[ $out == PONG || $out == *NOAUTH* ]]
}

# _redis_spawn DIR PORT SOCK ARGS...: start one server and wait (bounded) until it
# answers.  Sets _REDIS_SPAWNED_PID.  Returns 1 if the server died (e.g. the port
# was taken in between), 2 if it never answered.  With REDIS_SPAWN_TLS_CA set,
# PORT is a TLS port (--port 0 --tls-port PORT; the certificate options are
# among ARGS) and the readiness check goes over TLS.
_redis_spawn() {
    local dir=$1 port=$2 sock=$3 pid i
    shift 3
    local conf=(--bind 127.0.0.1 --save '' --appendonly no --daemonize no
        --dir "$dir" --logfile '' --protected-mode no)
    if [[ -n $sock ]]; then
        conf=(--port 0 --unixsocket "$sock" --unixsocketperm 700 "${conf[@]}")
    elif [[ -n ${REDIS_SPAWN_TLS_CA:-} ]]; then
        conf=(--port 0 --tls-port "$port" "${conf[@]}")
    else
        conf=(--port "$port" "${conf[@]}")
    fi
    "$REDIS_SERVER_BIN" "${conf[@]}" "$@" </dev/null >>"$dir/redis.log" 2>&1 3>&- &
    pid=$!
    _REDIS_SPAWNED_PID=$pid
    _redis_register "$pid"
    for ((i = 0; i < 200; i++)); do
        if ! pid_alive "$pid"; then
            wait "$pid" 2>/dev/null || true
            _redis_unregister "$pid"
            return 1
        fi
        _redis_ping_ok "$port" "$sock" && return 0
        sleep 0.05
    done
    stop_redis "$pid"
    return 2
}

# _redis_set_vars NAME PORT PID DIR SOCK ARGS...
_redis_set_vars() {
    local name=$1 port=$2 pid=$3 dir=$4 sock=$5
    shift 5
    printf -v "${name}_PORT" '%s' "$port"
    printf -v "${name}_PID" '%s' "$pid"
    printf -v "${name}_DIR" '%s' "$dir"
    printf -v "${name}_SOCK" '%s' "$sock"
    printf -v "${name}_TLS_CA" '%s' "${REDIS_SPAWN_TLS_CA:-}"
    printf -v "${name}_TLS_CERT" '%s' "${REDIS_SPAWN_TLS_CERT:-}"
    printf -v "${name}_TLS_KEY" '%s' "${REDIS_SPAWN_TLS_KEY:-}"
    printf -v "${name}_TLS_INSECURE" '%s' "${REDIS_SPAWN_TLS_INSECURE:-}"
    if [[ -n $sock ]]; then
        printf -v "${name}_URL" 'unix://%s' "$sock"
    else
        printf -v "${name}_URL" 'redis://127.0.0.1:%s/0' "$port"
    fi
    declare -g -a "${name}_ARGS=()"
    local -n _args_ref="${name}_ARGS"
    _args_ref=("$@")
}

_redis_base_dir() {
    printf '%s\n' "${BATS_TEST_TMPDIR:-$BATS_FILE_TMPDIR}"
}

# start_redis_as NAME [redis-server ARGS...]: a fresh server on a free loopback
# port.  Sets NAME_PORT, NAME_PID, NAME_URL (redis://127.0.0.1:PORT/0), NAME_DIR,
# NAME_ARGS.
start_redis_as() {
    local name=$1 dir port try rc
    shift
    dir=$(mktemp -d "$(_redis_base_dir)/redis.XXXXXX")
    for ((try = 0; try < 8; try++)); do
        port=$(free_port) || return 1
        rc=0
        _redis_spawn "$dir" "$port" "" "$@" || rc=$?
        if ((rc == 0)); then
            _redis_set_vars "$name" "$port" "$_REDIS_SPAWNED_PID" "$dir" "" "$@"
            return 0
        fi
        if ((rc == 1)) && grep -q 'Address already in use' "$dir/redis.log"; then
            continue
        fi
        break
    done
    echo "start_redis_as $name: redis-server did not start; log:" >&2
    cat "$dir/redis.log" >&2
    return 1
}

# start_redis [ARGS...]: the same with NAME=REDIS, exported (REDIS_PORT,
# REDIS_URL, REDIS_PID, REDIS_DIR) so that setup_file can share it with tests.
start_redis() {
    start_redis_as REDIS "$@" || return 1
    export REDIS_PORT REDIS_URL REDIS_PID REDIS_DIR
}

# start_redis_unix_as NAME [ARGS...]: a server listening only on a unix socket
# (mode 700).  Sets NAME_SOCK, NAME_URL (unix:///.../redis.sock), NAME_PID, ...
start_redis_unix_as() {
    local name=$1 dir sock rc
    shift
    dir=$(mktemp -d "$(_redis_base_dir)/redis.XXXXXX")
    sock="$dir/redis.sock"
    if ((${#sock} > 100)); then
        # sun_path holds 108 bytes: use a short directory under /tmp.
        dir=$(mktemp -d /tmp/blr.XXXXXX)
        [[ -n ${CLEANUP_PATHS_FILE:-} ]] && track_path "$dir"
        sock="$dir/redis.sock"
    fi
    rc=0
    _redis_spawn "$dir" 0 "$sock" "$@" || rc=$?
    if ((rc != 0)); then
        echo "start_redis_unix_as $name: redis-server did not start; log:" >&2
        cat "$dir/redis.log" >&2
        return 1
    fi
    _redis_set_vars "$name" 0 "$_REDIS_SPAWNED_PID" "$dir" "$sock" "$@"
}

# start_replica_as NAME MASTER_PORT [ARGS...]: a read-only replica of the server
# on MASTER_PORT; waits (bounded) until master_link_status:up.
start_replica_as() {
    local name=$1 master=$2 i port
    shift 2
    start_redis_as "$name" --replicaof 127.0.0.1 "$master" --replica-read-only yes "$@" || return 1
    local -n _port_ref="${name}_PORT"
    port=$_port_ref
    for ((i = 0; i < 200; i++)); do
        rcli_raw -p "$port" INFO replication 2>/dev/null | tr -d '\r' |
            grep -qx 'master_link_status:up' && return 0
        sleep 0.05
    done
    echo "start_replica_as $name: replication link to port $master never came up" >&2
    return 1
}

# restart_redis NAME: kill NAME's server and start a new one on the same port
# (or socket) with the same arguments.  Without persistence, all keys are gone.
# Updates NAME_PID.
restart_redis() {
    local name=$1 try rc
    local -n _pid_ref="${name}_PID" _port_ref="${name}_PORT" _dir_ref="${name}_DIR" \
        _sock_ref="${name}_SOCK" _a_ref="${name}_ARGS" _ca_ref="${name}_TLS_CA" \
        _cert_ref="${name}_TLS_CERT" _key_ref="${name}_TLS_KEY" _ins_ref="${name}_TLS_INSECURE"
    local REDIS_SPAWN_TLS_CA=${_ca_ref:-} REDIS_SPAWN_TLS_CERT=${_cert_ref:-} \
        REDIS_SPAWN_TLS_KEY=${_key_ref:-} REDIS_SPAWN_TLS_INSECURE=${_ins_ref:-}
    stop_redis "$_pid_ref"
    [[ -n $_sock_ref ]] && rm -f -- "$_sock_ref"
    for ((try = 0; try < 40; try++)); do
        rc=0
        _redis_spawn "$_dir_ref" "$_port_ref" "$_sock_ref" "${_a_ref[@]}" || rc=$?
        if ((rc == 0)); then
            _pid_ref=$_REDIS_SPAWNED_PID
            return 0
        fi
        ((rc == 1)) || break
        sleep 0.1
    done
    echo "restart_redis $name: could not start again; log:" >&2
    cat "$_dir_ref/redis.log" >&2
    return 1
}

# start_redis_at NAME PORT [ARGS...]: a server on exactly PORT (one that a
# client is already trying).  Returns 1 when PORT was taken meanwhile.
start_redis_at() {
    local name=$1 port=$2 dir
    shift 2
    dir=$(mktemp -d "$(_redis_base_dir)/redis.XXXXXX")
    _redis_spawn "$dir" "$port" "" "$@" || return 1
    _redis_set_vars "$name" "$port" "$_REDIS_SPAWNED_PID" "$dir" "" "$@"
}

# shutdown_restart_redis NAME: SHUTDOWN NOSAVE (a clean restart as an operator
# does it: clients see their connections closed), then start the server again
# on the same port with the same arguments.  All keys are gone.
shutdown_restart_redis() {
    local -n _sr_pid_ref="$1_PID"
    local pid=$_sr_pid_ref
    rcli_to "$1" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    wait_for_exit "$pid" 5 || true
    restart_redis "$1" # stops it by PID if it is still there
}

# kill_redis NAME: SIGKILL NAME's server (a crash) and reap it.
kill_redis() {
    local -n _pid_ref="$1_PID"
    local pid=$_pid_ref
    _is_redis_pid "$pid" && kill -KILL "$pid" 2>/dev/null
    wait_for_exit "$pid" 5 || true
    wait "$pid" 2>/dev/null || true
    _redis_unregister "$pid"
}

# freeze_redis NAME / thaw_redis NAME: SIGSTOP / SIGCONT the server.  A frozen
# server still accepts TCP connections (the kernel does) but never answers.
# Teardown resumes it before killing it.
freeze_redis() {
    local -n _pid_ref="$1_PID"
    _is_redis_pid "$_pid_ref" && kill -STOP "$_pid_ref"
}
thaw_redis() {
    local -n _pid_ref="$1_PID"
    _is_redis_pid "$_pid_ref" && kill -CONT "$_pid_ref"
}

# pause_redis_clients NAME [MS]: CLIENT PAUSE MS ALL (default 5000).
pause_redis_clients() {
    rcli_to "$1" CLIENT PAUSE "${2:-5000}" ALL
}

# --- talking to servers ---------------------------------------------------------------

# rcli_to NAME ARGS...: redis-cli against NAME's server (port or socket; over
# TLS for a TLS server).  Give a password with REDISCLI_AUTH=... in front.
rcli_to() {
    local -n _port_ref="$1_PORT" _sock_ref="$1_SOCK" _ca_ref="$1_TLS_CA" \
        _cert_ref="$1_TLS_CERT" _key_ref="$1_TLS_KEY" _ins_ref="$1_TLS_INSECURE"
    shift
    if [[ -n ${_sock_ref:-} ]]; then
        rcli_raw -s "$_sock_ref" "$@"
    else
        _redis_tls_opts "${_ca_ref:-}" "${_cert_ref:-}" "${_key_ref:-}" "${_ins_ref:-}"
        rcli_raw "${_REDIS_TLS_OPTS[@]}" -h 127.0.0.1 -p "$_port_ref" "$@"
    fi
}

# rcli ARGS...: redis-cli against the suite's shared server.
rcli() {
    rcli_raw -h 127.0.0.1 -p "$REDIS_PORT" "$@"
}

# redis_key KEY [PREFIX]: the Redis key bufferlock uses for KEY.
redis_key() {
    printf '%s%s\n' "${2-buffer:lock:}" "$(key_md5 "$1")"
}

# fence_counter NAME KEY: the fence counter of KEY's lock on server NAME,
# which holds the last fence given (fences come from the server's clock).
fence_counter() {
    rcli_to "$1" GET "{$(redis_key "$2")}:fence"
}

# redis_key_tagged KEY [PREFIX]: the same with --hash-tag.
redis_key_tagged() {
    printf '{%s}%s\n' "${2-buffer:lock:}" "$(key_md5 "$1")"
}

# wait_for_key_state NAME RKEY present|absent [SECONDS]: bounded wait.
wait_for_key_state() {
    poll_until "${4:-10}" _key_state "$1" "$2" "$3"
}

# _key_state NAME RKEY present|absent: RKEY is in that state on server NAME.
_key_state() {
    local got
    got=$(rcli_to "$1" EXISTS "$2" 2>/dev/null) || true
    [[ $3 == present && $got == 1 || $3 == absent && $got == 0 ]]
}

# --- the man page's least-privilege ACL rule (SECURITY) -----------------------------------

# man_acl_line [FEATURE]: the SECURITY section's ACL SETUSER line of the man
# page: the base rule, or the line of the item tagged FEATURE (".TP" then
# ".B FEATURE"), with the roff escapes \- and \e undone.
man_acl_line() {
    awk -v want="${1-}" '
        /^\.SH / { in_sec = ($0 == ".SH SECURITY") }
        !in_sec { prev = $0; next }
        prev == ".TP" { tag = $0; sub(/^\.B /, "", tag); gsub(/\\-/, "-", tag) }
        want == "" && /^ACL SETUSER / { print; exit }
        want != "" && tag == want && /^\.B ACL SETUSER / { sub(/^\.B /, ""); print; exit }
        { prev = $0 }' "$REPO_ROOT/man/bufferlock.1" | sed -e 's/\\-/-/g' -e 's/\\e/\\/g'
}

# acl_apply NAME LINE: sends LINE (words split on blanks, never globbed) to
# NAME's server with PASSWORD replaced by $PW; fails unless Redis says OK.
acl_apply() {
    local name=$1 line=${2//PASSWORD/$PW} words out
    [[ $2 == "ACL SETUSER bufferlock "* ]] || fail "not an ACL SETUSER line for bufferlock: '$2'"
    read -ra words <<<"$line"
    out=$(rcli_to "$name" "${words[@]}" 2>&1)
    [[ $out == OK ]] || fail "Redis refused '$2': $out"
}

# acl_user_on NAME [FEATURE...]: the user 'bufferlock' (password $PW) on NAME's
# server, made afresh from the man page's base rule plus the line of each FEATURE.
acl_user_on() {
    local name=$1 line f
    shift
    rcli_to "$name" ACL DELUSER bufferlock >/dev/null
    line=$(man_acl_line)
    [[ -n $line ]] || fail "no ACL SETUSER line in the SECURITY section of the man page"
    acl_apply "$name" "$line"
    for f in "$@"; do
        line=$(man_acl_line "$f")
        [[ -n $line ]] || fail "no ACL SETUSER line for '$f' in the SECURITY section of the man page"
        acl_apply "$name" "$line"
    done
}

# --- background bufferlock ---------------------------------------------------------------

# bl_bg ARGS...: run bufferlock in the background (its own PID is BG_PID, so
# signals reach bufferlock itself), stdout/stderr in $T/bg.out / $T/bg.err
# unless BG_OUT / BG_ERR name other files.  SIGINT and SIGQUIT are restored to
# their defaults (bash ignores them in background jobs).  Tracked for teardown.
bl_bg() {
    env --default-signal=INT,QUIT "$BL" "$@" </dev/null \
        >"${BG_OUT:-$T/bg.out}" 2>"${BG_ERR:-$T/bg.err}" 3>&- &
    BG_PID=$!
    track_pid "$BG_PID"
}

# elapsed_ms SINCE_US: milliseconds since a now_us value.
elapsed_ms() {
    printf '%s\n' $((($(now_us) - $1) / 1000))
}

# bl_timed ARGS...: run --separate-stderr bl ARGS..., MS = its wall time.
bl_timed() {
    local t0
    t0=$(now_us)
    run --separate-stderr bl "$@"
    MS=$(elapsed_ms "$t0")
}

# assert_elapsed_between MS LOW HIGH: LOW <= MS < HIGH (milliseconds; HIGH
# times TIME_SCALE: load only makes things slower).
assert_elapsed_between() {
    local ms=$1 lo=$2 hi=$(($3 * TIME_SCALE))
    if ((ms < lo || ms >= hi)); then
        fail "took ${ms} ms, expected between ${lo} and ${hi} ms"
    fi
}

# assert_no_secret SECRET: neither $output nor $stderr contains SECRET.
assert_no_secret() {
    if [[ ${output-} == *"$1"* || ${stderr-} == *"$1"* ]]; then
        batslib_print_kv_single_or_multi 6 output "${output-}" stderr "${stderr-}" |
            batslib_decorate "the password appears in the output" | fail
    fi
}

# assert_no_key_without_ttl NAME [DB]: every key on the server has a TTL,
# the fence counters ({LOCKKEY}:fence) too.
assert_no_key_without_ttl() {
    local name=$1 db=${2:-0} k ttl
    while IFS= read -r k; do
        [[ -n $k ]] || continue
        ttl=$(rcli_to "$name" -n "$db" PTTL "$k")
        if [[ $ttl == -1 ]]; then
            fail "key '$k' was left without a TTL"
            return
        fi
    done < <(rcli_to "$name" -n "$db" --scan)
}

# --- suite-level set-up ---------------------------------------------------------------------

redis_setup_file() {
    command -v "$REDIS_SERVER_BIN" >/dev/null || {
        echo "redis-server not found" >&2
        return 1
    }
    start_redis "$@"
}

redis_teardown_file() {
    stop_all_redis
}

redis_setup() {
    common_setup
    redis_reset_shared
}

# redis_reset_shared: the shared server is up; FLUSHALL and SCRIPT FLUSH it
# (the part of redis_setup after common_setup, for files with their own setup).
redis_reset_shared() {
    [[ -n ${REDIS_PORT:-} ]] || fail "no shared redis server (redis_setup_file not run?)"
    _is_redis_pid "$REDIS_PID" || fail "the shared redis server (pid $REDIS_PID) is gone"
    [[ $(rcli FLUSHALL) == OK ]] || fail "FLUSHALL on the shared server failed"
    rcli SCRIPT FLUSH >/dev/null
}

redis_teardown() {
    # bufferlock processes first (they may be talking to the servers), then the
    # test's private servers; the shared server stays for the next test.
    common_teardown
    stop_all_redis
    return 0
}
