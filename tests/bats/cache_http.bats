#!/usr/bin/env bats
# bufferlock cache --store http://… (SPEC §18, issue 33): entries as objects
# on a real nginx with WebDAV, started by the suite on a free loopback port
# (http_helpers.bash): misses, hits, --depends and --output through it, the
# protocol (one PUT with its length, GET), --list, --drop and --gc through
# PROPFIND, bad input, --max-entry, and a large entry in bounded memory.
# Faults: cache_http_faults.bats; credentials and https: cache_http_auth.bats;
# two runners and a Redis lock: cache_http_fleet.bats.

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
    # The object is an entry file with its header behind the body: laid out
    # again, the file store serves it as its own.
    mkdir -p "$T/fc"
    object_to_entry "$(obj_path "$K")" "$(entry_path "$K" "$T/fc")"
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

@test "an output under 1 MiB is one PUT with a Content-Length of the object's size; a hit is ranged GETs, no PUT" {
    head -c 100000 /dev/urandom >"$T/100k"
    run --separate-stderr blh "$K" cat "$T/100k"
    assert_success
    local size puts
    size=$(stat -c %s "$(obj_path "$K")")
    # (nginx logs a request once it has answered it: the client may be first)
    poll_until 5 _logged PUT 1 || true
    puts=$(requests PUT)
    assert_equal "$puts" "PUT /cache/$HTTP_T/$(obj "$K") 201 cl=$size te=-"
    local before
    before=$(requests | wc -l)
    run --separate-stderr blh "$K" false
    assert_success
    poll_until 5 _logged GET 2 "$before" || true
    requests_since "$before" >"$T/hit"
    # The last 64 KiB (header, trailer, footer), then the body: both partial (206).
    assert_equal "$(grep -c "^GET /cache/$HTTP_T/$(obj "$K") 206 " "$T/hit")" 2
    ! grep -qE '^(PUT|DELETE) ' "$T/hit" || fail "a hit changed the store: $(cat "$T/hit")"
    # An object shorter than 64 KiB comes whole with its tail: one GET.
    blh small echo small >/dev/null
    before=$(requests | wc -l)
    run --separate-stderr blh small false
    assert_output small
    poll_until 5 _logged GET 1 "$before" || true
    requests_since "$before" >"$T/hit"
    assert_equal "$(grep -c "^GET /cache/$HTTP_T/$(obj small) 206 " "$T/hit")" 1
    assert_equal "$(grep -c "^GET " "$T/hit")" 1
}

# _no_temp_files: nginx holds no request body.
_no_temp_files() { [[ -z $(find "$HTTP_ROOT/.tmp" -type f 2>/dev/null) ]]; }

# _body_on_server BYTES: nginx holds a request body of BYTES or more in its
# temporary directory (an upload under way).
_body_on_server() {
    local n
    n=$(find "$HTTP_ROOT/.tmp" -type f -printf '%s\n' 2>/dev/null | sort -n | tail -n 1)
    ((${n:-0} >= $1))
}

@test "an output over 1 MiB goes out while the command runs: one chunked PUT; the hit serves it whole" {
    head -c $((3 * 1024 * 1024)) /dev/urandom >"$T/3m"
    # The command prints 3 MiB, then waits until the test has seen them reach
    # the server.
    blh "$K" sh -c "cat '$T/3m'; i=0; while [ ! -e '$T/go' ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i+1)); done; echo end" \
        >"$T/out" 2>"$T/err" &
    local pid=$!
    track_pid "$pid"
    poll_until 10 _body_on_server $((2 * 1024 * 1024)) || fail "no upload under way while the command ran"
    [[ ! -e $T/go ]] || fail "the command ended first"
    touch "$T/go"
    wait "$pid" || fail "the build failed: $(cat "$T/err")"
    [[ ! -s $T/err ]] || fail "the build warned: $(cat "$T/err")"
    { cat "$T/3m" && echo end; } >"$T/want"
    assert_same_bytes "$T/want" "$T/out"
    poll_until 5 _logged PUT 1 || true
    # (nginx logs the length of a chunked body once it has read it)
    assert_equal "$(requests PUT)" "PUT /cache/$HTTP_T/$(obj "$K") 201 cl=$(stat -c %s "$(obj_path "$K")") te=chunked"
    run --separate-stderr bash -c '"$@" >"$0"' "$T/hit" "$BL" cache --cache-dir "$C" --store "$STORE" "$K" false
    assert_success
    assert_stderr_empty
    assert_same_bytes "$T/want" "$T/hit"
    # The object: the entry's bytes, header behind the body.
    mkdir -p "$T/fc"
    object_to_entry "$(obj_path "$K")" "$(entry_path "$K" "$T/fc")"
    run --separate-stderr bash -c '"$@" >"$0"' "$T/fhit" "$BL" cache --cache-dir "$T/fc" "$K" false
    assert_success
    assert_same_bytes "$T/want" "$T/fhit"
}

