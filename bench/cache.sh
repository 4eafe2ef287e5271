#!/usr/bin/env bash
# bench/cache.sh — `bufferlock cache`: the hit path against cat(1) of a file
# of the same size, and a stampede of callers on a missing key.
#
#   bench/cache.sh [--quick]
#
# (a) hit latency of `bufferlock cache --cache-dir D K -- cmd` (entry already
#     built) vs `cat FILE` of the same size, 4 KiB and 100 MiB payloads, output
#     to /dev/null and to a pipe the driver drains; bare /bin/true as the
#     reference; peak RSS (ru_maxrss)
#     a hit of an entry with 3 --depends paths (empty files) vs a plain hit
# (d) --depends by content: a hit with a warm stat cache, --depends on a
#     100 MiB file and on a 2,000-file directory, vs a plain hit; cold (no
#     usable stat cache, as in a fresh checkout): hashing the same inputs vs
#     cat(1) reading them to /dev/null
# (b) 100 concurrent callers of a missing key whose build takes 1 s: wall time
#     from the first start to the last exit, and the number of builds
# (c) --store redis on a private loopback redis-server: a hit of 4 KiB vs
#     `redis-cli --raw GET` of the same value and vs a file-store hit; a
#     100 MiB hit vs `redis-cli --raw GET` (throughput); the builder's peak
#     RSS while it streams 100 MiB into Redis; a 100 MiB compressible build
#     log served from Redis (stored compressed) vs `redis-cli --raw GET` of
#     the same bytes stored raw (plain string keys raw.k.*)
# (e) cache --output: restoring a 2,000-file, 200 MiB tree from the file
#     store (the old tree swapped out and removed) vs `tar -x` of the same
#     tree from a local uncompressed archive into a fresh directory (the old
#     one removed first)
# (f) --store http://… on a private loopback nginx with WebDAV (started
#     here, stopped by pid; skipped with a note without nginx or curl): a
#     hit of a 500 MiB incompressible entry (100 MiB with --quick) vs
#     `curl -s URL -o FILE` of the same bytes from the same nginx; the
#     store (a --force build, streamed by one chunked PUT) vs `curl -T FILE URL`;
#     the peak RSS of the restore
#
# Timing is done by bench/spawn.c (posix_spawn + wait4), built here with
# cc -O2.  See bench/README.md.
#
# Environment: BUFFERLOCK_BIN (default <repo>/build/bufferlock), CC (cc),
# BUFFERLOCK_BASELINE (optional: an earlier bufferlock binary, whose hits on
# the same entries are timed in the same interleaved rounds as "base.*").
# Exit status: 0 unless a run failed or a correctness check failed (a hit
# printed other bytes than the payload or ran the command, a stampede built
# more than once or a caller got other output).  Missed performance targets
# are reported in the summary, not turned into a failure.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"

if ((quick)); then
    S_ROUNDS=5 S_BATCH=10 # (a) 4 KiB: rounds x batch runs per tool
    L_ROUNDS=2 L_BATCH=2  # (a) 100 MiB
    H_REPS=1              # (b) stampedes
    F_SIZE=$((100 * 1024 * 1024)) F_ROUNDS=2 # (f) the http store's entry; rounds of 1 run
else
    S_ROUNDS=100 S_BATCH=20
    L_ROUNDS=40 L_BATCH=3
    H_REPS=3
    F_SIZE=$((500 * 1024 * 1024)) F_ROUNDS=5
fi
H_CALLERS=100
SMALL=4096
LARGE=$((100 * 1024 * 1024))
RSS_LIMIT=8192 # KiB

# summary lines, printed by target and check (lib.sh)
TARGET_FMT='  %-44s %9s   target %-2s %-7s %s\n'
CHECK_FMT='  %-44s %9s   target exact      %s\n'

want "$CC" gcc libc6-dev
want cmp diffutils
want tar tar
want redis-server redis-server
want redis-cli redis-tools
want valgrind valgrind
install_missing tools

require_cc
require_bl
CAT=$(command -v cat)
BASELINE=${BUFFERLOCK_BASELINE:-}
VALGRIND=$(command -v valgrind || true)
RCLI=$(command -v redis-cli)

make_tmp spawn

bench_header cache
echo "  uptime: $(uptime)"
echo "  bufferlock: $BL   cat: $CAT ($("$CAT" --version 2>/dev/null | head -n1 || echo '?'))"
echo "  temp dir: $tmp ($(df -PT "$tmp" | awk 'NR == 2 { print $2 }'))   driver RSS floor: $("$SPAWN" rss) KiB"

# ------------------------------------------------- (a) hits -----------------

