#!/usr/bin/env bats
# bufferlock cache --store s3://… when the S3 server fails (SPEC §19): the
# fault server (tests/tools/s3_fault_server.py) in front of the real S3 test
# server answers 500 / 503 SlowDown, RequestTimeTooSkewed, stalls, cuts
# bodies, refuses chunked PUTs; bufferlock's requests pass through it signed,
# checked upstream. A multipart upload is aborted when its lock is lost.

bats_require_minimum_version 1.5.0

load s3_helpers
load cache_helpers

setup_file() { s3_setup_file; }
teardown_file() { s3_teardown_file; }

setup() {
    s3_setup
    cache_setup
    start_s3_fault_server
}
teardown() {
    track_descendants
    redis_teardown # and the test's own redis-server, if any
}

# blf ARGS...: `bufferlock cache` on the test's store through the fault server.
blf() {
    AWS_ENDPOINT_URL=$S3_FAULT_ENDPOINT "$BL" cache --cache-dir "$C" --store "$S3_STORE" "$@"
}

@test "404 is a miss without a warning; 500 twice on read is retried: the entry served, no warning, no build" {
    run --separate-stderr blf "$K" "$COUNTED" 0 first
    assert_success
    assert_stderr_empty
    s3_fault e500 GET 2
    run --separate-stderr blf "$K" "$COUNTED" 0 second
    assert_success
    assert_stderr_empty
    assert_output first
    assert_runs 1
    run s3_fault_requests
    assert_equal "$(grep -c '^GET .* 500$' <<<"$output")" 2
}

@test "403 AccessDenied on read (a policy without s3:ListBucket) is a miss without a warning: built and stored" {
    s3_fault denied GET
    run --separate-stderr blf "$K" "$COUNTED" 0 built
    assert_success
    assert_stderr_empty
    assert_output built
    run s3_fault_requests
    assert_output --regexp "GET [^ ]*$(key_md5 "$K").entry 403"
    assert_equal "$(s3_keys)" "$S3_T/$(key_md5 "$K").entry"
}

# read_fault_rebuilds MODE TIMEOUT SLACK_MS ERROR: with MODE on every GET, a
# caller with --store-timeout TIMEOUT warns once (cannot read ...ERROR, a
# regex), builds and serves, within TIMEOUT + SLACK_MS (scaled).
read_fault_rebuilds() {
    local mode=$1 timeout=$2 slack=$3 error=$4 t0 ms
    s3_fault "$mode" GET
    t0=$(now_us)
    run --separate-stderr blf --store-timeout "$timeout" "$K" "$COUNTED" 0 "built-$mode"
    ms=$(elapsed_ms "$t0")
    assert_success
    assert_output "built-$mode"
    assert_equal "${#stderr_lines[@]}" 1
    assert_regex "$stderr" "^bufferlock: cannot read the cache entry of '$K' .*$error; rebuilding it\$"
    ((ms < 2000 + $(slack_ms "$slack"))) || fail "took $ms ms with --store-timeout $timeout"
}

@test "500 or 503 SlowDown on every read: retried within --store-timeout, then one warning naming it; built, no upload tried" {
    local mode code n=0
    for mode in e500 slowdown; do
        code='500 \(InternalError\)'
        [[ $mode == slowdown ]] && code='503 \(SlowDown\)'
        read_fault_rebuilds "$mode" 2 3000 ": HTTP status $code"
        run s3_fault_requests
        (($(grep -c '^GET ' <<<"$output") > 1)) || fail "not retried: $output"
        refute_output --partial 'PUT '
        assert_runs $((++n))
        : >"$S3_FAULT_LOG"
    done
    assert_equal "$(s3_keys)" ''
}

@test "503 SlowDown on every upload: the output served, one warning (not stored), no object, no multipart upload left" {
    s3_multipart_file "$T/big"
    s3_fault slowdown PUT
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" env AWS_ENDPOINT_URL="$S3_FAULT_ENDPOINT" \
        "$BL" cache --cache-dir "$C" --store "$S3_STORE" --store-timeout 2 "$K" cat "$T/big"
    assert_success
    assert_same_bytes "$T/big" "$T/out"
    assert_equal "${#stderr_lines[@]}" 1
    assert_regex "$stderr" "^bufferlock: output of '$K' not stored: S3 store .*: HTTP status 503 \(SlowDown\)\$"
    assert_equal "$(s3_keys)" ''
    assert_equal "$(s3_uploads)" ''
    run s3_fault_requests
    assert_output --regexp 'DELETE [^ ]*uploadId=[^ ]* 204'
}

