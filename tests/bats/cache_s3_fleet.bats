#!/usr/bin/env bats
# bufferlock cache --store s3://… across a fleet (SPEC §19): runners that
# share no file system (own HOME, own clone), one redis-server for the build
# lock (-r), one S3 server for the blobs. A runner restores what another
# built without building; concurrent callers on two runners build once.

bats_require_minimum_version 1.5.0

load s3_helpers
load cache_helpers

setup_file() {
    redis_setup_file || return 1
    s3_setup_file
}
teardown_file() {
    s3_teardown_file
    redis_teardown_file
}

setup() {
    s3_setup
    cache_setup
    redis_reset_shared
    make_mkdist
}
teardown() {
    track_descendants
    redis_teardown
}

# runner NAME -- ARGS...: `bufferlock cache --store S3_STORE -r REDIS ARGS...`
# on runner NAME: its own HOME (so its own cache dir) and clone ($T/NAME/repo).
runner() {
    local name=$1
    shift 2
    mkdir -p "$T/$name/home" "$T/$name/repo"
    (cd "$T/$name/repo" && HOME="$T/$name/home" XDG_CACHE_HOME='' \
        "$BL" cache --store "$S3_STORE" -r "$REDIS_URL" "$@")
}

@test "runner B restores runner A's 500 MiB --output from the S3 store (a multipart upload), without building" {
    run --separate-stderr runner A -- --output dist "$K" "$MKDIST" 512000
    assert_success
    assert_output built
    assert_stderr_empty
    run aws_s3 s3 ls "$S3_STORE/"
    assert_output --regexp " $(key_md5 "$K")\.[0-9a-f]{32}\.entry\$"
    run --separate-stderr runner B -- --output dist "$K" "$MKDIST" 512000
    assert_success
    assert_output built
    assert_stderr_empty
    assert_runs 1
    assert_equal "$(tree_sum "$T/B/repo/dist")" "$(tree_sum "$T/A/repo/dist")"
    local local_files
    local_files=$(find "$T/A/home" "$T/B/home" \( -name '*.entry' -o -name '*.lock' \) -print 2>/dev/null)
    [[ -z $local_files ]] || fail "entries or locks on the runners: $local_files"
}

@test "10 concurrent callers on two runners, a 1 s build: one build, the same tree for every caller" {
    fleet_callers 10 --store "$S3_STORE" -r "$REDIS_URL"
    assert_runs 1
}
