#!/usr/bin/env bats
# Redis restarts and failovers (SPEC §7): `--wait inf` rides out what can
# heal and ends at once on what cannot; renewal reconnects at once; a lost
# lock is always reported.

load redis_helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() { redis_setup; }
teardown() { redis_teardown; }

# count_matches TEXT SUBSTRING: how many lines of TEXT contain SUBSTRING.
count_matches() {
    local n=0 line
    while IFS= read -r line; do
        [[ $line == *"$2"* ]] && n=$((n + 1))
    done <<<"$1"
    printf '%s\n' "$n"
}

# assert_all_bufferlock_lines TEXT: every line of TEXT starts with "bufferlock: ".
assert_all_bufferlock_lines() {
    ! grep -qv '^bufferlock: ' <<<"$1" || fail "stray stderr lines: $1"
}

# --- --wait inf: transient errors are retried ---------------------------------------

@test "restart: -w inf against a port where Redis starts 1.5 s later runs, exit 0, one warning" {
    local port
    port=$(free_port)
    bl_bg -r "redis://127.0.0.1:$port/0" -w inf "$K" sh -c 'echo ran > "$0"' "$T/ran"
    sleep 1.5
    pid_alive "$BG_PID" || fail "bufferlock -w inf gave up on a refused connection: $(cat "$T/bg.err")"
    start_redis_at LATE "$port" || skip "port $port was taken by another process meanwhile"
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not finish once Redis was up"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_file_exists "$T/ran"
    local err
    err=$(cat "$T/bg.err")
    [[ $err == 'bufferlock: '* && $err != *$'\n'* ]] || fail "expected exactly one warning, got: $err"
    [[ $err == *"Redis at redis://127.0.0.1:$port/0"* && $err == *"Connection refused"* ]] || fail "stderr: $err"
    [[ $err == *"still trying"* ]] || fail "the warning does not say it keeps trying: $err"
    assert_equal "$(rcli_to LATE EXISTS "$(redis_key "$K")")" 0
}

@test "restart: -q silences the -w inf warning" {
    local port
    port=$(free_port)
    bl_bg -q -r "redis://127.0.0.1:$port/0" -w inf "$K" true
    sleep 0.5
    start_redis_at LATE "$port" || skip "port $port was taken by another process meanwhile"
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not finish once Redis was up"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.err")" ""
}

@test "restart: cache --redis (default wait inf) against Redis starting 1.5 s later builds, one warning" {
    local port
    port=$(free_port)
    bl_bg cache --cache-dir "$T/cache" -r "redis://127.0.0.1:$port/0" "$K" echo built
    sleep 1.5
    pid_alive "$BG_PID" || fail "cache gave up on a refused connection: $(cat "$T/bg.err")"
    start_redis_at LATE "$port" || skip "port $port was taken by another process meanwhile"
    wait_for_exit "$BG_PID" 10 || fail "cache did not finish once Redis was up"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.out")" built
    local err
    err=$(cat "$T/bg.err")
    [[ $err == 'bufferlock: '* && $err != *$'\n'* ]] || fail "expected exactly one warning, got: $err"
    [[ $err == *"Redis at redis://127.0.0.1:$port/0"*"still trying"* ]] || fail "stderr: $err"
}

@test "restart: -w inf waits on a READONLY replica until it is promoted" {
    start_redis_as MASTER
    start_replica_as REPL "$MASTER_PORT"
    bl_bg -r "$REPL_URL" -w inf "$K" sh -c 'echo ran > "$0"' "$T/ran"
    sleep 0.5
    pid_alive "$BG_PID" || fail "bufferlock -w inf gave up on READONLY: $(cat "$T/bg.err")"
    # The failover: the replica becomes a master.
    assert_equal "$(rcli_to REPL REPLICAOF NO ONE)" OK
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not take the lock on the promoted server"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_file_exists "$T/ran"
    [[ $(cat "$T/bg.err") == *READONLY*"still trying"* ]] || fail "stderr: $(cat "$T/bg.err")"
}

# --- errors that waiting cannot mend --------------------------------------------------

