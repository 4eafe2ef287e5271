#!/usr/bin/env bash
# bench/redis-lock.sh — bufferlock's Redis lock path against bare true and
# the same work done with redis-cli in sh, on a private loopback redis-server.
#
#   bench/redis-lock.sh [--quick]
#
# (a) uncontended wall time per run, interleaved rounds: bufferlock -r URL,
#     bare /bin/true, and a sh + redis-cli SET NX / compare-and-delete recipe;
#     callgrind instruction count; peak RSS (ru_maxrss)
# (b) hand-off latency with --wait: holder's command ends -> the waiting
#     bufferlock's command starts (the release's wake-list push)
# (c) contended: 8 processes x 50 --wait inf acquisitions around a non-atomic
#     read-modify-write counter; critical sections per second, redis vs file
#
# The script starts its own redis-server (--save '' --appendonly no) on a free
# 127.0.0.1 port and stops it by pid at exit.  Timing is done by
# bench/spawn.c (posix_spawn + wait4), built here with cc -O2.
#
# Environment: BUFFERLOCK_BIN (default <repo>/build/bufferlock), CC (cc).
# Exit status: 0 unless a run failed or a correctness check failed (counter
# not exact, waiter ran before the holder's command ended, lock keys left
# behind or without a TTL).  Missed performance targets are reported in the
# summary, not turned into a failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
BL=${BUFFERLOCK_BIN:-$repo/build/bufferlock}
[[ $BL == /* ]] || BL=$PWD/$BL
TRUE=/bin/true

quick=0
for arg in "$@"; do
    case $arg in
        --quick) quick=1 ;;
        -h | --help)
            sed -n '2,23s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
            exit 0
            ;;
        *)
            echo "redis-lock.sh: unknown argument: $arg (try --help)" >&2
            exit 2
            ;;
    esac
done

if ((quick)); then
    A_ROUNDS=5 A_BATCH=10 # (a) rounds x batch runs per tool
    B_REPS=5              # (b) hand-offs
    C_PROCS=8 C_ITERS=10 C_CHUNKS=2
else
    A_ROUNDS=100 A_BATCH=20
    B_REPS=50
    C_PROCS=8 C_ITERS=50 C_CHUNKS=5
fi
C_TOTAL=$((C_PROCS * C_ITERS))
B_DELAY_MS=100 # the waiter waits this long before the holder's command ends

errors=0
note() { printf '  note: %s\n' "$*"; }
err() {
    printf '  ERROR: %s\n' "$*"
    errors=$((errors + 1))
}
hr() { printf '\n== %s\n' "$*"; }

# ---------------------------------------------------------------- tools ----

ensure_tools() {
    local need=()
    command -v redis-server >/dev/null || need+=(redis-server)
    command -v redis-cli >/dev/null || need+=(redis-tools)
    command -v valgrind >/dev/null || need+=(valgrind)
    command -v "${CC:-cc}" >/dev/null || need+=(gcc libc6-dev)
    ((${#need[@]})) || return 0
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "installing missing tools: ${need[*]}"
        apt-get update -qq || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "${need[@]}" >/dev/null ||
            echo "  apt-get install failed" >&2
    else
        echo "missing (not root, not installing): ${need[*]}" >&2
    fi
}
ensure_tools

for t in redis-server redis-cli; do
    command -v "$t" >/dev/null || {
        echo "redis-lock.sh: $t not found" >&2
        exit 2
    }
done
VALGRIND=$(command -v valgrind || true)
CC=${CC:-cc}
command -v "$CC" >/dev/null || {
    echo "redis-lock.sh: no C compiler ($CC)" >&2
    exit 2
}
[[ -x $BL ]] || {
    echo "redis-lock.sh: no bufferlock at $BL (build it, or set BUFFERLOCK_BIN)" >&2
    exit 2
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bufferlock-bench.XXXXXX")
redis_pid=
cleanup() {
    if [[ -n $redis_pid ]]; then
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

build() { # out src
    "$CC" -O2 -static -o "$1" "$2" 2>/dev/null || "$CC" -O2 -o "$1" "$2"
}
build "$tmp/spawn" "$here/spawn.c"
build "$tmp/clocknow" "$here/clocknow.c"
SPAWN=$tmp/spawn
CLOCKNOW=$tmp/clocknow

# --------------------------------------------------------- redis-server ----

# port_busy PORT: is something listening on 127.0.0.1:PORT?
port_busy() {
    if command -v ss >/dev/null; then
        [[ -n $(ss -Hltn "sport = :$1" 2>/dev/null) ]]
    else
        (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null
    fi
}
# start_redis: a private server on a free loopback port; sets PORT, redis_pid
start_redis() {
    local try i
    mkdir -p "$tmp/redis"
    for try in 1 2 3 4 5 6 7 8; do
        PORT=$((20000 + RANDOM % 40000))
        port_busy "$PORT" && continue
        redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$tmp/redis" --daemonize no --logfile "$tmp/redis/log" \
            </dev/null >/dev/null 2>&1 &
        redis_pid=$!
        for ((i = 0; i < 100; i++)); do
            if [[ $(redis-cli -p "$PORT" PING 2>/dev/null) == PONG ]]; then
                # answering, and it is ours (not a server that was there)
                [[ $(redis-cli -p "$PORT" INFO server 2>/dev/null |
                    sed -n 's/^process_id:\([0-9]*\).*/\1/p') == "$redis_pid" ]] && return 0
                break
            fi
            kill -0 "$redis_pid" 2>/dev/null || break
            sleep 0.05
        done
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
        redis_pid=
        echo "  (port $PORT: redis-server did not come up, try $try)" >&2
    done
    echo "redis-lock.sh: could not start redis-server; log:" >&2
    tail -n 5 "$tmp/redis/log" >&2 || true
    exit 2
}
start_redis
URL=redis://127.0.0.1:$PORT/0
rcli() { redis-cli -p "$PORT" "$@"; }

if ! "$BL" -r "$URL" smoke -- "$TRUE"; then
    echo "redis-lock.sh: smoke run failed: $BL -r $URL smoke -- $TRUE" >&2
    exit 1
fi

echo "bufferlock redis-lock bench ($( ((quick)) && echo quick || echo full) run)"
echo "  $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  uptime: $(uptime)"
echo "  bufferlock: $BL"
echo "  $(redis-server --version | cut -d' ' -f1-3), pid $redis_pid on $URL"
echo "  driver RSS floor: $("$SPAWN" rss) KiB"

# rotate ARRAYNAME K: print the array's elements rotated left by K
rotate() {
    local -n arr=$1
    local n=${#arr[@]} i
    for ((i = 0; i < n; i++)); do printf '%s\n' "${arr[(i + $2) % n]}"; done
}
# ratio X Y: X/Y with 2 decimals ("-" if either is missing)
ratio() {
    if [[ -z ${1:-} || -z ${2:-} ]]; then
        echo -
    else
        awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'
    fi
}
# us NS / ms NS: nanoseconds as microseconds / milliseconds ("-" if missing)
us() { if [[ ${1:-} == ?(-)+([0-9]) ]]; then awk -v x="$1" 'BEGIN { printf "%.1f", x / 1e3 }'; else echo -; fi; }
ms() { if [[ ${1:-} == ?(-)+([0-9]) ]]; then awk -v x="$1" 'BEGIN { printf "%.3f", x / 1e6 }'; else echo -; fi; }

# ------------------------------------------------- (a) uncontended ----------

# The recipe: SET NX PX, the command, compare-and-delete, with redis-cli.
# shellcheck disable=SC2016 # $P etc. are expanded by the sh -c of each run
RECIPE='redis-cli -p "$1" SET k tok NX PX 60000 >/dev/null && /bin/true; redis-cli -p "$1" EVAL "if redis.call(\"get\",KEYS[1])==ARGV[1] then return redis.call(\"del\",KEYS[1]) else return 0 end" 1 k tok >/dev/null'
tools_a=(true bufferlock redis-cli)
cmd_a() {
    case $1 in
        true) CMD=("$TRUE") ;;
        bufferlock) CMD=("$BL" -r "$URL" k -- "$TRUE") ;;
        redis-cli) CMD=(/bin/sh -c "$RECIPE" sh "$PORT") ;;
    esac
}

