#!/usr/bin/env bats
# Default (exec) mode: the command replaces bufferlock and inherits the lock.

load helpers

@test "the command runs in bufferlock's own PID" {
    "$BL" -d "$D" "$K" sh -c 'echo $$ >"$1"' sh "$T/cmdpid" </dev/null >/dev/null 2>"$T/err" 3>&- &
    local pid=$!
    track_pid "$pid"
    wait_for_exit "$pid" 10 || fail "bufferlock did not finish"
    reap "$pid"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(<"$T/cmdpid")" "$pid"
    assert_equal "$(<"$T/err")" ""
}

@test "-F: still the same PID" {
    "$BL" -F -d "$D" "$K" sh -c 'echo $$ >"$1"' sh "$T/cmdpid" </dev/null >/dev/null 2>&1 3>&- &
    local pid=$!
    track_pid "$pid"
    wait_for_exit "$pid" 10 || fail "bufferlock did not finish"
    assert_equal "$(<"$T/cmdpid")" "$pid"
}

@test "BUFFERLOCK_FD is an open descriptor on the lock file" {
    local lp
    lp=$(lock_path "$D" "$K")
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$K" sh -c 'echo "$BUFFERLOCK_FD"; readlink "/proc/$$/fd/$BUFFERLOCK_FD"'
    assert_success
    assert_stderr_empty
    assert_regex "${lines[0]}" '^[0-9]+$'
    (( lines[0] > 2 )) || fail "BUFFERLOCK_FD=${lines[0]} is a standard stream"
    assert_equal "${lines[1]}" "$lp"
}

@test "the lock is held while the command runs (flock -n fails) and free after" {
    local lp
    lp=$(lock_path "$D" "$K")
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$K" sh -c 'if flock -n "$1" true; then echo free; else echo held; fi' sh "$lp"
    assert_success
    assert_output held
    flock_free "$lp" || fail "lock still held after the command exited"
}

@test "a second bufferlock on the same key is busy while the command runs" {
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$K" sh -c '"$1" -n -d "$2" "$3" true; echo "inner=$?"' sh "$BL" "$D" "$K"
    assert_success
    assert_output "inner=75"
}

@test "the lock lives in the command: held from outside until it exits" {
    bl_hold_lock "$D" "$K"
    run --separate-stderr bl -n -d "$D" "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
    kill -TERM "$HOLDER_PID"
    wait_for_exit "$HOLDER_PID" 5 || fail "command did not die"
    run --separate-stderr bl -n -d "$D" "$K" touch "$T/ran"
    assert_success
    assert_file_exists "$T/ran"
}

@test "a background process that inherited the descriptor keeps the lock" {
    # shellcheck disable=SC2016
    bl -d "$D" "$K" sh -c 'sleep 300 </dev/null >/dev/null 2>&1 & echo $! >"$1"' sh "$T/child" 3>&-
    local child
    child=$(<"$T/child")
    track_pid "$child"
    assert_busy_until_terminated "$child" child
}

@test "environment: BUFFERLOCK_KEY and BUFFERLOCK_BACKEND=file" {
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" 'my key/with spaces' sh -c 'printf "%s|%s\n" "$BUFFERLOCK_KEY" "$BUFFERLOCK_BACKEND"'
    assert_success
    assert_output 'my key/with spaces|file'
}

@test "stdin, stdout and stderr pass through to the command" {
    run --separate-stderr bl -d "$D" "$K" sh -c 'tr a-z A-Z; echo to-err >&2' <<<"piped data"
    assert_success
    assert_output "PIPED DATA"
    assert_equal "$stderr" "to-err"
}

@test "exit status of the command is passed through" {
    local code
    for code in 0 1 42 254 255; do
        run --separate-stderr bl -d "$D" "$K" sh -c "exit $code"
        assert_equal "$status" "$code"
        assert_stderr_empty
    done
}

@test "command killed by a signal: 128+N" {
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$K" sh -c 'kill -TERM $$'
    assert_failure 143
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$K" sh -c 'kill -KILL $$'
    assert_failure 137
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$K" sh -c 'kill -USR1 $$'
    assert_failure 138
}

@test "a file that is not executable: 126 with one message" {
    printf '#!/bin/sh\necho should-not-run\n' >"$T/noexec.sh"
    chmod 0644 "$T/noexec.sh"
    run --separate-stderr bl -d "$D" "$K" "$T/noexec.sh"
    assert_failure 126
    assert_output ""
    assert_one_bufferlock_line "noexec.sh"
}

@test "a command that does not exist: 127 with one message" {
    PATH=/usr/local/bin:/usr/bin:/bin run -127 --separate-stderr bl -d "$D" "$K" no-such-command-bufferlock-test arg
    assert_output ""
    assert_one_bufferlock_line "no-such-command-bufferlock-test"
}

@test "a missing absolute path: 127" {
    run -127 --separate-stderr bl -d "$D" "$K" "$T/does/not/exist"
    assert_output ""
    assert_one_bufferlock_line
}

@test "the command is searched in PATH" {
    mkdir -p "$T/bin"
    printf '#!/bin/sh\necho found-in-path\n' >"$T/bin/bl-test-cmd"
    chmod +x "$T/bin/bl-test-cmd"
    PATH="$T/bin:$PATH" run --separate-stderr bl -d "$D" "$K" bl-test-cmd
    assert_success
    assert_output found-in-path
}

@test "after 126/127 the lock is not left held" {
    PATH=/usr/local/bin:/usr/bin:/bin run -127 --separate-stderr bl -d "$D" "$K" no-such-command-bufferlock-test
    flock_free "$(lock_path "$D" "$K")" || fail "lock still held"
}

@test "no descriptor other than BUFFERLOCK_FD leaks into the command" {
    # start bufferlock with only 0, 1 and 2 open, then look at the command
    python3 -c 'import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])' \
        "$BL" -d "$D" "$K" sleep 300 </dev/null >/dev/null 2>&1 3>&- &
    local pid=$!
    track_pid "$pid"
    wait_until_held "$D" "$K" "$pid"
    wait_until_exec "$pid" sleep
    local fd fds
    fd=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^BUFFERLOCK_FD=//p')
    assert_regex "$fd" '^[0-9]+$'
    fds=$(find "/proc/$pid/fd" -mindepth 1 -printf '%f\n' | sort -n | tr '\n' ' ')
    assert_equal "$fds" "$(printf '%s\n' 0 1 2 "$fd" | sort -n | tr '\n' ' ')"
}
