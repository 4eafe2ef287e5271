#!/usr/bin/env bash
# The chaos harness: mutual exclusion and the cache under random kills and
# server faults, with counts (README: Chaos).
#
#   tests/chaos/chaos.sh [short|long] [BACKEND...]
#
# Backends (all by default): file; redis (one server: restarts, CLIENT PAUSE
# shorter and longer than the TTL); partition (one server and the workers in
# a private network namespace whose link goes down for 1 s and 3 s around a
# TTL of 2 s, --on-lost term: none may outlive its lock; root only); quorum (3 independent masters, one
# server faulted at a time, restarts kept down longer than the TTL; no
# fences); cluster (a 3-master Redis Cluster, one lock key per master; node
# restarts lose the keys and fences as a single server's do; the lock keys'
# slots migrate between masters meanwhile); sentinel (a
# master, its replica and one sentinel, workers on a redis-sentinel:// URL;
# SENTINEL FAILOVER 3 × SCALE times, each an epoch for the analysis: a lock
# taken just before can be lost, fences can go back; counted apart); cache.
# short: about 10^3 sections per backend (CI); long: at least 10^5 (110 times
# as many, since killed sections do not complete).
# Prints one summary line per backend and ends with
#   chaos: N checks passed, M failed
# Environment: BUFFERLOCK_BIN (default build/bufferlock); CHAOS_KEEP=1 keeps
# the run directories (logs) under TMPDIR.
#
# Each backend is one function, backend_NAME, that runs its workers and its
# monkey and leaves its logs (LOGS, one per lock key) for analyse.awk.
# A new topology plugs in the same way: a backend_NAME that starts its
# servers (redis_start), and a fault function for server_monkey (FAULT_KINDS
# for kinds of its own, as backend_sentinel's failover).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR
source "$HERE/lib.bash"

mode=${1:-short}
shift || true
backends=("$@")
[[ ${#backends[@]} -gt 0 ]] || backends=(file redis partition quorum cluster sentinel cache)
case $mode in
short) SCALE=1 ;;
long) SCALE=110 ;;
*)
    echo "usage: $0 [short|long] [file|redis|partition|quorum|cluster|sentinel|cache...]" >&2
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
    netns_stop
    [[ -n $RUN && -z ${CHAOS_KEEP:-} ]] && rm -rf -- "$RUN"
}
trap cleanup EXIT

# new_run: a fresh directory with the witnesses' files; a backend's settings
# back to their defaults.
new_run() {
    [[ -n $RUN && -z ${CHAOS_KEEP:-} ]] && rm -rf -- "$RUN"
    RUN=$(mktemp -d "${TMPDIR:-/tmp}/bufferlock-chaos.XXXXXX")
    witnesses "$RUN"
    mkdir "$RUN/builders"
    : >"$RUN/stderr"
    exec 7<>"$RUN/nap.fifo"
    export CHAOS_DIR=$RUN
    KILLS=0 FAULTS=() LOGS=("$RUN/log") EXPECT_FENCES='' NO_FENCE_WHY='' REDIS_ARGS=() EXPECT_NONE_OUTLIVED=''
}

# witnesses DIR: the files section.sh writes to, one set per lock key.
witnesses() {
    mkdir -p "$1"
    mkfifo "$1/nap.fifo"
    : >"$1/log"
    : >"$1/counter"
}

# start_workers W K LOCK_ARGS...: workers in the background; $RUN/done when all ended.
start_workers() { start_in_background run_workers "$@"; }