D=$tmp/cache
head -c "$SMALL" /dev/urandom >"$tmp/p.small"
head -c "$LARGE" /dev/urandom >"$tmp/p.large"
# Build both entries (a miss each), then check that a hit prints exactly the
# payload.  Hits below run /bin/false as the command: were it ever run (a
# miss), the run exits non-zero and is reported.
for s in small large; do
    "$BL" cache --cache-dir "$D" "k.$s" -- "$CAT" "$tmp/p.$s" >/dev/null ||
        err "building the $s entry failed"
    if ! "$BL" cache --cache-dir "$D" "k.$s" -- /bin/false | cmp -s - "$tmp/p.$s"; then
        err "a hit on the $s entry did not print the payload"
    fi
done

# An entry of the small payload with 3 dependencies (--depends).
for f in d1 d2 d3; do : >"$tmp/$f"; done
DEPS=(--depends "$tmp/d1" --depends "$tmp/d2" --depends "$tmp/d3")
"$BL" cache --cache-dir "$D" "${DEPS[@]}" k.dep -- "$CAT" "$tmp/p.small" >/dev/null ||
    err "building the entry with dependencies failed"
if ! "$BL" cache --cache-dir "$D" "${DEPS[@]}" k.dep -- /bin/false | cmp -s - "$tmp/p.small"; then
    err "a hit on the entry with dependencies did not print the payload"
fi

# tool names: true | {cat,cache,deps}.{small,large}.{null,pipe}
cmd_a() {
    local what=${1%%.*} rest=${1#*.}
    local size=${rest%%.*}
    OUT=${1##*.}
    case $what in
        true) CMD=("$TRUE") OUT=null ;;
        cat) CMD=("$CAT" "$tmp/p.$size") ;;
        # fhit: the same as cache, timed again beside (c)'s Redis hits
        cache | fhit) CMD=("$BL" cache --cache-dir "$D" "k.$size" -- /bin/false) ;;
        deps) CMD=("$BL" cache --cache-dir "$D" "${DEPS[@]}" k.dep -- /bin/false) ;;
        base) CMD=("$BASELINE" cache --cache-dir "$D" "k.$size" -- /bin/false) ;;
        rhit) CMD=("$BL" cache --cache-dir "$D" --store redis -r "$URL" "k.$size" -- /bin/false) ;;
        rbase) CMD=("$BASELINE" cache --cache-dir "$D" --store redis -r "$URL" "k.$size" -- /bin/false) ;;
        rget) CMD=("$RCLI" -p "$PORT" --raw GET "raw.k.$size") ;;
        # (e): restore of the --output tree vs tar -x of it
        ohit) CMD=(/bin/sh -c "cd '$tmp/e' && exec '$BL' cache --cache-dir '$D' --output out k.tree -- /bin/false") ;;
        tarx) CMD=(/bin/sh -c "cd '$tmp/e' && rm -rf tx && mkdir tx && exec tar -xf '$tmp/tree.tar' -C tx") ;;
        # (d): size is the input (large: the 100 MiB file, tree: the directory)
        dplain) CMD=("$BL" cache --cache-dir "$D" "k.$size" -- /bin/false) ;;
        dwarm) CMD=("$BL" cache --cache-dir "$D" --depends "$(dep_path "$size")" "k.d$size" -- /bin/false) ;;
        dcold) CMD=("$BL" cache --cache-dir "$DC" --depends "$(dep_path "$size")" "k.d$size" -- /bin/false) ;;
        # the floor of any check of a tree that does not trust its own records:
        # one stat of every file (find -newer reads no content)
        dfind) CMD=("$(command -v find)" "$(dep_path "$size")" -type f -newer "$tmp/p.small") ;;
        dcat) if [[ $size == tree ]]; then CMD=("$CAT" "${TREE_FILES[@]}"); else CMD=("$CAT" "$tmp/p.large"); fi ;;
        # (f): the http store against curl on the same nginx
        hhit) CMD=("$BL" cache --cache-dir "$D" --store "$HURL" k.http -- /bin/false) ;;
        hget) CMD=("$CURL" -s -f -o "$tmp/f.get" "${HURL}raw.bin") ;;
        hput) CMD=("$BL" cache --cache-dir "$D" --store "$HURL" --force k.http -- "$CAT" "$tmp/p.http") ;;
        hcput) CMD=("$CURL" -s -f -o /dev/null -T "$tmp/p.http" "${HURL}raw.bin") ;;
        # the same build into the file store, compressed as the http store does: what
        # hput does besides its upload
        hfile) CMD=("$BL" cache --cache-dir "$D" --compress --force k.httpfile -- "$CAT" "$tmp/p.http") ;;
    esac
}
# run_group ROUNDS BATCH TOOLS...: time_rounds, then the checks: no failed run,
# and every .pipe run piped exactly the payload's size
run_group() {
    local t want wrong
    time_rounds "$tmp" "$1" "$2" 1 "${@:3}"
    for t in "${@:3}"; do
        ((a_fail[$t] == 0)) || err "$t: some runs exited non-zero"
        if [[ $t == *.pipe ]]; then
            want=$SMALL
            [[ $t == *.large.* ]] && want=$LARGE
            wrong=$(awk -v w="$want" '$4 != w { n++ } END { print n + 0 }' "$tmp/$t.dat")
            ((wrong == 0)) || err "$t: $wrong runs piped other than $want bytes"
        fi
    done
}
print_group() {
    local ref=$1 t
    shift
    printf '  %-17s %6s %10s %10s %7s %8s %15s\n' tool runs mean_us median_us xtrue xcat \
        maxrss_KiB_med/max
    for t in "$@"; do
        local cat_t=${t/cache./cat.}
        cat_t=${cat_t/deps./cat.}
        cat_t=${cat_t/base./cat.}
        cat_t=${cat_t/fhit./cat.}
        printf '  %-17s %6s %10s %10s %7s %8s %15s\n' "$t" "${a_n[$t]}" \
            "$(us "${a_mean[$t]}")" "$(us "${a_med[$t]}")" \
            "$(ratio "${a_med[$t]}" "${a_med[$ref]:-}")" \
            "$(ratio "${a_med[$t]}" "${a_med[$cat_t]:-}")" \
            "${a_rssmed[$t]}/${a_rss[$t]}"
    done
}

