#!/usr/bin/env bats
# Redis backend: running the command, the key layout, URLs, passwords, usage errors.

load redis_helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() { redis_setup; }
teardown() { redis_teardown; }

# --- running the command ------------------------------------------------------

@test "redis: runs the command, stdout is the command's, nothing on stderr" {
    run --separate-stderr bl -r "$REDIS_URL" "$K" sh -c 'echo hello; echo world'
    assert_success
    assert_output $'hello\nworld'
    assert_stderr_empty
    assert_equal "$(rcli EXISTS "$(redis_key "$K")")" 0
}

@test "redis: the command's exit status is passed through" {
    local s
    for s in 0 1 3 75 69 255; do
        run --separate-stderr bl -r "$REDIS_URL" "$K" sh -c "exit $s"
        assert_equal "$status" "$s"
        assert_stderr_empty
    done
}

@test "redis: a command killed by signal N gives 128+N and the lock is released" {
    run --separate-stderr bl -r "$REDIS_URL" "$K" sh -c 'kill -TERM $$'
    assert_failure 143
    run --separate-stderr bl -r "$REDIS_URL" "$K" sh -c 'kill -KILL $$'
    assert_failure 137
    assert_equal "$(rcli EXISTS "$(redis_key "$K")")" 0
}

@test "redis: command not found gives 127, not executable 126, and no lock is left" {
    run -127 --separate-stderr bl -r "$REDIS_URL" "$K" /nonexistent/cmd-$$
    assert_failure 127
    assert_one_bufferlock_line
    printf 'echo hi\n' >"$T/noexec"
    chmod 0644 "$T/noexec"
    run --separate-stderr bl -r "$REDIS_URL" "$K" "$T/noexec"
    assert_failure 126
    assert_one_bufferlock_line
    assert_equal "$(rcli EXISTS "$(redis_key "$K")")" 0
    assert_no_key_without_ttl REDIS
}

@test "redis: -c runs a shell command" {
    run --separate-stderr bl -r "$REDIS_URL" "$K" -c 'echo "$BUFFERLOCK_BACKEND"; exit 4'
    assert_failure 4
    assert_output redis
}

@test "redis: the command gets BUFFERLOCK_BACKEND, _KEY, _TOKEN and _REDIS_KEY" {
    local key='deploy:prod é/x'
    run --separate-stderr bl -r "$REDIS_URL" "$key" sh -c \
        'printf "%s\n" "$BUFFERLOCK_BACKEND" "$BUFFERLOCK_KEY" "$BUFFERLOCK_TOKEN" "$BUFFERLOCK_REDIS_KEY"'
    assert_success
    assert_stderr_empty
    assert_equal "${#lines[@]}" 4
    assert_equal "${lines[0]}" redis
    assert_equal "${lines[1]}" "$key"
    assert_regex "${lines[2]}" '^[0-9a-f]{32}$'
    assert_equal "${lines[3]}" "$(redis_key "$key")"
    local first=${lines[2]}
    run --separate-stderr bl -r "$REDIS_URL" "$key" sh -c 'echo "$BUFFERLOCK_TOKEN"'
    assert_success
    assert_regex "$output" '^[0-9a-f]{32}$'
    [[ $output != "$first" ]] || fail "two runs got the same token $first"
}

@test "redis: while the command runs the key holds the token with PX = ttl" {
    local rk
    rk=$(redis_key "$K")
    bl_bg -r "$REDIS_URL" --ttl 30 "$K" sh -c 'echo "$BUFFERLOCK_TOKEN" > "$0.tmp"; mv "$0.tmp" "$0"; sleep 1.5' "$T/token"
    wait_for_file "$T/token" 10 || fail "the command did not start"
    assert_equal "$(rcli GET "$rk")" "$(cat "$T/token")"
    local pttl
    pttl=$(rcli PTTL "$rk")
    ((pttl > 25000 && pttl <= 30000)) || fail "PTTL $pttl, expected about 30000"
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not exit"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(rcli EXISTS "$rk")" 0
    assert_equal "$(cat "$T/bg.err")" ""
}

