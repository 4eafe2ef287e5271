#!/usr/bin/env bats
# bufferlock cache --store http://… with credentials and TLS (issue 33): a
# bearer token from --store-token-file (the owner's alone, as --sign-key),
# user:password in the URL (scrubbed from argv, shown as ***, never
# printed), https verified against --tls-ca.

bats_require_minimum_version 1.5.0

load http_helpers
load cache_helpers

setup_file() { http_setup_file; }
teardown_file() { http_teardown_file; }

setup() {
    cache_setup
    http_setup
}
teardown() {
    track_descendants
    cache_teardown
}

@test "--store-token-file: sent as a bearer token; refused like --sign-key when others can read it" {
    local url
    url=$(http_url bearer)
    printf '%s\n' "$HTTP_TOKEN" >"$T/token"
    chmod 644 "$T/token"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" --store-token-file "$T/token" "$K" "$COUNTED"
    assert_usage_error "--store-token-file" "readable by group or others"
    BUFFERLOCK_STORE_TOKEN_FILE=$T/token run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" "$K" "$COUNTED"
    assert_usage_error "readable by group or others"
    : >"$T/empty"
    chmod 600 "$T/empty"
    head -c 70000 /dev/zero | tr '\0' a >"$T/huge"
    chmod 600 "$T/huge"
    local f
    for f in "$T/empty" "$T/huge" "$T" "$T/missing"; do
        run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" --store-token-file "$f" "$K" "$COUNTED"
        assert_usage_error "--store-token-file"
    done
    assert_runs 0
    # 0600, a trailing newline: the token works, and is never printed.
    chmod 600 "$T/token"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" --store-token-file "$T/token" "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    local first=$output
    assert_file_exists "$(obj_path "$K" bearer)"
    BUFFERLOCK_STORE_TOKEN_FILE=$T/token run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" -v "$K" "$COUNTED"
    assert_success
    assert_output "$first"
    assert_no_secret "$HTTP_TOKEN"
    assert_runs 1
    # A wrong token is refused by the server: a warning, the build, no token shown.
    printf 'not-the-token' >"$T/bad"
    chmod 600 "$T/bad"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" --store-token-file "$T/bad" "$K" "$COUNTED" 0 other
    assert_success
    assert_output other
    assert_read_warning "$K" "$url" "HTTP status 401"
    [[ $stderr != *not-the-token* ]] || fail "the token was printed: $stderr"
}

@test "user:password in the URL works through /auth/; never printed, shown as ***, not in /proc/PID/cmdline" {
    local pw=$HTTP_PASSWORD url shown
    url="http://$HTTP_USER:$pw@127.0.0.1:$HTTP_PORT/auth/$HTTP_T/"
    shown="http://$HTTP_USER:***@127.0.0.1:$HTTP_PORT/auth/$HTTP_T/"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" "$K" "$COUNTED" 0 authed
    assert_success
    assert_output authed
    assert_stderr_empty
    assert_file_exists "$(obj_path "$K" auth)"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" -v "$K" false
    assert_success
    assert_output authed
    assert_no_secret "$pw"
    # A wrong password: the warning shows the URL with ***.
    local wrong="wrong-$RANDOM-pass"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "http://$HTTP_USER:$wrong@127.0.0.1:$HTTP_PORT/auth/$HTTP_T/" \
        --drop "$K"
    [[ $stderr != *"$wrong"* && $output != *"$wrong"* ]] || fail "the password was printed: $stderr"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "http://$HTTP_USER:$wrong@127.0.0.1:$HTTP_PORT/auth/$HTTP_T/" \
        "$K" "$COUNTED" 0 unauthed
    assert_success
    assert_output unauthed
    assert_read_warning "$K" "$shown" "HTTP status 401"
    [[ $stderr != *"$wrong"* ]] || fail "the password was printed: $stderr"
    # While a build runs, its argv shows *** and not the password.
    blc_bg --store "$url" other "$GATED" slow
    poll_until 10 _runs_at_least 3 || fail "the build did not start: $(cat "$T/bg.err")"
    if grep -qaF -- "$pw" "/proc/$BG_PID/cmdline"; then
        fail "the password is in /proc/$BG_PID/cmdline: $(tr '\0' ' ' <"/proc/$BG_PID/cmdline")"
    fi
    grep -qaF -- "$shown" "/proc/$BG_PID/cmdline" || fail "cmdline: $(tr '\0' ' ' <"/proc/$BG_PID/cmdline")"
    open_gate
    wait_for_exit "$BG_PID" 20 || fail "the build did not finish"
    assert_equal "$(cat "$T/bg.out")" slow
    stderr=$(cat "$T/bg.err") output=''
    assert_stderr_empty
    assert_file_exists "$(obj_path other auth)"
}

