#!/usr/bin/env bats
# bufferlock status, and the redis-only subcommands with the file backend.

load helpers

@test "status of a free lock: prints free, exit 0" {
    mkdir -p "$D"
    touch "$(lock_path "$D" "$K")"
    run --separate-stderr bl status -d "$D" "$K"
    assert_success
    assert_output free
    assert_stderr_empty
}

@test "status of a lock held by flock(1): held pid=<holder>, exit 75" {
    hold_lock "$D" "$K"
    run --separate-stderr bl status -d "$D" "$K"
    assert_failure 75
    assert_output "held pid=$HOLDER_PID"
    assert_stderr_empty
}

@test "status of a lock held by bufferlock: the command's pid and its record" {
    bl_hold_lock "$D" "$K"
    run --separate-stderr bl status -d "$D" "$K"
    assert_failure 75
    assert_output --regexp "^held pid=$HOLDER_PID since=[0-9]+\.[0-9]{3} fence=1\$"
}

@test "status of a lock held by bufferlock -o: bufferlock's pid and its record" {
    bl_hold_lock "$D" "$K" -o
    run --separate-stderr bl status -d "$D" "$K"
    assert_failure 75
    assert_output --regexp "^held pid=$HOLDER_PID since=[0-9]+\.[0-9]{3} fence=1\$"
}

@test "status with -E: the busy status is used" {
    hold_lock "$D" "$K"
    run --separate-stderr bl status -E 3 -d "$D" "$K"
    assert_failure 3
    assert_output "held pid=$HOLDER_PID"
}

@test "status after the holder is gone: free again" {
    hold_lock "$D" "$K"
    run --separate-stderr bl status -d "$D" "$K"
    assert_failure 75
    release_lock
    run --separate-stderr bl status -d "$D" "$K"
    assert_success
    assert_output free
}

@test "status of a shared lock with two holders lists both pids" {
    hold_lock "$D" "$K" -s
    local a=$HOLDER_PID
    hold_lock "$D" "$K" -s
    local b=$HOLDER_PID
    run --separate-stderr bl status -d "$D" "$K"
    assert_failure 75
    if [[ $output != "held pid=$a,$b" && $output != "held pid=$b,$a" ]]; then
        fail "expected 'held pid=$a,$b' (any order), got '$output'"
    fi
}

@test "status does not create a missing directory" {
    run --separate-stderr bl status -d "$T/nonexistent/dir" "$K"
    assert_success
    assert_output free
    assert_not_exist "$T/nonexistent"
}

@test "status does not create a missing lock file" {
    mkdir -p "$D"
    run --separate-stderr bl status -d "$D" "$K"
    assert_success
    assert_output free
    assert_equal "$(ls -A "$D")" ""
}

@test "status does not disturb the holder" {
    hold_lock "$D" "$K"
    run --separate-stderr bl status -d "$D" "$K"
    assert_failure 75
    pid_alive "$HOLDER_PID" || fail "holder died"
    run --separate-stderr bl -n -d "$D" "$K" true
    assert_failure 75
}

@test "status with a KEY that begins with - after --" {
    hold_lock "$D" -dash
    run --separate-stderr bl status -d "$D" -- -dash
    assert_failure 75
    assert_output "held pid=$HOLDER_PID"
}

@test "status without KEY is a usage error" {
    run --separate-stderr bl status -d "$D"
    assert_usage_error
}

@test "acquire with the file backend is a usage error" {
    run --separate-stderr bl acquire -d "$D" "$K"
    assert_usage_error
}

@test "release with the file backend is a usage error" {
    run --separate-stderr bl release -d "$D" "$K" sometoken
    assert_usage_error
}

@test "extend with the file backend is a usage error" {
    run --separate-stderr bl extend -d "$D" "$K" sometoken
    assert_usage_error
}
