#!/usr/bin/env bash
# bench/file-lock.sh — bufferlock's file-lock path side by side with its peers:
# util-linux flock(1), runit's chpst -L/-l, daemontools' setlock, bare true.
#
#   bench/file-lock.sh [--quick]
#
# (a) uncontended wall time per run, interleaved rounds; callgrind instruction
#     count up to exec of the command; peak RSS (ru_maxrss)
# (b) contended: 8 processes x 200 blocking acquisitions around a non-atomic
#     read-modify-write counter; critical sections per second
# (c) hand-off latency: lock release -> waiter's command starts
#
# Timing is done by a small C driver (bench/spawn.c, built here with cc -O2)
# that posix_spawn()s each run and collects it with wait4(), so the shell's
# fork cost is not part of any number.  See bench/README.md.
#
# Environment: BUFFERLOCK_BIN (default <repo>/build/bufferlock), CC (cc).
# Exit status: 0 unless a run failed or a correctness check failed (counter
# not exact, waiter ran while the lock was held).  Missed performance targets
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
            echo "file-lock.sh: unknown argument: $arg (try --help)" >&2
            exit 2
            ;;
    esac
done

if ((quick)); then
    A_ROUNDS=5 A_BATCH=10      # (a) rounds x batch runs per tool
    B_PROCS=8 B_ITERS=20 B_CHUNKS=2
    C_ROUNDS=2 C_BATCH=5       # (c) hand-offs per tool = rounds x batch
else
    A_ROUNDS=160 A_BATCH=50
    B_PROCS=8 B_ITERS=200 B_CHUNKS=8
    C_ROUNDS=20 C_BATCH=5
fi
B_TOTAL=$((B_PROCS * B_ITERS))

errors=0
note() { printf '  note: %s\n' "$*"; }
err() {
    printf '  ERROR: %s\n' "$*"
    errors=$((errors + 1))
}
hr() { printf '\n== %s\n' "$*"; }

# ---------------------------------------------------------------- peers ----

ensure_peers() {
    local need=()
    command -v flock >/dev/null || need+=(util-linux)
    command -v chpst >/dev/null || need+=(runit)
    command -v setlock >/dev/null || need+=(daemontools)
    command -v valgrind >/dev/null || need+=(valgrind)
    command -v "${CC:-cc}" >/dev/null || need+=(gcc libc6-dev)
    ((${#need[@]})) || return 0
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "installing missing peers: ${need[*]}"
        apt-get update -qq || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "${need[@]}" >/dev/null ||
            echo "  apt-get install failed; missing tools are skipped" >&2
    else
        echo "missing (not root, not installing): ${need[*]}" >&2
    fi
}
ensure_peers

FLOCK=$(command -v flock || true)
CHPST=$(command -v chpst || true)
SETLOCK=$(command -v setlock || true)
VALGRIND=$(command -v valgrind || true)
CC=${CC:-cc}
command -v "$CC" >/dev/null || {
    echo "file-lock.sh: no C compiler ($CC)" >&2
    exit 2
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bufferlock-bench.XXXXXX")
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# Static links keep the driver's own RSS (a floor under every ru_maxrss it
# reports) and clocknow's start-up small; fall back to dynamic if no libc.a.
build() { # out src
    "$CC" -O2 -static -o "$1" "$2" 2>/dev/null || "$CC" -O2 -o "$1" "$2"
}
build "$tmp/spawn" "$here/spawn.c"
build "$tmp/clocknow" "$here/clocknow.c"
SPAWN=$tmp/spawn
CLOCKNOW=$tmp/clocknow

# Which tools take part.
have_bl=0
if [[ -x $BL ]]; then
    mkdir "$tmp/probe"
    if "$BL" -d "$tmp/probe" k -- "$TRUE"; then
        have_bl=1
    else
        err "bufferlock smoke run failed (exit $?): $BL -d DIR k -- $TRUE; skipping it"
    fi
fi
peers=()
[[ -n $FLOCK ]] && peers+=(flock)
[[ -n $CHPST ]] && peers+=(chpst)
[[ -n $SETLOCK ]] && peers+=(setlock)
tools_a=(true "${peers[@]}")
((have_bl)) && tools_a+=(bufferlock)

echo "bufferlock file-lock bench ($( ((quick)) && echo quick || echo full) run)"
echo "  $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
if ((have_bl)); then
    echo "  bufferlock: $BL"
else
    echo "  bufferlock: NOT FOUND at $BL -- measuring the peers only (set BUFFERLOCK_BIN)"
fi
echo "  peers: ${peers[*]:-none}   driver RSS floor: $("$SPAWN" rss) KiB"

# rotate ARRAYNAME K: print the array's elements rotated left by K
rotate() {
    local -n arr=$1
    local n=${#arr[@]} i
    for ((i = 0; i < n; i++)); do printf '%s\n' "${arr[(i + $2) % n]}"; done
}

# ------------------------------------------------- (a) uncontended ----------

A_DIR=$tmp/a
mkdir "$A_DIR"
cmd_a() {
    case $1 in
        true) CMD=("$TRUE") ;;
        flock) CMD=("$FLOCK" -n "$A_DIR/f.flock" "$TRUE") ;;
        chpst) CMD=("$CHPST" -L "$A_DIR/f.chpst" "$TRUE") ;;
        setlock) CMD=("$SETLOCK" -n "$A_DIR/f.setlock" "$TRUE") ;;
        bufferlock) CMD=("$BL" -d "$A_DIR" k -- "$TRUE") ;;
    esac
}

