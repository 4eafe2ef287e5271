#!/usr/bin/env bats
# Last use and eviction by it (SPEC §22) on the file, Redis and http stores:
# a hit records its entry's last use at most once a minute (the entry file's
# access time; the Redis hash's field "u"; an http store's uses in the -r
# Redis), a read-only hit records nothing; `--gc --max-size` removes the least
# recently used entries first, `--gc --max-unused AGE` those unused for AGE,
# -v says why; an http store without -r falls back on age and says so once;
# --gc never takes a lock's keys. "A minute" is tested by planting old uses.

bats_require_minimum_version 1.5.0

load all_stores_helpers

setup() {
    all_stores_setup
}

now_ms() { date +%s%3N; }

# uses_key [STORE]: the Redis hash of the last uses of this test's http (or
# s3) store.
uses_key() {
    if [[ ${1:-} == s3-r ]]; then
        printf 'buffer:lock:uses:%s\n' "$(key_md5 "$S3_STORE")"
    else
        printf 'buffer:lock:uses:%s\n' "$(key_md5 "$STORE")"
    fi
}

# plant_use STORE KEY SECONDS: KEY's entry (no inputs) last used SECONDS ago.
# The file's mtime goes a minute further back, so that no relatime reading
# moves its atime (only bufferlock's explicit use may).
plant_use() {
    local ms=$(($(now_ms) - $3 * 1000))
    case $1 in
    file)
        touch -m -d "@$((ms / 1000 - 60))" "$(entry_path "$2")"
        touch -a -d "@$((ms / 1000))" "$(entry_path "$2")"
        ;;
    redis) rcli HSET "$(ekey "$2")" u "$ms" >/dev/null ;;
    http-r) rcli HSET "$(uses_key)" "$(key_md5 "$2").entry" "$ms" >/dev/null ;;
    s3-r) rcli HSET "$(uses_key s3-r)" "$S3_T/$(key_md5 "$2").entry" "$ms" >/dev/null ;;
    esac
}

# last_use STORE KEY: KEY's recorded last use, in seconds since the epoch.
last_use() {
    case $1 in
    file) stat -c %X "$(entry_path "$2")" ;;
    redis) echo $(($(rcli HGET "$(ekey "$2")" u) / 1000)) ;;
    http-r) echo $(($(rcli HGET "$(uses_key)" "$(key_md5 "$2").entry") / 1000)) ;;
    s3-r) echo $(($(rcli HGET "$(uses_key s3-r)" "$S3_T/$(key_md5 "$2").entry") / 1000)) ;;
    esac
}

# assert_recent_use STORE KEY: its last use is within the last minute.
assert_recent_use() {
    local used
    used=$(last_use "$1" "$2")
    ((used >= $(date +%s) - 60)) || fail "$2's last use is $(($(date +%s) - used)) s ago"
}

# listed STORE: the keys of --list, one a line, sorted.
listed() {
    bl_on "$1" --list | awk '{ print $NF }' | LC_ALL=C sort
}

keeps_recently_used() {
    local store=$1
    run --separate-stderr bl_on "$store" old "$COUNTED" 0 old-entry
    assert_success
    head -c 20000 /dev/urandom >"$T/big"
    bl_on "$store" new cat "$T/big" >/dev/null
    plant_use "$store" old 10800
    run --separate-stderr bl_on "$store" old "$COUNTED" 0 rebuilt
    assert_success
    assert_output old-entry
    assert_runs 1
    assert_recent_use "$store" old
    run --separate-stderr bl_on "$store" --gc --max-size 10K -v
    assert_success
    assert_regex "$stderr" "removed 'new' \(inputs -, [0-9]+ bytes\) from .*: least recently used \((last used|built) [0-9]+s ago\), over --max-size 10240 bytes"
    [[ $stderr != *"removed 'old'"* ]] || fail "the recently used entry went: $stderr"
    assert_equal "$(listed "$store")" old
}

unused_go() {
    local store=$1
    bl_on "$store" a echo a >/dev/null
    bl_on "$store" b echo b >/dev/null
    bl_on "$store" c echo c >/dev/null
    plant_use "$store" a 7200
    plant_use "$store" b 7200
    plant_use "$store" c 1200
    # b is hit: used now.
    run --separate-stderr bl_on "$store" b echo rebuilt
    assert_output b
    run --separate-stderr bl_on "$store" --gc --max-unused 1h -v
    assert_success
    assert_regex "$stderr" "removed 'a' .*: last used 7[0-9]{3}s ago, over --max-unused 3600.000s"
    assert_equal "$(grep -c "removed '" <<<"$stderr")" 1
    assert_equal "$(listed "$store")" "$(printf 'b\nc')"
}

