# shellcheck shell=bash
# A master, its replica and one sentinel watching them, for redis_sentinel.bats.
#
#   setup_file()    { sentinel_setup_file; }   # M (master), R (replica), S1 (sentinel)
#   teardown_file() { redis_teardown_file; }   # all stopped by PID
#
# SENTINEL_URL names the master "mymaster" through S1.

load redis_helpers

# start_sentinel_as NAME MASTER_PORT: a sentinel on a free port watching the
# master as "mymaster" (quorum 1: it may fail over alone).  The sentinel
# rewrites its configuration, so it gets a private copy.
start_sentinel_as() {
    local name=$1 master=$2 dir port pid i try
    dir=$(mktemp -d "$(_redis_base_dir)/sentinel.XXXXXX")
    for ((try = 0; try < 8; try++)); do
        port=$(free_port) || return 1
        cat >"$dir/sentinel.conf" <<CONF
port $port
bind 127.0.0.1
daemonize no
dir $dir
sentinel monitor mymaster 127.0.0.1 $master 1
sentinel down-after-milliseconds mymaster 2000
sentinel failover-timeout mymaster 10000
CONF
        "$REDIS_SERVER_BIN" "$dir/sentinel.conf" --sentinel </dev/null >>"$dir/redis.log" 2>&1 3>&- &
        pid=$!
        _redis_register "$pid"
        for ((i = 0; i < 200; i++)); do
            pid_alive "$pid" || break
            if _redis_ping_ok "$port" ""; then
                _redis_set_vars "$name" "$port" "$pid" "$dir" ""
                return 0
            fi
            sleep 0.05
        done
        stop_redis "$pid"
    done
    echo "start_sentinel_as $name: the sentinel did not start; log:" >&2
    cat "$dir/redis.log" >&2
    return 1
}

sentinel_setup_file() {
    start_redis_as M || return 1
    start_replica_as R "$M_PORT" || return 1
    start_sentinel_as S1 "$M_PORT" || return 1
    export M_PORT M_PID R_PORT R_PID S1_PORT S1_PID
    export SENTINEL_URL="redis-sentinel://127.0.0.1:$S1_PORT#mymaster"
}

# sentinel_master_port: the port S1 names for mymaster now.
sentinel_master_port() {
    rcli_to S1 SENTINEL get-master-addr-by-name mymaster | sed -n 2p
}
