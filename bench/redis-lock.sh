#!/usr/bin/env bash
# bench/redis-lock.sh — bufferlock's Redis lock path against bare true and
# the same work done with redis-cli in sh, on a private loopback redis-server.
#
#   bench/redis-lock.sh [--quick]
#
# (a) uncontended wall time per run, interleaved rounds: bufferlock -r URL,
#     bare /bin/true, the floor (bench/redis-floor.c: the recipe's two
#     commands from one small static process, two round trips and one child)
#     and a sh + redis-cli SET NX / compare-and-delete recipe; callgrind
#     instruction count; peak RSS (ru_maxrss)
# (b) hand-off latency with --wait: holder's command ends -> the waiting
#     bufferlock's command starts (the release's wake-list push)
# (c) contended: 8 processes x 50 --wait inf acquisitions around a non-atomic
#     read-modify-write counter; critical sections per second, redis vs file
#
# TLS (rediss://), when redis-server can serve TLS: a second, TLS-only server
# with its own CA and certificate (made with openssl in the temporary
# directory).  (a) also times bufferlock -r rediss://... --tls-ca CA and the
# same recipe with redis-cli --tls --cacert CA, in the same interleaved
# rounds; (b) is repeated over TLS.  If bufferlock rejects rediss:// as a
# usage error (built without TLS), the TLS figures are skipped with a note.
#
# Topologies (SPEC 13): a 3-master Redis Cluster and 3 and 5 independent
# servers.  (a) also times bufferlock on the cluster through a node that does
# not serve the key's slot (cluster-moved: a MOVED is followed) and through
# the one that does (cluster-owner), and on a quorum of 3 and of 5 (-r given
# N times); (b) is repeated on the cluster (through the other node) and on a
# quorum of 3.
#
# Slots, fences, several keys (SPEC 14), in the same interleaved rounds of (a):
# --slots 8 with 7 of its slots taken (by redis-cli, for the length of (a))
# against the plain uncontended run; the plain run (which takes a fence)
# against BUFFERLOCK_BASELINE, when given; --also with 3 keys against 1 key.
#
# The script starts its own redis-servers (--save '' --appendonly no) on free
# 127.0.0.1 ports and stops them by pid at exit.  Timing is done by
# bench/spawn.c (posix_spawn + wait4), built here with cc -O2.
#
# Environment: BUFFERLOCK_BIN (default <repo>/build/bufferlock), CC (cc),
# BUFFERLOCK_BASELINE (optional: an earlier bufferlock binary, measured on the
# plain redis:// path in the same interleaved rounds, for before/after figures).
# Exit status: 0 unless a run failed or a correctness check failed (counter
# not exact, waiter ran before the holder's command ended, lock keys left
# behind or without a TTL).  Missed performance targets are reported in the
# summary, not turned into a failure.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"

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

# summary lines, printed by target and check (lib.sh)
TARGET_FMT='  %-42s %10s   target %-2s %-8s %s\n'
CHECK_FMT='  %-42s %10s   target exact       %s\n'

# ---------------------------------------------------------------- tools ----

want redis-server redis-server
want redis-cli redis-tools
want valgrind valgrind
want openssl openssl
want "$CC" gcc libc6-dev
install_missing tools

for t in redis-server redis-cli; do
    command -v "$t" >/dev/null || {
        echo "redis-lock.sh: $t not found" >&2
        exit 2
    }
done
VALGRIND=$(command -v valgrind || true)
require_cc
require_bl
make_tmp spawn clocknow redis-floor
FLOOR=$tmp/redis-floor

# --------------------------------------------------------- redis-server ----

start_redis
URL=redis://127.0.0.1:$PORT/0
rcli() { redis-cli -p "$PORT" "$@"; }

if ! "$BL" -r "$URL" smoke -- "$TRUE"; then
    echo "redis-lock.sh: smoke run failed: $BL -r $URL smoke -- $TRUE" >&2
    exit 1
fi
if ! "$FLOOR" "$PORT" floor:k "$TRUE"; then
    echo "redis-lock.sh: smoke run failed: $FLOOR $PORT floor:k $TRUE" >&2
    exit 1
fi

# TLS: a TLS-only server with its own certificates, if redis-server can do it
# and bufferlock takes rediss:// (a usage error, 64, means it cannot).
TLS=0 TLS_URL='' TLS_CA=$tmp/tls/ca.pem tls_note=''
if ! command -v openssl >/dev/null; then
    tls_note="openssl not found: TLS figures skipped"
