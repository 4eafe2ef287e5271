#!/usr/bin/env bats
# --slots N: a counting semaphore, file and Redis backends (SPEC §14).

load redis_helpers

# The Redis cases start a private server each (stopped by PID in teardown).
teardown() { redis_teardown; }

# The command of a slot worker: marks its slot as running (noclobber: two
# holders of one slot would fail), notes how many run now, then leaves.
worker_cmd='set -C; : >"$RUN/slot.$BUFFERLOCK_SLOT" || { echo "slot $BUFFERLOCK_SLOT twice" >>"$RUN/errors"; exit 1; }
n=$(ls "$RUN" | grep -c "^slot\."); echo "$n" >>"$RUN/../counts"; sleep 0.2; rm -f "$RUN/slot.$BUFFERLOCK_SLOT"'

# assert_three_of_eight BACKEND-OPTION...: 8 workers, 3 runs each, on
# --slots 3 never run more than 3 at once, and 3 do.
assert_three_of_eight() {
    export RUN=$T/run
    mkdir -p "$RUN"
    local pids=() w
    for w in 1 2 3 4 5 6 7 8; do
        (for r in 1 2 3; do "$BL" --slots 3 "$@" -w 60 "$K" sh -c "$worker_cmd" || exit 1; done) &
        pids+=($!)
    done
    track_pid "${pids[@]}"
    for w in "${pids[@]}"; do
        wait_for_exit "$w" 60 || fail "worker $w did not finish"
        reap "$w"
        assert_equal "$REAPED_STATUS" 0
    done
    [[ ! -e $RUN/errors ]] || fail "$(cat "$RUN/errors")"
    assert_equal "$(wc -l <"$T/counts")" 24
    assert_equal "$(sort -n "$T/counts" | tail -n 1)" 3
}

@test "8 workers on --slots 3: never more than 3 run at once, and 3 do" {
    assert_three_of_eight -d "$D"
}

@test "slot 0 is the plain lock: a plain holder takes one of the slots" {
    hold_lock "$D" "$K"
    run bl --slots 1 -d "$D" "$K" true
    assert_failure 75
    run bl --slots 2 -d "$D" "$K" sh -c 'echo "$BUFFERLOCK_SLOT"'
    assert_success
    assert_output 1
    [[ -e $D/$(key_md5 "$K").1.lock ]] || fail "no slot file for slot 1"
    bl_hold_lock "$D" other --slots 1
    run bl -d "$D" other true
    assert_failure 75
}

@test "a waiter gets the slot that is freed, promptly" {
    local a b waiter start
    "$BL" --slots 2 -d "$D" "$K" sleep 300 </dev/null >/dev/null 2>&1 3>&- &
    a=$!
    track_pid "$a"
    wait_until_held "$D" "$K" "$a"
    "$BL" --slots 2 -d "$D" "$K" sleep 300 </dev/null >/dev/null 2>&1 3>&- &
    b=$!
    track_pid "$b"
    local slot1
    slot1=$(printf '%s/%s.1.lock' "$D" "$(key_md5 "$K")")
    for ((i = 0; i < 100; i++)); do
        grep -qx "$b" < <(lock_holders "$slot1") && break
        sleep 0.05
    done
    "$BL" --slots 2 -d "$D" -w 20 "$K" sh -c 'echo "$BUFFERLOCK_SLOT $EPOCHREALTIME" >"$0"' "$T/got" &
    waiter=$!
    track_pid "$waiter"
    sleep 0.3
    [[ ! -s $T/got ]] || fail "the waiter ran while both slots were taken"
    start=$EPOCHREALTIME
    kill -KILL "$b"
    wait_for_file "$T/got" 5 || fail "the waiter did not get slot 1"
    wait_for_exit "$waiter" 5
    read -r slot at <"$T/got"
    assert_equal "$slot" 1
    # generous: a 2-core box under load; polling every second would miss it
    run awk -v a="$start" -v b="$at" 'BEGIN { exit !(b - a < 0.5) }'
    assert_success
}