hr "(a) uncontended: TOOL lock /bin/true, $A_ROUNDS interleaved rounds x $A_BATCH runs per tool"
declare -A a_fail a_med a_mean a_rss a_rssmed a_n
for t in "${tools_a[@]}"; do # warm-up: page cache, lock files created
    cmd_a "$t"
    "$SPAWN" run "$A_BATCH" -- "${CMD[@]}" >/dev/null || true
    : >"$A_DIR/$t.dat"
    a_fail[$t]=0
done
for ((r = 0; r < A_ROUNDS; r++)); do
    mapfile -t order < <(rotate tools_a "$r")
    for t in "${order[@]}"; do
        cmd_a "$t"
        "$SPAWN" run "$A_BATCH" -- "${CMD[@]}" >>"$A_DIR/$t.dat" || a_fail[$t]=1
    done
done
for t in "${tools_a[@]}"; do
    read -r "a_n[$t]" "a_mean[$t]" "a_med[$t]" < <(sort -n -k1,1 "$A_DIR/$t.dat" | awk '
        { w[NR] = $1; s += $1 }
        END { m = NR % 2 ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2
              printf "%d %.0f %.0f\n", NR, s / NR, m }')
    read -r "a_rssmed[$t]" "a_rss[$t]" < <(sort -n -k2,2 "$A_DIR/$t.dat" | awk '
        { r[NR] = $2 } END { printf "%d %d\n", r[int((NR + 1) / 2)], r[NR] }')
    ((a_fail[$t] == 0)) || err "$t: some uncontended runs exited non-zero"
done

# ratio X Y: X/Y with 2 decimals ("-" if either is missing)
ratio() {
    if [[ -z ${1:-} || -z ${2:-} ]]; then
        echo -
    else
        awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'
    fi
}
# us NS / ms NS: nanoseconds as microseconds / milliseconds ("-" if missing)
us() { if [[ -n ${1:-} ]]; then awk -v x="$1" 'BEGIN { printf "%.1f", x / 1e3 }'; else echo -; fi; }
ms() { if [[ -n ${1:-} ]]; then awk -v x="$1" 'BEGIN { printf "%.3f", x / 1e6 }'; else echo -; fi; }

printf '  %-11s %6s %9s %9s %7s %7s %7s %7s %15s\n' tool runs mean_us median_us \
    xtrue xflock xchpst mean/fl maxrss_KiB_med/max
for t in "${tools_a[@]}"; do
    printf '  %-11s %6s %9s %9s %7s %7s %7s %7s %15s\n' "$t" "${a_n[$t]}" \
        "$(us "${a_mean[$t]}")" "$(us "${a_med[$t]}")" \
        "$(ratio "${a_med[$t]}" "${a_med[true]}")" \
        "$(ratio "${a_med[$t]}" "${a_med[flock]:-}")" \
        "$(ratio "${a_med[$t]}" "${a_med[chpst]:-}")" \
        "$(ratio "${a_mean[$t]}" "${a_mean[flock]:-}")" \
        "${a_rssmed[$t]}/${a_rss[$t]}"
done
echo "  (ratios of medians; mean/fl = ratio of means vs flock; wall = posix_spawn .. wait4,"
echo "   the same spawn cost for every tool; maxrss from wait4 includes the waited-for"
echo "   /bin/true and cannot go below the driver floor printed above)"

# -------------------------------------------- (a) instruction counts --------

# ir_to_exec TOOL CMD...: callgrind instructions from the first instruction
# (ld.so included) up to entry to exec*() of the command.  A process that
# execs never reaches callgrind's exit report, so there is no "Collected"
# line for it; --dump-before='*execv*' writes a dump part at each exec*()
# entry, and the parts add up to that process's count so far (a forked child
# inherits its parent's counts).
declare -A ir ir_note
ir_to_exec() {
    local t=$1
    shift
    local d=$tmp/cg.$t log
    mkdir -p "$d"
    log=$d/log
    "$VALGRIND" --tool=callgrind --dump-before='*execv*' \
        --callgrind-out-file="$d/cg.%p" "$@" >/dev/null 2>"$log" || true
    local parts
    parts=$(grep -l -e '^desc: Trigger: --dump-before' "$d"/cg.* 2>/dev/null || true)
    local collected
    collected=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log" | head -n1)
    if [[ -n $parts ]]; then
        # shellcheck disable=SC2086 # $parts: file names without spaces
        ir[$t]=$(awk '/^summary:/ { s += $2 } END { print s }' $parts)
        if [[ -n $collected ]]; then
            ir_note[$t]="tool process 'Collected' (forks, waits, exits): $collected"
        else
            ir_note[$t]="process exec'd: no 'Collected' line"
        fi
    elif [[ -n $collected ]]; then
        ir[$t]=$collected
        ir_note[$t]="'Collected' at exit (no exec*() entry seen)"
    else
        # No exec*() symbol seen (stripped static binary?): make the exec
        # fail instead, so the process exits and callgrind reports a total.
        local argv=("$@")
        argv[-1]=$tmp/no-such-command
        "$VALGRIND" --tool=callgrind --callgrind-out-file=/dev/null \
            "${argv[@]}" >/dev/null 2>"$log" || true
        ir[$t]=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log" | head -n1)
        if [[ -n ${ir[$t]} ]]; then
            ir_note[$t]="FALLBACK: no exec*() symbol; 'Collected' with a command that fails to exec (includes the error path)"
        else
            ir_note[$t]="callgrind failed: $(tail -n 2 "$log" | tr '\n' ' ')"
        fi
    fi
}

if [[ -n $VALGRIND ]]; then
    hr "(a) start-up instructions (callgrind Ir, ld.so included, up to exec of /bin/true)"
    C_DIR=$tmp/cgl
    mkdir "$C_DIR"
    ir_to_exec true "$TRUE"
    ir_note[true]="bare /bin/true, 'Collected' at exit"
    for t in "${tools_a[@]}"; do
        [[ $t == true ]] && continue
        case $t in
            flock) ir_to_exec flock "$FLOCK" -n "$C_DIR/f" "$TRUE" ;;
            chpst) ir_to_exec chpst "$CHPST" -L "$C_DIR/f" "$TRUE" ;;
            setlock) ir_to_exec setlock "$SETLOCK" -n "$C_DIR/f" "$TRUE" ;;
            bufferlock) ir_to_exec bufferlock "$BL" -d "$C_DIR" k -- "$TRUE" ;;
        esac
    done
    for t in "${tools_a[@]}"; do
        printf '  %-11s %10s  %s\n' "$t" "${ir[$t]:--}" "${ir_note[$t]}"
    done
