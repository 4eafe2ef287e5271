#!/usr/bin/env bats
# Redis backend: a server that refuses, never answers, pauses, is read-only,
# out of memory, restarts or dies -- every case bounded in time.

load redis_helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() { redis_setup; }
teardown() { redis_teardown; }

# Short timeouts so that every failure is quick.
TO=(--connect-timeout 0.5 --io-timeout 0.5)

# assert_fast [LIMIT_MS]: the last bl_timed took less than LIMIT_MS (default
# 5000; times TIME_SCALE: the point is that the timeouts bound the wait).
assert_fast() {
    local limit=$((${1:-5000} * TIME_SCALE))
    ((MS < limit)) || fail "took $MS ms, expected less than $limit ms"
}

# bl_timed_against_base ARGS...: bl_timed ARGS... against the frozen PRIV
# server, after the same run against it still answering (BASE_MS: start-up
# and round trips on this build and this machine's load now). PRIV must be
# running and answering.
bl_timed_against_base() {
    bl_timed "$@"
    assert_success
    BASE_MS=$MS
    freeze_redis PRIV
    bl_timed "$@"
}

@test "faults: a refused connection gives 69, one line naming 127.0.0.1:PORT" {
    local port
    port=$(free_port)
    bl_timed -r "redis://127.0.0.1:$port/0" "${TO[@]}" "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$port" "Connection refused"
    assert_file_not_exists "$T/ran"
    assert_fast 3000
}

@test "faults: a stopped server (SIGSTOP) gives 69 'no answer' within the timeouts" {
    start_redis_as PRIV
    freeze_redis PRIV
    bl_timed -r "$PRIV_URL" "${TO[@]}" "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$PRIV_PORT" "no answer"
    assert_file_not_exists "$T/ran"
    assert_fast 4000
}

@test "faults: the default timeouts (1 s) bound a stopped server too" {
    start_redis_as PRIV
    freeze_redis PRIV
    bl_timed -r "$PRIV_URL" "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line "no answer"
    ((MS >= 800)) || fail "gave up after only $MS ms (default io-timeout is 1 s)"
    assert_fast 5000
}

@test "faults: fractional timeouts (0.2) are honoured" {
    start_redis_as PRIV
    # One io timeout of 0.2 s, not the default 1 s: halfway, 0.6 s over the
    # same run against an answering server.
    bl_timed_against_base -r "$PRIV_URL" --connect-timeout 0.2 --io-timeout 0.2 "$K" true
    assert_failure 69
    assert_one_bufferlock_line "no answer"
    ((MS < BASE_MS + 600)) || fail "took $MS ms (answering: $BASE_MS ms)"
}

@test "faults: BUFFERLOCK_CONNECT_TIMEOUT / BUFFERLOCK_IO_TIMEOUT bound a stopped server" {
    start_redis_as PRIV
    BUFFERLOCK_CONNECT_TIMEOUT=0.2 BUFFERLOCK_IO_TIMEOUT=0.2 bl_timed_against_base -r "$PRIV_URL" "$K" true
    assert_failure 69
    assert_one_bufferlock_line "no answer"
    ((MS < BASE_MS + 600)) || fail "took $MS ms (answering: $BASE_MS ms)"
}

@test "faults: CLIENT PAUSE gives 69 within the timeouts" {
    start_redis_as PRIV
    pause_redis_clients PRIV 5000 >/dev/null
    bl_timed -r "$PRIV_URL" "${TO[@]}" "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$PRIV_PORT"
    assert_file_not_exists "$T/ran"
    assert_fast 4000
}

@test "faults: a read-only replica gives 69 with READONLY" {
    start_redis_as MASTER
    start_replica_as REPL "$MASTER_PORT"
    bl_timed -r "$REPL_URL" "${TO[@]}" "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$REPL_PORT" READONLY
    assert_file_not_exists "$T/ran"
    assert_fast
    assert_equal "$(rcli_to MASTER DBSIZE)" 0
}

@test "faults: an out-of-memory server (maxmemory 1, noeviction) gives 69 with OOM" {
    start_redis_as PRIV --maxmemory-policy noeviction
    rcli_to PRIV SET filler "$(printf '%01000d' 0)" >/dev/null
    assert_equal "$(rcli_to PRIV CONFIG SET maxmemory 1)" OK
    bl_timed -r "$PRIV_URL" "${TO[@]}" "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$PRIV_PORT" OOM
    assert_file_not_exists "$T/ran"
    assert_fast
    assert_equal "$(rcli_to PRIV EXISTS "$(redis_key "$K")")" 0
}

@test "faults: a database out of range gives 69" {
    bl_timed -r "redis://127.0.0.1:$REDIS_PORT/99" "${TO[@]}" "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$REDIS_PORT/99" "database"
    assert_file_not_exists "$T/ran"
    assert_fast
}

@test "faults: --error-exit N changes the error status" {
    local port
    port=$(free_port)
    bl_timed -r "redis://127.0.0.1:$port/0" "${TO[@]}" --error-exit 3 "$K" touch "$T/ran"
    assert_failure 3
    assert_one_bufferlock_line "127.0.0.1:$port"
    bl_timed -r "redis://127.0.0.1:$port/0" "${TO[@]}" --error-exit 0 "$K" touch "$T/ran"
    assert_success
    assert_file_not_exists "$T/ran"
}

@test "faults: --fail-open warns once, runs the command and returns its status" {
    local port
    port=$(free_port)
    bl_timed -r "redis://127.0.0.1:$port/0" "${TO[@]}" --fail-open "$K" sh -c 'echo ran; echo "${BUFFERLOCK_TOKEN:-notoken}"; exit 5'
    assert_failure 5
    assert_equal "${lines[0]}" ran
    assert_one_bufferlock_line "127.0.0.1:$port"
    assert_fast
}

