#!/usr/bin/env bats
# bufferlock cache under concurrency: N callers of a missing KEY run the
# command once and all print the same bytes; output reaches the reader live.

load redis_helpers
load cache_helpers

setup() { cache_setup; }
teardown() {
    track_descendants
    redis_teardown # common_teardown + this test's redis servers
}

# assert_stampede N: every caller 0..N-1 exited 0 with stderr empty and the
# same non-empty stdout, and the command ran exactly once.
assert_stampede() {
    local n=$1 i first
    first=$(cat "$T/out.0")
    [[ $first == "run "* ]] || fail "caller 0 printed '$first'"
    for ((i = 0; i < n; i++)); do
        [[ -f $T/res.$i ]] || fail "caller $i left no result"
        assert_equal "$(caller_status "$i")" 0
        [[ ! -s $T/err.$i ]] || fail "caller $i stderr: $(cat "$T/err.$i")"
        cmp -s "$T/out.0" "$T/out.$i" || fail "caller $i printed '$(cat "$T/out.$i")', caller 0 '$first'"
    done
    assert_runs 1
}

# assert_callers_overlapped N: at least 10 of the callers 0..N-1 took 500 ms or
# more, i.e. overlapped the 1 s build and waited for it (a real stampede).
assert_callers_overlapped() {
    local n=$1 i waited=0
    for ((i = 0; i < n; i++)); do
        (($(caller_ms "$i") >= 500)) && waited=$((waited + 1))
    done
    ((waited >= 10)) || fail "only $waited callers overlapped the 1 s build: no real stampede"
}

@test "50 concurrent callers of a missing KEY: the command runs once, all 50 print the same" {
    local i
    for ((i = 0; i < 50; i++)); do
        spawn_caller "$i" "$K" "$COUNTED" 1
    done
    wait_callers 60
    assert_stampede 50
    # The callers overlapped the build: most of them waited for it.
    assert_callers_overlapped 50
    run --separate-stderr blc "$K" "$COUNTED"
    assert_success
    assert_output "$(cat "$T/out.0")"
    assert_runs 1
}

@test "50 concurrent callers with --redis and a shared cache dir: one run, same output" {
    start_redis_as CR || fail "could not start redis-server"
    local i
    for ((i = 0; i < 50; i++)); do
        spawn_caller "$i" -r "$CR_URL" "$K" "$COUNTED" 1
    done
    wait_callers 60
    assert_stampede 50
    assert_callers_overlapped 50
    # The locks were in Redis, not in CACHEDIR/locks.
    assert_file_not_exists "$(lock_path "$C/locks" "$K")"
    # ...and were released.
    assert_equal "$(rcli_to CR EXISTS "$(redis_key "$K")")" 0
}

@test "live output: the first line reaches a file reader while the command still runs" {
    local i
    # The command goes on only when the test opens the gate, so "while it
    # still runs" holds however slow the machine is.
    blc_bg "$K" "$GATED" first second
    for ((i = 0; i < 500; i++)); do
        grep -qx first "$T/bg.out" 2>/dev/null && break
        sleep 0.02
    done
    grep -qx first "$T/bg.out" || fail "the first line did not arrive within 10 s"
    pid_alive "$BG_PID" || fail "the build already ended: not a live-output test"
    grep -q second "$T/bg.out" && fail "second line already there"
    open_gate

    wait_for_exit "$BG_PID" 15 || fail "build did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.out")" $'first\nsecond'
    run --separate-stderr blc "$K" false
    assert_success
    assert_output $'first\nsecond'
}

@test "live output: the first line reaches a pipe (FIFO) reader while the command still runs" {
    mkfifo "$T/fifo"
    local line fd rest
    "$BL" cache --cache-dir "$C" "$K" "$GATED" first second </dev/null >"$T/fifo" 2>"$T/bg.err" 3>&- &
    BG_PID=$!
    track_pid "$BG_PID"
    exec {fd}<"$T/fifo"
    line=
    read -r -t 10 -u "$fd" line || true
    assert_equal "$line" first
    pid_alive "$BG_PID" || fail "the build already ended: not a live-output test"
    open_gate
    rest=$(timeout 15 cat <&"$fd") || true
    exec {fd}<&-
    assert_equal "$rest" second
    wait_for_exit "$BG_PID" 5 || fail "build did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    run --separate-stderr blc "$K" false
    assert_success
    assert_output $'first\nsecond'
}

@test "a caller waiting for a build in progress gets its output (and the command runs once)" {
    blc_bg "$K" "$COUNTED" 2 built-once
    wait_until_held "$C/locks" "$K" "" 10
    local t0
    t0=$(now_us)
    run --separate-stderr blc "$K" "$COUNTED" 0 second-build
    assert_success
    assert_output built-once
    assert_stderr_empty
    assert_runs 1
    wait_for_exit "$BG_PID" 10 || fail "build did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.out")" built-once
}
