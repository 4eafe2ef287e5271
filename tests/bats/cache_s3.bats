#!/usr/bin/env bats
# bufferlock cache --store s3://BUCKET/PREFIX (SPEC §19): entries as objects
# on a real S3 test server that checks signatures (s3_helpers.bash), read
# back by Debian's awscli: misses, hits, one PUT and multipart uploads (and
# their aborts), settings and credentials, --list, --drop and --gc through
# ListObjectsV2. Faults: cache_s3_faults.bats.

bats_require_minimum_version 1.5.0

load s3_helpers
load cache_helpers

setup_file() { s3_setup_file; }
teardown_file() { s3_teardown_file; }

setup() {
    s3_setup
    cache_setup
}
teardown() {
    track_descendants
    cache_teardown
}

# bls ARGS...: `bufferlock cache` with the test's cache dir and S3 store.
bls() {
    "$BL" cache --cache-dir "$C" --store "$S3_STORE" "$@"
}

# s3_obj KEY: KEY's object key (no --depends) under the test's prefix.
s3_obj() {
    printf '%s/%s.entry\n' "$S3_T" "$(key_md5 "$1")"
}

@test "a miss builds and stores KEY's entry as PREFIX/<md5>.entry; a hit serves the same bytes, no build; awscli sees it" {
    run --separate-stderr bls "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    local first=$output
    [[ $first == "run "* ]] || fail "built: $first"
    assert_equal "$(s3_keys)" "$(s3_obj "$K")"
    run aws_s3 s3api head-object --bucket "$S3_BUCKET" --key "$(s3_obj "$K")"
    assert_success
    assert_output --partial '"ContentLength": '
    run --separate-stderr bls "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    assert_output "$first"
    assert_runs 1
}

@test "no credentials at all: 64, one line naming where they were looked for; a missing profile or secret names it" {
    unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
    run --separate-stderr bls "$K" "$COUNTED"
    assert_failure 64
    assert_output ''
    assert_equal "${#stderr_lines[@]}" 1
    assert_regex "$stderr" "^bufferlock: cannot use the S3 store $S3_STORE: no S3 credentials: AWS_ACCESS_KEY_ID is not set and there is no $T/aws-credentials"
    AWS_PROFILE=ci run --separate-stderr bls "$K" "$COUNTED"
    assert_failure 64
    assert_equal "${#stderr_lines[@]}" 1
    assert_regex "$stderr" "AWS_PROFILE is ci, but there is no $T/aws-credentials"
    AWS_ACCESS_KEY_ID=AKIDONLY run --separate-stderr bls "$K" "$COUNTED"
    assert_failure 64
    assert_equal "${#stderr_lines[@]}" 1
    assert_regex "$stderr" 'AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not'
    BUFFERLOCK_CACHE_STORE=s3://Bad_Bucket/x run --separate-stderr "$BL" cache --cache-dir "$C" "$K" "$COUNTED"
    assert_failure 64
    assert_equal "${#stderr_lines[@]}" 1
    assert_regex "$stderr" "^bufferlock: invalid BUFFERLOCK_CACHE_STORE 's3://Bad_Bucket/x': "
    run --separate-stderr bls --store-token-file /dev/null "$K" "$COUNTED"
    assert_failure 64
    assert_regex "$stderr" '^bufferlock: --store-token-file needs an http'
    assert_runs 0
}

@test "credentials from the AWS_PROFILE section of the shared credentials file, the store from BUFFERLOCK_CACHE_STORE; -v names the source, never a secret" {
    unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
    printf '[default]\naws_access_key_id = NOBODY\naws_secret_access_key = nothing\n[ci]\naws_access_key_id = %s\naws_secret_access_key = %s\naws_session_token = tok-secret-8c1f\n' \
        "$S3_KEY_ID" "$S3_SECRET" >"$T/aws-credentials"
    export AWS_PROFILE=ci BUFFERLOCK_CACHE_STORE=$S3_STORE
    run --separate-stderr "$BL" cache -v --cache-dir "$C" "$K" "$COUNTED"
    assert_success
    assert_regex "$stderr" "credentials from profile ci of $T/aws-credentials, region us-east-1, endpoint $S3_ENDPOINT"
    [[ $stderr != *"$S3_SECRET"* && $stderr != *tok-secret* ]] || fail "a secret in -v: $stderr"
    assert_equal "$(s3_keys)" "$(s3_obj "$K")"
    run --separate-stderr "$BL" cache --cache-dir "$C" "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    assert_runs 1
}

