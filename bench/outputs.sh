#!/usr/bin/env bash
# bench/outputs.sh — `bufferlock cache --output` against the http store, on
# a private loopback nginx with WebDAV (started here, stopped by pid).
#
#   bench/outputs.sh [--quick]
#
# (a) the upload: a --force build whose command writes 300 MiB of random
#     bytes into out/blob (`sh -c 'head -c 300M /dev/urandom > out/blob'`),
#     the --output archive stored on the server, vs the same command followed
#     by `curl -T out/blob` to the same server; the command alone as the
#     reference; the storing build's peak RSS
# (b) restores overlapping: five callers of one missing key on two
#     "runners" (own HOME, own tree: three and two callers), one Redis for
#     the lock, the same nginx with a limit_rate that makes one restore of
#     the 300 MiB entry take about 2 s; one builds, four wait and restore.
#     Reported: when the last caller is done after the build's end, in
#     units of one restore (a lone restore, timed after), and the number
#     of builds (must be 1)
#
# Timing is done by bench/spawn.c (posix_spawn + wait4).  See bench/README.md.
#
# Environment: BUFFERLOCK_BIN (default <repo>/build/bufferlock), CC (cc),
# BUFFERLOCK_BASELINE (optional: an earlier bufferlock binary, whose store of
# (a) is timed in the same rounds as "obase"; (b) runs BUFFERLOCK_BIN only).
# Exit status: 0 unless a run or a correctness check failed (a restored file
# differs, a caller failed, more than one build).  Missed performance targets
# are reported in the summary, not turned into a failure.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"

if ((quick)); then
    A_ROUNDS=2 B_REPS=${B_REPS:-1}
else
    A_ROUNDS=8 B_REPS=2
fi
SIZE_MIB=300
RATE=150m # (b): nginx's limit_rate, bytes/s of one response: 300 MiB in about 2 s

TARGET_FMT='  %-48s %9s   target %-2s %-7s %s\n'
CHECK_FMT='  %-48s %9s   target exact      %s\n'

want "$CC" gcc libc6-dev
want nginx nginx-light
want curl curl
want redis-server redis-server
want redis-cli redis-tools
want cmp diffutils
install_missing tools

require_cc
require_bl
NGINX=$(command -v nginx || true)
CURL=$(command -v curl || true)
[[ -n $NGINX && -n $CURL ]] || {
    echo "$NAME: needs nginx and curl (apt-get install nginx-light curl)" >&2
    exit 2
}

BASELINE=${BUFFERLOCK_BASELINE:-}
make_tmp spawn clocknow

bench_header outputs
echo "  uptime: $(uptime)"
echo "  bufferlock: $BL"
echo "  temp dir: $tmp ($(df -PT "$tmp" | awk 'NR == 2 { print $2 }'))"

# BUILD: the build of both parts, run in a tree with out/ (and by sh -c).
BUILD="head -c ${SIZE_MIB}M /dev/urandom > out/blob"

# ------------------------------------------------- (a) the upload -----------

start_nginx || {
    echo "$NAME: nginx did not come up: $(tail -n 2 "$tmp/nginx/error.log" 2>/dev/null)" >&2
    exit 2
}
HURL=http://127.0.0.1:$HPORT/cache/
A=$tmp/a
mkdir -p "$A/out"
# tool names: obuild (the command alone), ocurl (it, then curl -T), oput (the
# --force build storing out/ in the http store)
cmd_a() {
    OUT=null
    case $1 in
        obuild) CMD=(/bin/sh -c "cd '$A' && $BUILD") ;;
        ocurl) CMD=(/bin/sh -c "cd '$A' && $BUILD && exec '$CURL' -s -f -o /dev/null -T out/blob '${HURL}raw.bin'") ;;
        oput) CMD=(/bin/sh -c "cd '$A' && exec '$BL' cache --cache-dir '$A/c' --store '$HURL' --force --output out k.out -- sh -c '$BUILD'") ;;
        obase) CMD=(/bin/sh -c "cd '$A' && exec '$BASELINE' cache --cache-dir '$A/c' --store '$HURL' --force --output out k.base -- sh -c '$BUILD'") ;;
    esac
}
hr "(a) --output upload, $SIZE_MIB MiB incompressible: $A_ROUNDS interleaved rounds x 1 run per tool"
tools=(obuild ocurl oput)
[[ -z $BASELINE ]] || tools+=(obase)
time_rounds "$tmp" "$A_ROUNDS" 1 1 "${tools[@]}"
for t in "${tools[@]}"; do ((a_fail[$t] == 0)) || err "$t: some runs exited non-zero"; done
printf '  %-8s %5s %10s %10s %8s %15s\n' tool runs mean_ms median_ms xocurl maxrss_KiB_med/max
for t in "${tools[@]}"; do
    printf '  %-8s %5s %10s %10s %8s %15s\n' "$t" "${a_n[$t]}" "$(ms "${a_mean[$t]}" 1)" \
        "$(ms "${a_med[$t]}" 1)" "$(ratio "${a_med[$t]}" "${a_med[ocurl]}")" "${a_rssmed[$t]}/${a_rss[$t]}"
