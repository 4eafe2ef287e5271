#!/usr/bin/env bats
# What a --depends directory leaves out (SPEC §15): .git at any depth (what a
# checkout adds), --exclude PATTERN (gitignore-style, part of the address),
# and the --output PATHs inside it (an in-tree build); a build that changes
# its inputs names the first path that changed. Patterns in detail:
# tests/unit/cache_exclude_test.cpp.

load helpers
load cache_helpers

setup() {
    cache_setup
    # git with no configuration of the caller's, and a fixed identity
    export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
    export GIT_AUTHOR_NAME=bufferlock GIT_AUTHOR_EMAIL=bufferlock@example.invalid
    export GIT_COMMITTER_NAME=bufferlock GIT_COMMITTER_EMAIL=bufferlock@example.invalid
    P="$T/project"
    mkdir -p "$P/src/sub"
    printf 'int main(void) { return 0; }\n' >"$P/src/a.c"
    printf 'int b;\n' >"$P/src/sub/b.c"
    printf 'all:\n' >"$P/Makefile"
}
teardown() { cache_teardown; }

# cache_in DIR ARGS...: `bufferlock cache --cache-dir $C ARGS...` run in DIR, with
# --separate-stderr.
cache_in() {
    local dir=$1
    shift
    run --separate-stderr bash -c 'cd "$1" && shift && exec "$@"' _ "$dir" "$BL" cache --cache-dir "$C" "$@"
}

# entries: how many entries $C holds.
entries() {
    find "$C" -maxdepth 1 -name '*.entry' | wc -l | tr -d ' '
}

@test "two clones of one commit hit each other's entry with --depends ." {
    git -C "$P" init -q
    git -C "$P" add -A
    git -C "$P" commit -qm first
    git clone -q "$P" "$T/one"
    sleep 1.1 # another second in the second clone's logs and index
    git clone -q "$P" "$T/two"
    cache_in "$T/one" --depends . "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    local first=$output
    cache_in "$T/two" --depends . "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    assert_output "$first"
    assert_runs 1
    # What git does in a clone is no input either; a changed file is.
    git -C "$T/two" gc -q
    git -C "$T/two" checkout -q -b other
    cache_in "$T/two" --depends . "$K" "$COUNTED"
    assert_output "$first"
    assert_runs 1
    printf 'int b = 1;\n' >"$T/two/src/sub/b.c"
    cache_in "$T/two" --depends . "$K" "$COUNTED"
    assert_success
    assert_runs 2
}

@test ".git as a file (a worktree's, a submodule's) is left out at any depth" {
    printf 'gitdir: /somewhere/one\n' >"$P/.git"
    printf 'gitdir: /somewhere/one/modules/sub\n' >"$P/src/sub/.git"
    cache_in "$P" --depends . "$K" "$COUNTED"
    local first=$output
    printf 'gitdir: /elsewhere/two\n' >"$P/.git"
    rm "$P/src/sub/.git"
    mkdir "$P/src/sub/.git"
    cache_in "$P" --depends "$P/src" --depends . "$K" "$COUNTED" # another input list: built
    cache_in "$P" --depends . "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    assert_output "$first"
    assert_runs 2
    # A name that only starts with .git counts.
    printf 'x\n' >"$P/.gitignore"
    cache_in "$P" --depends . "$K" "$COUNTED"
    assert_runs 3
}

@test "--exclude leaves matching paths out: a changed .o or build/ is a hit, a changed .c is not" {
    mkdir -p "$P/build" "$P/web/node_modules/x"
    printf 'o1' >"$P/src/a.o"
    printf 'o2' >"$P/src/sub/b.o"
    printf 'b1' >"$P/build/out"
    printf 'n1' >"$P/web/node_modules/x/index.js"
    printf 't1' >"$P/top-only"
    printf 't1' >"$P/src/top-only"
    local excl=(--exclude '*.o' --exclude build/ --exclude '**/node_modules' --exclude /top-only)
    cache_in "$P" --depends . "${excl[@]}" "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    local first=$output
    printf 'O1' >"$P/src/a.o"
    printf 'new' >"$P/src/sub/c.o"
    printf 'b2' >"$P/build/out"
    printf 'n2' >"$P/web/node_modules/x/index.js"
    printf 't2' >"$P/top-only"
    cache_in "$P" --depends . "${excl[@]}" "$K" "$COUNTED"
    assert_success
    assert_output "$first"
    assert_runs 1
    # Anchored: src/top-only is not /top-only.
    printf 't2' >"$P/src/top-only"
    cache_in "$P" --depends . "${excl[@]}" "$K" "$COUNTED"
    assert_runs 2
    # Directories only: a file named build is an input.
    rm -r "$P/build"
    printf 'file' >"$P/build"
    cache_in "$P" --depends . "${excl[@]}" "$K" "$COUNTED"
    assert_runs 3
    printf 'int main(void) { return 1; }\n' >"$P/src/a.c"
    cache_in "$P" --depends . "${excl[@]}" "$K" "$COUNTED"
    assert_runs 4
}

