#!/usr/bin/env bats
# Redis backend: --wait (polling, wake-ups, errors while waiting), mutual
# exclusion under contention, and the acquire/release/extend/status subcommands.

load redis_helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() { redis_setup; }
teardown() { redis_teardown; }

# --- waiting -----------------------------------------------------------------------

@test "wait: -w 0.5 on a held lock gives 75 after about 0.5 s" {
    rcli SET "$(redis_key "$K")" sometoken PX 60000 >/dev/null
    local t0 ms
    t0=$(now_us)
    run --separate-stderr bl -r "$REDIS_URL" -w 0.5 "$K" touch "$T/ran"
    ms=$(elapsed_ms "$t0")
    assert_failure 75
    assert_output ""
    assert_stderr_empty
    assert_file_not_exists "$T/ran"
    assert_elapsed_between "$ms" 450 2500
    assert_equal "$(rcli GET "$(redis_key "$K")")" sometoken
}

@test "wait: -w 0 behaves like -n" {
    rcli SET "$(redis_key "$K")" sometoken PX 60000 >/dev/null
    local t0 ms
    t0=$(now_us)
    run --separate-stderr bl -r "$REDIS_URL" -w 0 -E 4 "$K" touch "$T/ran"
    ms=$(elapsed_ms "$t0")
    assert_failure 4
    assert_file_not_exists "$T/ran"
    ((ms < $(slack_ms 1500))) || fail "-w 0 took $ms ms"
}

@test "wait: a waiter gets the lock promptly when a bufferlock holder releases" {
    local t0 ms
    t0=$(now_us)
    BG_OUT=$T/holder.out BG_ERR=$T/holder.err \
        bl_bg -r "$REDIS_URL" "$K" sh -c 'echo x > "$0.started"; sleep 1; date +%s%N > "$0"' "$T/holder_end"
    local holder=$BG_PID
    wait_for_file "$T/holder_end.started" 5 || fail "the holder did not start"
    while (($(elapsed_ms "$t0") < 200)); do sleep 0.02; done
    local tw
    tw=$(now_us)
    run --separate-stderr bl -r "$REDIS_URL" -w 10 "$K" sh -c 'date +%s%N > "$0"' "$T/waiter_start"
    ms=$(elapsed_ms "$tw")
    assert_success
    assert_stderr_empty
    wait_for_exit "$holder" 5
    reap "$holder"
    assert_equal "$REAPED_STATUS" 0
    local gap
    gap=$((($(cat "$T/waiter_start") - $(cat "$T/holder_end")) / 1000000))
    ((gap >= 0)) || fail "the waiter's command started ${gap} ms before the holder's ended"
    ((gap < $(slack_ms 700))) || fail "the waiter's command started ${gap} ms after the holder's ended"
    ((ms >= 400 && ms < 800 + $(slack_ms 1000))) || fail "the waiter took $ms ms (holder held ~0.8 s more)"
}

@test "wait: a release wakes a waiter at once, not at its next poll (--step 3)" {
    BG_OUT=$T/holder.out BG_ERR=$T/holder.err \
        bl_bg -r "$REDIS_URL" "$K" sh -c 'echo x > "$0.started"; sleep 1; date +%s%N > "$0"' "$T/holder_end"
    local holder=$BG_PID
    wait_for_file "$T/holder_end.started" 5 || fail "the holder did not start"
    local tw ms
    tw=$(now_us)
    # Without a wake-up the waiter would sleep ~3 s (jitter aside) before retrying.
    run --separate-stderr bl -r "$REDIS_URL" -w 10 --step 3 --max-step 3 "$K" sh -c 'date +%s%N > "$0"' "$T/waiter_start"
    ms=$(elapsed_ms "$tw")
    assert_success
    wait_for_exit "$holder" 5
    reap "$holder"
    local gap
    gap=$((($(cat "$T/waiter_start") - $(cat "$T/holder_end")) / 1000000))
    # (Room for load below the ~3 s a missed wake-up costs, also for the
    # sanitizer build.)
    ((gap >= 0 && gap < $(slack_ms 800))) || fail "the waiter's command started ${gap} ms after the holder's ended"
    ((ms < 1000 + $(slack_ms 900))) || fail "the waiter took $ms ms"
}

