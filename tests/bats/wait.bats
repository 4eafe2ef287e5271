#!/usr/bin/env bats
# -n / -w / -E: what happens when the lock is busy.

load helpers

@test "-n: busy gives 75, nothing on stderr, the command does not run" {
    hold_lock "$D" "$K"
    run --separate-stderr bl -n -d "$D" "$K" touch "$T/ran"
    assert_failure 75
    assert_output ""
    assert_stderr_empty
    assert_file_not_exists "$T/ran"
}

@test "default is nonblocking: busy gives 75 at once" {
    hold_lock "$D" "$K"
    local t0 t1
    t0=$(now_us)
    run --separate-stderr bl -d "$D" "$K" touch "$T/ran"
    t1=$(now_us)
    assert_failure 75
    assert_file_not_exists "$T/ran"
    (( t1 - t0 < $(slack_ms 3000) * 1000 )) || fail "took $(( (t1 - t0) / 1000 )) ms"
}

@test "-E 3 / --busy-exit / --conflict-exit-code change the busy status" {
    hold_lock "$D" "$K"
    run --separate-stderr bl -n -E 3 -d "$D" "$K" touch "$T/ran"
    assert_failure 3
    run --separate-stderr bl --busy-exit 0 -d "$D" "$K" touch "$T/ran"
    assert_success
    run --separate-stderr bl --conflict-exit-code 255 -d "$D" "$K" touch "$T/ran"
    assert_failure 255
    assert_stderr_empty
    assert_file_not_exists "$T/ran"
}

@test "-E does not change the status of a command that ran" {
    run --separate-stderr bl -E 3 -d "$D" "$K" sh -c 'exit 75'
    assert_failure 75
    run --separate-stderr bl -E 3 -d "$D" "$K" true
    assert_success
}

@test "-w 0 behaves like -n" {
    hold_lock "$D" "$K"
    local t0 t1
    t0=$(now_us)
    run --separate-stderr bl -w 0 -d "$D" "$K" touch "$T/ran"
    t1=$(now_us)
    assert_failure 75
    assert_file_not_exists "$T/ran"
    (( t1 - t0 < $(slack_ms 3000) * 1000 )) || fail "-w 0 took $(( (t1 - t0) / 1000 )) ms"
}

# timeout_test WAIT-ARG MIN-US: on a held lock, `bufferlock -w WAIT-ARG ...
# touch $T/ran` gives up with 75 after at least MIN-US microseconds and in
# under 5 s (times TIME_SCALE).
timeout_test() {
    hold_lock "$D" "$K"
    local t0 t1
    t0=$(now_us)
    run --separate-stderr bl -w "$1" -d "$D" "$K" touch "$T/ran"
    t1=$(now_us)
    assert_failure 75
    (( t1 - t0 >= $2 )) || fail "timed out too early: $(( (t1 - t0) / 1000 )) ms"
    (( t1 - t0 < $(slack_ms 5000) * 1000 )) || fail "timed out too late: $(( (t1 - t0) / 1000 )) ms"
}

@test "-w 0.5 on a held lock times out after about 0.5 s with 75" {
    timeout_test 0.5 400000
    assert_stderr_empty
    assert_file_not_exists "$T/ran"
}

@test "--wait timeout uses -E too" {
    hold_lock "$D" "$K"
    run --separate-stderr bl --wait 0.2 -E 4 -d "$D" "$K" touch "$T/ran"
    assert_failure 4
    assert_file_not_exists "$T/ran"
}

@test "--timeout is a synonym of --wait" {
    hold_lock "$D" "$K"
    local t0 t1
    t0=$(now_us)
    run --separate-stderr bl --timeout 0.3 -d "$D" "$K" true
    t1=$(now_us)
    assert_failure 75
    (( t1 - t0 >= 250000 )) || fail "did not wait: $(( (t1 - t0) / 1000 )) ms"
}