else
    note "valgrind not available: instruction counts skipped"
fi

# ------------------------------------------------- (b) contended -----------

hr "(b) contended: $B_PROCS processes x $B_ITERS blocking acquisitions, counter read-modify-write"
# The critical section: a non-atomic read-modify-write of the counter file.
# shellcheck disable=SC2016 # expanded by the sh -c of each run, not here
RMW='n=$(cat "$1"); echo $((n + 1)) > "$1"'
tools_b=()
((have_bl)) && tools_b+=(bufferlock)
[[ -n $FLOCK ]] && tools_b+=(flock)
[[ -n $SETLOCK ]] && tools_b+=(setlock)
[[ -n $CHPST ]] && tools_b+=(chpst)
cmd_b() {
    local d=$tmp/b.$1
    case $1 in
        none) CMD=(/bin/sh -c "$RMW" sh "$d/C") ;;
        bufferlock) CMD=("$BL" -d "$d" -w inf k -- /bin/sh -c "$RMW" sh "$d/C") ;;
        flock) CMD=("$FLOCK" "$d/f" /bin/sh -c "$RMW" sh "$d/C") ;;
        setlock) CMD=("$SETLOCK" "$d/f" /bin/sh -c "$RMW" sh "$d/C") ;;
        chpst) CMD=("$CHPST" -l "$d/f" /bin/sh -c "$RMW" sh "$d/C") ;;
    esac
}
declare -A b_ns b_bad b_count b_rate b_ok
per_chunk=$((B_ITERS / B_CHUNKS))
for t in "${tools_b[@]}" none; do
    mkdir "$tmp/b.$t"
    echo 0 >"$tmp/b.$t/C"
    b_ns[$t]=0 b_bad[$t]=0
