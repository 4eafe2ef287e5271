#!/usr/bin/env bats
# The wait line (SPEC §5): on a terminal, one line redrawn in place while
# bufferlock waits; nothing when stderr is not a terminal, under -q or -v.
# Terminals are real pseudo-terminals: tmux for what a person sees
# (capture-pane), script(1) for the bytes written.

load redis_helpers
load cache_helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
    cache_setup
    redis_reset_shared
    export TMUX_TMPDIR="$T" # a private tmux server per test
    # These cases are about what a terminal that has EL shows; the caller's
    # TERM (unset under cron and CI, dumb in a bare root) must not decide.
    # The TERM=dumb case sets its own.
    export TERM=xterm
}
teardown() {
    tmux -L wl kill-server 2>/dev/null || true
    track_descendants
    redis_teardown
}

# on_screen COMMAND: run COMMAND in a detached 100x10 tmux window.
on_screen() {
    tmux -L wl -f /dev/null new-session -d -x 100 -y 10 "$1; sleep 30"
}

screen() { tmux -L wl capture-pane -p; }

# wait_screen REGEX: the window shows a match within 5 s (times TIME_SCALE).
wait_screen() {
    local i
    for ((i = 0; i < 50 * TIME_SCALE; i++)); do
        screen | grep -Eq -- "$1" && return 0
        sleep 0.1
    done
    fail "the screen never showed /$1/: $(screen)"
}

# wait_tty REGEX: $T/tty (written by a typescript in the background) matches
# within 10 s (times TIME_SCALE).
wait_tty() {
    local i
    for ((i = 0; i < 100 * TIME_SCALE; i++)); do
        grep -Eq -- "$1" "$T/tty" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "the terminal never got /$1/: $(cat -v "$T/tty")"
}

# typescript ARGS...: bufferlock ARGS under script(1); the bytes it wrote to
# its terminal in $T/tty.
typescript() {
    local cmd
    printf -v cmd '%q ' "$BL" "$@"
    script -qfec "$cmd" /dev/null >"$T/tty" </dev/null
}

@test "file: the line names the holder's pid; then it is gone and the command's output starts the line" {
    bl_hold_lock "$D" "$K"
    on_screen "$(printf '%q ' "$BL" -w 10m -d "$D" "$K" echo OUTPUT)"
    wait_screen "^bufferlock: waiting for '$K' \(held by pid $HOLDER_PID \([a-z]+\) for [0-9]+s, fence 1\) [0-9]+s / 10m$"
    screen >"$BATS_TEST_TMPDIR/capture" # for the record
    release_lock
    wait_screen '^OUTPUT$'
    assert_equal "$(screen | head -n 1)" "OUTPUT"
}

@test "file: the bytes: redrawn with CR, cleared with CR EL before the output; a timeout clears it too" {
    "$BL" -d "$D" "$K" sleep 1.5 </dev/null >/dev/null 2>&1 &
    track_pid $!
    wait_until_held "$D" "$K" $!
    typescript -w 5 -d "$D" "$K" echo done
    grep -q "waiting for '$K' (held by pid" "$T/tty" || fail "no line: $(cat -v "$T/tty")"
    [[ $(<"$T/tty") == *$'\r\e[K'done$'\r' ]] || fail "not cleared before the output: $(cat -v "$T/tty")"
    bl_hold_lock "$D" "$K"
    run typescript -w 1 -d "$D" "$K" echo never
    [[ $(<"$T/tty") == $'\r'bufferlock:*$'\r\e[K' ]] || fail "left behind: $(cat -v "$T/tty")"
}

@test "TERM=dumb: no escape sequences, the line is blanked with spaces" {
    bl_hold_lock "$D" "$K"
    TERM=dumb typescript -w 1 -d "$D" "$K" true || true
    grep -q "waiting for '$K'" "$T/tty" || fail "no line: $(cat -v "$T/tty")"
    ! grep -q $'\e' "$T/tty" || fail "escape sequences: $(cat -v "$T/tty")"
    [[ $(<"$T/tty") == *"   "$'\r' ]] || fail "not blanked: $(cat -v "$T/tty")"
}

