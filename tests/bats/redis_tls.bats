#!/usr/bin/env bats
# Redis over TLS (rediss://, SPEC section 12): everything of sections 7-9 over
# TLS, mutual TLS, usage errors of the --tls-* options and BUFFERLOCK_TLS_*,
# handshake failures (untrusted, expired, wrongly named certificates, a
# refused client, plaintext on either side), and --version.
#
# setup_file makes the certificates (tls_helpers.bash) and starts three
# servers, all stopped by PID in teardown_file: the plain shared server
# (REDIS_*), a TLS-only server (TLS_*) and a TLS-only server that requires
# client certificates (MTLS_*).  Servers with the expired or wrongly named
# certificate are started by the tests that need them.

load tls_helpers
load cache_helpers
load cluster_helpers

setup_file() {
    redis_setup_file
    make_tls_fixture
    start_tls_redis_as TLS "$TLS_SERVER_CERT" "$TLS_SERVER_KEY"
    export_redis_vars TLS
    start_tls_redis_as MTLS "$TLS_SERVER_CERT" "$TLS_SERVER_KEY" --tls-auth-clients yes
    export_redis_vars MTLS
}
teardown_file() { redis_teardown_file; }
setup() {
    cache_setup # common_setup + $C, $RUNS, $COUNTED for the stampede
    redis_reset_shared
    tls_flush TLS
    tls_flush MTLS
}
teardown() {
    track_descendants
    redis_teardown # common_teardown + this test's redis servers
}

# Bounded timeouts for the failure cases: a handshake failure must end within
# connect-timeout + io-timeout, so well under LIMIT_MS.
FAST=(--connect-timeout 1 --io-timeout 1)
LIMIT_MS=$((2000 + $(slack_ms 2000)))

# assert_tls_error SERVER [REASON...]: the last bl_timed gave 69, no stdout,
# one 'bufferlock: ' line naming "Redis at SERVER" and each REASON, within
# LIMIT_MS, and did not run the command (which touches $T/ran).
assert_tls_error() {
    local server=$1
    shift
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "Redis at $server" "$@"
    ((MS < LIMIT_MS)) || fail "the failure took $MS ms (limit $LIMIT_MS ms)"
    assert_file_not_exists "$T/ran"
}

# --- the fixture itself -----------------------------------------------------------

@test "tls fixture: certificates verify as the tests assume; redis-cli talks TLS to the servers" {
    run openssl verify -CAfile "$TLS_CA" "$TLS_SERVER_CERT" "$TLS_OTHER_CERT" "$TLS_CLIENT_CERT"
    assert_success
    run openssl verify -CAfile "$TLS_CA" "$TLS_EXPIRED_CERT"
    assert_failure
    assert_output --partial 'certificate has expired'
    run openssl verify -CAfile "$TLS_CA2" "$TLS_SERVER_CERT"
    assert_failure
    run openssl x509 -noout -ext subjectAltName -in "$TLS_SERVER_CERT"
    assert_output --partial 'IP Address:127.0.0.1'
    assert_output --partial 'DNS:localhost'
    run openssl x509 -noout -ext subjectAltName -in "$TLS_EXPIRED_CERT"
    assert_output --partial 'IP Address:127.0.0.1'
    run openssl x509 -noout -ext subjectAltName -in "$TLS_OTHER_CERT"
    assert_output --partial 'DNS:other.example'
    refute_output --partial 127.0.0.1
    refute_output --partial localhost
    run openssl x509 -noout -in "$TLS_NOTPEM"
    assert_failure
    # the servers answer over TLS, and only over TLS (with a client
    # certificate for MTLS)
    assert_equal "$(rcli_to TLS PING)" PONG
    assert_equal "$(rcli_to MTLS PING)" PONG
    run rcli_raw -h 127.0.0.1 -p "$TLS_PORT" PING
    refute_output PONG
    run rcli_raw --tls --cacert "$TLS_CA" -h 127.0.0.1 -p "$MTLS_PORT" PING
    refute_output PONG
    run rcli_raw --tls --cacert "$TLS_CA2" -h 127.0.0.1 -p "$TLS_PORT" PING
    refute_output PONG
    assert_output --partial 'certificate verify failed'
}

# --- topologies over TLS (SPEC 13) -------------------------------------------------