done
# B_CHUNKS interleaved passes of B_ITERS/B_CHUNKS acquisitions per process
# each; the counter carries over, so it must end at exactly B_TOTAL.
for ((r = 0; r < B_CHUNKS; r++)); do
    mapfile -t order < <(rotate tools_b "$r")
    for t in "${order[@]}"; do
        cmd_b "$t"
        read -r ns bad < <("$SPAWN" par "$B_PROCS" "$per_chunk" -- "${CMD[@]}" || true)
        b_ns[$t]=$((b_ns[$t] + ${ns:-0}))
        b_bad[$t]=$((b_bad[$t] + ${bad:-1}))
    done
done
b_verdict=OK
for t in "${tools_b[@]}"; do
    b_count[$t]=$(cat "$tmp/b.$t/C")
    b_rate[$t]=$(awk -v n="$B_TOTAL" -v ns="${b_ns[$t]}" 'BEGIN { printf "%.0f", n / (ns / 1e9) }')
    ok=OK
    if [[ ${b_count[$t]} != "$B_TOTAL" || ${b_bad[$t]} != 0 ]]; then
        ok=FAIL
        b_verdict=FAIL
        err "$t: counter ${b_count[$t]} (want $B_TOTAL), ${b_bad[$t]} failed runs"
    fi
    b_ok[$t]=$ok
    printf '  %-11s counter %5s/%s %-4s  %6s s  %6s critical sections/s\n' "$t" \
        "${b_count[$t]}" "$B_TOTAL" "$ok" "$(awk -v ns="${b_ns[$t]}" 'BEGIN { printf "%.2f", ns / 1e9 }')" \
        "${b_rate[$t]}"
done
# Control: the same workload with no lock must lose updates, or the test
# could not tell a broken lock from a working one.
cmd_b none
read -r _ _ < <("$SPAWN" par "$B_PROCS" "$per_chunk" -- "${CMD[@]}" || true)
ctl=$(cat "$tmp/b.none/C")
want_ctl=$((B_PROCS * per_chunk))
if ((ctl < want_ctl)); then
    echo "  control (no lock, $want_ctl increments): counter $ctl -- lost updates, so the check can catch a broken lock"
