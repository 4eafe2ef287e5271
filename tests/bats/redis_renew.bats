#!/usr/bin/env bats
# Redis backend: TTL renewal, a lost lock, --on-lost, bufferlock's death, signals.

load redis_helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() { redis_setup; }
teardown() { redis_teardown; }

# A command that records its PID and token, then sleeps in short steps (so a
# trapped signal is handled within 0.1 s) for $1 tenths of a second.
# Usage: sh -c "$SLEEPER" "$T/prefix" TENTHS   -> $T/prefix.pid, $T/prefix.token
SLEEPER='echo "$BUFFERLOCK_TOKEN" > "$0.token.tmp"; mv "$0.token.tmp" "$0.token"
echo $$ > "$0.pid.tmp"; mv "$0.pid.tmp" "$0.pid"
i=0; while [ $i -lt "$1" ]; do sleep 0.1; i=$((i+1)); done'
# The same in steps of 0.02 s ($1 fiftieths): a trap runs within the short
# --kill-after of a short TTL.
QUICK_SLEEPER=${SLEEPER//sleep 0.1/sleep 0.02}

# stopped_after_loss T0 STATUS: bufferlock ($BG_PID) ends with STATUS once
# its lock is lost, its command ($T/c) having seen the SIGTERM and not
# finished; MS is the time since T0 (now_us).
stopped_after_loss() {
    wait_for_exit "$BG_PID" 15 || fail "bufferlock did not exit after the lock was lost"
    MS=$(elapsed_ms "$1")
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" "$2"
    assert_file_exists "$T/c.term"
    assert_file_not_exists "$T/c.done"
}

# count_matches TEXT SUBSTRING: how many lines of TEXT contain SUBSTRING.
count_matches() {
    local n=0 line
    while IFS= read -r line; do
        [[ $line == *"$2"* ]] && n=$((n + 1))
    done <<<"$1"
    printf '%s\n' "$n"
}

@test "renew: a --ttl 1 lock is kept through a command that outlives two TTLs" {
    # The command ends when the test opens the gate, after the checks below,
    # however long they take on a loaded machine (where a command of fixed
    # length could end before the checks did).
    # The TTL scales with TIME_SCALE, as the sanitizer build's runs do.
    local rk t0 ttl_ms
    rk=$(redis_key "$K")
    ttl_ms=$((1000 * TIME_SCALE))
    t0=$(now_us)
    bl_bg -r "$REDIS_URL" --ttl "$(scaled_s 1)" "$K" sh -c \
        'echo "$BUFFERLOCK_TOKEN" > "$1.tmp"; mv "$1.tmp" "$1"; '"$GATE_WAIT" "$T/gate" "$T/c.token"
    wait_for_file "$T/c.token" 10 || fail "the command did not start"
    # the TTL stays <= the TTL given (renewal uses --ttl, not more)
    local pttl
    pttl=$(rcli PTTL "$rk")
    ((pttl > 0 && pttl <= ttl_ms)) || fail "PTTL $pttl, expected 1..$ttl_ms"
    # at 2.5 TTLs the lock is still ours
    while (($(elapsed_ms "$t0") < ttl_ms * 5 / 2)); do sleep 0.05; done
    run --separate-stderr bl -r "$REDIS_URL" "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
    assert_equal "$(rcli GET "$rk")" "$(cat "$T/c.token")"
    pttl=$(rcli PTTL "$rk")
    ((pttl > 0 && pttl <= ttl_ms)) || fail "PTTL $pttl after 2.5 TTLs, expected 1..$ttl_ms"
    : >"$T/gate"
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not exit"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.err")" ""
    assert_equal "$(rcli EXISTS "$rk")" 0
}

@test "renew: a token replaced mid-run gives one 'lost the lock' warning and the other key is kept" {
    local rk
    rk=$(redis_key "$K")
    bl_bg -r "$REDIS_URL" --ttl 0.6 "$K" sh -c "$SLEEPER; echo finished > \"\$0.done\"; exit 5" "$T/c" 20
    wait_for_file "$T/c.token" 10 || fail "the command did not start"
    assert_equal "$(rcli SET "$rk" othertoken PX 60000)" OK
    wait_for_exit "$BG_PID" 15 || fail "bufferlock did not exit"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 5
    # --on-lost warn (default): the command ran to its end
    assert_file_exists "$T/c.done"
    local err
    err=$(cat "$T/bg.err")
    assert_equal "$(count_matches "$err" "lost the lock")" 1
    [[ $err != *$'\n'* ]] || fail "more than one line on stderr: $err"
    [[ $err == 'bufferlock: '* ]] || fail "stderr: $err"
    assert_equal "$(rcli GET "$rk")" othertoken
    local pttl
    pttl=$(rcli PTTL "$rk")
    ((pttl > 50000)) || fail "the other holder's key TTL was changed: $pttl"
}

