# shellcheck shell=bash
# Helpers for the suites of bufferlock's S3 store: one S3 test server per bats
# file, a faulty proxy in front of it per test, Debian's awscli as the
# reference client, and requests signed by the program's own signer.
#
#   load s3_helpers                       # loads redis_helpers, helpers
#   setup_file()    { s3_setup_file; }    # the S3 server on a free loopback port
#   teardown_file() { s3_teardown_file; }
#   setup()         { s3_setup; }         # common_setup + this test's prefix and AWS settings
#   teardown()      { common_teardown; }
#
# The server is the npm package @20minutes/s3rver (4.0.4, installed by
# `./build.sh deps` outside git, in .test-deps/; BUFFERLOCK_S3RVER_MODULES
# names another node_modules) started by tests/tools/s3_server.js: it checks
# SigV4 header signatures (keys S3RVER/S3RVER), not payload hashes nor
# unsigned requests; the script mends what it lacks of S3 (see there). One
# bucket, S3_BUCKET; it keeps its objects under S3_DIR/data and is stopped by
# PID (S3_PID) in s3_teardown_file. S3_ENDPOINT is its http://127.0.0.1:PORT.
#
# s3_setup exports the settings bufferlock and awscli read, and only those
# (no AWS_* variable of the caller leaks in; the shared files point into the
# test's directory, where none exist): AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
# AWS_REGION, AWS_ENDPOINT_URL. Each test has its own prefix S3_T (tN), and
# S3_STORE is s3://S3_BUCKET/S3_T.  awscli 2.9 reads no endpoint from the
# environment: `aws_s3 ARGS...` runs it with --endpoint-url.
#
# start_s3_fault_server puts tests/tools/s3_fault_server.py in front of the
# server (per test, tracked); `s3_fault MODE [METHOD [COUNT]]` chooses what
# it breaks; s3_fault_requests reads its log.  `s3_signed METHOD KEY [FILE]
# [S3_SIGN OPTIONS...]` sends one request signed by tests/tools/s3_sign.cpp.

load redis_helpers

S3_SERVER_JS="$BATS_TEST_DIRNAME/../tools/s3_server.js"
S3_FAULT_SERVER="$BATS_TEST_DIRNAME/../tools/s3_fault_server.py"
S3_MODULES=${BUFFERLOCK_S3RVER_MODULES:-$REPO_ROOT/.test-deps/s3rver/node_modules}
S3_BUCKET=bl-test
S3_KEY_ID=S3RVER
S3_SECRET=S3RVER
# Debian's awscli, the reference client (a pip-installed one elsewhere on PATH may differ).
# (Not an AWS_* name: s3_setup clears those.)
if [[ -z ${S3_AWSCLI:-} ]]; then
    if [[ -x /usr/bin/aws ]]; then S3_AWSCLI=/usr/bin/aws; else S3_AWSCLI=aws; fi
fi
S3_SIGN="$(dirname "$BL")/s3_sign"

_s3_server_up() { grep -q '^ready ' "$S3_DIR/server.log" 2>/dev/null; }

# _is_s3_server PID: PID is our s3_server.js (a guard against PID reuse).
_is_s3_server() {
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$S3_SERVER_JS"
}

s3_setup_file() {
    command -v node >/dev/null || {
        echo "node not found (./build.sh deps installs Debian's nodejs)" >&2
        return 1
    }
    [[ -f $S3_MODULES/@20minutes/s3rver/package.json ]] || {
        echo "s3rver is not installed in $S3_MODULES (./build.sh deps)" >&2
        return 1
    }
    S3_DIR="$BATS_FILE_TMPDIR/s3"
    mkdir -p "$S3_DIR/data" || return 1
    local try
    for ((try = 0; try < 8; try++)); do
        S3_PORT=$(free_port) || return 1
        : >"$S3_DIR/server.log"
        node "$S3_SERVER_JS" "$S3_MODULES" "$S3_DIR/data" "$S3_BUCKET" "$S3_PORT" \
            </dev/null >>"$S3_DIR/server.log" 2>&1 3>&- &
        S3_PID=$!
        if poll_until 30 _s3_server_up; then
            S3_ENDPOINT="http://127.0.0.1:$S3_PORT"
            export S3_DIR S3_PORT S3_PID S3_ENDPOINT
            return 0
        fi
        pid_alive "$S3_PID" && break
        grep -q 'EADDRINUSE' "$S3_DIR/server.log" || break
    done
    echo "s3_setup_file: the S3 server did not start; its log:" >&2
    cat -- "$S3_DIR/server.log" >&2
    s3_teardown_file
    return 1
}