A_DIR=$tmp/a
mkdir "$A_DIR"
hr "(a) uncontended: $A_ROUNDS interleaved rounds x $A_BATCH runs per tool"
declare -A a_fail a_med a_mean a_rss a_rssmed a_n
for t in "${tools_a[@]}"; do # warm-up
    cmd_a "$t"
    "$SPAWN" run "$A_BATCH" -- "${CMD[@]}" >/dev/null || true
    : >"$A_DIR/$t.dat"
    a_fail[$t]=0
done
for ((r = 0; r < A_ROUNDS; r++)); do
    mapfile -t order < <(rotate tools_a "$r")
    for t in "${order[@]}"; do
        cmd_a "$t"
        "$SPAWN" run "$A_BATCH" -- "${CMD[@]}" >>"$A_DIR/$t.dat" || a_fail[$t]=1
    done
done
for t in "${tools_a[@]}"; do
    read -r "a_n[$t]" "a_mean[$t]" "a_med[$t]" < <(sort -n -k1,1 "$A_DIR/$t.dat" | awk '
        { w[NR] = $1; s += $1 }
        END { m = NR % 2 ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2
              printf "%d %.0f %.0f\n", NR, s / NR, m }')
    read -r "a_rssmed[$t]" "a_rss[$t]" < <(sort -n -k2,2 "$A_DIR/$t.dat" | awk '
        { r[NR] = $2 } END { printf "%d %d\n", r[int((NR + 1) / 2)], r[NR] }')
    ((a_fail[$t] == 0)) || err "$t: some uncontended runs exited non-zero"
done
printf '  %-11s %6s %9s %9s %7s %9s %15s\n' tool runs mean_us median_us xtrue xrecipe \
    maxrss_KiB_med/max
for t in "${tools_a[@]}"; do
    printf '  %-11s %6s %9s %9s %7s %9s %15s\n' "$t" "${a_n[$t]}" \
        "$(us "${a_mean[$t]}")" "$(us "${a_med[$t]}")" \
        "$(ratio "${a_med[$t]}" "${a_med[true]}")" \
        "$(ratio "${a_med[$t]}" "${a_med[redis-cli]}")" \
        "${a_rssmed[$t]}/${a_rss[$t]}"
done
echo "  (ratios of medians; wall = posix_spawn .. wait4; redis-cli = sh -c 'redis-cli SET k tok"
echo "   NX PX 60000 && /bin/true; redis-cli EVAL <compare-and-delete> 1 k tok'; maxrss from"
echo "   wait4 includes the waited-for children and cannot go below the driver floor)"

# Instruction counts.  The redis path forks the command, so the bufferlock
# process itself runs to the end and callgrind prints its 'Collected' total
# (connect, SET, fork, wait, release, exit).  With --trace-children=no the
# forked child is still counted up to its exec (--dump-before='*execv*');
# a forked child inherits its parent's counts, so that figure includes all
# the parent did before the fork.
ir_parent='' ir_child=''
if [[ -n $VALGRIND ]]; then
    hr "(a) instructions (callgrind Ir, ld.so included, --trace-children=no)"
    d=$tmp/cg
    mkdir "$d"
    "$VALGRIND" --tool=callgrind --trace-children=no --dump-before='*execv*' \
        --callgrind-out-file="$d/cg.%p" "$BL" -r "$URL" cgkey -- "$TRUE" \
        >/dev/null 2>"$d/log" || true
    ir_parent=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$d/log" | head -n1)
    parts=$(grep -l -e '^desc: Trigger: --dump-before' "$d"/cg.* 2>/dev/null || true)
    if [[ -n $parts ]]; then
        # shellcheck disable=SC2086 # $parts: file names without spaces
        ir_child=$(awk '/^summary:/ { s += $2 } END { print s }' $parts)
    fi
    "$VALGRIND" --tool=callgrind --callgrind-out-file=/dev/null "$TRUE" 2>"$d/log.true" || true
    ir_true=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$d/log.true" | head -n1)
    printf '  %-44s %10s\n' "bufferlock process, whole run ('Collected')" "${ir_parent:--}" \
        "forked child up to exec of /bin/true" "${ir_child:--}" \
        "bare /bin/true, whole run" "${ir_true:--}"
    [[ -n $ir_parent ]] || note "callgrind printed no Collected line: $(tail -n 2 "$d/log" | tr '\n' ' ')"
else
    note "valgrind not available: instruction counts skipped"
fi

# ------------------------------------------------- (b) hand-off -------------

hr "(b) hand-off latency with --wait: $B_REPS hand-offs"
# Holder: bufferlock runs 'clocknow hold', which prints "ready" (the lock is
# held), then, when the driver closes its stdin, its last CLOCK_MONOTONIC and
# exits; bufferlock then releases (compare-and-delete + wake push).  The
# waiter, started after "ready" and given B_DELAY_MS to be waiting, runs
# clocknow.  A fresh key per hand-off, so no wake entry is left over.
: >"$tmp/b.dat"
for ((i = 0; i < B_REPS; i++)); do
    "$SPAWN" pair "$B_DELAY_MS" -- "$BL" -r "$URL" "hand$i" -- "$CLOCKNOW" hold \
        ::: "$BL" -r "$URL" -w 10 "hand$i" -- "$CLOCKNOW" >>"$tmp/b.dat" || true
done
read -r b_n b_p50 b_p90 b_p99 b_max b_waiting b_early b_nan < <(sort -g -k1,1 "$tmp/b.dat" | awk '
    $1 == "nan" { nan++; next }
    $3 != 0 || $4 != 0 { nan++; next }
    { v[++n] = $1; if ($2 == 1) w++; if ($1 < 0) e++ }
    function pct(p) { return n ? v[int(n * p + 0.999999)] : "-" }
    END { printf "%d %s %s %s %s %d %d %d\n", n, pct(0.5), pct(0.9), pct(0.99), pct(1), w, e, nan }')
printf '  %5s %9s %9s %9s %9s %8s\n' n p50_ms p90_ms p99_ms max_ms waiting
printf '  %5s %9s %9s %9s %9s %8s\n' "$b_n" "$(ms "$b_p50")" "$(ms "$b_p90")" "$(ms "$b_p99")" \
    "$(ms "$b_max")" "$b_waiting/$b_n"
((b_early == 0)) || err "(b) waiter's command started before the holder's command ended $b_early times"
((b_n > 0)) || err "(b) no hand-off succeeded"
((b_nan == 0)) || err "(b) $b_nan hand-offs failed (a side exited non-zero or printed nothing)"
((b_waiting == b_n)) || note "(b) the waiter was still running after ${B_DELAY_MS} ms only $b_waiting/$b_n times"
echo "  latency = waiter's command's first CLOCK_MONOTONIC - the holder's command's LAST"
echo "  reading (just before it exits).  It includes that command's exit, bufferlock's reap"
echo "  of it, the release (compare-and-delete + wake push), the waiter's wake from BLPOP,"
echo "  its SET NX, and its fork + exec of clocknow.  Nearest-rank percentiles."

# ------------------------------------------------- (c) contended ------------

hr "(c) contended: $C_PROCS processes x $C_ITERS --wait inf acquisitions, counter read-modify-write"
# shellcheck disable=SC2016 # expanded by the sh -c of each run, not here
RMW='n=$(cat "$1"); echo $((n + 1)) > "$1"'
tools_c=(redis file)
cmd_c() {
    local d=$tmp/c.$1
    case $1 in
        none) CMD=(/bin/sh -c "$RMW" sh "$d/C") ;;
        redis) CMD=("$BL" -r "$URL" -w inf rmw -- /bin/sh -c "$RMW" sh "$d/C") ;;
        file) CMD=("$BL" -d "$d" -w inf rmw -- /bin/sh -c "$RMW" sh "$d/C") ;;
    esac
}
declare -A c_ns c_bad c_count c_rate c_ok
per_chunk=$((C_ITERS / C_CHUNKS))
for t in "${tools_c[@]}" none; do
    mkdir "$tmp/c.$t"
    echo 0 >"$tmp/c.$t/C"
    c_ns[$t]=0 c_bad[$t]=0