# handoff_test WAIT-ARG: a waiter started with -w WAIT-ARG gets the lock
# promptly once the holder goes away.
handoff_test() {
    hold_lock "$D" "$K"
    # shellcheck disable=SC2016
    "$BL" -w "$1" -d "$D" "$K" sh -c 'date +%s%6N >"$1"' sh "$T/got" </dev/null >/dev/null 2>"$T/err" 3>&- &
    local waiter=$!
    track_pid "$waiter"
    if ! wait_until_waiting "$D" "$K" "$waiter" 5; then
        sleep 0.5 # not visible as a kernel waiter; give it time to start anyway
    fi
    pid_alive "$waiter" || fail "waiter exited before the holder released the lock"
    assert_file_not_exists "$T/got"
    local t0 t1
    t0=$(now_us)
    release_lock
    wait_for_exit "$waiter" 10 || fail "waiter did not get the lock within 10 s of its release"
    reap "$waiter"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(<"$T/err")" ""
    t1=$(<"$T/got")
    (( t1 - t0 < $(slack_ms 1000) * 1000 )) || fail "handoff took $(( (t1 - t0) / 1000 )) ms"
}

@test "-w inf: gets the lock promptly after the holder releases it" {
    handoff_test inf
}

@test "-w 10: gets the lock promptly after the holder releases it" {
    handoff_test 10
}

@test "-w 1m (unit): gets the lock promptly after the holder releases it" {
    handoff_test 1m
}

@test "a waiter blocks in the kernel (visible in /proc/locks), not by polling" {
    hold_lock "$D" "$K"
    "$BL" -w 30 -d "$D" "$K" true </dev/null >/dev/null 2>&1 3>&- &
    local waiter=$!
    track_pid "$waiter"
    wait_until_waiting "$D" "$K" "$waiter" 5 || fail "waiter $waiter never appeared blocked in /proc/locks"
}

@test "a SIGKILLed holder frees the lock at once" {
    bl_hold_lock "$D" "$K"
    run --separate-stderr bl -n -d "$D" "$K" true
    assert_failure 75
    kill -KILL "$HOLDER_PID"
    wait_for_exit "$HOLDER_PID" 5 || fail "holder did not die"
    run --separate-stderr bl -n -d "$D" "$K" echo mine
    assert_success
    assert_output mine
}

@test "a SIGKILLed holder hands the lock to a blocked waiter promptly" {
    bl_hold_lock "$D" "$K"
    # shellcheck disable=SC2016
    "$BL" -w inf -d "$D" "$K" sh -c 'date +%s%6N >"$1"' sh "$T/got" </dev/null >/dev/null 2>&1 3>&- &
    local waiter=$!
    track_pid "$waiter"
    wait_until_waiting "$D" "$K" "$waiter" 5 || sleep 0.5
    local t0 t1
    t0=$(now_us)
    kill -KILL "$HOLDER_PID"
    wait_for_exit "$waiter" 10 || fail "waiter did not get the lock"
    reap "$waiter"
    assert_equal "$REAPED_STATUS" 0
    t1=$(<"$T/got")
    (( t1 - t0 < $(slack_ms 1000) * 1000 )) || fail "handoff took $(( (t1 - t0) / 1000 )) ms"
}

@test "durations with units and fractions are accepted (free lock)" {
    local w
    for w in 250ms .5 0.5s 1m 2h 1 0.25 inf 0 0ms; do
        run --separate-stderr bl -w "$w" -d "$D" "$K" echo "ok $w"
        assert_success
        assert_output "ok $w"
        assert_stderr_empty
    done
}

@test "-w 250ms on a held lock waits about a quarter second" {
    timeout_test 250ms 200000
}

@test "-w .5 on a held lock waits about half a second" {
    timeout_test .5 400000
}

@test "BUFFERLOCK_WAIT sets the wait; -n on the command line wins" {
    hold_lock "$D" "$K"
    local t0 t1
    t0=$(now_us)
    BUFFERLOCK_WAIT=0.4 run --separate-stderr bl -d "$D" "$K" true
    t1=$(now_us)
    assert_failure 75
    (( t1 - t0 >= 300000 )) || fail "BUFFERLOCK_WAIT ignored: $(( (t1 - t0) / 1000 )) ms"
    t0=$(now_us)
    BUFFERLOCK_WAIT=30 run --separate-stderr bl -n -d "$D" "$K" true
    t1=$(now_us)
    assert_failure 75
    (( t1 - t0 < $(slack_ms 5000) * 1000 )) || fail "-n did not override BUFFERLOCK_WAIT"
}

@test "not re-entrant: the holder itself gets busy on a second acquire" {
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$K" sh -c '"$1" -w 0.2 -d "$2" "$3" true; echo "inner=$?"' sh "$BL" "$D" "$K"
    assert_success
    assert_output "inner=75"
}
