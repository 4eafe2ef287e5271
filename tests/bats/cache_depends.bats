#!/usr/bin/env bats
# bufferlock cache --depends PATH (SPEC §15): an entry records the size,
# mtime (ns), device and inode of each PATH and is out of date when one of
# them changes, or PATH appears or vanishes.

load helpers
load cache_helpers

setup() {
    cache_setup
    DEP="$T/input"
    printf 'v1\n' >"$DEP"
}
teardown() { cache_teardown; }

# build_with ARGS...: a call with --depends $DEP that must succeed.
build_with() {
    run --separate-stderr blc --depends "$DEP" "$@" "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
}

@test "an unchanged dependency is a hit; a touched one (same size) rebuilds" {
    build_with
    local first=$output
    build_with
    assert_output "$first"
    assert_runs 1
    # Only the mtime changes (size, inode stay): out of date.
    touch -d '2001-01-01 00:00:00.5' "$DEP"
    build_with
    refute_output "$first"
    assert_runs 2
    build_with
    assert_runs 2
    # A nanosecond later is another mtime.
    touch -d '2001-01-01 00:00:00.500000001' "$DEP"
    build_with
    assert_runs 3
}

@test "a dependency replaced by a copy with the same size and mtime rebuilds (inode)" {
    build_with
    cp -p "$DEP" "$T/copy"
    mv -f "$T/copy" "$DEP"
    build_with
    assert_runs 2
}

@test "a dependency that is written (size changes) rebuilds" {
    build_with
    printf 'version 2\n' >>"$DEP"
    build_with
    assert_runs 2
}

@test "a dependency that vanishes rebuilds; when it is re-created it rebuilds again" {
    build_with
    rm -f "$DEP"
    build_with
    assert_runs 2
    build_with # absent still: a hit
    assert_runs 2
    printf 'v1\n' >"$DEP"
    build_with
    assert_runs 3
}

@test "the entry knows its inputs: a caller without --depends checks them; another list rebuilds" {
    build_with
    run --separate-stderr blc "$K" "$COUNTED"
    assert_success
    assert_runs 1
    printf 'v2\n' >"$DEP"
    run --separate-stderr blc "$K" "$COUNTED"
    assert_success
    assert_runs 2
    # That build recorded no dependency: naming one is another list.
    build_with
    assert_runs 3
    : >"$T/other"
    run --separate-stderr blc --depends "$DEP" --depends "$T/other" "$K" "$COUNTED"
    assert_success
    assert_runs 4
}

@test "an out-of-date entry is not served by --stale, and --stale-if-error falls back on it" {
    build_with --max-age 1h --stale 1h
    local first=$output
    touch -d '2001-01-01' "$DEP"
    # Somebody holds the lock: a stale entry would be served at once; an out
    # of date one is waited for (here: until the wait runs out).
    hold_lock "$C/locks" "$K"
    run --separate-stderr blc --depends "$DEP" --max-age 1h --stale 1h -w 0.3 "$K" "$COUNTED"
    assert_failure 75
    assert_output ""
    release_lock
    run --separate-stderr blc --depends "$DEP" --stale-if-error "$K" sh -c 'echo new; exit 4'
    assert_success
    assert_output "$first"
    assert_one_bufferlock_line "failed with status 4" "previous entry"
    assert_runs 1
}

@test "a hit with dependencies costs one stat per PATH (strace)" {
    command -v strace >/dev/null || skip "strace is not installed"
    : >"$T/b"
    : >"$T/c"
    run --separate-stderr blc --depends "$DEP" --depends "$T/b" --depends "$T/c" "$K" "$COUNTED"
    assert_success
    # Every system call, so that any other access to the paths counts too.
    # (LeakSanitizer cannot run under ptrace: off for the sanitizer build.)
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -o "$T/trace" \
        "$BL" cache --cache-dir "$C" --depends "$DEP" --depends "$T/b" --depends "$T/c" "$K" false >/dev/null
    local n
    n=$(grep -v execve "$T/trace" | grep -cE "\"($DEP|$T/b|$T/c)\"")
    [[ $n == 3 ]] || fail "expected 3 system calls on the dependencies, got $n: $(cat "$T/trace")"
    [[ $(grep -cE "stat.*\"($DEP|$T/b|$T/c)\"" "$T/trace") == 3 ]] || fail "not 3 stat calls: $(cat "$T/trace")"
}

@test "bad --depends values are usage errors" {
    run --separate-stderr blc --depends '' "$K" true
    assert_usage_error "--depends" "empty path"
    run --separate-stderr blc --depends= "$K" true
    assert_usage_error "--depends" "empty path"
    run --separate-stderr blc --depends
    assert_usage_error "--depends"
}
