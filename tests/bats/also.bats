#!/usr/bin/env bats
# --also KEY2: several keys, all or nothing (SPEC §14).

load helpers

# Two keys whose digests sort as FIRST < SECOND (the order they are taken in).
FIRST=a   # md5 0cc175b9...
SECOND=b  # md5 92eb5ffe...

@test "two groups of 4 workers naming the keys in opposite orders: no deadlock, exact counters" {
    echo 0 >"$T/c1"
    echo 0 >"$T/c2"
    # a non-atomic read-modify-write of both counters
    local body='read -r x <"$0"; read -r y <"$1"; echo $((x + 1)) >"$0"; echo $((y + 1)) >"$1"'
    local pids=() w
    for w in 1 2 3 4; do
        (for ((r = 0; r < 100; r++)); do
            "$BL" -d "$D" -w 60 --also "$SECOND" "$FIRST" sh -c "$body" "$T/c1" "$T/c2" || exit 1
        done) &
        pids+=($!)
        (for ((r = 0; r < 100; r++)); do
            "$BL" -d "$D" -w 60 --also "$FIRST" "$SECOND" sh -c "$body" "$T/c1" "$T/c2" || exit 1
        done) &
        pids+=($!)
    done
    track_pid "${pids[@]}"
    for w in "${pids[@]}"; do
        wait_for_exit "$w" 120 || fail "worker $w did not finish: deadlock?"
        reap "$w"
        assert_equal "$REAPED_STATUS" 0
    done
    assert_equal "$(cat "$T/c1")" 800
    assert_equal "$(cat "$T/c2")" 800
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
    run --separate-stderr bl -d "$D" -w 1 --also "$SECOND" "$FIRST" true
    end=$(now_us)
    assert_failure 75
    (((end - start) >= 900000)) || fail "gave up after $(((end - start) / 1000)) ms, before the wait"
    (((end - start) < 1800000)) || fail "took $(((end - start) / 1000)) ms: more than one wait"
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

@test "--also where it does not apply, and with redis, is a usage error" {
    run --separate-stderr bl status -d "$D" --also x "$K"
    assert_usage_error "--also" status
    run --separate-stderr bl -r redis://127.0.0.1:1 --also x "$K" true
    assert_usage_error "--also" "redis backend yet"
}