s3_teardown_file() {
    [[ -n ${S3_PID:-} ]] && _is_s3_server "$S3_PID" || return 0
    kill -TERM "$S3_PID" 2>/dev/null || true
    wait_for_exit "$S3_PID" 10 || kill -KILL "$S3_PID" 2>/dev/null || true
    return 0
}

s3_setup() {
    common_setup
    local v
    for v in "${!AWS_@}"; do
        unset "$v"
    done
    export AWS_ACCESS_KEY_ID=$S3_KEY_ID AWS_SECRET_ACCESS_KEY=$S3_SECRET AWS_REGION=us-east-1
    export AWS_ENDPOINT_URL=$S3_ENDPOINT AWS_PAGER= AWS_EC2_METADATA_DISABLED=true
    export AWS_CONFIG_FILE="$T/aws-config" AWS_SHARED_CREDENTIALS_FILE="$T/aws-credentials"
    S3_T="t$BATS_TEST_NUMBER"
    S3_STORE="s3://$S3_BUCKET/$S3_T"
}

# aws_s3 ARGS...: awscli on the test server (or on AWS_ENDPOINT_URL when a
# test points it elsewhere, e.g. at the fault server).
aws_s3() {
    "$S3_AWSCLI" --endpoint-url "${AWS_ENDPOINT_URL:-$S3_ENDPOINT}" "$@"
}

# s3_keys: the keys under the test's prefix on the test server (past any
# fault server), as awscli lists them, sorted, one a line.
s3_keys() {
    "$S3_AWSCLI" --endpoint-url "$S3_ENDPOINT" s3api list-objects-v2 --bucket "$S3_BUCKET" --prefix "$S3_T/" \
        --query 'Contents[].Key' --output text | tr '\t' '\n' | grep -v '^None$' | LC_ALL=C sort || true
}

# s3_uploads: the multipart uploads under way under the test's prefix (their keys).
s3_uploads() {
    "$S3_AWSCLI" --endpoint-url "$S3_ENDPOINT" s3api list-multipart-uploads --bucket "$S3_BUCKET" \
        --prefix "$S3_T/" --query 'Uploads[].Key' --output text | grep -v '^None$' || true
}

# The S3 store's part size in MiB (S3Store::part_size; the man page's S3
# STORE): an output over it is a multipart upload.
S3_PART_MIB=32

# s3_multipart_file PATH: random bytes of two parts and a half at PATH: a
# multipart upload of three parts.
s3_multipart_file() {
    head -c $((S3_PART_MIB * 5 / 2 << 20)) /dev/urandom >"$1"
}

# s3_upload_under_way: a multipart upload is under way under the test's prefix.
s3_upload_under_way() { [[ -n $(s3_uploads) ]]; }

# big_then_gate FILE: a command (its path printed) that counts a run in
# RUNS (cache_helpers), prints FILE, waits for open_gate, prints "end".
big_then_gate() {
    cat >"$T/bin/big" <<SH
#!/bin/sh
echo "\$\$" >>'$RUNS'
cat '$1'
i=0
while [ ! -e '$T/gate' ] && [ \$i -lt 1200 ]; do sleep 0.05; i=\$((i + 1)); done
echo end
SH
    chmod +x "$T/bin/big"
    printf '%s\n' "$T/bin/big"
}

