#!/usr/bin/env bats
# Quorum (SPEC §13): --redis given N times names N independent masters; a
# lock is held on a majority within its validity. Five servers per file (Q1..Q5).

bats_require_minimum_version 1.5.0

load redis_helpers

setup_file() {
    local n
    for n in Q1 Q2 Q3 Q4 Q5; do
        start_redis_as "$n" || return 1
    done
    export Q1_PORT Q2_PORT Q3_PORT Q4_PORT Q5_PORT Q1_PID Q2_PID Q3_PID Q4_PID Q5_PID
    export Q1_URL Q2_URL Q3_URL Q4_URL Q5_URL Q1_DIR Q2_DIR Q3_DIR Q4_DIR Q5_DIR
}
teardown_file() { redis_teardown_file; }
setup() {
    common_setup
    local n
    for n in Q1 Q2 Q3 Q4 Q5; do
        local -n _pid="${n}_PID"
        _is_redis_pid "$_pid" || fail "$n (pid $_pid) is gone"
        rcli_to "$n" FLUSHALL >/dev/null
    done
    Q3=(-r "$Q1_URL" -r "$Q2_URL" -r "$Q3_URL")
    Q5=("${Q3[@]}" -r "$Q4_URL" -r "$Q5_URL")
}
teardown() {
    redis_teardown # and the servers a test started (and killed) itself
}

# private_trio: three servers of this test only (P1, P2, P3), in P3Q.
private_trio() {
    start_redis_as P1 && start_redis_as P2 && start_redis_as P3 || fail "cannot start servers"
    P3Q=(-r "$P1_URL" -r "$P2_URL" -r "$P3_URL")
}

# holders RKEY: how many of the five servers hold RKEY.
holders() {
    local n c=0
    for n in Q1 Q2 Q3 Q4 Q5; do
        [[ $(rcli_to "$n" EXISTS "$1") == 1 ]] && c=$((c + 1))
    done
    echo "$c"
}

@test "quorum: 3 and 5 servers, all up: held on all, released on all" {
    local rk
    rk=$(redis_key "$K")
    run --separate-stderr bl "${Q3[@]}" "$K" sh -c 'echo "$BUFFERLOCK_TOKEN"'
    assert_success
    assert_stderr_empty
    assert_equal "$(holders "$rk")" 0
    run --separate-stderr bl "${Q5[@]}" "$K" sh -c 'redis-cli -p "$0" GET "$BUFFERLOCK_REDIS_KEY"' "$Q5_PORT"
    assert_success
    [[ $output =~ ^[0-9a-f]{32}$ ]] || fail "Q5 did not hold the token: $output"
    assert_equal "$(holders "$rk")" 0
}

@test "quorum: acquire, status, extend, release go to all N; a majority held elsewhere is busy" {
    local token rk
    rk=$(redis_key "$K")
    run --separate-stderr bl acquire "${Q5[@]}" --ttl 30 "$K"
    assert_success
    token=$output
    assert_equal "$(holders "$rk")" 5
    run --separate-stderr bl status "${Q5[@]}" "$K"
    assert_failure 75
    # the holder record that all five agree on, and no fence (SPEC §14)
    assert_output --regexp '^held ttl=[0-9]+\.[0-9]{3} pid=[0-9]+ host=[^ ]+ since=[0-9]+\.[0-9]{3}$'
    run --separate-stderr bl "${Q5[@]}" -n "$K" true
    assert_failure 75
    run --separate-stderr bl extend "${Q5[@]}" --ttl 50 "$K" "$token"
    assert_success
    (($(rcli_to Q4 PTTL "$rk") > 40000)) || fail "not extended"
    run --separate-stderr bl release "${Q5[@]}" "$K" "$token"
    assert_success
    assert_equal "$(holders "$rk")" 0
    # two of three held by someone else: busy, and nothing of ours is left behind
    rcli_to Q1 SET "$rk" other PX 30000 >/dev/null
    rcli_to Q2 SET "$rk" other PX 30000 >/dev/null
    run --separate-stderr bl "${Q3[@]}" -n "$K" true
    assert_failure 75
    assert_equal "$(rcli_to Q3 EXISTS "$rk")" 0
}

@test "quorum: one of three down is still held; a majority down is the error status" {
    private_trio
    kill_redis P3
    local t0 ms
    t0=$(now_us)
    # A refused connection is not waited for: with --connect-timeout 5, a
    # wait would cost 5 s, far beyond what load adds.
    run --separate-stderr bl "${P3Q[@]}" --connect-timeout 5 "$K" echo ran
    ms=$(elapsed_ms "$t0")
    assert_success
    assert_output ran
    ((ms < 2500)) || fail "took $ms ms"
    kill_redis P2
    run --separate-stderr bl "${P3Q[@]}" "$K" echo ran
    assert_failure 69
    assert_one_bufferlock_line
    [[ $stderr == *Redis*"no majority"*"$P2_PORT"* ]] || fail "stderr: $stderr"
    assert_equal "$(rcli_to P1 EXISTS "$(redis_key "$K")")" 0
}

# bl_timed_paused A B ARGS...: bl_timed ARGS... against answering servers
# (BASE_MS: start-up, the connections, the command, on this build and this
# machine's load now), then again with servers A and B paused (MS). The
# pauses outlast the run and are lifted after it. The parallel cases below
# bound MS - BASE_MS halfway between the parallel cost and the sequential.
bl_timed_paused() {
    local a=$1 b=$2
    shift 2
    bl_timed "$@"
    BASE_MS=$MS
    pause_redis_clients "$a" 8000 >/dev/null
    pause_redis_clients "$b" 8000 >/dev/null
    bl_timed "$@"
    rcli_to "$a" CLIENT UNPAUSE >/dev/null
    rcli_to "$b" CLIENT UNPAUSE >/dev/null
}