@test "--exclude is part of the address: the same files with and without it are two entries" {
    cache_in "$P" --depends . "$K" "$COUNTED"
    assert_success
    assert_equal "$(entries)" 1
    cache_in "$P" --depends . --exclude '*.o' "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    assert_runs 2
    assert_equal "$(entries)" 2
    # A set of patterns: order and repeats do not count.
    cache_in "$P" --depends . --exclude x --exclude '*.o' "$K" "$COUNTED"
    cache_in "$P" --depends . --exclude '*.o' --exclude x --exclude '*.o' "$K" "$COUNTED"
    assert_runs 3
    assert_equal "$(entries)" 3
}

@test "an in-tree build (--depends . --output build) is stored, then hits" {
    local make="mkdir -p build && $COUNTED >build/out && cat build/out"
    cache_in "$P" --depends . --output build "$K" sh -c "$make"
    assert_success
    assert_stderr_empty
    local first=$output
    assert_equal "$(entries)" 1
    # A fresh checkout (no build/) and one with the build in place both hit.
    rm -r "$P/build"
    cache_in "$P" --depends . --output build "$K" sh -c "$make"
    assert_success
    assert_stderr_empty
    assert_output "$first"
    assert_equal "$(cat "$P/build/out")" "$first"
    cache_in "$P" --depends . --output build "$K" sh -c "$make"
    assert_output "$first"
    assert_runs 1
    # The same paths spelt otherwise (absolute, with ./ and a trailing slash,
    # from another directory): each stored, not "changed during the build".
    rm -r "$P/build"
    cache_in "$P" --depends "$P/" --output "./build/" "$K-2" sh -c "$make"
    assert_success
    assert_stderr_empty
    assert_equal "$(entries)" 2
    cache_in "$T" --depends project/./src/.. --output "$P//build" "$K-3" sh -c "cd '$P' && $make"
    assert_success
    assert_stderr_empty
    assert_equal "$(entries)" 3
}

@test "a build that changes an input names the first path that changed" {
    cache_in "$P" --depends . "$K" sh -c "printf 'int c;\\n' >>src/sub/b.c; printf 'x\\n' >>src/a.c; $COUNTED"
    assert_success
    assert_one_bufferlock_line "output of '$K' not stored" "changed during the build (first: src/a.c)"
    assert_equal "$(entries)" 0
    cache_in "$P" --depends "$P/src" "$K" sh -c "printf 'new\\n' >'$P/src/sub/new.c'; $COUNTED"
    assert_one_bufferlock_line "(first: $P/src/sub/new.c)"
    # A removed file: the directory it was in.
    cache_in "$P" --depends src "$K" sh -c "rm src/sub/new.c; $COUNTED"
    assert_one_bufferlock_line "(first: src/sub)"
}

@test "bad --exclude values are usage errors; --exclude needs --depends" {
    run --separate-stderr blc --depends . --exclude '' "$K" true
    assert_usage_error "--exclude" "empty pattern"
    run --separate-stderr blc --depends . --exclude '!keep' "$K" true
    assert_usage_error "--exclude" "negated pattern"
    run --separate-stderr blc --depends . --exclude / "$K" true
    assert_usage_error "--exclude" "slashes alone"
    run --separate-stderr blc --depends . --exclude ./build "$K" true
    assert_usage_error "--exclude" "'.' or '..'"
    run --separate-stderr blc --exclude '*.o' "$K" true
    assert_usage_error "--exclude needs --depends"
    assert_runs 0
}
