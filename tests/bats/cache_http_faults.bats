#!/usr/bin/env bats
# bufferlock cache --store http://… when the server fails (issue 33): a 404
# is a miss; 5xx, a refused connection, a truncated or tampered object, a
# body cut short or stalled, an entry signed with another key: a miss and a
# rebuild with one warning, never half-restored output, never a hang past
# --store-timeout; a refused upload leaves the output whole and no object.

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

@test "a server that refuses everything (500), or none listening: output served, exit 0, one warning" {
    local url port
    url=$(http_url e500)
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" "$K" "$COUNTED" 0 built-1
    assert_success
    assert_output built-1
    assert_read_warning "$K" "$url" "HTTP status 500"
    port=$(free_port)
    url="http://127.0.0.1:$port/cache/"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" "$K" "$COUNTED" 0 built-2
    assert_success
    assert_output built-2
    assert_read_warning "$K" "$url" "connect"
    assert_runs 2
}

@test "upload refused (413 at /small/, 500, 401): output whole, the command's status, one warning, no object" {
    head -c 5000 /dev/urandom >"$T/5k"
    local url
    for url in "$(http_url small)" "$(http_url wr500)" "$(http_url roauth)"; do
        run --separate-stderr "$BL" cache --cache-dir "$C" --store "$url" "$K" sh -c "echo x >>'$RUNS'; cat '$T/5k'"
        assert_success
        assert_one_bufferlock_line "output of '$K' not stored: HTTP store at $url: HTTP status"
        "$BL" cache --cache-dir "$C" --store "$url" "$K" cat "$T/5k" 2>/dev/null >"$T/out" ||
            fail "second call failed"
        assert_same_bytes "$T/5k" "$T/out"
    done
    assert_no_objects small
    assert_no_objects wr500
    assert_no_objects roauth
    [[ $(curl_status "$(http_url small)$(obj "$K")") == 404 ]] || fail "an object is served at /small/"
    assert_runs 3 # the first call at each (the second ones run cat, not counted)
    # Each names its status.
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$(http_url small)" "$K" cat "$T/5k"
    assert_one_bufferlock_line "HTTP status 413"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$(http_url wr500)" "$K" cat "$T/5k"
    assert_one_bufferlock_line "HTTP status 500"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$(http_url roauth)" "$K" cat "$T/5k"
    assert_one_bufferlock_line "HTTP status 401"
    # A failing command is not uploaded at all: its status, no warning.
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "$(http_url small)" "$K" sh -c "cat '$T/5k'; exit 3"
    assert_failure 3
    assert_stderr_empty
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
    local mode t0 ms gets n=0
    for mode in stall silent; do
        start_fault_server "$mode" "$T/object"
        t0=$(now_us)
        run --separate-stderr "$BL" cache --cache-dir "$C" --store "$FAULT_URL" --store-timeout 1 "$K" "$COUNTED" 0 "rebuilt-$mode"
        ms=$(elapsed_ms "$t0")
        assert_success
        assert_output "rebuilt-$mode"
        assert_read_warning "$K" "$FAULT_URL" "--store-timeout"
        [[ $mode != stall || $stderr == *"no data for 1"* ]] || fail "not the stall text: $stderr"
        # The read gives up after 1 s of stall (curl's check of a slow
        # transfer samples once a second: up to 1 s more), never after the
        # default 10 s, never before 1 s; and the store is then down for the
        # run: no second read under the lock, no upload.
        gets=$(grep -c '^GET ' "$FAULT_LOG") || fail "no GET reached the server"
        assert_equal "$gets" 1
        ! grep -q '^PUT ' "$FAULT_LOG" || fail "an upload to a store found down: $(cat "$FAULT_LOG")"
        ((ms >= 900)) || fail "gave up after $ms ms, before --store-timeout 1"
        ((ms < 2000 + $(slack_ms 2000))) || fail "took $ms ms for a GET stalled with --store-timeout 1"
        assert_runs $((++n))
        kill -TERM "$FAULT_PID"
        wait_for_exit "$FAULT_PID" 5
    done
}