done
# One more store (the last timed run may have been another tool's), whose
# file a restore must give back.
cmd_a oput
"${CMD[@]}" 2>"$A/err" || err "(a) the last store failed: $(head -n 1 "$A/err")"
cp "$A/out/blob" "$A/blob.want"
rm -rf "$A/out"
(cd "$A" && "$BL" cache --cache-dir "$A/c2" --store "$HURL" --output out k.out -- /bin/false) 2>"$A/err" ||
    err "(a) a restore of the stored entry failed: $(head -n 1 "$A/err")"
cmp -s "$A/out/blob" "$A/blob.want" || err "(a) the restored out/blob differs from the stored one"
a_obj=$(stat -c %s "$tmp/nginx/data/cache/$(printf %s k.out | md5sum | cut -c1-32).entry" 2>/dev/null || echo '?')
echo "  (obuild = the command alone; ocurl = it, then curl -T out/blob; oput = bufferlock cache --force"
echo "   --output out storing to the http store${BASELINE:+ (obase: the same with $BASELINE)};"
echo "   object $a_obj bytes, file $((SIZE_MIB * 1048576)) bytes)"
rm -rf "$A" "$tmp/nginx/data/cache/"*
stop_nginx

# ------------------------------------------------- (b) overlapping restores --

hr "(b) five callers on two runners, one build, $SIZE_MIB MiB --output, nginx limit_rate $RATE: $B_REPS runs"
start_redis
start_nginx "$RATE" || {
    echo "$NAME: nginx did not come up: $(tail -n 2 "$tmp/nginx/error.log" 2>/dev/null)" >&2
    exit 2
}
HURL=http://127.0.0.1:$HPORT/cache/
# shellcheck disable=SC2153 # start_redis sets PORT
RURL=redis://127.0.0.1:$PORT/0
B=$tmp/b
# caller.sh: one caller.  It takes the first free ticket (mkdir is atomic):
# tickets 1-3 run on runner 1, 4-5 on runner 2 (own HOME, own tree).  It
# prints "<ticket> <status> <done_ns>"; its build writes built.<ticket>.
cat >"$tmp/caller.sh" <<EOF
#!/bin/sh
i=1
while ! mkdir "\$1/ticket.\$i" 2>/dev/null; do i=\$((i + 1)); done
r=1
[ "\$i" -le 3 ] || r=2
cd "\$1/r\$r/tree" || exit 1
unset XDG_CACHE_HOME
export HOME="\$1/r\$r/home" TICKET=\$i
'$BL' cache -r '$RURL' --store '$HURL' --output out "\$2" -- \\
    sh -c '$BUILD && echo > "\$0/built.\$TICKET"' "\$1" 2>"\$1/err.\$i" </dev/null >/dev/null