@test "tls: a quorum of 3 rediss:// servers (and one mixed with redis://): held on all, released on all" {
    local n rk held
    rk=$(redis_key "$K")
    for n in QT1 QT2 QT3; do
        start_tls_redis_as "$n" "$TLS_SERVER_CERT" "$TLS_SERVER_KEY" || fail "cannot start $n"
    done
    # The command reads the key on all three over TLS while the lock is held.
    held='for p in "$2" "$3" "$4"; do redis-cli --tls --cacert "$1" -p "$p" GET "$BUFFERLOCK_REDIS_KEY"; done
          echo "$BUFFERLOCK_TOKEN"'
    run --separate-stderr bl -r "$QT1_URL" -r "$QT2_URL" -r "$QT3_URL" --tls-ca "$TLS_CA" "$K" \
        sh -c "$held" sh "$TLS_CA" "$QT1_PORT" "$QT2_PORT" "$QT3_PORT"
    assert_success
    assert_stderr_empty
    assert_equal "${#lines[@]}" 4
    assert_regex "${lines[3]}" '^[0-9a-f]{32}$'
    for n in 0 1 2; do assert_equal "${lines[n]}" "${lines[3]}"; done
    for n in QT1 QT2 QT3; do assert_equal "$(rcli_to "$n" EXISTS "$rk")" 0; done
    # Held: a second run through the same quorum is busy.
    bl_bg -r "$QT1_URL" -r "$QT2_URL" -r "$QT3_URL" --tls-ca "$TLS_CA" "$K" sleep 30
    wait_for_key_state QT2 "$rk" present
    run --separate-stderr bl -r "$QT3_URL" -r "$QT1_URL" -r "$QT2_URL" --tls-ca "$TLS_CA" "$K" true
    assert_failure 75
    kill -TERM "$BG_PID"
    wait_for_exit "$BG_PID" 5 || fail "the holder did not end"
    reap "$BG_PID"
    # A quorum may mix plain and TLS servers; BUFFERLOCK_TLS_CA is read for it
    # although its first server is plain.
    run --separate-stderr env BUFFERLOCK_REDIS="$REDIS_URL $QT1_URL $QT2_URL" BUFFERLOCK_TLS_CA="$TLS_CA" \
        "$BL" "$K" sh -c 'redis-cli -p "$0" GET "$BUFFERLOCK_REDIS_KEY"' "$REDIS_PORT"
    assert_success
    assert_stderr_empty
    assert_regex "$output" '^[0-9a-f]{32}$'
    for n in QT1 QT2 QT3; do assert_no_key_without_ttl "$n"; done
}

@test "tls: a rediss:// cluster (--tls-cluster yes): MOVED followed over TLS, held and released on the owner" {
    local n rk CLUSTER_NODES=(CT1 CT2 CT3) FREE_PORT_MAX=$CLUSTER_FREE_PORT_MAX
    # The cluster bus verifies both ends: a node presents the test client
    # certificate (clientAuth) when it connects to another.
    for n in "${CLUSTER_NODES[@]}"; do
        start_tls_redis_as "$n" "$TLS_SERVER_CERT" "$TLS_SERVER_KEY" "${CLUSTER_ARGS[@]}" \
            --tls-cluster yes --tls-client-cert-file "$TLS_CLIENT_CERT" \
            --tls-client-key-file "$TLS_CLIENT_KEY" || fail "cannot start $n"
    done
    cluster_create "${CLUSTER_NODES[@]}" || fail "the TLS cluster did not form"
    K=$(cluster_key_on CT2) || fail "no key found on CT2"
    rk=$(redis_key "$K")
    # Through CT1, which does not serve the slot: the MOVED names CT2's TLS port.
    run --separate-stderr bl -r "$CT1_URL" --tls-ca "$TLS_CA" "$K" sh -c \
        'redis-cli --tls --cacert "$1" -p "$2" GET "$BUFFERLOCK_REDIS_KEY"; echo "$BUFFERLOCK_TOKEN"' \
        sh "$TLS_CA" "$CT2_PORT"
    assert_success
    assert_stderr_empty
    assert_equal "${#lines[@]}" 2
    assert_regex "${lines[1]}" '^[0-9a-f]{32}$'
    assert_equal "${lines[0]}" "${lines[1]}"
    assert_equal "$(rcli_to CT2 EXISTS "$rk")" 0
    # Held through CT3, busy through CT1; then a waiter through CT1 gets it
    # when the holder ends (the wake list over TLS).
    # The holder lasts until the gate opens, however slow the busy check is.
    bl_bg -r "$CT3_URL" --tls-ca "$TLS_CA" "$K" sh -c "$GATE_WAIT" "$T/gate"
    wait_for_key_state CT2 "$rk" present
    run --separate-stderr bl -r "$CT1_URL" --tls-ca "$TLS_CA" "$K" true
    assert_failure 75
    (sleep 0.5; : >"$T/gate") 3>&- &
    run --separate-stderr bl -r "$CT1_URL" --tls-ca "$TLS_CA" -w 10 "$K" echo got it
    assert_success
    assert_output "got it"
    for n in "${CLUSTER_NODES[@]}"; do assert_no_key_without_ttl "$n"; done
}

