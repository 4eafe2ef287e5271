#!/usr/bin/env bats
# The S3 test fixtures work as the S3 store's suites will rely on them: the
# s3rver server checks signatures and is mended where it differs from S3,
# awscli talks to it, the program's own SigV4 signer (s3_sign) is accepted by
# it and refused with a wrong secret, and the fault server breaks requests as
# a test asks.

bats_require_minimum_version 1.5.0

load s3_helpers

setup_file() { s3_setup_file; }
teardown_file() { s3_teardown_file; }
setup() { s3_setup; }
teardown() { common_teardown; }

@test "awscli round-trips objects on the fixture: a small one, and 20 MiB (which it sends as a multipart upload)" {
    printf 'small\n' >"$T/small"
    head -c $((20 << 20)) /dev/urandom >"$T/big"
    aws_s3 s3 cp --only-show-errors "$T/small" "$S3_STORE/small"
    aws_s3 s3 cp --only-show-errors "$T/big" "$S3_STORE/big"
    run aws_s3 s3 ls "$S3_STORE/"
    assert_success
    assert_line --regexp " 6 small$"
    assert_line --regexp " $((20 << 20)) big$"
    aws_s3 s3 cp --only-show-errors "$S3_STORE/big" "$T/big.back"
    cmp "$T/big" "$T/big.back"
    run aws_s3 s3api head-object --bucket "$S3_BUCKET" --key "$S3_T/big"
    assert_success
    assert_output --partial "\"ContentLength\": $((20 << 20)),"
}

@test "the fixture checks signatures: a wrong secret is 403 SignatureDoesNotMatch, an unknown key InvalidAccessKeyId" {
    printf 'x' >"$T/x"
    aws_s3 s3 cp --only-show-errors "$T/x" "$S3_STORE/x"
    AWS_SECRET_ACCESS_KEY=not-the-secret run aws_s3 s3api get-object --bucket "$S3_BUCKET" --key "$S3_T/x" "$T/out"
    assert_failure
    assert_output --partial 'SignatureDoesNotMatch'
    AWS_SECRET_ACCESS_KEY=not-the-secret run aws_s3 s3 cp --only-show-errors "$T/x" "$S3_STORE/y"
    assert_failure
    assert_output --partial 'SignatureDoesNotMatch'
    AWS_ACCESS_KEY_ID=NOBODY run aws_s3 s3 ls "$S3_STORE/"
    assert_failure
    assert_output --partial 'InvalidAccessKeyId'
    run aws_s3 s3 ls "$S3_STORE/"
    assert_output --regexp ' 1 x$'
    refute_output --partial ' y'
}

@test "the program's signer: a PUT and a GET it signed are accepted (200), byte for byte, and awscli sees the object" {
    head -c 100000 /dev/urandom >"$T/body"
    run s3_signed PUT "$S3_T/a key+with=odd&chars~" "$T/body"
    assert_output 200
    run s3_signed GET "$S3_T/a key+with=odd&chars~"
    assert_output 200
    cmp "$T/body" "$T/s3-body"
    run aws_s3 s3api head-object --bucket "$S3_BUCKET" --key "$S3_T/a key+with=odd&chars~"
    assert_success
    assert_output --partial '"ContentLength": 100000'
    # UNSIGNED-PAYLOAD, as a streamed upload signs it.
    run s3_signed PUT "$S3_T/unsigned" "$T/body" -u
    assert_output 200
    run s3_signed HEAD "$S3_T/unsigned"
    assert_output 200
}