# --- --wait inf and a server that never answered: the outage allowance ------------------

# assert_ended_unreached TEXT SECONDS: TEXT (stderr) is the warning that it
# keeps trying for SECONDS (as printed: 2.000), then the error that no answer
# came in SECONDS.
assert_ended_unreached() {
    local err=$1 secs=$2
    assert_all_bufferlock_lines "$err"
    [[ $err == *"still trying, for up to ${secs}s"*"(--outage-allowance)"* ]] || fail "no warning with the allowance: $err"
    [[ $err == *"no answer in ${secs}s of trying (--outage-allowance)"* ]] || fail "no error naming the allowance: $err"
}

@test "restart: cache (wait inf) on a port where no Redis ever answers: 69 after --outage-allowance, naming --fail-open" {
    local port
    port=$(free_port)
    bl_timed cache --cache-dir "$T/cache" -r "redis://127.0.0.1:$port/0" --outage-allowance 2 "$K" -- echo hi
    assert_failure 69
    assert_output ""
    assert_ended_unreached "$stderr" 2.000
    [[ $stderr == *"Redis at redis://127.0.0.1:$port/0"*"--fail-open would build without the lock"* ]] ||
        fail "the error does not name --fail-open: $stderr"
    assert_elapsed_between "$MS" 1900 15000
    # --fail-open is the way on: it builds at the first error
    run --separate-stderr bl cache --cache-dir "$T/cache" -r "redis://127.0.0.1:$port/0" --fail-open "$K" -- echo hi
    assert_success
    assert_output hi
}

@test "restart: run, acquire and release -w inf, and a quorum, on servers that never answer end after the allowance" {
    local port url
    port=$(free_port)
    url="redis://127.0.0.1:$port/0"
    bl_timed -r "$url" -w inf --outage-allowance 1.5 "$K" touch "$T/ran"
    assert_failure 69
    assert_file_not_exists "$T/ran"
    assert_ended_unreached "$stderr" 1.500
    [[ $stderr != *"--fail-open"* ]] || fail "a run's error talks of a build: $stderr"
    assert_elapsed_between "$MS" 1400 15000
    # the variable sets it too
    BUFFERLOCK_OUTAGE_ALLOWANCE=1 bl_timed acquire -r "$url" -w inf "$K"
    assert_failure 69
    assert_output ""
    assert_ended_unreached "$stderr" 1.000
    assert_elapsed_between "$MS" 900 15000
    BUFFERLOCK_OUTAGE_ALLOWANCE=1 bl_timed release -r "$url" -w inf "$K" 0123456789abcdef0123456789abcdef
    assert_failure 69
    [[ $stderr == *"cannot release the lock"*"no answer in 1.000s"* ]] || fail "release stderr: $stderr"
    assert_elapsed_between "$MS" 900 15000
    # a quorum of three of which only one answers: no majority ever answered
    start_redis_as ONE
    bl_timed -r "$ONE_URL" -r "redis://127.0.0.1:$(free_port)/0" -r "$url" -w inf --outage-allowance 1 "$K" \
        touch "$T/ran"
    assert_failure 69
    assert_file_not_exists "$T/ran"
    assert_ended_unreached "$stderr" 1.000
    assert_elapsed_between "$MS" 900 15000
}

@test "restart: without the option the allowance is 30 s: still waiting after 3 s, and the warning says so" {
    local port
    port=$(free_port)
    bl_bg -r "redis://127.0.0.1:$port/0" -w inf "$K" touch "$T/ran"
    sleep 3
    pid_alive "$BG_PID" || fail "bufferlock -w inf gave up before the default allowance: $(cat "$T/bg.err")"
    [[ $(cat "$T/bg.err") == *"still trying, for up to 30.000s"* ]] || fail "stderr: $(cat "$T/bg.err")"
    kill -TERM "$BG_PID"
    wait_for_exit "$BG_PID" 5 || fail "bufferlock did not end on SIGTERM"
    assert_file_not_exists "$T/ran"
}

