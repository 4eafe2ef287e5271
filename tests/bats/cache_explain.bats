#!/usr/bin/env bats
# bufferlock cache --explain (SPEC §21): a miss says why on one stderr line
# (no entry of KEY, expired, which --depends paths and files differ from the
# newest entry of KEY, another --output list), a hit says its entry's age
# and host; -v says the same of misses; on the file, Redis, HTTP and S3 stores.
# The per-path manifest behind it is bounded (64 KiB of file lists).

bats_require_minimum_version 1.5.0

load all_stores_helpers

setup() {
    all_stores_setup
    W="$T/work"
    mkdir -p "$W/src"
    printf 'a\n' >"$W/src/a.c"
    printf 'b\n' >"$W/src/b.c"
    printf 'h\n' >"$W/config.h"
    cd "$W"
}

SECS='[0-9]+\.[0-9]{3}'

# miss_line WHY: the exact miss line of $K, WHY a regex.
miss_line() { printf '%s' "^bufferlock: miss for '$K': $1\$"; }

# assert_line_is REGEX: $stderr is one line, and it matches.
assert_line_is() {
    assert_one_bufferlock_line
    assert_regex "$stderr" "$1"
}

# explain_reasons CMD: each reason of a miss, and the hit line, with the
# store that CMD (blc, bls, blh) uses.
explain_reasons() {
    local cmd=$1 host
    host=$(hostname)
    run --separate-stderr "$cmd" --explain --depends src --depends config.h "$K" echo one
    assert_success
    assert_output one
    assert_line_is "$(miss_line 'no entry of this KEY')"

    run --separate-stderr "$cmd" --explain --depends src --depends config.h "$K" echo two
    assert_output one
    assert_line_is "^bufferlock: hit for '$K': age ${SECS}s, built on ${host}\$"

    # A directory with a file changed, one removed and two added (one in a
    # subdirectory: named relative to the PATH), and a file PATH changed.
    printf 'a2\n' >src/a.c
    rm src/b.c
    printf 'c\n' >src/c.c
    mkdir src/sub
    printf 'd\n' >src/sub/d.c
    printf 'h2\n' >config.h
    run --separate-stderr "$cmd" --explain --depends src --depends config.h "$K" echo three
    assert_output three
    assert_line_is "$(miss_line "other inputs than its newest entry \\(age ${SECS}s\\): src: changed a.c, removed b.c, added c.c, \\+1 more; config.h: changed")"

    # A PATH no longer given.
    run --separate-stderr "$cmd" --explain --depends src "$K" echo four
    assert_line_is "$(miss_line "other inputs than its newest entry \\(age ${SECS}s\\): config.h: no longer a dependency")"

    # Same inputs, another --output list.
    run --separate-stderr "$cmd" --explain --depends src --output out "$K" sh -c 'echo o >out; echo five'
    assert_output five
    assert_line_is "$(miss_line 'other --output list \(its entry of these inputs holds no --output\)')"

    # Expired: its age against --max-age.
    sleep 0.2
    run --separate-stderr "$cmd" --explain --max-age 0.1 --depends src "$K" echo six
    assert_output six
    assert_line_is "$(miss_line "expired \\(age ${SECS}s, --max-age 0\\.100s\\)")"
}

@test "file store: no entry, other inputs (files changed, removed, added), other --output list, expired; a hit's host" {
    explain_reasons blc
}

@test "redis store: the same lines" {
    explain_reasons bls
}

@test "http store: the same lines, from the objects' headers" {
    explain_reasons blh
}

# bl3 ARGS...: `bufferlock cache` on this test's S3 store.
bl3() {
    "$BL" cache --cache-dir "$C" --store "$S3_STORE" "$@"
}

@test "s3 store: the same lines, from the objects' headers" {
    explain_reasons bl3
}