@test "redis: the default TTL is 60 s" {
    run --separate-stderr bl -r "$REDIS_URL" "$K" sh -c 'redis-cli -p "$0" PTTL "$BUFFERLOCK_REDIS_KEY"' "$REDIS_PORT"
    assert_success
    ((output > 55000 && output <= 60000)) || fail "PTTL '$output', expected about 60000"
}

@test "redis: a fractional --ttl (1.5, 250ms) is used in milliseconds" {
    # The highest of five readings over half a second (a renewal is due every
    # 0.5 s): one reading can come late on a loaded machine.
    run --separate-stderr bl -r "$REDIS_URL" --ttl 1.5 "$K" sh -c \
        'for i in 1 2 3 4 5; do redis-cli -p "$0" PTTL "$BUFFERLOCK_REDIS_KEY"; sleep 0.1; done | sort -n | tail -n 1' "$REDIS_PORT"
    assert_success
    ((output > 1000 && output <= 1500)) || fail "PTTL '$output', expected 1000..1500"
    run --separate-stderr bl -r "$REDIS_URL" --ttl 250ms "$K" sh -c 'redis-cli -p "$0" PTTL "$BUFFERLOCK_REDIS_KEY"' "$REDIS_PORT"
    assert_success
    ((output > 0 && output <= 250)) || fail "PTTL '$output', expected 1..250"
}

@test "redis: release leaves no key without a TTL (the wake list expires too)" {
    run --separate-stderr bl -r "$REDIS_URL" "$K" true
    assert_success
    assert_equal "$(rcli EXISTS "$(redis_key "$K")")" 0
    assert_no_key_without_ttl REDIS
    local wake
    wake=$(rcli PTTL "{$(redis_key "$K")}:wake")
    [[ $wake == -2 ]] || ((wake > 0 && wake <= 2000)) || fail "wake list PTTL $wake"
}

@test "redis: --namespace changes the prefix" {
    run --separate-stderr bl -r "$REDIS_URL" --namespace 'myapp:locks:' "$K" sh -c 'echo "$BUFFERLOCK_REDIS_KEY"; redis-cli -p "$0" GET "$BUFFERLOCK_REDIS_KEY"' "$REDIS_PORT"
    assert_success
    assert_equal "${lines[0]}" "$(redis_key "$K" 'myapp:locks:')"
    assert_regex "${lines[1]}" '^[0-9a-f]{32}$'
}

@test "redis: --hash-tag gives {PREFIX}MD5, also with --namespace" {
    run --separate-stderr bl -r "$REDIS_URL" --hash-tag "$K" sh -c 'echo "$BUFFERLOCK_REDIS_KEY"; redis-cli -p "$0" GET "$BUFFERLOCK_REDIS_KEY"' "$REDIS_PORT"
    assert_success
    assert_equal "${lines[0]}" "{buffer:lock:}$(key_md5 "$K")"
    assert_regex "${lines[1]}" '^[0-9a-f]{32}$'
    run --separate-stderr bl -r "$REDIS_URL" --hash-tag --namespace 'ci:' "$K" sh -c 'echo "$BUFFERLOCK_REDIS_KEY"' "$REDIS_PORT"
    assert_success
    assert_output "{ci:}$(key_md5 "$K")"
}

@test "redis: BUFFERLOCK_TTL and BUFFERLOCK_NAMESPACE; options win over them" {
    BUFFERLOCK_TTL=7 BUFFERLOCK_NAMESPACE='env:' run --separate-stderr bl -r "$REDIS_URL" "$K" \
        sh -c 'echo "$BUFFERLOCK_REDIS_KEY"; redis-cli -p "$0" PTTL "$BUFFERLOCK_REDIS_KEY"' "$REDIS_PORT"
    assert_success
    assert_equal "${lines[0]}" "$(redis_key "$K" 'env:')"
    ((lines[1] > 5000 && lines[1] <= 7000)) || fail "PTTL ${lines[1]}, expected about 7000"
    BUFFERLOCK_TTL=30 BUFFERLOCK_NAMESPACE='env:' run --separate-stderr bl -r "$REDIS_URL" --ttl 3 --namespace 'opt:' "$K" \
        sh -c 'echo "$BUFFERLOCK_REDIS_KEY"; redis-cli -p "$0" PTTL "$BUFFERLOCK_REDIS_KEY"' "$REDIS_PORT"
    assert_success
    assert_equal "${lines[0]}" "$(redis_key "$K" 'opt:')"
    ((lines[1] > 1000 && lines[1] <= 3000)) || fail "PTTL ${lines[1]}, expected about 3000"
}