# any_failed TOOL...: some run of one of the TOOLs failed
any_failed() {
    local t
    for t in "$@"; do ((a_fail[$t])) && return 0; done
    return 1
}
small=(true cat.small.null cache.small.null deps.small.null cat.small.pipe cache.small.pipe)
large=(cat.large.null cache.large.null cat.large.pipe cache.large.pipe)
if [[ -n $BASELINE ]]; then
    small+=(base.small.null base.small.pipe)
    large+=(base.large.null base.large.pipe)
fi
hr "(a) hits, 4 KiB payload: $S_ROUNDS interleaved rounds x $S_BATCH runs per tool"
run_group "$S_ROUNDS" "$S_BATCH" "${small[@]}"
print_group true "${small[@]}"
hr "(a) hits, 100 MiB payload: $L_ROUNDS interleaved rounds x $L_BATCH runs per tool"
run_group "$L_ROUNDS" "$L_BATCH" "${large[@]}"
print_group true "${large[@]}"
# Instructions of a whole 4 KiB hit (callgrind Ir, ld.so included) against cat's
# whole run: not noise, unlike the wall times.
declare -A hit_ir
if [[ -n $VALGRIND ]]; then
    hit_tools=(cat cache)
    [[ -n $BASELINE ]] && hit_tools+=(base)
    for t in "${hit_tools[@]}"; do
        cmd_a "$t.small.null"
        "$VALGRIND" --tool=callgrind --callgrind-out-file=/dev/null "${CMD[@]}" >/dev/null 2>"$tmp/cg.$t" || true
        hit_ir[$t]=$(cg_collected "$tmp/cg.$t")
    done
    echo "  instructions of a whole run (callgrind Ir): cat ${hit_ir[cat]:-?}, hit ${hit_ir[cache]:-?}" \
        "${hit_ir[base]:+, baseline hit ${hit_ir[base]}}"
fi
echo "  (ratios of medians; wall = posix_spawn .. wait4, for .pipe also draining the pipe;"
echo "   .null = stdout is /dev/null, .pipe = a pipe the driver reads to EOF; xtrue vs bare"
echo "   /bin/true to /dev/null; maxrss from wait4, never below the driver floor)"

# ------------------------------------------------- (d) --depends ------------

# dep_path large|tree: the input of (d)
dep_path() { if [[ $1 == tree ]]; then echo "$tmp/tree"; else echo "$tmp/p.large"; fi; }
# A source tree: 2,000 files of 1-4 KiB in 40 directories, a few executable.
for ((i = 0; i < 40; i++)); do
    mkdir -p "$tmp/tree/d$i"
    for ((j = 0; j < 50; j++)); do
        head -c $((1024 + (i * 50 + j) * 37 % 3072)) /dev/urandom >"$tmp/tree/d$i/f$j"
    done
    chmod +x "$tmp/tree/d$i/f0"
