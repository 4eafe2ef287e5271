#!/usr/bin/env bash
# bench/crowd.sh — a crowd on one key: N callers started at once, each with
# --wait inf around one short locked increment, on the file backend and on a
# private loopback redis-server.
#
#   bench/crowd.sh [--quick]
#
# For each backend and N = 10, 200 and 1000 (--quick: 10 and 100): the
# counter must end at exactly N (a lost update is a broken lock), every
# caller must exit 0 within the driver's 60 s (nothing hung), and on Redis
# `INFO clients` must be back to what it was before (every connection
# closed). Reported: wall time from the first spawn to the last exit,
# throughput (critical sections per second), and the hand-off: the time from
# one holder's command's last timestamp to the next holder's command's first
# (it includes the command's exit, the reap, the release, the wake-up, the
# next SET NX or flock, and the fork + exec of the next command);
# nearest-rank p50 and p99 over the N-1 hand-offs of a run.
#
# Target: Redis hand-off p50 with 200 waiters <= 3 ms.
#
# The callers are spawned by bench/spawn.c (herd), the timestamps are
# CLOCK_MONOTONIC from bench/clocknow.c, written by the critical section
# itself (under the lock, so the log is in lock order).
#
# Environment: BUFFERLOCK_BIN (default <repo>/build/bufferlock), CC (cc).
# Exit status: 0 unless a correctness check failed.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"

if ((quick)); then
    CROWDS=(10 100)
else
    CROWDS=(10 200 1000)
fi
TARGET_FMT='  %-42s %10s   target %-2s %-8s %s\n'
CHECK_FMT='  %-42s %10s   target exact       %s\n'

need=()
want redis-server redis-server
want redis-cli redis-tools
want "$CC" gcc libc6-dev
install_missing tools
require_cc
require_bl
make_tmp spawn clocknow
# 1000 waiters hold 1000 connections: the server's descriptor limit must
# allow them (redis-server lowers maxclients to fit it).
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
start_redis
URL=redis://127.0.0.1:$PORT/0
bench_header crowd

# The critical section: a timestamp, a read-modify-write of the counter, a
# timestamp. $1 counter, $2 log, $3 clocknow.
# shellcheck disable=SC2016 # expanded by the sh -c of each caller
SECTION='"$3" >> "$2"; n=$(cat "$1"); echo $((n + 1)) > "$1"; "$3" >> "$2"'

clients() { redis-cli -p "$PORT" INFO clients | tr -d '\r' | sed -n 's/^connected_clients://p'; }

# handoffs LOG: the hand-off times (ns), one a line, from a log of
# start/end pairs in lock order.
handoffs() {
    awk 'NR % 2 == 1 && NR > 1 { print $1 - end } NR % 2 == 0 { end = $1 }' "$1"
}
# pct P FILE: nearest-rank percentile P of the numbers in FILE (sorted here).
pct() {
    sort -n "$2" | awk -v p="$1" '{ v[NR] = $1 } END {
        if (NR == 0) { print "nan"; exit }
        r = int((p / 100) * NR + 0.999999); if (r < 1) r = 1; print v[r] }'
}

declare -A P50 P99 RATE
verdict=OK
# crowd BACKEND N BACKEND-OPTIONS...
crowd() {
    local backend=$1 n=$2 dir before after i line wall bad launch count ho
    shift 2
    dir=$tmp/$backend.$n
    mkdir -p "$dir/out"
    echo 0 >"$dir/counter"
    : >"$dir/log"
    before=$(clients)
    line=$("$SPAWN" herd "$n" "$dir/out" -- "$BL" "$@" -w inf "crowd.$n" \
        /bin/sh -c "$SECTION" sh "$dir/counter" "$dir/log" "$CLOCKNOW" 2>"$dir/err" || true)
    read -r wall bad launch <<<"${line:-nan 1 0}"
    count=$(cat "$dir/counter")
    # connections close as the callers exit; the server notices at once
    for ((i = 0; i < 50; i++)); do
        after=$(clients)
        [[ $after == "$before" ]] && break
        sleep 0.1
    done
    handoffs "$dir/log" >"$dir/handoffs"
    ho=$(wc -l <"$dir/handoffs")
    local ok=OK
    if [[ $wall == nan || ${bad:-1} != 0 || $count != "$n" || $ho != $((n - 1)) ]]; then
        ok=FAIL
        err "$backend x$n: counter $count (want $n), ${bad:-?} callers failed or hung," \
            "$ho hand-offs logged: $(head -c 300 "$dir/err")"
    fi
    if [[ $backend == redis && $after != "$before" ]]; then
        ok=FAIL
        err "$backend x$n: $after Redis clients connected after the run, $before before"
    fi
    [[ $ok == OK ]] || verdict=FAIL
    P50[$backend.$n]=$(ms "$(pct 50 "$dir/handoffs")" 2)
    P99[$backend.$n]=$(ms "$(pct 99 "$dir/handoffs")" 2)
    RATE[$backend.$n]=$(awk -v n="$n" -v w="$wall" 'BEGIN { if (w == "nan" || w <= 0) print "-"; else printf "%.0f", n / (w / 1e9) }')
    printf '  %-6s %5d callers: wall %8s ms (spawned within %s ms), %6s sections/s, hand-off p50 %6s ms p99 %7s ms, counter %s, clients %s -> %s, %s\n' \
        "$backend" "$n" "$(ms "$wall" 1)" "$(ms "$launch" 1)" "${RATE[$backend.$n]}" \
        "${P50[$backend.$n]}" "${P99[$backend.$n]}" "$count" "$before" "${after:-?}" "$ok"
}

hr "crowds on one key, -w inf, one locked increment each"
for n in "${CROWDS[@]}"; do
    crowd file "$n" -d "$tmp/locks"
    crowd redis "$n" -r "$URL"
done

hr "summary (load $(loadavg))"
check "counters exact, nothing hung, clients closed" "$verdict"
if ((quick)); then
    target "redis hand-off p50, 100 waiters (ms)" "${P50[redis.100]}" "<=" 3
else
    target "redis hand-off p50, 200 waiters (ms)" "${P50[redis.200]}" "<=" 3
fi
bench_exit
