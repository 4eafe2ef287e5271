#!/usr/bin/env bash
# bench/hot-text.sh — write src/hot-text.ld: the code that common runs of
# bufferlock execute, placed together at the start of .text by the link.
#
#   bench/hot-text.sh
#
# A start faults in one page-cache window (64 KiB) of the binary's code for
# every window it touches; spread over 3 MB of code, the few hundred KB a run
# executes touch about 30 of them, packed together about 8
# (ARCHITECTURE.md, Start-up).  The script traces, one instruction at a
# time (bench/steptrace.c, on the real CPU), a file-lock run, a cache miss
# and a cache hit and, when redis-server is installed, a Redis run; finds the
# input section of every address in bufferlock.map (the link map the build
# writes next to the binary); and lists those sections grouped by the runs
# that execute them (the file run's code first, then the Redis run's), first
# executed first within a group.
# The list names sections, not addresses, so it stays valid as the code
# changes: a section it names that no longer exists is ignored by the
# linker, and new code is placed after the list.  Run it again after large
# changes to the start path, rebuild, and commit src/hot-text.ld.
# Environment: BUFFERLOCK_BIN (default <repo>/build/bufferlock), CC (cc).
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$@"
map=$(dirname "$BL")/bufferlock.map
out=$repo/src/hot-text.ld
require_bl
[[ -f $map ]] || { echo "$NAME: no link map at $map (the build writes it)" >&2; exit 2; }
want gawk gawk
want redis-server redis-server
want "$CC" gcc libc6-dev
install_missing tools
command -v gawk >/dev/null || { echo "$NAME: needs gawk" >&2; exit 2; }
require_cc
make_tmp steptrace

trace() { "$tmp/steptrace" "$tmp/trace.$1" "$BL" "${@:2}" >/dev/null 2>&1 || true; }
trace 1 -d "$tmp/locks" k -- true
trace 2 cache --cache-dir "$tmp/cache" k -- echo built
trace 3 cache --cache-dir "$tmp/cache" k -- echo built
if command -v redis-server >/dev/null; then
    start_redis
    trace 4 -r "redis://127.0.0.1:$PORT" k -- true
fi

# The map's input sections of .text (and of .text.hot, where an earlier list
# put them): "SECTION ADDRESS SIZE OBJECT", the section name sometimes on a
# line of its own before the rest.  Then each traced address names the
# section that holds it; every section is listed once, grouped by the set of
# traced runs that execute it (below), first executed first within a group.
gawk '
FNR == 1 { file++ }
file == 1 {
    if ($0 ~ /^\.[^ ]+/) { in_text = ($1 == ".text" || $1 == ".text.hot"); pending = ""; next }
    if (!in_text || $0 !~ /^ \./ && pending == "") next
    if (NF == 1 && $0 ~ /^ \./) { pending = $1; next }
    name = pending; pending = ""
    if ($1 ~ /^\./) { name = $1; $1 = "" ; $0 = $0 }
    if (NF < 3 || $1 !~ /^0x/ || $2 !~ /^0x/) next
    size = strtonum($2); if (size == 0) next
    n++; lo[n] = strtonum($1); hi[n] = lo[n] + size; sec[n] = name; obj[n] = $3
    next
}
file == 2 && FNR == 1 {
    # sections by start address, for a binary search
    m = asorti(lo, order, "@val_num_asc")
}
{
    a = strtonum("0x" $1)
    l = 1; h = m
    while (l <= h) {
        mid = int((l + h) / 2)
        if (lo[order[mid]] <= a) { best = order[mid]; l = mid + 1 } else h = mid - 1
    }
    if (!(best in hi) || a >= hi[best]) next
    if (!(best in line)) {
        o = obj[best]
        if (sec[best] != ".text" && sec[best] ~ /^\.text\./ && o !~ /libc\.a\(/) {
            line[best] = "    *(" sec[best] ")"
        } else if (match(o, /([^\/]+)\(([^)]+)\)$/, part)) {
            # an archive member; a libc string function stands for all its
            # variants (memmove-avx2-unaligned-erms.o ...): another CPU picks
            # another one
            member = part[2]
            if (part[1] == "libc.a") sub(/-(sse|ssse|avx|evex|erms|vec).*\.o$/, "-*.o", member)
            line[best] = "    *" part[1] ":" member "(.text .text.*)"
        } else {
            sub(/.*\//, "", o)
            line[best] = "    *" o "(" sec[best] ")"
        }
    }
    l = line[best]
    if (!(l in first)) first[l] = ++seen
    runs[l] = or(runs[l], lshift(1, file - 2))
}
END {
    # Grouped by the runs that execute them, in the order of weight of the
    # runs (the file run, the Redis run, the cache hit, the cache miss):
    # the code of the file run is then one stretch, that of the Redis run
    # two, and a run does not touch the code only other runs need.
    split("1 4 3 2", weight, " ")
    for (l in first) {
        key[l] = ""
        for (w = 1; w <= 4; w++) key[l] = key[l] (and(runs[l], lshift(1, weight[w] - 1)) ? "0" : "1")
        key[l] = key[l] sprintf(" %08d", first[l])
    }
    k = asorti(key, sorted, "@val_str_asc")
    for (i = 1; i <= k; i++) print sorted[i]
}' "$map" "$tmp"/trace.* > "$tmp/sections"

{
    echo "/* The code common runs execute, grouped by the runs that execute it: written by"
    echo "   bench/hot-text.sh, placed before the rest of .text (ARCHITECTURE.md,"
    echo "   Start-up). */"
    echo "SECTIONS"
    echo "{"
    echo "  .text.hot :"
    echo "  {"
    cat "$tmp/sections"
    echo "  }"
    echo "}"
    echo "INSERT BEFORE .text;"
} > "$out"
echo "hot-text.sh: $(wc -l < "$tmp/sections") sections in ${out#"$repo"/}"