elif ! make_tls_certs "$tmp/tls"; then
    err "openssl could not make the TLS certificates: $(tail -n 1 "$tmp/tls/openssl.log")"
elif ! start_tls_redis "$tmp/tls"; then
    tls_note="redis-server did not come up with TLS (built without it?): TLS figures skipped"
else
    TLS_URL=rediss://127.0.0.1:$TLS_PORT
    rc=0
    "$BL" -r "$TLS_URL" --tls-ca "$TLS_CA" smoke -- "$TRUE" 2>"$tmp/tls/smoke.err" || rc=$?
    if ((rc == 0)); then
        TLS=1
    elif ((rc == 64)); then
        tls_note="bufferlock rejects rediss:// ($(head -n 1 "$tmp/tls/smoke.err")): TLS figures skipped"
    else
        err "TLS smoke run failed (status $rc): $BL -r $TLS_URL --tls-ca CA smoke -- $TRUE: $(head -n 1 "$tmp/tls/smoke.err")"
    fi
fi
rcli_tls() { redis-cli --tls --cacert "$TLS_CA" -p "$TLS_PORT" "$@"; }

# Topologies: a cluster (key k's lock key lands on one node: CL_OWNER_URL;
# CL_OTHER_URL is another node, which answers MOVED) and quorums of 3 and 5.
start_servers quorum 5
Q3=(-r "${quorum_urls[0]}" -r "${quorum_urls[1]}" -r "${quorum_urls[2]}")
Q5=("${Q3[@]}" -r "${quorum_urls[3]}" -r "${quorum_urls[4]}")
CLUSTER=0 cluster_note='' CL_OWNER_URL='' CL_OTHER_URL=''
if ! start_cluster; then
    cluster_note="the cluster did not form: $(tail -n 1 "$tmp/cluster.log")"
else
    # The owner of k's lock key: the node that answers EXISTS rather than MOVED.
    rk=buffer:lock:$(printf %s k | md5sum | cut -c1-32)
    for p in "${cluster_ports[@]}"; do
        if [[ $(redis-cli -p "$p" EXISTS "$rk" 2>&1) =~ ^[0-9]+$ ]]; then
            CL_OWNER_URL=redis://127.0.0.1:$p/0
        else
            CL_OTHER_URL=redis://127.0.0.1:$p/0
        fi
    done
    if [[ -z $CL_OWNER_URL || -z $CL_OTHER_URL ]]; then
        err "cluster: cannot tell which node serves the key's slot"
    elif ! "$BL" -r "$CL_OTHER_URL" smoke -- "$TRUE"; then
        err "cluster smoke run failed: $BL -r $CL_OTHER_URL smoke -- $TRUE"
    else
        CLUSTER=1
    fi
fi
"$BL" "${Q5[@]}" smoke -- "$TRUE" || err "quorum smoke run failed: $BL ${Q5[*]} smoke -- $TRUE"

bench_header redis-lock
echo "  uptime: $(uptime)"
echo "  bufferlock: $BL"
echo "  $(redis-server --version | cut -d' ' -f1-3), pid $redis_pid on $URL"
if ((TLS)); then
    echo "  TLS-only server: pid $tls_redis_pid on $TLS_URL ($(openssl version | cut -d' ' -f1-2))"
else
    note "${tls_note:-TLS figures skipped}"
fi
echo "  quorum servers: pids ${extra_pids[*]:0:5} on ${quorum_urls[*]}"
if ((CLUSTER)); then
    echo "  cluster: pids ${extra_pids[*]:5:3}; k's slot on $CL_OWNER_URL, MOVED from $CL_OTHER_URL"
else
    note "cluster figures skipped: $cluster_note"
fi
echo "  driver RSS floor: $("$SPAWN" rss) KiB"

# ------------------------------------------------- (a) uncontended ----------

