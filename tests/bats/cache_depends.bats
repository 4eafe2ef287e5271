#!/usr/bin/env bats
# bufferlock cache --depends PATH (SPEC §15): by content, one entry per input
# state (KEY + the digest of every PATH), through a per-user stat cache.
# Several runners on one Redis: cache_fleet.bats.

load helpers
load cache_helpers

setup() {
    cache_setup
    DEP="$T/input"
    printf 'v1\n' >"$DEP"
}
teardown() { cache_teardown; }

# build_with ARGS...: a call with --depends $DEP that must succeed quietly.
build_with() {
    run --separate-stderr blc --depends "$DEP" "$@" "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
}

# stat_cache: the stat cache file of this user in $C.
stat_cache() {
    printf '%s/stat-cache.%s\n' "$C" "$(id -u)"
}

# inputs_of ARGS...: the 32-digit inputs digest of ARGS (--depends ...), read
# from the name of the entry that a build in a scratch cache directory makes.
inputs_of() {
    local probe="$T/probe.$RANDOM" name
    "$BL" cache --cache-dir "$probe" "$@" probe true >/dev/null || fail "probe build failed"
    name=$(cd "$probe" && ls -- *.entry)
    rm -rf -- "$probe"
    name=${name#*.}
    printf '%s\n' "${name%.entry}"
}

# age_inputs: wait out the racy window (2 s) after the inputs last changed,
# so that the next read records them in the stat cache for good.
age_inputs() {
    sleep 2.2
}

@test "touch, a copy over it, or the same bytes rewritten rebuild nothing" {
    build_with
    local first=$output
    build_with
    assert_output "$first"
    assert_runs 1
    touch -d '2001-01-01 00:00:00.5' "$DEP"
    build_with
    assert_output "$first"
    cp "$DEP" "$T/copy"
    mv -f "$T/copy" "$DEP"
    build_with
    printf 'v1\n' >"$DEP"
    build_with
    assert_output "$first"
    assert_runs 1
}

@test "one changed byte rebuilds; changing it back is a hit on the first entry" {
    build_with
    local first=$output
    printf 'v2\n' >"$DEP" # same size
    build_with
    refute_output "$first"
    local second=$output
    assert_runs 2
    printf 'v1\n' >"$DEP"
    build_with
    assert_output "$first"
    printf 'v2\n' >"$DEP"
    build_with
    assert_output "$second"
    assert_runs 2
}

@test "a file rewritten with the same size and its mtime set back still rebuilds (warm stat cache)" {
    touch -d '2001-01-01 00:00:00' "$DEP"
    age_inputs
    build_with
    assert_file_exists "$(stat_cache)"
    local first=$output
    build_with
    assert_runs 1
    # Same size, same mtime: only the ctime tells (and the content).
    printf 'v2\n' >"$DEP"
    touch -d '2001-01-01 00:00:00' "$DEP"
    build_with
    refute_output "$first"
    assert_runs 2
}

@test "a file read within 2 s of its last change gets no stat-cache record (racily clean); changed, it rebuilds" {
    build_with
    local first=$output
    # Its ctime is now: a record of it could not be trusted, so none is kept.
    assert_file_not_exists "$(stat_cache)"
    # Within the racy window: no record can be trusted, whatever the times say.
    printf 'v2\n' >"$DEP"
    touch -d "@$(stat -c %Y "$DEP")" "$DEP"
    build_with
    refute_output "$first"
    assert_runs 2
}

@test "a directory dependency: a renamed file, a flipped executable bit, a changed symlink target each rebuild" {
    mkdir -p "$T/src/sub"
    printf 'a\n' >"$T/src/a"
    printf 'b\n' >"$T/src/sub/b"
    ln -s a "$T/src/link"
    DEP="$T/src"
    build_with
    build_with
    assert_runs 1
    mv "$T/src/sub/b" "$T/src/sub/c"
    build_with
    assert_runs 2
    mv "$T/src/sub/c" "$T/src/sub/b"
    build_with # back to the first state: its entry
    assert_runs 2
    chmod +x "$T/src/a"
    build_with
    assert_runs 3
    chmod -x "$T/src/a"
    ln -sfn sub "$T/src/link"
    build_with
    assert_runs 4
    ln -sfn a "$T/src/link"
    # A copy of the tree elsewhere, other times, is the same inputs.
    cp -r "$T/src" "$T/src2"
    DEP="$T/src2"
    build_with
    assert_runs 4
    # Empty directories and other bytes count.
    mkdir "$T/src2/empty"
    build_with
    assert_runs 5
}

@test "a missing path counts as missing: created, it rebuilds; removed again, it hits" {
    rm -f "$DEP"
    build_with
    printf 'now here\n' >"$DEP"
    build_with
    assert_runs 2
    rm -f "$DEP"
    build_with
    assert_runs 2
    : >"$DEP" # empty is not missing
    build_with
    assert_runs 3
}

@test "the order of --depends counts; an entry without --depends is another state" {
    printf 'other\n' >"$T/b"
    run --separate-stderr blc --depends "$DEP" --depends "$T/b" "$K" "$COUNTED"
    assert_success
    run --separate-stderr blc --depends "$T/b" --depends "$DEP" "$K" "$COUNTED"
    assert_success
    assert_runs 2
    run --separate-stderr blc "$K" "$COUNTED"
    assert_success
    assert_runs 3
    run --separate-stderr blc --depends "$DEP" --depends "$T/b" "$K" "$COUNTED"
    assert_runs 3
}

@test "a FIFO dependency is not opened (no hang); an unreadable one is an error" {
    mkfifo "$T/fifo"
    run --separate-stderr timeout 10 "$BL" cache --cache-dir "$C" --depends "$T/fifo" "$K" echo built
    assert_success
    assert_output built
    if ((EUID == 0)); then
        skip "root reads every file"
    fi
    printf 'secret\n' >"$T/secret"
    chmod 000 "$T/secret"
    run --separate-stderr blc --depends "$T/secret" "$K" "$COUNTED"
    assert_failure 69
    assert_one_bufferlock_line "$T/secret" "Permission denied"
    assert_runs 0
}

@test "callers of the same KEY with other inputs do not wait for a build" {
    blc_bg --depends "$DEP" "$K" "$COUNTED" 3
    local bg=$BG_PID
    # The slow build has started (it counted its run).
    local i
    for ((i = 0; i < 200; i++)); do
        [[ $(runs) == 1 ]] && break
        sleep 0.05
    done
    assert_runs 1
    printf 'other\n' >"$T/other"
    local start
    start=$(now_us)
    run --separate-stderr blc --depends "$T/other" "$K" "$COUNTED" 0 quick
    assert_success
    assert_output quick
    local ms=$((($(now_us) - start) / 1000))
    ((ms < 2500)) || fail "the caller with other inputs took ${ms} ms: it waited for the build"
    wait_for_exit "$bg" 20 || fail "the slow build did not finish"
    assert_runs 2
}

@test "--stale serves only the same inputs; --stale-if-error after a changed input serves the previous state, with its warning" {
    build_with --max-age 1h --stale 1h
    local first=$output
    printf 'v2\n' >"$DEP"
    # Other inputs: no stale entry to serve, so a locked KEY is waited for.
    hold_lock "$C/locks" "$K@inputs:$(inputs_of --depends "$DEP")"
    run --separate-stderr blc --depends "$DEP" --max-age 1h --stale 1h -w 0.3 "$K" "$COUNTED"
    assert_failure 75
    assert_output ""
    release_lock
    run --separate-stderr blc --depends "$DEP" --stale-if-error "$K" sh -c 'echo new; exit 4'
    assert_success
    assert_output "$first"
    assert_one_bufferlock_line "failed with status 4" "other inputs"
    assert_runs 1
}

@test "--drop removes every input state; --list shows a short inputs digest or -" {
    build_with
    printf 'v2\n' >"$DEP"
    build_with
    run --separate-stderr blc "$K" "$COUNTED"
    assert_success
    run --separate-stderr blc --list
    assert_success
    assert_equal "${#lines[@]}" 3
    assert_regex "${lines[0]}" "^[0-9]+\.[0-9]{3} [0-9]+ [0-9]+ - $K\$"
    assert_regex "${lines[1]}" "^[0-9]+\.[0-9]{3} [0-9]+ [0-9]+ [0-9a-f]{12} $K\$"
    assert_regex "${lines[2]}" "^[0-9]+\.[0-9]{3} [0-9]+ [0-9]+ [0-9a-f]{12} $K\$"
    [[ ${lines[1]} != "${lines[2]}" ]] || fail "two input states listed alike"
    run --separate-stderr blc --drop "$K"
    assert_success
    assert_stderr_empty
    run --separate-stderr blc --list
    assert_output ""
    build_with
    assert_runs 4
}

@test "a warm hit reads no dependency: one stat, no open (strace)" {
    command -v strace >/dev/null || skip "strace is not installed"
    touch -d '2001-01-01' "$DEP"
    age_inputs
    build_with
    build_with
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -o "$T/trace" \
        "$BL" cache --cache-dir "$C" --depends "$DEP" "$K" false >/dev/null
    local calls
    calls=$(grep -v execve "$T/trace" | grep -F "\"$DEP\"") || true
    [[ $(grep -c . <<<"$calls") == 1 && $calls == *stat* ]] ||
        fail "expected one stat of the dependency, got: $calls"
}

@test "a corrupt or foreign stat cache is ignored: the inputs are read again" {
    touch -d '2001-01-01' "$DEP"
    age_inputs
    build_with
    local first=$output
    assert_file_exists "$(stat_cache)"
    # Garbage: ignored, the content decides.
    head -c 500 /dev/urandom >"$(stat_cache)"
    build_with
    assert_output "$first"
    printf 'v2\n' >"$DEP"
    build_with
    refute_output "$first"
    assert_runs 2
    # Writable by others: not trusted either (and the answers stay right).
    printf 'v1\n' >"$DEP"
    chmod 666 "$(stat_cache)"
    build_with
    assert_output "$first"
    assert_runs 2
    # A symbolic link planted in its place is not followed.
    rm -f "$(stat_cache)"
    ln -s "$T/elsewhere" "$(stat_cache)"
    build_with
    assert_output "$first"
    assert_file_not_exists "$T/elsewhere"
}

@test "a build that changes its own dependency stores nothing (one warning); the next caller builds" {
    run --separate-stderr blc --depends "$DEP" "$K" sh -c "printf 'v2\\n' >'$DEP'; $COUNTED"
    assert_success
    assert_one_bufferlock_line "not stored" "changed during the build"
    assert_equal "$(find "$C" -maxdepth 1 -name '*.entry' | wc -l)" 0
    build_with
    build_with
    assert_runs 2
}

@test "bad --depends values are usage errors" {
    run --separate-stderr blc --depends '' "$K" true
    assert_usage_error "--depends" "empty path"
    run --separate-stderr blc --depends= "$K" true
    assert_usage_error "--depends" "empty path"
    run --separate-stderr blc --depends
    assert_usage_error "--depends"
}