else
    note "control run without a lock lost no updates this time ($ctl/$want_ctl): the race window was not hit"
fi
echo "  (chpst -l is extra context; the target compares bufferlock with setlock)"

# ------------------------------------------------- (c) hand-off -------------

C_REPS=$((C_ROUNDS * C_BATCH))
hr "(c) hand-off latency: holder releases, blocked waiter's command starts ($C_REPS per tool)"
H_DIR=$tmp/h
mkdir "$H_DIR"
tools_c=()
((have_bl)) && tools_c+=(bufferlock)
[[ -n $FLOCK ]] && tools_c+=(flock)
[[ -n $SETLOCK ]] && tools_c+=(setlock)

if ((have_bl)); then
    # The holder must lock the very file bufferlock uses: DIR/<md5 of KEY>.lock.
    # Check that against the file bufferlock actually created in an empty dir.
    bl_lock=$(printf %s k | md5sum | cut -c1-32).lock
    mapfile -t made < <(find "$tmp/probe" -mindepth 1 -maxdepth 1 -printf '%f\n')
    if ((${#made[@]} == 1)); then
        if [[ ${made[0]} != "$bl_lock" ]]; then
            note "bufferlock created ${made[0]}, not md5(key).lock = $bl_lock; using ${made[0]}"
            bl_lock=${made[0]}
        fi
    else
        note "bufferlock left ${#made[@]} files in an empty -d dir (${made[*]:-}); assuming $bl_lock"
    fi
fi
# holder_c TOOL: sets HOLD (file the driver locks) and CMD (the waiter)
cmd_c() {
    case $1 in
        bufferlock) HOLD=$H_DIR/$bl_lock CMD=("$BL" -d "$H_DIR" -w 10 k -- "$CLOCKNOW") ;;
        flock) HOLD=$H_DIR/f.flock CMD=("$FLOCK" -w 10 "$HOLD" "$CLOCKNOW") ;;
        setlock) HOLD=$H_DIR/f.setlock CMD=("$SETLOCK" "$HOLD" "$CLOCKNOW") ;;
    esac
}
declare -A c_fail
for t in "${tools_c[@]}"; do
    : >"$H_DIR/$t.dat"
    c_fail[$t]=0
done
for ((r = 0; r < C_ROUNDS; r++)); do
    mapfile -t order < <(rotate tools_c "$r")
    for t in "${order[@]}"; do
        cmd_c "$t"
        "$SPAWN" handoff "$C_BATCH" "$HOLD" -- "${CMD[@]}" >>"$H_DIR/$t.dat" || c_fail[$t]=1
    done
done
declare -A c_p50 c_p90 c_max
printf '  %-11s %5s %9s %9s %9s %8s %8s\n' tool n p50_us p90_us max_us blocked early
for t in "${tools_c[@]}"; do
    # nearest-rank percentiles over the sorted latencies ("nan" = failed)
    read -r n p50 p90 max blocked early nan < <(sort -g -k1,1 "$H_DIR/$t.dat" | awk '
        $1 == "nan" { nan++; next }
        { v[++n] = $1; if ($2 == 1) b++; if ($1 < 0) e++ }
        END {
            p50 = n ? v[int(n * 0.5 + 0.999999)] : 0
            p90 = n ? v[int(n * 0.9 + 0.999999)] : 0
            printf "%d %d %d %d %d %d %d\n", n, p50, p90, n ? v[n] : 0, b, e, nan
        }')
    c_p50[$t]=$p50 c_p90[$t]=$p90 c_max[$t]=$max
    if ((n == 0)); then c_p50[$t]='' c_p90[$t]='' c_max[$t]=''; fi
    printf '  %-11s %5s %9s %9s %9s %8s %8s\n' "$t" "$n" "$(us "$p50")" "$(us "$p90")" \
        "$(us "$max")" "$blocked/$n" "$early"
    ((early == 0)) || err "$t: waiter's command started before the release $early times (wrong lock file?)"
    ((nan == 0 && c_fail[$t] == 0)) || err "$t: $nan hand-offs failed (waiter exit status non-zero or printed nothing)"
    ((blocked == n)) || note "$t: waiter seen blocked in flock(2) (via /proc/locks) only $blocked/$n times before release"
done
echo "  latency = waiter's command's first CLOCK_MONOTONIC reading - holder's reading just"
echo "  before close(); it INCLUDES the waiter's exec of the printing program (static C,"
echo "  bench/clocknow.c) for every tool, and flock(1)'s extra fork before that exec."

# ------------------------------------------------- summary ------------------

# target LABEL VALUE OP LIMIT: prints one summary line
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
    printf '  %-40s %12s   target %s %-10s %s\n' "$label" "${value:--}" "$op" "$limit" "$v"
}