done
TREE_FILES=("$tmp"/tree/d*/f*)
# DC: a cache directory whose stat cache can be neither read nor written (a
# directory in its place), so that every hit there hashes its inputs.
DC=$tmp/cache-cold
mkdir -p "$DC/stat-cache.$(id -u)"
# The stat cache trusts no file changed within 2 s of being read.
sleep 2.2
for s in large tree; do
    for d in "$D" "$DC"; do
        "$BL" cache --cache-dir "$d" --depends "$(dep_path "$s")" "k.d$s" -- "$CAT" "$tmp/p.small" >/dev/null ||
            err "building the --depends $s entry failed"
        if ! "$BL" cache --cache-dir "$d" --depends "$(dep_path "$s")" "k.d$s" -- /bin/false |
            cmp -s - "$tmp/p.small"; then
            err "a hit on the --depends $s entry did not print the payload"
        fi
    done
done
[[ -s $D/stat-cache.$(id -u) ]] || err "no stat cache was written"
# dplain: the plain hit again, under a name of its own, so that the ratios
# compare runs of the same rounds
d_warm=(dplain.small.null dwarm.large.null dwarm.tree.null dfind.tree.null)
d_cold=(dcat.large.null dcold.large.null dcat.tree.null dcold.tree.null)
hr "(d) --depends hits, warm stat cache: $S_ROUNDS interleaved rounds x $S_BATCH runs per tool"
run_group "$S_ROUNDS" "$S_BATCH" "${d_warm[@]}"
print_group dplain.small.null "${d_warm[@]}"
hr "(d) --depends, cold (inputs hashed): $L_ROUNDS interleaved rounds x $L_BATCH runs per tool"
run_group "$L_ROUNDS" "$L_BATCH" "${d_cold[@]}"
print_group dcat.large.null "${d_cold[@]}"
echo "  (xtrue here: vs the first tool; dwarm = hit with --depends, the stat cache warm;"
echo "   dfind = find -newer over the tree: a stat of every file, nothing read;"
echo "   dcold = the same hit hashing every input; dcat = cat of the same files to /dev/null)"

# ------------------------------------------------- (b) stampede -------------

hr "(b) stampede: $H_CALLERS callers of a missing key, the build takes 1 s ($H_REPS runs)"
# shellcheck disable=SC2016 # expanded by the sh -c of the build, not here
BUILD='sleep 1; echo built; echo x >> "$1"'
h_verdict=OK
h_walls=()
h_worst=
for ((i = 1; i <= H_REPS; i++)); do
    h=$tmp/h$i
    mkdir -p "$h/out"
    : >"$h/COUNTER"
    line=$("$SPAWN" herd "$H_CALLERS" "$h/out" -- "$BL" cache --cache-dir "$h/cache" stampede \
        -- /bin/sh -c "$BUILD" sh "$h/COUNTER" || true)
    read -r wall bad launch <<<"${line:-nan 1 0}"
    builds=$(wc -l <"$h/COUNTER")
    good=$(grep -lx built "$h"/out/out.* 2>/dev/null | wc -l)
    ok=OK
    if [[ $wall == nan || ${bad:-1} != 0 || $builds != 1 || $good != "$H_CALLERS" ]]; then
        ok=FAIL
        h_verdict=FAIL
        err "stampede $i: $builds builds (want 1), ${bad:-?} callers exited non-zero," \
            "$good/$H_CALLERS printed exactly 'built'"
    fi
    printf '  run %d: wall %s ms (all %d started within %s ms), builds %s, output ok %s/%s, %s\n' \
        "$i" "$(ms "$wall" 1)" "$H_CALLERS" "$(ms "$launch" 1)" "$builds" "$good" "$H_CALLERS" "$ok"
    h_walls+=("$(ms "$wall" 1)")
    if [[ $wall != nan ]] && { [[ -z $h_worst ]] || ((wall > h_worst)); }; then
        h_worst=$wall
    fi
done
echo "  wall = first caller spawned .. last caller reaped (callers spawned one after"
echo "  another by the driver, each with its own output file)"

# ------------------------------------------------- (c) --store redis --------

start_redis
URL=redis://127.0.0.1:$PORT/0
# rkey KEY: the Redis key of KEY's entry (REDIS LAYOUT)
rkey() { printf '{buffer:lock:%s}:entry' "$(printf %s "$1" | md5sum | cut -c1-32)"; }
hr "(c) --store redis: the builder streaming 100 MiB into Redis"
r_build=$("$SPAWN" run 1 null -- "$BL" cache --cache-dir "$D" --store redis -r "$URL" --max-entry 200M \
    k.large -- "$CAT" "$tmp/p.large" || true)
read -r r_build_ns r_build_rss r_build_status <<<"${r_build:-nan 0 1}"
[[ ${r_build_status:-1} == 0 ]] || err "the 100 MiB --store redis build failed"
printf '  build: wall %s ms, peak RSS %s KiB\n' "$(ms "$r_build_ns" 1)" "$r_build_rss"
"$BL" cache --cache-dir "$D" --store redis -r "$URL" k.small -- "$CAT" "$tmp/p.small" >/dev/null ||
    err "building the 4 KiB --store redis entry failed"