done
for ((r = 0; r < C_CHUNKS; r++)); do
    mapfile -t order < <(rotate tools_c "$r")
    for t in "${order[@]}"; do
        cmd_c "$t"
        read -r ns bad < <("$SPAWN" par "$C_PROCS" "$per_chunk" -- "${CMD[@]}" || true)
        c_ns[$t]=$((c_ns[$t] + ${ns:-0}))
        c_bad[$t]=$((c_bad[$t] + ${bad:-1}))
    done
done
c_verdict=OK
for t in "${tools_c[@]}"; do
    c_count[$t]=$(cat "$tmp/c.$t/C")
    c_rate[$t]=$(awk -v n="$C_TOTAL" -v ns="${c_ns[$t]}" 'BEGIN { printf "%.0f", ns ? n / (ns / 1e9) : 0 }')
    ok=OK
    if [[ ${c_count[$t]} != "$C_TOTAL" || ${c_bad[$t]} != 0 ]]; then
        ok=FAIL
        c_verdict=FAIL
        err "$t: counter ${c_count[$t]} (want $C_TOTAL), ${c_bad[$t]} failed runs"
    fi
    c_ok[$t]=$ok
    printf '  %-6s counter %4s/%s %-4s  %6s s  %6s critical sections/s\n' "$t" \
        "${c_count[$t]}" "$C_TOTAL" "$ok" \
        "$(awk -v ns="${c_ns[$t]}" 'BEGIN { printf "%.2f", ns / 1e9 }')" "${c_rate[$t]}"
