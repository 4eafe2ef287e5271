#!/usr/bin/env bats
# bufferlock cache --force and --list (SPEC §15).

load helpers
load cache_helpers

setup() { cache_setup; }
teardown() { cache_teardown; }

@test "--force rebuilds a fresh entry; the next hit serves the new output" {
    run --separate-stderr blc "$K" "$COUNTED" "" old
    assert_output old
    run --separate-stderr blc --force "$K" "$COUNTED" "" new
    assert_success
    assert_output new
    assert_stderr_empty
    assert_runs 2
    run --separate-stderr blc "$K" false
    assert_output new
}

@test "--force: callers arriving during the rebuild get the fresh entry at once" {
    run --separate-stderr blc --max-age 1h "$K" "$COUNTED" "" old
    blc_bg --force "$K" sh -c "echo x >>'$RUNS'; while [ ! -e '$T/go' ]; do sleep 0.05; done; echo new"
    wait_for_temp_file 10
    local i
    for i in 1 2 3 4 5 6 7 8; do
        spawn_caller "$i" --max-age 1h "$K" false
    done
    wait_callers 10
    for i in 1 2 3 4 5 6 7 8; do
        assert_equal "$(caller_status "$i")" 0
        assert_equal "$(cat "$T/out.$i")" old
        ((($(caller_ms "$i")) < 5000)) || fail "caller $i waited $(caller_ms "$i") ms"
    done
    pid_alive "$BG_PID" || fail "the forced build ended before it was told to"
    touch "$T/go"
    wait_for_exit "$BG_PID" 10 || fail "the forced build did not end"
    assert_equal "$(cat "$T/bg.out")" new
    run --separate-stderr blc "$K" false
    assert_output new
    assert_runs 2
}

@test "--force: a failed rebuild keeps the entry (and --stale-if-error serves it)" {
    run --separate-stderr blc "$K" "$COUNTED" "" old
    run --separate-stderr blc --force "$K" sh -c 'echo partial; exit 3'
    assert_failure 3
    run --separate-stderr blc "$K" false
    assert_output old
    run --separate-stderr blc --force --stale-if-error "$K" sh -c 'echo partial; exit 3'
    assert_success
    assert_output old
    assert_one_bufferlock_line "failed with status 3"
}

@test "--list: nothing (exit 0) without entries; newest first with age, size, inputs and key" {
    run --separate-stderr blc --list
    assert_success
    assert_output ""
    assert_stderr_empty
    blc first printf 12345 >/dev/null
    sleep 0.05
    blc $'two\nlines' printf '' >/dev/null
    sleep 0.05
    blc --keep-stderr --depends "$COUNTED" third sh -c 'printf ab; echo e >&2' >/dev/null 2>&1
    : >"$C/ffffffffffffffffffffffffffffffff.entry" # not an entry: not listed
    run --separate-stderr blc --list
    assert_success
    assert_stderr_empty
    assert_equal "${#lines[@]}" 3
    assert_regex "${lines[0]}" '^[0-9]+\.[0-9]{3} 2 [0-9]+ [0-9a-f]{12} third$'
    assert_regex "${lines[1]}" '^[0-9]+\.[0-9]{3} 0 [0-9]+ - two\\x0alines$'
    assert_regex "${lines[2]}" '^[0-9]+\.[0-9]{3} 5 [0-9]+ - first$'
    run --separate-stderr blc --list "$K"
    assert_usage_error "unexpected argument"
    run --separate-stderr blc --list --gc
    assert_usage_error "--list"
}

@test "--list: a byte of KEY that is not UTF-8 as \\xHH, valid UTF-8 as it is" {
    blc $'caf\xc3\xa9 \xff' printf '' >/dev/null
    run --separate-stderr blc --list
    assert_success
    assert_regex "$output" '^[0-9]+\.[0-9]{3} 0 [0-9]+ - café \\xff$'
}
