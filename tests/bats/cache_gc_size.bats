#!/usr/bin/env bats
# bufferlock cache --gc --max-size SIZE (SPEC §15): old input states do not
# pile up for ever; the oldest entries go until the store is under SIZE.

load helpers
load cache_helpers

setup() { cache_setup; }
teardown() { cache_teardown; }

# entries_size: the bytes of every entry file in $C.
entries_size() {
    find "$C" -maxdepth 1 -name '*.entry' -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'
}

@test "--gc --max-size brings a store over the size under it, the newest kept" {
    local i
    head -c 102400 /dev/urandom >"$T/payload"
    for i in 1 2 3 4 5; do
        printf '%s\n' "$i" >"$T/dep"
        blc --depends "$T/dep" "k$i" cat "$T/payload" >/dev/null || fail "build $i failed"
        sleep 0.02
    done
    # Another state of k5 and a plain entry, the newest of all.
    blc k5 cat "$T/payload" >/dev/null
    (($(entries_size) > 600 * 1024)) || fail "the store is smaller than expected: $(entries_size)"
    run --separate-stderr blc --gc --max-size 250K -v
    assert_success
    assert_regex "$stderr" "removed the [0-9]+ oldest entries to bring .* under 256000 bytes"
    (($(entries_size) <= 250 * 1024)) || fail "still $(entries_size) bytes"
    run --separate-stderr blc --list
    assert_equal "${#lines[@]}" 2
    assert_regex "${lines[0]}" ' - k5$'
    assert_regex "${lines[1]}" ' [0-9a-f]{12} k5$'
    # Under the size already: nothing goes.
    run --separate-stderr blc --gc --max-size 1G
    assert_success
    run --separate-stderr blc --list
    assert_equal "${#lines[@]}" 2
    # 0 empties the store; temporary files of running builds are not entries.
    run --separate-stderr blc --gc --max-size 0
    assert_success
    assert_equal "$(entries_size)" 0
}

@test "--max-size: suffixes, and usage errors without --gc or with a bad size" {
    blc k echo one >/dev/null
    run --separate-stderr blc --gc --max-size 1M
    assert_success
    run --separate-stderr blc --list
    assert_equal "${#lines[@]}" 1
    run --separate-stderr blc --max-size 1M k echo two
    assert_usage_error "--max-size" "--gc"
    run --separate-stderr blc --gc --max-size 12X
    assert_usage_error "--max-size" "12X"
    run --separate-stderr blc --gc --max-size ''
    assert_usage_error "--max-size"
}
