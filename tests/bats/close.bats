#!/usr/bin/env bats
# -o/--close: bufferlock forks, keeps the lock itself, forwards signals.

load helpers

# A child script that records its PID, traps SIG and writes the signal's name
# to a marker file, then exits 0.  $1 = pid file, $2 = marker file, $3 = SIG.
# shellcheck disable=SC2016
TRAP_CHILD='trap "echo $3 >\"\$2\"; exit 0" "$3"; echo $$ >"$1"; i=0; while [ $i -lt 3000 ]; do sleep 0.05; i=$((i+1)); done; exit 99'

# start_close_holder SIG: background `bufferlock -o` whose child traps SIG.
# Sets BLPID and CHILDPID.  INT/QUIT are reset to default because a shell
# without job control starts background commands with them ignored.
start_close_holder() {
    local sig=$1
    env --default-signal=INT,QUIT "$BL" -o -d "$D" "$K" sh -c "$TRAP_CHILD" sh "$T/childpid" "$T/marker" "$sig" \
        </dev/null >/dev/null 2>"$T/bl.err" 3>&- &
    BLPID=$!
    track_pid "$BLPID"
    wait_for_file "$T/childpid" 10 || fail "child did not start"
    CHILDPID=$(<"$T/childpid")
    track_pid "$CHILDPID"
}

@test "-o: the child does not inherit the lock descriptor nor BUFFERLOCK_FD" {
    local lp
    lp=$(lock_path "$D" "$K")
    # shellcheck disable=SC2016
    run --separate-stderr bl -o -d "$D" "$K" sh -c 'echo "fd=${BUFFERLOCK_FD-unset}"; for f in /proc/$$/fd/*; do readlink "$f" || true; done'
    assert_success
    assert_stderr_empty
    assert_line "fd=unset"
    refute_line "$lp"
}

@test "--close: BUFFERLOCK_KEY and BUFFERLOCK_BACKEND are still set" {
    # shellcheck disable=SC2016
    run --separate-stderr bl --close -d "$D" "$K" sh -c 'echo "$BUFFERLOCK_KEY|$BUFFERLOCK_BACKEND"'
    assert_success
    assert_output "$K|file"
}

@test "-o: the lock is held while the child runs and released after" {
    local lp
    lp=$(lock_path "$D" "$K")
    # shellcheck disable=SC2016
    run --separate-stderr bl -o -d "$D" "$K" sh -c 'if flock -n "$1" true; then echo free; else echo held; fi' sh "$lp"
    assert_success
    assert_output held
    flock_free "$lp" || fail "lock still held after bufferlock -o exited"
}

@test "-o: the command runs in a child of bufferlock, which holds the lock" {
    # shellcheck disable=SC2016
    "$BL" -o -d "$D" "$K" sh -c 'echo "$$ $PPID" >"$1"; exec sleep 300' sh "$T/ids" </dev/null >/dev/null 2>&1 3>&- &
    local blpid=$! child ppid
    track_pid "$blpid"
    wait_for_file "$T/ids" 10 || fail "child did not start"
    read -r child ppid <"$T/ids"
    track_pid "$child"
    assert_not_equal "$child" "$blpid"
    assert_equal "$ppid" "$blpid"
    wait_until_held "$D" "$K" "$blpid"
    # the child's exit releases the lock and ends bufferlock
    kill -KILL "$child"
    wait_for_exit "$blpid" 5 || fail "bufferlock did not exit after its child"
    reap "$blpid"
    assert_equal "$REAPED_STATUS" 137
    flock_free "$(lock_path "$D" "$K")" || fail "lock still held"
}

@test "-o: exit status passthrough" {
    run --separate-stderr bl -o -d "$D" "$K" sh -c 'exit 42'
    assert_failure 42
    assert_stderr_empty
    run --separate-stderr bl -o -d "$D" "$K" true
    assert_success
}

@test "-o: child killed by a signal gives 128+N" {
    # shellcheck disable=SC2016
    run --separate-stderr bl -o -d "$D" "$K" sh -c 'kill -TERM $$'
    assert_failure 143
    # shellcheck disable=SC2016
    run --separate-stderr bl -o -d "$D" "$K" sh -c 'kill -KILL $$'
    assert_failure 137
}

