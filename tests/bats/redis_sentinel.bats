#!/usr/bin/env bats
# Sentinel (SPEC §13): redis-sentinel://HOST:PORT,...#MASTER with a real
# master, replica and sentinel; a sentinel list whose first entry is down, an
# unknown master, no sentinel at all, and SENTINEL FAILOVER (last: it changes
# the topology for good).

bats_require_minimum_version 1.5.0

load sentinel_helpers

setup_file() { sentinel_setup_file; }
teardown_file() { redis_teardown_file; }
setup() { common_setup; }
teardown() { redis_teardown; }

@test "sentinel: the lock is taken on the master the sentinel names" {
    run --separate-stderr bl -r "$SENTINEL_URL" "$K" sh -c \
        'redis-cli -p "$0" GET "$BUFFERLOCK_REDIS_KEY"; echo "$BUFFERLOCK_TOKEN"' "$M_PORT"
    assert_success
    assert_stderr_empty
    assert_equal "${lines[0]}" "${lines[1]}"
    assert_equal "$(rcli_to M EXISTS "$(redis_key "$K")")" 0
}

@test "sentinel: a first sentinel that is down is skipped" {
    local dead
    dead=$(free_port)
    run --separate-stderr bl acquire -r "redis-sentinel://127.0.0.1:$dead,127.0.0.1:$S1_PORT#mymaster" "$K"
    assert_success
    local token=$output
    assert_equal "$(rcli_to M GET "$(redis_key "$K")")" "$token"
    run --separate-stderr bl status -r "redis-sentinel://127.0.0.1:$dead,127.0.0.1:$S1_PORT#mymaster" "$K"
    assert_failure 75
    run --separate-stderr bl release -r "$SENTINEL_URL" "$K" "$token"
    assert_success
    assert_equal "$(rcli_to M EXISTS "$(redis_key "$K")")" 0
}

@test "sentinel: an unknown master is an error naming it, at once" {
    local t0 ms
    t0=$(now_us)
    run --separate-stderr bl -r "redis-sentinel://127.0.0.1:$S1_PORT#nosuchmaster" -w 10 "$K" true
    ms=$(elapsed_ms "$t0")
    assert_failure 69
    assert_one_bufferlock_line
    [[ $stderr == *Redis*"nosuchmaster"* ]] || fail "stderr: $stderr"
    ((ms < $(slack_ms 2000))) || fail "took $ms ms: a wrong name is not worth waiting for"
}

@test "sentinel: no sentinel answering gives the error status within the timeouts" {
    local a b t0 ms
    a=$(free_port) b=$(free_port)
    t0=$(now_us)
    run --separate-stderr bl -r "redis-sentinel://:pw@127.0.0.1:$a,127.0.0.1:$b#mymaster" \
        --connect-timeout 0.3 --io-timeout 0.3 "$K" true
    ms=$(elapsed_ms "$t0")
    assert_failure 69
    assert_one_bufferlock_line
    [[ $stderr == *"Redis at redis-sentinel://127.0.0.1:$a,127.0.0.1:$b/0#mymaster"*sentinel* ]] ||
        fail "stderr: $stderr"
    assert_no_secret pw@
    ((ms < $(slack_ms 2500))) || fail "took $ms ms"
}

@test "sentinel: a user made from the man page's rule and its Sentinel line; without ROLE, 69 at once" {
    PW=acl-test-pw-$RANDOM
    acl_user_on M Sentinel
    local url="redis-sentinel://bufferlock:$PW@127.0.0.1:$S1_PORT#mymaster"
    run --separate-stderr bl -r "$url" "$K" sh -c 'echo "$BUFFERLOCK_FENCE"'
    assert_success
    assert_output --regexp '^[0-9]+$'
    assert_stderr_empty
    acl_user_on M # the base rule alone: ROLE is refused
    local t0 ms
    t0=$(now_us)
    run --separate-stderr bl -r "$url" -w 10 "$K" touch "$T/ran"
    ms=$(elapsed_ms "$t0")
    rcli_to M ACL DELUSER bufferlock >/dev/null
    assert_failure 69
    assert_file_not_exists "$T/ran"
    assert_one_bufferlock_line Redis NOPERM role "SECURITY in bufferlock(1)"
    ((ms < 1500)) || fail "took $ms ms: a refusal is not worth asking the sentinels again"
}

@test "sentinel: after SENTINEL FAILOVER the next acquisition goes to the new master" {
    local token i
    run --separate-stderr bl acquire -r "$SENTINEL_URL" --ttl 30 "$K"
    assert_success
    token=$output
    assert_equal "$(rcli_to M GET "$(redis_key "$K")")" "$token"
    assert_equal "$(rcli_to S1 SENTINEL FAILOVER mymaster)" OK
    for ((i = 0; i < 300; i++)); do
        [[ $(sentinel_master_port) == "$R_PORT" ]] &&
            rcli_to R ROLE | head -1 | grep -qx master && break
        sleep 0.05
    done
    [[ $(sentinel_master_port) == "$R_PORT" ]] || fail "the sentinel never named the replica"
    run --separate-stderr bl -r "$SENTINEL_URL" -w 10 other-key sh -c \
        'redis-cli -p "$0" EXISTS "$BUFFERLOCK_REDIS_KEY"' "$R_PORT"
    assert_success
    assert_output 1
    # The lock taken before the failover was replicated (or is lost: the SPEC
    # caveat); releasing it is never an error.
    run --separate-stderr bl release -r "$SENTINEL_URL" -w 5 "$K" "$token"
    assert_success
}