# A compressible 100 MiB build log: compiler lines, warnings, test results.
awk -v n="$LARGE" 'BEGIN {
    split("cache/store cache/entry cache/recipe redis/client redis/tls util/io lock/acquire cli app messages", f, " ")
    srand(24)
    while (total < n) {
        k = int(rand() * 4); g = f[1 + int(rand() * 10)]
        if (k == 0) l = sprintf("Building CXX object src/CMakeFiles/bufferlock_core.dir/%s.cpp.o", g)
        else if (k == 1) l = sprintf("src/%s.cpp:%d:%d: warning: unused variable [-Wunused-variable]", g, int(rand() * 900), int(rand() * 80))
        else if (k == 2) l = sprintf("[       OK ] Test.%s (%d ms)", g, int(rand() * 1000))
        else l = sprintf("ok %d %s round trip", i, g)
        l = sprintf("[%3d%%] %s\n", int(i * 100 / 1500000), l)
        if (total + length(l) > n) l = substr(l, 1, n - total)
        printf "%s", l; total += length(l); i++
    }
}' >"$tmp/p.log"
[[ $(stat -c %s "$tmp/p.log") == "$LARGE" ]] || err "the log payload is not $LARGE bytes"
"$BL" cache --cache-dir "$D" --store redis -r "$URL" --max-entry 200M k.log -- "$CAT" "$tmp/p.log" >/dev/null ||
    err "building the 100 MiB log --store redis entry failed"
# The same bytes as plain strings, for redis-cli GET.
for s in small large log; do
    "$RCLI" -p "$PORT" -x SET "raw.k.$s" <"$tmp/p.$s" >/dev/null || err "SET raw.k.$s failed"
    if ! "$BL" cache --cache-dir "$D" --store redis -r "$URL" "k.$s" -- /bin/false | cmp -s - "$tmp/p.$s"; then
        err "a --store redis hit on the $s entry did not print the payload"
    fi
done
r_log_mem=$("$RCLI" -p "$PORT" MEMORY USAGE "$(rkey k.log)" SAMPLES 0)
r_raw_mem=$("$RCLI" -p "$PORT" MEMORY USAGE raw.k.log SAMPLES 0)
printf '  100 MiB log: MEMORY USAGE of the entry %s bytes, of the raw string %s bytes\n' "$r_log_mem" "$r_raw_mem"
r_small=(rget.small.null rhit.small.null fhit.small.null)
r_large=(rget.large.null rhit.large.null rget.log.null rhit.log.null)
if [[ -n $BASELINE ]]; then
    r_small+=(rbase.small.null)
    r_large+=(rbase.large.null)
fi
hr "(c) --store redis hits, 4 KiB: $S_ROUNDS interleaved rounds x $S_BATCH runs per tool"
run_group "$S_ROUNDS" "$S_BATCH" "${r_small[@]}"
print_group rget.small.null "${r_small[@]}"
hr "(c) --store redis hits, 100 MiB: $L_ROUNDS interleaved rounds x $L_BATCH runs per tool"
run_group "$L_ROUNDS" "$L_BATCH" "${r_large[@]}"
print_group rget.large.null "${r_large[@]}"
echo "  (xtrue here: vs redis-cli --raw GET of the same bytes as one string; rget = redis-cli, rhit ="
echo "   bufferlock cache --store redis hit, cache = file-store hit; all to /dev/null;"
echo "   .log = the compressible 100 MiB log, stored compressed by bufferlock, raw by SET)"
stop_redis

# ------------------------------------------------- (e) --output -------------

# A build's output tree: 2,000 files of 100 KiB (200 MiB) in 40 directories,
# half of them text that compresses, half random bytes; a few executable.
mkdir -p "$tmp/e"
for ((i = 0; i < 40; i++)); do
    mkdir -p "$tmp/e/out/d$i"
    for ((j = 0; j < 50; j++)); do
        if ((j % 2)); then
            head -c 102400 /dev/urandom >"$tmp/e/out/d$i/f$j"
        else
            dd if="$tmp/p.log" of="$tmp/e/out/d$i/f$j" bs=102400 skip=$(((i * 50 + j) % 1000)) count=1 status=none
        fi
    done
    chmod +x "$tmp/e/out/d$i/f0"
done
tar -cf "$tmp/tree.tar" -C "$tmp/e/out" .
cp -a "$tmp/e/out" "$tmp/tree.orig"
(cd "$tmp/e" && "$BL" cache --cache-dir "$D" --output out k.tree -- /bin/true) ||
    err "building the --output entry failed"
rm -rf "$tmp/e/out"
(cd "$tmp/e" && "$BL" cache --cache-dir "$D" --output out k.tree -- /bin/false) ||
    err "restoring the --output tree failed"
