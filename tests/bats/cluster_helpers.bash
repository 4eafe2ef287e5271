# shellcheck shell=bash
# A real 3-master Redis Cluster on free loopback ports, for redis_cluster.bats.
#
#   setup_file()    { cluster_setup_file; }    # C1, C2, C3 (C1_PORT, C1_URL, ...)
#   teardown_file() { redis_teardown_file; }   # stopped by PID
#   setup()         { cluster_setup; }         # common_setup + FLUSHALL on each node
#
# The slots are spread by `redis-cli --cluster create`; slot_owner tells which
# node serves a slot, cluster_key_on finds a KEY whose lock lands on a node;
# cluster_create joins servers started otherwise (TLS nodes: redis_tls.bats).

load redis_helpers

CLUSTER_NODES=(C1 C2 C3)
# redis-server arguments of a cluster node (start_tls_redis_as adds
# --tls-cluster yes for a TLS cluster).
CLUSTER_ARGS=(--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000)
# A node's bus port is its port + 10000: free_port stays below this, so
# that the bus port too is below the ephemeral ports (free_port).
CLUSTER_FREE_PORT_MAX=22767

cluster_setup_file() {
    local n FREE_PORT_MAX=$CLUSTER_FREE_PORT_MAX
    for n in "${CLUSTER_NODES[@]}"; do
        start_redis_as "$n" "${CLUSTER_ARGS[@]}" || return 1
    done
    export C1_PORT C2_PORT C3_PORT C1_URL C2_URL C3_URL C1_PID C2_PID C3_PID
    cluster_create "${CLUSTER_NODES[@]}"
}

# cluster_create NAME...: join the started cluster-enabled servers NAME...
# (over TLS if they are TLS servers) into one cluster, the slots spread by
# `redis-cli --cluster create`; returns when every node reports
# cluster_state:ok.
cluster_create() {
    local n i ok addrs=()
    for n in "$@"; do
        local -n _cp="${n}_PORT"
        addrs+=("127.0.0.1:$_cp")
    done
    rcli_to "$1" --cluster create "${addrs[@]}" --cluster-yes \
        >"$BATS_FILE_TMPDIR/cluster-create.log" 2>&1 || {
        cat "$BATS_FILE_TMPDIR/cluster-create.log" >&2
        return 1
    }
    for ((i = 0; i < 200; i++)); do
        ok=0
        for n in "$@"; do
            rcli_to "$n" CLUSTER INFO | tr -d '\r' | grep -qx 'cluster_state:ok' && ok=$((ok + 1))
        done
        ((ok == $#)) && return 0
        sleep 0.05
    done
    echo "cluster_create: the cluster never reached cluster_state:ok" >&2
    return 1
}

cluster_setup() {
    common_setup
    local n
    for n in "${CLUSTER_NODES[@]}"; do
        local -n _pid="${n}_PID"
        _is_redis_pid "$_pid" || fail "cluster node $n (pid $_pid) is gone"
        rcli_to "$n" FLUSHALL >/dev/null
    done
}

# slot_of RKEY: the slot of a Redis key, as the cluster computes it.
slot_of() {
    rcli_to "${CLUSTER_NODES[0]}" CLUSTER KEYSLOT "$1"
}

# slot_owner SLOT: the name (C1, C2, C3: CLUSTER_NODES) of the node serving SLOT.
slot_owner() {
    local port n
    port=$(rcli_to "${CLUSTER_NODES[0]}" CLUSTER NODES | awk -v s="$1" '{
        split($2, a, "[:@]")
        for (i = 9; i <= NF; i++) {
            if ($i ~ /^\[/) continue
            n = split($i, r, "-"); lo = r[1]; hi = (n == 2 ? r[2] : r[1])
            if (s + 0 >= lo + 0 && s + 0 <= hi + 0) print a[2]
        }
    }')
    for n in "${CLUSTER_NODES[@]}"; do
        local -n _p="${n}_PORT"
        [[ $_p == "$port" ]] && {
            printf '%s\n' "$n"
            return 0
        }
    done
    return 1
}

# node_id NAME: the cluster node id of NAME.
node_id() {
    rcli_to "$1" CLUSTER MYID
}

# cluster_key_on NAME [PREFIX]: print a KEY whose lock key (redis_key) is
# served by node NAME.
cluster_key_on() {
    local i k
    for ((i = 0; i < 200; i++)); do
        k="job-$i"
        if [[ $(slot_owner "$(slot_of "$(redis_key "$k" "${2-buffer:lock:}")")") == "$1" ]]; then
            printf '%s\n' "$k"
            return 0
        fi
    done
    return 1
}

# other_node NAME: a node that is not NAME.
other_node() {
    if [[ $1 == C1 ]]; then echo C2; else echo C1; fi
}
