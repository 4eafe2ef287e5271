#!/usr/bin/env bats
# --slots N: a counting semaphore, file and Redis backends (SPEC §14).

load redis_helpers

# The Redis cases start a private server each (stopped by PID in teardown).
teardown() { redis_teardown; }

# The command of a slot worker: marks its slot as running (noclobber: two
# holders of one slot would fail), notes how many run now, then leaves.
worker_cmd='set -C; : >"$RUN/slot.$BUFFERLOCK_SLOT" || { echo "slot $BUFFERLOCK_SLOT twice" >>"$RUN/errors"; exit 1; }
n=$(ls "$RUN" | grep -c "^slot\."); echo "$n" >>"$RUN/../counts"; sleep 0.2; rm -f "$RUN/slot.$BUFFERLOCK_SLOT"'

# assert_slots_limit SLOTS WORKERS BACKEND-OPTION...: WORKERS workers, 3 runs
# each, on --slots SLOTS never run more than SLOTS at once, and SLOTS do.
assert_slots_limit() {
    local slots=$1 workers=$2
    shift 2
    export RUN=$T/run
    mkdir -p "$RUN"
    local pids=() w
    for ((w = 0; w < workers; w++)); do
        (for r in 1 2 3; do "$BL" --slots "$slots" "$@" -w 60 "$K" sh -c "$worker_cmd" || exit 1; done) &
        pids+=($!)
    done
    track_pid "${pids[@]}"
    for w in "${pids[@]}"; do
        wait_for_exit "$w" 60 || fail "worker $w did not finish"
        reap "$w"
        assert_equal "$REAPED_STATUS" 0
    done
    [[ ! -e $RUN/errors ]] || fail "$(cat "$RUN/errors")"
    assert_equal "$(wc -l <"$T/counts")" $((3 * workers))
    assert_equal "$(sort -n "$T/counts" | tail -n 1)" "$slots"
}

# assert_three_of_eight BACKEND-OPTION...: 8 workers on --slots 3.
assert_three_of_eight() { assert_slots_limit 3 8 "$@"; }

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
    # generous: a 2-core box under load (the waiter is already running: the
    # sanitizer build costs little here); polling every second would miss it
    run awk -v a="$start" -v b="$at" 'BEGIN { exit !(b - a < 0.7) }'
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

@test "--slots 1 still gives BUFFERLOCK_SLOT=0 (exec and --close); without --slots it is unset" {
    run --separate-stderr bl --slots 1 -d "$D" "$K" sh -c 'echo "${BUFFERLOCK_SLOT-unset}"'
    assert_success
    assert_output 0
    run --separate-stderr bl --slots 1 --close -d "$D" "$K" sh -c 'echo "${BUFFERLOCK_SLOT-unset}"'
    assert_success
    assert_output 0
    BUFFERLOCK_SLOTS=1 run --separate-stderr bl -d "$D" "$K" sh -c 'echo "${BUFFERLOCK_SLOT-unset}"'
    assert_success
    assert_output 0
    # an inherited value is scrubbed when no --slots asks for one
    BUFFERLOCK_SLOT=7 run --separate-stderr bl -d "$D" "$K" sh -c 'echo "${BUFFERLOCK_SLOT-unset}"'
    assert_success
    assert_output unset
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
    # the token subcommands take no --slots
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
    # The holder lasts until the gate opens (however slow the status runs are).
    "$BL" --slots 2 -r "$R_URL" "$K" sh -c "$GATE_WAIT" "$T/gate" \
        </dev/null >/dev/null 2>&1 3>&- &
    track_pid $!
    for ((i = 0; i < 500; i++)); do
        [[ $(bl status --slots 2 -r "$R_URL" "$K") == held* ]] && break
        sleep 0.01
    done
    run --separate-stderr bl status --slots 2 -r "$R_URL" "$K"
    assert_failure 75
    assert_output --regexp '^held slots=2/2 pid=[0-9]+$'
    local start
    start=$(date +%s%N)
    (sleep 0.5; : >"$T/gate") 3>&- &
    run --separate-stderr bl --slots 2 -r "$R_URL" -w 5 "$K" sh -c 'echo "$BUFFERLOCK_SLOT"'
    assert_success
    assert_output 1
    # woken by the release's wake-up list, not by a back-off that grew meanwhile
    (( ($(date +%s%N) - start) / 1000000 < 1000 + $(slack_ms 500) ))
}

@test "redis: --slots 1 gives BUFFERLOCK_SLOT=0; without --slots it is unset" {
    start_redis_as R
    run --separate-stderr bl --slots 1 -r "$R_URL" "$K" sh -c 'echo "${BUFFERLOCK_SLOT-unset} $BUFFERLOCK_REDIS_KEY"'
    assert_success
    assert_output "0 $(redis_key "$K")"
    run --separate-stderr bl -r "$R_URL" "$K" sh -c 'echo "${BUFFERLOCK_SLOT-unset}"'
    assert_success
    assert_output unset
}

# --- redis quorum (SPEC §13) --------------------------------------------------

# start_trio: three servers of this test (Q1, Q2, Q3), in QUORUM.
start_trio() {
    start_redis_as Q1 && start_redis_as Q2 && start_redis_as Q3 || fail "cannot start servers"
    QUORUM=(-r "$Q1_URL" -r "$Q2_URL" -r "$Q3_URL")
}