@test "redis: a malformed BUFFERLOCK_TTL with the redis backend is a usage error" {
    BUFFERLOCK_TTL=abc run --separate-stderr bl -r "$REDIS_URL" "$K" touch "$T/ran"
    assert_usage_error BUFFERLOCK_TTL
    assert_file_not_exists "$T/ran"
}

@test "redis: --namespace '' is a usage error" {
    run --separate-stderr bl -r "$REDIS_URL" --namespace '' "$K" true
    assert_usage_error
}

@test "redis: BUFFERLOCK_REDIS selects the backend; -d on the command line wins" {
    BUFFERLOCK_REDIS=$REDIS_URL run --separate-stderr bl "$K" sh -c 'echo "$BUFFERLOCK_BACKEND $BUFFERLOCK_REDIS_KEY"'
    assert_success
    assert_output "redis $(redis_key "$K")"
    BUFFERLOCK_REDIS=$REDIS_URL run --separate-stderr bl -d "$D" "$K" sh -c 'echo "${BUFFERLOCK_BACKEND:-file}"'
    assert_success
    refute_output redis
}

@test "redis: -r on the command line wins over BUFFERLOCK_DIR" {
    BUFFERLOCK_DIR=$D run --separate-stderr bl -r "$REDIS_URL" "$K" sh -c 'echo "$BUFFERLOCK_BACKEND"'
    assert_success
    assert_output redis
}

@test "redis: both backends chosen is a usage error (options, or both variables)" {
    run --separate-stderr bl -r "$REDIS_URL" -d "$D" "$K" touch "$T/ran"
    assert_usage_error
    BUFFERLOCK_REDIS=$REDIS_URL BUFFERLOCK_DIR=$D run --separate-stderr bl "$K" touch "$T/ran"
    assert_usage_error
    assert_file_not_exists "$T/ran"
}

@test "redis: the file backend ignores malformed redis variables" {
    BUFFERLOCK_REDIS='http://nope' BUFFERLOCK_TTL=abc BUFFERLOCK_NAMESPACE="" \
        run --separate-stderr bl -d "$D" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
}

@test "redis: a lock set by hand makes bufferlock busy (75, -E) and it is left alone" {
    local rk
    rk=$(redis_key "$K")
    assert_equal "$(rcli SET "$rk" sometoken PX 60000)" OK
    run --separate-stderr bl -r "$REDIS_URL" "$K" touch "$T/ran"
    assert_failure 75
    assert_output ""
    assert_stderr_empty
    run --separate-stderr bl -r "$REDIS_URL" -E 3 "$K" touch "$T/ran"
    assert_failure 3
    assert_file_not_exists "$T/ran"
    assert_equal "$(rcli GET "$rk")" sometoken
    local pttl
    pttl=$(rcli PTTL "$rk")
    ((pttl > 55000)) || fail "PTTL of the hand-set key changed to $pttl"
}

@test "redis: -v on a busy lock says it is held, with its remaining ttl" {
    rcli SET "$(redis_key "$K")" sometoken PX 60000 >/dev/null
    run --separate-stderr bl -v -r "$REDIS_URL" "$K" true
    assert_failure 75
    assert_output ""
    assert_one_bufferlock_line "$K"
    # the remaining lifetime in seconds with three decimals (status says ttl=59.993)
    assert_regex "$stderr" '(^|[^0-9])(5[0-9]|60)\.[0-9]{3}'
    [[ $stderr != *sometoken* ]] || fail "the other holder's token was printed: $stderr"
}

