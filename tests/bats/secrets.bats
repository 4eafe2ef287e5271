#!/usr/bin/env bats
# Secrets kept from the other users of the machine (man page, SECURITY): the
# password of a Redis URL on the command line is hidden from ps(1) while
# bufferlock runs, and the command gets it neither in its arguments nor in its
# environment -- checked through /proc/PID/cmdline and /proc/PID/environ of a
# running holder and of its command.  (A --tls-key that others can read:
# redis_tls.bats.)

load redis_helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
    redis_setup
    PW=s3cr3t-$RANDOM$RANDOM
    start_redis_as AUTH --requirepass "$PW"
}
teardown() { redis_teardown; }

# proc_text FILE: a /proc file with its NULs as spaces.
proc_text() {
    tr '\0' ' ' <"$1"
}

# hold_with ARGS...: a background bufferlock ARGS whose command (the last
# words of ARGS) is `sh -c 'echo $$ > $T/cmd.pid; exec sleep 300'`; waits until
# the command runs. Sets BG_PID (bufferlock) and CMD_PID (the command).
hold_with() {
    bl_bg "$@" sh -c "echo \$\$ > '$T/cmd.pid.tmp'; mv '$T/cmd.pid.tmp' '$T/cmd.pid'; exec sleep 300"
    wait_for_file "$T/cmd.pid" 10 || fail "the command never started: $(cat "$T/bg.err")"
    CMD_PID=$(cat "$T/cmd.pid")
    track_pid "$CMD_PID"
}

# assert_not_in FILE...: none of the files contains $PW.
assert_not_in() {
    local f
    for f in "$@"; do
        [[ -r $f ]] || fail "cannot read $f"
        if grep -qaF -- "$PW" "$f"; then
            fail "the password is in $f: $(proc_text "$f")"
        fi
    done
}

@test "secrets: a holder's cmdline shows redis://:***@, not the password; its command gets it nowhere" {
    hold_with -r "redis://:$PW@127.0.0.1:$AUTH_PORT" "$K"
    assert_not_in "/proc/$BG_PID/cmdline" "/proc/$BG_PID/environ" "/proc/$CMD_PID/cmdline" "/proc/$CMD_PID/environ"
    # what ps shows: the URL with *** and every other word as given
    assert_equal "$(ps -o args= -p "$BG_PID")" "$BL -r redis://:***@127.0.0.1:$AUTH_PORT $K sh -c echo \$\$ > '$T/cmd.pid.tmp'; mv '$T/cmd.pid.tmp' '$T/cmd.pid'; exec sleep 300"
    # and the lock is really held with that password
    run --separate-stderr bl status -r "redis://:$PW@127.0.0.1:$AUTH_PORT" "$K"
    assert_failure 75
    assert_output --partial held
    assert_equal "$(cat "$T/bg.err")" ""
}

@test "secrets: --redis=URL, a user, and every URL of a quorum are hidden too" {
    start_redis_as AUTH2 --requirepass "$PW"
    start_redis_as AUTH3 --requirepass "$PW"
    hold_with --redis="redis://default:$PW@127.0.0.1:$AUTH_PORT/0" -r "redis://:$PW@127.0.0.1:$AUTH2_PORT" \
        -r "redis://default:$PW@127.0.0.1:$AUTH3_PORT" "$K"
    assert_not_in "/proc/$BG_PID/cmdline" "/proc/$BG_PID/environ" "/proc/$CMD_PID/cmdline" "/proc/$CMD_PID/environ"
    local args
    args=$(ps -o args= -p "$BG_PID")
    [[ $args == "$BL --redis=redis://default:***@127.0.0.1:$AUTH_PORT/0 -r redis://:***@127.0.0.1:$AUTH2_PORT -r redis://default:***@127.0.0.1:$AUTH3_PORT $K sh -c "* ]] ||
        fail "ps shows: $args"
}

@test "secrets: the command's own words are its own: a URL among them reaches it as given" {
    run --separate-stderr bl -r "redis://:$PW@127.0.0.1:$AUTH_PORT" "$K" printf '%s\n' "redis://:$PW@elsewhere"
    assert_success
    assert_output "redis://:$PW@elsewhere"
    assert_stderr_empty
}

@test "secrets: nothing is printed about it by default; -v names the variables that keep it off" {
    run --separate-stderr bl -r "redis://:$PW@127.0.0.1:$AUTH_PORT" "$K" true
    assert_success
    assert_stderr_empty
    run --separate-stderr bl -v -r "redis://:$PW@127.0.0.1:$AUTH_PORT" "$K" true
    assert_success
    assert_no_secret "$PW"
    [[ $stderr == *"BUFFERLOCK_REDIS_PASSWORD or REDISCLI_AUTH"* ]] || fail "-v does not say how: $stderr"
    # a password that is not on the command line is not talked about
    BUFFERLOCK_REDIS_PASSWORD=$PW run --separate-stderr bl -v -r "redis://127.0.0.1:$AUTH_PORT" "$K" true
    assert_success
    [[ $stderr != *"BUFFERLOCK_REDIS_PASSWORD or REDISCLI_AUTH"* ]] || fail "-v talks of a password not given: $stderr"
}

@test "secrets: with the password in BUFFERLOCK_REDIS_PASSWORD, cmdline never had it" {
    BUFFERLOCK_REDIS_PASSWORD=$PW hold_with -r "redis://127.0.0.1:$AUTH_PORT" "$K"
    assert_not_in "/proc/$BG_PID/cmdline" "/proc/$CMD_PID/cmdline"
    assert_equal "$(cat "$T/bg.err")" ""
}

@test "secrets: the hidden password is still the one used, for cache builds and acquire too" {
    run --separate-stderr bl cache --store redis -r "redis://:$PW@127.0.0.1:$AUTH_PORT" entry sh -c 'echo built'
    assert_success
    assert_output built
    assert_stderr_empty
    run --separate-stderr bl acquire -r "redis://:$PW@127.0.0.1:$AUTH_PORT" "$K"
    assert_success
    assert_equal "$(REDISCLI_AUTH=$PW rcli_to AUTH GET "$(redis_key "$K")")" "$output"
    run --separate-stderr bl -r "redis://:wrong-$PW@127.0.0.1:$AUTH_PORT" other true
    assert_failure 69
    assert_no_secret "$PW"
}
