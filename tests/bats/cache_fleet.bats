#!/usr/bin/env bats
# A cache that a fleet shares (SPEC §15): CI runners, each with its own
# checkout of the same commit and its own $HOME, one Redis server (or one
# shared cache directory). --depends counts by content, so a fresh clone on
# another runner hits what the first one built, and entries of other input
# states (branches) live side by side.

load redis_helpers
load cache_helpers

setup_file() {
    redis_setup_file
    # One local repository with two branches whose Cargo.lock differ, and the
    # same src/ tree on both.
    local origin="$BATS_FILE_TMPDIR/origin"
    git init -q -b main "$origin"
    git -C "$origin" config user.email ci@example.invalid
    git -C "$origin" config user.name ci
    mkdir -p "$origin/src"
    printf 'fn main() {}\n' >"$origin/src/main.rs"
    printf '#!/bin/sh\necho build\n' >"$origin/src/build.sh"
    chmod +x "$origin/src/build.sh"
    printf '[[package]]\nname = "a"\nversion = "1.0.0"\n' >"$origin/Cargo.lock"
    git -C "$origin" add -A
    git -C "$origin" commit -q -m one
    git -C "$origin" checkout -q -b other
    printf '[[package]]\nname = "a"\nversion = "2.0.0"\n' >"$origin/Cargo.lock"
    git -C "$origin" commit -q -am two
    git -C "$origin" checkout -q main
    export ORIGIN=$origin
}
teardown_file() { redis_teardown_file; }

setup() {
    cache_setup
    redis_reset_shared
}
teardown() {
    track_descendants
    redis_teardown
}

# runner NAME: a runner's directory $T/NAME with its own HOME and a fresh
# `git clone` of the repository (so other inodes and mtimes).
runner() {
    mkdir -p "$T/$1/home"
    git clone -q "$ORIGIN" "$T/$1/repo"
}

# on NAME ARGS...: `bufferlock cache --store redis` as runner NAME would run
# it: in its checkout, with its HOME (and so its own default cache directory
# and stat cache).
on() {
    local name=$1
    shift
    (cd "$T/$name/repo" && HOME="$T/$name/home" XDG_CACHE_HOME= \
        "$BL" cache --store redis -r "$REDIS_URL" "$@")
}

# build_on NAME [ARGS...]: the example of `cache --help` on runner NAME,
# with a build that prints BUILT and counts its run.
build_on() {
    local name=$1
    shift
    run --separate-stderr on "$name" --depends Cargo.lock --depends src "$@" build -- \
        sh -c "$COUNTED >/dev/null; echo BUILT output"
    assert_success
}

@test "two runners, fresh clones of one commit: B hits A's entry, and A hits after B" {
    runner A
    runner B
    build_on A
    assert_output "BUILT output"
    build_on A
    assert_output "BUILT output" # the entry's bytes
    assert_runs 1
    build_on B
    assert_output "BUILT output"
    assert_runs 1
    build_on A
    assert_runs 1
    # One entry on the server, with an inputs digest.
    run --separate-stderr on A --list
    assert_equal "${#lines[@]}" 1
    assert_regex "${lines[0]}" '^[0-9]+\.[0-9]{3} 13 [0-9]+ [0-9a-f]{12} build$'
}

@test "the same with --store file on one shared cache directory, each runner its own HOME" {
    runner A
    runner B
    local shared="$T/shared-cache" n
    for n in A B A; do
        run --separate-stderr bash -c 'cd "$1/repo" && HOME="$1/home" "$2" cache --cache-dir "$3" \
            --depends Cargo.lock --depends src build -- "$4"' _ "$T/$n" "$BL" "$shared" "$COUNTED"
        assert_success
    done
    assert_runs 1
    assert_equal "$(find "$shared" -maxdepth 1 -name '*.entry' | wc -l)" 1
}

@test "branches A -> B -> A rebuild twice, not three times; a touch rebuilds nothing" {
    runner A
    build_on A
    git -C "$T/A/repo" checkout -q other
    build_on A
    assert_runs 2
    git -C "$T/A/repo" checkout -q main
    build_on A
    assert_runs 2
    touch "$T/A/repo/Cargo.lock" "$T/A/repo/src/main.rs"
    build_on A
    assert_runs 2
    # A runner on the other branch hits that branch's entry.
    runner B
    git -C "$T/B/repo" checkout -q other
    build_on B
    assert_runs 2
    # One changed byte is another input state.
    sed -i 's/1.0.0/1.0.1/' "$T/A/repo/Cargo.lock"
    build_on A
    assert_runs 3
}

@test "ten concurrent callers across two runners with the same inputs build once" {
    runner A
    runner B
    local i name
    for ((i = 0; i < 10; i++)); do
        name=A
        ((i % 2)) && name=B
        (
            cd "$T/$name/repo" &&
                HOME="$T/$name/home" "$BL" cache --store redis -r "$REDIS_URL" \
                    --depends Cargo.lock --depends src build -- "$COUNTED" 1 "one build" \
                    </dev/null >"$T/out.$i" 2>"$T/err.$i"
            echo $? >"$T/res.$i"
        ) 3>&- &
        CALLER_PIDS+=("$!")
        track_pid "$!"
    done
    wait_callers 60
    for ((i = 0; i < 10; i++)); do
        assert_equal "$(cat "$T/res.$i")" 0
        assert_equal "$(cat "$T/out.$i")" "one build"
        assert_equal "$(cat "$T/err.$i")" ""
    done
    assert_runs 1
}

@test "redis: --stale-if-error after a changed input serves the newest state; --drop removes every state" {
    runner A
    build_on A
    sed -i 's/1.0.0/9.9.9/' "$T/A/repo/Cargo.lock"
    run --separate-stderr on A --depends Cargo.lock --depends src --stale-if-error build -- \
        sh -c 'echo broken; exit 3'
    assert_success
    assert_output "BUILT output"
    assert_one_bufferlock_line "failed with status 3" "other inputs"
    build_on A
    assert_runs 2
    run --separate-stderr on A build -- echo plain
    assert_output plain
    local md5
    md5=$(key_md5 build)
    assert_equal "$(rcli --scan --pattern "{buffer:lock:$md5}:entry*" | wc -l)" 3
    run --separate-stderr on A --drop build
    assert_success
    assert_stderr_empty
    assert_equal "$(rcli --scan --pattern "{buffer:lock:$md5}:entry*" | wc -l)" 0
}