# --- version ------------------------------------------------------------------------

@test "tls: --version names OpenSSL" {
    run --separate-stderr bl --version
    assert_success
    assert_output --partial OpenSSL
    assert_stderr_empty
}

# --- sections 7-9 over TLS -----------------------------------------------------------

@test "tls: run over rediss://127.0.0.1 (IP SAN): the key holds the token meanwhile, status passes through" {
    local rk
    rk=$(redis_key "$K")
    run --separate-stderr bl -r "$TLS_URL" --tls-ca "$TLS_CA" "$K" -- sh -c \
        'echo "$BUFFERLOCK_BACKEND"; echo "$BUFFERLOCK_TOKEN"
         redis-cli --tls --cacert "$1" -p "$2" GET "$BUFFERLOCK_REDIS_KEY"' sh "$TLS_CA" "$TLS_PORT"
    assert_success
    assert_stderr_empty
    assert_equal "${#lines[@]}" 3
    assert_equal "${lines[0]}" redis
    assert_regex "${lines[1]}" '^[0-9a-f]{32}$'
    assert_equal "${lines[2]}" "${lines[1]}"
    assert_equal "$(rcli_to TLS EXISTS "$rk")" 0
    run --separate-stderr bl -r "$TLS_URL" --tls-ca "$TLS_CA" "$K" sh -c 'exit 3'
    assert_failure 3
    assert_stderr_empty
    assert_equal "$(rcli_to TLS EXISTS "$rk")" 0
    assert_no_key_without_ttl TLS
}

@test "tls: rediss://localhost (DNS SAN), /DB, and BUFFERLOCK_REDIS + BUFFERLOCK_TLS_CA" {
    run --separate-stderr bl -r "rediss://localhost:$TLS_PORT" --tls-ca "$TLS_CA" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
    run --separate-stderr bl -r "rediss://127.0.0.1:$TLS_PORT/2" --tls-ca "$TLS_CA" "$K" \
        sh -c 'redis-cli --tls --cacert "$1" -p "$2" -n 2 GET "$BUFFERLOCK_REDIS_KEY"' sh "$TLS_CA" "$TLS_PORT"
    assert_success
    assert_regex "$output" '^[0-9a-f]{32}$'
    BUFFERLOCK_REDIS="rediss://localhost:$TLS_PORT/0" BUFFERLOCK_TLS_CA=$TLS_CA \
        run --separate-stderr bl "$K" sh -c 'echo "$BUFFERLOCK_BACKEND"'
    assert_success
    assert_output redis
    assert_stderr_empty
}

@test "tls: status, acquire, extend and release over TLS" {
    local rk tok pttl
    rk=$(redis_key "$K")
    run --separate-stderr bl status -r "$TLS_URL" --tls-ca "$TLS_CA" "$K"
    assert_success
    assert_output free
    assert_stderr_empty
    # --ttl 60: the lock must outlive the three runs before the extend (a
    # sanitizer build's TLS handshakes on a loaded machine take seconds).
    run --separate-stderr bl acquire -r "$TLS_URL" --tls-ca "$TLS_CA" --ttl 60 "$K"
    assert_success
    assert_regex "$output" '^[0-9a-f]{32}$'
    assert_stderr_empty
    tok=$output
    assert_equal "$(rcli_to TLS GET "$rk")" "$tok"
    run --separate-stderr bl status -r "$TLS_URL" --tls-ca "$TLS_CA" "$K"
    assert_failure 75
    assert_regex "$output" "^held ttl=[0-9]+\\.[0-9]{3} pid=[0-9]+ host=[^ ]+ since=[0-9.]+ fence=$(fence_counter TLS "$K")\$"
    run --separate-stderr bl acquire -r "$TLS_URL" --tls-ca "$TLS_CA" "$K"
    assert_failure 75
    assert_output ""
    run --separate-stderr bl extend -r "$TLS_URL" --tls-ca "$TLS_CA" --ttl 100 "$K" "$tok"
    assert_success
    assert_stderr_empty
    pttl=$(rcli_to TLS PTTL "$rk")
    ((pttl > 95000 && pttl <= 100000)) || fail "PTTL $pttl after extend --ttl 100"
    run --separate-stderr bl release -r "$TLS_URL" --tls-ca "$TLS_CA" "$K" "$tok"
    assert_success
    assert_stderr_empty
    assert_equal "$(rcli_to TLS EXISTS "$rk")" 0
    run --separate-stderr bl status -r "$TLS_URL" --tls-ca "$TLS_CA" "$K"
    assert_success
    assert_output free
}