once_a_minute() {
    local store=$1 planted
    bl_on "$store" k echo k >/dev/null
    plant_use "$store" k 30
    planted=$(last_use "$store" k)
    run --separate-stderr bl_on "$store" k echo rebuilt
    assert_output k
    assert_equal "$(last_use "$store" k)" "$planted"
    # A read-only hit records nothing, however old the last use.
    plant_use "$store" k 120
    planted=$(last_use "$store" k)
    run --separate-stderr bl_on "$store" --read-only k echo rebuilt
    assert_output k
    assert_equal "$(last_use "$store" k)" "$planted"
    # A minute later, a hit records again.
    run --separate-stderr bl_on "$store" k echo rebuilt
    assert_output k
    assert_recent_use "$store" k
}

@test "file: --max-size keeps the recently hit old entry and drops the newer unused one, -v says why" {
    keeps_recently_used file
}
@test "redis: --max-size keeps the recently hit old entry and drops the newer unused one, -v says why" {
    keeps_recently_used redis
}
@test "http with -r: --max-size keeps the recently hit old entry and drops the newer unused one, -v says why" {
    keeps_recently_used http-r
}

@test "s3 with -r: --max-size keeps the recently hit old entry and drops the newer unused one, -v says why" {
    keeps_recently_used s3-r
}
@test "s3 with -r: --max-unused removes the entries unused for AGE" { unused_go s3-r; }
@test "file: --max-unused removes the entries unused for AGE" { unused_go file; }
@test "redis: --max-unused removes the entries unused for AGE" { unused_go redis; }
@test "http with -r: --max-unused removes the entries unused for AGE" { unused_go http-r; }

@test "file: a hit records its use at most once a minute, a read-only hit never" { once_a_minute file; }
@test "redis: a hit records its use at most once a minute, a read-only hit never" { once_a_minute redis; }
@test "http with -r: a hit records its use at most once a minute, a read-only hit never" { once_a_minute http-r; }

@test "redis: a hit records its use in the entry's hash, which keeps its time to live" {
    bl_on redis --max-age 1h k echo k >/dev/null
    plant_use redis k 120
    run --separate-stderr bl_on redis --max-age 1h k echo rebuilt
    assert_output k
    assert_recent_use redis k
    local ttl
    ttl=$(rcli PTTL "$(ekey k)")
    ((ttl > 3500000 && ttl <= 3600000)) || fail "the entry's TTL is $ttl ms"
    # A use of an entry dropped meanwhile leaves no key behind.
    rcli DEL "$(ekey k)" >/dev/null
    assert_no_key_without_ttl
}

@test "http with -r: the uses hash has a time to live" {
    bl_on http-r k echo k >/dev/null
    plant_use http-r k 120
    bl_on http-r k echo rebuilt >/dev/null
    assert_recent_use http-r k
    local ttl
    ttl=$(rcli PTTL "$(uses_key)")
    ((ttl > 0)) || fail "the uses hash has no time to live ($ttl)"
    assert_no_key_without_ttl
}

@test "http without -r: --gc falls back on age, and says so in one line" {
    head -c 20000 /dev/urandom >"$T/big"
    bl_on http old cat "$T/big" >/dev/null
    sleep 1.1
    bl_on http new "$COUNTED" 0 new-entry >/dev/null
    bl_on http old cat "$T/big" >/dev/null # a hit, which it cannot record
    run --separate-stderr bl_on http --gc --max-size 10K -v
    assert_success
    assert_equal "$(grep -c 'no record of use' <<<"$stderr")" 1
    assert_regex "$stderr" "bufferlock: .*no record of use without -r.*"
    assert_regex "$stderr" "removed 'old' .*: least recently used \(built [0-9]+s ago\), over --max-size 10240 bytes"
    assert_equal "$(listed http)" new
    # Without -v too.
    run --separate-stderr bl_on http --gc --max-unused 1h
    assert_success
    assert_equal "$(grep -c 'no record of use' <<<"$stderr")" 1
}

@test "redis: --gc never removes a lock, its fence, holder record or wake list" {
    bl_on redis gone echo gone >/dev/null
    on redis
    spawn_caller 1 "${ON[@]:2}" held "$GATED" built
    poll_until 20 test -s "$RUNS" || fail "the build did not start"
    spawn_caller 2 "${ON[@]:2}" held "$GATED" second
    sleep 0.5
    local before
    before=$(rcli --scan | grep -v ':entry' | LC_ALL=C sort)
    (($(wc -l <<<"$before") >= 2)) || fail "the lock left too few keys: $before"
    run --separate-stderr bl_on redis --gc --max-size 0 --max-unused 0 -v
    assert_success
    assert_regex "$stderr" "removed 'gone'"
    assert_equal "$(rcli --scan | grep -v ':entry' | LC_ALL=C sort)" "$before"
    open_gate
    wait_results 2
    assert_equal "$(caller_status 1)" 0
    assert_equal "$(caller_status 2)" 0
    assert_equal "$(cat "$T/out.1")" built
    assert_equal "$(cat "$T/out.2")" built
}

@test "--max-unused: a duration, only with --gc" {
    run --separate-stderr blc --max-unused 1h k echo one
    assert_usage_error "--max-unused" "--gc"
    run --separate-stderr blc --gc --max-unused soon
    assert_usage_error "--max-unused" "soon"
}