@test "the program's signer with a wrong secret or an unknown key: 403, and nothing stored" {
    printf 'x' >"$T/x"
    AWS_SECRET_ACCESS_KEY=not-the-secret run s3_signed PUT "$S3_T/x" "$T/x"
    assert_output 403
    run grep -c '<Code>SignatureDoesNotMatch</Code>' "$T/s3-body"
    assert_output 1
    AWS_SECRET_ACCESS_KEY=not-the-secret run s3_signed GET "$S3_T/x"
    assert_output 403
    AWS_ACCESS_KEY_ID=NOBODY run s3_signed GET "$S3_T/x"
    assert_output 403
    grep -q '<Code>InvalidAccessKeyId</Code>' "$T/s3-body"
    # Nothing was stored by the refused PUT.
    run s3_signed GET "$S3_T/x"
    assert_output 404
}

@test "the program's signer: queries signed sorted and with their '=' (multipart upload, listing pages)" {
    head -c 1000 /dev/urandom >"$T/part"
    run s3_signed POST "$S3_T/mp" "" -q uploads
    assert_output 200
    upload=$(sed -n 's:.*<UploadId>\([^<]*\)</UploadId>.*:\1:p' "$T/s3-body")
    [[ -n $upload ]]
    # uploadId before partNumber: the signer must sort them.
    run s3_signed PUT "$S3_T/mp" "$T/part" -q "uploadId=$upload" -q partNumber=1
    assert_output 200
    run s3_signed GET "" "" -q uploads -q "prefix=$S3_T/"
    assert_output 200
    grep -q "<UploadId>$upload</UploadId>" "$T/s3-body"
    run s3_signed DELETE "$S3_T/mp" "" -q "uploadId=$upload"
    assert_output 204
    run aws_s3 s3api list-multipart-uploads --bucket "$S3_BUCKET" --prefix "$S3_T/"
    assert_success
    refute_output --partial "$upload"
    # A listing in pages of 2: the continuation token of each page signed in the next.
    printf 'o' >"$T/o"
    for i in 1 2 3 4 5; do
        run s3_signed PUT "$S3_T/o$i" "$T/o"
        assert_output 200
    done
    run s3_signed GET "" "" -q list-type=2 -q max-keys=2 -q "prefix=$S3_T/o"
    assert_output 200
    token=$(sed -n 's:.*<NextContinuationToken>\([^<]*\)</NextContinuationToken>.*:\1:p' "$T/s3-body")
    [[ -n $token ]]
    run s3_signed GET "" "" -q list-type=2 -q max-keys=2 -q "prefix=$S3_T/o" -q "continuation-token=$token"
    assert_output 200
    grep -q "<Key>$S3_T/o3</Key>" "$T/s3-body"
    grep -q "<Key>$S3_T/o4</Key>" "$T/s3-body"
}

# s3_sign and botocore_sign.py print the same headers for the same request.
_same_as_botocore() { # METHOD KEY BODY|- [NAME=VALUE]...
    local method=$1 key=$2 body=$3 python q=() p
    shift 3
    for p in "$@"; do q+=(-q "$p"); done
    python=$(sed -n '1s/^#! *//p' "$(command -v "$S3_AWSCLI")")
    local ours theirs
    if [[ $body == - ]]; then
        ours=$("$S3_SIGN" -t 20261205T123456Z "${q[@]}" "$method" "$S3_BUCKET" "$key" | tail -n +2)
    else
        ours=$("$S3_SIGN" -t 20261205T123456Z -f "$body" "${q[@]}" "$method" "$S3_BUCKET" "$key" | tail -n +2)
    fi
    theirs=$("$python" "$BATS_TEST_DIRNAME/../tools/botocore_sign.py" "$method" "$S3_ENDPOINT" "$S3_BUCKET" \
        "$key" 20261205T123456Z "$AWS_REGION" "$body" "$@")
    [[ -n $theirs ]] || fail "botocore signed nothing"
    assert_equal "$ours" "$theirs"
    [[ -z ${AWS_SESSION_TOKEN:-} ]] || grep -qxF "x-amz-security-token: $AWS_SESSION_TOKEN" <<<"$ours"
    grep -qF "/$AWS_REGION/s3/aws4_request" <<<"$ours"
}