@test "renew: a key deleted mid-run gives one warning, and nothing is recreated" {
    local rk
    rk=$(redis_key "$K")
    bl_bg -r "$REDIS_URL" --ttl 0.6 "$K" sh -c "$SLEEPER" "$T/c" 15
    wait_for_file "$T/c.token" 10 || fail "the command did not start"
    assert_equal "$(rcli DEL "$rk")" 1
    wait_for_exit "$BG_PID" 15 || fail "bufferlock did not exit"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    local err
    err=$(cat "$T/bg.err")
    assert_equal "$(count_matches "$err" "lost the lock")" 1
    [[ $err != *$'\n'* ]] || fail "more than one line on stderr: $err"
    assert_equal "$(rcli EXISTS "$rk")" 0
}

@test "renew: -q silences the lost-lock warning" {
    local rk
    rk=$(redis_key "$K")
    bl_bg -q -r "$REDIS_URL" --ttl 0.6 "$K" sh -c "$SLEEPER" "$T/c" 12
    wait_for_file "$T/c.token" 10 || fail "the command did not start"
    rcli DEL "$rk" >/dev/null
    wait_for_exit "$BG_PID" 15 || fail "bufferlock did not exit"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.err")" ""
}

@test "renew: --on-lost term sends SIGTERM to the command" {
    local rk t0
    rk=$(redis_key "$K")
    bl_bg -r "$REDIS_URL" --ttl 1.5 --connect-timeout 0.1 --io-timeout 0.1 --on-lost term "$K" sh -c \
        "trap 'echo term > \"\$0.term\"; exit 7' TERM; $SLEEPER; echo finished > \"\$0.done\"" "$T/c" 100
    wait_for_file "$T/c.token" 10 || fail "the command did not start"
    t0=$(now_us)
    rcli SET "$rk" othertoken PX 60000 >/dev/null
    wait_for_exit "$BG_PID" 8 || fail "bufferlock did not exit after the lock was lost"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 7
    assert_file_exists "$T/c.term"
    assert_file_not_exists "$T/c.done"
    local ms
    ms=$(elapsed_ms "$t0")
    ((ms < $(slack_ms 4000))) || fail "the command was stopped only after $ms ms"
    assert_equal "$(count_matches "$(cat "$T/bg.err")" "lost the lock")" 1
    assert_equal "$(rcli GET "$rk")" othertoken
}

@test "renew: --on-lost term with a command that ignores TERM: SIGKILL after --kill-after" {
    local rk t0
    rk=$(redis_key "$K")
    # the command handles TERM by noting it and carrying on
    bl_bg -r "$REDIS_URL" --ttl 1.5 --connect-timeout 0.1 --io-timeout 0.1 --on-lost term --kill-after 0.5 "$K" sh -c \
        "trap 'echo term >> \"\$0.term\"' TERM; $SLEEPER; echo finished > \"\$0.done\"" "$T/c" 100
    wait_for_file "$T/c.pid" 10 || fail "the command did not start"
    track_pid "$(cat "$T/c.pid")"
    t0=$(now_us)
    rcli DEL "$rk" >/dev/null
    wait_for_exit "$BG_PID" 8 || fail "bufferlock did not exit after the lock was lost"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 137
    assert_file_exists "$T/c.term"
    assert_file_not_exists "$T/c.done"
    local ms
    ms=$(elapsed_ms "$t0")
    # lost within ~0.5 s (TTL/3), then 0.5 s grace
    ((ms >= 400 && ms < $(slack_ms 5000))) || fail "SIGKILL came after $ms ms"
    wait_for_exit "$(cat "$T/c.pid")" 3 || fail "the command is still alive"
}