diff -r "$tmp/tree.orig" "$tmp/e/out" >/dev/null || err "the restored tree differs from the built one"
e_group=(tarx.tree.null ohit.tree.null)
hr "(e) --output restore, 2,000 files / 200 MiB: $L_ROUNDS interleaved rounds x $L_BATCH runs per tool"
run_group "$L_ROUNDS" "$L_BATCH" "${e_group[@]}"
print_group tarx.tree.null "${e_group[@]}"
diff -r "$tmp/tree.orig" "$tmp/e/out" >/dev/null || err "the tree differs after the timed restores"
echo "  (xtrue here: vs tarx; ohit = a hit restoring PATH out (the old tree exchanged"
echo "   and removed), tarx = rm -rf of the old tree, then tar -xf of an uncompressed"
echo "   local archive; both through /bin/sh -c; entry $(stat -c %s "$D/$(printf %s k.tree | md5sum | cut -c1-32).entry")" \
    "bytes, tar $(stat -c %s "$tmp/tree.tar") bytes)"

# ------------------------------------------------- (f) --store http ---------

NGINX=$(command -v nginx || true)
CURL=$(command -v curl || true)
f_ran=0
f_mib=$((F_SIZE / 1024 / 1024))
hr "(f) --store http on a private nginx (WebDAV), $f_mib MiB incompressible: $F_ROUNDS interleaved rounds x 1 run per tool"
if [[ -z $NGINX || -z $CURL ]]; then
    note "part (f) skipped: nginx or curl is not installed (apt-get install nginx curl)"
elif ! start_nginx ""; then
    err "part (f): nginx did not come up: $(tail -n 2 "$tmp/nginx/start.log" "$tmp/nginx/error.log" 2>/dev/null | tr '\n' ' ')"
else
    HURL=http://127.0.0.1:$HPORT/cache/
    f_obj=$tmp/nginx/data/cache/$(printf %s k.http | md5sum | cut -c1-32).entry
    head -c "$F_SIZE" /dev/urandom >"$tmp/p.http"
    f_rc=0
    "$BL" cache --cache-dir "$D" --store "$HURL" k.http -- "$CAT" "$tmp/p.http" >/dev/null 2>"$tmp/f.err" || f_rc=$?
    if ((f_rc == 64)); then
        note "part (f) skipped: this bufferlock has no http store ($(head -n 1 "$tmp/f.err"))"
    else
        ((f_rc == 0)) || err "building the http store's entry failed ($f_rc): $(head -n 1 "$tmp/f.err")"
        [[ ! -s $tmp/f.err ]] || err "building the http store's entry warned: $(head -n 1 "$tmp/f.err")"
        [[ -f $f_obj ]] || err "no object $f_obj on the server"
        "$CURL" -s -f -o /dev/null -T "$tmp/p.http" "${HURL}raw.bin" || err "curl -T of the payload failed"
        if ! "$BL" cache --cache-dir "$D" --store "$HURL" k.http -- /bin/false 2>"$tmp/f.err" |
            cmp -s - "$tmp/p.http"; then
            err "an http store hit did not print the payload: $(head -n 1 "$tmp/f.err")"
        fi
        f_get=(hget.http.null hhit.http.null)
        f_put=(hcput.http.null hput.http.null hfile.http.null)
        run_group "$F_ROUNDS" 1 "${f_get[@]}"
        print_group hget.http.null "${f_get[@]}"
        cmp -s "$tmp/f.get" "$tmp/p.http" || err "curl's GET did not fetch the payload"
        rm -f "$tmp/f.get"
        run_group "$F_ROUNDS" 1 "${f_put[@]}"
        print_group hcput.http.null "${f_put[@]}"
        if ! "$BL" cache --cache-dir "$D" --store "$HURL" k.http -- /bin/false 2>/dev/null |
            cmp -s - "$tmp/p.http"; then
            err "after the timed uploads, a hit did not print the payload"
        fi
        f_ran=1
        echo "  (xtrue here: vs the first tool; hhit = a hit to /dev/null (bufferlock reads the object's"
        echo "   tail, GETs the body range to an unnamed local file and verifies it before serving),"
        echo "   hget = curl -s URL -o FILE; hput = a --force build cat-ing the payload, streamed by one"
        echo "   chunked PUT as it comes, hcput = curl -T FILE URL;"
        echo "   hfile = the same build into the file store with --compress: hput without its upload;"
        echo "   object $(stat -c %s "$f_obj" 2>/dev/null || echo '?') bytes, payload $F_SIZE bytes)"
    fi
    stop_nginx
    rm -f "$tmp/p.http" "$tmp/f.get" "$f_obj" "$tmp/nginx/data/cache/raw.bin" \
        "$D/$(printf %s k.httpfile | md5sum | cut -c1-32).entry"