@test "a wrong secret or an unknown key: one warning naming the refusal (never the secret), the output served, no upload tried" {
    AWS_SECRET_ACCESS_KEY=wrong-secret-5e2a run --separate-stderr bls "$K" "$COUNTED" 0 built
    assert_success
    assert_output built
    assert_equal "${#stderr_lines[@]}" 1
    assert_regex "$stderr" "^bufferlock: cannot read the cache entry of '$K' \(.*\): HTTP status 403 \(SignatureDoesNotMatch: the secret key is not the key's\); rebuilding it$"
    [[ $stderr != *wrong-secret* ]] || fail "the secret printed: $stderr"
    AWS_ACCESS_KEY_ID=NOBODY run --separate-stderr bls "$K" "$COUNTED" 0 built
    assert_success
    assert_equal "${#stderr_lines[@]}" 1
    assert_regex "$stderr" 'InvalidAccessKeyId'
    assert_equal "$(s3_keys)" ''
    assert_runs 2
}

@test "an output over one part (32 MiB) goes up as a multipart upload while the command runs, completed after it; the hit is whole" {
    s3_multipart_file "$T/big"
    bls "$K" "$(big_then_gate "$T/big")" >"$T/out" 2>"$T/err" &
    local pid=$!
    track_pid "$pid"
    poll_until 20 s3_upload_under_way || fail "no multipart upload under way while the command ran: $(cat "$T/err")"
    [[ $(s3_keys) == '' ]] || fail "an object before the command ended: $(s3_keys)"
    open_gate
    wait "$pid" || fail "the build failed: $(cat "$T/err")"
    [[ ! -s $T/err ]] || fail "the build warned: $(cat "$T/err")"
    assert_equal "$(s3_uploads)" ''
    assert_equal "$(s3_keys)" "$(s3_obj "$K")"
    run --separate-stderr bash -c '"$@" >"$0"' "$T/hit" "$BL" cache --cache-dir "$C" --store "$S3_STORE" "$K" false
    assert_success
    assert_stderr_empty
    assert_same_bytes "$T/out" "$T/hit"
    assert_runs 1
}

@test "a failing command over one part: the multipart upload is aborted, no object and no upload left" {
    s3_multipart_file "$T/big"
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" "$BL" cache --cache-dir "$C" --store "$S3_STORE" "$K" sh -c "cat '$T/big'; exit 3"
    assert_failure 3
    assert_stderr_empty
    assert_same_bytes "$T/big" "$T/out"
    assert_equal "$(s3_keys)" ''
    assert_equal "$(s3_uploads)" ''
}

@test "INT, TERM or HUP during a multipart upload: aborted, exit 128+N, no object and no upload left" {
    s3_multipart_file "$T/big"
    local sig want pid
    for sig in INT TERM HUP; do
        case $sig in INT) want=130 ;; TERM) want=143 ;; HUP) want=129 ;; esac
        rm -f "$T/gate"
        (exec "$BL" cache --cache-dir "$C" --store "$S3_STORE" "$K" "$(big_then_gate "$T/big")") \
            </dev/null >"$T/out" 2>"$T/err" 3>&- &
        pid=$!
        track_pid "$pid"
        poll_until 20 s3_upload_under_way || fail "no multipart upload under way: $(cat "$T/err")"
        kill "-$sig" "$pid"
        wait_for_exit "$pid" 20 || fail "SIG$sig did not end bufferlock"
        reap "$pid"
        assert_equal "$REAPED_STATUS" "$want"
        assert_equal "$(s3_uploads)" ''
        assert_equal "$(s3_keys)" ''
    done
}