@test "an entry within --stale: the line says it is stale and what the call did with it" {
    local stale_line="^bufferlock: stale for '$K': age ${SECS}s, --max-age 1\\.000s, --stale 3600\\.000s: "
    run -0 blc --max-age 1 --stale 1h "$K" echo one
    sleep 1.5
    # Served at once, rebuilt in the background.
    run -0 --separate-stderr blc --explain --max-age 1 --stale 1h --background "$K" "$COUNTED" 0 two
    assert_output one
    assert_line_is "${stale_line}served while it is rebuilt in the background\$"
    poll_until 30 runs_are 1 || fail "no background rebuild"
    # Another caller rebuilds it (held by a gated build): served meanwhile.
    sleep 1.5
    spawn_caller g --max-age 1 --stale 1h "$K" "$GATED" three
    poll_until 30 runs_are 2 || fail "the rebuild did not start"
    run -0 --separate-stderr blc --explain --max-age 1 --stale 1h "$K" echo four
    assert_output two
    assert_line_is "${stale_line}served while another caller rebuilds it\$"
    open_gate
    wait_callers 60
    assert_equal "$(caller_status g)" 0
    # Without --background and nobody rebuilding: rebuilt now, not served.
    sleep 1.5
    run -0 --separate-stderr blc --explain --max-age 1 --stale 1h "$K" echo five
    assert_output five
    assert_line_is "${stale_line}rebuilt now, not served \\(--background serves it meanwhile\\)\$"
}

runs_are() { [[ $(runs) == "$1" ]]; }

@test "-v says the same miss line, and BUFFERLOCK_CACHE_EXPLAIN=1 is --explain" {
    run --separate-stderr blc --depends src "$K" echo one
    assert_stderr_empty
    printf 'a2\n' >src/a.c
    run --separate-stderr blc -v --depends src "$K" echo two
    assert_output two
    local want
    want="$(miss_line "other inputs than its newest entry \\(age ${SECS}s\\): src: changed a.c")"
    [[ $(grep -c "^bufferlock: miss for " <<<"$stderr") == 1 ]] || fail "expected one miss line: $stderr"
    assert_regex "$(grep "^bufferlock: miss for " <<<"$stderr")" "$want"
    printf 'a3\n' >src/a.c
    BUFFERLOCK_CACHE_EXPLAIN=1 run --separate-stderr blc --depends src "$K" echo three
    assert_line_is "$want"
    # Without either, a miss says nothing.
    printf 'a4\n' >src/a.c
    run --separate-stderr blc --depends src "$K" echo four
    assert_output four
    assert_stderr_empty
}

@test "a hit says the host it was built on; one of an entry from before hosts were recorded says so; --force says it forced" {
    run --separate-stderr blc "$K" echo one
    run --separate-stderr blc --explain "$K" echo two
    assert_output one
    assert_line_is "^bufferlock: hit for '$K': age ${SECS}s, built on $(hostname)\$"
    run --separate-stderr blc --explain --force "$K" echo three
    assert_output three
    assert_line_is "$(miss_line '--force rebuilds it')"
    # An entry an earlier bufferlock wrote (the stored fixture of a plain
    # build): it records no host.
    mkdir -p "$C"
    cp "$BATS_TEST_DIRNAME"/../fixtures/entries/file/*.entry "$C/"
    run --separate-stderr blc --explain fx-plain false
    assert_success
    assert_output "hello fixture"
    assert_regex "$stderr" "^bufferlock: hit for 'fx-plain': age ${SECS}s, built on a host it does not record\$"
}

@test "the manifest is bounded: a directory past 64 KiB of names keeps its digest, and the others still name files" {
    mkdir big
    local i
    for ((i = 0; i < 3000; i++)); do
        printf '%d\n' "$i" >"big/file-with-a-rather-long-name-$i.txt"
    done
    run --separate-stderr blc --explain --depends big --depends src "$K" echo one
    assert_output one
    # The entry holds at most the bound of file lists, not 3000 names.
    local size
    size=$(stat -c %s "$(key_entries "$K")")
    ((size < 64 * 1024 + 4096)) || fail "entry of $size bytes"
    printf 'x\n' >big/file-with-a-rather-long-name-7.txt
    printf 'a2\n' >src/a.c
    run --separate-stderr blc --explain --depends big --depends src "$K" echo two
    assert_output two
    assert_line_is "$(miss_line "other inputs than its newest entry \\(age ${SECS}s\\): big: changed \\(too many files to name them\\); src: changed a.c")"
}

@test "the entries of another KEY are not this KEY's: no entry" {
    run --separate-stderr blc --explain --depends src other echo one
    run --separate-stderr blc --explain --depends src "$K" echo two
    assert_line_is "$(miss_line 'no entry of this KEY')"
}