@test "a server that never accepts, BUFFERLOCK_STORE_TIMEOUT=1: connecting gives up, one warning, the build" {
    start_fault_server noaccept
    local t0 ms
    t0=$(now_us)
    BUFFERLOCK_STORE_TIMEOUT=1 run --separate-stderr "$BL" cache --cache-dir "$C" --store "$FAULT_URL" "$K" "$COUNTED" 0 built
    ms=$(elapsed_ms "$t0")
    assert_success
    assert_output built
    assert_read_warning "$K" "$FAULT_URL"
    assert_runs 1
    # The connection attempt gives up after 1 s, never after the default
    # 10 s; the store is then down for the run, so there is no second one
    # (a read under the lock, the upload of the build).
    ((ms >= 900)) || fail "gave up after $ms ms, before the store timeout of 1 s"
    ((ms < 1000 + $(slack_ms 1500))) || fail "took $ms ms with a store timeout of 1 s"
}

@test "an upload that stalls (the server never reads it), --store-timeout 1: output whole, one warning, bounded" {
    start_fault_server putstall
    head -c $((16 * 1024 * 1024)) /dev/urandom >"$T/16m"
    local t0 ms
    t0=$(now_us)
    # (stdout to a file: bats' run would read 16 MiB of binary into a variable)
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" \
        "$BL" cache --cache-dir "$C" --store "$FAULT_URL" --store-timeout 1 "$K" cat "$T/16m"
    ms=$(elapsed_ms "$t0")
    assert_success
    assert_same_bytes "$T/16m" "$T/out"
    assert_one_bufferlock_line "output of '$K' not stored: HTTP store at $FAULT_URL: " "--store-timeout"
    grep -qx "PUT /cache/$HTTP_T/$(obj "$K")" "$FAULT_LOG" || fail "no PUT reached the server: $(cat "$FAULT_LOG")"
    # The reads are 404s at once; the upload gives up after 1 s without progress
    # (up to 1 s more: curl samples slow transfers once a second).
    ((ms < 2000 + $(slack_ms 2000))) || fail "took $ms ms with --store-timeout 1"
}

@test "--output with a tampered object: nothing of it is restored; the rebuild's tree alone is in place" {
    mkdir -p "$T/w"
    (cd "$T/w" && mkdir dist && head -c 200000 /dev/urandom >dist/old.bin &&
        blh --output dist "$K" echo first >/dev/null) || fail "the first build failed"
    local f
    f=$(key_objects "$K")
    flip_byte "$f" $(($(stat -c %s "$f") / 2))
    rm -rf "$T/w/dist"
    run --separate-stderr bash -c "cd '$T/w' && mkdir dist && echo new >dist/new.txt && \"\$@\"" _ \
        "$BL" cache --cache-dir "$C" --store "$STORE" --output dist "$K" echo second
    assert_success
    assert_output second
    READ_OBJECT=$(basename "$f") assert_read_warning "$K" "$STORE"
    assert_equal "$(cd "$T/w/dist" && find . | LC_ALL=C sort | tr '\n' ' ')" ". ./new.txt "
}

# make_mkout: $T/bin/mkout, a build of out/ (3 MiB of random bytes and a
# small file) that first notes in $T/seen what its directory held.
make_mkout() {
    cat >"$T/bin/mkout" <<EOF
#!/bin/sh
echo "\$\$" >>'$RUNS'
ls -A >'$T/seen'
mkdir -p out && head -c 3000000 /dev/urandom >out/blob && echo small >out/small
echo built
EOF
    chmod +x "$T/bin/mkout"
}

