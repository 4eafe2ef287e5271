# shellcheck shell=bash
# Checks of what `bufferlock cache --stats` prints, each by a real consumer
# of its format (SPEC §21). Load after helpers.bash:
#
#   load helpers
#   load stats_helpers
#   blc --stats --format prometheus >"$T/stats.prom"
#   check_stats_prometheus "$T/stats.prom"
#
# Each returns non-zero, saying why on stderr, when FILE is not what its
# consumer accepts.

# check_stats_json FILE: one JSON document (python3's parser) with store,
# location, totals and top; every counter a number (not a string, not a
# boolean), the seconds too, the hit rate a number or null (no calls); and
# the totals add up: calls = served + misses, served = hits + stale serves +
# waits, misses = builds + failed builds.
check_stats_json() {
    python3 - "$1" <<'PY'
import json, sys

whole = ("calls", "served", "hits", "stale_serves", "waits", "misses", "builds",
         "failed_builds", "warm_starts", "store_errors", "bytes_served", "bytes_stored")
seconds = ("build_seconds", "saved_seconds")

def fail(why):
    sys.exit(f"check_stats_json {sys.argv[1]}: {why}")

def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)

def check_counters(where, c):
    if not isinstance(c, dict):
        fail(f"{where} is not an object: {c!r}")
    for name in whole:
        if not (isinstance(c.get(name), int) and not isinstance(c[name], bool) and c[name] >= 0):
            fail(f"{where}.{name} is not a whole number: {c.get(name)!r}")
    for name in seconds:
        if not (number(c.get(name)) and c[name] >= 0):
            fail(f"{where}.{name} is not a number of seconds: {c.get(name)!r}")
    rate = c.get("hit_rate_percent", "missing")
    if not (rate is None or (number(rate) and 0 <= rate <= 100)):
        fail(f"{where}.hit_rate_percent is neither a percentage nor null: {rate!r}")
    if (rate is None) != (c["calls"] == 0):
        fail(f"{where}.hit_rate_percent is {rate!r} with {c['calls']} calls")
    sums = (("calls", ("served", "misses")), ("served", ("hits", "stale_serves", "waits")),
            ("misses", ("builds", "failed_builds")))
    for total, parts in sums:
        if c[total] != sum(c[p] for p in parts):
            fail(f"{where}.{total} = {c[total]} is not {' + '.join(parts)}")

with open(sys.argv[1], encoding="utf-8") as f:
    try:
        doc = json.load(f)
    except ValueError as e:  # also a second document after the first
        fail(f"not one JSON document: {e}")
if not isinstance(doc, dict):
    fail("not an object")
for name in ("store", "location"):
    if not isinstance(doc.get(name), str):
        fail(f"{name} is not a string: {doc.get(name)!r}")
check_counters("totals", doc.get("totals"))
top = doc.get("top")
if not isinstance(top, list):
    fail(f"top is not an array: {top!r}")
for i, entry in enumerate(top):
    if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
        fail(f"top[{i}] has no key: {entry!r}")
    check_counters(f"top[{i}]", entry)
PY
}

# check_stats_markdown FILE: GitHub-flavoured tables, as a job summary
# renders them: at least one; each a header row, then a separator row
# (|---|, alignment colons allowed) of as many cells, then rows of as many
# cells. Cells split at '|' not escaped by a backslash; the first table is
# the totals' "| counter | value |".
check_stats_markdown() {
    python3 - "$1" <<'PY'
import re, sys

def fail(why):
    sys.exit(f"check_stats_markdown {sys.argv[1]}: {why}")

def cells(line):
    out, cell, i = [], "", 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            cell += line[i:i + 2]
            i += 2
            continue
        if line[i] == "|":
            out.append(cell.strip())
            cell = ""
        else:
            cell += line[i]
        i += 1
    out.append(cell.strip())
    if not (line.startswith("|") and line.endswith("|")):
        fail(f"a table row that does not start and end with '|': {line!r}")
    return out[1:-1]

with open(sys.argv[1], encoding="utf-8") as f:
    lines = f.read().split("\n")
tables, current = [], None
for line in lines:
    if line.startswith("|"):
        if current is None:
            current = []
            tables.append(current)
        current.append(line)
    else:
        current = None
if not tables:
    fail("no table")
for t in tables:
    header = cells(t[0])
    if len(t) < 2:
        fail(f"a table without a separator row: {t[0]!r}")
    separator = cells(t[1])
    if not all(re.fullmatch(r":?-{3,}:?", c) for c in separator):
        fail(f"not a separator row: {t[1]!r}")
    if len(separator) != len(header):
        fail(f"{len(header)} header cells but {len(separator)} in the separator: {t[1]!r}")
    for row in t[2:]:
        if len(cells(row)) != len(header):
            fail(f"a row of {len(cells(row))} cells under {len(header)} columns: {row!r}")
if [c.lower() for c in cells(tables[0][0])] != ["counter", "value"]:
    fail(f"the first table is not '| counter | value |': {tables[0][0]!r}")
PY
}

# check_stats_prometheus FILE: promtool accepts FILE as the text exposition
# format (its parser and its lint: HELP, TYPE, counter names), and FILE has
# samples (promtool accepts an empty file). promtool missing is a failure,
# not a skip: ./build.sh deps installs it (Debian's prometheus package).
check_stats_prometheus() {
    if ! command -v promtool >/dev/null; then
        echo "check_stats_prometheus: no promtool (./build.sh deps installs Debian's prometheus)" >&2
        return 1
    fi
    if ! grep -q '^bufferlock_cache_[a-z_]*{' "$1"; then
        echo "check_stats_prometheus $1: no bufferlock_cache_ sample" >&2
        return 1
    fi
    local out
    if ! out=$(promtool check metrics <"$1" 2>&1); then
        echo "check_stats_prometheus $1: promtool check metrics: $out" >&2
        return 1
    fi
}