@test "renew: SIGKILL of bufferlock terminates the command; the key expires within the TTL" {
    local rk t0
    rk=$(redis_key "$K")
    bl_bg -r "$REDIS_URL" --ttl 1 "$K" sh -c "$SLEEPER" "$T/c" 300
    wait_for_file "$T/c.pid" 10 || fail "the command did not start"
    local cpid
    cpid=$(cat "$T/c.pid")
    track_pid "$cpid"
    assert_equal "$(rcli EXISTS "$rk")" 1
    kill -KILL "$BG_PID"
    t0=$(now_us)
    wait_for_exit "$cpid" 5 || fail "the command survived bufferlock's death"
    wait_for_key_state REDIS "$rk" absent 3 || fail "the key is still there $(elapsed_ms "$t0") ms after bufferlock died"
    local ms
    ms=$(elapsed_ms "$t0")
    ((ms < 1000 + $(slack_ms 1500))) || fail "the key went away only after $ms ms (TTL 1 s)"
    wait_for_exit "$BG_PID" 2
    reap "$BG_PID"
}

@test "renew: signals sent to bufferlock reach the command" {
    local sigs=(USR1 USR2 HUP WINCH INT QUIT) s
    local traps=''
    for s in "${sigs[@]}"; do
        traps+="trap 'echo $s >> \"\$0.sigs\"' $s; "
    done
    bl_bg -r "$REDIS_URL" "$K" sh -c \
        "${traps}trap 'echo TERM >> \"\$0.sigs\"; exit 9' TERM; $SLEEPER" "$T/c" 150
    wait_for_file "$T/c.pid" 10 || fail "the command did not start"
    track_pid "$(cat "$T/c.pid")"
    local n=0 i
    for s in "${sigs[@]}"; do
        kill "-$s" "$BG_PID"
        n=$((n + 1))
        for ((i = 0; i < 60; i++)); do
            [[ -f $T/c.sigs && $(wc -l <"$T/c.sigs") -ge $n ]] && break
            sleep 0.05
        done
        grep -qx "$s" "$T/c.sigs" 2>/dev/null || fail "SIG$s did not reach the command"
    done
    pid_alive "$BG_PID" || fail "bufferlock died of a forwarded signal"
    kill -TERM "$BG_PID"
    wait_for_exit "$BG_PID" 5 || fail "bufferlock did not exit after SIGTERM"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 9
    grep -qx TERM "$T/c.sigs" || fail "SIGTERM did not reach the command"
    assert_equal "$(rcli EXISTS "$(redis_key "$K")")" 0
}

@test "renew: SIGTERM to bufferlock with a plain command gives 143 and releases" {
    bl_bg -r "$REDIS_URL" "$K" sh -c 'echo $$ > "$0"; exec sleep 30' "$T/c.pid"
    wait_for_file "$T/c.pid" 10 || fail "the command did not start"
    track_pid "$(cat "$T/c.pid")"
    assert_equal "$(rcli EXISTS "$(redis_key "$K")")" 1
    kill -TERM "$BG_PID"
    wait_for_exit "$BG_PID" 5 || fail "bufferlock did not exit"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 143
    assert_equal "$(rcli EXISTS "$(redis_key "$K")")" 0
    assert_equal "$(cat "$T/bg.err")" ""
}

# --- the holder's lease (SPEC §7) ---------------------------------------------

@test "lease: an explicit --kill-after that does not fit the TTL is a usage error naming both" {
    # 20 - 20/3 - 0.202 - 2 x 20/18 = 10.909 (renewal attempts of at most TTL/18)
    run --separate-stderr bl -r "$REDIS_URL" --ttl 20 --on-lost term --kill-after 11 "$K" touch "$T/ran"
    assert_usage_error "--kill-after 11.000" "--ttl 20.000" "at most 10.909"
    BUFFERLOCK_KILL_AFTER=11 BUFFERLOCK_TTL=20 run --separate-stderr bl -r "$REDIS_URL" --on-lost term "$K" touch "$T/ran"
    assert_usage_error "BUFFERLOCK_KILL_AFTER 11.000" "BUFFERLOCK_TTL 20.000"
    # a given timeout that leaves no room for a renewal period and two
    # attempts, whatever --kill-after (the defaulted one is shortened to TTL/36)
    run --separate-stderr bl -r "$REDIS_URL" --ttl 0.6 --io-timeout 1 --on-lost term "$K" touch "$T/ran"
    assert_usage_error "--ttl 0.600 is too short for --on-lost term" "attempts of TTL/36 + --io-timeout (1.017)"
    BUFFERLOCK_CONNECT_TIMEOUT=0.5 BUFFERLOCK_IO_TIMEOUT=0.5 run --separate-stderr \
        bl -r "$REDIS_URL" --ttl 0.6 --on-lost term "$K" touch "$T/ran"
    assert_usage_error "--ttl 0.600 is too short" "attempts of BUFFERLOCK_CONNECT_TIMEOUT + BUFFERLOCK_IO_TIMEOUT (1.000)"
    assert_file_not_exists "$T/ran"
    # without --on-lost term the same values are fine
    run --separate-stderr bl -r "$REDIS_URL" --ttl 0.6 --io-timeout 1 --kill-after 5 "$K" touch "$T/ran"
    assert_success
    assert_file_exists "$T/ran"
}