@test "status --slots N: slots=K/N, held only when all are taken" {
    run --separate-stderr bl status --slots 2 -d "$D" "$K"
    assert_success
    assert_output "free slots=0/2"
    bl_hold_lock "$D" "$K" --slots 2
    local first=$HOLDER_PID
    run --separate-stderr bl status --slots 2 -d "$D" "$K"
    assert_success
    assert_output "free slots=1/2"
    "$BL" --slots 2 -d "$D" "$K" sleep 300 </dev/null >/dev/null 2>&1 3>&- &
    local second=$!
    track_pid "$second"
    for ((i = 0; i < 100; i++)); do
        [[ $(bl status --slots 2 -d "$D" "$K") == held* ]] && break
        sleep 0.05
    done
    run --separate-stderr bl status --slots 2 -d "$D" "$K"
    assert_failure 75
    assert_output "held slots=2/2 pid=$first,$second"
    run --separate-stderr bl -v --slots 2 -d "$D" "$K" true
    assert_failure 75
    assert_regex "$stderr" "all 2 slots held by pids $first, $second"
}

@test "BUFFERLOCK_SLOTS stands in for --slots; the command line wins" {
    bl_hold_lock "$D" "$K"
    BUFFERLOCK_SLOTS=2 run bl -d "$D" "$K" sh -c 'echo "$BUFFERLOCK_SLOT"'
    assert_success
    assert_output 1
    BUFFERLOCK_SLOTS=2 run bl --slots 1 -d "$D" "$K" true
    assert_failure 75
}

@test "bad --slots values and combinations are usage errors" {
    local v
    for v in 0 1001 x -1 1.5 ''; do
        run --separate-stderr bl --slots "$v" -d "$D" "$K" true
        assert_usage_error "--slots"
    done
    BUFFERLOCK_SLOTS=abc run --separate-stderr bl -d "$D" "$K" true
    assert_usage_error BUFFERLOCK_SLOTS
    run --separate-stderr bl --slots 2 -s -d "$D" "$K" true
    assert_usage_error "--slots" "--shared"
    # not yet over a quorum; the token subcommands take no --slots
    run --separate-stderr bl --slots 2 -r redis://127.0.0.1:1 -r redis://127.0.0.1:2 "$K" true
    assert_usage_error "--slots" "quorum of Redis servers yet"
    run --separate-stderr bl acquire --slots 2 -r redis://127.0.0.1:1 "$K"
    assert_usage_error "--slots" "does not apply"
    run --separate-stderr bl --slots 1000 -d "$D" "$K" true
    assert_success
}

# --- redis --------------------------------------------------------------------

@test "redis: 8 workers on --slots 3: never more than 3 run at once, and 3 do" {
    start_redis_as R
    assert_three_of_eight -r "$R_URL"
}

@test "redis: slot 0 is the plain key; status --slots N shows slots=K/N; a freed slot wakes a waiter" {
    start_redis_as R
    run --separate-stderr bl status --slots 2 -r "$R_URL" "$K"
    assert_success
    assert_output "free slots=0/2"
    rcli_to R SET "$(redis_key "$K")" foreign PX 30000 >/dev/null
    run --separate-stderr bl --slots 2 -r "$R_URL" "$K" sh -c 'echo "$BUFFERLOCK_SLOT $BUFFERLOCK_REDIS_KEY"'
    assert_success
    assert_output "1 {$(redis_key "$K")}:slot:1"
    "$BL" --slots 2 -r "$R_URL" "$K" sleep 0.5 </dev/null >/dev/null 2>&1 &
    track_pid $!
    for ((i = 0; i < 100; i++)); do
        [[ $(bl status --slots 2 -r "$R_URL" "$K") == held* ]] && break
        sleep 0.01
    done
    run --separate-stderr bl status --slots 2 -r "$R_URL" "$K"
    assert_failure 75
    assert_output --regexp '^held slots=2/2 pid=[0-9]+$'
    local start
    start=$(date +%s%N)
    run --separate-stderr bl --slots 2 -r "$R_URL" -w 5 "$K" sh -c 'echo "$BUFFERLOCK_SLOT"'
    assert_success
    assert_output 1
    # woken by the release's wake-up list, not by a back-off that grew meanwhile
    (( ($(date +%s%N) - start) / 1000000 < 1500 ))
}