@test "--list, --drop and --gc refused credentials (401): one line naming the refusal and the status, the error status" {
    local wrong="wrong-$RANDOM-pass" url shown good
    url="http://$HTTP_USER:$wrong@127.0.0.1:$HTTP_PORT/auth/$HTTP_T/"
    shown="http://$HTTP_USER:***@127.0.0.1:$HTTP_PORT/auth/$HTTP_T/"
    good="http://$HTTP_USER:$HTTP_PASSWORD@127.0.0.1:$HTTP_PORT/auth/$HTTP_T/"
    "$BL" cache --cache-dir "$C" --store "$good" "$K" "$COUNTED" 0 stored >/dev/null || fail "the build failed"
    local refused="the server refused the credentials (PROPFIND: HTTP status 401)"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" --list
    assert_failure 69
    assert_output ""
    assert_equal "$stderr" "bufferlock: cannot list the cache entries: HTTP store at $shown: $refused"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" --drop "$K"
    assert_failure 69
    assert_equal "$stderr" "bufferlock: cannot remove the cache entry of '$K': HTTP store at $shown: $refused"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" --gc
    assert_failure 69
    assert_equal "$stderr" "bufferlock: cannot list the cache entries: HTTP store at $shown: $refused"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" --error-exit 7 --list
    assert_failure 7
    # No credentials at all: the server wants some.
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "http://127.0.0.1:$HTTP_PORT/auth/$HTTP_T/" --list
    assert_failure 69
    assert_equal "$stderr" "bufferlock: cannot list the cache entries: HTTP store at http://127.0.0.1:$HTTP_PORT/auth/$HTTP_T/: the server wants credentials (PROPFIND: HTTP status 401): user:password in the URL or --store-token-file"
    # A wrong bearer token is refused credentials too.
    printf 'not-the-token' >"$T/bad"
    chmod 600 "$T/bad"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$(http_url bearer)" --store-token-file "$T/bad" --drop "$K"
    assert_failure 69
    assert_equal "$stderr" "bufferlock: cannot remove the cache entry of '$K': HTTP store at $(http_url bearer): $refused"
    # The entry is still there, and the right password lists and drops it.
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$good" --list
    assert_success
    assert_line --regexp " $K\$"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$good" --drop "$K"
    assert_success
    assert_stderr_empty
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$good" --list
    assert_output ""
}

@test "https: verified against --tls-ca; an unknown CA is a warning and a build" {
    local url
    url=$(https_url)
    run --separate-stderr blc --store "$url" --tls-ca "$TLS_CA" "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    local first=$output
    assert_file_exists "$(obj_path "$K")"
    run --separate-stderr blc --store "$url" --tls-ca "$TLS_CA" "$K" "$COUNTED"
    assert_output "$first"
    assert_stderr_empty
    assert_runs 1
    # The system CAs do not know the test CA; nor does another CA.
    run --separate-stderr blc --store "$url" "$K" "$COUNTED" 0 unverified
    assert_success
    assert_output unverified
    assert_read_warning "$K" "$url" "certificate"
    run --separate-stderr blc --store "$url" --tls-ca "$TLS_CA2" "$K" "$COUNTED" 0 unverified-2
    assert_success
    assert_output unverified-2
    assert_read_warning "$K" "$url" "certificate"
    assert_runs 3
    # Nothing unverified was uploaded over it.
    run --separate-stderr blc --store "$url" --tls-ca "$TLS_CA" "$K" false
    assert_output "$first"
}

@test "https: a --tls-ca that cannot be read or parsed is a usage error naming it; nothing runs" {
    local url f
    url=$(https_url)
    printf 'not a certificate\n' >"$T/garbage.pem"
    : >"$T/empty.pem"
    for f in "$T/missing.pem" "$T/garbage.pem" "$T/empty.pem" "$T"; do
        run --separate-stderr blc --store "$url" --tls-ca "$f" "$K" "$COUNTED"
        assert_usage_error "--tls-ca $f"
        BUFFERLOCK_TLS_CA=$f run --separate-stderr blc --store "$url" "$K" "$COUNTED"
        assert_usage_error "$f"
    done
    # before any connection: no server at all gives the same
    run --separate-stderr blc --store https://127.0.0.1:1/x/ --tls-ca /nonexistent/ca.crt "$K" -- echo hi
    assert_usage_error "--tls-ca /nonexistent/ca.crt" "No such file"
    assert_runs 0
    assert_not_exist "$(obj_path "$K")"
}

@test "-v with a password in the store URL names what keeps a store's password off the command line" {
    local url
    url="http://$HTTP_USER:$HTTP_PASSWORD@127.0.0.1:$HTTP_PORT/auth/$HTTP_T/"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    run --separate-stderr "$BL" cache --cache-dir "$C" -v --store="$url" "$K" "$COUNTED"
    assert_success
    assert_no_secret "$HTTP_PASSWORD"
    [[ $stderr == *"password of the http store was on the command line"*"BUFFERLOCK_CACHE_STORE"*"--store-token-file"* ]] ||
        fail "-v does not name the store's ways: $stderr"
    [[ $stderr != *Redis* && $stderr != *BUFFERLOCK_REDIS_PASSWORD* ]] || fail "-v talks of Redis: $stderr"
    # in the environment, it is not on the command line: nothing to say
    BUFFERLOCK_CACHE_STORE=$url run --separate-stderr "$BL" cache --cache-dir "$C" -v "$K" "$COUNTED"
    assert_success
    [[ $stderr != *"on the command line"* ]] || fail "-v talks of a password not given: $stderr"
}

@test "https: an output over 1 MiB goes up as one chunked PUT through TLS and comes back whole" {
    local url
    url=$(https_url)
    head -c $((5 * 1024 * 1024 + 123)) /dev/urandom >"$T/5m"
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" \
        "$BL" cache --cache-dir "$C" --store "$url" --tls-ca "$TLS_CA" "$K" cat "$T/5m"
    assert_success
    assert_stderr_empty
    assert_same_bytes "$T/5m" "$T/out"
    poll_until 5 _logged PUT 1 || true
    [[ $(requests PUT) =~ ^"PUT "[^\ ]*"/$HTTP_T/$(obj "$K") 201 cl="[0-9]+" te=chunked"$ ]] ||
        fail "not one chunked PUT: $(requests PUT)"
    run --separate-stderr bash -c '"$@" >"$0"' "$T/hit" \
        "$BL" cache --cache-dir "$C" --store "$url" --tls-ca "$TLS_CA" "$K" false
    assert_success
    assert_stderr_empty
    assert_same_bytes "$T/5m" "$T/hit"
}
