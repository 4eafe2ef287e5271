#!/usr/bin/env bats
# bufferlock cache --max-age, --stale, --stale --background, --stale-if-error.

load helpers
load cache_helpers

setup() { cache_setup; }
teardown() { cache_teardown; }

# make_old_entry TEXT: store TEXT as KEY's entry, then let it age past
# --max-age 1 (sets OLD_START_US, the time the build started).
make_old_entry() {
    OLD_START_US=$(now_us)
    run --separate-stderr blc "$K" echo "$1"
    assert_success
    assert_output "$1"
    sleep_until $((OLD_START_US + 1300000))
}

# track_lock_holders: teardown kills whoever holds KEY's lock (a detached
# background rebuild is nobody's child).
track_lock_holders() {
    local holders=()
    mapfile -t holders < <(lock_holders "$(lock_path "$C/locks" "$K")")
    track_pid "${holders[@]}"
}

@test "--max-age 1: a hit within 1 s, rebuilt after" {
    # (1 s times TIME_SCALE: two sanitizer runs on a loaded machine take
    # about a second.)
    local t0 ma ma_ms
    ma=$(scaled_s 1)
    ma_ms=$((1000 * TIME_SCALE))
    t0=$(now_us)
    run --separate-stderr blc --max-age "$ma" "$K" "$COUNTED"
    assert_success
    local first=$output
    run --separate-stderr blc --max-age "$ma" "$K" "$COUNTED"
    (($(elapsed_ms "$t0") < ma_ms * 9 / 10)) || skip "the box is too slow to check a $ma s window"
    assert_success
    assert_output "$first"
    assert_runs 1

    sleep_until $((t0 + ma_ms * 1500))
    run --separate-stderr blc --max-age "$ma" "$K" "$COUNTED"
    assert_success
    refute_output "$first"
    assert_stderr_empty
    assert_runs 2
    local second=$output

    # Fresh again.
    run --separate-stderr blc --max-age "$ma" "$K" "$COUNTED"
    assert_output "$second"
    assert_runs 2
}

@test "without --max-age an old entry is still a hit" {
    run --separate-stderr blc "$K" "$COUNTED"
    local first=$output
    sleep 1.2
    run --separate-stderr blc "$K" "$COUNTED"
    assert_output "$first"
    assert_runs 1
    # --max-age is a property of the lookup, not of the entry.
    run --separate-stderr blc --max-age 1 "$K" "$COUNTED"
    refute_output "$first"
    assert_runs 2
}

@test "age counts from the build START: a 2 s build under --max-age 1 is expired when written" {
    run --separate-stderr blc --max-age 1 "$K" "$COUNTED" 2 slow-build
    assert_success
    assert_output slow-build
    # Measured from its end, this entry would be 0 s old, a hit.
    run --separate-stderr blc --max-age 1 "$K" "$COUNTED" 0 rebuilt
    assert_success
    assert_output rebuilt
    assert_runs 2
}

@test "age counts from the build START: 2 s build, --max-age 3: hit at once, miss 1.3 s after the end" {
    # (--max-age 2 + 1 s times TIME_SCALE: the runs of a sanitizer build
    # need the room.)
    local t0 ma_ms=$((2000 + 1000 * TIME_SCALE))
    t0=$(now_us)
    run --separate-stderr blc --max-age "${ma_ms}ms" "$K" "$COUNTED" 2 slow-build
    assert_success
    assert_output slow-build
    (($(elapsed_ms "$t0") < ma_ms - 300)) || skip "the build took too long to check the window"
    run --separate-stderr blc --max-age "${ma_ms}ms" "$K" "$COUNTED" 0 too-early
    assert_success
    assert_output slow-build
    assert_runs 1
    # 0.4 s past max-age after the start, at most max-age - 1.6 s after the
    # end: expired only if measured from the start.
    sleep_until $((t0 + (ma_ms + 400) * 1000))
    run --separate-stderr blc --max-age "${ma_ms}ms" "$K" "$COUNTED" 0 rebuilt
    assert_success
    assert_output rebuilt
    assert_runs 2
}

@test "--stale: 10 callers of an expired entry while it rebuilds: one rebuild, the others get the old value at once" {
    make_old_entry old-value
    local i
    for ((i = 0; i < 10; i++)); do
        spawn_caller "$i" --max-age 1 --stale 60 "$K" "$GATED" new-value
    done
    # The rebuild lasts until the gate opens: nine callers served while it
    # still runs did not wait for it (an ordering, not a time, so that load
    # cannot blur it).
    wait_results 9 30
    wait_for_file "$RUNS" 10 || fail "no rebuild started"
    local new=0 old=0
    for ((i = 0; i < 10; i++)); do
        [[ -s $T/res.$i ]] || continue
        assert_equal "$(caller_status "$i")" 0
        [[ ! -s $T/err.$i ]] || fail "caller $i stderr: $(cat "$T/err.$i")"
        assert_equal "$(cat "$T/out.$i")" old-value
        old=$((old + 1))
    done
    assert_equal "$old" 9
    open_gate
    wait_callers 30
    for ((i = 0; i < 10; i++)); do
        assert_equal "$(caller_status "$i")" 0
        [[ $(cat "$T/out.$i") == new-value ]] && new=$((new + 1))
    done
    assert_equal "$new" 1
    assert_runs 1
    # The rebuild was stored (it started more than --max-age 1 ago: look it
    # up with a longer one).
    run --separate-stderr blc --max-age 30 "$K" "$COUNTED" 0 third
    assert_success
    assert_output new-value
    assert_runs 1
}