@test "restart: a server that answered once is ridden out for longer than the allowance" {
    start_redis_as PRIV
    # the waiter meets a held lock first: the server has answered it
    run --separate-stderr bl acquire -r "$PRIV_URL" --ttl 60 "$K"
    assert_success
    bl_bg -r "$PRIV_URL" -w inf --outage-allowance 1 "$K" sh -c 'echo ran > "$0"' "$T/ran"
    sleep 0.5
    pid_alive "$BG_PID" || fail "the waiter ended: $(cat "$T/bg.err")"
    # down for 3 s (the keys go with it), then back on the same port
    stop_redis "$PRIV_PID"
    sleep 3
    pid_alive "$BG_PID" || fail "the waiter gave up on a server that had answered: $(cat "$T/bg.err")"
    restart_redis PRIV
    wait_for_exit "$BG_PID" 15 || fail "the waiter did not finish once Redis was back"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_file_exists "$T/ran"
    local err
    err=$(cat "$T/bg.err")
    [[ $err == *"still trying (--wait inf)"* && $err != *"outage-allowance"* ]] || fail "stderr: $err"
}

@test "restart: -w inf with a wrong password gives 69 at once, one line, no password shown" {
    start_redis_as AUTHED --requirepass right-secret
    local t0 ms
    t0=$(now_us)
    run --separate-stderr bl -r "redis://:wrong-secret@127.0.0.1:$AUTHED_PORT/0" -w inf "$K" touch "$T/ran"
    ms=$(elapsed_ms "$t0")
    assert_failure 69
    assert_one_bufferlock_line "Redis at redis://127.0.0.1:$AUTHED_PORT/0" WRONGPASS
    assert_no_secret wrong-secret
    assert_file_not_exists "$T/ran"
    ((ms < $(slack_ms 2500))) || fail "took $ms ms"
}

@test "restart: -w inf without the password a server wants (NOAUTH), and a finite wait, end at once" {
    start_redis_as AUTHED --requirepass right-secret
    local t0 ms
    t0=$(now_us)
    run --separate-stderr bl -r "$AUTHED_URL" -w inf "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line NOAUTH
    run --separate-stderr bl -r "redis://:wrong-secret@127.0.0.1:$AUTHED_PORT/0" -w 30 "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line WRONGPASS
    ms=$(elapsed_ms "$t0")
    assert_file_not_exists "$T/ran"
    ((ms < $(slack_ms 4000))) || fail "two runs took $ms ms"
}

@test "restart: -w inf with an unknown host name gives 69 at once" {
    # RFC 6761: names under .invalid never resolve, with or without a network.
    local url="redis://no-such-host.invalid:6379/0" t0 ms
    run --separate-stderr bl -r "$url" "$K" true
    [[ $stderr != *"Temporary failure"* ]] || skip "the resolver cannot be asked here: $stderr"
    t0=$(now_us)
    run --separate-stderr timeout 20 "$BL" -r "$url" -w inf "$K" touch "$T/ran"
    ms=$(elapsed_ms "$t0")
    assert_failure 69
    assert_one_bufferlock_line "Redis at $url"
    assert_file_not_exists "$T/ran"
    ((ms < $(slack_ms 5000))) || fail "took $ms ms"
}

@test "restart: -w inf with a database the server does not have gives 69 at once" {
    local t0 ms
    t0=$(now_us)
    run --separate-stderr timeout 20 "$BL" -r "redis://127.0.0.1:$REDIS_PORT/99" -w inf "$K" touch "$T/ran"
    ms=$(elapsed_ms "$t0")
    assert_failure 69
    assert_one_bufferlock_line "Redis at redis://127.0.0.1:$REDIS_PORT/99" database
    ((ms < $(slack_ms 2500))) || fail "took $ms ms"
}

@test "restart: --fail-open under -w inf runs the command at the first error instead of waiting" {
    local port
    port=$(free_port)
    run --separate-stderr timeout 20 "$BL" -r "redis://127.0.0.1:$port/0" -w inf --fail-open "$K" echo ran
    assert_success
    assert_output ran
    assert_one_bufferlock_line "Redis at redis://127.0.0.1:$port/0" "--fail-open"
}

# --- renewal after an error ---------------------------------------------------------------

