#!/usr/bin/env bash
# bench/s3.sh — `bufferlock cache --store s3://…` against plain transfers of
# the same bytes on the same S3 test server (tests/tools/s3_server.js: the
# npm @20minutes/s3rver that the bats suites use, started here on a free
# loopback port, stopped by pid).
#
#   bench/s3.sh [--quick]
#
# (a) store: a --force build whose command prints a 500 MiB incompressible
#     file (`cat blob`), stored as a multipart upload while it runs, vs
#     `curl -T blob` (one unsigned PUT: the server takes those), `aws s3 cp
#     blob` (what users would otherwise run) and curlMP: the same multipart
#     sequence as bufferlock's by hand with curl (create, one PUT per part of
#     PART_MIB, split beforehand, complete), the server's own floor for a
#     streamed store, whose parts the server stores and then copies again
# (b) restore: a hit of that entry (ranged GETs into an unnamed file,
#     verified, then written to a file), vs `curl -o` of the same object and
#     `aws s3 cp` of it to a file
# Reported: medians of interleaved rounds, ratios to curl, peak RSS (targets:
# store and restore <= 1.3x curl, peak RSS <= 64 MiB both ways).
#
# Environment: BUFFERLOCK_BIN (default <repo>/build/bufferlock), CC (cc),
# BUFFERLOCK_S3RVER_MODULES (the node_modules holding @20minutes/s3rver;
# default <repo>/.test-deps/s3rver/node_modules, made by ./build.sh deps),
# SIZE_MIB (500), PART_MIB (32: the store's part size).
# Exit status: 0 unless a run or a check failed (a restore that differs).
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"

if ((quick)); then ROUNDS=1; else ROUNDS=3; fi
SIZE_MIB=${SIZE_MIB:-500}
PART_MIB=${PART_MIB:-32}
MODULES=${BUFFERLOCK_S3RVER_MODULES:-$repo/.test-deps/s3rver/node_modules}
BUCKET=bl-bench
TARGET_FMT='  %-48s %9s   target %-2s %-7s %s\n'

want "$CC" gcc libc6-dev
want curl curl
want node nodejs
want aws awscli
install_missing tools
require_cc
require_bl
[[ -f $MODULES/@20minutes/s3rver/package.json ]] || {
    echo "$NAME: no s3rver in $MODULES (./build.sh deps, or set BUFFERLOCK_S3RVER_MODULES)" >&2
    exit 2
}
AWS=$(command -v aws)
CURL=$(command -v curl)

make_tmp spawn
s3_pid=
stop_s3() {
    [[ -z $s3_pid ]] || kill "$s3_pid" 2>/dev/null || true
}
trap 'stop_s3; cleanup' EXIT

bench_header s3
echo "  bufferlock: $BL"
echo "  temp dir: $tmp ($(df -PT "$tmp" | awk 'NR == 2 { print $2 }'))"

mkdir -p "$tmp/data"
node "$repo/tests/tools/s3_server.js" "$MODULES" "$tmp/data" "$BUCKET" 0 >"$tmp/s3.log" 2>&1 </dev/null &
s3_pid=$!
for _ in $(seq 100); do
    grep -q '^ready ' "$tmp/s3.log" && break
    sleep 0.1
