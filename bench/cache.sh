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
# (b) 100 concurrent callers of a missing key whose build takes 1 s: wall time
#     from the first start to the last exit, and the number of builds
#
# Timing is done by bench/spawn.c (posix_spawn + wait4), built here with
# cc -O2.  See bench/README.md.
#
# Environment: BUFFERLOCK_BIN (default <repo>/build/bufferlock), CC (cc).
# Exit status: 0 unless a run failed or a correctness check failed (a hit
# printed other bytes than the payload or ran the command, a stampede built
# more than once or a caller got other output).  Missed performance targets
# are reported in the summary, not turned into a failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
BL=${BUFFERLOCK_BIN:-$repo/build/bufferlock}
[[ $BL == /* ]] || BL=$PWD/$BL
TRUE=/bin/true

quick=0
for arg in "$@"; do
    case $arg in
        --quick) quick=1 ;;
        -h | --help)
            sed -n '2,21s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
            exit 0
            ;;
        *)
            echo "cache.sh: unknown argument: $arg (try --help)" >&2
            exit 2
            ;;
    esac
done

if ((quick)); then
    S_ROUNDS=5 S_BATCH=10 # (a) 4 KiB: rounds x batch runs per tool
    L_ROUNDS=2 L_BATCH=2  # (a) 100 MiB
    H_REPS=1              # (b) stampedes
else
    S_ROUNDS=100 S_BATCH=20
    L_ROUNDS=40 L_BATCH=3
    H_REPS=3
fi
H_CALLERS=100
SMALL=4096
LARGE=$((100 * 1024 * 1024))
RSS_LIMIT=8192 # KiB

errors=0
note() { printf '  note: %s\n' "$*"; }
err() {
    printf '  ERROR: %s\n' "$*"
    errors=$((errors + 1))
}
hr() { printf '\n== %s\n' "$*"; }

ensure_tools() {
    local need=()
    command -v "${CC:-cc}" >/dev/null || need+=(gcc libc6-dev)
    command -v cmp >/dev/null || need+=(diffutils)
    ((${#need[@]})) || return 0
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "installing missing tools: ${need[*]}"
        apt-get update -qq || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "${need[@]}" >/dev/null ||
            echo "  apt-get install failed" >&2
    else
        echo "missing (not root, not installing): ${need[*]}" >&2
    fi
}
ensure_tools

CC=${CC:-cc}
command -v "$CC" >/dev/null || {
    echo "cache.sh: no C compiler ($CC)" >&2
    exit 2
}
[[ -x $BL ]] || {
    echo "cache.sh: no bufferlock at $BL (build it, or set BUFFERLOCK_BIN)" >&2
    exit 2
}
CAT=$(command -v cat)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bufferlock-bench.XXXXXX")
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

build() { # out src
    "$CC" -O2 -static -o "$1" "$2" 2>/dev/null || "$CC" -O2 -o "$1" "$2"
}
build "$tmp/spawn" "$here/spawn.c"
SPAWN=$tmp/spawn

echo "bufferlock cache bench ($( ((quick)) && echo quick || echo full) run)"
echo "  $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  uptime: $(uptime)"
echo "  bufferlock: $BL   cat: $CAT ($("$CAT" --version 2>/dev/null | head -n1 || echo '?'))"
echo "  temp dir: $tmp ($(df -PT "$tmp" | awk 'NR == 2 { print $2 }'))   driver RSS floor: $("$SPAWN" rss) KiB"

rotate() {
    local -n arr=$1
    local n=${#arr[@]} i
    for ((i = 0; i < n; i++)); do printf '%s\n' "${arr[(i + $2) % n]}"; done
}
ratio() {
    if [[ -z ${1:-} || -z ${2:-} ]]; then
        echo -
    else
        awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'
    fi
}
us() { if [[ -n ${1:-} ]]; then awk -v x="$1" 'BEGIN { printf "%.1f", x / 1e3 }'; else echo -; fi; }
ms() { if [[ -n ${1:-} ]]; then awk -v x="$1" 'BEGIN { printf "%.1f", x / 1e6 }'; else echo -; fi; }

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

# tool names: true | {cat,cache}.{small,large}.{null,pipe}
cmd_a() {
    local what=${1%%.*} rest=${1#*.}
    local size=${rest%%.*}
    OUT=${1##*.}
    case $what in
        true) CMD=("$TRUE") OUT=null ;;
        cat) CMD=("$CAT" "$tmp/p.$size") ;;
        cache) CMD=("$BL" cache --cache-dir "$D" "k.$size" -- /bin/false) ;;
    esac
}
declare -A a_med a_mean a_rss a_rssmed a_n a_fail
# run_group ROUNDS BATCH TOOLS...: interleaved rounds, rotating order
run_group() {
    local rounds=$1 batch=$2 r t
    shift 2
    local tools=("$@")
    for t in "${tools[@]}"; do # warm-up (page cache)
        cmd_a "$t"
        "$SPAWN" run 1 "$OUT" -- "${CMD[@]}" >/dev/null || true
        : >"$tmp/$t.dat"
        a_fail[$t]=0
    done
    for ((r = 0; r < rounds; r++)); do
        mapfile -t order < <(rotate tools "$r")
        for t in "${order[@]}"; do
            cmd_a "$t"
            "$SPAWN" run "$batch" "$OUT" -- "${CMD[@]}" >>"$tmp/$t.dat" || a_fail[$t]=1
        done
    done
    for t in "${tools[@]}"; do
        read -r "a_n[$t]" "a_mean[$t]" "a_med[$t]" < <(sort -n -k1,1 "$tmp/$t.dat" | awk '
            { w[NR] = $1; s += $1 }
            END { m = NR % 2 ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2
                  printf "%d %.0f %.0f\n", NR, s / NR, m }')
        read -r "a_rssmed[$t]" "a_rss[$t]" < <(sort -n -k2,2 "$tmp/$t.dat" | awk '
            { r[NR] = $2 } END { printf "%d %d\n", r[int((NR + 1) / 2)], r[NR] }')
        ((a_fail[$t] == 0)) || err "$t: some runs exited non-zero"
        if [[ $t == *.pipe ]]; then
            local want=$SMALL
            [[ $t == *.large.* ]] && want=$LARGE
            local wrong
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
        printf '  %-17s %6s %10s %10s %7s %8s %15s\n' "$t" "${a_n[$t]}" \
            "$(us "${a_mean[$t]}")" "$(us "${a_med[$t]}")" \
            "$(ratio "${a_med[$t]}" "${a_med[$ref]:-}")" \
            "$(ratio "${a_med[$t]}" "${a_med[$cat_t]:-}")" \
            "${a_rssmed[$t]}/${a_rss[$t]}"
    done
}

small=(true cat.small.null cache.small.null cat.small.pipe cache.small.pipe)
large=(cat.large.null cache.large.null cat.large.pipe cache.large.pipe)
hr "(a) hits, 4 KiB payload: $S_ROUNDS interleaved rounds x $S_BATCH runs per tool"
run_group "$S_ROUNDS" "$S_BATCH" "${small[@]}"
print_group true "${small[@]}"
hr "(a) hits, 100 MiB payload: $L_ROUNDS interleaved rounds x $L_BATCH runs per tool"
run_group "$L_ROUNDS" "$L_BATCH" "${large[@]}"
print_group true "${large[@]}"
echo "  (ratios of medians; wall = posix_spawn .. wait4, for .pipe also draining the pipe;"
echo "   .null = stdout is /dev/null, .pipe = a pipe the driver reads to EOF; xtrue vs bare"
echo "   /bin/true to /dev/null; maxrss from wait4, never below the driver floor)"

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
        "$i" "$(ms "$wall")" "$H_CALLERS" "$(ms "$launch")" "$builds" "$good" "$H_CALLERS" "$ok"
    h_walls+=("$(ms "$wall")")
    if [[ $wall != nan ]] && { [[ -z $h_worst ]] || ((wall > h_worst)); }; then
        h_worst=$wall
    fi
done
echo "  wall = first caller spawned .. last caller reaped (callers spawned one after"
echo "  another by the driver, each with its own output file)"

# ------------------------------------------------- summary ------------------

target() {
    local label=$1 value=$2 op=$3 limit=$4 v
    if [[ -z $value || $value == - || $limit == - ]]; then
        v="n/a"
    elif awk -v x="$value" -v y="$limit" -v op="$op" 'BEGIN {
            exit !((op == "<=" && x <= y) || (op == "<" && x < y) || (op == ">=" && x >= y)) }'; then
        v=MET
    else
        v="NOT MET"
    fi
    printf '  %-44s %9s   target %-2s %-7s %s\n' "$label" "${value:--}" "$op" "$limit" "$v"
}

hr "summary (load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "  cat 4 KiB > /dev/null vs bare true: $(ratio "${a_med[cat.small.null]}" "${a_med[true]}")x" \
    "(previously measured 1.11x); cache hit 4 KiB vs true: $(ratio "${a_med[cache.small.null]}" "${a_med[true]}")x"
echo "  medians: true $(us "${a_med[true]}") us; 4 KiB cat $(us "${a_med[cat.small.null]}") /" \
    "hit $(us "${a_med[cache.small.null]}") us (null), $(us "${a_med[cat.small.pipe]}") /" \
    "$(us "${a_med[cache.small.pipe]}") us (pipe)"
echo "           100 MiB cat $(ms "${a_med[cat.large.null]}") / hit $(ms "${a_med[cache.large.null]}") ms (null)," \
    "$(ms "${a_med[cat.large.pipe]}") / $(ms "${a_med[cache.large.pipe]}") ms (pipe)"
# hit_vs_cat SIZE OUT: the hit/cat ratio of medians, "-" if a run failed
hit_vs_cat() {
    local h=cache.$1.$2 c=cat.$1.$2
    if ((a_fail[$h] || a_fail[$c])); then echo -; else ratio "${a_med[$h]}" "${a_med[$c]}"; fi
}
target "(a) hit/cat 4 KiB, /dev/null" "$(hit_vs_cat small null)" '<=' 1.2
target "(a) hit/cat 4 KiB, pipe" "$(hit_vs_cat small pipe)" '<=' 1.2
target "(a) hit/cat 100 MiB, /dev/null" "$(hit_vs_cat large null)" '<=' 1.1
target "(a) hit/cat 100 MiB, pipe" "$(hit_vs_cat large pipe)" '<=' 1.1
for t in cache.small.null cache.small.pipe cache.large.null cache.large.pipe; do
    target "(a) peak RSS KiB, $t" "$( ((a_fail[$t])) || echo "${a_rss[$t]}")" '<' "$RSS_LIMIT"
done
echo "      (max ru_maxrss; cat: 4 KiB ${a_rss[cat.small.null]} KiB, 100 MiB ${a_rss[cat.large.null]} KiB)"
printf '  %-44s %9s   target %-10s %s\n' "(b) exactly one build, every caller 'built'" "$h_verdict" exact \
    "$([[ $h_verdict == OK ]] && echo MET || echo "NOT MET")"
target "(b) stampede wall, worst of $H_REPS, s" \
    "$([[ -n $h_worst ]] && awk -v x="$h_worst" 'BEGIN { printf "%.3f", x / 1e9 }')" '<=' 1.5
echo "      (each run, ms: ${h_walls[*]})"
if ((errors)); then
    echo "  $errors error(s): see ERROR lines above"
    exit 1
fi
