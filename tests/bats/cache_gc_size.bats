#!/usr/bin/env bats
# bufferlock cache --gc --max-size SIZE (SPEC §15): old input states do not
# pile up for ever; the oldest entries go until the store is under SIZE.
# --max-entry SIZE in the file store: an entry over it is not stored, as in
# the other stores (cache_redis.bats, cache_http.bats).

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
    assert_regex "$stderr" "removed the [0-9]+ least recently used entries to bring .* under 256000 bytes"
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

@test "file store: an output over --max-entry is served whole, not stored, one warning naming both sizes; -q silences it" {
    head -c 4000 /dev/urandom | base64 -w0 | head -c 5000 >"$T/5k"
    run --separate-stderr blc --max-entry 1K "$K" sh -c "echo x >>'$RUNS'; cat '$T/5k'"
    assert_success
    assert_one_bufferlock_line "output of '$K' not stored: its stored size, 5000 bytes, is over --max-entry (1024 bytes)"
    cmp -s <(blc -q --max-entry 1K "$K" sh -c "echo x >>'$RUNS'; cat '$T/5k'" 2>"$T/err") "$T/5k" ||
        fail "the output was not served whole"
    [[ ! -s $T/err ]] || fail "-q did not silence the warning: $(cat "$T/err")"
    assert_runs 2 # never stored, so built each time
    [[ ! -e $(entry_path "$K") ]] || fail "an entry over --max-entry was stored"
    assert_equal "$(temp_files)" ""
    # Under the limit it is stored, and then a hit.
    run --separate-stderr blc --max-entry 5000 "$K" sh -c "echo x >>'$RUNS'; cat '$T/5k'"
    assert_success
    assert_stderr_empty
    [[ -e $(entry_path "$K") ]] || fail "an entry under --max-entry was not stored"
    blc --max-entry 5000 "$K" sh -c "echo x >>'$RUNS'; cat '$T/5k'" >/dev/null
    assert_runs 3
}

@test "file store: --max-entry counts the stored size: compressed data, stored stderr and --output files" {
    # 6668 bytes of base64, about 5000 once compressed.
    head -c 5000 /dev/urandom | base64 -w0 >"$T/b64"
    run --separate-stderr blc --compress --max-entry 1K "$K" cat "$T/b64"
    assert_success
    local stored
    stored=$(sed -nE 's/.*stored size, ([0-9]+) bytes.*/\1/p' <<<"$stderr")
    ((stored > 4000 && stored < 6668)) || fail "stored size '$stored' in: $stderr"
    run --separate-stderr blc --compress --max-entry 6000 "$K" cat "$T/b64"
    assert_success
    assert_stderr_empty
    [[ -e $(entry_path "$K") ]] || fail "a compressed entry under --max-entry was not stored"
    # stderr kept: stdout and stderr count together.
    run --separate-stderr blc --keep-stderr --max-entry 4K e sh -c "head -c 3000 '$T/b64'; head -c 3000 '$T/b64' >&2"
    assert_success
    assert_equal "${#output}" 3000
    assert_regex "$stderr" "output of 'e' not stored: its stored size, 6000 bytes, is over --max-entry \(4096 bytes\)"
    [[ ! -e $(entry_path e) ]] || fail "stdout and stderr over --max-entry were stored"
    # --output: the archive counts, however small stdout.
    mkdir -p "$T/w"
    cd "$T/w"
    run --separate-stderr blc --output out --max-entry 1K o sh -c "head -c 5000 /dev/urandom >out; echo built"
    assert_success
    assert_output built
    assert_one_bufferlock_line "output of 'o' not stored" "is over --max-entry (1024 bytes)"
    run --separate-stderr blc --list
    assert_success
    [[ $output != *" o"* ]] || fail "an --output entry over --max-entry was stored: $output"
    assert_equal "$(temp_files)" ""
}