@test "restart: a holder whose server restarts mid-run is stopped by --on-lost term about at its first renewal" {
    start_redis_as PRIV
    local rk
    rk=$(redis_key "$K")
    # --ttl 12: renewals at 4 s, 8 s, ...: the restart must come before the
    # first, and the stop halfway between them (on a loaded machine a restart
    # took 2 s); the command would run 15 s.
    bl_bg -r "$PRIV_URL" --ttl 12 --on-lost term "$K" sh -c 'date +%s%N > "$0.start"; sleep 15; echo done > "$0.done"' "$T/c"
    wait_for_file "$T/c.start" 10 || fail "the command did not start"
    sleep 0.4
    shutdown_restart_redis PRIV
    assert_equal "$(rcli_to PRIV EXISTS "$rk")" 0
    # Another client takes the key on the new server.
    assert_equal "$(rcli_to PRIV SET "$rk" other-holder PX 60000)" OK
    local t_set=$(date +%s%N)
    (((t_set - $(cat "$T/c.start")) / 1000000 < 3800)) ||
        skip "the restart took too long to come before the first renewal"
    wait_for_exit "$BG_PID" 15 || fail "bufferlock did not stop the command"
    local t_exit ms
    t_exit=$(date +%s%N)
    reap "$BG_PID"
    ms=$(((t_exit - $(cat "$T/c.start")) / 1000000))
    assert_equal "$REAPED_STATUS" 143
    assert_file_not_exists "$T/c.done"
    # Found lost at the first renewal (4 s), not a TTL/3 later (8 s): halfway.
    ((ms < 6000)) || fail "the command was stopped only after $ms ms"
    local err
    err=$(cat "$T/bg.err")
    assert_equal "$(count_matches "$err" "lost the lock")" 1
    [[ $err == *"Redis at $PRIV_URL"*SIGTERM* ]] || fail "stderr: $err"
    assert_all_bufferlock_lines "$err"
    assert_equal "$(rcli_to PRIV GET "$rk")" other-holder
}

@test "restart: a server down for longer than the TTL: the command is stopped before the TTL runs out" {
    start_redis_as PRIV
    # The lease (SPEC §7): TTL 3 s, kill-after shortened to what fits
    # (about 1.2 s), attempts of 0.4 s: SIGTERM at about 1.4 s after the last
    # confirmation (the acquire), well before the server could expire the key
    # (3 s) even on a loaded machine.
    bl_bg -r "$PRIV_URL" --connect-timeout 0.2 --io-timeout 0.2 --ttl 3 --on-lost term "$K" \
        sh -c 'trap "date +%s%N > \"\$0.term\"; exit 143" TERM; date +%s%N > "$0.start"; sleep 6 & wait; echo done > "$0.done"' "$T/c"
    wait_for_file "$T/c.start" 10 || fail "the command did not start"
    kill_redis PRIV
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not stop the command"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 143
    assert_file_not_exists "$T/c.done"
    local ms
    ms=$((($(cat "$T/c.term") - $(cat "$T/c.start")) / 1000000))
    ((ms >= 500 && ms < 3000)) || fail "SIGTERM after $ms ms, expected before the TTL (3 s)"
    local err
    err=$(cat "$T/bg.err")
    assert_equal "$(count_matches "$err" "retrying while")" 1
    assert_equal "$(count_matches "$err" "may be lost; sending the command SIGTERM")" 1
    assert_all_bufferlock_lines "$err"
}