@test "a server that refuses a chunked PUT (411): the output over 1 MiB is spooled and sent with its length, no warning" {
    head -c $((3 * 1024 * 1024)) /dev/urandom >"$T/3m"
    local url
    url=$(http_url nochunk)
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" "$BL" cache --cache-dir "$C" --store "$url" "$K" cat "$T/3m"
    assert_success
    assert_stderr_empty
    assert_same_bytes "$T/3m" "$T/out"
    poll_until 5 _logged PUT 2 || true
    # The chunked PUT refused (nginx logs what it read of the body before it
    # answered), then one PUT of known length.
    local puts
    puts=$(requests PUT)
    [[ $(sed -n 1p <<<"$puts") =~ ^"PUT /nochunk/$HTTP_T/$(obj "$K") 411 cl="[0-9-]+" te=chunked"$ ]] || fail "$puts"
    assert_equal "$(sed -n '2,$p' <<<"$puts")" \
        "PUT /nochunk/$HTTP_T/$(obj "$K") 201 cl=$(stat -c %s "$(obj_path "$K" nochunk)") te=-"
    run --separate-stderr bash -c '"$@" >"$0"' "$T/hit" "$BL" cache --cache-dir "$C" --store "$url" "$K" false
    assert_success
    assert_stderr_empty
    assert_same_bytes "$T/3m" "$T/hit"
}

@test "a failing command over 1 MiB: the upload under way is abandoned, nothing stored, nginx keeps no part of it" {
    head -c $((3 * 1024 * 1024)) /dev/urandom >"$T/3m"
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" \
        "$BL" cache --cache-dir "$C" --store "$STORE" "$K" sh -c "cat '$T/3m'; exit 3"
    assert_failure 3
    assert_stderr_empty
    assert_same_bytes "$T/3m" "$T/out"
    assert_no_objects
    # nginx drops the cut body (when it sees the connection closed).
    poll_until 5 _no_temp_files || fail "nginx kept a temporary file: $(find "$HTTP_ROOT/.tmp" -type f)"
    run --separate-stderr blh "$K" "$COUNTED" 0 next
    assert_success
    assert_output next
    assert_runs 1
}

@test "binary output survives the trip byte for byte; a failing command stores nothing" {
    head -c 300000 /dev/urandom >"$T/bin.dat"
    blh bin cat "$T/bin.dat" >/dev/null || fail "the build failed"
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

@test "a hit extracts --output as the object comes: no temporary copy of the archive (TMPDIR missing), tree intact" {
    mkdir -p "$T/w"
    cat >"$T/bin/mk" <<EOF
#!/bin/sh
echo "\$\$" >>'$RUNS'
mkdir -p dist && head -c 3000000 /dev/urandom >dist/blob && echo x >dist/x
echo built
EOF
    chmod +x "$T/bin/mk"
    (cd "$T/w" && blh --output dist "$K" "$T/bin/mk") >/dev/null 2>"$T/e1" || fail "build: $(cat "$T/e1")"
    cp -a "$T/w/dist" "$T/expected"
    rm -rf "$T/w/dist"
    # An archive read into an unnamed file first would need TMPDIR (over 1 MiB).
    run --separate-stderr bash -c "cd '$T/w' && TMPDIR='$T/none' \"\$@\"" _ "$BL" cache --cache-dir "$C" \
        --store "$STORE" --output dist "$K" "$T/bin/mk"
    assert_success
    assert_output built
    assert_stderr_empty
    assert_runs 1
    diff -r --no-dereference "$T/expected" "$T/w/dist" || fail "the restored tree differs"
    assert_equal "$(ls -A "$T/w")" dist
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
    assert_line --regexp "^[0-9]+\.[0-9]{3} [0-9]+ [0-9]+ - other\$"
    assert_equal "$(grep -cE "^[0-9]+\.[0-9]{3} [0-9]+ [0-9]+ [0-9a-f]{12} $K\$" <<<"$output")" 2
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

@test "--gc --max-age removes the objects older than the age, and keeps the younger" {
    blh old echo old >/dev/null
    sleep 2.2
    blh young echo young >/dev/null
    run --separate-stderr blh --gc --max-age 2
    assert_success
    assert_stderr_empty
    assert_equal "$(objects)" "$(obj young)"
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
    # Met while its upload is under way (past the first part): abandoned, the
    # server keeps nothing of it, one warning naming the stored size.
    head -c $((5 * 1024 * 1024)) /dev/urandom >"$T/5m"
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" "$BL" cache --cache-dir "$C" --store "$STORE" --max-entry 2M "$K" cat "$T/5m"
    assert_success
    assert_one_bufferlock_line "output of '$K' not stored: its stored size, " "is over --max-entry (2097152 bytes)"
    assert_same_bytes "$T/5m" "$T/out"
    assert_no_objects
    poll_until 5 _no_temp_files || fail "nginx kept a temporary file: $(find "$HTTP_ROOT/.tmp" -type f)"
    # Without --max-entry there is no limit of the http store's own.
    head -c $((70 * 1024 * 1024)) /dev/urandom >"$T/70m"
    # (stdout to a file: bats' run would read 70 MiB of binary into a variable)
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" "$BL" cache --cache-dir "$C" --store "$STORE" big cat "$T/70m"
    assert_success
    assert_stderr_empty
    assert_same_bytes "$T/70m" "$T/out"
    assert_file_exists "$(obj_path big)"
    rm -f -- "$T/70m" "$T/out"
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
