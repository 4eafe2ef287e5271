#!/usr/bin/env bash
# bench/warm.sh — `bufferlock cache --warm` on a real build, and the cost of
# a warm restore against a hit's.
#
#   bench/warm.sh [--quick]
#
# (a) a real Go project from Debian's packages (golang.org/x/text, from
#     golang-golang-x-text-dev, built with golang-go in GOPATH mode, every
#     package: `go build -trimpath ./...`), Go's build cache (GOCACHE) as
#     the --output, --depends on the tree. A first build of the pristine
#     tree is stored; then one source file changes and the changed tree is
#     built in a fresh clone (no GOCACHE) twice: cold (no --warm, a cache
#     directory of its own) and warm (--warm: the first build's GOCACHE
#     restored first), and a second runner with the same change (another
#     fresh clone, the same store) is served without building.
#     Target: warm <= 0.3x cold.
# (b) a 300 MiB --output tree (300 files of 1 MiB, incompressible): a hit's
#     restore into a fresh directory vs a warm start's restore of the same
#     entry for other inputs (its build `false`, so that nothing is stored
#     and the time is the lookup, verification and restore), interleaved,
#     the median of 9 rounds each (3 with --quick), the order alternating.
#     Target: warm <= 1.1x hit.
#
# Wall times from date +%s%N around each call; the file store throughout.
# Environment: BUFFERLOCK_BIN (default <repo>/build/bufferlock); WARM_PARTS
# (default ab): the parts to run, e.g. WARM_PARTS=b for (b) alone.
# Exit status: 0 unless a run or a correctness check failed. Missed targets
# are reported in the summary, not turned into a failure.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"

ROUNDS=9
((quick)) && ROUNDS=3
TARGET_FMT='  %-48s %9s   target %-2s %-7s %s\n'
SRC=/usr/share/gocode/src/golang.org/x/text

want go golang-go
[[ -d $SRC ]] || need+=(golang-golang-x-text-dev)
install_missing tools
require_bl
if ! command -v go >/dev/null || [[ ! -d $SRC ]]; then
    echo "$NAME: needs golang-go and golang-golang-x-text-dev" >&2
    exit 2
fi
make_tmp
bench_header warm

# now_ns: the wall clock in nanoseconds.
now_ns() { date +%s%N; }

# secs NS: nanoseconds as seconds, 2 decimals.
secs() { awk -v x="$1" 'BEGIN { printf "%.2f", x / 1e9 }'; }

# median NUMBER...: the median of the numbers.
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# ------------------------------------------------------------- (a) Go ------
GOPATH_DIR=$tmp/go
PROJECT=$GOPATH_DIR/src/golang.org/x/text
export GO111MODULE=off GOPATH=$GOPATH_DIR GOFLAGS=-trimpath GOCACHE=$PROJECT/.gocache

# fresh_clone: the pristine tree at the one project path (a CI runner's
# checkout), without a GOCACHE.
fresh_clone() {
    rm -rf "$GOPATH_DIR"
    mkdir -p "$(dirname "$PROJECT")"
    cp -r "$SRC" "$PROJECT"
}

# change_one_file: one source file of a package in the middle of the tree.
change_one_file() {
    printf '\nfunc warmBenchChanged() int { return %d }\n' "$1" >>"$PROJECT/encoding/charmap/charmap.go"
}

# gobuild CACHEDIR ARGS...: the build under bufferlock cache; sets took (ns).
gobuild() {
    local cache=$1 t0
    shift
    t0=$(now_ns)
    (cd "$PROJECT" && "$BL" cache --cache-dir "$cache" --depends . --output .gocache "$@" \
        x-text -- go build ./...) >/dev/null 2>"$tmp/go.err" || {
        err "go build under bufferlock failed: $(tail -n 3 "$tmp/go.err")"
        return 1
    }
    took=$(($(now_ns) - t0))
}

