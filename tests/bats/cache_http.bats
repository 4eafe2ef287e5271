#!/usr/bin/env bats
# bufferlock cache --store http://… (SPEC §18, issue 33): entries as objects
# on a real nginx with WebDAV, started by the suite on a free loopback port;
# misses, hits and --output through it; every fault a miss and a rebuild with
# one warning, never half-restored output, never a hang; credentials kept
# out of sight; --list, --drop and --gc through PROPFIND.  (Two runners and
# a Redis lock: cache_http_fleet.bats.)

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

# obj K [LOCATION]: KEY's object name (no --depends).
obj() {
    printf '%s.entry\n' "$(key_md5 "$1")"
}

# seed_object KEY TEXT LOCATION: KEY's object holding TEXT, built through
# /cache/ and copied where LOCATION keeps its objects.
seed_object() {
    blh "$1" echo "$2" >/dev/null || fail "cannot build the seed of '$1'"
    mkdir -p "$(obj_dir "$3")"
    cp -- "$(obj_path "$1")" "$(obj_path "$1" "$3")"
}

# assert_read_warning KEY URL WHAT...: $stderr is one line: the warning of an
# entry that could not be read, or was ignored, naming KEY, the store, the
# object, and each WHAT.
assert_read_warning() {
    local key=$1 url=$2
    shift 2
    assert_one_bufferlock_line "the cache entry of '$key' (HTTP store at $url, object $(obj "$key")): " \
        "; rebuilding it" "$@"
    [[ $stderr == "bufferlock: cannot read the cache entry"* ||
        $stderr == "bufferlock: ignoring the cache entry"* ]] || fail "not a read warning: $stderr"
}

