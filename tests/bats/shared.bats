#!/usr/bin/env bats
# -s/--shared: LOCK_SH.

load helpers

@test "-s while another shared holder holds: runs" {
    hold_lock "$D" "$K" -s
    run --separate-stderr bl -s -n -d "$D" "$K" echo shared-ok
    assert_success
    assert_output shared-ok
    assert_stderr_empty
}

@test "two bufferlock shared holders coexist" {
    bl_hold_lock "$D" "$K" -s
    local a=$HOLDER_PID
    bl_hold_lock "$D" "$K" --shared -n
    local b=$HOLDER_PID
    pid_alive "$a" || fail "first shared holder exited"
    pid_alive "$b" || fail "second shared holder exited"
}

@test "exclusive is busy while a shared lock is held" {
    hold_lock "$D" "$K" -s
    run --separate-stderr bl -n -d "$D" "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
}

@test "shared is busy while an exclusive lock is held" {
    hold_lock "$D" "$K"
    run --separate-stderr bl -s -n -d "$D" "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
}

@test "exclusive is busy while a bufferlock shared holder runs, free after" {
    bl_hold_lock "$D" "$K" -s
    assert_busy_until_terminated "$HOLDER_PID" holder
}

@test "the lock taken by -s is a shared lock (flock -s succeeds, flock -x fails)" {
    local lp
    lp=$(lock_path "$D" "$K")
    # shellcheck disable=SC2016
    run --separate-stderr bl -s -d "$D" "$K" sh -c '
        if flock -n -s "$1" true; then echo sh-free; else echo sh-busy; fi
        if flock -n -x "$1" true; then echo ex-free; else echo ex-busy; fi' sh "$lp"
    assert_success
    assert_line -n 0 sh-free
    assert_line -n 1 ex-busy
}

@test "-s with -w: a shared waiter gets in when the exclusive holder leaves" {
    hold_lock "$D" "$K"
    "$BL" -s -w 10 -d "$D" "$K" touch "$T/got" </dev/null >/dev/null 2>&1 3>&- &
    local waiter=$!
    track_pid "$waiter"
    wait_until_waiting "$D" "$K" "$waiter" 5 || sleep 0.5
    assert_file_not_exists "$T/got"
    release_lock
    wait_for_exit "$waiter" 5 || fail "shared waiter did not get the lock"
    reap "$waiter"
    assert_equal "$REAPED_STATUS" 0
    assert_file_exists "$T/got"
}

@test "-s with -o works too" {
    local lp
    lp=$(lock_path "$D" "$K")
    # shellcheck disable=SC2016
    run --separate-stderr bl -s -o -d "$D" "$K" sh -c '
        if flock -n -s "$1" true; then echo sh-free; else echo sh-busy; fi
        if flock -n -x "$1" true; then echo ex-free; else echo ex-busy; fi' sh "$lp"
    assert_success
    assert_line -n 0 sh-free
    assert_line -n 1 ex-busy
}
