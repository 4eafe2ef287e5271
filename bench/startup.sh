#!/usr/bin/env bash
# bench/startup.sh — the start-up cost of the two paths every call takes,
# for BUFFERLOCK_BIN beside an earlier binary (BUFFERLOCK_BASELINE) in the
# same run: the figures a change to a lower layer must keep.
#
#   bench/startup.sh [--quick]
#
# (a) instructions (callgrind Ir, ld.so included): a file-lock run up to the
#     exec of /bin/true (`bufferlock -d DIR k -- /bin/true`), and the whole
#     run of a 4 KiB hit of the file store (`bufferlock cache --cache-dir D
#     k -- /bin/false`); not noise, unlike wall times
# (b) wall time of the same two runs, medians of interleaved rounds
#     (posix_spawn + wait4 by bench/spawn.c; stdout to /dev/null)
#
# Reported: each figure, and with a baseline the ratio new/baseline against
# the target ratio (Ir within +2 %, wall within +5 %: a shared 2-core box
# does not time closer than that).
#
# Environment: BUFFERLOCK_BIN (default <repo>/build/bufferlock),
# BUFFERLOCK_BASELINE (optional: the binary to compare with), CC (cc).
# Exit status: 0 unless a run failed or the hit printed other bytes.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"

if ((quick)); then
    ROUNDS=5 BATCH=10
else
    ROUNDS=40 BATCH=20
fi
BASELINE=${BUFFERLOCK_BASELINE:-}
[[ -z $BASELINE || $BASELINE == /* ]] || BASELINE=$PWD/$BASELINE

require_cc
require_bl
want valgrind valgrind
install_missing tools
VALGRIND=$(command -v valgrind || true)
make_tmp spawn
bench_header startup

# Both binaries read the same lock directory and the same stored entry: the
# entry format is the same (a format change shows here as a failed hit).
D=$tmp/cache
L=$tmp/locks
mkdir "$L"
head -c 4096 /dev/urandom >"$tmp/p.4k"
"$BL" cache --cache-dir "$D" k -- cat "$tmp/p.4k" >/dev/null
for b in "$BL" ${BASELINE:+"$BASELINE"}; do
    if ! cmp -s "$tmp/p.4k" <("$b" cache --cache-dir "$D" k -- /bin/false); then
        err "$b: the 4 KiB hit did not print the stored bytes"
    fi
done

tools=(run hit)
[[ -n $BASELINE ]] && tools+=(base.run base.hit)
# cmd_a TOOL: the command line of TOOL (time_rounds' callback)
cmd_a() {
    local b=$BL t=$1
    OUT=null
    if [[ $t == base.* ]]; then
        b=$BASELINE
        t=${t#base.}
    fi
    case $t in
        run) CMD=("$b" -d "$L" k -- "$TRUE") ;;
        hit) CMD=("$b" cache --cache-dir "$D" k -- /bin/false) ;;
    esac
}

if [[ -n $VALGRIND ]]; then
    hr "(a) instructions (callgrind Ir, ld.so included)"
    for t in "${tools[@]}"; do
        cmd_a "$t"
        case $t in
            *run) ir_to_exec "$t" "${CMD[@]}" ;;
            *hit)
                "$VALGRIND" --tool=callgrind --callgrind-out-file=/dev/null "${CMD[@]}" \
                    >/dev/null 2>"$tmp/cg.$t" || true
                ir[$t]=$(cg_collected "$tmp/cg.$t")
                ir_note[$t]="whole run, 'Collected' at exit"
                ;;
        esac
        printf '  %-9s %10s  %s\n' "$t" "${ir[$t]:--}" "${ir_note[$t]}"
    done
else
    note "valgrind not available: instruction counts skipped"
fi

hr "(b) wall time: $ROUNDS interleaved rounds x $BATCH runs per tool"
time_rounds "$tmp" "$ROUNDS" "$BATCH" 3 "${tools[@]}"
for t in "${tools[@]}"; do
    printf '  %-9s median %8.1f us  peak RSS %6s KiB%s\n' "$t" \
        "$(awk -v n="${a_med[$t]}" 'BEGIN { print n / 1000 }')" "${a_rss[$t]}" \
        "$( ((a_fail[$t])) && echo "  (a run FAILED)")"
    ((a_fail[$t])) && err "$t: a run exited non-zero"
done

# ratio A B: A/B to 3 places, or - when either is missing
ratio() {
    if [[ -n ${1:-} && -n ${2:-} && ${2:-0} != 0 ]]; then
        awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'
    else
        echo -
    fi
}

TARGET_FMT='  %-40s %10s %-2s %-6s %s\n'
CHECK_FMT='  %-40s %10s %s\n'
hr "summary (targets against the baseline, same run)"
if [[ -n $BASELINE ]]; then
    target "(a) Ir to exec, run: new/baseline" "$(ratio "${ir[run]:-}" "${ir[base.run]:-}")" '<=' 1.02
    target "(a) Ir, 4 KiB hit: new/baseline" "$(ratio "${ir[hit]:-}" "${ir[base.hit]:-}")" '<=' 1.02
    target "(b) wall, run: new/baseline" "$(ratio "${a_med[run]}" "${a_med[base.run]}")" '<=' 1.05
    target "(b) wall, 4 KiB hit: new/baseline" "$(ratio "${a_med[hit]}" "${a_med[base.hit]}")" '<=' 1.05
else
    note "no BUFFERLOCK_BASELINE: figures only"
fi
bench_exit