@test "wait: a lock that expires by its TTL is taken by polling" {
    local rk t0 ms
    rk=$(redis_key "$K")
    rcli SET "$rk" sometoken PX 700 >/dev/null
    t0=$(now_us)
    run --separate-stderr bl -r "$REDIS_URL" -w 5 "$K" sh -c 'echo ran; echo "$BUFFERLOCK_TOKEN"'
    ms=$(elapsed_ms "$t0")
    assert_success
    assert_equal "${lines[0]}" ran
    assert_stderr_empty
    assert_elapsed_between "$ms" 600 2200
    assert_equal "$(rcli EXISTS "$rk")" 0
}

@test "wait: -w inf waits for an expiring lock" {
    rcli SET "$(redis_key "$K")" sometoken PX 400 >/dev/null
    run --separate-stderr bl -r "$REDIS_URL" -w inf "$K" echo ran
    assert_success
    assert_output ran
}

@test "wait: 4 workers x 25 runs with -w inf keep a read-modify-write counter exact" {
    echo 0 >"$T/counter"
    local w pids=()
    for w in 1 2 3 4; do
        (
            for ((i = 0; i < 25; i++)); do
                "$BL" -r "$REDIS_URL" -w inf "$K" sh -c 'n=$(cat "$0"); sleep 0.002; echo $((n + 1)) > "$0"' "$T/counter" ||
                    echo "worker $w run $i: status $?" >>"$T/errors"
            done
        ) </dev/null >/dev/null 2>>"$T/stderr" 3>&- &
        pids+=("$!")
        track_pid "$!"
    done
    for w in "${pids[@]}"; do
        wait_for_exit "$w" 90 || fail "worker $w still running after 90 s"
    done
    assert_file_not_exists "$T/errors"
    assert_equal "$(cat "$T/counter")" 100
    assert_equal "$(cat "$T/stderr")" ""
    assert_equal "$(rcli EXISTS "$(redis_key "$K")")" 0
}

@test "wait: an error while waiting is retried until the deadline, then 69" {
    local port t0 ms
    port=$(free_port)
    t0=$(now_us)
    run --separate-stderr bl -r "redis://127.0.0.1:$port/0" -w 1 "$K" touch "$T/ran"
    ms=$(elapsed_ms "$t0")
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$port" "Connection refused"
    assert_file_not_exists "$T/ran"
    assert_elapsed_between "$ms" 900 4000
}

@test "wait: a server that comes up while waiting is used" {
    local port
    port=$(free_port)
    bl_bg -r "redis://127.0.0.1:$port/0" -w 8 "$K" sh -c 'echo ran > "$0"' "$T/ran"
    sleep 0.5
    pid_alive "$BG_PID" || fail "bufferlock gave up at once on a refused connection under -w"
    # start a server on exactly that port
    local dir
    dir=$(mktemp -d "$T/late.XXXXXX")
    # (Another process may have taken the free port meanwhile: nothing to test then.)
    _redis_spawn "$dir" "$port" "" || skip "port $port was taken by another process meanwhile"
    wait_for_exit "$BG_PID" 8 || fail "bufferlock did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_file_exists "$T/ran"
    assert_equal "$(cat "$T/bg.err")" ""
}

@test "wait: errors first, then a held lock: the wait ends busy (75), not error" {
    start_redis_as PRIV
    rcli_to PRIV SET "$(redis_key "$K")" sometoken PX 60000 >/dev/null
    pause_redis_clients PRIV 700 >/dev/null
    local t0 ms
    t0=$(now_us)
    run --separate-stderr bl -r "$PRIV_URL" --connect-timeout 0.3 --io-timeout 0.3 -w 2 "$K" touch "$T/ran"
    ms=$(elapsed_ms "$t0")
    assert_failure 75
    assert_file_not_exists "$T/ran"
    assert_elapsed_between "$ms" 1800 5000
}

@test "wait: a held lock, then errors: the wait ends with the error status" {
    start_redis_as PRIV
    rcli_to PRIV SET "$(redis_key "$K")" sometoken PX 60000 >/dev/null
    # -w 3: the wait must still run when the server freezes (0.4 s after a
    # start that load may slow).
    bl_bg -r "$PRIV_URL" --connect-timeout 0.3 --io-timeout 0.3 --error-exit 9 -w 3 "$K" touch "$T/ran"
    sleep 0.4
    freeze_redis PRIV
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not give up"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 9
    assert_file_not_exists "$T/ran"
    local err
    err=$(cat "$T/bg.err")
    [[ $err == 'bufferlock: '* && $err != *$'\n'* ]] || fail "stderr: $err"
    [[ $err == *"no answer"* ]] || fail "stderr: $err"
}

