# shellcheck shell=bash
# Shared by chaos.sh: workers, the monkey that kills holders, throwaway
# redis-servers. Every process started here is stopped by its PID.

# rand_between LO HI: an integer in [LO, HI].
rand_between() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }

# nap SECONDS: sleep without a child process (a read that times out).
nap() { read -r -t "$1" -u 7 _ || true; }

# wait_for COMMAND...: until COMMAND succeeds, 20 s at most.
wait_for() {
    local n
    for ((n = 0; n < 400; n++)); do
        "$@" && return 0
        nap 0.05
    done
    echo "chaos: waited 20 s in vain for: $*" >&2
    return 1
}

# alive_with_tag PID TAG: PID runs and carries CHAOS_TAG=TAG (no reused PID).
alive_with_tag() {
    [[ $1 =~ ^[0-9]+$ ]] && grep -qzxF -- "CHAOS_TAG=$2" "/proc/$1/environ" 2>/dev/null
}

# is_builder PID: PID is a build_output.sh (bash running it). Its caller's
# timeout and bufferlock only name it among their arguments: a PID of a
# killed builder that came back as one of those is not a builder.
is_builder() {
    local argv=()
    { mapfile -d '' -t argv <"/proc/$1/cmdline"; } 2>/dev/null || return 1
    [[ ${argv[1]:-} == */build_output.sh ]]
}

# is_caller PID: PID is a bufferlock of the cache run.
is_caller() {
    local comm
    alive_with_tag "$1" cache || return 1
    { comm=$(<"/proc/$1/comm"); } 2>/dev/null || return 1
    [[ $comm == bufferlock ]]
}