@test "quorum: a server paused longer than the io timeout costs one io timeout, in parallel" {
    bl_timed_paused Q2 Q4 "${Q5[@]}" --io-timeout 1 "$K" echo ran
    assert_success
    assert_output ran
    # Acquisition and release each wait one io timeout for the two paused
    # servers, in parallel: ~2 s more; one after another it would be ~4 s.
    ((MS >= 1800 && MS - BASE_MS < 3000)) || fail "took $MS ms (unpaused: $BASE_MS ms)"
}

@test "quorum: connections open in parallel: two servers that stall at SELECT cost one io timeout" {
    # /1 makes every connection SELECT, a round trip that a paused server
    # leaves unanswered. The attempt and the clean-up of partial holdings
    # each open the two: one io timeout each in parallel (~2 s), two each one
    # after another (~4 s).
    bl_timed_paused Q2 Q3 -r "${Q1_URL%/0}/1" -r "${Q2_URL%/0}/1" -r "${Q3_URL%/0}/1" --io-timeout 1 "$K" echo ran
    assert_failure 69
    refute_output ran
    ((MS >= 1800 && MS - BASE_MS < 3000)) || fail "took $MS ms (unpaused: $BASE_MS ms; one after another: ~4000)"
}

@test "quorum: a TTL shorter than the acquisition is not held and leaves nothing behind" {
    # 1.5 s: the run must start within the pause (on a loaded machine too),
    # which must end within its io timeout.
    pause_redis_clients Q1 1500 >/dev/null
    pause_redis_clients Q2 1500 >/dev/null
    run --separate-stderr bl "${Q3[@]}" --ttl 0.2 --io-timeout 2 "$K" echo ran
    assert_failure 75
    refute_output ran
    sleep 0.9
    assert_equal "$(holders "$(redis_key "$K")")" 0
}

@test "quorum: renewal that loses the majority is a lost lock (--on-lost term)" {
    private_trio
    bl_bg "${P3Q[@]}" --ttl 3 --on-lost term --kill-after 1 --io-timeout 0.2 --connect-timeout 0.2 \
        "$K" sh -c 'echo started > "$0"; sleep 30' "$T/started"
    local pid=$BG_PID
    wait_for_file "$T/started" 5 || fail "the command did not start"
    kill_redis P2
    kill_redis P3
    wait_for_exit "$pid" 5 || fail "the command was not stopped: $(cat "$T/bg.err")"
    reap "$pid"
    assert_equal "$REAPED_STATUS" 143
    # no majority answers: stopped when its lease could no longer be confirmed
    grep -Eq "lost the lock|may be lost" "$T/bg.err" || fail "$(cat "$T/bg.err")"
}

@test "quorum: --ttl 1 --on-lost term with the default timeouts: renewal that keeps no majority stops the command" {
    private_trio
    local t0 ms
    bl_bg "${P3Q[@]}" --ttl 1 --on-lost term "$K" sh -c 'echo started > "$0"; sleep 30' "$T/started"
    local pid=$BG_PID
    wait_for_file "$T/started" 5 || fail "the command did not start: $(cat "$T/bg.err")"
    # renewed meanwhile: more than a TTL later it still runs
    sleep 1.3
    pid_alive "$pid" || fail "stopped while a majority was up: $(cat "$T/bg.err")"
    t0=$(now_us)
    kill_redis P2
    kill_redis P3
    wait_for_exit "$pid" 5 || fail "the command was not stopped: $(cat "$T/bg.err")"
    ms=$(elapsed_ms "$t0")
    reap "$pid"
    assert_equal "$REAPED_STATUS" 143
    grep -Eq "lost the lock|may be lost" "$T/bg.err" || fail "$(cat "$T/bg.err")"
    # within the lease: a TTL, give or take the slack of a loaded machine
    ((ms < $(slack_ms 1500))) || fail "stopped only after $ms ms"
}

@test "quorum: 4 workers x 25 locked increments across 3 servers give the exact count" {
    echo 0 >"$T/counter"
    local w pids=()
    for w in 1 2 3 4; do
        (
            for ((i = 0; i < 25; i++)); do
                "$BL" "${Q3[@]}" -w 30 "$K" sh -c 'n=$(cat "$0"); echo $((n + 1)) > "$0"' "$T/counter" || exit 1
            done
        ) &
        pids+=($!)
        track_pid "$!"
    done
    for w in "${pids[@]}"; do
        wait "$w" || fail "a worker failed"
    done
    assert_equal "$(cat "$T/counter")" 100
}

@test "quorum: the same server twice, or a sentinel URL in a quorum, is a usage error" {
    run --separate-stderr bl -r "$Q1_URL" -r "redis://127.0.0.1:$Q1_PORT/3" "$K" true
    assert_failure 64
    assert_one_bufferlock_line
    [[ $stderr == *twice* ]] || fail "$stderr"
    run --separate-stderr bl -r "$Q1_URL" -r "redis-sentinel://127.0.0.1:1#m" "$K" true
    assert_failure 64
    run --separate-stderr env BUFFERLOCK_REDIS="$Q1_URL $Q2_URL $Q3_URL" "$BL" "$K" sh -c \
        'redis-cli -p "$0" EXISTS "$BUFFERLOCK_REDIS_KEY"' "$Q3_PORT"
    assert_success
    assert_output 1
}