# The recipe: SET NX PX, the command, compare-and-delete, with redis-cli.
# shellcheck disable=SC2016 # $P etc. are expanded by the sh -c of each run
RECIPE='redis-cli -p "$1" SET k tok NX PX 60000 >/dev/null && /bin/true; redis-cli -p "$1" EVAL "if redis.call(\"get\",KEYS[1])==ARGV[1] then return redis.call(\"del\",KEYS[1]) else return 0 end" 1 k tok >/dev/null'
# The same over TLS: every redis-cli gets --tls --cacert CA ($2).
# shellcheck disable=SC2016
RECIPE_TLS=${RECIPE//'redis-cli -p "$1"'/'redis-cli --tls --cacert "$2" -p "$1"'}
tools_a=(true bufferlock floor redis-cli quorum3 quorum5 slots8 also3)
((CLUSTER)) && tools_a+=(cluster-moved cluster-owner)
((TLS)) && tools_a+=(bufferlock-tls redis-cli-tls)
BASELINE=${BUFFERLOCK_BASELINE:-}
[[ -n $BASELINE ]] && tools_a+=(baseline)
cmd_a() {
    case $1 in
        true) CMD=("$TRUE") ;;
        bufferlock) CMD=("$BL" -r "$URL" k -- "$TRUE") ;;
        baseline) CMD=("$BASELINE" -r "$URL" k -- "$TRUE") ;;
        floor) CMD=("$FLOOR" "$PORT" floor:k "$TRUE") ;;
        redis-cli) CMD=(/bin/sh -c "$RECIPE" sh "$PORT") ;;
        bufferlock-tls) CMD=("$BL" -r "$TLS_URL" --tls-ca "$TLS_CA" k -- "$TRUE") ;;
        redis-cli-tls) CMD=(/bin/sh -c "$RECIPE_TLS" sh "$TLS_PORT" "$TLS_CA") ;;
        quorum3) CMD=("$BL" "${Q3[@]}" k -- "$TRUE") ;;
        slots8) CMD=("$BL" -r "$URL" --slots 8 s8 -- "$TRUE") ;;
        also3) CMD=("$BL" -r "$URL" --also k2 --also k3 k -- "$TRUE") ;;
        quorum5) CMD=("$BL" "${Q5[@]}" k -- "$TRUE") ;;
        cluster-moved) CMD=("$BL" -r "$CL_OTHER_URL" k -- "$TRUE") ;;
        cluster-owner) CMD=("$BL" -r "$CL_OWNER_URL" k -- "$TRUE") ;;
    esac
}
# recipe_of TOOL: the recipe TOOL's xrecipe ratio is taken against (the same transport)
recipe_of() { [[ $1 == *-tls ]] && echo redis-cli-tls || echo redis-cli; }

# slots8: 7 of the 8 slots of s8 taken (slot 0 is the lock key itself), so
# every run takes the last one; deleted after (a).
S8_KEY=buffer:lock:$(printf %s s8 | md5sum | cut -c1-32)
S8_TAKEN=("$S8_KEY")
for i in 1 2 3 4 5 6; do
    S8_TAKEN+=("{$S8_KEY}:slot:$i")
done
for k in "${S8_TAKEN[@]}"; do
    rcli SET "$k" taken PX 3600000 >/dev/null
done

A_DIR=$tmp/a
mkdir "$A_DIR"
hr "(a) uncontended: $A_ROUNDS interleaved rounds x $A_BATCH runs per tool"
time_rounds "$A_DIR" "$A_ROUNDS" "$A_BATCH" "$A_BATCH" "${tools_a[@]}"
rcli DEL "${S8_TAKEN[@]}" >/dev/null
for t in "${tools_a[@]}"; do
    ((a_fail[$t] == 0)) || err "$t: some uncontended runs exited non-zero"
done
printf '  %-14s %6s %9s %9s %7s %9s %15s\n' tool runs mean_us median_us xtrue xrecipe \
    maxrss_KiB_med/max
for t in "${tools_a[@]}"; do
    printf '  %-14s %6s %9s %9s %7s %9s %15s\n' "$t" "${a_n[$t]}" \
        "$(us "${a_mean[$t]}")" "$(us "${a_med[$t]}")" \
        "$(ratio "${a_med[$t]}" "${a_med[true]}")" \
        "$(ratio "${a_med[$t]}" "${a_med[$(recipe_of "$t")]}")" \
        "${a_rssmed[$t]}/${a_rss[$t]}"
done
echo "  (ratios of medians; wall = posix_spawn .. wait4; redis-cli = sh -c 'redis-cli SET k tok"
echo "   NX PX 60000 && /bin/true; redis-cli EVAL <compare-and-delete> 1 k tok'; maxrss from"
echo "   wait4 includes the waited-for children and cannot go below the driver floor)"
echo "  (floor: bench/redis-floor.c, the recipe's SET NX PX and compare-and-delete from one"
echo "   small static process: connect, two round trips, vfork + exec of /bin/true, wait)"
echo "  (quorumN: -r given N times, N independent servers; cluster-moved: -r a node that"
echo "   does not serve k's slot, so every run follows a MOVED; cluster-owner: -r the node that does)"
echo "  (slots8: --slots 8 with 7 slots taken, so the last one is taken; also3: --also k2 --also k3 k)"
if ((TLS)); then
    echo "  (*-tls: the same over $TLS_URL; bufferlock-tls = bufferlock -r rediss://... --tls-ca CA,"
    echo "   redis-cli-tls = the recipe with redis-cli --tls --cacert CA; xrecipe against redis-cli-tls)"