@test "-q draws nothing; -v keeps its own lines; a file or pipe gets nothing new" {
    bl_hold_lock "$D" "$K"
    typescript -q -w 1 -d "$D" "$K" true || true
    assert_equal "$(cat -v "$T/tty")" ""
    typescript -v -w 1 -d "$D" "$K" true || true
    ! grep -q $'\r'bufferlock "$T/tty" || fail "a wait line under -v: $(cat -v "$T/tty")"
    grep -q "gave up waiting" "$T/tty" || fail "no -v line: $(cat -v "$T/tty")"
    run bl -w 1 -d "$D" "$K" true 2>"$T/err"
    assert_failure 75
    assert_equal "$(cat -v "$T/err")" ""
    bl -v -w 1 -d "$D" "$K" true 2>"$T/err" || true
    ! grep -q $'\r' "$T/err" || fail "CR in a file: $(cat -v "$T/err")"
}

@test "Ctrl-C during the wait takes the line away" {
    bl_hold_lock "$D" "$K"
    on_screen "$(printf '%q ' "$BL" -w 10m -d "$D" "$K" echo OUTPUT)"
    tmux -L wl set-option -g remain-on-exit on
    wait_screen "^bufferlock: waiting for '$K'"
    tmux -L wl send-keys C-c
    local i
    for ((i = 0; i < 50; i++)); do
        screen | grep -q 'waiting for' || break
        sleep 0.1
    done
    ! screen | grep -q 'waiting for' || fail "the line stayed after Ctrl-C: $(screen)"
    ! screen | grep -q OUTPUT || fail "the command ran: $(screen)"
}

@test "redis: a warning during the wait starts on a line of its own" {
    start_redis_as W
    bl_bg --redis "$W_URL" "$K" sleep 60
    wait_for_key_state W "$(redis_key "$K")" present || fail "the holder never took the lock"
    typescript -w inf --redis "$W_URL" "$K" echo done &
    local waiter=$!
    track_pid "$waiter"
    wait_tty "waiting for '$K'"
    kill_redis W
    wait_tty 'still trying'
    restart_redis W # no keys: the waiter takes the lock
    wait_tty done
    wait_for_exit "$waiter" 10 || fail "the waiter did not finish"
    # The line is taken away ("\r\e[K") before the warning, and before the output.
    [[ $(<"$T/tty") == *$'\r\e[K'"bufferlock: cannot reach Redis at "*"still trying"* ]] ||
        fail "the warning did not start a line: $(cat -v "$T/tty")"
    # The output starts a line: after the warning's newline or a cleared line.
    [[ $(<"$T/tty") == *$'\n'done$'\r'* || $(<"$T/tty") == *$'\r\e[K'done$'\r'* ]] ||
        fail "the output does not start a line: $(cat -v "$T/tty")"
}

@test "redis: the line says who holds it (pid, host, fence); cleared when taken" {
    # The holder lasts until the gate opens, however slow the waiter's start.
    bl_bg --redis "$REDIS_URL" "$K" sh -c "$GATE_WAIT" "$T/gate"
    wait_for_key_state REDIS "$(redis_key "$K")" present || fail "the holder never took the lock"
    on_screen "$(printf '%q ' "$BL" --redis "$REDIS_URL" -w 10m "$K" echo OUTPUT)"
    wait_screen "^bufferlock: waiting for '$K' \(held by pid $BG_PID on [^ ]+ for [0-9]+s, fence [0-9]+\) [0-9]+s / 10m$"
    : >"$T/gate"
    wait_screen '^OUTPUT$'
    assert_equal "$(screen | head -n 1)" "OUTPUT"
}

@test "cache: a caller waiting for a build names the builder's pid" {
    "$BL" cache --cache-dir "$C" "$K" sh -c "$GATE_WAIT; echo built" "$T/gate" </dev/null >/dev/null 2>&1 3>&- &
    local builder=$!
    track_pid "$builder"
    wait_until_held "$C/locks" "$K" "$builder"
    on_screen "$(printf '%q ' "$BL" cache --cache-dir "$C" -w 10m "$K" sh -c 'echo rebuilt')"
    wait_screen "^bufferlock: waiting for the build of '$K' \(by pid $builder \(bufferlock\) for [0-9]+s, fence 1\) [0-9]+s / 10m$"
    : >"$T/gate"
    wait_screen '^built$'
    assert_equal "$(screen | head -n 1)" "built"
}