@test "the program's signer agrees with awscli's botocore byte for byte (keys, queries, bodies, a session token, a region)" {
    head -c 5000 /dev/urandom >"$T/body"
    _same_as_botocore GET "$S3_T/plain" -
    _same_as_botocore PUT "$S3_T/a key+with=odd&chars~/é" "$T/body"
    _same_as_botocore POST "$S3_T/mp" - uploads=
    _same_as_botocore PUT "$S3_T/mp" "$T/body" uploadId=a/b+c=d partNumber=10
    _same_as_botocore GET "" - list-type=2 "prefix=$S3_T/" "continuation-token=1/2+3=="
    AWS_SESSION_TOKEN="FwoG/+token==" AWS_REGION=eu-central-1 _same_as_botocore DELETE "$S3_T/x" - uploadId=u
}

@test "the fixture is mended where s3rver differs from S3: abort and list of multipart uploads, pages, suffix ranges, chunked PUTs" {
    run aws_s3 s3api create-multipart-upload --bucket "$S3_BUCKET" --key "$S3_T/mp"
    assert_success
    upload=$(sed -n 's/.*"UploadId": "\([^"]*\)".*/\1/p' <<<"$output")
    run aws_s3 s3api list-multipart-uploads --bucket "$S3_BUCKET" --prefix "$S3_T/"
    assert_success
    assert_output --partial "\"UploadId\": \"$upload\""
    aws_s3 s3api abort-multipart-upload --bucket "$S3_BUCKET" --key "$S3_T/mp" --upload-id "$upload"
    run aws_s3 s3api list-multipart-uploads --bucket "$S3_BUCKET" --prefix "$S3_T/"
    assert_success
    refute_output --partial "$upload"
    run aws_s3 s3api abort-multipart-upload --bucket "$S3_BUCKET" --key "$S3_T/mp" --upload-id "$upload"
    assert_failure
    assert_output --partial NoSuchUpload
    # ListObjectsV2 in pages of 2 (continuation tokens): all 5 keys, in order, one page a line.
    printf '0123456789' >"$T/ten"
    for i in 1 2 3 4 5; do aws_s3 s3 cp --only-show-errors "$T/ten" "$S3_STORE/o$i"; done
    run aws_s3 s3api list-objects-v2 --bucket "$S3_BUCKET" --prefix "$S3_T/" --page-size 2 \
        --query 'Contents[].Key' --output text
    assert_success
    assert_equal "${#lines[@]}" 3
    assert_line --index 0 "$(printf '%s\t%s' "$S3_T/o1" "$S3_T/o2")"
    assert_line --index 1 "$(printf '%s\t%s' "$S3_T/o3" "$S3_T/o4")"
    assert_line --index 2 "$S3_T/o5"
    # bytes=-3 is the last 3 bytes.
    aws_s3 s3api get-object --bucket "$S3_BUCKET" --key "$S3_T/o1" --range bytes=-3 "$T/tail" >/dev/null
    run cat "$T/tail"
    assert_output 789
    # A chunked PUT of unknown length: 501, as S3 answers it; nothing stored.
    run curl -sS -o "$T/answer" -w '%{http_code}' -X PUT -H 'Transfer-Encoding: chunked' \
        --data-binary @"$T/ten" "$S3_ENDPOINT/$S3_BUCKET/$S3_T/chunked"
    assert_output 501
    grep -q '<Code>NotImplemented</Code>' "$T/answer"
    run aws_s3 s3 ls "$S3_STORE/chunked"
    assert_failure
}