# s3_object_file KEY: where the server keeps KEY's bytes.
s3_object_file() {
    printf '%s/data/%s/%s._S3rver_object\n' "$S3_DIR" "$S3_BUCKET" "$1"
}

# s3_bulk_objects PREFIX N [FORMAT]: N small objects PREFIX/o0001... (their
# names printf's FORMAT of 1..N, default o%04d) made on the server's disk
# directly, as the server keeps them (thousands of PUTs would take
# minutes): for listings and removals past S3's 1,000 keys a request.
s3_bulk_objects() {
    local dir i
    dir="$S3_DIR/data/$S3_BUCKET/$1"
    mkdir -p "$dir" || return 1
    for ((i = 1; i <= $2; i++)); do
        # shellcheck disable=SC2059 # the format is the caller's
        printf '%s' "$i" >"$dir/$(printf "${3:-o%04d}" "$i")._S3rver_object" || return 1
    done
}

# s3_signed METHOD KEY [FILE [S3_SIGN OPTIONS...]]: sends METHOD on KEY (of
# S3_BUCKET; "" for the bucket itself) signed by s3_sign with the current
# AWS_* settings, FILE as the body (its SHA-256 signed); prints the HTTP
# status; the answer's body is left in $T/s3-body.
s3_signed() {
    local method=$1 key=$2 file=${3:-} lines=() headers=() line verb
    shift $(($# < 3 ? $# : 3))
    [[ -x $S3_SIGN ]] || fail "s3_sign not built next to $BL (configure with -DBUFFERLOCK_TESTS=ON)"
    mapfile -t lines < <("$S3_SIGN" ${file:+-f "$file"} "$@" "$method" "$S3_BUCKET" "$key")
    [[ ${#lines[@]} -gt 1 ]] || fail "s3_sign signed nothing"
    for line in "${lines[@]:1}"; do
        headers+=(-H "$line")
    done
    verb=(-X "$method")
    [[ $method != HEAD ]] || verb=(--head) # no body to wait for
    curl -sS --max-time 30 -o "$T/s3-body" -w '%{http_code}\n' "${verb[@]}" "${headers[@]}" \
        ${file:+--data-binary "@$file"} "${lines[0]}"
}

# start_s3_fault_server: s3_fault_server.py on a free port in front of the
# test server (tracked: stopped by PID in teardown), breaking nothing until
# s3_fault says so.  Sets S3_FAULT_ENDPOINT, S3_FAULT_CONTROL, S3_FAULT_LOG.
start_s3_fault_server() {
    local port try pid
    S3_FAULT_CONTROL="$T/s3-fault"
    S3_FAULT_LOG="$S3_FAULT_CONTROL.log"
    for ((try = 0; try < 8; try++)); do
        port=$(free_port) || return 1
        : >"$S3_FAULT_LOG"
        python3 "$S3_FAULT_SERVER" "$port" "$S3_FAULT_CONTROL" "$S3_PORT" \
            </dev/null >>"$T/s3-fault.err" 2>&1 3>&- &
        pid=$!
        track_pid "$pid"
        if poll_until 10 grep -qx ready "$S3_FAULT_LOG"; then
            S3_FAULT_ENDPOINT="http://127.0.0.1:$port"
            return 0
        fi
        pid_alive "$pid" && fail "the S3 fault server did not start: $(cat "$T/s3-fault.err")"
        grep -q 'Address already in use' "$T/s3-fault.err" || break
    done
    fail "the S3 fault server did not start: $(cat "$T/s3-fault.err")"
}

# s3_fault MODE [METHOD [COUNT]]: what the fault server breaks from now on
# (s3_fault_server.py: pass e500 slowdown denied skewed stall cut nochunk).
s3_fault() {
    printf '%s\n' "$*" >"$S3_FAULT_CONTROL"
}

# s3_fault_requests: the fault server's log, one "METHOD TARGET STATUS" a request.
s3_fault_requests() {
    grep -v '^ready$' "$S3_FAULT_LOG" || true
}