fi

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
    ir_parent=$(cg_collected "$d/log")
    ir_child=$(cg_parts_sum "$d")
    if [[ -n $BASELINE ]]; then
        "$VALGRIND" --tool=callgrind --trace-children=no --callgrind-out-file=/dev/null \
            "$BASELINE" -r "$URL" cgkey -- "$TRUE" >/dev/null 2>"$d/log.baseline" || true
        ir_baseline=$(cg_collected "$d/log.baseline")
        printf '  %-44s %10s\n' "baseline process, whole run ('Collected')" "${ir_baseline:--}"
    fi
    "$VALGRIND" --tool=callgrind --callgrind-out-file=/dev/null "$TRUE" 2>"$d/log.true" || true
    ir_true=$(cg_collected "$d/log.true")
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
# handoff DAT BACKEND-OPTIONS...: B_REPS hand-offs between two bufferlocks
# run with BACKEND-OPTIONS, lines to DAT; sets h_n h_p50 h_p90 h_p99 h_max
# h_waiting h_early h_nan
handoff() {
    local dat=$1 i
    shift
    : >"$dat"
    for ((i = 0; i < B_REPS; i++)); do
        "$SPAWN" pair "$B_DELAY_MS" -- "$BL" "$@" "hand$i" -- "$CLOCKNOW" hold \
            ::: "$BL" "$@" -w 10 "hand$i" -- "$CLOCKNOW" >>"$dat" || true
    done
    read -r h_n h_p50 h_p90 h_p99 h_max h_waiting h_early h_nan < <(sort -g -k1,1 "$dat" | awk '
        $1 == "nan" { nan++; next }
        $3 != 0 || $4 != 0 { nan++; next }
        { v[++n] = $1; if ($2 == 1) w++; if ($1 < 0) e++ }
        function pct(p) { return n ? v[int(n * p + 0.999999)] : "-" }
        END { printf "%d %s %s %s %s %d %d %d\n", n, pct(0.5), pct(0.9), pct(0.99), pct(1), w, e, nan }')
}
# handoff_report LABEL: print the h_* figures as one row and check them
handoff_report() {
    printf '  %-6s %5s %9s %9s %9s %9s %8s\n' "$1" "$h_n" "$(ms "$h_p50")" "$(ms "$h_p90")" \
        "$(ms "$h_p99")" "$(ms "$h_max")" "$h_waiting/$h_n"
    ((h_early == 0)) || err "(b) $1: waiter's command started before the holder's command ended $h_early times"
    ((h_n > 0)) || err "(b) $1: no hand-off succeeded"
    ((h_nan == 0)) || err "(b) $1: $h_nan hand-offs failed (a side exited non-zero or printed nothing)"
    ((h_waiting == h_n)) || note "(b) $1: the waiter was still running after ${B_DELAY_MS} ms only $h_waiting/$h_n times"
}
printf '  %-6s %5s %9s %9s %9s %9s %8s\n' url n p50_ms p90_ms p99_ms max_ms waiting
handoff "$tmp/b.dat" -r "$URL"
handoff_report redis
b_n=$h_n b_p50=$h_p50 b_p90=$h_p90 b_p99=$h_p99 b_max=$h_max b_early=$h_early
bt_n='' bt_p50='' bt_p90='' bt_p99='' bt_max='' bt_early=0
if ((TLS)); then
    handoff "$tmp/b-tls.dat" -r "$TLS_URL" --tls-ca "$TLS_CA"
    handoff_report rediss
    bt_n=$h_n bt_p50=$h_p50 bt_p90=$h_p90 bt_p99=$h_p99 bt_max=$h_max bt_early=$h_early
fi
echo "  latency = waiter's command's first CLOCK_MONOTONIC - the holder's command's LAST"
echo "  reading (just before it exits).  It includes that command's exit, bufferlock's reap"
echo "  of it, the release (compare-and-delete + wake push), the waiter's wake from BLPOP,"
echo "  its SET NX, and its fork + exec of clocknow.  Nearest-rank percentiles."
if ((CLUSTER)); then
    handoff "$tmp/b-cluster.dat" -r "$CL_OTHER_URL"
    handoff_report clustr
    bc_n=$h_n bc_p50=$h_p50 bc_p90=$h_p90 bc_early=$h_early
fi
handoff "$tmp/b-q3.dat" "${Q3[@]}"
handoff_report quor3
bq_n=$h_n bq_p50=$h_p50 bq_p90=$h_p90 bq_early=$h_early
((TLS)) && echo "  (rediss: the same with -r $TLS_URL --tls-ca CA; both sides keep their TLS connections)"
echo "  (clustr: -r a node that does not serve the key's slot; quor3: a quorum of 3 servers)"

# ------------------------------------------------- (c) contended ------------

hr "(c) contended: $C_PROCS processes x $C_ITERS --wait inf acquisitions, counter read-modify-write"
tools_c=(redis file)
cmd_lock() { # TOOL DIR
    case $1 in
        redis) LOCK=("$BL" -r "$URL" -w inf rmw --) ;;
        file) LOCK=("$BL" -d "$2" -w inf rmw --) ;;
    esac
}
contend "$C_PROCS" "$C_ITERS" "$C_CHUNKS" \
    '  %-6s counter %4s/%s %-4s  %6s s  %6s critical sections/s\n' "${tools_c[@]}"