# --- acquire / release / extend / status ------------------------------------------------------

@test "status: free (0) and held ttl=N.NNN (75, -E)" {
    local rk
    rk=$(redis_key "$K")
    run --separate-stderr bl status -r "$REDIS_URL" "$K"
    assert_success
    assert_output free
    assert_stderr_empty
    rcli SET "$rk" sometoken PX 30000 >/dev/null
    run --separate-stderr bl status -r "$REDIS_URL" "$K"
    assert_failure 75
    assert_regex "$output" '^held ttl=(2[0-9]|30)\.[0-9]{3}$'
    assert_stderr_empty
    run --separate-stderr bl status -r "$REDIS_URL" -E 3 "$K"
    assert_failure 3
    assert_regex "$output" '^held ttl='
    assert_equal "$(rcli GET "$rk")" sometoken
}

@test "status: a TTL too long for nanoseconds is shown exactly" {
    # Found by the RESP fuzz target: PTTL's milliseconds overflowed in nanoseconds.
    rcli SET "$(redis_key "$K")" sometoken >/dev/null
    rcli PEXPIREAT "$(redis_key "$K")" 9223370000000000000 >/dev/null
    run --separate-stderr bl status -r "$REDIS_URL" "$K"
    assert_failure 75
    assert_regex "$output" '^held ttl=922336[0-9]{10}\.[0-9]{3}$'
    assert_equal "$stderr" ""
}

@test "status: a key without expiry is held ttl=none" {
    rcli SET "$(redis_key "$K")" sometoken >/dev/null
    run --separate-stderr bl status -r "$REDIS_URL" "$K"
    assert_failure 75
    assert_output 'held ttl=none'
    assert_equal "$(rcli PTTL "$(redis_key "$K")")" -1
}

@test "status: honours --namespace and --hash-tag" {
    rcli SET "$(redis_key_tagged "$K" 'ns:')" sometoken PX 30000 >/dev/null
    run --separate-stderr bl status -r "$REDIS_URL" "$K"
    assert_success
    assert_output free
    run --separate-stderr bl status -r "$REDIS_URL" --namespace 'ns:' --hash-tag "$K"
    assert_failure 75
    assert_regex "$output" '^held ttl='
}

@test "status: while bufferlock runs a command" {
    run --separate-stderr bl -r "$REDIS_URL" --ttl 20 "$K" "$BL" status -r "$REDIS_URL" "$K"
    assert_failure 75
    assert_regex "$output" "^held ttl=(19|20)\\.[0-9]{3} pid=[0-9]+ host=$(hostname) since=0\\.[0-9]{3} fence=$(fence_counter REDIS "$K")\$"
}

@test "acquire: prints a 32-hex token, the key holds it with the TTL" {
    local rk
    rk=$(redis_key "$K")
    run --separate-stderr bl acquire -r "$REDIS_URL" "$K"
    assert_success
    assert_regex "$output" '^[0-9a-f]{32}$'
    assert_stderr_empty
    assert_equal "$(rcli GET "$rk")" "$output"
    local pttl
    pttl=$(rcli PTTL "$rk")
    ((pttl > 55000 && pttl <= 60000)) || fail "PTTL $pttl, expected about 60000"
    rcli DEL "$rk" >/dev/null
    run --separate-stderr bl acquire -r "$REDIS_URL" --ttl 5 "$K"
    assert_success
    pttl=$(rcli PTTL "$rk")
    ((pttl > 3000 && pttl <= 5000)) || fail "PTTL $pttl, expected about 5000"
}

@test "acquire: a held lock gives 75 and no token; a run is busy while acquired" {
    run --separate-stderr bl acquire -r "$REDIS_URL" "$K"
    assert_success
    local tok=$output
    run --separate-stderr bl acquire -r "$REDIS_URL" "$K"
    assert_failure 75
    assert_output ""
    run --separate-stderr bl -r "$REDIS_URL" "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
    assert_equal "$(rcli GET "$(redis_key "$K")")" "$tok"
}

@test "acquire: -w waits for an expiring lock" {
    rcli SET "$(redis_key "$K")" sometoken PX 500 >/dev/null
    run --separate-stderr bl acquire -r "$REDIS_URL" -w 5 "$K"
    assert_success
    assert_regex "$output" '^[0-9a-f]{32}$'
}