@test "tls: a waiting run (-w) gets the lock at once when a TLS holder's command ends" {
    BG_OUT=$T/holder.out BG_ERR=$T/holder.err \
        bl_bg -r "$TLS_URL" --tls-ca "$TLS_CA" "$K" sh -c \
        'echo x > "$0.started"; sleep 1; date +%s%N > "$0"' "$T/holder_end"
    local holder=$BG_PID
    wait_for_file "$T/holder_end.started" 10 || fail "the holder did not start: $(cat "$T/holder.err")"
    # With --step 8 a waiter that missed the wake-up would retry after 4-8 s.
    run --separate-stderr bl -r "$TLS_URL" --tls-ca "$TLS_CA" -w 20 --step 8 --max-step 8 "$K" \
        sh -c 'date +%s%N > "$0"' "$T/waiter_start"
    assert_success
    assert_stderr_empty
    wait_for_exit "$holder" 5 || fail "the holder did not exit"
    reap "$holder"
    assert_equal "$REAPED_STATUS" 0
    local gap
    gap=$((($(cat "$T/waiter_start") - $(cat "$T/holder_end")) / 1000000))
    ((gap >= 0)) || fail "the waiter's command started ${gap} ms before the holder's ended"
    ((gap < 2000)) || fail "the waiter's command started ${gap} ms after the holder's ended"
}

@test "tls: release over TLS wakes a waiter at once (wake-up list, not polling)" {
    run --separate-stderr bl acquire -r "$TLS_URL" --tls-ca "$TLS_CA" "$K"
    assert_success
    local tok=$output
    bl_bg -r "$TLS_URL" --tls-ca "$TLS_CA" -w 20 --step 8 --max-step 8 "$K" \
        sh -c 'date +%s%N > "$0"' "$T/waiter_start"
    sleep 1
    pid_alive "$BG_PID" || fail "the waiter is not waiting: $(cat "$T/bg.err")"
    local tr
    tr=$(date +%s%N)
    run --separate-stderr bl release -r "$TLS_URL" --tls-ca "$TLS_CA" "$K" "$tok"
    assert_success
    wait_for_exit "$BG_PID" 10 || fail "the waiter did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.err")" ""
    local gap=$((($(cat "$T/waiter_start") - tr) / 1000000))
    ((gap < 2000)) || fail "the waiter started ${gap} ms after the release"
}

@test "tls: renewal keeps a --ttl 0.6 lock through a command that outlives two TTLs" {
    # The command ends when the test opens the gate, after the checks below,
    # however long they take on a loaded machine (a busy check over TLS took
    # 1.2 s there: a command of fixed length ended before the checks did).
    # The TTL scales with TIME_SCALE, as the sanitizer build's runs do.
    local rk t0 pttl ttl_ms
    rk=$(redis_key "$K")
    ttl_ms=$((600 * TIME_SCALE))
    t0=$(now_us)
    bl_bg -r "$TLS_URL" --tls-ca "$TLS_CA" --ttl "$(scaled_s 0.6)" "$K" sh -c \
        'echo "$BUFFERLOCK_TOKEN" > "$1.tmp"; mv "$1.tmp" "$1"; '"$GATE_WAIT" "$T/gate" "$T/token"
    wait_for_file "$T/token" 10 || fail "the command did not start: $(cat "$T/bg.err")"
    # more than twice the TTL later, the lock is still ours
    while (($(elapsed_ms "$t0") < ttl_ms * 7 / 3)); do sleep 0.05; done
    pid_alive "$BG_PID" || fail "bufferlock ended early"
    run --separate-stderr bl -r "$TLS_URL" --tls-ca "$TLS_CA" "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
    assert_equal "$(rcli_to TLS GET "$rk")" "$(cat "$T/token")"
    pttl=$(rcli_to TLS PTTL "$rk")
    ((pttl > 0 && pttl <= ttl_ms)) || fail "PTTL $pttl, expected 1..$ttl_ms"
    : >"$T/gate"
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not exit"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.err")" ""
    assert_equal "$(rcli_to TLS EXISTS "$rk")" 0
}

