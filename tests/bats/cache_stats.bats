#!/usr/bin/env bats
# bufferlock cache --stats (SPEC §21): every call counts what it did, once,
# in the store it used: per cache directory for the file store, in the
# Redis store's server, in the -r Redis for an http store (else per cache
# directory); --stats prints the counters, --stats --zero resets them;
# --read-only counts nothing (SPEC §22).  The counts are checked exactly
# against scripted runs.

bats_require_minimum_version 1.5.0

load all_stores_helpers
load stats_helpers

setup() {
    all_stores_setup
}

# stat ARGS... -- PATH: `bufferlock cache ARGS... --stats --json`, then the
# value at PATH (python3 subscripts, e.g. "['totals']['hits']") of the
# document, which python3's json module must parse.
stat() {
    local args=() path doc
    while [[ $1 != -- ]]; do
        args+=("$1")
        shift
    done
    path=$2
    doc=$("$BL" cache "${args[@]}" --stats --json) || fail "--stats failed: $doc"
    printf '%s' "$doc" | python3 -c "import json, sys; d = json.load(sys.stdin); print(d$path)"
}

# totals ARGS...: the totals as "name=value" lines, sorted (ints as ints).
totals() {
    local doc
    doc=$("$BL" cache "$@" --stats --json) || fail "--stats failed: $doc"
    printf '%s' "$doc" | python3 -c '
import json, sys
t = json.load(sys.stdin)["totals"]
for k in sorted(t):
    if k in ("hits", "misses", "builds", "failed_builds", "waits", "stale_serves", "warm_starts", "store_errors"):
        print("%s=%d" % (k, t[k]))'
}