hr "summary"
echo "  peers vs bare /bin/true (median wall):" \
    "$(for t in "${peers[@]}"; do printf '%s %sx  ' "$t" "$(ratio "${a_med[$t]}" "${a_med[true]}")"; done)"
if [[ -n ${b_rate[setlock]:-} || -n ${b_rate[flock]:-} ]]; then
    echo "  contended peers: setlock ${b_rate[setlock]:--}/s, flock ${b_rate[flock]:--}/s, chpst -l ${b_rate[chpst]:--}/s (counter $b_verdict)"
fi
echo "  flock handoff p50 $(us "${c_p50[flock]:-}") us, p90 $(us "${c_p90[flock]:-}") us; setlock p50 $(us "${c_p50[setlock]:-}") us"
if ((have_bl)); then
    echo "  bufferlock vs bare /bin/true: $(ratio "${a_med[bufferlock]}" "${a_med[true]}")x median," \
        "$(ratio "${a_mean[bufferlock]}" "${a_mean[true]}")x mean"
    echo "  bufferlock vs flock by mean: $(ratio "${a_mean[bufferlock]}" "${a_mean[flock]:-}")x," \
        "vs chpst by mean: $(ratio "${a_mean[bufferlock]}" "${a_mean[chpst]:-}")x"
    target "(a) bufferlock/flock, median wall" "$(ratio "${a_med[bufferlock]}" "${a_med[flock]:-}")" '<=' 0.80
    target "(a) bufferlock/chpst, median wall" "$(ratio "${a_med[bufferlock]}" "${a_med[chpst]:-}")" '<=' 1.15
    target "(a) bufferlock Ir to exec" "${ir[bufferlock]:-}" '<' 500000
    rss_limit=-
    [[ -n ${a_rss[flock]:-} ]] && rss_limit=$((a_rss[flock] + 2048))
    target "(a) bufferlock peak RSS KiB" "${a_rss[bufferlock]}" '<=' "$rss_limit"
    echo "      (flock's peak RSS ${a_rss[flock]:--} KiB + 2048)"
    printf '  %-40s %12s   target exact      %s\n' "(b) counters end at $B_TOTAL" "$b_verdict" \
        "$([[ $b_verdict == OK ]] && echo MET || echo "NOT MET")"
    b_ratio=-
    [[ ${b_ok[bufferlock]} == OK ]] && b_ratio=$(ratio "${b_rate[bufferlock]}" "${b_rate[setlock]:-}")
    target "(b) bufferlock/setlock CS/s" "$b_ratio" '>=' 1
    target "(c) bufferlock hand-off p50, ms" "$(ms "${c_p50[bufferlock]}")" '<=' 1
    target "(c) bufferlock hand-off p90, ms" "$(ms "${c_p90[bufferlock]}")" '<=' 1
    echo "      (max $(us "${c_max[bufferlock]}") us; flock -w p90 $(us "${c_p90[flock]:-}") us)"
else
    echo "  bufferlock: SKIPPED (no executable at $BL) -- all bufferlock targets n/a"
fi
if ((errors)); then
    echo "  $errors error(s): see ERROR lines above"
    exit 1
fi