@test "the fixture lists past S3's page of 1,000 keys: awscli sees all 1,001, ListObjectsV2 in two pages" {
    s3_bulk_objects "$S3_T/many" 1001
    run aws_s3 s3 ls "$S3_STORE/many/"
    assert_success
    assert_equal "${#lines[@]}" 1001
    assert_line --index 1000 --regexp ' o1001$'
    run s3_signed GET "" "" -q list-type=2 -q "prefix=$S3_T/many/"
    assert_output 200
    grep -q '<IsTruncated>true</IsTruncated>' "$T/s3-body"
    token=$(sed -n 's:.*<NextContinuationToken>\([^<]*\)</NextContinuationToken>.*:\1:p' "$T/s3-body")
    run s3_signed GET "" "" -q list-type=2 -q "prefix=$S3_T/many/" -q "continuation-token=$token"
    assert_output 200
    run grep -o '<Key>[^<]*</Key>' "$T/s3-body"
    assert_output "<Key>$S3_T/many/o1001</Key>"
}

@test "the fault server passes signed requests through, and answers 500 and 503 SlowDown as asked, COUNT times" {
    start_s3_fault_server
    printf 'payload' >"$T/p"
    export AWS_ENDPOINT_URL=$S3_FAULT_ENDPOINT
    run s3_signed PUT "$S3_T/p" "$T/p"
    assert_output 200
    s3_fault e500 GET 1
    run s3_signed GET "$S3_T/p"
    assert_output 500
    grep -q '<Code>InternalError</Code>' "$T/s3-body"
    run s3_signed GET "$S3_T/p"
    assert_output 200
    assert_equal "$(cat "$T/s3-body")" payload
    s3_fault slowdown ANY 2
    run s3_signed HEAD "$S3_T/p"
    assert_output 503
    run s3_signed PUT "$S3_T/q" "$T/p"
    assert_output 503
    grep -q '<Code>SlowDown</Code>' "$T/s3-body"
    run s3_signed PUT "$S3_T/q" "$T/p"
    assert_output 200
    # A wrong secret through the proxy is still refused by the server behind it.
    s3_fault pass
    AWS_SECRET_ACCESS_KEY=not-the-secret run s3_signed GET "$S3_T/p"
    assert_output 403
    run s3_fault_requests
    assert_line --index 0 "PUT /$S3_BUCKET/$S3_T/p 200"
    assert_line --index 1 "GET /$S3_BUCKET/$S3_T/p 500"
    assert_line --index 3 "HEAD /$S3_BUCKET/$S3_T/p 503"
}

@test "the fault server stalls or cuts a GET after half its body, and refuses a chunked PUT with 501" {
    start_s3_fault_server
    head -c 10000 /dev/urandom >"$T/body"
    aws_s3 s3 cp --only-show-errors "$T/body" "$S3_STORE/body"
    url="$S3_FAULT_ENDPOINT/$S3_BUCKET/$S3_T/body" # the server answers unsigned GETs
    s3_fault stall GET
    run curl -sS --max-time 5 -o "$T/stalled" "$url" # room for a loaded machine to send the first half
    assert_equal "$status" 28 # timed out
    assert_equal "$(stat -c %s "$T/stalled")" 5000
    s3_fault cut GET
    run curl -sS --max-time 20 -o "$T/cut" "$url"
    assert_equal "$status" 18 # partial file
    assert_equal "$(stat -c %s "$T/cut")" 5000
    s3_fault nochunk
    run curl -sS -o "$T/answer" -w '%{http_code}' -X PUT -H 'Transfer-Encoding: chunked' \
        --data-binary @"$T/body" "$S3_FAULT_ENDPOINT/$S3_BUCKET/$S3_T/c"
    assert_output 501
    grep -q '<Code>NotImplemented</Code>' "$T/answer"
    export AWS_ENDPOINT_URL=$S3_FAULT_ENDPOINT
    run s3_signed PUT "$S3_T/c" "$T/body"
    assert_output 200
    run s3_fault_requests
    assert_line "GET /$S3_BUCKET/$S3_T/body stall"
    assert_line "GET /$S3_BUCKET/$S3_T/body cut"
    assert_line "PUT /$S3_BUCKET/$S3_T/c 501"
    assert_line "PUT /$S3_BUCKET/$S3_T/c 200"
}