@test "quorum: 6 workers on --slots 2 over 3 servers: never more than 2 run at once, and 2 do" {
    start_trio
    assert_slots_limit 2 6 "${QUORUM[@]}"
    # no slot key or holder record is left behind (fence counters and wake lists are no locks)
    local n
    for n in Q1 Q2 Q3; do
        assert_equal "$(rcli_to "$n" --scan --pattern '*' | grep -Evc ':(fence|wake)$')" 0
    done
}

@test "quorum: a slot is held on a majority: its key on 2 of 3, one server's other holder does not count" {
    start_trio
    local rk
    rk=$(redis_key "$K")
    # slot 0 taken on Q1 only: still free on the majority Q2, Q3
    rcli_to Q1 SET "$rk" foreign PX 30000 >/dev/null
    run --separate-stderr bl --slots 2 "${QUORUM[@]}" "$K" sh -c \
        'echo "$BUFFERLOCK_SLOT ${BUFFERLOCK_FENCE-unset} $BUFFERLOCK_REDIS_KEY"; redis-cli -p "$0" GET "$BUFFERLOCK_REDIS_KEY"' \
        "$Q2_PORT"
    assert_success
    assert_stderr_empty
    assert_equal "${lines[0]}" "0 unset $rk"
    [[ ${lines[1]} =~ ^[0-9a-f]{32}$ ]] || fail "Q2 did not hold the token: ${lines[1]}"
    # no majority grants one slot at first (Q1: 1, Q2: 0, Q3: 2): slot 2 is free on all
    rcli_to Q2 SET "{$rk}:slot:1" foreign PX 30000 >/dev/null
    rcli_to Q3 SET "$rk" foreign PX 30000 >/dev/null
    rcli_to Q3 SET "{$rk}:slot:1" foreign PX 30000 >/dev/null
    run --separate-stderr bl --slots 3 "${QUORUM[@]}" "$K" sh -c 'echo "$BUFFERLOCK_SLOT"'
    assert_success
    assert_output 2
    run --separate-stderr bl status --slots 3 "${QUORUM[@]}" "$K"
    assert_success
    assert_output "free slots=2/3"
    # two slots: both taken on a majority, busy; and the attempt took nothing
    run --separate-stderr bl --slots 2 -n "${QUORUM[@]}" "$K" echo ran
    assert_failure 75
    refute_output ran
    assert_equal "$(rcli_to Q2 EXISTS "$rk")" 0
    assert_equal "$(rcli_to Q1 EXISTS "{$rk}:slot:1")" 0
}

@test "quorum: --slots with one of 3 servers stopped still works, and waits" {
    start_trio
    kill_redis Q2
    # the holders keep their slots until the test lets them go (a slow run
    # cannot see them end early)
    local h
    for h in a b; do
        "$BL" --slots 2 "${QUORUM[@]}" "$K" sh -c 'echo "$BUFFERLOCK_SLOT" > "$1"; '"$GATE_WAIT" "$T/go" "$T/$h" \
            </dev/null >/dev/null 2>"$T/$h.err" &
        track_pid $!
        wait_for_file "$T/$h" 5 || fail "no slot for $h: $(cat "$T/$h.err")"
    done
    assert_equal "$(cat "$T/a" "$T/b" | sort | tr '\n' ' ')" "0 1 "
    run --separate-stderr bl status --slots 2 "${QUORUM[@]}" "$K"
    assert_failure 75
    assert_output --regexp '^held slots=2/2 pid=[0-9]+,[0-9]+$'
    run --separate-stderr bl --slots 2 -n "${QUORUM[@]}" "$K" true
    assert_failure 75
    # a waiter gets the first slot freed
    BG_OUT=$T/w.out BG_ERR=$T/w.err bl_bg --slots 2 -w 10 "${QUORUM[@]}" "$K" sh -c 'echo "$BUFFERLOCK_SLOT"'
    sleep 0.5
    pid_alive "$BG_PID" || fail "the waiter did not wait: $(cat "$T/w.out" "$T/w.err")"
    touch "$T/go"
    wait_for_exit "$BG_PID" 10 || fail "the waiter still waits"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    [[ $(cat "$T/w.out") =~ ^[01]$ ]] || fail "slot: $(cat "$T/w.out" "$T/w.err")"
}

@test "quorum: status --slots N counts a slot taken on a majority" {
    start_trio
    local rk
    rk=$(redis_key "$K")
    run --separate-stderr bl status --slots 2 "${QUORUM[@]}" "$K"
    assert_success
    assert_output "free slots=0/2"
    # slot 1 on 1 of 3: not taken; slot 0 on 2 of 3 (two foreign values): taken
    rcli_to Q1 SET "{$rk}:slot:1" x PX 30000 >/dev/null
    rcli_to Q1 SET "$rk" x PX 30000 >/dev/null
    rcli_to Q3 SET "$rk" y PX 30000 >/dev/null
    run --separate-stderr bl status --slots 2 "${QUORUM[@]}" "$K"
    assert_success
    assert_output "free slots=1/2"
    rcli_to Q2 SET "{$rk}:slot:1" z PX 30000 >/dev/null
    run --separate-stderr bl status --slots 2 "${QUORUM[@]}" "$K"
    assert_failure 75
    assert_output "held slots=2/2"
}

@test "quorum: --slots 1 gives BUFFERLOCK_SLOT=0" {
    start_trio
    run --separate-stderr bl --slots 1 "${QUORUM[@]}" "$K" sh -c 'echo "${BUFFERLOCK_SLOT-unset}"'
    assert_success
    assert_stderr_empty
    assert_output 0
}