# hold_through_pause DELAY PAUSE_MS SECONDS OPTION...: a holder on PRIV
# (started with OPTION...) whose command runs SECONDS and then checks it
# still holds the lock, while clients are paused for PAUSE_MS from DELAY s
# after it started. It must finish with 0, still holding the lock, and
# release it; its stderr is left in $err.
hold_through_pause() {
    local delay=$1 pause_ms=$2 seconds=$3 rk
    shift 3
    rk=$(redis_key "$K")
    bl_bg -r "$PRIV_URL" "$@" "$K" sh -c \
        'echo x > "$0.start"; sleep "$2"; redis-cli -p "$1" GET "$BUFFERLOCK_REDIS_KEY" > "$0.holder"; echo "$BUFFERLOCK_TOKEN" > "$0.token"' \
        "$T/c" "$PRIV_PORT" "$seconds"
    wait_for_file "$T/c.start" 10 || fail "the command did not start"
    sleep "$delay"
    pause_redis_clients PRIV "$pause_ms" >/dev/null
    wait_for_exit "$BG_PID" 20 || fail "bufferlock did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/c.holder")" "$(cat "$T/c.token")"
    err=$(cat "$T/bg.err")
    assert_equal "$(count_matches "$err" "lost the lock")" 0
    assert_all_bufferlock_lines "$err"
    assert_equal "$(rcli_to PRIV EXISTS "$rk")" 0
}

@test "restart: a CLIENT PAUSE shorter than the TTL loses nothing" {
    start_redis_as PRIV
    # --ttl 9: renewals due at 3 s and 6 s. The pause (0.5 s to 6.5 s) makes
    # both time out; renewing only at the next interval (9 s) would find the
    # lock expired, retrying with back-off renews it once the pause is over,
    # before the lease's SIGTERM (9 - 0.092 - 0.2 - 0.4 = 8.3 s): 1.8 s for
    # the retry after the pause, which a sanitizer build at load 12 needed
    # more than the 0.8 s a --ttl 6 left. The command outlives the first TTL
    # and checks it still holds the lock.
    local err
    hold_through_pause 0.5 6000 9.5 --connect-timeout 0.2 --io-timeout 0.2 --max-step 0.2 --ttl 9 \
        --on-lost term --kill-after 0.2
    assert_equal "$(count_matches "$err" "may be lost")" 0
}

@test "restart: without --on-lost term, renewals that stall past the lease's moment warn once; the lock is kept" {
    start_redis_as PRIV
    # TTL 3, attempts of 0.4 s, --kill-after shortened to 1.168: the moment
    # is 1.4 s after the acquire. Clients paused from ~0.1 s to ~2.1 s: the
    # renewal at 1 s and its retries time out; one succeeds after the pause,
    # before the server's TTL (3 s) runs out.
    local err
    hold_through_pause 0 2000 3.5 --connect-timeout 0.2 --io-timeout 0.2 --max-step 0.1 --ttl 3
    assert_equal "$(count_matches "$err" "in time: it may be lost")" 1
}

# --- a lost lock is always reported -----------------------------------------------------------

@test "restart: a lock re-taken by another client while held (SET XX) is reported at release without -v" {
    local rk
    rk=$(redis_key "$K")
    run --separate-stderr bl -r "$REDIS_URL" "$K" sh -c \
        'redis-cli -p "$0" SET "$BUFFERLOCK_REDIS_KEY" other-token XX >/dev/null; exit 3' "$REDIS_PORT"
    assert_failure 3
    assert_one_bufferlock_line "lost the lock '$K'" "Redis at $REDIS_URL"
    assert_equal "$(rcli GET "$rk")" other-token
}

@test "restart: a lock whose key vanished is reported at release; -q silences it" {
    run --separate-stderr bl -r "$REDIS_URL" "$K" sh -c 'redis-cli -p "$0" DEL "$BUFFERLOCK_REDIS_KEY" >/dev/null' "$REDIS_PORT"
    assert_success
    assert_one_bufferlock_line "lost the lock '$K'"
    run --separate-stderr bl -q -r "$REDIS_URL" "$K" sh -c 'redis-cli -p "$0" DEL "$BUFFERLOCK_REDIS_KEY" >/dev/null' "$REDIS_PORT"
    assert_success
    assert_stderr_empty
}

@test "restart: 'release' of a lock taken over meanwhile exits 0 and says the lock was lost" {
    run --separate-stderr bl acquire -r "$REDIS_URL" "$K"
    assert_success
    local tok=$output
    rcli SET "$(redis_key "$K")" other-token >/dev/null
    run --separate-stderr bl release -r "$REDIS_URL" "$K" "$tok"
    assert_success
    assert_one_bufferlock_line "lost the lock '$K'" "Redis at $REDIS_URL"
}