echo "  (redis: bufferlock -r URL -w inf; file: bufferlock -d DIR -w inf; $C_CHUNKS interleaved passes)"

# ------------------------------------------------- leftovers ----------------

hr "leftovers on the server"
# Every lock was released: no buffer:lock:<md5> key may remain, and no key
# at all may be left without a TTL (wake lists expire after 2 s).
# leftovers CLI...: "LOCKS NOTTL" on the server that CLI (rcli, rcli_tls) reaches
# Fence counters ({KEY}:fence) live as long as the server's data, on purpose
# (SPEC §14): every other key must expire.
leftovers() {
    # shellcheck disable=SC2016 # Lua, not shell
    "$@" EVAL 'local l, n = 0, 0
for _, k in ipairs(redis.call("keys", "buffer:lock:*")) do
  if not string.find(k, ":wake$") then l = l + 1 end
end
for _, k in ipairs(redis.call("keys", "*")) do
  if redis.call("pttl", k) == -1 and not string.find(k, ":fence$") then n = n + 1 end
end
return {l, n}' 0 | tr '\n' ' '
}
read -r left_locks left_nottl <<<"$(leftovers rcli)"
if ((TLS)); then
    read -r tl tn <<<"$(leftovers rcli_tls)"
    [[ -n $left_locks && -n $tl ]] && left_locks=$((left_locks + tl)) || left_locks=''
    [[ -n $left_nottl && -n $tn ]] && left_nottl=$((left_nottl + tn)) || left_nottl=''
fi
echo "  lock keys left: ${left_locks:-?}   keys without a TTL: ${left_nottl:-?}$( ((TLS)) && echo ' (both servers)')"
[[ ${left_locks:-x} == 0 ]] || err "lock keys left on the server after every holder exited: ${left_locks:-?}"
[[ ${left_nottl:-x} == 0 ]] || err "keys without a TTL on the server: ${left_nottl:-?}"

# ------------------------------------------------- summary ------------------

hr "summary (load $(loadavg))"
echo "  redis-cli recipe vs bare /bin/true: $(ratio "${a_med[redis-cli]}" "${a_med[true]}")x median" \
    "(previously measured 14.5x)"
echo "  bufferlock median $(us "${a_med[bufferlock]}") us, true $(us "${a_med[true]}") us," \
    "recipe $(us "${a_med[redis-cli]}") us; means: $(ratio "${a_mean[bufferlock]}" "${a_mean[true]}")x true," \
    "$(ratio "${a_mean[bufferlock]}" "${a_mean[redis-cli]}")x recipe"
echo "  floor median $(us "${a_med[floor]}") us: floor/true $(ratio "${a_med[floor]}" "${a_med[true]}")x," \
    "bufferlock/floor $(ratio "${a_med[bufferlock]}" "${a_med[floor]}")x (no target: what is left above the floor)"
echo "  bufferlock Ir: process ${ir_parent:--} ('Collected', --trace-children=no), child to exec ${ir_child:--}"
echo "  bufferlock peak RSS: median ${a_rssmed[bufferlock]} KiB, max ${a_rss[bufferlock]} KiB" \
    "(bare true ${a_rss[true]} KiB, driver floor included)"