# assert_read_warning_then_unstored KEY URL WHAT...: where both the read and
# the upload fail (the server is down, or refuses everything): the read
# warning, and at most one more line, the "not stored" one.
assert_read_warning_then_unstored() {
    local key=$1 url=$2 all=$stderr
    shift 2
    if [[ $all == *$'\n'* ]]; then
        stderr=${all#*$'\n'}
        assert_one_bufferlock_line "output of '$key' not stored: HTTP store at $url: "
        stderr=${all%%$'\n'*}
    fi
    assert_read_warning "$key" "$url" "$@"
    stderr=$all
}

# _runs_at_least N: the counted command ran N times or more.
_runs_at_least() { (($(runs) >= $1)); }

# assert_within MS BOUND_MS: the call did not hang (BOUND_MS plus room for load).
assert_within() {
    (($1 < $(slack_ms "$2"))) || fail "took $1 ms, more than $(slack_ms "$2") ms"
}

@test "the test server: PUT, GET, DELETE, PROPFIND Depth 1; 405 at /nolist/, 413 at /small/, https with the test CA" {
    printf 'hello\n' >"$T/f"
    assert_equal "$(curl_status -T "$T/f" "${STORE}x.entry")" 201
    assert_equal "$(curl -s "${STORE}x.entry")" hello
    assert_file_exists "$(obj_dir)/x.entry"
    run curl -s -X PROPFIND -H 'Depth: 1' -w '\n%{http_code}' "$STORE"
    assert_line 207
    assert_output --partial "<D:href>/cache/$HTTP_T/x.entry</D:href>"
    assert_equal "$(curl_status -X PROPFIND -H 'Depth: 1' "$(http_url nolist)")" 405
    assert_equal "$(curl_status -T "$T/f" "$(http_url small)x")" 201
    head -c 5000 /dev/urandom >"$T/g"
    assert_equal "$(curl_status -T "$T/g" "$(http_url small)y")" 413
    assert_equal "$(curl_status "$(http_url auth)x")" 401
    assert_equal "$(curl_status -H "Authorization: Bearer $HTTP_TOKEN" "$(http_url bearer)x")" 404
    assert_equal "$(curl_status --cacert "$TLS_CA" "$(https_url)x.entry")" 200
    run curl -s -o /dev/null "$(https_url)x.entry"
    assert_failure 60
    assert_equal "$(curl_status -X DELETE "${STORE}x.entry")" 204
    assert_file_not_exists "$(obj_dir)/x.entry"
}

@test "a miss builds and uploads KEY's entry under the URL's path; a hit serves the same bytes, no build" {
    run --separate-stderr blh "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    local first=$output
    [[ $first == "run "* ]] || fail "built: $first"
    assert_file_exists "$(obj_path "$K")"
    assert_equal "$(objects)" "$(obj "$K")"
    run --separate-stderr blh "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    assert_output "$first"
    assert_runs 1
    # Nothing in the cache directory: the store holds the entries.
    local files
    files=$(find "$C" -name '*.entry' 2>/dev/null)
    [[ -z $files ]] || fail "entry files in the cache dir: $files"
    # The object is an entry file: the file store serves it as its own.
    mkdir -p "$T/fc"
    cp -- "$(obj_path "$K")" "$(entry_path "$K" "$T/fc")"
    run --separate-stderr "$BL" cache --cache-dir "$T/fc" "$K" false
    assert_success
    assert_output "$first"
    # A URL without its trailing slash names the same place; so does the
    # environment variable.
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "${STORE%/}" "$K" "$COUNTED"
    assert_success
    assert_output "$first"
    assert_stderr_empty
    BUFFERLOCK_CACHE_STORE=$STORE run --separate-stderr "$BL" cache --cache-dir "$C" "$K" "$COUNTED"
    assert_success
    assert_output "$first"
    assert_runs 1
}

@test "binary output survives the trip byte for byte; a failing command stores nothing" {
    head -c 300000 /dev/urandom >"$T/bin.dat"
    run --separate-stderr blh bin cat "$T/bin.dat"
    assert_success
    blh bin false >"$T/bin.out" || fail "the hit failed"
    assert_same_bytes "$T/bin.dat" "$T/bin.out"
    run --separate-stderr blh failing sh -c 'echo partial; exit 3'
    assert_failure 3
    assert_output partial
    assert_stderr_empty
    assert_file_not_exists "$(obj_path failing)"
}

@test "--depends: the object is <md5>.<inputs>.entry; another input state sits beside it; both hit" {
    printf 'v1\n' >"$T/dep"
    run --separate-stderr blh --depends "$T/dep" "$K" "$COUNTED"
    assert_success
    local one=$output md5
    md5=$(key_md5 "$K")
    assert_regex "$(objects)" "^$md5\.[0-9a-f]+\.entry\$"
    printf 'v2\n' >"$T/dep"
    run --separate-stderr blh --depends "$T/dep" "$K" "$COUNTED"
    assert_success
    local two=$output
    [[ $one != "$two" ]] || fail "v2 was served v1's entry"
    assert_equal "$(objects | grep -cE "^$md5\.[0-9a-f]+\.entry\$")" 2
    printf 'v1\n' >"$T/dep"
    run --separate-stderr blh --depends "$T/dep" "$K" "$COUNTED"
    assert_output "$one"
    printf 'v2\n' >"$T/dep"
    run --separate-stderr blh --depends "$T/dep" "$K" "$COUNTED"
    assert_output "$two"
    assert_stderr_empty
    assert_runs 2
}

@test "--output files are stored with the entry and restored from the http store" {
    mkdir -p "$T/w"
    cat >"$T/bin/mk" <<EOF
#!/bin/sh
echo "\$\$" >>'$RUNS'
mkdir -p dist/sub
head -c 200000 /dev/urandom >dist/blob
printf 'x\n' >dist/sub/x.sh
chmod 755 dist/sub/x.sh
ln -s blob dist/link
echo built
EOF
    chmod +x "$T/bin/mk"
    (cd "$T/w" && blh --output dist "$K" "$T/bin/mk") >"$T/o1" 2>"$T/e1" || fail "build: $(cat "$T/e1")"
    cp -a "$T/w/dist" "$T/expected"
    rm -rf "$T/w/dist"
    run --separate-stderr bash -c "cd '$T/w' && \"\$@\"" _ "$BL" cache --cache-dir "$C" --store "$STORE" \
        --output dist "$K" "$T/bin/mk"
    assert_success
    assert_output built
    assert_stderr_empty
    assert_runs 1
    diff -r --no-dereference "$T/expected" "$T/w/dist" || fail "the restored tree differs"
    [[ -x $T/w/dist/sub/x.sh && -L $T/w/dist/link ]] || fail "mode or link lost"
}

@test "404 is a miss without a warning: an object removed on the server is rebuilt silently" {
    blh "$K" "$COUNTED" >/dev/null
    rm -f -- "$(obj_path "$K")"
    run --separate-stderr blh "$K" "$COUNTED" 0 again
    assert_success
    assert_output again
    assert_stderr_empty
    assert_runs 2
    assert_file_exists "$(obj_path "$K")"
}

@test "500 or 503 on read: one warning naming the status, the build runs, its output is served, exit 0" {
    local loc url code
    for loc in rd500 rd503; do
        code=${loc#rd}
        seed_object "$K" "old-$code" "$loc"
        url=$(http_url "$loc")
        run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" "$K" "$COUNTED" 0 "new-$code"
        assert_success
        assert_output "new-$code"
        assert_read_warning "$K" "$url" "HTTP status $code"
        [[ $stderr == "bufferlock: cannot read the cache entry"* ]] || fail "$stderr"
    done
    assert_runs 2
}

@test "a server that refuses everything (500), or none listening: output served, exit 0, the read warning" {
    local url port
    url=$(http_url e500)
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" "$K" "$COUNTED" 0 built-1
    assert_success
    assert_output built-1
    assert_read_warning_then_unstored "$K" "$url" "HTTP status 500"
    port=$(free_port)
    url="http://127.0.0.1:$port/cache/"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" "$K" "$COUNTED" 0 built-2
    assert_success
    assert_output built-2
    assert_read_warning_then_unstored "$K" "$url"
    assert_runs 2
}

@test "upload refused (413 at /small/, 500): output whole, the command's status, one warning, no object" {
    head -c 5000 /dev/urandom >"$T/5k"
    local url
    for url in "$(http_url small)" "$(http_url wr500)"; do
        run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" "$K" sh -c "echo x >>'$RUNS'; cat '$T/5k'"
        assert_success
        assert_one_bufferlock_line "output of '$K' not stored: HTTP store at $url: HTTP status"
        "$BL" cache --cache-dir "$C" --store "$url" "$K" cat "$T/5k" 2>/dev/null >"$T/out" ||
            fail "second call failed"
        assert_same_bytes "$T/5k" "$T/out"
    done
    assert_no_objects small
    assert_no_objects wr500
    [[ $(curl_status "$(http_url small)$(obj "$K")") == 404 ]] || fail "an object is served at /small/"
    assert_runs 2 # the first call at each (the second ones run cat, not counted)
    # 413 and 500 name their status.
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$(http_url small)" "$K" cat "$T/5k"
    assert_one_bufferlock_line "HTTP status 413"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$(http_url wr500)" "$K" cat "$T/5k"
    assert_one_bufferlock_line "HTTP status 500"
    # nginx's own temporary files are gone too.
    assert_equal "$(find "$HTTP_ROOT/.tmp" -type f | wc -l)" 0
}

@test "a truncated object: one warning, rebuilt, the new output served and stored" {
    local cut
    for cut in half 0 -1; do
        blh --force "$K" "$COUNTED" 0 "old-$cut" >/dev/null
        local f size
        f=$(obj_path "$K")
        size=$(stat -c %s "$f")
        case $cut in
            half) truncate -s $((size / 2)) "$f" ;;
            0) truncate -s 0 "$f" ;;
            *) truncate -s $((size - 1)) "$f" ;;
        esac
        run --separate-stderr blh "$K" "$COUNTED" 0 "new-$cut"
        assert_success
        assert_output "new-$cut"
        assert_read_warning "$K" "$STORE"
        run --separate-stderr blh "$K" false
        assert_success
        assert_output "new-$cut"
        assert_stderr_empty
    done
}