rc=\$?
echo "\$i \$rc \$('$CLOCKNOW')"
EOF
chmod +x "$tmp/caller.sh"
# one_restore DIR KEY: the time (ns) of one restore of KEY in a fresh tree
one_restore() {
    mkdir -p "$1/home" "$1/tree"
    "$SPAWN" run 1 null -- /bin/sh -c "cd '$1/tree' && HOME='$1/home' exec '$BL' cache -r '$RURL' \
--store '$HURL' --output out '$2' -- /bin/false" | awk '$3 == 0 { print $1 }'
}
b_over=() b_restore=() b_builds=()
for ((rep = 1; rep <= B_REPS; rep++)); do
    d=$B.$rep key=k.overlap.$rep
    mkdir -p "$d/out" "$d/r1/home" "$d/r1/tree/out" "$d/r2/home" "$d/r2/tree/out"
    line=$("$SPAWN" herd 5 "$d/out" -- "$tmp/caller.sh" "$d" "$key" || true)
    builds=$(find "$d" -maxdepth 1 -name 'built.*' | wc -l)
    b_builds+=("$builds")
    # Another build than the first: what the callers said says why.
    ((builds == 1)) || err "(b) run $rep: $builds builds; the callers said: $(cat "$d"/err.* | tr '\n' ' ')"
    cat "$d"/out/out.* >"$d/done"
    if (($(awk '$2 == 0' "$d/done" | wc -l) != 5)); then
        err "(b) run $rep: not every caller succeeded: $(tr '\n' ' ' <"$d/done") $(cat "$d"/err.* | head -n 2 | tr '\n' ' ')"
        continue
    fi
    for r in 1 2; do
        cmp -s "$d/r$r/tree/out/blob" "$d/r1/tree/out/blob" || err "(b) run $rep: runner $r's out/blob differs"
    done
    t_restore=$(one_restore "$d/r3" "$key")
    cmp -s "$d/r3/tree/out/blob" "$d/r1/tree/out/blob" || err "(b) run $rep: a lone restore's out/blob differs"
    builder=$(find "$d" -maxdepth 1 -name 'built.*' -printf '%f\n' | head -n 1)
    builder=${builder#built.}
    # the build's end: its caller's exit; then how long after it each waiter ended
    read -r over waits < <(awk -v b="$builder" '
        { t[$1] = $3 } END { end = t[b]; last = end; s = ""
          for (i in t) if (i != b) { if (t[i] > last) last = t[i]; s = s " " sprintf("%.2f", (t[i] - end) / 1e9) }
          printf "%.0f%s\n", last - end, s }' "$d/done")
    b_over+=("$over") b_restore+=("$t_restore")
    echo "  run $rep: builder ticket $builder, builds $builds; waiters done after the build's end (s):$waits;" \
        "one restore alone $(ms "$t_restore" 0) ms; herd: $line"
    rm -rf "$d" "$tmp/nginx/data/cache/"*
done
stop_nginx
stop_redis
echo "  (tickets 1-3 on runner 1, 4-5 on runner 2; each caller: bufferlock cache -r redis --store http"
echo "   --output out KEY -- sh -c '$BUILD'; a restore here downloads the entry at $RATE/s)"

# ------------------------------------------------- summary ------------------

hr "summary (load $(loadavg))"
# paired A B: the median over the rounds of A's run / B's run in the same
# round (the tools of a round run back to back: a load that drifts between
# rounds moves both)
paired() {
    paste -d' ' "$tmp/$1.dat" "$tmp/$2.dat" | awk '{ print $1 / $4 }' | sort -g |
        awk '{ r[NR] = $1 } END { printf "%.2f", NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2 }'
}
target "(a) --output upload / build + curl -T, $SIZE_MIB MiB" \
    "$( ((a_fail[oput] || a_fail[ocurl])) || paired oput ocurl)" '<=' 1.2
echo "      (median of the rounds' ratios; the ratio of the medians: $(ratio "${a_med[oput]}" "${a_med[ocurl]}")x)"
echo "      (medians: store $(ms "${a_med[oput]}" 1) / curl $(ms "${a_med[ocurl]}" 1) ms, the command alone" \
    "$(ms "${a_med[obuild]}" 1) ms; less the command: $(awk -v s="${a_med[oput]}" -v c="${a_med[ocurl]}" \
        -v b="${a_med[obuild]}" 'BEGIN { printf "%.2f", (s - b) / (c - b) }')x)"
[[ -z $BASELINE ]] || ((a_fail[obase])) ||
    echo "      (baseline: its store / build + curl -T $(ratio "${a_med[obase]}" "${a_med[ocurl]}")x," \
        "this/baseline $(ratio "${a_med[oput]}" "${a_med[obase]}")x (paired: $(paired obase ocurl)x," \
        "$(paired oput obase)x); its peak RSS ${a_rss[obase]} KiB)"
target "(a) storing build's peak RSS KiB" "$( ((a_fail[oput])) || echo "${a_rss[oput]}")" '<=' 65536
worst=
for ((i = 0; i < ${#b_over[@]}; i++)); do
    x=$(ratio "${b_over[i]}" "${b_restore[i]}")
    [[ -z $worst ]] || awk -v a="$x" -v b="$worst" 'BEGIN { exit !(a > b) }' && worst=$x
done
check "(b) builds in each run" "$(
    v=OK
    for n in "${b_builds[@]}"; do ((n == 1)) || v=FAIL; done
    echo "$v"
)"
target "(b) last waiter after the build, in restores" "$worst" '<=' 1.5
echo "      (worst of $B_REPS; each run: $(for ((i = 0; i < ${#b_over[@]}; i++)); do
    printf '%s s / %s s = %sx  ' "$(ms "${b_over[i]}" 0 | awk '{ printf "%.2f", $1 / 1000 }')" \
        "$(ms "${b_restore[i]}" 0 | awk '{ printf "%.2f", $1 / 1000 }')" "$(ratio "${b_over[i]}" "${b_restore[i]}")"
done))"
bench_exit