done
cmd_c none
read -r _ _ < <("$SPAWN" par "$C_PROCS" "$per_chunk" -- "${CMD[@]}" || true)
ctl=$(cat "$tmp/c.none/C")
want_ctl=$((C_PROCS * per_chunk))
if ((ctl < want_ctl)); then
    echo "  control (no lock, $want_ctl increments): counter $ctl -- lost updates, so the check can catch a broken lock"
else
    note "control run without a lock lost no updates this time ($ctl/$want_ctl): the race window was not hit"
fi
echo "  (redis: bufferlock -r URL -w inf; file: bufferlock -d DIR -w inf; $C_CHUNKS interleaved passes)"

# ------------------------------------------------- leftovers ----------------

hr "leftovers on the server"
# Every lock was released: no buffer:lock:<md5> key may remain, and no key
# at all may be left without a TTL (wake lists expire after 2 s).
# shellcheck disable=SC2016 # Lua, not shell
left=$(rcli EVAL 'local l, n = 0, 0
for _, k in ipairs(redis.call("keys", "buffer:lock:*")) do
  if not string.find(k, ":wake$") then l = l + 1 end
end
for _, k in ipairs(redis.call("keys", "*")) do
  if redis.call("pttl", k) == -1 then n = n + 1 end
end
return {l, n}' 0 | tr '\n' ' ')
read -r left_locks left_nottl <<<"$left"
echo "  lock keys left: ${left_locks:-?}   keys without a TTL: ${left_nottl:-?}"
[[ ${left_locks:-x} == 0 ]] || err "lock keys left on the server after every holder exited: ${left_locks:-?}"
[[ ${left_nottl:-x} == 0 ]] || err "keys without a TTL on the server: ${left_nottl:-?}"

# ------------------------------------------------- summary ------------------

# target LABEL VALUE OP LIMIT: prints one summary line
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
    printf '  %-42s %10s   target %-2s %-8s %s\n' "$label" "${value:--}" "$op" "$limit" "$v"
}
check() { # LABEL OK|FAIL
    printf '  %-42s %10s   target %-11s %s\n' "$1" "$2" exact "$([[ $2 == OK ]] && echo MET || echo "NOT MET")"
}

