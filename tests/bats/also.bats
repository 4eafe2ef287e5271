#!/usr/bin/env bats
# --also KEY2: several keys, all or nothing (SPEC §14).

load redis_helpers

# The Redis cases start a private server each (stopped by PID in teardown).
teardown() { redis_teardown; }

# Two keys whose digests sort as FIRST < SECOND (the order they are taken in).
FIRST=a   # md5 0cc175b9...
SECOND=b  # md5 92eb5ffe...

# assert_exact_counters ROUNDS BACKEND-OPTION...: two groups of 4 workers
# naming the keys in opposite orders, ROUNDS runs each, increment two
# counters non-atomically: no deadlock, and no increment is lost.
assert_exact_counters() {
    local rounds=$1
    shift
    echo 0 >"$T/c1"
    echo 0 >"$T/c2"
    # a non-atomic read-modify-write of both counters
    local body='read -r x <"$0"; read -r y <"$1"; echo $((x + 1)) >"$0"; echo $((y + 1)) >"$1"'
    local pids=() w
    for w in 1 2 3 4; do
        (for ((r = 0; r < rounds; r++)); do
            "$BL" "$@" -w 60 --also "$SECOND" "$FIRST" sh -c "$body" "$T/c1" "$T/c2" || exit 1
        done) &
        pids+=($!)
        (for ((r = 0; r < rounds; r++)); do
            "$BL" "$@" -w 60 --also "$FIRST" "$SECOND" sh -c "$body" "$T/c1" "$T/c2" || exit 1
        done) &
        pids+=($!)
    done
    track_pid "${pids[@]}"
    for w in "${pids[@]}"; do
        wait_for_exit "$w" 120 || fail "worker $w did not finish: deadlock?"
        reap "$w"
        assert_equal "$REAPED_STATUS" 0
    done
    assert_equal "$(cat "$T/c1")" $((8 * rounds))
    assert_equal "$(cat "$T/c2")" $((8 * rounds))
}

@test "two groups of 4 workers naming the keys in opposite orders: no deadlock, exact counters" {
    assert_exact_counters 100 -d "$D"
}

@test "all or nothing: when one key is busy, none is kept" {
    local order
    for order in "$FIRST $SECOND" "$SECOND $FIRST"; do
        read -r busy other <<<"$order"
        hold_lock "$D" "$busy"
        run --separate-stderr bl -d "$D" --also "$busy" "$other" true
        assert_failure 75
        ! lock_is_held "$D" "$other" || fail "'$other' kept while '$busy' was busy"
        run flock -n "$(lock_path "$D" "$other")" true
        assert_success
        release_lock
    done
}

@test "one --wait for the whole set, and nothing kept when it runs out" {
    hold_lock "$D" "$SECOND"
    local start end
    start=$(now_us)
    run --separate-stderr bl -d "$D" -w 2 --also "$SECOND" "$FIRST" true
    end=$(now_us)
    assert_failure 75
    (((end - start) >= 1900000)) || fail "gave up after $(((end - start) / 1000)) ms, before the wait"
    # halfway to two waits: 1 s of room for load
    (((end - start) < 3000000)) || fail "took $(((end - start) / 1000)) ms: more than one wait"
    ! lock_is_held "$D" "$FIRST" || fail "'$FIRST' kept after the wait ran out"
}

@test "the command holds every key; they are released together, with exec and --close" {
    local opt
    for opt in -n -o; do
        "$BL" $opt -d "$D" --also "$FIRST" --also third "$SECOND" sleep 300 </dev/null >/dev/null 2>&1 3>&- &
        HOLDER_PID=$!
        track_pid "$HOLDER_PID"
        wait_until_held "$D" "$SECOND" "$HOLDER_PID"
        wait_until_held "$D" "$FIRST" "$HOLDER_PID"
        wait_until_held "$D" third "$HOLDER_PID"
        # with -o, the command (bufferlock's child) gets SIGTERM when it dies
        release_lock
        wait_until_free "$D" "$FIRST"
        wait_until_free "$D" "$SECOND"
        wait_until_free "$D" third
    done
}

@test "slots and fences per key: BUFFERLOCK_ALSO_SLOT and BUFFERLOCK_ALSO_FENCE" {
    bl -d "$D" "$SECOND" true
    bl -d "$D" "$SECOND" true
    hold_lock "$D" "$SECOND"
    run --separate-stderr bl -d "$D" --slots 2 --also "$SECOND" --also "$SECOND" "$FIRST" \
        sh -c 'echo "$BUFFERLOCK_SLOT $BUFFERLOCK_FENCE|$BUFFERLOCK_ALSO_SLOT|$BUFFERLOCK_ALSO_FENCE"'
    assert_success
    assert_output "0 1|1 1|1 1"
}

@test "--also where it does not apply is a usage error" {
    run --separate-stderr bl status -d "$D" --also x "$K"
    assert_usage_error "--also" status
    run --separate-stderr bl acquire -r redis://127.0.0.1:1 --also x "$K"
    assert_usage_error "--also" acquire
}

# --- redis --------------------------------------------------------------------

@test "redis: two groups naming the keys in opposite orders: no deadlock, exact counters" {
    start_redis_as R
    assert_exact_counters 30 -r "$R_URL"
}

@test "redis: every key is held, renewed and released together; fences per key" {
    start_redis_as R
    bl -r "$R_URL" "$SECOND" true
    local before
    before=$(fence_counter R "$SECOND")
    # a TTL shorter than the command: only renewal of both keeps them
    run --separate-stderr bl -r "$R_URL" --ttl 0.3 --also "$SECOND" "$FIRST" sh -c \
        'sleep 1; echo "$BUFFERLOCK_FENCE|$BUFFERLOCK_ALSO_FENCE"; redis-cli -p "$0" PTTL "$1" ' \
        "$R_PORT" "$(redis_key "$SECOND")"
    assert_success
    assert_stderr_empty
    assert_line -n 0 "$(fence_counter R "$FIRST")|$(fence_counter R "$SECOND")"
    (($(fence_counter R "$SECOND") > before)) || fail "fence $(fence_counter R "$SECOND") after $before"
    (($(sed -n 2p <<<"$output") > 0)) || fail "the --also key was not renewed: $output"
    assert_equal "$(rcli_to R EXISTS "$(redis_key "$FIRST")" "$(redis_key "$SECOND")")" 0
}

@test "redis: all or nothing, and a lost --also key is a lost lock" {
    start_redis_as R
    rcli_to R SET "$(redis_key "$SECOND")" foreign PX 30000 >/dev/null
    run --separate-stderr bl -r "$R_URL" --also "$SECOND" "$FIRST" true
    assert_failure 75
    assert_equal "$(rcli_to R EXISTS "$(redis_key "$FIRST")")" 0
    rcli_to R DEL "$(redis_key "$SECOND")" >/dev/null
    # the --also key vanishes while the command runs: the lock is lost
    run --separate-stderr bl -r "$R_URL" --ttl 1 --connect-timeout 0.1 --io-timeout 0.1 --on-lost term --also "$SECOND" "$FIRST" sh -c \
        'redis-cli -p "$0" DEL "$1" >/dev/null; sleep 5; echo survived' "$R_PORT" "$(redis_key "$SECOND")"
    refute_output survived
    assert_regex "$stderr" "lost"
}