# start_in_background COMMAND...: COMMAND runs the workers; $RUN/done when it ended.
start_in_background() {
    (
        "$@"
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

# report NAME SECONDS: the counts of the logs (LOGS: one per lock key, added
# up), and the checks on them. EXPECT_FENCES yes or no: whether the lock
# gives the command fences (NO_FENCE_WHY says why not).
report() {
    local name=$1 secs=$2 log counts kv k v fence_text failover_text=
    local -A c
    for log in "${LOGS[@]}"; do
        read -ra counts < <(awk -f "$HERE/analyse.awk" "$log")
        for kv in "${counts[@]}"; do
            k=${kv%%=*} v=${kv#*=}
            if [[ $v == n/a ]]; then
                c[$k]=${c[$k]:-n/a}
            else
                [[ ${c[$k]:-n/a} == n/a ]] && c[$k]=0
                c[$k]=$((c[$k] + v))
            fi
        done
    done
    if [[ ${c[fences]} == n/a ]]; then
        fence_text="n/a (no fences${NO_FENCE_WHY:+: $NO_FENCE_WHY})"
    else
        fence_text="${c[fence_violations]} (${c[fences]} fences)"
    fi
    # A failover epoch's (analyse.awk): shown only by a backend that has them.
    ((c[failovers] > 0)) &&
        failover_text="; in a failover (a lock lost as asynchronous replication allows): overlaps ${c[failover_overlaps]}, increments lost/duplicated ${c[failover_increments]}"
    printf '%s: %s sections, %s killed, %s ended by SIGTERM, faults [%s]; mutual-exclusion violations %s%s; outlived their lock %s (fence: %s); increments lost/duplicated %s (%s by holders that outlived their lock); fence order violations %s; hung %s; %ss\n' \
        "$name" "${c[sections]}" "$KILLS" "${c[terms]}" "${FAULTS[*]:-none}" "${c[violations]}" "$failover_text" "${c[outlived]}" \
        "$([[ ${c[fences]} == n/a ]] && echo n/a || echo "would have stopped ${c[outlived]}")" \
        "${c[increments_bad]}" "${c[increments_bad_outlived]}" "$fence_text" "${c[hung]}" "$secs"
    check "$name: sections completed" $((c[sections] < EXPECT_SECTIONS))
    check "$name: mutual exclusion" $((c[violations] != 0))
    check "$name: increments" $((c[increments_bad] - c[increments_bad_outlived] - c[failover_increments] != 0))
    check "$name: fence order" $((c[fence_violations] != 0))
    check "$name: no hung worker" $((c[hung] != 0))
    # --on-lost term and the holder's lease: stopped before the lock can pass
    [[ -z $EXPECT_NONE_OUTLIVED ]] || check "$name: no holder outlived its lock" $((c[outlived] != 0))
    case $EXPECT_FENCES in
    yes) check "$name: the command gets fences" "$([[ ${c[fences]} != n/a ]]; echo $?)" ;;
    no) check "$name: the command gets no fence" "$([[ ${c[fences]} == n/a ]]; echo $?)" ;;
    esac
}

# server_monkey NAME KILL FAULT: until the workers are done, every 0.3-0.9 s
# either KILL (SIGKILL a holder; 7 times in 10) or, when one is due, FAULT
# KIND MS, a server fault: restart, pause-0.5s or pause-1.5s (MS: 500, 1500;
# shorter and longer than the workers' TTL of 1 s; FAULT_KINDS: other
# kinds, MS 0), 3 × SCALE of each, one
# every 0.5-2 s (they cost seconds each: a fixed number, on a schedule, so
# that a short run gets them all).
# ONE_FAULT_AT_A_TIME=1: a server fault waits for the end of the last pause
# (a quorum keeps its majority). Leaves FAULTS as counts per kind.
server_monkey() {
    local name=$1 kill=$2 fault=$3 kind kinds ms us paused_until=0 next_fault
    local -A left=()
    for kind in ${FAULT_KINDS:-restart pause-0.5s pause-1.5s}; do
        left[$kind]=$((3 * SCALE))
    done
    next_fault=$((${EPOCHREALTIME/./} + $(rand_between 500 2000) * 1000))
    while [[ ! -e $RUN/done ]]; do
        nap "0.$(rand_between 3 9)"
        [[ -e $RUN/done ]] && break
        kinds=()
        if ((${EPOCHREALTIME/./} >= next_fault)); then
            for kind in "${!left[@]}"; do
                ((left[$kind] > 0)) && kinds+=("$kind")
            done
        fi
        if ((${#kinds[@]} == 0)); then
            (($(rand_between 0 9) < 7)) && "$kill"
            continue
        fi
        kind=${kinds[RANDOM % ${#kinds[@]}]}
        if [[ -n ${ONE_FAULT_AT_A_TIME:-} ]]; then # wait for the end of a pause
            us=$((paused_until - ${EPOCHREALTIME/./}))
            ((us > 0)) && nap "$((us / 1000000)).$(printf %06d $((us % 1000000)))"
        fi
        left[$kind]=$((left[$kind] - 1))
        FAULTS+=("$kind")
        case $kind in
        pause-0.5s) ms=500 ;;
        pause-1.5s) ms=1500 ;;
        *) ms=0 ;;
        esac
        paused_until=$((${EPOCHREALTIME/./} + ms * 1000))
        "$fault" "$kind" "$ms" || {
            check "$name: $kind" 1
            break
        }
        next_fault=$((${EPOCHREALTIME/./} + $(rand_between 500 2000) * 1000))
    done
    ((${#FAULTS[@]} > 0)) || return 0
    FAULTS=("$(printf '%s\n' "${FAULTS[@]}" | sort | uniq -c | awk '{ printf "%s%s×%s", (NR > 1 ? " " : ""), $2, $1 }')")
}

# pause_server I MS: CLIENT PAUSE on server I for MS ms.
pause_server() { rcli_to "$1" CLIENT PAUSE "$2" ALL >/dev/null; }

holder_kill() { kill_holder parent; }

# --- backends -------------------------------------------------------------------

backend_file() {
    local w=8 k=$((125 * SCALE)) start=$SECONDS
    new_run
    EXPECT_SECTIONS=$((w * k * 8 / 10)) EXPECT_FENCES=yes # killed sections do not complete
    start_workers "$w" "$k" -d "$RUN/locks" -w 60
    while [[ ! -e $RUN/done ]]; do
        nap "0.0$(rand_between 10 60)"
        kill_holder self
    done
    wait "$WORKERS_PID"
    report file $((SECONDS - start))
}

backend_redis() {
    local w=6 k=$((170 * SCALE)) start=$SECONDS
    new_run
    redis_start 1 || {
        check "redis: server start" 1
        return
    }
    EXPECT_SECTIONS=$((w * k * 8 / 10)) EXPECT_FENCES=yes
    # A few long sections, so that renewals meet the pauses.
    LONG_NAP=1.5 LONG_NAP_PERCENT=1 start_workers "$w" "$k" \
        --redis "$(redis_url 0)" --ttl 1 -w 120
    server_monkey redis holder_kill redis_fault
    wait "$WORKERS_PID"
    redis_stop
    report redis $((SECONDS - start))
}

redis_fault() { # KIND MS
    case $1 in
    restart)
        # The server's data goes, fence counters with it (SPEC §14: a fence
        # lives as long as the server's data): the analysis allows one fresh start.
        echo "epoch restart" >>"$RUN/log"
        redis_restart 0
        ;;
    *) pause_server 0 "$2" ;;
    esac
}

# One server and the workers in a private network namespace (root only:
# skipped otherwise), the harness outside talking to the server through a
# unix socket. The monkey takes the namespace's loopback link down (packets
# dropped, no RST) for 1 s or 3 s, shorter and longer than the TTL of 2 s,
# besides killing holders. The workers use --on-lost term: a holder cut off
# for longer than its lease is stopped (its section logs the SIGTERM) before
# the server could give the lock to anyone else, so none outlives its lock.
backend_partition() {
    local w=6 k=$((170 * SCALE)) start=$SECONDS bl_real=$BL
    if [[ $(id -u) != 0 ]] || ! unshare -n true 2>/dev/null; then
        echo "partition: skipped: needs CAP_NET_ADMIN (root) for a private network namespace"
        return
    fi
    new_run
    if ! netns_start; then
        check "partition: network namespace" 1
        return
    fi
    SRV_PORT[0]=6379
    if ! redis_spawn 0; then
        check "partition: server start" 1
        netns_stop
        return
    fi
    printf '#!/bin/sh\nexec nsenter --net=%s %s "$@"\n' "$NETNS" "$bl_real" >"$RUN/bl-in-ns"
    chmod +x "$RUN/bl-in-ns"
    EXPECT_SECTIONS=$((w * k * 8 / 10)) EXPECT_FENCES=yes EXPECT_NONE_OUTLIVED=1
    BL=$RUN/bl-in-ns LONG_NAP=2.5 LONG_NAP_PERCENT=1 start_workers "$w" "$k" \
        --redis "redis://127.0.0.1:${SRV_PORT[0]}/0" --ttl 2 --connect-timeout 0.15 --io-timeout 0.15 \
        --on-lost term -w 120
    FAULT_KINDS="partition-1s partition-3s" server_monkey partition holder_kill partition_fault
    wait "$WORKERS_PID"
    redis_stop
    netns_stop
    report partition $((SECONDS - start))
}

partition_fault() { # KIND MS
    local s=${1#partition-}
    link down || return 1
    nap "${s%s}"
    link up
}

# Three independent masters (--redis given 3 times), one server fault at a
# time so that a majority stays up. A quorum lock has no fence.
backend_quorum() {
    local w=6 k=$((170 * SCALE)) start=$SECONDS i urls=()
    new_run
    redis_start 3 || {
        check "quorum: server start" 1
        return
    }
    for i in 0 1 2; do
        urls+=(--redis "$(redis_url "$i")")
    done
    EXPECT_SECTIONS=$((w * k * 8 / 10)) EXPECT_FENCES=no NO_FENCE_WHY="a quorum lock has none"
    # An io timeout well under the TTL: an acquisition meets a paused server
    # and still gets the lock from the other two (within its validity).
    LONG_NAP=1.5 LONG_NAP_PERCENT=1 start_workers "$w" "$k" "${urls[@]}" --ttl 1 --io-timeout 0.3 -w 120
    ONE_FAULT_AT_A_TIME=1 server_monkey quorum holder_kill quorum_fault
    wait "$WORKERS_PID"
    redis_stop
    report quorum $((SECONDS - start))
}

quorum_fault() { # KIND MS: on one server of the three
    local i=$((RANDOM % 3))
    case $1 in
    # Down for longer than the TTL: the quorum's guarantee holds only while
    # no server loses its keys in a restart within a time to live (man:
    # Quorum). Back sooner without its keys, a lock that a majority held
    # with it (two of three: the third was down or paused when it was taken)
    # is left on one server, and a second holder can take the other two.
    restart) redis_restart "$i" 1.5 ;;
    *) pause_server "$i" "$2" ;;
    esac
}

# A 3-master Redis Cluster; one lock key per master, each with its own
# witnesses ($RUN/kI), its workers connected through the next node (so their
# commands are redirected). A restarted node keeps its slots (nodes.conf) and
# loses its keys, fences with them, as a restarted single server does. The
# slot migration monkey moves a lock key's slot (keys and all) to another
# master and, later, on again, while its workers take and release the lock.
backend_cluster() {
    local w=2 k=$((200 * SCALE)) start=$SECONDS i
    new_run
    REDIS_ARGS=(--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000)
    if ! { redis_start 3 && cluster_create; }; then
        check "cluster: cluster start" 1
        redis_stop
        return
    fi
    LOGS=()
    for i in 0 1 2; do
        CLUSTER_KEY[i]=$(key_on_node "$i") || {
            check "cluster: a key on node $i" 1
            redis_stop
            return
        }
        witnesses "$RUN/k$i"
        LOGS+=("$RUN/k$i/log")
    done
    EXPECT_SECTIONS=$((3 * w * k * 8 / 10)) EXPECT_FENCES=yes
    start_in_background cluster_workers "$w" "$k"
    FAULT_KINDS="restart pause-0.5s pause-1.5s migrate" server_monkey cluster cluster_kill cluster_fault
    wait "$WORKERS_PID"
    redis_stop
    report cluster $((SECONDS - start))
}

# cluster_workers W K: W workers on each node's key (W × 3 in all).
cluster_workers() {
    local i pids=()
    for ((i = 0; i < 3; i++)); do
        LONG_NAP=1.5 LONG_NAP_PERCENT=1 key_workers "$RUN/k$i" "${CLUSTER_KEY[i]}" "$1" "$2" \
            --redis "$(redis_url $(((i + 1) % 3)))" --ttl 1 -w 120 &
        pids+=($!)
    done
    wait "${pids[@]}"
}

# cluster_rkey I: the Redis key of the lock of key I.
cluster_rkey() { echo "buffer:lock:$(printf %s "${CLUSTER_KEY[$1]}" | md5sum | cut -c1-32)"; }

# cluster_kill: the holder of one of the three keys, if one is in its section.
cluster_kill() {
    local RUN=$RUN/k$((RANDOM % 3))
    kill_holder parent
}

cluster_fault() { # KIND MS: on one node of the three
    local i=$((RANDOM % 3)) j owner
    case $1 in
    migrate)
        # The slot of one key's lock (its companions share it) to another
        # master, while its workers go on: scripts meet ASK and TRYAGAIN.
        owner=$(node_of_key "$(cluster_rkey "$i")") || return 1
        migrate_slot "$(cluster_rkey "$i")" $(((owner + 1 + RANDOM % 2) % 3))
        ;;
    restart)
        # the fence counters of the keys it serves now (slots migrate) go
        for j in 0 1 2; do
            [[ $(node_of_key "$(cluster_rkey "$j")") == "$i" ]] && echo "epoch restart" >>"$RUN/k$j/log"
        done
        redis_restart "$i" && cluster_wait_ok
        ;;
    *) pause_server "$i" "$2" ;;
    esac
}

# A master (server 0), its replica (1) and a sentinel (2) watching them as
# "mymaster"; the workers find the master through the sentinel. The fault is
# SENTINEL FAILOVER: a lock taken just before it can be lost and the fence
# counter can go back (asynchronous replication, man: Sentinel), so each
# failover is an epoch for the analysis, from before the command until the
# old master replicates the new one.
backend_sentinel() {
    local w=6 k=$((170 * SCALE)) start=$SECONDS
    new_run
    REDIS_ARGS=(--repl-diskless-sync-delay 0) # a replica in sync at once after a failover
    if ! { redis_start 2 && rcli_to 1 REPLICAOF 127.0.0.1 "${SRV_PORT[0]}" >/dev/null &&
        wait_for replica_synced 1 "${SRV_PORT[0]}" && sentinel_spawn 2 "${SRV_PORT[0]}"; }; then
        check "sentinel: servers start" 1
        redis_stop
        return
    fi
    MASTER=0
    EXPECT_SECTIONS=$((w * k * 8 / 10)) EXPECT_FENCES=yes
    LONG_NAP=1.5 LONG_NAP_PERCENT=1 start_workers "$w" "$k" \
        --redis "redis-sentinel://127.0.0.1:${SRV_PORT[2]}#mymaster" --ttl 1 -w 120
    FAULT_KINDS=failover server_monkey sentinel holder_kill sentinel_fault
    wait "$WORKERS_PID"
    redis_stop
    report sentinel $((SECONDS - start))
}

# sentinel_fault failover: SENTINEL FAILOVER (retried while the sentinel
# has no replica it trusts yet, or the last failover is still under way);
# then until the sentinel names the replica, which says it is a master. The
# sentinel would make the old master a replica of the new one some 10 s
# later (+convert-to-slave); the harness does it at once (REPLICAOF), and
# waits until it is in sync, ready for the next failover.
sentinel_fault() {
    local old=$MASTER new=$((1 - MASTER))
    echo "epoch failover" >>"$RUN/log"
    wait_for failover_accepted || {
        echo "chaos: SENTINEL FAILOVER: $(<"$RUN/failover.reply")" >&2
        return 1
    }
    wait_for promoted "$new" || return 1
    rcli_to "$old" REPLICAOF 127.0.0.1 "${SRV_PORT[new]}" >/dev/null
    wait_for replica_synced "$old" "${SRV_PORT[new]}" || return 1
    MASTER=$new
    echo "epoch failover-done" >>"$RUN/log"
}

failover_accepted() {
    rcli_to 2 SENTINEL FAILOVER mymaster >"$RUN/failover.reply" 2>&1
    [[ $(<"$RUN/failover.reply") == OK ]]
}

promoted() { [[ $(sentinel_master_port 2) == "${SRV_PORT[$1]}" && $(role_of "$1") == master ]]; }

# Builders killed at random points; every output a caller got with status 0
# is compared byte for byte with the one right output.
backend_cache() {
    local readers=6 calls=$((170 * SCALE)) start=$SECONDS i pids=() f pid caller
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
            # A killed builder leaves its file behind, and its PID may come
            # back as another process (in a long run, a caller): only a
            # running build_output.sh is a builder.
            if ! alive_with_tag "$pid" cache || ! is_builder "$pid"; then
                rm -f -- "$f"
                continue
            fi
            if ((RANDOM % 2)) && caller=$(ppid_of "$pid") && is_caller "$caller"; then
                kill -KILL "$caller" "$pid" 2>/dev/null # the caller that builds, and its build
            else
                kill -KILL "$pid" 2>/dev/null # the build alone: bufferlock must not store it
            fi
            rm -f -- "$f"
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
    check "cache: every call of every reader ended (no reader killed)" $((served + wrong + failed_runs < readers * calls))
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