@test "extend: the right token resets the TTL (0); a wrong token is busy (75)" {
    local rk tok pttl
    rk=$(redis_key "$K")
    run --separate-stderr bl acquire -r "$REDIS_URL" --ttl 30 "$K"
    assert_success
    tok=$output
    run --separate-stderr bl extend -r "$REDIS_URL" --ttl 100 "$K" "$tok"
    assert_success
    assert_output ""
    pttl=$(rcli PTTL "$rk")
    ((pttl > 95000 && pttl <= 100000)) || fail "PTTL $pttl after extend --ttl 100"
    run --separate-stderr bl extend -r "$REDIS_URL" --ttl 3 "$K" 0123456789abcdef0123456789abcdef
    assert_failure 75
    pttl=$(rcli PTTL "$rk")
    ((pttl > 95000)) || fail "a wrong token changed the TTL to $pttl"
    assert_equal "$(rcli GET "$rk")" "$tok"
    # without --ttl: the default 60 s
    run --separate-stderr bl extend -r "$REDIS_URL" "$K" "$tok"
    assert_success
    pttl=$(rcli PTTL "$rk")
    ((pttl > 55000 && pttl <= 60000)) || fail "PTTL $pttl after extend (default ttl)"
}

@test "extend: a lock that is gone gives 75" {
    run --separate-stderr bl extend -r "$REDIS_URL" "$K" 0123456789abcdef0123456789abcdef
    assert_failure 75
    assert_equal "$(rcli EXISTS "$(redis_key "$K")")" 0
}

@test "release: a wrong token gives 0 and the key is kept; the right token deletes it" {
    local rk tok
    rk=$(redis_key "$K")
    run --separate-stderr bl acquire -r "$REDIS_URL" "$K"
    assert_success
    tok=$output
    run --separate-stderr bl release -r "$REDIS_URL" "$K" 0123456789abcdef0123456789abcdef
    assert_success
    assert_equal "$(rcli GET "$rk")" "$tok"
    run --separate-stderr bl release -r "$REDIS_URL" "$K" "$tok"
    assert_success
    assert_output ""
    assert_stderr_empty
    assert_equal "$(rcli EXISTS "$rk")" 0
    # releasing again (already gone) is fine too
    run --separate-stderr bl release -r "$REDIS_URL" "$K" "$tok"
    assert_success
}

@test "release: wakes a waiter at once" {
    run --separate-stderr bl acquire -r "$REDIS_URL" "$K"
    assert_success
    local tok=$output
    bl_bg -r "$REDIS_URL" -w 10 --step 3 --max-step 3 "$K" sh -c 'date +%s%N > "$0"' "$T/waiter_start"
    sleep 0.5
    local tr
    tr=$(date +%s%N)
    run --separate-stderr bl release -r "$REDIS_URL" "$K" "$tok"
    assert_success
    wait_for_exit "$BG_PID" 5 || fail "the waiter did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    local gap=$((($(cat "$T/waiter_start") - tr) / 1000000))
    ((gap < $(slack_ms 800))) || fail "the waiter started ${gap} ms after the release"
}

@test "acquire/release/extend with the file backend are usage errors" {
    run --separate-stderr bl acquire -d "$D" "$K"
    assert_usage_error acquire
    run --separate-stderr bl release -d "$D" "$K" 0123456789abcdef0123456789abcdef
    assert_usage_error release
    run --separate-stderr bl extend -d "$D" "$K" 0123456789abcdef0123456789abcdef
    assert_usage_error extend
}

@test "acquire/release/extend: missing arguments are usage errors" {
    run --separate-stderr bl acquire -r "$REDIS_URL"
    assert_usage_error
    run --separate-stderr bl release -r "$REDIS_URL" "$K"
    assert_usage_error
    run --separate-stderr bl extend -r "$REDIS_URL" "$K"
    assert_usage_error
    assert_equal "$(rcli DBSIZE)" 0
}

@test "acquire/status against an unreachable server give 69" {
    local port
    port=$(free_port)
    run --separate-stderr bl acquire -r "redis://127.0.0.1:$port/0" "$K"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$port"
    run --separate-stderr bl status -r "redis://127.0.0.1:$port/0" "$K"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$port"
}