@test "--list (text and --json, \"store\": \"s3\") and --drop KEY (every input state) through ListObjectsV2 and DELETE" {
    printf 'v1\n' >"$T/dep"
    bls --depends "$T/dep" "$K" echo one >/dev/null
    printf 'v2\n' >"$T/dep"
    bls --depends "$T/dep" "$K" echo two >/dev/null
    sleep 1.1
    bls other echo three >/dev/null
    printf 'by hand\n' >"$T/hand"
    aws_s3 s3 cp --only-show-errors "$T/hand" "$S3_STORE/notes.txt"
    run --separate-stderr bls --list
    assert_success
    assert_stderr_empty
    assert_equal "${#lines[@]}" 3
    assert_line --regexp "^[0-9]+\.[0-9]{3} [0-9]+ [0-9]+ - other\$"
    assert_equal "$(grep -cE "^[0-9]+\.[0-9]{3} [0-9]+ [0-9]+ [0-9a-f]{12} $K\$" <<<"$output")" 2
    assert_regex "${lines[0]}" " other\$"
    run --separate-stderr bls --list --json
    assert_success
    assert_equal "$(jq -c '[.entries[] | {key, store, inputs: (.inputs != null)}] | sort_by(.key, .inputs)' <<<"$output")" \
        "[{\"key\":\"$K\",\"store\":\"s3\",\"inputs\":true},{\"key\":\"$K\",\"store\":\"s3\",\"inputs\":true},{\"key\":\"other\",\"store\":\"s3\",\"inputs\":false}]"
    run --separate-stderr bls --drop "$K"
    assert_success
    assert_stderr_empty
    assert_equal "$(s3_keys)" "$(printf '%s\n%s\n' "$S3_T/notes.txt" "$(s3_obj other)" | LC_ALL=C sort)"
    run --separate-stderr bls --drop "$K"
    assert_success
    assert_stderr_empty
}

@test "an object put by hand under the prefix is no entry: not listed, not served (named as an entry: rebuilt, one warning), --gc keeps a foreign name" {
    printf 'by hand\n' >"$T/hand"
    aws_s3 s3 cp --only-show-errors "$T/hand" "$S3_STORE/notes.txt"
    aws_s3 s3 cp --only-show-errors "$T/hand" "$S3_STORE/$(key_md5 "$K").entry"
    run --separate-stderr bls --list
    assert_success
    assert_output ''
    run --separate-stderr bls "$K" echo built
    assert_success
    assert_output built
    assert_equal "${#stderr_lines[@]}" 1
    assert_regex "$stderr" "ignoring the cache entry of '$K' .*: not an entry; rebuilding it"
    run --separate-stderr bls "$K" echo again
    assert_output built
    run --separate-stderr bls --gc --max-size 0
    assert_success
    assert_equal "$(s3_keys)" "$S3_T/notes.txt"
}

@test "a listing past 1,000 keys (ListObjectsV2's page): an entry on the second page is listed, dropped and kept apart from the rest" {
    # Foreign objects whose names sort before any entry's.
    s3_bulk_objects "$S3_T" 1100 '000000-%04d'
    bls "$K" echo one >/dev/null
    run --separate-stderr bls --list
    assert_success
    assert_stderr_empty
    assert_regex "$output" " - $K\$"
    assert_equal "${#lines[@]}" 1
    run --separate-stderr bls --gc --max-size 1G
    assert_success
    run --separate-stderr bls --drop "$K"
    assert_success
    assert_equal "$(s3_keys | wc -l)" 1100
}

@test "--gc and --drop removing many objects: DeleteObjects, one request per 1,000 keys, no DELETE each; awscli lists none of them after" {
    # 1,100 objects named as entries that are none: --gc removes every one.
    s3_bulk_objects "$S3_T" 1100 '%032x.entry'
    bls "$K" echo kept >/dev/null
    start_s3_fault_server
    AWS_ENDPOINT_URL=$S3_FAULT_ENDPOINT run --separate-stderr bls -v --gc --max-size 1G
    assert_success
    assert_equal "$(grep -c ', object .*: corrupt$' <<<"$stderr")" 1100
    assert_equal "$(s3_fault_requests | grep -cE '^POST [^ ]*[?&]delete[=& ].* 200$')" 2
    assert_equal "$(s3_fault_requests | grep -c '^DELETE ')" 0
    assert_equal "$(s3_keys)" "$(s3_obj "$K")"
    # --drop of a key with entries of two input states: one request.
    printf 'v1\n' >"$T/dep"
    bls --depends "$T/dep" "$K" echo one >/dev/null
    printf 'v2\n' >"$T/dep"
    bls --depends "$T/dep" "$K" echo two >/dev/null
    : >"$S3_FAULT_LOG"
    AWS_ENDPOINT_URL=$S3_FAULT_ENDPOINT run --separate-stderr bls --drop "$K"
    assert_success
    assert_stderr_empty
    assert_equal "$(s3_fault_requests | grep -cE '^POST [^ ]*[?&]delete[=& ].* 200$')" 1
    assert_equal "$(s3_fault_requests | grep -c '^DELETE ')" 0
    assert_equal "$(s3_keys)" ""
}