@test "-o: missing command 127, non-executable 126" {
    # a PATH of searchable directories only: an unreadable PATH entry turns
    # "not found" into EACCES (126), as with execvp(3) and env(1)
    PATH=/usr/local/bin:/usr/bin:/bin run -127 --separate-stderr bl -o -d "$D" "$K" no-such-command-bufferlock-test
    assert_one_bufferlock_line
    printf '#!/bin/sh\n' >"$T/noexec"
    chmod 0644 "$T/noexec"
    run -126 --separate-stderr bl -o -d "$D" "$K" "$T/noexec"
    assert_one_bufferlock_line
}

forwarded_signal_test() {
    local sig=$1
    start_close_holder "$sig"
    wait_until_held "$D" "$K" "$BLPID"
    kill "-$sig" "$BLPID"
    wait_for_file "$T/marker" 5 || fail "child did not receive SIG$sig"
    assert_equal "$(<"$T/marker")" "$sig"
    wait_for_exit "$BLPID" 5 || fail "bufferlock did not exit after its child"
    reap "$BLPID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(<"$T/bl.err")" ""
    flock_free "$(lock_path "$D" "$K")" || fail "lock still held"
}

@test "-o: SIGTERM is forwarded to the child" {
    forwarded_signal_test TERM
}

@test "-o: SIGINT is forwarded to the child" {
    forwarded_signal_test INT
}

@test "-o: SIGHUP is forwarded to the child" {
    forwarded_signal_test HUP
}

@test "-o: SIGUSR1 is forwarded to the child" {
    forwarded_signal_test USR1
}

@test "-o: SIGUSR2 is forwarded to the child" {
    forwarded_signal_test USR2
}

@test "-o: SIGQUIT is forwarded to the child" {
    forwarded_signal_test QUIT
}

@test "-o: SIGWINCH is forwarded to the child" {
    forwarded_signal_test WINCH
}

@test "-o: a forwarded signal that kills the child gives 128+N" {
    # shellcheck disable=SC2016
    env --default-signal=INT,QUIT "$BL" -o -d "$D" "$K" sh -c 'echo $$ >"$1"; exec sleep 300' sh "$T/childpid" \
        </dev/null >/dev/null 2>&1 3>&- &
    local blpid=$!
    track_pid "$blpid"
    wait_for_file "$T/childpid" 10 || fail "child did not start"
    track_pid "$(<"$T/childpid")"
    wait_until_held "$D" "$K" "$blpid"
    kill -TERM "$blpid"
    wait_for_exit "$blpid" 5 || fail "bufferlock did not exit"
    reap "$blpid"
    assert_equal "$REAPED_STATUS" 143
    ! pid_alive "$(<"$T/childpid")" || fail "child still alive"
}

@test "-o: SIGKILL of bufferlock sends SIGTERM to the child" {
    start_close_holder TERM
    wait_until_held "$D" "$K" "$BLPID"
    kill -KILL "$BLPID"
    wait_for_file "$T/marker" 5 || fail "child did not get SIGTERM after its parent died"
    assert_equal "$(<"$T/marker")" TERM
    wait_for_exit "$CHILDPID" 5 || fail "child still running"
    flock_free "$(lock_path "$D" "$K")" || fail "lock still held"
}

@test "-o: the child gets no descriptor besides stdin, stdout and stderr" {
    # shellcheck disable=SC2016
    python3 -c 'import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])' \
        "$BL" -o -d "$D" "$K" sh -c 'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 300' sh "$T/childpid" \
        </dev/null >/dev/null 2>&1 3>&- &
    local blpid=$!
    track_pid "$blpid"
    wait_for_file "$T/childpid" 10 || fail "child did not start"
    local child
    child=$(<"$T/childpid")
    track_pid "$child"
    # wait until the child is sleep (exec done), then list its descriptors
    wait_until_exec "$child" sleep 5
    assert_equal "$(find "/proc/$child/fd" -mindepth 1 -printf '%f\n' | sort -n | tr '\n' ' ')" "0 1 2 "
}