if [[ -n $BASELINE ]]; then
    echo "  baseline ($BASELINE): median $(us "${a_med[baseline]}") us, Ir ${ir_baseline:--};" \
        "bufferlock/baseline median wall $(ratio "${a_med[bufferlock]}" "${a_med[baseline]}")x"
fi
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
if ((TLS)); then
    target "(a) TLS bufferlock/TLS recipe, median" \
        "$(ratio "${a_med[bufferlock-tls]}" "${a_med[redis-cli-tls]}")" '<=' 0.2
    if ((bt_early == 0)); then
        target "(b) TLS hand-off p50, ms" "$(ms "$bt_p50")" '<=' 3
    else
        target "(b) TLS hand-off p50, ms" - '<=' 3
    fi
    echo "      (TLS: bufferlock median $(us "${a_med[bufferlock-tls]}") us, recipe $(us "${a_med[redis-cli-tls]}") us;" \
        "hand-off p90 $(ms "$bt_p90") ms, p99 $(ms "$bt_p99") ms, max $(ms "$bt_max") ms over $bt_n)"
else
    target "(a) TLS bufferlock/TLS recipe, median" - '<=' 0.2
    target "(b) TLS hand-off p50, ms" - '<=' 3
    echo "      (TLS not measured: ${tls_note:-see above})"
fi
# topology_handoff LABEL EARLY P50: the p50 target of a topology's hand-off
topology_handoff() {
    if [[ -n $3 && $2 == 0 ]]; then
        target "$1" "$(ms "$3")" '<=' 3
    else
        target "$1" - '<=' 3
    fi
}
for t in cluster-moved cluster-owner; do
    target "(a) $t/single bufferlock, median" \
        "$( ((CLUSTER)) && ratio "${a_med[$t]}" "${a_med[bufferlock]}" || echo -)" '<=' 1.2
done
target "(a) quorum3/single bufferlock, median" "$(ratio "${a_med[quorum3]}" "${a_med[bufferlock]}")" '<=' 1.5
target "(a) quorum5/single bufferlock, median" "$(ratio "${a_med[quorum5]}" "${a_med[bufferlock]}")" '<=' 1.8
echo "      (single $(us "${a_med[bufferlock]}") us, cluster-moved $(us "${a_med[cluster-moved]:-}") us," \
    "cluster-owner $(us "${a_med[cluster-owner]:-}") us, quorum3 $(us "${a_med[quorum3]}") us," \
    "quorum5 $(us "${a_med[quorum5]}") us)"
topology_handoff "(b) cluster hand-off p50, ms" "${bc_early:-0}" "${bc_p50:-}"
topology_handoff "(b) quorum3 hand-off p50, ms" "$bq_early" "$bq_p50"
echo "      (single p50 $(ms "$b_p50") ms; cluster p90 $(ms "${bc_p90:-}") ms over ${bc_n:-0}," \
    "quorum3 p90 $(ms "$bq_p90") ms over $bq_n)"
target "(a) --slots 8, 7 taken/plain lock, median" "$(ratio "${a_med[slots8]}" "${a_med[bufferlock]}")" '<=' 1.1
if [[ -n $BASELINE ]]; then
    target "(a) with fences/baseline, median" "$(ratio "${a_med[bufferlock]}" "${a_med[baseline]}")" '<=' 1.05
else
    target "(a) with fences/baseline, median" - '<=' 1.05
    echo "      (no BUFFERLOCK_BASELINE given: the run without fences was not measured)"
fi
target "(a) --also 3 keys/1 key, median" "$(ratio "${a_med[also3]}" "${a_med[bufferlock]}")" '<=' 1.3
echo "      (plain $(us "${a_med[bufferlock]}") us, slots8 $(us "${a_med[slots8]}") us," \
    "also3 $(us "${a_med[also3]}") us$([[ -n $BASELINE ]] && echo ", baseline $(us "${a_med[baseline]}") us"))"
check "(c) counters end at $C_TOTAL" "$cs_verdict"
c_ratio=-
[[ ${cs_ok[redis]} == OK && ${cs_ok[file]} == OK ]] && c_ratio=$(ratio "${cs_rate[redis]}" "${cs_rate[file]}")
target "(c) redis/file critical sections/s" "$c_ratio" '>=' 0.5
echo "      (redis ${cs_rate[redis]}/s, file ${cs_rate[file]}/s)"
check "no lock keys left, every key has a TTL" \
    "$([[ ${left_locks:-x} == 0 && ${left_nottl:-x} == 0 ]] && echo OK || echo FAIL)"
bench_exit