@test "--gc --max-size removes the oldest entries until the store is under the size; --max-age the older ones" {
    head -c 102400 /dev/urandom >"$T/payload"
    local i
    for i in 1 2 3; do
        bls "k$i" cat "$T/payload" >/dev/null || fail "build $i"
        ((i < 3)) && sleep 1.1
    done
    assert_equal "$(s3_keys | wc -l)" 3
    run --separate-stderr bls --gc --max-size 1G
    assert_success
    assert_equal "$(s3_keys | wc -l)" 3
    run --separate-stderr bls --gc --max-size 150K
    assert_success
    assert_equal "$(s3_keys)" "$(s3_obj k3)"
    sleep 2.2
    bls young echo young >/dev/null
    run --separate-stderr bls --gc --max-age 2
    assert_success
    assert_stderr_empty
    assert_equal "$(s3_keys)" "$(s3_obj young)"
}

@test "--output files and --depends through the S3 store: restored by another cache dir without building" {
    mkdir -p "$T/w1/dist" "$T/w2"
    head -c 300000 /dev/urandom >"$T/w1/dist/a.bin"
    printf 'dep\n' >"$T/dep"
    (cd "$T/w1" && "$BL" cache --cache-dir "$C" --store "$S3_STORE" --depends "$T/dep" --output dist "$K" "$COUNTED") >/dev/null ||
        fail "the build failed"
    run --separate-stderr bash -c 'cd "$0" && "$@"' "$T/w2" "$BL" cache --cache-dir "$T/c2" --store "$S3_STORE" \
        --depends "$T/dep" --output dist "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    assert_same_bytes "$T/w1/dist/a.bin" "$T/w2/dist/a.bin"
    assert_runs 1
}

@test "--max-entry met during a multipart upload: the output served whole, one warning, the upload aborted, nothing left" {
    s3_multipart_file "$T/big"
    run --separate-stderr bash -c '"$@" >"$0"' "$T/out" "$BL" cache --cache-dir "$C" --store "$S3_STORE" \
        --max-entry "$((S3_PART_MIB * 3 / 2))M" "$K" cat "$T/big"
    assert_success
    assert_one_bufferlock_line "output of '$K' not stored: its stored size, " "is over --max-entry ($((S3_PART_MIB * 3 / 2 << 20)) bytes)"
    assert_same_bytes "$T/big" "$T/out"
    assert_equal "$(s3_keys)" ''
    assert_equal "$(s3_uploads)" ''
}

@test "s3://BUCKET alone: entries at the bucket's root, listed and dropped there, the prefixes' objects left alone" {
    local key="root-$BATS_TEST_NUMBER-$$"
    bls "$K" echo under-prefix >/dev/null
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "s3://$S3_BUCKET" "$key" echo at-root
    assert_success
    assert_stderr_empty
    run aws_s3 s3api head-object --bucket "$S3_BUCKET" --key "$(key_md5 "$key").entry"
    assert_success
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "s3://$S3_BUCKET" --list
    assert_success
    assert_line --regexp " - $key\$"
    refute_line --regexp " $K\$"
    run --separate-stderr "$BL" cache --cache-dir "$C" --store "s3://$S3_BUCKET" --drop "$key"
    assert_success
    run aws_s3 s3api head-object --bucket "$S3_BUCKET" --key "$(key_md5 "$key").entry"
    assert_failure
    assert_equal "$(s3_keys)" "$(s3_obj "$K")"
}

@test "--warm through the S3 store: a new input state builds over the newest entry's --output, then is a hit" {
    mkdir -p "$T/w"
    cd "$T/w" || fail "no $T/w"
    printf 'one\n' >dep
    local step='mkdir -p out; cat dep >>out/log; cat out/log'
    run --separate-stderr bls --depends dep --output out --warm "$K" sh -c "$step"
    assert_success
    assert_output one
    # Another input state, in a tree without the output: the newest entry's
    # out/ is put in place first, and the build adds to it.
    rm -rf out
    printf 'two\n' >dep
    run --separate-stderr bls -v --depends dep --output out --warm "$K" sh -c "$step"
    assert_success
    assert_output "$(printf 'one\ntwo')"
    assert_regex "$stderr" "cache '$K': warm start from '$K' \\(inputs [0-9a-f]+, age "
    rm -rf out
    run --separate-stderr bls --depends dep --output out --warm "$K" sh -c "$step"
    assert_success
    assert_output "$(printf 'one\ntwo')"
    assert_equal "$(cat out/log)" "$(printf 'one\ntwo')"
}
