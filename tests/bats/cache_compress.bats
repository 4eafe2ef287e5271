#!/usr/bin/env bats
# Stored data compressed with zstd: always in the Redis store, with
# --compress in the file store; data that does not compress is stored raw;
# entries stored without compression are still read; --max-entry counts the
# stored size.

bats_require_minimum_version 1.5.0

load redis_helpers
load cache_helpers

# A 100 MiB build log (compiler lines, warnings with line numbers, test
# results with timings: the repetitive text logs are) and 3 MiB of random bytes.
setup_file() {
    redis_setup_file
    python3 - "$BATS_FILE_TMPDIR/log" <<'PY'
import random, sys
rnd = random.Random(24)
files = ["cache/store", "cache/entry", "cache/recipe", "redis/client", "redis/tls", "util/io",
         "lock/acquire", "cli", "app", "messages"]
with open(sys.argv[1], "w") as out:
    n, i = 0, 0
    while n < 100 * 1024 * 1024:
        f, k = rnd.choice(files), rnd.randrange(6)
        if k == 0:
            s = "Building CXX object src/CMakeFiles/bufferlock_core.dir/%s.cpp.o" % f
        elif k == 1:
            s = "g++ -O2 -g -Wall -Wextra -std=c++20 -Isrc -c src/%s.cpp -o build/%s.o" % (f, f)
        elif k == 2:
            s = "src/%s.cpp:%d:%d: warning: unused variable 'n' [-Wunused-variable]" % (
                f, rnd.randint(1, 900), rnd.randint(1, 80))
        elif k == 3:
            s = "[ RUN      ] Test.%s" % f.replace("/", "_")
        elif k == 4:
            s = "[       OK ] Test.%s (%d ms)" % (f.replace("/", "_"), rnd.randint(0, 999))
        else:
            s = "ok %d %s round trip" % (i, f)
        line = ("[%3d%%] %s\n" % (i * 100 // 1500000, s))[: 100 * 1024 * 1024 - n]
        out.write(line)
        n += len(line)
        i += 1
PY
    head -c $((3 * 1024 * 1024)) /dev/urandom >"$BATS_FILE_TMPDIR/random"
}
teardown_file() { redis_teardown_file; }

setup() {
    cache_setup
    redis_reset_shared
    LOG="$BATS_FILE_TMPDIR/log"
    RND="$BATS_FILE_TMPDIR/random"
    K="compress-key"
}
teardown() {
    track_descendants
    redis_teardown
}

# stored_len KEY: the bytes of KEY's entry hash, all fields.
stored_len() {
    rcli EVAL "local n = 0 for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
        n = n + redis.call('HSTRLEN', KEYS[1], f) end return n" 1 "$(ekey "$1")"
}

@test "Redis: a 100 MiB build log uses at most 30% of its size in Redis and is served byte for byte" {
    command -v /usr/bin/time >/dev/null || skip "GNU time is not installed"
    rss_run build --store redis -r "$REDIS_URL" --max-entry 200M "$K" -- cat "$LOG"
    assert_same_bytes "$LOG" "$T/out.build"
    local size usage largest
    size=$(stat -c %s "$LOG")
    usage=$(rcli MEMORY USAGE "$(ekey "$K")" SAMPLES 0)
    echo "# MEMORY USAGE $usage for $size bytes ($((usage * 100 / size))%)" >&3
    ((usage > 0 && usage * 100 <= size * 30)) || fail "MEMORY USAGE $usage for $size bytes"
    # Still parts of at most about 1 MiB, whatever the compressor hands over.
    largest=$(largest_field "$(ekey "$K")")
    ((largest <= 1024 * 1024 + 65536)) || fail "its largest field holds $largest bytes"
    rss_run hit --store redis -r "$REDIS_URL" --max-entry 200M "$K" -- false
    assert_same_bytes "$LOG" "$T/out.hit"
    # Compressing and decompressing hold a block of 1 MiB each way.
    assert_rss_below 24576 build hit
}

@test "file store: --compress round trip of stdout and --keep-stderr; the entry is smaller; read without the flag too" {
    local script="$T/bin/both"
    printf '#!/bin/sh\necho x >>"%s"\nhead -c 5000000 "%s"\nhead -c 300000 "%s" >&2\n' "$RUNS" "$LOG" "$LOG" >"$script"
    chmod +x "$script"
    blc --compress --keep-stderr "$K" "$script" >"$T/out.build" 2>"$T/err.build"
    head -c 5000000 "$LOG" >"$T/want.out"
    head -c 300000 "$LOG" >"$T/want.err"
    assert_same_bytes "$T/want.out" "$T/out.build"
    local size
    size=$(stat -c %s "$(entry_path "$K")")
    ((size * 100 < 5300000 * 30)) || fail "the entry holds $size bytes"
    blc --compress --keep-stderr "$K" "$script" >"$T/out.hit" 2>"$T/err.hit"
    assert_same_bytes "$T/want.out" "$T/out.hit"
    assert_same_bytes "$T/want.err" "$T/err.hit"
    # Compression belongs to the entry: a caller without --compress reads it.
    blc --keep-stderr "$K" "$script" >"$T/out.plain" 2>"$T/err.plain"
    assert_same_bytes "$T/want.out" "$T/out.plain"
    assert_same_bytes "$T/want.err" "$T/err.plain"
    assert_runs 1
    run blc --list
    assert_output --regexp "^[0-9.]+ 5000000 [0-9]+ - $K\$"
}

@test "incompressible data is stored raw and round-trips, in both stores" {
    blc --compress "$K" cat "$RND" >"$T/out.build"
    assert_same_bytes "$RND" "$T/out.build"
    local size raw
    raw=$(stat -c %s "$RND")
    size=$(stat -c %s "$(entry_path "$K")")
    ((size - raw < 512)) || fail "the entry holds $size bytes for $raw raw"
    blc --compress "$K" false >"$T/out.hit"
    assert_same_bytes "$RND" "$T/out.hit"
    bls "$K" cat "$RND" >"$T/out.redis"
    assert_same_bytes "$RND" "$T/out.redis"
    size=$(stored_len "$K")
    ((size - raw < 512)) || fail "Redis holds $size bytes for $raw raw"
    bls "$K" false >"$T/out.redis.hit"
    assert_same_bytes "$RND" "$T/out.redis.hit"
}

@test "entries stored without compression are still read" {
    blc "$K" cat "$RND" >/dev/null
    blc --compress "$K" false >"$T/out"
    assert_same_bytes "$RND" "$T/out"
    run --separate-stderr blc --compress "$K" false
    [[ -z $stderr ]] || fail "stderr: $stderr"
}

@test "--max-entry counts the stored (compressed) size" {
    head -c $((8 * 1024 * 1024)) "$LOG" >"$T/log8"
    # 8 MiB of log is about 2 MiB stored: under 4M, so stored.
    run --separate-stderr bls --max-entry 4M "$K" sh -c "echo x >>'$RUNS'; cat '$T/log8'"
    assert_success
    [[ -z $stderr ]] || fail "stderr: $stderr"
    run --separate-stderr bls --max-entry 4M "$K" sh -c "echo x >>'$RUNS'; cat '$T/log8'"
    assert_runs 1
    # 3 MiB that does not compress is 3 MiB stored: over 2M, not stored.
    run --separate-stderr bls --max-entry 2M other sh -c "echo x >>'$RUNS'; cat '$RND'"
    assert_success
    assert_one_bufferlock_line "--max-entry"
    [[ $(rcli EXISTS "$(ekey other)") == 0 ]] || fail "an entry over --max-entry was stored"
}