@test "redis: a hand-set lock on another key does not interfere" {
    rcli SET "$(redis_key other)" sometoken PX 60000 >/dev/null
    run --separate-stderr bl -r "$REDIS_URL" "$K" echo ran
    assert_success
    assert_output ran
}

@test "redis: no connection before it is needed (usage errors win over an unreachable server)" {
    local port
    port=$(free_port)
    run --separate-stderr bl -r "redis://127.0.0.1:$port/0" "$K"
    assert_usage_error
    run --separate-stderr bl -r "redis://127.0.0.1:$port/0" --ttl 0 "$K" true
    assert_usage_error
}

# --- transports: IPv6, unix sockets, databases -------------------------------------------

@test "redis: an IPv6 address ([::1]) connects" {
    ip -6 addr show dev lo 2>/dev/null | grep -q '::1' || skip "no IPv6 loopback here"
    start_redis_as V6 --bind '127.0.0.1 ::1'
    run --separate-stderr bl -v -r "redis://[::1]:$V6_PORT/0" "$K" echo ran
    assert_success
    assert_output ran
    assert_regex "$stderr" "redis://\\[::1\\]:$V6_PORT/0"
}

@test "redis: the command inherits no socket of ours (CLOEXEC from the start)" {
    # shellcheck disable=SC2016 # expanded by the command's shell
    run --separate-stderr bl -r "$REDIS_URL" "$K" sh -c 'ls -l /proc/$$/fd | grep -c socket: || true'
    assert_success
    assert_output 0
}

@test "redis: unix:// socket URL" {
    start_redis_unix_as SOCK
    run --separate-stderr bl -r "$SOCK_URL" "$K" sh -c 'echo "$BUFFERLOCK_TOKEN" > "$0"; echo ran' "$T/token"
    assert_success
    assert_output ran
    assert_stderr_empty
    bl_bg -r "$SOCK_URL" "$K" sh -c 'echo "$BUFFERLOCK_TOKEN" > "$0.tmp"; mv "$0.tmp" "$0"; sleep 1' "$T/tok2"
    wait_for_file "$T/tok2" 10 || fail "the command did not start"
    assert_equal "$(rcli_to SOCK GET "$(redis_key "$K")")" "$(cat "$T/tok2")"
    wait_for_exit "$BG_PID" 10
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(rcli_to SOCK EXISTS "$(redis_key "$K")")" 0
}

@test "redis: unix:// with ?db=2 puts the key in database 2" {
    start_redis_unix_as SOCK
    bl_bg -r "$SOCK_URL?db=2" "$K" sh -c 'echo "$BUFFERLOCK_TOKEN" > "$0.tmp"; mv "$0.tmp" "$0"; sleep 1' "$T/token"
    wait_for_file "$T/token" 10 || fail "the command did not start"
    assert_equal "$(rcli_to SOCK -n 2 GET "$(redis_key "$K")")" "$(cat "$T/token")"
    assert_equal "$(rcli_to SOCK -n 0 DBSIZE)" 0
    wait_for_exit "$BG_PID" 10
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(rcli_to SOCK -n 2 EXISTS "$(redis_key "$K")")" 0
}

@test "redis: redis://host:port/2 uses database 2" {
    local url="redis://127.0.0.1:$REDIS_PORT/2"
    run --separate-stderr bl -r "$url" "$K" sh -c 'redis-cli -p "$0" -n 2 GET "$BUFFERLOCK_REDIS_KEY"; redis-cli -p "$0" -n 0 DBSIZE' "$REDIS_PORT"
    assert_success
    assert_regex "${lines[0]}" '^[0-9a-f]{32}$'
    assert_equal "${lines[1]}" 0
}

@test "redis: a unix socket that does not exist gives 69 naming it" {
    run --separate-stderr bl -r "unix://$T/nope.sock" "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "unix://$T/nope.sock"
    assert_file_not_exists "$T/ran"
}

# --- passwords ---------------------------------------------------------------------