@test "an object with one byte flipped: one warning, rebuilt, never served" {
    head -c 100000 /dev/urandom >"$T/old"
    blh "$K" cat "$T/old" >/dev/null
    local f
    f=$(obj_path "$K")
    flip_byte "$f" $(($(stat -c %s "$f") / 2))
    run --separate-stderr blh "$K" "$COUNTED" 0 rebuilt
    assert_success
    assert_output rebuilt
    assert_read_warning "$K" "$STORE"
    run --separate-stderr blh "$K" false
    assert_output rebuilt
    assert_stderr_empty
}

@test "a body cut short by the server: one warning, only the rebuild's output, no hang" {
    head -c 200000 /dev/urandom >"$T/old"
    blh "$K" cat "$T/old" >/dev/null
    start_fault_server cut "$(obj_path "$K")"
    local t0
    t0=$(now_us)
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$FAULT_URL" --store-timeout 1 "$K" "$COUNTED" 0 rebuilt
    local ms
    ms=$(elapsed_ms "$t0")
    assert_success
    assert_output rebuilt
    assert_read_warning "$K" "$FAULT_URL"
    [[ $stderr == "bufferlock: cannot read the cache entry"* ]] || fail "$stderr"
    grep -qx "GET /cache/$HTTP_T/$(obj "$K")" "$FAULT_LOG" || fail "no GET of the object: $(cat "$FAULT_LOG")"
    assert_within "$ms" 5000
    assert_runs 1
}