# ppid_of PID
ppid_of() {
    local stat
    { stat=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
    stat=${stat##*) }
    read -r _ ppid _ <<<"$stat"
    printf '%s\n' "$ppid"
}

# worker ID K LOCK_ARGS...: K sections, one bufferlock run each, on the lock
# CHAOS_KEY (chaos). Logs "hung" for a run that outlived its time limit,
# "lost" when bufferlock said the lock was lost under it.
worker() {
    local id=$1 k=$2 i tag status err=$RUN/err.$1
    shift 2
    for ((i = 0; i < k; i++)); do
        tag=w$id.$i
        status=0
        CHAOS_TAG=$tag CHAOS_NAP=$(section_nap) timeout -k 5 "$SECTION_LIMIT" \
            "$BL" "$@" "${CHAOS_KEY:-chaos}" "$HERE/section.sh" 2>"$err" || status=$?
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

# key_workers DIR KEY W K LOCK_ARGS...: run_workers on the lock KEY, with
# its own witnesses in DIR (several keys at once: one DIR each).
key_workers() {
    local RUN=$1 CHAOS_KEY=$2
    local -x CHAOS_DIR=$1
    shift 2
    run_workers "$@"
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
# A backend's servers are numbered 0, 1, ...: SRV_PORT[I] and SRV_PID[I]; each
# runs in its own directory, $RUN/srvI (a cluster node keeps its nodes.conf
# there), with the extra redis-server arguments REDIS_ARGS (a cluster's).

SRV_PORT=() SRV_PID=() SRV_SOCK=() REDIS_ARGS=()
# NETNS=/proc/PID/ns/net: servers start in that network namespace, and the
# harness talks to them through unix sockets (SRV_SOCK), which a downed link
# there does not cut.
NETNS=

# free_port: a loopback port in 20000-50000 that nothing listens on, nor on
# the port + 10000 (a cluster node's bus port).
free_port() {
    local p i
    for ((i = 0; i < 100; i++)); do
        p=$(rand_between 20000 50000)
        [[ -z $(ss -Hltn "sport = :$p or sport = :$((p + 10000))" 2>/dev/null) ]] && { echo "$p"; return 0; }
    done
    return 1
}

# rcli_to I ARGS...: redis-cli to server I, bounded (a paused server cannot hang us).
rcli_to() {
    local i=$1
    shift
    if [[ -n ${SRV_SOCK[i]:-} ]]; then
        timeout 10 redis-cli --no-auth-warning -s "${SRV_SOCK[i]}" "$@"
    else
        timeout 10 redis-cli --no-auth-warning -h 127.0.0.1 -p "${SRV_PORT[i]}" "$@"
    fi
}

# redis_url I: the URL of server I.
redis_url() { echo "redis://127.0.0.1:${SRV_PORT[$1]}/0"; }

# redis_spawn I: start server I on SRV_PORT[I] (loopback, no persistence); sets SRV_PID[I].
redis_spawn() {
    local i=$1 dir=$RUN/srv$1 in_ns=() sock=()
    mkdir -p "$dir"
    if [[ -n $NETNS ]]; then # nsenter execs the server: SRV_PID is its PID
        in_ns=(nsenter --net="$NETNS")
        SRV_SOCK[i]=$dir/redis.sock
        sock=(--unixsocket "${SRV_SOCK[i]}" --unixsocketperm 700)
    fi
    "${in_ns[@]}" redis-server --port "${SRV_PORT[i]}" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize no --dir "$dir" --logfile '' "${sock[@]}" "${REDIS_ARGS[@]}" \
        </dev/null >>"$dir/redis.log" 2>&1 &
    SRV_PID[i]=$!
    server_up "$i" && return 0
    redis_stop_one "$i"
    return 1
}

# server_up I: until server I answers PING (5 s at most); fails at once if it died.
server_up() {
    local n
    for ((n = 0; n < 100; n++)); do
        [[ $(rcli_to "$1" PING 2>/dev/null) == PONG ]] && return 0
        kill -0 "${SRV_PID[$1]}" 2>/dev/null || return 1
        nap 0.05
    done
    return 1
}

# redis_start N: servers 0 to N-1, each on a free port (none if one fails).
redis_start() {
    local i try
    for ((i = 0; i < $1; i++)); do
        for ((try = 0; try < 5; try++)); do
            SRV_PORT[i]=$(free_port) && redis_spawn "$i" && continue 2
        done
        echo "chaos: redis-server did not start" >&2
        redis_stop # the ones that did
        return 1
    done
}

# redis_stop_one I: stop server I by its PID (resumed first if stopped).
redis_stop_one() {
    local pid=${SRV_PID[$1]:-}
    [[ -n $pid ]] || return 0
    kill -CONT "$pid" 2>/dev/null
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    SRV_PID[$1]=
}

# redis_stop: every server of the backend.
redis_stop() {
    local i
    for i in "${!SRV_PID[@]}"; do
        redis_stop_one "$i"
    done
    SRV_PID=() SRV_PORT=() SRV_SOCK=()
}

# --- network namespaces -------------------------------------------------------------

# netns_start: a private network namespace (unshare -n: root only) with its
# loopback link up, held by a sleeping process; sets NETNS and NETNS_PID.
netns_start() {
    unshare -n sh -c 'ip link set lo up && exec sleep 100000' </dev/null >/dev/null 2>&1 &
    NETNS_PID=$!
    NETNS=/proc/$NETNS_PID/ns/net
    wait_for netns_up
}

netns_up() {
    [[ $(readlink "$NETNS") != "$(readlink /proc/self/ns/net)" ]] &&
        nsenter --net="$NETNS" ip -o link show lo 2>/dev/null | grep -q LOWER_UP
}

# netns_stop: the namespace's process, by its PID.
netns_stop() {
    [[ -n ${NETNS_PID:-} ]] || return 0
    kill "$NETNS_PID" 2>/dev/null
    wait "$NETNS_PID" 2>/dev/null
    NETNS='' NETNS_PID=''
}

# link up|down: the namespace's loopback link; down drops packets silently
# (no RST): a partition between everything inside.
link() { nsenter --net="$NETNS" ip link set lo "$1"; }

# --- slot migrations ----------------------------------------------------------------

# node_of_key RKEY: the index of the server that serves the Redis key RKEY
# (it answers for it instead of redirecting).
node_of_key() {
    local i reply
    for i in "${!SRV_PORT[@]}"; do
        reply=$(rcli_to "$i" EXISTS "$1")
        [[ $reply == [01] ]] && { echo "$i"; return 0; }
    done
    return 1
}

# migrate_slot RKEY DST: move the slot of the Redis key RKEY with all its
# keys from its owner to server DST, the way redis-cli --cluster reshard
# does: IMPORTING on DST, MIGRATING on the owner, MIGRATE the keys in
# batches (new keys meanwhile go to DST through ASK), then NODE on DST
# first, then on the others.
migrate_slot() {
    local dst=$2 slot src src_id dst_id keys i
    slot=$(rcli_to 0 CLUSTER KEYSLOT "$1") || return 1
    src=$(node_of_key "$1") || return 1
    [[ $src != "$dst" ]] || return 0
    src_id=$(rcli_to "$src" CLUSTER MYID) dst_id=$(rcli_to "$dst" CLUSTER MYID)
    rcli_to "$dst" CLUSTER SETSLOT "$slot" IMPORTING "$src_id" >/dev/null || return 1
    rcli_to "$src" CLUSTER SETSLOT "$slot" MIGRATING "$dst_id" >/dev/null || return 1
    for ((i = 0; i < 100; i++)); do
        mapfile -t keys < <(rcli_to "$src" CLUSTER GETKEYSINSLOT "$slot" 100)
        [[ ${#keys[@]} -gt 0 && -n ${keys[0]} ]] || break
        # (REPLACE: a key is never on both sides, since the owner serves every
        # key it still has; a leftover from an interrupted MIGRATE is older)
        rcli_to "$src" MIGRATE 127.0.0.1 "${SRV_PORT[dst]}" "" 0 5000 REPLACE KEYS "${keys[@]}" >/dev/null
    done
    ((i < 100)) || return 1 # the keys would be left behind
    rcli_to "$dst" CLUSTER SETSLOT "$slot" NODE "$dst_id" >/dev/null || return 1
    for i in "${!SRV_PORT[@]}"; do
        [[ $i == "$dst" ]] || rcli_to "$i" CLUSTER SETSLOT "$slot" NODE "$dst_id" >/dev/null
    done
}

# redis_restart I [DOWN]: SHUTDOWN NOSAVE (clients see their connections
# closed, every key is gone), DOWN seconds without it (0), then the same
# port again. The caller logs what the lost keys mean for its analysis.
redis_restart() {
    local i=$1 try
    rcli_to "$i" SHUTDOWN NOSAVE >/dev/null 2>&1 || kill -KILL "${SRV_PID[i]}" 2>/dev/null
    wait "${SRV_PID[i]}" 2>/dev/null
    SRV_PID[i]=
    [[ ${2:-0} == 0 ]] || nap "$2"
    for ((try = 0; try < 40; try++)); do
        redis_spawn "$i" && return 0
        nap 0.1
    done
    return 1
}

# --- Redis Cluster ----------------------------------------------------------------

# cluster_create: join servers 0, 1, ... (started with --cluster-enabled yes)
# into one cluster, the slots spread by `redis-cli --cluster create`.
cluster_create() {
    local i addrs=()
    for i in "${!SRV_PORT[@]}"; do
        addrs+=("127.0.0.1:${SRV_PORT[i]}")
    done
    rcli_to 0 --cluster create "${addrs[@]}" --cluster-yes >>"$RUN/cluster-create.log" 2>&1 &&
        cluster_wait_ok
}

# cluster_wait_ok: until every node reports cluster_state:ok.
cluster_wait_ok() { wait_for cluster_ok; }

cluster_ok() {
    local i
    for i in "${!SRV_PORT[@]}"; do
        rcli_to "$i" CLUSTER INFO | grep -q '^cluster_state:ok' || return 1
    done
}

# key_on_node I: a lock KEY whose Redis key (buffer:lock:MD5) node I serves:
# the node answers for it instead of redirecting (MOVED).
key_on_node() {
    local n sum
    for ((n = 0; n < 200; n++)); do
        sum=$(printf %s "chaos-$n" | md5sum)
        [[ $(rcli_to "$1" EXISTS "buffer:lock:${sum%% *}") == 0 ]] && {
            echo "chaos-$n"
            return 0
        }
    done
    return 1
}

# --- Sentinel ---------------------------------------------------------------------

# sentinel_spawn I MASTER_PORT: server I a sentinel (redis-server --sentinel)
# on a free port, watching 127.0.0.1:MASTER_PORT as "mymaster" with quorum 1
# (it fails over alone); its own configuration file, which it rewrites.
sentinel_spawn() {
    local i=$1 dir=$RUN/srv$1 try
    mkdir -p "$dir"
    for ((try = 0; try < 5; try++)); do
        SRV_PORT[i]=$(free_port) || return 1
        cat >"$dir/sentinel.conf" <<CONF
port ${SRV_PORT[i]}
bind 127.0.0.1
daemonize no
dir $dir
sentinel monitor mymaster 127.0.0.1 $2 1
sentinel down-after-milliseconds mymaster 2000
sentinel failover-timeout mymaster 10000
CONF
        redis-server "$dir/sentinel.conf" --sentinel </dev/null >>"$dir/redis.log" 2>&1 &
        SRV_PID[i]=$!
        server_up "$i" && return 0
        redis_stop_one "$i"
    done
    return 1
}

# sentinel_master_port I: the port sentinel I names for mymaster now.
sentinel_master_port() { rcli_to "$1" SENTINEL get-master-addr-by-name mymaster | sed -n 2p; }

# replica_synced I MASTER_PORT: server I replicates MASTER_PORT, its link up.
replica_synced() {
    local info
    info=$(rcli_to "$1" INFO replication | tr -d '\r')
    [[ $info == *role:slave* && $info == *"master_port:$2"* && $info == *master_link_status:up* ]]
}

# role_of I: master or slave, as server I says (ROLE).
role_of() { rcli_to "$1" ROLE 2>/dev/null | head -n1; }