@test "lease: --ttl 10 --on-lost term just works (the default --kill-after is shortened)" {
    # renewal attempts of 10/18 s: a default of 10/3 - 0.102 - 3 x 10/18 =
    # 1.565 (retries have a renewal period and an attempt more); given, at
    # most 10 - 10/3 - 0.102 - 2 x 10/18 = 5.454
    run --separate-stderr bl -r "$REDIS_URL" --ttl 10 --on-lost term "$K" sh -c 'echo "$BUFFERLOCK_BACKEND"'
    assert_success
    assert_output redis
    assert_stderr_empty
    run --separate-stderr bl -r "$REDIS_URL" --ttl 10 --on-lost term --kill-after 5.4 "$K" true
    assert_success
    run --separate-stderr bl -r "$REDIS_URL" --ttl 10 --on-lost term --kill-after 5.5 "$K" true
    assert_usage_error "--kill-after 5.500" "--ttl 10.000" "at most 5.454"
}

@test "lease: --ttl 0.5, 1, 3 and 6 with --on-lost term run the command with the default timeouts" {
    local ttl
    for ttl in 0.5 1 3 6; do
        run --separate-stderr bl -r "$REDIS_URL" --ttl "$ttl" --on-lost term "$K" sh -c 'sleep 0.3; echo ran'
        assert_success
        assert_output ran
        assert_stderr_empty
    done
    assert_equal "$(rcli EXISTS "$(redis_key "$K")")" 0
}

@test "lease: --ttl 1 --on-lost term with the defaults: a lock deleted under the command gets SIGTERM within 5 s" {
    local rk t0
    rk=$(redis_key "$K")
    # (short sleeps: the trap must run within the default --kill-after,
    # 1/6 - 0.012 = 0.155 s)
    bl_bg -r "$REDIS_URL" --ttl 1 --on-lost term "$K" sh -c \
        "trap 'echo term > \"\$0.term\"; exit 7' TERM; $QUICK_SLEEPER; echo finished > \"\$0.done\"" "$T/c" 1500
    wait_for_file "$T/c.token" 10 || fail "the command did not start: $(cat "$T/bg.err")"
    # renewed meanwhile: more than a TTL later it still holds the lock
    sleep 1.5
    assert_equal "$(rcli GET "$rk")" "$(cat "$T/c.token")"
    t0=$(now_us)
    rcli DEL "$rk" >/dev/null
    stopped_after_loss "$t0" 7
    ((MS < 5000)) || fail "the command was stopped only after $MS ms"
    assert_equal "$(count_matches "$(cat "$T/bg.err")" "lost the lock")" 1
}

@test "lease: a command that ignores SIGTERM ends 137 (--ttl 1 with the defaults, --ttl 6 --kill-after 1)" {
    local rk args t0
    rk=$(redis_key "$K")
    for args in "--ttl 1" "--ttl 6 --kill-after 1"; do
        rm -f "$T"/c.*
        # shellcheck disable=SC2086 # the words of $args
        bl_bg -r "$REDIS_URL" $args --on-lost term "$K" sh -c \
            "trap 'echo term >> \"\$0.term\"' TERM; $QUICK_SLEEPER; echo finished > \"\$0.done\"" "$T/c" 1500
        wait_for_file "$T/c.pid" 10 || fail "$args: the command did not start: $(cat "$T/bg.err")"
        track_pid "$(cat "$T/c.pid")"
        t0=$(now_us)
        rcli DEL "$rk" >/dev/null
        stopped_after_loss "$t0" 137
        # found lost at the next renewal (TTL/3), then the grace (--ttl 6: 1 s)
        [[ $args != *"kill-after 1" ]] || ((MS >= 900)) || fail "$args: SIGKILL after $MS ms, before --kill-after"
        ((MS < $(slack_ms 5000))) || fail "$args: SIGKILL came after $MS ms"
        wait_for_exit "$(cat "$T/c.pid")" 3 || fail "$args: the command is still alive"
    done
}