@test "tls: --on-lost term stops the command when the lock is taken over TLS" {
    local rk t0 ms
    rk=$(redis_key "$K")
    bl_bg -r "$TLS_URL" --tls-ca "$TLS_CA" --ttl 2 --connect-timeout 0.2 --io-timeout 0.2 --on-lost term "$K" sh -c \
        'trap "echo term > \"\$0.term\"; exit 7" TERM
         echo "$BUFFERLOCK_TOKEN" > "$0.tmp"; mv "$0.tmp" "$0"
         i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
         echo finished > "$0.done"' "$T/token"
    wait_for_file "$T/token" 10 || fail "the command did not start: $(cat "$T/bg.err")"
    t0=$(now_us)
    assert_equal "$(rcli_to TLS SET "$rk" othertoken PX 60000)" OK
    wait_for_exit "$BG_PID" 8 || fail "bufferlock did not exit after the lock was lost"
    ms=$(elapsed_ms "$t0")
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 7
    assert_file_exists "$T/token.term"
    assert_file_not_exists "$T/token.done"
    ((ms < 4000)) || fail "the command was stopped only after $ms ms"
    grep -q 'lost the lock' "$T/bg.err" || fail "no 'lost the lock' warning: $(cat "$T/bg.err")"
    assert_equal "$(rcli_to TLS GET "$rk")" othertoken
}

@test "tls: cache stampede over rediss://: 8 concurrent callers run the command once, all print the same" {
    local i first
    for ((i = 0; i < 8; i++)); do
        spawn_caller "$i" -r "$TLS_URL" --tls-ca "$TLS_CA" "$K" "$COUNTED" 1
    done
    wait_callers 60
    first=$(cat "$T/out.0")
    [[ $first == "run "* ]] || fail "caller 0 printed '$first' (stderr: $(cat "$T/err.0"))"
    for ((i = 0; i < 8; i++)); do
        [[ -f $T/res.$i ]] || fail "caller $i left no result"
        assert_equal "$(caller_status "$i")" 0
        [[ ! -s $T/err.$i ]] || fail "caller $i stderr: $(cat "$T/err.$i")"
        cmp -s "$T/out.0" "$T/out.$i" || fail "caller $i printed '$(cat "$T/out.$i")', caller 0 '$first'"
    done
    assert_runs 1
    # the lock lived in Redis (over TLS) and was released
    assert_file_not_exists "$(lock_path "$C/locks" "$K")"
    assert_equal "$(rcli_to TLS EXISTS "$(redis_key "$K")")" 0
}

# --- mutual TLS ------------------------------------------------------------------------

@test "tls: mutual TLS with --tls-cert/--tls-key, and with BUFFERLOCK_TLS_CA/_CERT/_KEY" {
    run --separate-stderr bl -r "$MTLS_URL" --tls-ca "$TLS_CA" \
        --tls-cert "$TLS_CLIENT_CERT" --tls-key "$TLS_CLIENT_KEY" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
    BUFFERLOCK_TLS_CA=$TLS_CA BUFFERLOCK_TLS_CERT=$TLS_CLIENT_CERT BUFFERLOCK_TLS_KEY=$TLS_CLIENT_KEY \
        run --separate-stderr bl acquire -r "$MTLS_URL" "$K"
    assert_success
    assert_regex "$output" '^[0-9a-f]{32}$'
    assert_stderr_empty
    assert_equal "$(rcli_to MTLS GET "$(redis_key "$K")")" "$output"
}

