# shellcheck shell=bash
# Helpers for the black-box suites of `bufferlock cache` (cache_*.bats).
#
# Load after helpers.bash (or redis_helpers.bash, which loads it):
#
#   load helpers
#   load cache_helpers
#   setup()    { cache_setup; }
#   teardown() { cache_teardown; }
#
# cache_setup gives each test a private cache directory $C (not created: the
# binary creates it) and a run counter $RUNS; cache_teardown kills every
# tracked background process together with its descendants (by PID).

# cache_setup: common_setup + $C, $RUNS, $T/bin/counted.
cache_setup() {
    common_setup
    C="$T/cache"
    RUNS="$T/runs"
    CALLER_PIDS=()
    mkdir -p "$T/bin"
    # counted [SLEEP [TEXT]]: count one run in $RUNS (one line each, appended
    # atomically), sleep SLEEP seconds, print TEXT (default: a line unique to
    # this run, so a rebuild never prints what a hit prints).
    cat >"$T/bin/counted" <<EOF
#!/bin/sh
echo "\$\$" >>'$RUNS'
if [ -n "\${1:-}" ]; then sleep "\$1"; fi
if [ \$# -ge 2 ]; then printf '%s\n' "\$2"; else printf 'run %s at %s\n' "\$\$" "\$(date +%s%N)"; fi
EOF
    chmod +x "$T/bin/counted"
    COUNTED="$T/bin/counted"
    # gated [LINE...] TEXT: count one run, print each LINE, wait until the
    # test calls open_gate (at most 60 s), print TEXT: a build that lasts
    # exactly as long as the test needs.
    cat >"$T/bin/gated" <<EOF
#!/bin/sh
echo "\$\$" >>'$RUNS'
while [ \$# -gt 1 ]; do printf '%s\n' "\$1"; shift; done
i=0
while [ ! -e '$T/gate' ] && [ \$i -lt 1200 ]; do sleep 0.05; i=\$((i + 1)); done
printf '%s\n' "\$1"
EOF
    chmod +x "$T/bin/gated"
    GATED="$T/bin/gated"
}

# open_gate: let every `gated` build finish.
open_gate() {
    : >"$T/gate"
}

cache_teardown() {
    track_descendants
    common_teardown
}

# cache_descendants PID: every descendant of PID (children first-level first).
cache_descendants() {
    local kid
    for kid in $(pgrep -P "$1" 2>/dev/null); do
        printf '%s\n' "$kid"
        cache_descendants "$kid"
    done
}

# track_descendants: add the current descendants of every tracked PID to the
# teardown list (so a build's command dies with its bufferlock).
track_descendants() {
    [[ -s ${BG_PIDS_FILE:-} ]] || return 0
    local pids=() kids=() pid
    mapfile -t pids <"$BG_PIDS_FILE"
    for pid in "${pids[@]}"; do
        mapfile -t kids < <(cache_descendants "$pid")
        track_pid "${kids[@]}"
    done
    return 0
}

# kill_tree PID: SIGKILL PID and all its descendants (a crash), wait until gone.
kill_tree() {
    local all=("$1") pid
    mapfile -t -O 1 all < <(cache_descendants "$1")
    for pid in "${all[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
    done
    for pid in "${all[@]}"; do
        wait_for_exit "$pid" 5 || fail "process $pid survived SIGKILL"
    done
    wait "$1" 2>/dev/null || true
}

# blc ARGS...: `bufferlock cache` with the test's cache directory.
blc() {
    "$BL" cache --cache-dir "$C" "$@"
}

# bls ARGS...: `bufferlock cache --store redis` on the shared server of
# redis_helpers.bash, with the test's cache directory.
bls() {
    "$BL" cache --cache-dir "$C" --store redis -r "$REDIS_URL" "$@"
}

# ekey KEY [PREFIX]: the Redis key of KEY's entry (REDIS LAYOUT).
ekey() {
    printf '{%s%s}:entry\n' "${2-buffer:lock:}" "$(key_md5 "$1")"
}

# rss_run NAME ARGS...: `bufferlock cache --cache-dir $C ARGS...` under GNU
# time, stdout to $T/out.NAME; its stderr must stay empty; its peak RSS (KiB)
# in $T/rss.NAME.
rss_run() {
    local name=$1
    shift
    /usr/bin/time -f %M -o "$T/rss.$name" "$BL" cache --cache-dir "$C" "$@" >"$T/out.$name" 2>"$T/err.$name"
    [[ ! -s $T/err.$name ]] || fail "$name stderr: $(cat "$T/err.$name")"
}

# assert_rss_below KIB NAME...: each rss_run NAME peaked below KIB KiB
# (not checked under AddressSanitizer, whose shadow memory says nothing of ours).
assert_rss_below() {
    local limit=$1 name kib
    shift
    grep -qa __asan_init "$BL" && return 0
    for name in "$@"; do
        kib=$(tail -n 1 "$T/rss.$name")
        ((kib < limit)) || fail "the peak RSS of the $name was $kib KiB"
    done
}

# largest_field KEY: the length of the longest field of the hash KEY.
largest_field() {
    rcli EVAL "local m = 0 for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
        local l = redis.call('HSTRLEN', KEYS[1], f) if l > m then m = l end end return m" 1 "$1"
}

# blc_bg ARGS...: blc in the background; BG_PID is bufferlock's own PID;
# stdout/stderr to ${BG_OUT:-$T/bg.out} / ${BG_ERR:-$T/bg.err}.
blc_bg() {
    "$BL" cache --cache-dir "$C" "$@" </dev/null \
        >"${BG_OUT:-$T/bg.out}" 2>"${BG_ERR:-$T/bg.err}" 3>&- &
    BG_PID=$!
    track_pid "$BG_PID"
}

# entry_path KEY [CACHEDIR]: where KEY's entry lives.
entry_path() {
    printf '%s/%s.entry\n' "${2:-$C}" "$(key_md5 "$1")"
}

# key_entries KEY [CACHEDIR]: KEY's entry files there, whatever their address
# (the inputs and the --output list name them), one a line.
key_entries() {
    find "${2:-$C}" -maxdepth 1 -name "$(key_md5 "$1")*.entry" -print 2>/dev/null | LC_ALL=C sort
}

# temp_files [CACHEDIR]: the temporary files in the cache dir, one a line.
temp_files() {
    [[ -d ${1:-$C} ]] || return 0
    find "${1:-$C}" -maxdepth 1 -name '.tmp-*' -print 2>/dev/null
}

# wait_for_temp_file [SECONDS] [CACHEDIR]: bounded wait until a temp file
# exists; sets TMPF to its path.
wait_for_temp_file() {
    local limit=${1:-10} dir=${2:-$C}
    poll_until "$limit" _first_temp_file "$dir" ||
        fail "no temporary file appeared in $dir within ${limit}s"
}

# _first_temp_file DIR: sets TMPF to DIR's first temporary file, if any.
_first_temp_file() {
    TMPF=$(temp_files "$1" | head -n 1)
    [[ -n $TMPF ]]
}

# runs: how many times the counted command ran.
runs() {
    if [[ -f $RUNS ]]; then
        wc -l <"$RUNS" | tr -d ' '
    else
        echo 0
    fi
}

# assert_runs N
assert_runs() {
    local got
    got=$(runs)
    [[ $got == "$1" ]] || fail "the command ran $got times, expected $1"
}

# sha FILE: sha256 of FILE.
sha() {
    local s
    s=$(sha256sum <"$1")
    printf '%s\n' "${s%% *}"
}

# assert_same_bytes EXPECTED ACTUAL: byte-identical files.
assert_same_bytes() {
    if ! cmp -s -- "$1" "$2"; then
        fail "$(printf '%s and %s differ (sizes %s / %s): %s' "$1" "$2" \
            "$(stat -c %s -- "$1" 2>/dev/null)" "$(stat -c %s -- "$2" 2>/dev/null)" \
            "$(cmp -- "$1" "$2" 2>&1 | head -n 1)")"
    fi
}

# assert_no_entry KEY: no entry for KEY and no temp file in $C.
assert_no_entry() {
    assert_file_not_exists "$(entry_path "$1")"
    local tmps
    tmps=$(temp_files)
    [[ -z $tmps ]] || fail "temporary files left behind: $tmps"
}

# assert_file_one_warning FILE SUBSTRING...: FILE (a captured stderr) is one
# 'bufferlock: ' line containing each SUBSTRING.
assert_file_one_warning() {
    local file=$1
    shift
    stderr=$(cat -- "$file")
    assert_one_bufferlock_line "$@"
}

# spawn_caller I ARGS...: `bufferlock cache --cache-dir $C ARGS...` in the
# background with stdout/stderr in $T/out.I / $T/err.I, and "STATUS MS" (exit
# status, wall time in ms) in $T/res.I.  The PID goes to CALLER_PIDS.
spawn_caller() {
    local i=$1
    shift
    (
        s=$(now_us)
        rc=0
        "$BL" cache --cache-dir "$C" "$@" </dev/null >"$T/out.$i" 2>"$T/err.$i" || rc=$?
        printf '%s %s\n' "$rc" $((($(now_us) - s) / 1000)) >"$T/res.$i"
    ) 3>&- &
    CALLER_PIDS+=("$!")
    track_pid "$!"
}

# spawn_subst_caller I ARGS...: the same, but bufferlock's stdout AND stderr
# are captured by $(...), which returns only once every holder of the pipe
# (a detached rebuild included) has closed it.  Output in $T/out.I.
spawn_subst_caller() {
    local i=$1
    shift
    (
        s=$(now_us)
        rc=0
        out=$("$BL" cache --cache-dir "$C" "$@" </dev/null 2>&1) || rc=$?
        e=$(now_us)
        printf '%s\n' "$out" >"$T/out.$i"
        printf '%s %s\n' "$rc" $(((e - s) / 1000)) >"$T/res.$i"
    ) 3>&- &
    CALLER_PIDS+=("$!")
    track_pid "$!"
}

# wait_results N [SECONDS]: bounded wait until N spawned callers have
# written their results; fails otherwise.
wait_results() {
    local want=$1 limit=${2:-30}
    poll_until "$limit" _results_at_least "$want" ||
        fail "fewer than $want callers finished within ${limit}s"
}

_results_at_least() { (($(find "$T" -maxdepth 1 -name 'res.*' -size +0 | wc -l) >= $1)); }

# wait_callers [SECONDS]: bounded wait for every spawned caller.
wait_callers() {
    local limit=${1:-30} pid
    for pid in "${CALLER_PIDS[@]}"; do
        wait_for_exit "$pid" "$limit" || fail "caller $pid still running after ${limit}s"
        wait "$pid" 2>/dev/null || true
    done
}

# caller_status I / caller_ms I: from $T/res.I.
caller_status() {
    local rc ms
    read -r rc ms <"$T/res.$1" || fail "no result for caller $1"
    printf '%s\n' "$rc"
}
caller_ms() {
    local rc ms
    read -r rc ms <"$T/res.$1" || fail "no result for caller $1"
    printf '%s\n' "$ms"
}

# flip_byte FILE OFFSET: invert the byte at OFFSET in place.
flip_byte() {
    local file=$1 off=$2 b
    b=$(od -An -tu1 -j "$off" -N 1 -- "$file" | tr -d ' ')
    [[ -n $b ]] || fail "cannot read byte $off of $file"
    # shellcheck disable=SC2059
    printf "$(printf '\\%03o' $((b ^ 0xff)))" |
        dd of="$file" bs=1 seek="$off" count=1 conv=notrunc status=none
}

# elapsed_ms SINCE_US: milliseconds since a now_us value (redis_helpers.bash
# has the same function).
if ! declare -F elapsed_ms >/dev/null; then
    elapsed_ms() {
        printf '%s\n' $((($(now_us) - $1) / 1000))
    }
fi

# sleep_until US: sleep until the now_us clock reaches US.
sleep_until() {
    local now
    now=$(now_us)
    if ((now < $1)); then
        sleep "$(awk -v d=$(($1 - now)) 'BEGIN { printf "%.3f", d / 1e6 }')"
    fi
}

# make_mkdist: $MKDIST, the build of the fleet suites.
make_mkdist() {
    # mkdist SIZE_KIB [SLEEP]: count a build, sleep, make ./dist: SIZE_KIB of
    # random bytes (another build never makes the same tree), a few small
    # files, an executable, a symlink.
    cat >"$T/bin/mkdist" <<EOF
#!/bin/sh
echo "\$\$" >>'$RUNS'
if [ -n "\${2:-}" ]; then sleep "\$2"; fi
mkdir -p dist/sub
head -c "\$((\$1 * 1024))" /dev/urandom >dist/big.bin
for i in 1 2 3 4 5; do echo "file \$i \$\$" >"dist/sub/f\$i.txt"; done
printf '#!/bin/sh\necho tool\n' >dist/tool.sh
chmod 755 dist/tool.sh
ln -s big.bin dist/latest
echo built
EOF
    chmod +x "$T/bin/mkdist"
    MKDIST="$T/bin/mkdist"
}

# tree_sum DIR: one digest of DIR's names, types, modes, bytes and link targets.
tree_sum() {
    (
        cd "$1" || exit 1
        find . -printf '%p %y %m %l\n' | LC_ALL=C sort
        find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
    ) | sha256sum | cut -d' ' -f1
}

# fleet_callers N STORE_OPTION...: N concurrent callers of `--output dist
# $K $MKDIST 2048 1` with STORE_OPTIONs, taking turns on two runners A and B
# (own HOME, own cache dir), each in its own tree $T/cI; then checks that
# every one exited 0, silent, printed "built", and got caller 0's tree.
# FLEET_TREE is that tree's tree_sum.
fleet_callers() {
    local n=$1 i name
    shift
    for ((i = 0; i < n; i++)); do
        name=A
        ((i % 2)) && name=B
        mkdir -p "$T/$name/home" "$T/c$i"
        cd "$T/c$i" || fail "no $T/c$i"
        HOME="$T/$name/home" XDG_CACHE_HOME='' C="$T/$name/cache" \
            spawn_caller "$i" "$@" --output dist "$K" "$MKDIST" 2048 1
    done
    cd "$T" || fail "no $T"
    wait_callers 120
    FLEET_TREE=$(tree_sum "$T/c0/dist")
    for ((i = 0; i < n; i++)); do
        assert_equal "$(caller_status "$i")" 0
        [[ ! -s $T/err.$i ]] || fail "caller $i stderr: $(cat "$T/err.$i")"
        assert_equal "$(cat "$T/out.$i")" built
        assert_equal "$(tree_sum "$T/c$i/dist")" "$FLEET_TREE"
    done
}

# on STORE: ON, the options of `bufferlock cache` with the test's cache
# directory on STORE (file, redis, or http: /cache/ of the test's nginx;
# http-r: the same with -r, whose Redis records the objects' last use;
# s3-r: the test's S3 store with -r).
on() {
    ON=(--cache-dir "$C")
    case $1 in
    file) ;;
    redis) ON+=(--store redis -r "$REDIS_URL") ;;
    http) ON+=(--store "$STORE") ;;
    http-r) ON+=(--store "$STORE" -r "$REDIS_URL") ;;
    s3-r) ON+=(--store "$S3_STORE" -r "$REDIS_URL") ;;
    *) fail "no store '$1'" ;;
    esac
}