@test "a stalled body, or no answer at all, with --store-timeout 1: one warning within a bound, the build runs" {
    head -c 200000 /dev/urandom >"$T/old"
    blh "$K" cat "$T/old" >/dev/null
    cp -- "$(obj_path "$K")" "$T/object"
    local mode t0 ms n=0
    for mode in stall silent; do
        start_fault_server "$mode" "$T/object"
        t0=$(now_us)
        run --separate-stderr "$BL" cache --cache-dir "$C" --store "$FAULT_URL" --store-timeout 1 "$K" "$COUNTED" 0 "rebuilt-$mode"
        ms=$(elapsed_ms "$t0")
        assert_success
        assert_output "rebuilt-$mode"
        assert_read_warning "$K" "$FAULT_URL" "--store-timeout"
        [[ $mode != stall || $stderr == *"no data for 1"* ]] || fail "not the stall text: $stderr"
        # 1 s of stall, then the build; never the default 10 s.
        ((ms >= 900)) || fail "gave up after $ms ms, before --store-timeout 1"
        assert_within "$ms" 6000
        assert_runs $((++n))
        kill -TERM "$FAULT_PID"
        wait_for_exit "$FAULT_PID" 5
    done
}

@test "--sign-key: an entry signed with another key is refused with one warning and rebuilt" {
    printf 'key-one-%s' "$RANDOM" >"$T/key1"
    printf 'key-two-%s' "$RANDOM" >"$T/key2"
    chmod 600 "$T/key1" "$T/key2"
    run --separate-stderr blh --sign-key "$T/key1" "$K" "$COUNTED" 0 signed-1
    assert_success
    assert_stderr_empty
    run --separate-stderr blh --sign-key "$T/key1" "$K" false
    assert_output signed-1
    assert_stderr_empty
    run --separate-stderr blh --sign-key "$T/key2" "$K" "$COUNTED" 0 signed-2
    assert_success
    assert_output signed-2
    assert_read_warning "$K" "$STORE" "signature does not match"
    run --separate-stderr blh --sign-key "$T/key2" "$K" false
    assert_output signed-2
    assert_stderr_empty
    assert_runs 2
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
    assert_read_warning_then_unstored "$K" "$url" "HTTP status 401"
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
    assert_read_warning_then_unstored "$K" "$shown" "HTTP status 401"
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
    assert_read_warning_then_unstored "$K" "$url"
    run --separate-stderr blc --store "$url" --tls-ca "$TLS_CA2" "$K" "$COUNTED" 0 unverified-2
    assert_success
    assert_output unverified-2
    assert_read_warning_then_unstored "$K" "$url"
    assert_runs 3
    # Nothing unverified was uploaded over it.
    run --separate-stderr blc --store "$url" --tls-ca "$TLS_CA" "$K" false
    assert_output "$first"
}

@test "--list (text and --json, \"store\": \"http\") and --drop KEY (every input state) through PROPFIND" {
    printf 'v1\n' >"$T/dep"
    blh --depends "$T/dep" "$K" echo one >/dev/null
    printf 'v2\n' >"$T/dep"
    blh --depends "$T/dep" "$K" echo two >/dev/null
    sleep 1.1 # newest by a clear margin, whatever clock the listing reads
    blh other echo three >/dev/null
    run --separate-stderr blh --list
    assert_success
    assert_stderr_empty
    assert_equal "${#lines[@]}" 3
    assert_line --regexp "^[0-9]+\.[0-9]{3} [0-9]+ - other\$"
    assert_equal "$(grep -cE "^[0-9]+\.[0-9]{3} [0-9]+ [0-9a-f]{12} $K\$" <<<"$output")" 2
    assert_regex "${lines[0]}" " other\$" # newest first
    run --separate-stderr blh --list --json
    assert_success
    assert_equal "$(jq -c '[.entries[] | {key, store, inputs: (.inputs != null)}] | sort_by(.key, .inputs)' <<<"$output")" \
        "[{\"key\":\"$K\",\"store\":\"http\",\"inputs\":true},{\"key\":\"$K\",\"store\":\"http\",\"inputs\":true},{\"key\":\"other\",\"store\":\"http\",\"inputs\":false}]"
    run --separate-stderr blh --drop "$K"
    assert_success
    assert_stderr_empty
    assert_equal "$(objects)" "$(obj other)"
    run --separate-stderr blh --list
    assert_line --regexp " - other\$"
    assert_equal "${#lines[@]}" 1
    # Dropping what is not there is fine.
    run --separate-stderr blh --drop "$K"
    assert_success
    assert_stderr_empty
}