PW='S3cr3t-pa55:w0rd'

start_auth_server() {
    start_redis_as AUTH --requirepass "$PW"
}

@test "redis: password in the URL (with and without the default user)" {
    start_auth_server
    run --separate-stderr bl -r "redis://:$PW@127.0.0.1:$AUTH_PORT/0" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
    run --separate-stderr bl -r "redis://default:$PW@127.0.0.1:$AUTH_PORT" "$K" echo ran
    assert_success
    assert_output ran
}

@test "redis: password in BUFFERLOCK_REDIS_PASSWORD and in REDISCLI_AUTH" {
    start_auth_server
    BUFFERLOCK_REDIS_PASSWORD=$PW run --separate-stderr bl -r "$AUTH_URL" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
    REDISCLI_AUTH=$PW run --separate-stderr bl -r "$AUTH_URL" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
}

@test "redis: the URL password wins over the variables, BUFFERLOCK_REDIS_PASSWORD over REDISCLI_AUTH" {
    start_auth_server
    BUFFERLOCK_REDIS_PASSWORD=wrong REDISCLI_AUTH=wrong \
        run --separate-stderr bl -r "redis://:$PW@127.0.0.1:$AUTH_PORT/0" "$K" echo ran
    assert_success
    assert_output ran
    BUFFERLOCK_REDIS_PASSWORD=$PW REDISCLI_AUTH=wrong \
        run --separate-stderr bl -r "$AUTH_URL" "$K" echo ran
    assert_success
    assert_output ran
}

@test "redis: no password for a server that wants one gives 69 (NOAUTH)" {
    start_auth_server
    run --separate-stderr bl -r "$AUTH_URL" "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$AUTH_PORT" NOAUTH
    assert_file_not_exists "$T/ran"
}

@test "redis: a wrong password gives 69, one line, and never shows a password" {
    start_auth_server
    local bad='Wr0ng-pa55-XYZ'
    run --separate-stderr bl -r "redis://:$bad@127.0.0.1:$AUTH_PORT/0" "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$AUTH_PORT" "authentication failed"
    assert_no_secret "$bad"
    BUFFERLOCK_REDIS_PASSWORD=$bad run --separate-stderr bl -v -r "$AUTH_URL" "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line "authentication failed"
    assert_no_secret "$bad"
    run --separate-stderr bl -r "redis://bob:$bad@127.0.0.1:$AUTH_PORT/0" "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line "authentication failed"
    assert_no_secret "$bad"
    # -v adds a line saying the password was on the command line; never the password
    run --separate-stderr bl -v -r "redis://bob:$bad@127.0.0.1:$AUTH_PORT/0" "$K" touch "$T/ran"
    assert_failure 69
    [[ ${stderr_lines[-1]} == "bufferlock: "*"authentication failed"* ]] || fail "stderr: $stderr"
    assert_no_secret "$bad"
    assert_file_not_exists "$T/ran"
}

@test "redis: -v with a right password never shows it" {
    start_auth_server
    run --separate-stderr bl -v -r "redis://:$PW@127.0.0.1:$AUTH_PORT/0" "$K" echo ran
    assert_success
    assert_output ran
    [[ -n $stderr ]] || fail "-v printed nothing"
    assert_no_secret "$PW"
    # busy, with -v: the holder's details, still no password
    REDISCLI_AUTH=$PW rcli_to AUTH SET "$(redis_key "$K")" sometoken PX 60000 >/dev/null
    run --separate-stderr bl -v -r "redis://:$PW@127.0.0.1:$AUTH_PORT/0" "$K" echo ran
    assert_failure 75
    [[ -n $stderr ]] || fail "-v printed nothing when busy"
    assert_no_secret "$PW"
    BUFFERLOCK_REDIS_PASSWORD=$PW run --separate-stderr bl -v -r "$AUTH_URL" "$K" echo ran
    assert_failure 75
    assert_no_secret "$PW"
}

