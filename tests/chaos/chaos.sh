#!/usr/bin/env bash
# The chaos harness: mutual exclusion and the cache under random kills and
# server faults, with counts (README: Chaos).
#
#   tests/chaos/chaos.sh [short|long] [BACKEND...]     backends: file redis cache
#
# short: about 10^3 sections per backend (CI); long: about 10^5.
# Prints one summary line per backend and ends with
#   chaos: N checks passed, M failed
# Environment: BUFFERLOCK_BIN (default build/bufferlock); CHAOS_KEEP=1 keeps
# the run directories (logs) under TMPDIR.
#
# Each backend is one function, backend_NAME, that runs its workers and its
# monkey and leaves the log for analyse.awk. The topologies still to come
# (Redis Cluster, quorum, Sentinel failover) and fences plug in the same way:
# a backend_redis_cluster that starts its servers and picks its faults, and
# section.sh already logs BUFFERLOCK_FENCE when the command gets one.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR
source "$HERE/lib.bash"

mode=${1:-short}
shift || true
backends=("$@")
[[ ${#backends[@]} -gt 0 ]] || backends=(file redis cache)
case $mode in
short) SCALE=1 ;;
long) SCALE=100 ;;
*)
    echo "usage: $0 [short|long] [file|redis|cache...]" >&2
    exit 64
    ;;
esac
BL=${BUFFERLOCK_BIN:-$HERE/../../build/bufferlock}
[[ -x $BL ]] || {
    echo "chaos: no bufferlock binary at $BL" >&2
    exit 69
}
SECTION_LIMIT=120
RUN=
passed=0 failed=0
cleanup() {
    redis_stop
    [[ -n $RUN && -z ${CHAOS_KEEP:-} ]] && rm -rf -- "$RUN"
}
trap cleanup EXIT

# new_run: a fresh directory with the witnesses' files.
new_run() {
    [[ -n $RUN && -z ${CHAOS_KEEP:-} ]] && rm -rf -- "$RUN"
    RUN=$(mktemp -d "${TMPDIR:-/tmp}/bufferlock-chaos.XXXXXX")
    mkfifo "$RUN/nap.fifo"
    mkdir "$RUN/builders"
    : >"$RUN/log"
    : >"$RUN/stderr"
    : >"$RUN/counter"
    exec 7<>"$RUN/nap.fifo"
    export CHAOS_DIR=$RUN
    KILLS=0 FAULTS=()
}

# start_workers W K LOCK_ARGS...: workers in the background; $RUN/done when all ended.
start_workers() {
    (
        run_workers "$@"
        : >"$RUN/done"
    ) &
    WORKERS_PID=$!
}

check() { # NAME OK?
    if [[ $2 == 0 ]]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "chaos: FAILED: $1"
    fi
}

# report NAME SECONDS: the counts of the log, and the checks on them.
report() {
    local name=$1 secs=$2 counts
    counts=$(awk -f "$HERE/analyse.awk" "$RUN/log")
    local -A c
    local kv
    for kv in $counts; do
        c[${kv%%=*}]=${kv#*=}
    done
    printf '%s: %s sections, %s killed, faults [%s]; mutual-exclusion violations %s; outlived their lock %s (fence: %s); increments lost/duplicated %s (%s by holders that outlived their lock); fence order violations %s; hung %s; %ss\n' \
        "$name" "${c[sections]}" "$KILLS" "${FAULTS[*]:-none}" "${c[violations]}" "${c[outlived]}" \
        "$([[ ${c[fences]} == n/a ]] && echo n/a || echo "would have stopped ${c[outlived]}")" \
        "${c[increments_bad]}" "${c[increments_bad_outlived]}" "${c[fence_violations]}" "${c[hung]}" "$secs"
    check "$name: sections completed" $((c[sections] < EXPECT_SECTIONS))
    check "$name: mutual exclusion" $((c[violations] != 0))
    check "$name: increments" $((c[increments_bad] - c[increments_bad_outlived] != 0))
    check "$name: fence order" $((c[fence_violations] != 0))
    check "$name: no hung worker" $((c[hung] != 0))
}

# --- backends -------------------------------------------------------------------

backend_file() {
    local w=8 k=$((125 * SCALE)) start=$SECONDS
    new_run
    EXPECT_SECTIONS=$((w * k * 8 / 10)) # killed sections do not complete
    start_workers "$w" "$k" -d "$RUN/locks" -w 60
    while [[ ! -e $RUN/done ]]; do
        nap "0.0$(rand_between 10 60)"
        kill_holder self
    done
    wait "$WORKERS_PID"
    report file $((SECONDS - start))
}

backend_redis() {
    local w=6 k=$((170 * SCALE)) start=$SECONDS fault
    # Server faults cost seconds each: a fixed number per kind, spread out.
    local -A left=([restart]=$((3 * SCALE)) [pause-0.5s]=$((3 * SCALE)) [pause-1.5s]=$((3 * SCALE)))
    new_run
    redis_start || {
        check "redis: server start" 1
        return
    }
    EXPECT_SECTIONS=$((w * k * 8 / 10))
    # A few long sections, so that renewals meet the pauses.
    LONG_NAP=1.5 LONG_NAP_PERCENT=1 start_workers "$w" "$k" \
        --redis "redis://127.0.0.1:$REDIS_PORT/0" --ttl 1 -w 120
    while [[ ! -e $RUN/done ]]; do
        nap "0.$(rand_between 3 9)"
        [[ -e $RUN/done ]] && break
        fault=$(rand_between 0 9)
        case $fault in
        6) fault=restart ;;
        7) fault=pause-0.5s ;;
        8) fault=pause-1.5s ;;
        9) continue ;;
        *)
            kill_holder parent
            continue
            ;;
        esac
        ((left[$fault] > 0)) || continue
        left[$fault]=$((left[$fault] - 1))
        FAULTS+=("$fault")
        case $fault in
        restart) redis_restart || break ;;
        pause-0.5s) rcli CLIENT PAUSE 500 ALL >/dev/null ;;  # shorter than the TTL
        pause-1.5s) rcli CLIENT PAUSE 1500 ALL >/dev/null ;; # longer than the TTL
        esac
    done
    wait "$WORKERS_PID"
    redis_stop
    FAULTS=("$(printf '%s\n' "${FAULTS[@]}" | sort | uniq -c | awk '{ printf "%s%s×%s", (NR > 1 ? " " : ""), $2, $1 }')")
    report redis $((SECONDS - start))
}

