#!/usr/bin/env bats
# Fences and holder records, file and Redis backends (SPEC §14).

load redis_helpers

# The Redis cases start a private server each (stopped by PID in teardown).
teardown() { redis_teardown; }

# assert_increasing FILE COUNT: FILE has COUNT lines of strictly increasing numbers.
assert_increasing() {
    local n
    n=$(wc -l <"$1")
    assert_equal "$n" "$2"
    run awk 'NR > 1 && !($1 > prev) { print "line " NR ": " $1 " after " prev; bad = 1 }
             { prev = $1 } END { exit bad }' "$1"
    assert_success
}

@test "every exclusive acquisition gets a greater fence, with exec and with --close" {
    local i
    for i in 1 2 3; do
        bl -d "$D" "$K" sh -c 'echo "$BUFFERLOCK_FENCE"' >>"$T/fences"
        bl -o -d "$D" "$K" sh -c 'echo "$BUFFERLOCK_FENCE"' >>"$T/fences"
    done
    assert_equal "$(tr '\n' ' ' <"$T/fences")" "1 2 3 4 5 6 "
}

@test "a shared lock gets no fence and writes no record" {
    bl -d "$D" "$K" true
    run --separate-stderr bl -s -d "$D" "$K" sh -c 'echo "fence=${BUFFERLOCK_FENCE-unset}"'
    assert_success
    assert_output "fence=unset"
    run bl -d "$D" "$K" sh -c 'echo "$BUFFERLOCK_FENCE"'
    assert_output 2
}

@test "fences keep increasing over 200 acquisitions with holders killed at random" {
    local i pid n=0 fences=$T/fences
    : >"$fences"
    for ((i = 1; i <= 200; i++)); do
        if ((RANDOM % 4 == 0)); then
            # a holder that dies by SIGKILL while it holds the lock
            "$BL" -d "$D" -w 10 "$K" sh -c "echo \"\$BUFFERLOCK_FENCE\" >>'$fences'; exec sleep 30" &
            pid=$!
            track_pid "$pid"
            n=$((n + 1))
            for ((j = 0; j < 500; j++)); do
                (($(wc -l <"$fences") == i)) && break
                sleep 0.02
            done
            kill -KILL "$pid"
            wait "$pid" 2>/dev/null || true
        else
            bl -d "$D" -w 10 "$K" sh -c "echo \"\$BUFFERLOCK_FENCE\" >>'$fences'"
        fi
    done
    ((n > 10)) || skip "only $n holders killed"
    assert_increasing "$fences" 200
    assert_equal "$(tail -n 1 "$fences")" 200
}

@test "status and a busy -v show pid, since and fence while bufferlock holds the lock" {
    bl -d "$D" "$K" true
    bl_hold_lock "$D" "$K"
    run --separate-stderr bl status -d "$D" "$K"
    assert_failure 75
    assert_output --regexp "^held pid=$HOLDER_PID since=[0-9]+\.[0-9]{3} fence=2\$"
    run --separate-stderr bl -v -d "$D" "$K" true
    assert_failure 75
    assert_regex "$stderr" "held by pid $HOLDER_PID since=[0-9]+\.[0-9]{3} fence=2\)\$"
}

@test "flock(1) interop: it cannot take a lock we hold; a lock it holds shows no record" {
    bl -d "$D" "$K" true # leaves a record of a holder that is gone
    bl_hold_lock "$D" "$K"
    run flock -n "$(lock_path "$D" "$K")" true
    assert_failure 1
    release_lock
    hold_lock "$D" "$K"
    run --separate-stderr bl status -d "$D" "$K"
    assert_failure 75
    assert_output "held pid=$HOLDER_PID"
    release_lock
    # and the fence goes on after flock(1) used the file
    run bl -d "$D" "$K" sh -c 'echo "$BUFFERLOCK_FENCE"'
    assert_output 3
}

@test "the record does not leak into the command's environment of a nested run" {
    run bl -d "$D" "$K" sh -c "'$BL' -d '$D' other sh -c 'echo \"\$BUFFERLOCK_FENCE \${BUFFERLOCK_SLOT-unset}\"'"
    assert_success
    assert_output "1 unset"
}

@test "a cache build's lock carries a record and a fence too" {
    local cache=$T/cache
    "$BL" cache --cache-dir "$cache" "$K" sleep 300 </dev/null >/dev/null 2>&1 3>&- &
    HOLDER_PID=$!
    track_pid "$HOLDER_PID"
    wait_until_held "$cache/locks" "$K" "$HOLDER_PID"
    run --separate-stderr bl status -d "$cache/locks" "$K"
    assert_failure 75
    assert_output --regexp "^held pid=$HOLDER_PID since=[0-9]+\.[0-9]{3} fence=1\$"
}

# --- redis --------------------------------------------------------------------