@test "tls: a --tls-key that group or others can read: one warning naming it and its mode; 0600: none" {
    local key=$T/client.key
    cp -- "$TLS_CLIENT_KEY" "$key"
    local mode
    for mode in 644 640 604; do
        chmod "$mode" "$key"
        run --separate-stderr bl -r "$MTLS_URL" --tls-ca "$TLS_CA" --tls-cert "$TLS_CLIENT_CERT" --tls-key "$key" \
            "$K" echo ran
        assert_success
        assert_output ran
        assert_one_bufferlock_line "private key $key is readable by group or others (mode 0$mode)" "chmod 600"
    done
    # the same through BUFFERLOCK_TLS_KEY; -q silences it
    BUFFERLOCK_TLS_KEY=$key run --separate-stderr bl status -r "$MTLS_URL" --tls-ca "$TLS_CA" \
        --tls-cert "$TLS_CLIENT_CERT" "$K"
    assert_success
    assert_one_bufferlock_line "private key $key is readable by group or others (mode 0604)"
    run --separate-stderr bl -q -r "$MTLS_URL" --tls-ca "$TLS_CA" --tls-cert "$TLS_CLIENT_CERT" --tls-key "$key" \
        "$K" echo ran
    assert_success
    assert_stderr_empty
    chmod 600 "$key"
    run --separate-stderr bl -r "$MTLS_URL" --tls-ca "$TLS_CA" --tls-cert "$TLS_CLIENT_CERT" --tls-key "$key" \
        "$K" echo ran
    assert_success
    assert_stderr_empty
}

@test "tls: a server that requires a client certificate, none given: 69 naming the server" {
    bl_timed -r "$MTLS_URL" --tls-ca "$TLS_CA" "${FAST[@]}" "$K" touch "$T/ran"
    assert_tls_error "rediss://127.0.0.1:$MTLS_PORT"
    BUFFERLOCK_TLS_CA=$TLS_CA bl_timed status -r "$MTLS_URL" "${FAST[@]}" "$K"
    assert_tls_error "rediss://127.0.0.1:$MTLS_PORT"
}

# --- usage errors -----------------------------------------------------------------------

@test "tls: --tls-ca/--tls-cert/--tls-key without a rediss:// URL are usage errors naming the option" {
    local opt file
    for opt in --tls-ca --tls-cert --tls-key; do
        case $opt in
            --tls-ca) file=$TLS_CA ;;
            --tls-cert) file=$TLS_CLIENT_CERT ;;
            --tls-key) file=$TLS_CLIENT_KEY ;;
        esac
        run --separate-stderr bl -r "$REDIS_URL" "$opt" "$file" "$K" touch "$T/ran"
        assert_usage_error "$opt"
        BUFFERLOCK_REDIS=$REDIS_URL run --separate-stderr bl "$opt" "$file" "$K" touch "$T/ran"
        assert_usage_error "$opt"
        run --separate-stderr bl -d "$D" "$opt" "$file" "$K" touch "$T/ran"
        assert_usage_error "$opt"
    done
    run --separate-stderr bl -r "$REDIS_URL" --tls-cert "$TLS_CLIENT_CERT" --tls-key "$TLS_CLIENT_KEY" \
        "$K" touch "$T/ran"
    assert_usage_error --tls-
    run --separate-stderr bl status -r "$REDIS_URL" --tls-ca "$TLS_CA" "$K"
    assert_usage_error --tls-ca
    assert_file_not_exists "$T/ran"
    assert_equal "$(rcli DBSIZE)" 0
}

@test "tls: --tls-cert without --tls-key, and the reverse, are usage errors naming the options" {
    local url
    url="rediss://127.0.0.1:$(free_port)" # nothing listens: a 69 would mean it connected
    run --separate-stderr bl -r "$url" --tls-ca "$TLS_CA" --tls-cert "$TLS_CLIENT_CERT" "$K" touch "$T/ran"
    assert_usage_error --tls-cert --tls-key
    run --separate-stderr bl -r "$url" --tls-ca "$TLS_CA" --tls-key "$TLS_CLIENT_KEY" "$K" touch "$T/ran"
    assert_usage_error --tls-key --tls-cert
    assert_file_not_exists "$T/ran"
}