@test "--stale: an entry expired by more than SECONDS is not served; the caller waits for the rebuild" {
    make_old_entry old-value
    # --max-age 2: the old entry is expired by ~0.4 s, which --stale 0.1 does
    # not cover; the rebuild stays fresh for the caller's second look after
    # the wait, however slow the steps between on a loaded machine.
    sleep_until $((OLD_START_US + 2400000))
    blc_bg --max-age 2 --stale 0.1 "$K" "$GATED" new-value
    local rebuild=$BG_PID
    wait_until_held "$C/locks" "$K" "" 10
    # The rebuild holds the lock until the gate opens, once the caller waits.
    BG_OUT=$T/caller.out BG_ERR=$T/caller.err blc_bg --max-age 2 --stale 0.1 "$K" "$COUNTED" 0 other
    local caller=$BG_PID
    wait_until_waiting "$C/locks" "$K" "$caller" 10 || fail "the caller does not wait for the rebuild"
    open_gate
    wait_for_exit "$caller" 10 || fail "the caller did not finish"
    reap "$caller"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/caller.out")" new-value
    [[ ! -s $T/caller.err ]] || fail "caller stderr: $(cat "$T/caller.err")"
    assert_runs 1
    wait_for_exit "$rebuild" 10 || fail "rebuild did not finish"
    reap "$rebuild"
    assert_equal "$REAPED_STATUS" 0
}

@test "--stale --background: callers return at once with the old value; exactly one detached rebuild" {
    make_old_entry old-value
    local i
    for ((i = 0; i < 10; i++)); do
        spawn_subst_caller "$i" --max-age 1 --stale 60 --background "$K" "$GATED" new-value
    done
    # $(...) returns only when every holder of its pipe has closed it: all
    # ten return while the detached rebuild is held at the gate.
    wait_callers 30
    wait_for_file "$RUNS" 10 || fail "no rebuild started"
    track_lock_holders
    # Probed with flock(1), not read from /proc/locks: the lock was taken by
    # the caller that detached the rebuild and has exited since, and in a PID
    # namespace (a container, CI's fresh root) /proc/locks hides such locks.
    ! flock -n "$(lock_path "$C/locks" "$K")" true || fail "the rebuild does not hold the lock"
    for ((i = 0; i < 10; i++)); do
        assert_equal "$(caller_status "$i")" 0
        assert_equal "$(cat "$T/out.$i")" old-value
    done
    open_gate
    wait_until_free "$C/locks" "$K" 15
    assert_runs 1
    # (The rebuild started more than --max-age 1 ago: use a longer one.)
    run --separate-stderr blc --max-age 30 --stale 60 --background "$K" "$COUNTED" 0 third
    assert_success
    assert_output new-value
    assert_stderr_empty
    assert_runs 1
}

@test "--stale --background: nothing is served stale when there is no entry (a plain miss)" {
    run --separate-stderr blc --max-age 1 --stale 60 --background "$K" "$COUNTED" 0 built
    assert_success
    assert_output built
    assert_runs 1
}

@test "--stale-if-error: a failed rebuild prints the old value once, warns, exits 0" {
    make_old_entry old-value
    local before
    before=$(sha "$(entry_path "$K")")
    run --separate-stderr blc --max-age 1 --stale-if-error "$K" sh -c 'echo partial-new; exit 5'
    assert_success
    assert_output old-value
    assert_one_bufferlock_line "serving the previous entry"
    assert_equal "$(sha "$(entry_path "$K")")" "$before"
    [[ -z $(temp_files) ]] || fail "temporary file left: $(temp_files)"
}

@test "--stale-if-error: the failed command's own stderr still passes through" {
    make_old_entry old-value
    run --separate-stderr blc --max-age 1 --stale-if-error "$K" sh -c 'echo cmd-err >&2; exit 5'
    assert_success
    assert_output old-value
    [[ $stderr == *cmd-err* ]] || fail "command stderr lost: $stderr"
    [[ $stderr == *"serving the previous entry"* ]] || fail "no warning: $stderr"
}

@test "--stale-if-error: a successful rebuild prints only the new value" {
    make_old_entry old-value
    run --separate-stderr blc --max-age 1 --stale-if-error "$K" sh -c 'echo new-line-1; echo new-line-2'
    assert_success
    assert_output $'new-line-1\nnew-line-2'
    assert_stderr_empty
    run --separate-stderr blc --max-age 1 --stale-if-error "$K" false
    assert_success
    assert_output $'new-line-1\nnew-line-2'
}

@test "--stale-if-error without an old entry: a failure is the command's status" {
    run --separate-stderr blc --max-age 1 --stale-if-error "$K" sh -c 'echo out; exit 5'
    assert_failure 5
    assert_output out
    assert_no_entry "$K"
}