if [[ ${WARM_PARTS:-ab} == *a* ]]; then
    hr "(a) golang.org/x/text, go build ./... ($(go version | cut -d' ' -f3)), GOCACHE as --output"
    fresh_clone
    gobuild "$tmp/store" --warm
    base=$took
    fresh_clone
    change_one_file 1
    gobuild "$tmp/cold-store"
    cold=$took
    fresh_clone
    change_one_file 1
    gobuild "$tmp/store" --warm -v
    warm=$took
    grep -q 'warm start from' "$tmp/go.err" || err "the warm build did not start warm: $(cat "$tmp/go.err")"
    fresh_clone
    change_one_file 1
    gobuild "$tmp/store" --warm -v
    second=$took
    grep -q ': hit ' "$tmp/go.err" || err "the second runner was not served: $(cat "$tmp/go.err")"
    printf '  %-48s %9s s\n' "first build (pristine tree, cold, stored)" "$(secs "$base")"
    printf '  %-48s %9s s\n' "changed file, cold build" "$(secs "$cold")"
    printf '  %-48s %9s s\n' "changed file, warm build (--warm)" "$(secs "$warm")"
    printf '  %-48s %9s s\n' "second runner, same change (a hit)" "$(secs "$second")"
    printf '  %-48s %9s\n' "GOCACHE restored" "$(du -sh "$GOCACHE" | cut -f1)"
    warm_ratio=$(ratio "$warm" "$cold")
    rm -rf "$GOPATH_DIR" "$tmp/cold-store"
fi

# ------------------------------------------------- (b) 300 MiB restore ------
hr "(b) a 300 MiB --output tree: warm restore vs a hit's restore (median of $ROUNDS)"
W=$tmp/tree
mkdir -p "$W/out"
for ((i = 0; i < 300; i++)); do head -c 1M /dev/urandom >"$W/out/f$i"; done
printf 'one\n' >"$W/in"
(cd "$W" && "$BL" cache --cache-dir "$tmp/tstore" --depends in --output out tree -- true) ||
    err "the 300 MiB entry was not stored"
printf 'two\n' >"$W/in2"
# restore_hit / restore_warm: one timed restore into a fresh directory.
restore_hit() {
    rm -rf "$W/out"
    sync
    local t0
    t0=$(now_ns)
    (cd "$W" && "$BL" cache --cache-dir "$tmp/tstore" --depends in --output out tree -- false) ||
        err "the hit failed"
    hits+=($(($(now_ns) - t0)))
    [[ $(du -sm "$W/out" | cut -f1) -ge 300 ]] || err "the hit restored no 300 MiB"
}
restore_warm() {
    rm -rf "$W/out"
    sync
    local t0
    t0=$(now_ns)
    # Other inputs (in2): a miss; the warm entry restored, then `false` stores nothing.
    (cd "$W" && "$BL" cache --cache-dir "$tmp/tstore" --depends in2 --output out --warm tree -- false) &&
        err "the warm build's false succeeded"
    warms+=($(($(now_ns) - t0)))
    [[ $(du -sm "$W/out" | cut -f1) -ge 300 ]] || err "the warm start restored no 300 MiB"
}
hits=() warms=()
for ((r = 0; r < ROUNDS; r++)); do # the order alternates: noise hits both alike
    if ((r % 2)); then
        restore_warm
        restore_hit
    else
        restore_hit
        restore_warm
    fi
done
hit=$(median "${hits[@]}")
warmr=$(median "${warms[@]}")
printf '  %-48s %9s ms\n' "hit: restore of 300 MiB" "$(ms "$hit" 1)"
printf '  %-48s %9s ms\n' "warm start: restore of 300 MiB (build: false)" "$(ms "$warmr" 1)"

hr summary
target "(a) warm build / cold build" "${warm_ratio:-}" "<=" 0.3
target "(b) warm restore / hit restore" "$(ratio "$warmr" "$hit")" "<=" 1.1
bench_exit