@test "restart: release and extend -w inf wait for a server that comes back" {
    start_redis_as PRIV
    run --separate-stderr bl acquire -r "$PRIV_URL" --ttl 60 "$K"
    assert_success
    local tok=$output rk
    rk=$(redis_key "$K")
    # A restart that keeps the data (SIGTERM with a save).
    rcli_to PRIV SAVE >/dev/null
    stop_redis "$PRIV_PID"
    bl_bg extend -r "$PRIV_URL" -w inf "$K" "$tok"
    local ext=$BG_PID
    BG_ERR=$T/rel.err bl_bg release -r "$PRIV_URL" -w inf "$K" "$tok"
    local rel=$BG_PID
    sleep 0.5
    pid_alive "$ext" || fail "extend -w inf gave up: $(cat "$T/bg.err")"
    pid_alive "$rel" || fail "release -w inf gave up: $(cat "$T/rel.err")"
    restart_redis PRIV
    wait_for_exit "$ext" 10 || fail "extend did not finish"
    wait_for_exit "$rel" 10 || fail "release did not finish"
    reap "$ext"
    local ext_status=$REAPED_STATUS
    reap "$rel"
    # One of them ran first: extend is 0 before the release, 75 after it.
    [[ $ext_status == 0 || $ext_status == 75 ]] || fail "extend exited $ext_status"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(rcli_to PRIV EXISTS "$rk")" 0
    [[ $(cat "$T/rel.err") == *"still trying"* ]] || fail "release stderr: $(cat "$T/rel.err")"
}

@test "restart: status, acquire, release and extend name Redis and the server in their errors" {
    local port url
    port=$(free_port)
    url="redis://127.0.0.1:$port/0"
    for sub in status acquire; do
        run --separate-stderr bl "$sub" -r "$url" "$K"
        assert_failure 69
        assert_one_bufferlock_line "Redis at $url" "Connection refused"
    done
    for sub in release extend; do
        run --separate-stderr bl "$sub" -r "$url" "$K" 0123456789abcdef0123456789abcdef
        assert_failure 69
        assert_one_bufferlock_line "Redis at $url" "Connection refused"
    done
}

# --- the fleet ------------------------------------------------------------------------------

@test "restart: 8 workers x 100 -w inf sections through 3 restarts: exact counter, no 69" {
    start_redis_as PRIV
    echo 0 >"$T/counter"
    local w pids=()
    for w in 1 2 3 4 5 6 7 8; do
        (
            for ((i = 0; i < 100; i++)); do
                rc=0
                "$BL" -r "$PRIV_URL" -w inf "$K" sh -c 'n=$(cat "$0"); echo $((n + 1)) > "$0"' "$T/counter" || rc=$?
                echo "$rc" >>"$T/status.$w"
            done
        ) </dev/null >/dev/null 2>>"$T/stderr.$w" 3>&- &
        pids+=("$!")
        track_pid "$!"
    done
    local r
    for r in 1 2 3; do
        sleep 1
        shutdown_restart_redis PRIV || fail "restart $r failed"
    done
    for w in "${pids[@]}"; do
        wait_for_exit "$w" 100 || fail "worker $w still running after 100 s"
    done
    local statuses warnings
    statuses=$(cat "$T"/status.* | sort | uniq -c | tr -s ' ' | paste -sd,)
    warnings=$(cat "$T"/stderr.* | sed -E 's/^bufferlock: ([a-z]+ [a-z]+ [A-Za-z]+).*/\1/' | sort | uniq -c | tr -s ' ' | paste -sd,)
    echo "# stress: sections=$(cat "$T"/status.* | wc -l) counter=$(cat "$T/counter") restarts=3 statuses=[$statuses] warnings=[$warnings]" >&3
    assert_equal "$(cat "$T"/status.* | wc -l)" 800
    assert_equal "$(grep -cvx 0 "$T"/status.* | awk -F: '{ s += $2 } END { print s }')" 0
    assert_equal "$(cat "$T/counter")" 800
    assert_all_bufferlock_lines "$(cat "$T"/stderr.*)"
}
