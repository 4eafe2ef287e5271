#!/usr/bin/env bats
# The entry formats are frozen: entries that an earlier bufferlock wrote in
# each store (tests/fixtures/entries: file/, redis/ as `HSET` lines that
# redis-cli reads, http/ objects) are hits, served byte for byte, their
# --output trees restored, the signed one verified -- and nothing is built.
#
# The fixtures change only with a format (then say so in the SPEC):
#   BUFFERLOCK_REGENERATE_ENTRY_FIXTURES=1 BUFFERLOCK_BIN=… bats tests/bats/cache_format_fixtures.bats
# rewrites them with that binary (the last test), instead of checking them.

bats_require_minimum_version 1.5.0

load http_helpers
load redis_helpers
load cache_helpers
load entry_fixture_helpers

FIXTURES="$BATS_TEST_DIRNAME/../fixtures/entries"
# Read before setup clears the BUFFERLOCK_ variables of the environment.
REGENERATE=${BUFFERLOCK_REGENERATE_ENTRY_FIXTURES:-}

setup_file() {
    redis_setup_file
    http_setup_file
}
teardown_file() {
    http_teardown_file
    redis_teardown_file
}
setup() {
    cache_setup
    http_setup
    redis_reset_shared
    fixture_work "$T/w"
    cd "$T/w"
    # The command of every replayed call: it leaves a mark and prints what no
    # stored entry holds, so a build cannot pass for a hit.
    REBUILD=(sh -c 'echo x >>"$0"; echo rebuilt' "$T/built")
}
teardown() {
    track_descendants
    redis_teardown
}

# hit ARGS... KEY: `cache ARGS... KEY -- REBUILD` with -v, which must say it
# served a stored entry.
hit() {
    run --separate-stderr "$BL" cache -v "$@" -- "${REBUILD[@]}"
    assert_success
    assert_file_not_exists "$T/built"
    assert_regex "$stderr" "^bufferlock: cache '[^']*': hit \\(age "
}

# assert_output_tree: out/f restored as the build made it.
assert_output_tree() {
    assert_equal "$(cat out/f)" built
    assert_equal "$(find out -mindepth 1 | wc -l)" 1
}

@test "file store: a plain, a --keep-stderr, a compressed --output and a signed entry of before are hits" {
    [[ -z $REGENERATE ]] || skip "regenerating"
    mkdir -p "$C"
    cp "$FIXTURES"/file/*.entry "$C/"
    hit --cache-dir "$C" fx-plain
    assert_output "hello fixture"
    hit --cache-dir "$C" --keep-stderr --depends dep fx-stderr
    assert_output "fixed input"
    assert_equal "$(sed -n 2p <<<"$stderr")" err
    hit --cache-dir "$C" --compress --depends dep --output out fx-output
    assert_output done
    assert_output_tree
    hit --cache-dir "$C" --sign-key key fx-signed
    assert_output "signed fixture"
}

@test "redis store: a plain and an --output entry of before are hits" {
    [[ -z $REGENERATE ]] || skip "regenerating"
    rcli <"$FIXTURES/redis/entries.redis" >/dev/null
    hit --store redis --redis "$REDIS_URL" fx-plain
    assert_output "hello fixture"
    hit --store redis --redis "$REDIS_URL" --depends dep --output out fx-output
    assert_output done
    assert_output_tree
}

@test "http store: a plain and an --output object of before are hits" {
    [[ -z $REGENERATE ]] || skip "regenerating"
    cp "$FIXTURES"/http/*.entry "$(obj_dir)/"
    hit --store "$STORE" fx-plain
    assert_output "hello fixture"
    hit --store "$STORE" --depends dep --output out fx-output
    assert_output done
    assert_output_tree
}

@test "a fixture differing by one byte is not served (the check can fail)" {
    [[ -z $REGENERATE ]] || skip "regenerating"
    mkdir -p "$C"
    cp "$FIXTURES"/file/*.entry "$C/"
    local e
    e=$(grep -l 'hello fixture' "$C"/*.entry)
    sed -i 's/hello fixture/hello fixturE/' "$e"
    run --separate-stderr "$BL" cache --cache-dir "$C" fx-plain -- "${REBUILD[@]}"
    assert_success
    assert_output rebuilt
    assert_file_exists "$T/built"
}

@test "regenerate the fixtures (only with BUFFERLOCK_REGENERATE_ENTRY_FIXTURES=1)" {
    [[ -n $REGENERATE ]] || skip "checking, not regenerating"
    local k
    fixture_calls_file "$BL" --cache-dir "$T/c"
    fixture_calls_remote "$BL" --store redis --redis "$REDIS_URL"
    fixture_calls_remote "$BL" --store "$STORE"
    rm -rf "$FIXTURES/file" "$FIXTURES/redis" "$FIXTURES/http"
    mkdir -p "$FIXTURES/file" "$FIXTURES/redis" "$FIXTURES/http"
    cp "$T"/c/*.entry "$FIXTURES/file/"
    cp "$(obj_dir)"/*.entry "$FIXTURES/http/"
    for k in $(rcli --scan --pattern '*:entry*'); do
        printf 'HSET %s %s\n' "$k" "$(rcli --csv HGETALL "$k" | sed 's/","/" "/g')"
    done | LC_ALL=C sort >"$FIXTURES/redis/entries.redis"
    [[ -s $FIXTURES/redis/entries.redis ]]
}