@test "faults: --fail-open with a stopped server is bounded too" {
    start_redis_as PRIV
    freeze_redis PRIV
    bl_timed -r "$PRIV_URL" "${TO[@]}" --fail-open "$K" echo ran
    assert_success
    assert_output ran
    assert_one_bufferlock_line
    assert_fast
}

@test "faults: --fail-open -q runs the command without a warning" {
    local port
    port=$(free_port)
    run --separate-stderr bl -q -r "redis://127.0.0.1:$port/0" "${TO[@]}" --fail-open "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
}

@test "faults: --fail-open does not override busy" {
    rcli SET "$(redis_key "$K")" sometoken PX 60000 >/dev/null
    run --separate-stderr bl -r "$REDIS_URL" --fail-open "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
}

@test "faults: a server restarted mid-hold: lost-lock warning, the command completes" {
    start_redis_as PRIV
    local rk
    rk=$(redis_key "$K")
    bl_bg -r "$PRIV_URL" "${TO[@]}" --ttl 1 "$K" sh -c 'echo x > "$0.started"; sleep 3; echo done > "$0.done"; exit 4' "$T/c"
    wait_for_file "$T/c.started" 10 || fail "the command did not start"
    assert_equal "$(rcli_to PRIV EXISTS "$rk")" 1
    restart_redis PRIV
    assert_equal "$(rcli_to PRIV EXISTS "$rk")" 0
    wait_for_exit "$BG_PID" 15 || fail "bufferlock did not exit"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 4
    assert_file_exists "$T/c.done"
    local err n
    err=$(cat "$T/bg.err")
    n=$(grep -c 'lost the lock' <<<"$err" || true)
    [[ $n == 1 ]] || fail "expected one 'lost the lock' line, got: $err"
    ! grep -qv '^bufferlock: ' <<<"$err" || fail "stray stderr lines: $err"
    # the lock was not recreated after it was lost
    assert_equal "$(rcli_to PRIV EXISTS "$rk")" 0
}

@test "faults: server killed while the command runs: 'cannot release' warning, command's status" {
    start_redis_as PRIV
    bl_bg -r "$PRIV_URL" "${TO[@]}" "$K" sh -c 'echo x > "$0.started"; sleep 1.5; exit 6' "$T/c"
    wait_for_file "$T/c.started" 10 || fail "the command did not start"
    kill_redis PRIV
    local t0
    t0=$(now_us)
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not exit"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 6
    local err
    err=$(cat "$T/bg.err")
    [[ $err == 'bufferlock: '* && $err != *$'\n'* ]] || fail "expected one line, got: $err"
    [[ $err == *"cannot release"* ]] || fail "stderr: $err"
    (($(elapsed_ms "$t0") < 5000)) || fail "release took too long"
}

@test "faults: server stopped while the command runs: release gives up within the timeouts" {
    start_redis_as PRIV
    bl_bg -r "$PRIV_URL" "${TO[@]}" "$K" sh -c 'echo x > "$0.started"; sleep 0.5; date +%s%N > "$0.end"; exit 2' "$T/c"
    wait_for_file "$T/c.started" 10 || fail "the command did not start"
    freeze_redis PRIV
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not exit"
    local t_exit
    t_exit=$(date +%s%N)
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 2
    local ms=$(((t_exit - $(cat "$T/c.end")) / 1000000))
    ((ms < 4000)) || fail "release took $ms ms with a stopped server"
    grep -q 'cannot release' "$T/bg.err" || fail "stderr: $(cat "$T/bg.err")"
}

@test "faults: NOSCRIPT: SCRIPT FLUSH before a run still works (EVAL fallback)" {
    local rk
    rk=$(redis_key "$K")
    run --separate-stderr bl -r "$REDIS_URL" "$K" true
    assert_success
    assert_equal "$(rcli SCRIPT FLUSH)" OK
    run --separate-stderr bl -r "$REDIS_URL" "$K" sh -c 'redis-cli -p "$0" GET "$BUFFERLOCK_REDIS_KEY"' "$REDIS_PORT"
    assert_success
    assert_regex "$output" '^[0-9a-f]{32}$'
    assert_stderr_empty
    assert_equal "$(rcli EXISTS "$rk")" 0
}

@test "faults: NOSCRIPT mid-run: renewal and release still work after SCRIPT FLUSH" {
    local rk
    rk=$(redis_key "$K")
    run --separate-stderr bl -r "$REDIS_URL" --ttl 0.6 "$K" sh -c \
        'redis-cli -p "$0" SCRIPT FLUSH >/dev/null; sleep 1.2; redis-cli -p "$0" GET "$BUFFERLOCK_REDIS_KEY"; echo "$BUFFERLOCK_TOKEN"' "$REDIS_PORT"
    assert_success
    assert_stderr_empty
    assert_equal "${#lines[@]}" 2
    assert_equal "${lines[0]}" "${lines[1]}"
    assert_equal "$(rcli EXISTS "$rk")" 0
}

@test "faults: a release after the lock expired and was taken by another holder leaves it alone" {
    local rk
    rk=$(redis_key "$K")
    # the command replaces the key itself (as another holder would after an expiry)
    run --separate-stderr bl -r "$REDIS_URL" "$K" sh -c 'redis-cli -p "$0" SET "$BUFFERLOCK_REDIS_KEY" othertoken PX 60000 >/dev/null' "$REDIS_PORT"
    assert_success
    assert_equal "$(rcli GET "$rk")" othertoken
}