# bl_on STORE ARGS...: `bufferlock cache` on STORE.
bl_on() {
    local store=$1
    shift
    on "$store"
    "$BL" cache "${ON[@]}" "$@"
}

# stop_at PID GLOB [BYTES [SKIP]]: lets PID start (it waits for $T/go), SIGSTOPs
# it as soon as a path matching GLOB exists (a file of BYTES or more; not
# below SKIP), and keeps
# it stopped if that path is still there once PID has stopped (STOP_AT: the
# path); status 2 (PID let go on) when it was past it, 1 when nothing
# matched within 60 s.
stop_at() {
    STOP_AT=$(python3 - "$T/go" "$@" <<'PY'
import glob, os, signal, sys, time
go, pid, pattern = sys.argv[1], int(sys.argv[2]), sys.argv[3]
least = int(sys.argv[4]) if len(sys.argv) > 4 else 0
skip = sys.argv[5] + "/" if len(sys.argv) > 5 else None
def match():
    for p in glob.glob(pattern):
        if skip and p.startswith(skip):
            continue
        try:
            if os.lstat(p).st_size >= least:
                return p
        except OSError:
            pass
def stopped():
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in "Tt"
    except OSError:
        return True
end = time.monotonic() + 60
open(go, "w").close()
while time.monotonic() < end:
    if match():
        os.kill(pid, signal.SIGSTOP)
        while not stopped():
            time.sleep(0.001)
        p = match()
        if p:
            print(p)
            sys.exit(0)
        os.kill(pid, signal.SIGCONT)
        sys.exit(2)
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(2)
    time.sleep(0.0005)
sys.exit(1)
PY
)
}