@test "redis: fences keep increasing over 60 acquisitions with holders killed at random" {
    start_redis_as R
    local i j pid n=0 fences=$T/fences
    : >"$fences"
    for ((i = 1; i <= 60; i++)); do
        if ((RANDOM % 4 == 0)); then
            # a holder killed by SIGKILL: its lock expires with the TTL
            "$BL" -r "$R_URL" --ttl 0.2 -w 10 "$K" sh -c "echo \"\$BUFFERLOCK_FENCE\" >>'$fences'; exec sleep 30" &
            pid=$!
            track_pid "$pid"
            n=$((n + 1))
            for ((j = 0; j < 1000; j++)); do
                (($(wc -l <"$fences") == i)) && break
                sleep 0.01
            done
            kill -KILL "$pid"
            wait "$pid" 2>/dev/null || true
        else
            bl -r "$R_URL" --ttl 0.2 -w 10 "$K" sh -c "echo \"\$BUFFERLOCK_FENCE\" >>'$fences'"
        fi
    done
    ((n > 3)) || skip "only $n holders killed"
    assert_increasing "$fences" 60
    # the counter holds the last fence given, and expires a day after it
    assert_equal "$(rcli_to R GET "{$(redis_key "$K")}:fence")" "$(tail -n 1 "$fences")"
    assert_fence_counter_ttl R "$K" 86400000
}

# assert_fence_counter_ttl NAME KEY MS: KEY's fence counter on server NAME
# expires within MS milliseconds and not much sooner (set by the last run).
assert_fence_counter_ttl() {
    local ttl
    ttl=$(rcli_to "$1" PTTL "{$(redis_key "$2")}:fence")
    ((ttl > $3 - 600000 && ttl <= $3)) || fail "the fence counter's PTTL is $ttl, not about $3"
}

# redis_fence ARGS...: the fence a run of KEY with ARGS gets.
redis_fence() {
    run --separate-stderr bl "$@" "$K" sh -c 'echo "$BUFFERLOCK_FENCE"'
    assert_success
    assert_stderr_empty
    assert_regex "$output" '^[0-9]+$'
}

@test "redis: a fence counter that is gone, deleted or expired, starts again above every fence it gave" {
    start_redis_as R
    local counter f1 f2 f3 f4
    counter="{$(redis_key "$K")}:fence"
    redis_fence -r "$R_URL"
    f1=$output
    # the server's clock in ms is the floor: a fresh counter starts from it
    ((f1 > $(rcli_to R TIME | head -n 1) * 1000 - 60000)) || fail "fence $f1: not from the server's clock"
    assert_fence_counter_ttl R "$K" 86400000
    rcli_to R DEL "$counter" >/dev/null
    redis_fence -r "$R_URL"
    f2=$output
    ((f2 > f1)) || fail "after DEL: fence $f2 after $f1"
    rcli_to R PEXPIRE "$counter" 20 >/dev/null
    sleep 0.1
    assert_equal "$(rcli_to R EXISTS "$counter")" 0
    redis_fence -r "$R_URL"
    f3=$output
    ((f3 > f2)) || fail "after the counter expired: fence $f3 after $f2"
    # a counter ahead of the clock (acquisitions faster than one a
    # millisecond) goes on counting from itself
    rcli_to R SET "$counter" $((f3 + 100000)) >/dev/null
    redis_fence -r "$R_URL"
    f4=$output
    assert_equal "$f4" $((f3 + 100001))
    # the counter outlives a lock whose TTL is longer than a day
    redis_fence -r "$R_URL" --ttl 48h
    ((output > f4)) || fail "fence $output after $f4"
    assert_fence_counter_ttl R "$K" 172800000
}

@test "redis: status and a busy -v show ttl, pid, host, since and fence; a foreign holder only ttl" {
    start_redis_as R
    redis_fence -r "$R_URL"
    local first=$output
    "$BL" -r "$R_URL" "$K" sh -c "echo \"\$BUFFERLOCK_FENCE\" >'$T/f'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    local holder=$!
    track_pid "$holder"
    wait_for_file "$T/f" 10 || fail "the holder did not start"
    local fence
    fence=$(cat "$T/f")
    ((fence > first)) || fail "fence $fence after $first"
    local fields="ttl=[0-9]+\.[0-9]{3} pid=$holder host=$(hostname) since=[0-9]+\.[0-9]{3} fence=$fence"
    run --separate-stderr bl status -r "$R_URL" "$K"
    assert_failure 75
    assert_output --regexp "^held $fields\$"
    run --separate-stderr bl -v -n -r "$R_URL" "$K" true
    assert_failure 75
    assert_regex "$stderr" "$fields\)\$"
    kill "$holder"
    wait "$holder" 2>/dev/null || true
    assert_equal "$(rcli_to R EXISTS "{$(redis_key "$K")}:holder")" 0
    rcli_to R SET "$(redis_key "$K")" x PX 30000 >/dev/null
    run --separate-stderr bl status -r "$R_URL" "$K"
    assert_failure 75
    assert_output --regexp '^held ttl=[0-9]+\.[0-9]{3}$'
}

@test "redis: a quorum lock gets no fence, with --slots too" {
    start_redis_as Q1
    start_redis_as Q2
    start_redis_as Q3
    run --separate-stderr bl -r "$Q1_URL" -r "$Q2_URL" -r "$Q3_URL" "$K" sh -c 'echo "fence=${BUFFERLOCK_FENCE-unset}"'
    assert_success
    assert_output "fence=unset"
    run --separate-stderr bl --slots 2 -r "$Q1_URL" -r "$Q2_URL" -r "$Q3_URL" "$K" sh -c \
        'echo "fence=${BUFFERLOCK_FENCE-unset} slot=$BUFFERLOCK_SLOT"'
    assert_success
    assert_output "fence=unset slot=0"
}