@test "tls: a missing or unreadable --tls-ca/--tls-cert/--tls-key file is a usage error naming it" {
    local url bad
    url="rediss://127.0.0.1:$(free_port)"
    mkdir "$T/adir"
    # a path that does not exist, and one that cannot be read as a file (a
    # directory; for a non-root user also a mode-000 file)
    local bads=("$T/nope/missing.pem" "$T/adir")
    if ! is_root; then
        cp -- "$TLS_CA" "$T/noread.pem"
        chmod 000 "$T/noread.pem"
        bads+=("$T/noread.pem")
    fi
    for bad in "${bads[@]}"; do
        run --separate-stderr bl -r "$url" --tls-ca "$bad" "$K" touch "$T/ran"
        assert_usage_error "$bad"
        run --separate-stderr bl -r "$url" --tls-ca "$TLS_CA" --tls-cert "$bad" \
            --tls-key "$TLS_CLIENT_KEY" "$K" touch "$T/ran"
        assert_usage_error "$bad"
        run --separate-stderr bl -r "$url" --tls-ca "$TLS_CA" --tls-cert "$TLS_CLIENT_CERT" \
            --tls-key "$bad" "$K" touch "$T/ran"
        assert_usage_error "$bad"
        BUFFERLOCK_TLS_CA=$bad run --separate-stderr bl -r "$url" "$K" touch "$T/ran"
        assert_usage_error "$bad"
    done
    assert_file_not_exists "$T/ran"
}

@test "tls: a --tls-ca/--tls-cert/--tls-key file that is not PEM is a usage error naming it" {
    local url
    url="rediss://127.0.0.1:$(free_port)"
    run --separate-stderr bl -r "$url" --tls-ca "$TLS_NOTPEM" "$K" touch "$T/ran"
    assert_usage_error "$TLS_NOTPEM"
    run --separate-stderr bl -r "$url" --tls-ca "$TLS_CA" --tls-cert "$TLS_NOTPEM" \
        --tls-key "$TLS_CLIENT_KEY" "$K" touch "$T/ran"
    assert_usage_error "$TLS_NOTPEM"
    run --separate-stderr bl -r "$url" --tls-ca "$TLS_CA" --tls-cert "$TLS_CLIENT_CERT" \
        --tls-key "$TLS_NOTPEM" "$K" touch "$T/ran"
    assert_usage_error "$TLS_NOTPEM"
    BUFFERLOCK_TLS_CA=$TLS_NOTPEM run --separate-stderr bl -r "$url" "$K" touch "$T/ran"
    assert_usage_error "$TLS_NOTPEM"
    BUFFERLOCK_TLS_CA=$TLS_CA BUFFERLOCK_TLS_CERT=$TLS_CLIENT_CERT BUFFERLOCK_TLS_KEY=$TLS_NOTPEM \
        run --separate-stderr bl -r "$url" "$K" touch "$T/ran"
    assert_usage_error "$TLS_NOTPEM"
    assert_file_not_exists "$T/ran"
}

@test "tls: BUFFERLOCK_TLS_* set to garbage do not disturb plain redis:// (nor the file backend)" {
    export BUFFERLOCK_TLS_CA=$T/nope/ca.pem BUFFERLOCK_TLS_CERT=$TLS_NOTPEM BUFFERLOCK_TLS_KEY='not a file'
    run --separate-stderr bl -r "$REDIS_URL" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
    run --separate-stderr bl status -r "$REDIS_URL" "$K"
    assert_success
    assert_output free
    run --separate-stderr bl -d "$D" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
}

# --- handshake failures -----------------------------------------------------------------

@test "tls: an untrusted server certificate gives 69 'certificate verify failed' naming the server" {
    bl_timed -r "$TLS_URL" --tls-ca "$TLS_CA2" "${FAST[@]}" "$K" touch "$T/ran"
    assert_tls_error "rediss://127.0.0.1:$TLS_PORT" 'certificate verify failed'
    # without --tls-ca: the system CAs do not know the test CA either
    bl_timed -r "$TLS_URL" "${FAST[@]}" "$K" touch "$T/ran"
    assert_tls_error "rediss://127.0.0.1:$TLS_PORT" 'certificate verify failed'
    bl_timed acquire -r "$TLS_URL" --tls-ca "$TLS_CA2" "${FAST[@]}" "$K"
    assert_tls_error "rediss://127.0.0.1:$TLS_PORT" 'certificate verify failed'
    assert_equal "$(rcli_to TLS DBSIZE)" 0
}

@test "tls: a verification failure under --wait ends the wait at once with 69 (waiting cannot mend it)" {
    bl_timed -r "$TLS_URL" --tls-ca "$TLS_CA2" "${FAST[@]}" -w 30 "$K" touch "$T/ran"
    assert_tls_error "rediss://127.0.0.1:$TLS_PORT" 'certificate verify failed'
}

