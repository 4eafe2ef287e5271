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

# s3_keys: the keys under the test's prefix, as awscli lists them, sorted.
s3_keys() {
    aws_s3 s3api list-objects-v2 --bucket "$S3_BUCKET" --prefix "$S3_T/" --query 'Contents[].Key' --output text |
        tr '\t' '\n' | grep -v '^None$' | LC_ALL=C sort || true
}

# s3_uploads: the multipart uploads under way under the test's prefix.
s3_uploads() {
    aws_s3 s3api list-multipart-uploads --bucket "$S3_BUCKET" --prefix "$S3_T/" --query 'Uploads[].Key' --output text |
        grep -v '^None$' || true
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