# Builders killed at random points; every output a caller got with status 0
# is compared byte for byte with the one right output.
backend_cache() {
    local readers=6 calls=$((170 * SCALE)) start=$SECONDS i pids=() f pid
    new_run
    for i in 0 1 2; do
        CHAOS_DIR=$RUN "$HERE/build_output.sh" "key$i" >"$RUN/expected.key$i"
    done
    rm -f "$RUN"/builders/*
    (
        for ((i = 0; i < readers; i++)); do
            cache_reader "$i" "$calls" 2>>"$RUN/stderr" &
            pids+=($!)
        done
        wait "${pids[@]}"
        : >"$RUN/done"
    ) &
    WORKERS_PID=$!
    while [[ ! -e $RUN/done ]]; do
        nap "0.0$(rand_between 20 90)"
        for f in "$RUN"/builders/*; do
            pid=${f##*/}
            [[ $pid =~ ^[0-9]+$ ]] || continue
            alive_with_tag "$pid" cache || continue
            if ((RANDOM % 2)); then
                kill -KILL "$(ppid_of "$pid")" "$pid" 2>/dev/null # the caller that builds, and its build
            else
                kill -KILL "$pid" 2>/dev/null # the build alone: bufferlock must not store it
            fi
            KILLS=$((KILLS + 1))
            break
        done
    done
    wait "$WORKERS_PID"
    # What the store holds at the end is whole too.
    for i in 0 1 2; do
        CHAOS_TAG=final "$BL" cache --cache-dir "$RUN/cache" "key$i" -- "$HERE/build_output.sh" "key$i" \
            >"$RUN/final.$i" 2>>"$RUN/stderr" || echo wrong >>"$RUN/cache.log"
        cmp -s "$RUN/final.$i" "$RUN/expected.key$i" || echo wrong >>"$RUN/cache.log"
    done
    local served wrong failed_runs
    served=$(grep -c '^served' "$RUN/cache.log")
    wrong=$(grep -c '^wrong' "$RUN/cache.log")
    failed_runs=$(grep -c '^status' "$RUN/cache.log")
    printf 'cache: %s outputs served and verified byte for byte, %s builders killed, %s runs ended by a kill (no output claimed); partial or wrong outputs %s; %ss\n' \
        "$served" "$KILLS" "$failed_runs" "$wrong" $((SECONDS - start))
    check "cache: outputs served" $((served < readers * calls / 2))
    check "cache: no partial or wrong output" $((wrong != 0))
}

# cache_reader ID CALLS: calls with a short max-age (so entries are rebuilt
# often); an output with status 0 must be exactly the expected one.
cache_reader() {
    local id=$1 n=$2 i key status out=$RUN/out.$1
    for ((i = 0; i < n; i++)); do
        key=key$((RANDOM % 3))
        status=0
        CHAOS_TAG=cache timeout -k 5 "$SECTION_LIMIT" "$BL" cache --cache-dir "$RUN/cache" --max-age 0.1 \
            "$key" -- "$HERE/build_output.sh" "$key" >"$out" 2>>"$RUN/stderr" || status=$?
        if ((status == 0)); then
            if cmp -s "$out" "$RUN/expected.$key"; then
                echo served >>"$RUN/cache.log"
            else
                echo "wrong $id.$i" >>"$RUN/cache.log"
                cp "$out" "$RUN/../bufferlock-chaos-wrong.$id.$i" 2>/dev/null
            fi
        else
            echo "status $status" >>"$RUN/cache.log"
        fi
    done
}

for backend in "${backends[@]}"; do
    "backend_$backend"
done
echo "chaos: $passed checks passed, $failed failed"
[[ $failed -eq 0 ]]
