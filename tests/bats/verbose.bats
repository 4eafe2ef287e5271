#!/usr/bin/env bats
# -v / -q: what bufferlock says on stderr.

load helpers

# assert_all_bufferlock_lines: every stderr line starts with "bufferlock: ".
assert_all_bufferlock_lines() {
    [[ -n $stderr ]] || fail "expected bufferlock lines on stderr, got nothing"
    local line
    while IFS= read -r line; do
        [[ $line == 'bufferlock: '* ]] || fail "stderr line does not start with 'bufferlock: ': $line"
    done <<<"$stderr"
}

@test "-v: says the lock was acquired, naming the key" {
    run --separate-stderr bl -v -d "$D" verbose-key echo ran
    assert_success
    assert_output ran
    assert_all_bufferlock_lines
    assert_regex "$stderr" 'acquired'
    assert_regex "$stderr" 'verbose-key'
}

@test "--verbose: stdout still belongs to the command alone" {
    run --separate-stderr bl --verbose -d "$D" "$K" printf 'exact'
    assert_success
    assert_output exact
}

@test "-v -o: acquired (and possibly released) lines, all prefixed" {
    run --separate-stderr bl -v -o -d "$D" "$K" true
    assert_success
    assert_all_bufferlock_lines
    assert_regex "$stderr" 'acquired'
}

@test "-v with waiting: says how long it took" {
    run --separate-stderr bl -v -w 5 -d "$D" "$K" true
    assert_success
    assert_regex "$stderr" 'acquired.*[0-9]'
}

@test "busy with -v names the holder's pid" {
    hold_lock "$D" "$K"
    run --separate-stderr bl -v -n -d "$D" "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
    assert_all_bufferlock_lines
    assert_regex "$stderr" "held by pid $HOLDER_PID([^0-9]|\$)"
}

@test "busy with -v names a bufferlock holder's pid" {
    bl_hold_lock "$D" "$K"
    run --separate-stderr bl -v -d "$D" "$K" true
    assert_failure 75
    assert_regex "$stderr" "held by pid $HOLDER_PID([^0-9]|\$)"
}

@test "timeout with -v says busy and names the holder" {
    hold_lock "$D" "$K"
    run --separate-stderr bl -v -w 0.2 -d "$D" "$K" true
    assert_failure 75
    assert_all_bufferlock_lines
    assert_regex "$stderr" "pid $HOLDER_PID([^0-9]|\$)"
}

@test "busy without -v prints nothing" {
    hold_lock "$D" "$K"
    run --separate-stderr bl -d "$D" "$K" true
    assert_failure 75
    assert_stderr_empty
    assert_output ""
}

@test "success without -v prints nothing" {
    run --separate-stderr bl -d "$D" "$K" true
    assert_success
    assert_stderr_empty
    assert_output ""
}

@test "-q suppresses the --fail-open warning" {
    touch "$T/afile"
    run --separate-stderr bl --fail-open -d "$T/afile" "$K" echo ran
    assert_success
    assert_one_bufferlock_line
    run --separate-stderr bl -q --fail-open -d "$T/afile" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
}

@test "-q does not suppress errors" {
    touch "$T/afile"
    run --separate-stderr bl -q -d "$T/afile" "$K" echo ran
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "$T/afile"
}

@test "-q does not suppress usage errors" {
    run --separate-stderr bl -q -w abc -d "$D" "$K" true
    assert_usage_error
}

@test "-v on a key with a newline still writes whole bufferlock lines" {
    run --separate-stderr bl -v -d "$D" $'new\nline' true
    assert_success
    assert_all_bufferlock_lines
}