@test "--gc --max-size removes the oldest objects until the store is under the size" {
    head -c 102400 /dev/urandom >"$T/payload"
    local i
    for i in 1 2 3; do
        blh "k$i" cat "$T/payload" >/dev/null || fail "build $i"
        # The server's modification times have whole seconds.
        ((i < 3)) && sleep 1.1
    done
    assert_equal "$(objects | wc -l)" 3
    run --separate-stderr blh --gc --max-size 1G
    assert_success
    assert_equal "$(objects | wc -l)" 3
    run --separate-stderr blh --gc --max-size 150K
    assert_success
    assert_equal "$(objects)" "$(obj k3)"
    run --separate-stderr blh --list
    assert_regex "$output" " k3\$"
    run --separate-stderr blh --gc --max-size 0
    assert_success
    assert_no_objects
}

@test "a server that cannot list (/nolist/): --list, --drop and --gc are one line, exit 64" {
    local url
    url=$(http_url nolist)
    "$BL" cache --cache-dir "$C" --store "$url" "$K" echo hi >/dev/null
    assert_file_exists "$(obj_path "$K" nolist)"
    local op
    for op in --list "--list --json" "--drop $K" "--gc --max-size 1M"; do
        # shellcheck disable=SC2086 # the words of op
        run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" $op
        assert_failure 64
        assert_output ""
        assert_one_bufferlock_line "the HTTP store at $url cannot list its objects (PROPFIND: HTTP status 405)"
    done
    assert_file_exists "$(obj_path "$K" nolist)"
}

@test "bad input: another scheme, a bad --store-timeout, http options without an http store: 64, one line" {
    run --separate-stderr blc --store ftp://x/ "$K" "$COUNTED"
    assert_usage_error "ftp://x/"
    run --separate-stderr blc --store "$STORE" --store-timeout abc "$K" "$COUNTED"
    assert_usage_error "--store-timeout" "abc"
    BUFFERLOCK_STORE_TIMEOUT=abc run --separate-stderr blc --store "$STORE" "$K" "$COUNTED"
    assert_failure 64
    printf 'tok' >"$T/token"
    chmod 600 "$T/token"
    run --separate-stderr blc --store-token-file "$T/token" "$K" "$COUNTED"
    assert_usage_error "--store-token-file"
    run --separate-stderr blc --store redis -r redis://127.0.0.1:1 --store-token-file "$T/token" "$K" "$COUNTED"
    assert_usage_error "--store-token-file"
    run --separate-stderr blc --store-timeout 5 "$K" "$COUNTED"
    assert_usage_error "--store-timeout"
    assert_runs 0
    assert_no_objects
}

@test "--max-entry 1K with the http store: the output is served whole, not stored, one warning" {
    head -c 3000 /dev/urandom >"$T/3k"
    run --separate-stderr blh --max-entry 1K "$K" cat "$T/3k"
    assert_success
    assert_one_bufferlock_line "'$K' not stored" "--max-entry"
    blh --max-entry 1K "$K" cat "$T/3k" 2>/dev/null >"$T/out"
    assert_same_bytes "$T/3k" "$T/out"
    assert_no_objects
    # Without --max-entry there is no limit of the http store's own.
    head -c $((70 * 1024 * 1024)) /dev/urandom >"$T/70m"
    run --separate-stderr blh big cat "$T/70m"
    assert_success
    assert_stderr_empty
    assert_file_exists "$(obj_path big)"
    rm -f -- "$T/70m"
}

@test "a 400 MiB incompressible entry: uploaded and restored with peak RSS under 64 MiB, bytes intact" {
    command -v /usr/bin/time >/dev/null || skip "GNU time is not installed"
    head -c $((400 * 1024 * 1024)) /dev/urandom >"$T/big"
    rss_run build --store "$STORE" big -- cat "$T/big"
    assert_same_bytes "$T/big" "$T/out.build"
    rm -f -- "$T/out.build"
    local size
    size=$(stat -c %s "$(obj_path big)")
    ((size > 400 * 1024 * 1024)) || fail "the object holds $size bytes"
    rss_run hit --store "$STORE" big -- false
    assert_same_bytes "$T/big" "$T/out.hit"
    rm -f -- "$T/big" "$T/out.hit" "$(obj_path big)"
    assert_rss_below 65536 build hit
}
