# shellcheck shell=bash
# Shared by chaos.sh: workers, the monkey that kills holders, throwaway
# redis-servers. Every process started here is stopped by its PID.

# rand_between LO HI: an integer in [LO, HI].
rand_between() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }

# nap SECONDS: sleep without a child process (a read that times out).
nap() { read -r -t "$1" -u 7 _ || true; }

# alive_with_tag PID TAG: PID runs and carries CHAOS_TAG=TAG (no reused PID).
alive_with_tag() {
    [[ $1 =~ ^[0-9]+$ ]] && grep -qzxF -- "CHAOS_TAG=$2" "/proc/$1/environ" 2>/dev/null
}

# ppid_of PID
ppid_of() {
    local stat
    { stat=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
    stat=${stat##*) }
    read -r _ ppid _ <<<"$stat"
    printf '%s\n' "$ppid"
}

# worker ID K LOCK_ARGS...: K sections, one bufferlock run each. Logs "hung"
# for a run that outlived its time limit, "lost" when bufferlock said the
# lock was lost under it.
worker() {
    local id=$1 k=$2 i tag status err=$RUN/err.$1
    shift 2
    for ((i = 0; i < k; i++)); do
        tag=w$id.$i
        status=0
        CHAOS_TAG=$tag CHAOS_NAP=$(section_nap) timeout -k 5 "$SECTION_LIMIT" \
            "$BL" "$@" chaos "$HERE/section.sh" 2>"$err" || status=$?
        ((status == 124)) && echo "hung $tag" >>"$RUN/log"
        grep -q 'lost the lock' "$err" && echo "lost $tag" >>"$RUN/log"
        cat "$err" >>"$RUN/stderr"
    done
}

# section_nap: mostly a few ms; LONG_NAP_PERCENT of sections take LONG_NAP s.
section_nap() {
    if ((RANDOM % 100 < ${LONG_NAP_PERCENT:-0})); then
        echo "$LONG_NAP"
    else
        printf '0.00%d\n' "$(rand_between 1 4)"
    fi
}

# run_workers W K LOCK_ARGS...: W workers in parallel; waits for all.
run_workers() {
    local w=$1 k=$2 i pids=()
    shift 2
    for ((i = 0; i < w; i++)); do
        worker "$i" "$k" "$@" 2>>"$RUN/stderr" &
        pids+=($!)
    done
    wait "${pids[@]}"
}

# kill_holder MODE: SIGKILL the holder of the section running now (MODE
# self: the section process, which holds a file lock; parent: also its
# bufferlock, which holds a Redis lock). Logged before the signal is sent.
kill_holder() {
    local tag pid parent
    read -r tag pid 2>/dev/null <"$RUN/marker" || return 0
    alive_with_tag "$pid" "$tag" || return 0
    parent=$(ppid_of "$pid") || return 0
    echo "kill $tag" >>"$RUN/log"
    if [[ $1 == parent ]] && alive_with_tag "$parent" "$tag"; then
        kill -KILL "$parent" 2>/dev/null
    fi
    kill -KILL "$pid" 2>/dev/null
    KILLS=$((KILLS + 1))
}

# --- redis-server ---------------------------------------------------------------

REDIS_PID=

free_port() {
    local p i
    for ((i = 0; i < 100; i++)); do
        p=$(rand_between 20000 60000)
        [[ -z $(ss -Hltn "sport = :$p" 2>/dev/null) ]] && { echo "$p"; return 0; }
    done
    return 1
}

rcli() { timeout 10 redis-cli --no-auth-warning -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }

# redis_spawn: start a server on REDIS_PORT (loopback, no persistence); sets REDIS_PID.
redis_spawn() {
    local i
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
        --dir "$RUN" --logfile '' </dev/null >>"$RUN/redis.log" 2>&1 &
    REDIS_PID=$!
    for ((i = 0; i < 100; i++)); do
        [[ $(rcli PING 2>/dev/null) == PONG ]] && return 0
        kill -0 "$REDIS_PID" 2>/dev/null || return 1
        nap 0.05
    done
    return 1
}

redis_start() {
    local try
    for ((try = 0; try < 5; try++)); do
        REDIS_PORT=$(free_port) && redis_spawn && return 0
    done
    echo "chaos: redis-server did not start" >&2
    return 1
}

redis_stop() {
    [[ -n ${REDIS_PID:-} ]] || return 0
    kill -CONT "$REDIS_PID" 2>/dev/null
    kill -TERM "$REDIS_PID" 2>/dev/null
    wait "$REDIS_PID" 2>/dev/null
    REDIS_PID=
}

# redis_restart: SHUTDOWN NOSAVE (clients see their connections closed, every
# key is gone), then the same port again.
redis_restart() {
    local try
    # The server's data goes, fence counters with it (SPEC §14: a fence lives
    # as long as the server's data): the analysis allows one fresh start.
    echo "epoch restart" >>"$RUN/log"
    rcli SHUTDOWN NOSAVE >/dev/null 2>&1
    wait "$REDIS_PID" 2>/dev/null
    for ((try = 0; try < 40; try++)); do
        redis_spawn && return 0
        nap 0.1
    done
    return 1
}