fi

# ------------------------------------------------- summary ------------------

hr "summary (load $(loadavg))"
echo "  cat 4 KiB > /dev/null vs bare true: $(ratio "${a_med[cat.small.null]}" "${a_med[true]}")x" \
    "(previously measured 1.11x); cache hit 4 KiB vs true: $(ratio "${a_med[cache.small.null]}" "${a_med[true]}")x"
echo "  medians: true $(us "${a_med[true]}") us; 4 KiB cat $(us "${a_med[cat.small.null]}") /" \
    "hit $(us "${a_med[cache.small.null]}") us (null), $(us "${a_med[cat.small.pipe]}") /" \
    "$(us "${a_med[cache.small.pipe]}") us (pipe)"
echo "           100 MiB cat $(ms "${a_med[cat.large.null]}" 1) / hit $(ms "${a_med[cache.large.null]}" 1) ms (null)," \
    "$(ms "${a_med[cat.large.pipe]}" 1) / $(ms "${a_med[cache.large.pipe]}" 1) ms (pipe)"
if [[ -n $BASELINE ]]; then
    echo "  baseline ($BASELINE): this/baseline hit, 4 KiB" \
        "$(ratio "${a_med[cache.small.null]}" "${a_med[base.small.null]}")x (null)," \
        "$(ratio "${a_med[cache.small.pipe]}" "${a_med[base.small.pipe]}")x (pipe); 100 MiB" \
        "$(ratio "${a_med[cache.large.null]}" "${a_med[base.large.null]}")x (null)," \
        "$(ratio "${a_med[cache.large.pipe]}" "${a_med[base.large.pipe]}")x (pipe)"
fi
# hit_vs_cat SIZE OUT: the hit/cat ratio of medians, "-" if a run failed
hit_vs_cat() {
    local h=cache.$1.$2 c=cat.$1.$2
    if ((a_fail[$h] || a_fail[$c])); then echo -; else ratio "${a_med[$h]}" "${a_med[$c]}"; fi
}
target "(a) hit/cat 4 KiB, /dev/null" "$(hit_vs_cat small null)" '<=' 0.9
target "(a) hit/cat 4 KiB, pipe" "$(hit_vs_cat small pipe)" '<=' 0.9
target "(a) hit Ir, 4 KiB (whole run)" "${hit_ir[cache]:-}" '<=' 500000
target "(a) hit with 3 --depends / plain hit, 4 KiB" "$(
    any_failed deps.small.null cache.small.null ||
        ratio "${a_med[deps.small.null]}" "${a_med[cache.small.null]}"
)" '<=' 1.05
target "(a) hit/cat 100 MiB, /dev/null" "$(hit_vs_cat large null)" '<=' 1.1
target "(a) hit/cat 100 MiB, pipe" "$(hit_vs_cat large pipe)" '<=' 1.1
for t in cache.small.null cache.small.pipe cache.large.null cache.large.pipe; do
    target "(a) peak RSS KiB, $t" "$( ((a_fail[$t])) || echo "${a_rss[$t]}")" '<' "$RSS_LIMIT"
done
echo "      (max ru_maxrss; cat: 4 KiB ${a_rss[cat.small.null]} KiB, 100 MiB ${a_rss[cat.large.null]} KiB)"
# r_ratio A B: A/B of medians, "-" if a run of either failed
r_ratio() { if ((a_fail[$1] || a_fail[$2])); then echo -; else ratio "${a_med[$1]}" "${a_med[$2]}"; fi; }
target "(c) redis hit / redis-cli GET, 4 KiB" "$(r_ratio rhit.small.null rget.small.null)" '<=' 0.5
echo "      (redis hit / file hit, 4 KiB: $(r_ratio rhit.small.null fhit.small.null)x;" \
    "medians $(us "${a_med[rhit.small.null]}") / $(us "${a_med[fhit.small.null]}") us)"
if [[ -n $BASELINE ]]; then
    echo "      (baseline: this/baseline redis hit, 4 KiB $(r_ratio rhit.small.null rbase.small.null)x," \
        "100 MiB $(r_ratio rhit.large.null rbase.large.null)x)"
fi
target "(c) redis-cli GET / redis hit time, 100 MiB" "$(r_ratio rget.large.null rhit.large.null)" '>=' 0.5
echo "      (= hit throughput as a share of redis-cli's; medians $(ms "${a_med[rhit.large.null]}" 1) /" \
    "$(ms "${a_med[rget.large.null]}" 1) ms)"
target "(c) GET raw / redis hit time, 100 MiB log" "$(r_ratio rget.log.null rhit.log.null)" '>=' 1.0
echo "      (medians $(ms "${a_med[rhit.log.null]}" 1) / $(ms "${a_med[rget.log.null]}" 1) ms; Redis memory" \
    "${r_log_mem:-?} / ${r_raw_mem:-?} bytes)"