hr "summary (load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "  redis-cli recipe vs bare /bin/true: $(ratio "${a_med[redis-cli]}" "${a_med[true]}")x median" \
    "(previously measured 14.5x)"
echo "  bufferlock median $(us "${a_med[bufferlock]}") us, true $(us "${a_med[true]}") us," \
    "recipe $(us "${a_med[redis-cli]}") us; means: $(ratio "${a_mean[bufferlock]}" "${a_mean[true]}")x true," \
    "$(ratio "${a_mean[bufferlock]}" "${a_mean[redis-cli]}")x recipe"
echo "  bufferlock Ir: process ${ir_parent:--} ('Collected', --trace-children=no), child to exec ${ir_child:--}"
echo "  bufferlock peak RSS: median ${a_rssmed[bufferlock]} KiB, max ${a_rss[bufferlock]} KiB" \
    "(bare true ${a_rss[true]} KiB, driver floor included)"
target "(a) bufferlock/true, median wall" "$(ratio "${a_med[bufferlock]}" "${a_med[true]}")" '<=' 2.3
target "(a) bufferlock/redis-cli recipe, median" "$(ratio "${a_med[bufferlock]}" "${a_med[redis-cli]}")" '<=' 0.16
if ((b_early == 0)); then # latencies of a lock that let the waiter in early mean nothing
    target "(b) hand-off p50, ms" "$(ms "$b_p50")" '<=' 2
    target "(b) hand-off p99, ms" "$(ms "$b_p99")" '<=' 10
else
    target "(b) hand-off p50, ms" - '<=' 2
    target "(b) hand-off p99, ms" - '<=' 10
fi
echo "      (p90 $(ms "$b_p90") ms, max $(ms "$b_max") ms over $b_n hand-offs)"
check "(c) counters end at $C_TOTAL" "$c_verdict"
c_ratio=-
[[ ${c_ok[redis]} == OK && ${c_ok[file]} == OK ]] && c_ratio=$(ratio "${c_rate[redis]}" "${c_rate[file]}")
target "(c) redis/file critical sections/s" "$c_ratio" '>=' 0.5
echo "      (redis ${c_rate[redis]}/s, file ${c_rate[file]}/s)"
check "no lock keys left, every key has a TTL" \
    "$([[ ${left_locks:-x} == 0 && ${left_nottl:-x} == 0 ]] && echo OK || echo FAIL)"
if ((errors)); then
    echo "  $errors error(s): see ERROR lines above"
    exit 1
fi