@test "a stalled body, or a body cut short, with --store-timeout 1: one warning within a bound, the build runs" {
    head -c 200000 /dev/urandom >"$T/old"
    blf "$K" cat "$T/old" >/dev/null
    local mode n=0
    for mode in stall cut; do
        read_fault_rebuilds "$mode" 1 2000 ""
        assert_runs $((++n))
    done
}

@test "a server that refuses chunked PUTs (as S3 does): an entry of three parts still goes up, its parts with their lengths" {
    s3_multipart_file "$T/big"
    s3_fault nochunk
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" env AWS_ENDPOINT_URL="$S3_FAULT_ENDPOINT" \
        "$BL" cache --cache-dir "$C" --store "$S3_STORE" "$K" cat "$T/big"
    assert_success
    assert_stderr_empty
    run s3_fault_requests
    assert_equal "$(grep -c '^PUT .*partNumber=.* 200$' <<<"$output")" 3
    refute_output --regexp ' 501$'
    assert_equal "$(s3_keys)" "$S3_T/$(key_md5 "$K").entry"
    run --separate-stderr bash -c '"$@" >"$0"' "$T/hit" "$BL" cache --cache-dir "$C" --store "$S3_STORE" "$K" false
    assert_success
    assert_same_bytes "$T/big" "$T/hit"
}

@test "RequestTimeTooSkewed: on read one warning naming the clock, no upload tried; on a part, the upload aborted, one warning; never the secret, nothing left" {
    s3_multipart_file "$T/big"
    s3_fault skewed GET
    run --separate-stderr blf "$K" "$COUNTED" 0 built
    assert_success
    assert_output built
    assert_equal "${#stderr_lines[@]}" 1
    assert_regex "$stderr" "^bufferlock: cannot read the cache entry of '$K' .*: HTTP status 403 \(RequestTimeTooSkewed: this machine's clock is too far off\); rebuilding it\$"
    refute_output --partial "$S3_SECRET"
    run s3_fault_requests
    refute_output --regexp '^(PUT|POST) '
    # The upload begun, its first part refused: aborted, one warning.
    : >"$S3_FAULT_LOG"
    s3_fault skewed PUT
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" env AWS_ENDPOINT_URL="$S3_FAULT_ENDPOINT" \
        "$BL" cache --cache-dir "$C" --store "$S3_STORE" --force "$K" cat "$T/big"
    assert_success
    assert_same_bytes "$T/big" "$T/out"
    assert_equal "${#stderr_lines[@]}" 1
    assert_regex "$stderr" "^bufferlock: output of '$K' not stored: S3 store .*: HTTP status 403 \(RequestTimeTooSkewed: this machine's clock is too far off\)\$"
    [[ $stderr != *"$S3_SECRET"* ]] || fail "the secret in: $stderr"
    run s3_fault_requests
    assert_output --regexp 'POST [^ ]*uploads[^ ]* 200'
    assert_output --regexp 'DELETE [^ ]*uploadId=[^ ]* 204'
    assert_equal "$(s3_uploads)" ''
    assert_equal "$(s3_keys)" ''
}

@test "the Redis lock lost during a multipart upload (--on-lost term): the command stopped, the upload aborted, no object and no upload left" {
    s3_multipart_file "$T/big"
    start_redis_as LR || fail "no redis-server"
    local pid
    (exec "$BL" cache --cache-dir "$C" --store "$S3_STORE" -r "$LR_URL" --ttl 1 --on-lost term \
        "$K" "$(big_then_gate "$T/big")") </dev/null >"$T/out" 2>"$T/err" 3>&- &
    pid=$!
    track_pid "$pid"
    poll_until 20 s3_upload_under_way || fail "no multipart upload under way: $(cat "$T/err")"
    assert_equal "$(rcli_to LR DEL "$(redis_key "$K")")" 1
    wait_for_exit "$pid" 20 || fail "the lost lock did not end the build"
    reap "$pid"
    assert_equal "$REAPED_STATUS" 143
    assert_equal "$(grep -c "lost the lock" "$T/err")" 1
    assert_equal "$(s3_uploads)" ''
    assert_equal "$(s3_keys)" ''
    run --separate-stderr bash -c '"$@" >"$0"' "$T/again" "$BL" cache --cache-dir "$C" --store "$S3_STORE" "$K" echo rebuilt
    assert_success
    assert_equal "$(cat "$T/again")" rebuilt
}