@test "--output extracted as the object comes, a byte flipped in its archive (data, tar header): a miss, nothing of it left" {
    make_mkout
    mkdir -p "$T/w"
    (cd "$T/w" && blh --output out "$K" "$T/bin/mkout" >/dev/null) || fail "the first build failed"
    local f off want=1
    f=$(key_objects "$K")
    cp -- "$f" "$T/sound"
    # The archive starts behind stdout ("built\n"): a byte of out/blob, then
    # one of the first tar header, which libarchive refuses on the way.
    for off in $(($(stat -c %s "$f") / 2)) 20; do
        cp -- "$T/sound" "$f"
        flip_byte "$f" "$off"
        rm -rf "$T/w/out"
        run --separate-stderr bash -c "cd '$T/w' && \"\$@\"" _ "$BL" cache --cache-dir "$C" --store "$STORE" \
            --output out "$K" "$T/bin/mkout"
        assert_success
        assert_output built
        READ_OBJECT=$(basename "$f") assert_read_warning "$K" "$STORE" "payload checksum mismatch"
        # When the rebuild started, nothing of the refused entry was there:
        # no PATH, no temporary tree beside it.
        [[ ! -s $T/seen ]] || fail "left by the refused restore (flip at $off): $(cat "$T/seen")"
        assert_equal "$(ls -A "$T/w")" out
        want=$((want + 1))
        assert_runs "$want"
    done
}

@test "an expired entry (--max-age) is rebuilt without its --output extracted first: nothing beside PATH during the build" {
    make_mkout
    mkdir -p "$T/w"
    (cd "$T/w" && blh --output out "$K" "$T/bin/mkout" >/dev/null) || fail "the first build failed"
    sleep 1.2
    run --separate-stderr bash -c "cd '$T/w' && \"\$@\"" _ "$BL" cache --cache-dir "$C" --store "$STORE" \
        --max-age 1 --output out "$K" "$T/bin/mkout"
    assert_success
    assert_output built
    assert_stderr_empty
    assert_runs 2
    assert_equal "$(cat "$T/seen")" out
    assert_equal "$(ls -A "$T/w")" out
}

@test "SIGTERM while --output is extracted as the object comes (/slow/): exit 143, nothing beside PATH, PATH untouched" {
    make_mkout
    mkdir -p "$T/w"
    local url ino pid
    url=$(http_url slow)
    (cd "$T/w" && "$BL" cache --cache-dir "$C" --store "$url" --output out "$K" "$T/bin/mkout" >/dev/null) ||
        fail "the first build failed"
    ino=$(stat -c %i "$T/w/out")
    (cd "$T/w" && exec "$BL" cache --cache-dir "$C" --store "$url" --output out "$K" "$T/bin/mkout") \
        </dev/null >"$T/o" 2>"$T/e" 3>&- &
    pid=$!
    track_pid "$pid"
    # 1 MiB/s: the staged tree is under way beside PATH for seconds.
    poll_until 20 compgen -G "$T/w/.out.bufferlock-*/new/blob" >/dev/null || fail "no tree under way beside PATH"
    pid_alive "$pid" || fail "the restore ended before the signal"
    kill -TERM "$pid"
    wait_for_exit "$pid" 10 || fail "SIGTERM did not end the restore"
    reap "$pid"
    assert_equal "$REAPED_STATUS" 143
    assert_equal "$(ls -A "$T/w")" out
    assert_equal "$(stat -c %i "$T/w/out")" "$ino"
    [[ ! -s $T/o ]] || fail "stdout was served: $(cat "$T/o")"
    [[ ! -s $T/e ]] || fail "stderr: $(cat "$T/e")"
    assert_runs 1
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

@test "a command silent past the server's body timeout (client_body_timeout 1s): the upload is lost, one warning, output whole" {
    head -c $((3 * 1024 * 1024)) /dev/urandom >"$T/3m"
    local url
    url=$(http_url slowbody)
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" \
        "$BL" cache --cache-dir "$C" --store "$url" "$K" sh -c "cat '$T/3m'; sleep 3; echo end"
    assert_success
    { cat "$T/3m" && echo end; } >"$T/want"
    assert_same_bytes "$T/want" "$T/out"
    assert_one_bufferlock_line "output of '$K' not stored: HTTP store at $url: "
    assert_no_objects slowbody
    # The next caller builds (and stores, when its output keeps coming).
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" "$BL" cache --cache-dir "$C" --store "$url" "$K" cat "$T/3m"
    assert_success
    assert_stderr_empty
    assert_file_exists "$(obj_path "$K" slowbody)"
}