@test "tls: an expired server certificate gives 69 'certificate verify failed'" {
    start_tls_redis_as EXP "$TLS_EXPIRED_CERT" "$TLS_EXPIRED_KEY"
    # the server is up (redis-cli --insecure), and OpenSSL's own client
    # refuses its certificate
    assert_equal "$(rcli_to EXP PING)" PONG
    run rcli_raw --tls --cacert "$TLS_CA" -h 127.0.0.1 -p "$EXP_PORT" PING
    assert_output --partial 'certificate verify failed'
    bl_timed -r "$EXP_URL" --tls-ca "$TLS_CA" "${FAST[@]}" "$K" touch "$T/ran"
    assert_tls_error "rediss://127.0.0.1:$EXP_PORT" 'certificate verify failed'
    bl_timed -r "rediss://localhost:$EXP_PORT" --tls-ca "$TLS_CA" "${FAST[@]}" "$K" touch "$T/ran"
    assert_tls_error "rediss://localhost:$EXP_PORT" 'certificate verify failed'
}

@test "tls: a certificate for another name gives 69 'certificate verify failed'" {
    start_tls_redis_as OTHER "$TLS_OTHER_CERT" "$TLS_OTHER_KEY"
    # the certificate chains to the CA (redis-cli without host checks accepts it)...
    assert_equal "$(rcli_to OTHER PING)" PONG
    # ...but names only other.example
    bl_timed -r "rediss://localhost:$OTHER_PORT" --tls-ca "$TLS_CA" "${FAST[@]}" "$K" touch "$T/ran"
    assert_tls_error "rediss://localhost:$OTHER_PORT" 'certificate verify failed'
    bl_timed -r "$OTHER_URL" --tls-ca "$TLS_CA" "${FAST[@]}" "$K" touch "$T/ran"
    assert_tls_error "rediss://127.0.0.1:$OTHER_PORT" 'certificate verify failed'
    assert_equal "$(rcli_to OTHER DBSIZE)" 0
}

@test "tls: a plaintext redis-server behind rediss:// gives 69 naming the server, within the timeouts" {
    bl_timed -r "rediss://127.0.0.1:$REDIS_PORT" --tls-ca "$TLS_CA" "${FAST[@]}" "$K" touch "$T/ran"
    assert_tls_error "rediss://127.0.0.1:$REDIS_PORT"
    assert_equal "$(rcli DBSIZE)" 0
}

@test "tls: a TLS-only port behind plain redis:// gives 69 naming the server, within the timeouts" {
    bl_timed -r "redis://127.0.0.1:$TLS_PORT" "${FAST[@]}" "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "127.0.0.1:$TLS_PORT"
    ((MS < LIMIT_MS)) || fail "the failure took $MS ms (limit $LIMIT_MS ms)"
    assert_file_not_exists "$T/ran"
    assert_equal "$(rcli_to TLS DBSIZE)" 0
}

@test "tls: the password of rediss://:s3cret@... never appears on stderr" {
    local pw=s3cret
    start_tls_redis_as AUTH "$TLS_SERVER_CERT" "$TLS_SERVER_KEY" --requirepass "$pw"
    # a verbose run that works
    run --separate-stderr bl -v -r "rediss://:$pw@127.0.0.1:$AUTH_PORT" --tls-ca "$TLS_CA" "$K" echo ran
    assert_success
    assert_output ran
    assert_no_secret "$pw"
    # a handshake failure
    bl_timed -r "rediss://:$pw@127.0.0.1:$AUTH_PORT" --tls-ca "$TLS_CA2" "${FAST[@]}" "$K" touch "$T/ran"
    assert_tls_error "rediss://" 'certificate verify failed'
    assert_no_secret "$pw"
    bl_timed -v -r "rediss://:$pw@127.0.0.1:$AUTH_PORT" --tls-ca "$TLS_CA2" "${FAST[@]}" "$K" touch "$T/ran"
    assert_failure 69
    assert_no_secret "$pw"
    # plaintext behind rediss://
    bl_timed -r "rediss://:$pw@127.0.0.1:$REDIS_PORT" --tls-ca "$TLS_CA" "${FAST[@]}" "$K" touch "$T/ran"
    assert_tls_error "rediss://"
    assert_no_secret "$pw"
    # a wrong password over TLS
    bl_timed -r "rediss://:Wr0ngPa55@127.0.0.1:$AUTH_PORT" --tls-ca "$TLS_CA" "${FAST[@]}" "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line "127.0.0.1:$AUTH_PORT"
    assert_no_secret Wr0ngPa55
    assert_file_not_exists "$T/ran"
}