# assert_counts ARGS... -- EXPECTED: totals ARGS... equal EXPECTED (the
# counters not named must be 0).
assert_counts() {
    local args=() want=() name got
    while [[ $1 != -- ]]; do
        args+=("$1")
        shift
    done
    shift
    declare -A expect=([hits]=0 [misses]=0 [builds]=0 [failed_builds]=0 [waits]=0 [stale_serves]=0 [warm_starts]=0 [store_errors]=0)
    for name in "$@"; do expect[${name%%=*}]=${name#*=}; done
    for name in $(printf '%s\n' "${!expect[@]}" | sort); do want+=("$name=${expect[$name]}"); done
    got=$(totals "${args[@]}")
    assert_equal "$got" "$(printf '%s\n' "${want[@]}")"
}

# crowd N KEY ARGS...: N callers of KEY at once (ARGS: store options), one
# builds with `gated` while the others wait for its lock; then the gate opens.
crowd() {
    local n=$1 key=$2 i
    shift 2
    for ((i = 0; i < n; i++)); do
        spawn_caller "$i" "$@" "$key" "$GATED" built
    done
    poll_until 30 runs_are 1 || fail "the build did not start"
    sleep 2 # the others reach the lock (a generous margin on a loaded machine)
    open_gate
    wait_callers 60
    for ((i = 0; i < n; i++)); do
        assert_equal "$(caller_status "$i")" 0
        assert_equal "$(cat "$T/out.$i")" built
    done
    assert_runs 1
}

runs_are() { [[ $(runs) == "$1" ]]; }

# assert_stats_ttl PATTERN N: N counter keys match PATTERN on the shared
# server, each with a time to live (as every key bufferlock writes).
assert_stats_ttl() {
    local k n=0 ttl
    while IFS= read -r k; do
        [[ -n $k ]] || continue
        n=$((n + 1))
        ttl=$(rcli PTTL "$k")
        ((ttl > 0)) || fail "counter key '$k' has no time to live ($ttl)"
    done < <(rcli --scan --pattern "$1")
    assert_equal "$n" "$2"
}

# ge A B: A >= B as decimals.
ge() { python3 -c "import sys; sys.exit(0 if float('$1') >= float('$2') else 1)"; }

@test "file store: N callers of one KEY count 1 build and N-1 waits; K hits; a failed build; bytes and seconds" {
    crowd 5 k
    local i
    for i in 1 2 3; do
        run -0 blc k "$GATED" other
        assert_output built
    done
    run -3 blc k2 sh -c 'exit 3'
    assert_counts --cache-dir "$C" -- hits=3 waits=4 builds=1 failed_builds=1 misses=2
    # Bytes stored are the stored size --list shows; every serve was of it.
    local stored
    stored=$(blc --list | awk '{ print $3 }')
    assert_equal "$(stat --cache-dir "$C" -- "['totals']['bytes_stored']")" "$stored"
    assert_equal "$(stat --cache-dir "$C" -- "['totals']['bytes_served']")" $((7 * stored))
    # The build held the gate for 2 s or more; each of the 7 serves saved it.
    ge "$(stat --cache-dir "$C" -- "['totals']['build_seconds']")" 2
    ge "$(stat --cache-dir "$C" -- "['totals']['saved_seconds']")" 14
    # The top keys: k saved all of it; k2 nothing.
    assert_equal "$(stat --cache-dir "$C" -- "['top'][0]['key']")" k
    assert_equal "$(stat --cache-dir "$C" -- "['top'][0]['hits']")" 3
    assert_equal "$(stat --cache-dir "$C" -- "['top'][1]['failed_builds']")" 1
}

@test "file store: a stale serve counts, and the background rebuild counts its build" {
    run -0 blc --max-age 1 --stale 1h k "$COUNTED" 1
    sleep 1.5
    run -0 blc --max-age 1 --stale 1h --background k "$COUNTED"
    poll_until 30 runs_are 2 || fail "no background rebuild"
    poll_until 30 counts_are "$C" builds=2 || fail "the background build was not counted: $(totals --cache-dir "$C")"
    assert_counts --cache-dir "$C" -- builds=2 misses=2 stale_serves=1
    ge "$(stat --cache-dir "$C" -- "['totals']['saved_seconds']")" 1
}

@test "--gc compacts the stats file: one line a KEY, the same report before and after, and counting goes on" {
    local i
    run -0 blc k "$COUNTED" 0 x
    for ((i = 0; i < 30; i++)); do blc k "$COUNTED" 0 x >/dev/null || fail "hit $i"; done
    run -5 blc k2 sh -c 'exit 5'
    run -0 blc k3 "$COUNTED" 0 z
    blc k3 "$COUNTED" 0 z >/dev/null
    blc --stats --json >"$T/before.json"
    local before after
    before=$(wc -c <"$C/stats")
    run -0 blc --gc
    after=$(wc -c <"$C/stats")
    ((after * 5 < before)) || fail "the stats file went from $before to $after bytes"
    assert_equal "$(wc -l <"$C/stats")" 3
    blc --stats --json >"$T/after.json"
    cmp "$T/before.json" "$T/after.json" || fail "$(diff "$T/before.json" "$T/after.json")"
    ls "$C" | grep -q '^stats\.gc' && fail "an aside file was left: $(ls "$C")"
    # A second --gc keeps the same; calls after it add to the sums.
    run -0 blc --gc
    cmp "$T/before.json" <(blc --stats --json) || fail "a second --gc changed the report"
    blc k "$COUNTED" 0 x >/dev/null
    assert_counts --cache-dir "$C" -- hits=32 builds=2 failed_builds=1 misses=3
}

# counts_are DIR NAME=VALUE: the file store's counter is VALUE.
counts_are() { grep -qx "$2" <<<"$(totals --cache-dir "$1")"; }

@test "--read-only counts nothing, --stats --zero resets and prints nothing" {
    run -0 blc k "$COUNTED" 0 x
    BUFFERLOCK_CACHE_READ_ONLY=1 run -0 blc k "$COUNTED" 0 y
    assert_output x
    run -0 blc --read-only k "$COUNTED" 0 y
    run -0 blc --read-only k3 "$COUNTED" 0 y
    assert_counts --cache-dir "$C" -- builds=1 misses=1
    run -0 blc k "$COUNTED" 0 y
    assert_counts --cache-dir "$C" -- builds=1 misses=1 hits=1
    run -0 --separate-stderr blc --stats --zero
    assert_output ''
    assert_equal "$stderr" ''
    assert_counts --cache-dir "$C" --
    assert_equal "$(stat --cache-dir "$C" -- "['top']")" '[]'
    run -0 blc k "$COUNTED" 0 y
    assert_counts --cache-dir "$C" -- hits=1
}

@test "usage: --format and --zero need --stats, a bad format, a KEY with --stats, --zero read-only: 64, one line" {
    local args
    for args in "--format json" "--zero" "--stats --format yaml" "--stats k" "--stats --list" \
        "--stats --json --format markdown" "--stats --zero --read-only"; do
        # shellcheck disable=SC2086
        run -64 --separate-stderr blc $args
        assert_equal "${#lines[@]}" 0
        [[ $stderr == bufferlock:* && $stderr != *$'\n'* ]] || fail "$args: $stderr"
    done
    run -64 --separate-stderr blc --stats --format yaml
    [[ $stderr == *"'yaml'"* ]] || fail "$stderr"
}

@test "redis store: counts in the server, fleet-wide from a second runner; keys with a TTL; --zero" {
    # Runner A and runner B: their own HOME and cache directory, one server.
    local i
    for ((i = 0; i < 4; i++)); do
        if ((i % 2)); then
            C="$T/cacheB" HOME="$T/homeB" spawn_caller "$i" --store redis -r "$REDIS_URL" k "$GATED" built
        else
            C="$T/cacheA" HOME="$T/homeA" spawn_caller "$i" --store redis -r "$REDIS_URL" k "$GATED" built
        fi
    done
    poll_until 30 runs_are 1 || fail "the build did not start"
    sleep 2
    open_gate
    wait_callers 60
    assert_runs 1
    C="$T/cacheB" run -0 bls k "$GATED" other
    C="$T/cacheB" run -7 bls k2 sh -c 'exit 7'
    # Either runner reads the same counters; nothing in their directories.
    assert_counts --cache-dir "$T/cacheA" --store redis -r "$REDIS_URL" -- \
        builds=1 waits=3 hits=1 failed_builds=1 misses=2
    assert_counts --cache-dir "$T/cacheB" --store redis -r "$REDIS_URL" -- \
        builds=1 waits=3 hits=1 failed_builds=1 misses=2
    [[ ! -e $T/cacheA/stats && ! -e $T/cacheB/stats ]] || fail "counted in a cache directory"
    ge "$(stat --cache-dir "$C" --store redis -r "$REDIS_URL" -- "['totals']['saved_seconds']")" 8
    assert_equal "$(stat --cache-dir "$C" --store redis -r "$REDIS_URL" -- "['top'][0]['key']")" k
    assert_equal "$(stat --cache-dir "$C" --store redis -r "$REDIS_URL" -- "['top'][0]['waits']")" 3
    assert_stats_ttl '{buffer:lock:stats}*' 4
    # Another --namespace: other counters.
    assert_counts --cache-dir "$C" --store redis -r "$REDIS_URL" --namespace other: --
    run -0 bls --stats --zero
    assert_counts --cache-dir "$C" --store redis -r "$REDIS_URL" --
    assert_equal "$(rcli --scan --pattern '{buffer:lock:stats}*')" ''
}

# traced OUT ARGS...: `bufferlock cache ARGS...` under strace, its socket
# calls (the first bytes of each buffer) in OUT.
traced() {
    local out=$1
    shift
    # LeakSanitizer cannot run under ptrace (it aborts): the sanitizer
    # build's leak check is off for the traced call alone.
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        strace -f -qq -s 120 -e trace=connect,sendto,recvfrom -o "$out" "$BL" cache "$@"
}

# count_is_last TRACE: the count (an EVAL of the counting script's text) is
# sent once and then nothing is read, on any socket: it costs no round trip
# (SPEC §21). Prints the socket it went on.
count_is_last() {
    python3 - "$1" <<'PY'
import re, sys
lines = open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines()
sent = [i for i, l in enumerate(lines) if "sendto(" in l and "EVAL" in l and "HINCRBY" in l]
if len(sent) != 1:
    sys.exit("the count is not one EVAL of the script's text: %d such sends" % len(sent))
after = [l for l in lines[sent[0] + 1:] if "recvfrom(" in l]
if after:
    sys.exit("read after the count was sent: %s" % after[0])
print(re.search(r"sendto\((\d+),", lines[sent[0]]).group(1))
PY
}

@test "redis store: a count is sent without waiting for its reply, and many hits still add up exactly" {
    run -0 bls k "$COUNTED" 0 x
    traced "$T/trace" --cache-dir "$C" --store redis -r "$REDIS_URL" k "$COUNTED" 0 y >"$T/out" ||
        fail "the traced hit failed"
    assert_equal "$(cat "$T/out")" x
    count_is_last "$T/trace" >/dev/null || fail "$(cat "$T/trace")"
    # The server runs what it read before the client closed: every unread
    # count lands, sequential and concurrent ones alike.
    local i
    for ((i = 0; i < 20; i++)); do
        bls k "$COUNTED" 0 y >/dev/null || fail "hit $i failed"
    done
    for ((i = 0; i < 10; i++)); do
        bls k "$COUNTED" 0 y >/dev/null &
    done
    wait
    assert_counts --cache-dir "$C" --store redis -r "$REDIS_URL" -- builds=1 misses=1 hits=31
}

@test "http store: counts in the -r Redis from two runners; a refused upload is a store error; without -r in the cache directory" {
    local wr500
    wr500=$(http_url wr500)
    crowd 3 kc --store "$STORE" -r "$REDIS_URL"
    run -0 "$BL" cache --cache-dir "$T/cacheA" --store "$STORE" -r "$REDIS_URL" k "$COUNTED" 1 x
    C="$T/cacheB" run -0 traced "$T/trace" --cache-dir "$T/cacheB" --store "$STORE" -r "$REDIS_URL" k "$COUNTED" 0 y
    assert_output x
    # The hit's count follows its last use on the same -r connection, unread.
    local count_fd use_fd
    count_fd=$(count_is_last "$T/trace") || fail "$(cat "$T/trace")"
    use_fd=$(sed -n 's/.*sendto(\([0-9]*\),.*uses:.*/\1/p' "$T/trace")
    [[ -n $use_fd && $use_fd == "$count_fd" ]] || fail "use on '$use_fd', count on '$count_fd': $(cat "$T/trace")"
    assert_counts --cache-dir "$T/cacheB" --store "$STORE" -r "$REDIS_URL" -- builds=2 misses=2 hits=1 waits=2
    ge "$(stat --cache-dir "$T/cacheB" --store "$STORE" -r "$REDIS_URL" -- "['totals']['saved_seconds']")" 1
    # nginx refuses every PUT there: the output is served, not stored, and counted as a store error.
    run -0 --separate-stderr "$BL" cache --cache-dir "$T/cacheA" --store "$wr500" -r "$REDIS_URL" k "$COUNTED" 0 z
    assert_output z
    [[ $stderr == *"not stored"*"500"* ]] || fail "$stderr"
    assert_counts --cache-dir "$T/cacheA" --store "$wr500" -r "$REDIS_URL" -- builds=1 misses=1 store_errors=1
    # The two stores' counters are apart.
    assert_counts --cache-dir "$T/cacheA" --store "$STORE" -r "$REDIS_URL" -- builds=2 misses=2 hits=1 waits=2
    # Without -r: per cache directory (and not in the Redis).
    run -0 "$BL" cache --cache-dir "$T/cacheC" --store "$STORE" k "$COUNTED" 0 w
    assert_output x
    assert_counts --cache-dir "$T/cacheC" --store "$STORE" -- hits=1
    assert_counts --cache-dir "$T/cacheA" --store "$STORE" -r "$REDIS_URL" -- builds=2 misses=2 hits=1 waits=2
    assert_stats_ttl '{buffer:lock:stats:*' 7
}

@test "s3 store: counts in the -r Redis from two runners, a hit's count on its last use's connection; without -r in the cache directory" {
    crowd 3 kc --store "$S3_STORE" -r "$REDIS_URL"
    run -0 "$BL" cache --cache-dir "$T/cacheA" --store "$S3_STORE" -r "$REDIS_URL" k "$COUNTED" 0 x
    run -4 "$BL" cache --cache-dir "$T/cacheA" --store "$S3_STORE" -r "$REDIS_URL" k2 sh -c 'exit 4'
    run -0 traced "$T/trace" --cache-dir "$T/cacheB" --store "$S3_STORE" -r "$REDIS_URL" k "$COUNTED" 0 y
    assert_output x
    local count_fd use_fd
    count_fd=$(count_is_last "$T/trace") || fail "$(cat "$T/trace")"
    use_fd=$(sed -n 's/.*sendto(\([0-9]*\),.*uses:.*/\1/p' "$T/trace")
    [[ -n $use_fd && $use_fd == "$count_fd" ]] || fail "use on '$use_fd', count on '$count_fd': $(cat "$T/trace")"
    run -0 "$BL" cache --cache-dir "$T/cacheA" --store "$S3_STORE" -r "$REDIS_URL" k "$COUNTED" 0 z
    assert_output x
    assert_counts --cache-dir "$T/cacheB" --store "$S3_STORE" -r "$REDIS_URL" -- \
        builds=2 failed_builds=1 misses=3 hits=2 waits=2
    assert_equal "$(stat --cache-dir "$T/cacheA" --store "$S3_STORE" -r "$REDIS_URL" -- "['top'][0]['key']")" kc
    [[ -z $(ls "$T/cacheA" "$T/cacheB" 2>/dev/null | grep '^stats') ]] || fail "counted in a cache directory"
    assert_stats_ttl '{buffer:lock:stats:*' 5
    # Without -r: per cache directory.
    run -0 "$BL" cache --cache-dir "$T/cacheC" --store "$S3_STORE" k "$COUNTED" 0 w
    assert_output x
    assert_counts --cache-dir "$T/cacheC" --store "$S3_STORE" -- hits=1
}

@test "each format read by its consumer: python3 json, markdown tables, promtool; the textfile write of the man page" {
    run -0 blc k "$COUNTED" 0.2 x
    run -0 blc k "$COUNTED"
    run -1 blc 'a|b`c' false
    local f
    for f in json markdown prometheus text; do
        blc --stats --format "$f" >"$T/stats.$f" || fail "--format $f failed"
    done
    check_stats_json "$T/stats.json"
    check_stats_markdown "$T/stats.markdown"
    check_stats_prometheus "$T/stats.prometheus"
    grep -qx 'bufferlock_cache_hits_total{store="file",location="[^"]*"} 1' "$T/stats.prometheus" ||
        fail "$(cat "$T/stats.prometheus")"
    [[ $(grep -c '^| ' "$T/stats.markdown") -ge 14 ]] || fail "$(cat "$T/stats.markdown")"
    # --json is --format json.
    blc --stats --json >"$T/stats.j"
    cmp "$T/stats.json" "$T/stats.j"
    # The man page's node_exporter textfile write: to a temporary name, then mv.
    mkdir "$T/textfile"
    blc --stats --format prometheus >"$T/textfile/bufferlock.prom.$$" &&
        mv "$T/textfile/bufferlock.prom.$$" "$T/textfile/bufferlock.prom"
    check_stats_prometheus "$T/textfile/bufferlock.prom"
    # The Redis store's report too.
    run -0 bls k "$COUNTED" 0 y
    run -0 bls k "$COUNTED" 0 y
    bls --stats --format prometheus >"$T/redis.prom"
    check_stats_prometheus "$T/redis.prom"
    grep -qx 'bufferlock_cache_hits_total{store="redis",location="[^"]*"} 1' "$T/redis.prom" ||
        fail "$(cat "$T/redis.prom")"
    bls --stats --json >"$T/redis.json"
    check_stats_json "$T/redis.json"
}

@test "a count that cannot be written is dropped: the call is served as ever, silently" {
    run -0 blc k "$COUNTED" 0 x
    rm -f "$C/stats"
    mkdir "$C/stats" # no file can be appended there
    run -0 --separate-stderr blc k "$COUNTED" 0 y
    assert_output x
    assert_equal "$stderr" ''
    run -0 --separate-stderr blc k2 "$COUNTED" 0 z
    assert_output z
    assert_equal "$stderr" ''
    # --stats says it cannot read them, in one line.
    run -69 --separate-stderr blc --stats
    [[ $stderr == "bufferlock: cannot read or reset the statistics of $C/stats: "* && $stderr != *$'\n'* ]] ||
        fail "$stderr"
}

@test "an entry of an earlier version (no build time) is a hit that saved 0 seconds" {
    mkdir -p "$C"
    cp "$BATS_TEST_DIRNAME/../fixtures/entries/file/$(key_md5 fx-plain).entry" "$C/"
    run -0 blc fx-plain false
    assert_output 'hello fixture'
    assert_counts --cache-dir "$C" -- hits=1
    assert_equal "$(stat --cache-dir "$C" -- "['totals']['saved_seconds']")" 0.0
    [[ $(stat --cache-dir "$C" -- "['totals']['bytes_served']") -gt 0 ]] || fail "no bytes served"
}