target "(e) --output restore / tar -x, 200 MiB tree" "$(r_ratio ohit.tree.null tarx.tree.null)" '<=' 1.3
echo "      (medians $(ms "${a_med[ohit.tree.null]}" 1) / $(ms "${a_med[tarx.tree.null]}" 1) ms)"
d_ratio() { if ((a_fail[$1] || a_fail[$2])); then echo -; else ratio "${a_med[$1]}" "${a_med[$2]}"; fi; }
target "(d) warm --depends 100 MiB file / plain hit" "$(d_ratio dwarm.large.null dplain.small.null)" '<=' 1.2
target "(d) warm --depends 2,000 files / plain hit" "$(d_ratio dwarm.tree.null dplain.small.null)" '<=' 1.2
echo "      (medians: plain $(us "${a_med[dplain.small.null]}"), file $(us "${a_med[dwarm.large.null]}")," \
    "tree $(us "${a_med[dwarm.tree.null]}") us; find -newer over the tree $(us "${a_med[dfind.tree.null]}"),"\
    "bare true $(us "${a_med[true]}") us)"
# What the tree adds to a plain hit, against what a stat walk of it costs
# find over a bare process start: the per-file floor, which no check that
# sees an edited file can go below.
if ! any_failed dwarm.tree.null dplain.small.null dfind.tree.null; then
    # shellcheck disable=SC2004 # the keys have dots: expanded, not arithmetic names
    echo "      (the tree's cost over a plain hit / find's over bare true:" \
        "$(ratio "$(( ${a_med[dwarm.tree.null]} - ${a_med[dplain.small.null]} ))" \
            "$(( ${a_med[dfind.tree.null]} - ${a_med[true]} ))")x)"
fi
target "(d) cold hashing speed / cat's, 100 MiB" "$(d_ratio dcat.large.null dcold.large.null)" '>=' 0.8
target "(d) cold hashing speed / cat's, 2,000 files" "$(d_ratio dcat.tree.null dcold.tree.null)" '>=' 0.8
echo "      (medians: cat $(ms "${a_med[dcat.large.null]}" 1) / hash $(ms "${a_med[dcold.large.null]}" 1) ms;" \
    "tree cat $(ms "${a_med[dcat.tree.null]}" 1) / hash $(ms "${a_med[dcold.tree.null]}" 1) ms)"
# f_ratio A B: (f)'s A/B of medians, "-" if (f) did not run or a run failed
f_ratio() { if ((!f_ran || a_fail[$1] || a_fail[$2])); then echo -; else ratio "${a_med[$1]}" "${a_med[$2]}"; fi; }
target "(f) http hit / curl GET, $f_mib MiB" "$(f_ratio hhit.http.null hget.http.null)" '<=' 1.3
target "(f) http store / curl -T, $f_mib MiB" "$(f_ratio hput.http.null hcput.http.null)" '<=' 1.3
# f_rss TOOL: (f)'s peak RSS of TOOL, empty if (f) did not run or a run failed
f_rss() { if ((f_ran && !a_fail[$1])); then echo "${a_rss[$1]}"; fi; }
target "(f) http hit peak RSS KiB, $f_mib MiB" "$(f_rss hhit.http.null)" '<=' 65536
if ((f_ran)); then
    echo "      (medians: hit $(ms "${a_med[hhit.http.null]}" 1) / GET $(ms "${a_med[hget.http.null]}" 1) ms," \
        "store $(ms "${a_med[hput.http.null]}" 1) / PUT $(ms "${a_med[hcput.http.null]}" 1) ms;" \
        "the storing build's peak RSS ${a_rss[hput.http.null]} KiB)"
    if ! any_failed hput.http.null hfile.http.null hcput.http.null; then
        echo "      (store less the same build into the file store, / curl -T (the upload overlaps the build):" \
            "$(awk -v s="${a_med[hput.http.null]}" -v f="${a_med[hfile.http.null]}" \
                -v c="${a_med[hcput.http.null]}" 'BEGIN { printf "%.2f", (s - f) / c }')x)"
    fi
fi
target "(c) builder peak RSS KiB, 100 MiB" "$([[ ${r_build_status:-1} == 0 ]] && echo "$r_build_rss")" '<' 16384
check "(b) exactly one build, every caller 'built'" "$h_verdict"
target "(b) stampede wall, worst of $H_REPS, s" \
    "$([[ -n $h_worst ]] && awk -v x="$h_worst" 'BEGIN { printf "%.3f", x / 1e9 }')" '<=' 1.5
echo "      (each run, ms: ${h_walls[*]})"
bench_exit