done
port=$(sed -n 's/^ready //p' "$tmp/s3.log")
[[ -n $port ]] || {
    echo "$NAME: the S3 server did not start: $(cat "$tmp/s3.log")" >&2
    exit 2
}
ENDPOINT=http://127.0.0.1:$port
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 AWS_ENDPOINT_URL=$ENDPOINT
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_PAGER='' AWS_EC2_METADATA_DISABLED=true
STORE=s3://$BUCKET/b
OBJ=b/$(printf %s k | md5sum | cut -c1-32).entry
head -c "${SIZE_MIB}M" /dev/urandom >"$tmp/blob"
mkdir "$tmp/parts"
split -a 4 -d -b "${PART_MIB}M" "$tmp/blob" "$tmp/parts/"
# The multipart sequence by hand (unsigned: the server takes those).
cat >"$tmp/multipart.sh" <<'SH'
set -eu
curl=$1 url=$2 parts=$3
id=$("$curl" -s -f -X POST "$url?uploads" | sed -n 's:.*<UploadId>\(.*\)</UploadId>.*:\1:p')
xml="<CompleteMultipartUpload>"
n=0
for part in "$parts"/*; do
    n=$((n + 1))
    etag=$("$curl" -s -f -D - -o /dev/null -T "$part" "$url?partNumber=$n&uploadId=$id" |
        tr -d '\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')
    xml="$xml<Part><PartNumber>$n</PartNumber><ETag>$etag</ETag></Part>"
done
"$curl" -s -f -o /dev/null -X POST --data-binary "$xml</CompleteMultipartUpload>" "$url?uploadId=$id"
SH

# tools: put (bufferlock store), curlT, curlMP, awsup; get (bufferlock restore), curlO, awsdown
cmd_a() {
    OUT=null
    case $1 in
        put) CMD=("$BL" cache --cache-dir "$tmp/c" --store "$STORE" --force k -- cat "$tmp/blob") ;;
        curlT) CMD=("$CURL" -s -f -o /dev/null -T "$tmp/blob" "$ENDPOINT/$BUCKET/raw.bin") ;;
        curlMP) CMD=(/bin/sh "$tmp/multipart.sh" "$CURL" "$ENDPOINT/$BUCKET/mp.bin" "$tmp/parts") ;;
        awsup) CMD=("$AWS" --endpoint-url "$ENDPOINT" s3 cp --only-show-errors "$tmp/blob" "s3://$BUCKET/aws.bin") ;;
        get) CMD=(/bin/sh -c "exec '$BL' cache --cache-dir '$tmp/c2' --store '$STORE' k -- false >'$tmp/got'") ;;
        curlO) CMD=("$CURL" -s -f -o "$tmp/got.curl" "$ENDPOINT/$BUCKET/$OBJ") ;;
        awsdown) CMD=("$AWS" --endpoint-url "$ENDPOINT" s3 cp --only-show-errors "s3://$BUCKET/$OBJ" "$tmp/got.aws") ;;
    esac
}

report() { # LABEL REFERENCE TOOL...
    local label=$1 ref=$2 t
    shift 2
    hr "$label: $ROUNDS interleaved rounds x 1 run per tool"
    time_rounds "$tmp" "$ROUNDS" 1 0 "$@"
    for t in "$@"; do ((a_fail[$t] == 0)) || err "$t: some runs exited non-zero"; done
    printf '  %-8s %5s %10s %8s %15s\n' tool runs median_ms "x$ref" maxrss_KiB_med/max
    for t in "$@"; do
        printf '  %-8s %5s %10s %8s %15s\n' "$t" "${a_n[$t]}" "$(ms "${a_med[$t]}" 1)" \
            "$(ratio "${a_med[$t]}" "${a_med[$ref]}")" "${a_rssmed[$t]}/${a_rss[$t]}"
    done
}

report "(a) store, $SIZE_MIB MiB incompressible" curlT put curlT curlMP awsup
put_ratio=$(ratio "${a_med[put]}" "${a_med[curlT]}")
floor_ratio=$(ratio "${a_med[curlMP]}" "${a_med[curlT]}")
put_floor_ratio=$(ratio "${a_med[put]}" "${a_med[curlMP]}")
put_rss=${a_rss[put]}
report "(b) restore, $SIZE_MIB MiB incompressible" curlO get curlO awsdown
get_ratio=$(ratio "${a_med[get]}" "${a_med[curlO]}")
get_rss=${a_rss[get]}
cmp -s "$tmp/blob" "$tmp/got" || err "(b) the restored output differs from what was stored"
echo "  (put = bufferlock cache --force storing \`cat blob\`: ${PART_MIB} MiB parts, one in flight; get = a hit"
echo "   of it written to a file; object $(stat -c %s "$tmp/data/$BUCKET/$OBJ._S3rver_object" 2>/dev/null || echo '?') bytes)"

hr summary
target "(a) store: bufferlock / curl -T" "$put_ratio" "<=" 1.3
note "(a) the server's multipart floor, curlMP / curl -T: $floor_ratio; bufferlock / curlMP: $put_floor_ratio"
target "(a) store: peak RSS MiB" "$(awk -v k="$put_rss" 'BEGIN { printf "%.1f", k / 1024 }')" "<=" 64
target "(b) restore: bufferlock / curl -o" "$get_ratio" "<=" 1.3
target "(b) restore: peak RSS MiB" "$(awk -v k="$get_rss" 'BEGIN { printf "%.1f", k / 1024 }')" "<=" 64
bench_exit