@test "redis: a password in a malformed or refused URL is not shown" {
    local port
    port=$(free_port)
    run --separate-stderr bl -r "redis://u:$PW@127.0.0.1:notaport/0" "$K" true
    assert_usage_error "invalid redis URL"
    assert_no_secret "$PW"
    assert_regex "$stderr" '\*\*\*'
    run --separate-stderr bl -r "redis://u:$PW@127.0.0.1:$port/0" "$K" true
    assert_failure 69
    assert_one_bufferlock_line "127.0.0.1:$port"
    assert_no_secret "$PW"
    run --separate-stderr bl -r "rediss://:$PW@127.0.0.1:$port/0" "$K" true
    assert_failure 69
    assert_one_bufferlock_line "rediss://127.0.0.1:$port"
    assert_no_secret "$PW"
}

# --- URLs and usage errors -----------------------------------------------------------

@test "redis: rediss:// to a plaintext server is an error (69) that says TLS" {
    run --separate-stderr bl -r "rediss://127.0.0.1:$REDIS_PORT/0" --connect-timeout 1 --io-timeout 1 \
        "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line "rediss://127.0.0.1:$REDIS_PORT/0" TLS
    assert_file_not_exists "$T/ran"
}

@test "redis: malformed URLs are usage errors (64, one line)" {
    local u
    for u in 'redis://' 'redis://h:0' 'redis://h:99999' 'redis://h/x' 'http://h' \
        'redis://h:6379/0?x=1' '' 'redis://h:-1' 'unix://' 'redis://h:6379/0/1'; do
        run --separate-stderr bl -r "$u" "$K" touch "$T/ran"
        [[ $status == 64 ]] || fail "URL '$u': status $status, expected 64 (stderr: $stderr)"
        assert_usage_error
    done
    assert_file_not_exists "$T/ran"
}

@test "redis: a malformed BUFFERLOCK_REDIS is a usage error" {
    BUFFERLOCK_REDIS='redis://h:99999' run --separate-stderr bl "$K" touch "$T/ran"
    assert_usage_error "invalid redis URL"
    assert_file_not_exists "$T/ran"
}

@test "redis: redis-only options with the file backend are usage errors" {
    local opts=(
        '--ttl 5' '--namespace x:' '--hash-tag' '--connect-timeout 1' '--io-timeout 1'
        '--step 0.01' '--ratio 2' '--max-step 1' '--on-lost term' '--kill-after 1'
    )
    local o
    for o in "${opts[@]}"; do
        # shellcheck disable=SC2086
        run --separate-stderr bl -d "$D" $o "$K" touch "$T/ran"
        [[ $status == 64 ]] || fail "'$o' with -d: status $status, expected 64"
        assert_usage_error
    done
    assert_file_not_exists "$T/ran"
}

@test "redis: -s / --shared with redis is a usage error" {
    run --separate-stderr bl -r "$REDIS_URL" -s "$K" touch "$T/ran"
    assert_usage_error
    run --separate-stderr bl -r "$REDIS_URL" --shared "$K" touch "$T/ran"
    assert_usage_error
    assert_file_not_exists "$T/ran"
}

@test "redis: bad --ttl values are usage errors" {
    local v
    for v in 0 -1 abc nan 1e999 0.0004 '' inf; do
        run --separate-stderr bl -r "$REDIS_URL" --ttl "$v" "$K" touch "$T/ran"
        [[ $status == 64 ]] || fail "--ttl '$v': status $status, expected 64"
        assert_usage_error
    done
    assert_file_not_exists "$T/ran"
    assert_equal "$(rcli DBSIZE)" 0
}

@test "redis: bad --on-lost, --kill-after and timeout values are usage errors" {
    local args
    for args in '--on-lost other' '--kill-after -1' '--kill-after abc' \
        '--connect-timeout abc' '--io-timeout -1' '--connect-timeout nan'; do
        # shellcheck disable=SC2086
        run --separate-stderr bl -r "$REDIS_URL" $args "$K" touch "$T/ran"
        [[ $status == 64 ]] || fail "'$args': status $status, expected 64"
        assert_usage_error
    done
    assert_file_not_exists "$T/ran"
}
