# shellcheck shell=bash
# Shared helpers for the bufferlock black-box suites.
#
# Every .bats file does `load helpers`; the default setup/teardown defined here
# give each test a private lock directory and kill (by PID) every background
# process the test started.  A file that needs more set-up defines its own
# setup()/teardown() and calls common_setup/common_teardown from them.

bats_require_minimum_version 1.5.0

bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

REPO_ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
BL="${BUFFERLOCK_BIN:-$REPO_ROOT/build/bufferlock}"

# The key used by tests that need just one.
K=job

# Run the binary under test.
bl() {
    "$BL" "$@"
}

common_setup() {
    [[ -x $BL ]] || fail "bufferlock binary not found or not executable: $BL (set BUFFERLOCK_BIN)"
    # Isolate from the caller's environment: no BUFFERLOCK_* variable leaks in.
    # (No variable moves the default lock directory: a test that uses it runs
    # bufferlock in a mount namespace of its own, see private_run_lock.)
    local v
    for v in "${!BUFFERLOCK_@}"; do
        unset "$v"
    done
    unset REDISCLI_AUTH
    # every process this test starts inherits this marker (see descendants)
    export BATS_BL_OWNER="$BATS_TEST_TMPDIR"
    D="$BATS_TEST_TMPDIR/locks"
    T="$BATS_TEST_TMPDIR"
    BG_PIDS_FILE="$BATS_TEST_TMPDIR/.bg-pids"
    CLEANUP_PATHS_FILE="$BATS_TEST_TMPDIR/.cleanup-paths"
    : >"$BG_PIDS_FILE"
    : >"$CLEANUP_PATHS_FILE"
    HOLDER_PID=
}

setup() {
    common_setup
}

teardown() {
    common_teardown
}

common_teardown() {
    kill_tracked_pids
    # Remove paths outside BATS_TEST_TMPDIR that this test created (and only those).
    local p
    if [[ -f ${CLEANUP_PATHS_FILE:-} ]]; then
        while IFS= read -r p; do
            [[ -n $p && -e $p ]] && rm -rf -- "$p"
        done <"$CLEANUP_PATHS_FILE"
    fi
    return 0
}

# --- background processes ---------------------------------------------------

# track_pid PID...: kill these in teardown.
track_pid() {
    local pid
    for pid in "$@"; do
        [[ $pid =~ ^[0-9]+$ ]] && printf '%s\n' "$pid" >>"$BG_PIDS_FILE"
    done
    return 0
}

# track_path PATH: remove PATH in teardown (for things created outside
# BATS_TEST_TMPDIR, e.g. a world-readable directory under /tmp).
track_path() {
    printf '%s\n' "$1" >>"$CLEANUP_PATHS_FILE"
}

# pid_alive PID: true while the process exists and is not a zombie.
pid_alive() {
    local state
    [[ -r /proc/$1/stat ]] || return 1
    state=$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ -n $state && $state != Z && $state != X ]]
}

# started_by_this_test PID: PID carries this test's marker in its environment
# (a guard against PID reuse: PIDs wrap quickly on a busy machine).
started_by_this_test() {
    [[ -n ${BATS_BL_OWNER:-} ]] &&
        grep -qzxF -- "BATS_BL_OWNER=$BATS_BL_OWNER" "/proc/$1/environ" 2>/dev/null
}

# descendants PID...: the PIDs of all descendants of the given processes that
# this test started.
descendants() {
    local pid child
    for pid in "$@"; do
        for child in $(pgrep -P "$pid" 2>/dev/null); do
            started_by_this_test "$child" || continue
            printf '%s\n' "$child"
            descendants "$child"
        done
    done
}

kill_tracked_pids() {
    [[ -s ${BG_PIDS_FILE:-} ]] || return 0
    local pids=() pid
    mapfile -t pids <"$BG_PIDS_FILE"
    # a tracked process's own children (e.g. the command of bufferlock -o)
    # go too, so nothing outlives the test even if signal forwarding is broken
    mapfile -t -O "${#pids[@]}" pids < <(descendants "${pids[@]}")
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait_for_exit "$pid" 2 || kill -KILL "$pid" 2>/dev/null || true
    done
    : >"$BG_PIDS_FILE"
}

# poll_until SECONDS CMD...: runs CMD every 50 ms until it succeeds, for at
# most SECONDS, and once more at the end; its status is CMD's last one.  The
# one loop behind every wait_* helper.
poll_until() {
    local limit=$1 i n
    shift
    n=$(awk -v s="$limit" 'BEGIN { printf "%d", s * 20 }')
    for ((i = 0; i < n; i++)); do
        "$@" && return 0
        sleep 0.05
    done
    "$@"
}

_pid_gone() { ! pid_alive "$1"; }

# wait_for_exit PID [SECONDS]: bounded wait until PID has exited (default 10 s).
wait_for_exit() {
    poll_until "${2:-10}" _pid_gone "$1"
}

# reap PID: the exit status of background child PID, which must have exited
# (call wait_for_exit first so this can never hang).  Sets REAPED_STATUS.
reap() {
    REAPED_STATUS=0
    wait "$1" || REAPED_STATUS=$?
}

# wait_for_file FILE [SECONDS]: bounded wait until FILE exists and is non-empty.
wait_for_file() {
    poll_until "${2:-10}" test -s "$1"
}

# --- lock files -------------------------------------------------------------

# key_md5 KEY: lowercase hex MD5 of KEY's bytes.
key_md5() {
    local sum
    sum=$(printf %s "$1" | md5sum)
    printf '%s\n' "${sum%% *}"
}

# lock_path DIR KEY: where bufferlock (and flock(1) interop) put KEY's lock.
lock_path() {
    printf '%s/%s.lock\n' "$1" "$(key_md5 "$2")"
}

# /proc/locks identifies a file as MAJ:MIN:INODE (hex major/minor).
_proc_locks_id() {
    local ino maj min
    read -r ino maj min < <(stat -L -c '%i %Hd %Ld' -- "$1") || return 1
    printf '%02x:%02x:%s\n' "$maj" "$min" "$ino"
}

# lock_holders FILE: PIDs holding a lock on FILE (one a line), from /proc/locks.
# Non-intrusive: it never takes the lock itself.
lock_holders() {
    [[ -e $1 ]] || return 0
    local id
    id=$(_proc_locks_id "$1") || return 0
    awk -v id="$id" '$2 != "->" { for (i = 2; i <= NF; i++) if ($i == id) print $(i - 1) }' /proc/locks
}

# lock_waiters FILE: PIDs blocked in the kernel waiting for a lock on FILE.
lock_waiters() {
    [[ -e $1 ]] || return 0
    local id
    id=$(_proc_locks_id "$1") || return 0
    awk -v id="$id" '$2 == "->" { for (i = 3; i <= NF; i++) if ($i == id) print $(i - 1) }' /proc/locks
}

# lock_is_held DIR KEY: some process holds KEY's lock.
lock_is_held() {
    local path
    path=$(lock_path "$1" "$2")
    [[ -n $(lock_holders "$path") ]]
}

# wait_until_held DIR KEY [PID] [SECONDS]: bounded wait until KEY's lock is held
# (by PID if given).
wait_until_held() {
    local dir=$1 key=$2 pid=${3:-} limit=${4:-10}
    poll_until "$limit" _held "$(lock_path "$dir" "$key")" "$pid" ||
        fail "lock for key '$key' in $dir was not held${pid:+ by pid $pid} within ${limit}s"
}

# _held PATH [PID]: PATH's lock is held (by PID if not empty).
_held() {
    if [[ -n ${2:-} ]]; then
        grep -qx -- "$2" < <(lock_holders "$1")
    else
        [[ -n $(lock_holders "$1") ]]
    fi
}

# wait_until_free DIR KEY [SECONDS]
wait_until_free() {
    local dir=$1 key=$2 limit=${3:-10}
    poll_until "$limit" _free "$(lock_path "$dir" "$key")" ||
        fail "lock for key '$key' in $dir still held after ${limit}s"
}

_free() { ! _held "$1"; }

# wait_until_waiting DIR KEY PID [SECONDS]: bounded wait until PID is blocked in
# the kernel on KEY's lock.  Returns 1 (does not fail) on timeout.
wait_until_waiting() {
    poll_until "${4:-5}" _waiting "$(lock_path "$1" "$2")" "$3"
}

_waiting() { grep -qx -- "$2" < <(lock_waiters "$1"); }

# wait_until_exec PID NAME [SECONDS]: bounded wait until PID has exec'd the
# program NAME (its /proc comm).  bufferlock takes the lock before it execs, so
# "held by PID" alone does not mean the command's environment is in place yet.
wait_until_exec() {
    local pid=$1 name=$2 limit=${3:-10}
    poll_until "$limit" _comm_is "$pid" "$name" ||
        fail "pid $pid did not exec $name within ${limit}s (comm: $(cat "/proc/$pid/comm" 2>/dev/null || echo gone))"
}

_comm_is() { [[ $(cat "/proc/$1/comm" 2>/dev/null) == "$2" ]]; }

# flock_free FILE: flock(1) can take an exclusive lock on FILE right now.
flock_free() {
    flock -n -- "$1" true
}

# hold_lock DIR KEY [FLOCK-OPTIONS...]: a background flock(1) holds KEY's lock
# (running `sleep 300` in its own PID thanks to -F).  Sets HOLDER_PID and waits
# until the lock is really held.
hold_lock() {
    local dir=$1 key=$2 path
    shift 2
    mkdir -p -- "$dir"
    path=$(lock_path "$dir" "$key")
    flock "$@" -F -- "$path" sleep 300 </dev/null >/dev/null 2>&1 3>&- &
    HOLDER_PID=$!
    track_pid "$HOLDER_PID"
    wait_until_held "$dir" "$key" "$HOLDER_PID"
}

# bl_hold_lock DIR KEY [BUFFERLOCK-OPTIONS...]: a background bufferlock holds
# KEY's lock while it runs `sleep 300` (in bufferlock's own PID, or as its child
# with -o).  Sets HOLDER_PID to bufferlock's PID and waits until that PID really
# holds the lock.
bl_hold_lock() {
    local dir=$1 key=$2
    shift 2
    "$BL" "$@" -d "$dir" "$key" sleep 300 </dev/null >/dev/null 2>&1 3>&- &
    HOLDER_PID=$!
    track_pid "$HOLDER_PID"
    wait_until_held "$dir" "$key" "$HOLDER_PID"
}

# release_lock [PID]: kill the holder (default HOLDER_PID) and wait for it.
release_lock() {
    local pid=${1:-$HOLDER_PID}
    kill -KILL "$pid" 2>/dev/null || true
    wait_for_exit "$pid" 5 || fail "holder $pid did not exit"
    wait "$pid" 2>/dev/null || true
}

# --- time -------------------------------------------------------------------

# now_us: wall clock in microseconds.
now_us() {
    printf '%s\n' "${EPOCHREALTIME//[!0-9]/}"
}

# Timing bounds.  A bound is what the behaviour needs plus room for a loaded
# machine: measured on 2 cores with two CPU hogs and other builds running, a
# process start or a scheduler delay costs up to a few hundred ms (Release);
# the sanitizer build (ASan+UBSan) starts and runs several times slower.
# TIME_SCALE is that factor (BL_TIME_SCALE in the environment overrides it),
# computed once per file and inherited by its tests.
is_sanitizer_build() {
    grep -qa __asan_init "$BL" 2>/dev/null
}
if [[ -z ${BL_TIME_SCALE:-} ]]; then
    if is_sanitizer_build; then BL_TIME_SCALE=3; else BL_TIME_SCALE=1; fi
    export BL_TIME_SCALE
fi
TIME_SCALE=$BL_TIME_SCALE

# slack_ms MS: MS of room for load, times TIME_SCALE.
slack_ms() {
    printf '%s\n' $(($1 * TIME_SCALE))
}

# scaled_s SECONDS: SECONDS (a decimal) times TIME_SCALE, for durations given
# to the binary or to sleep when a case scales its whole timeline.
scaled_s() {
    awk -v s="$1" -v f="$TIME_SCALE" 'BEGIN { printf "%g\n", s * f }'
}

# GATE_WAIT: a sh script that waits until the file named by $0 exists (at
# most 60 s): a command that holds a lock exactly as long as a test needs,
# however slow the machine.  `sh -c "$GATE_WAIT" GATE`; open it with `: >GATE`.
# shellcheck disable=SC2016
GATE_WAIT='i=0; while [ ! -e "$0" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done'

# --- assertions -------------------------------------------------------------

# assert_one_bufferlock_line [SUBSTRING...]: $stderr (from run --separate-stderr)
# is exactly one line that starts with "bufferlock: " and contains each SUBSTRING.
assert_one_bufferlock_line() {
    if [[ -z ${stderr-} ]]; then
        fail "expected one 'bufferlock: ' line on stderr, got nothing"
        return
    fi
    if [[ $stderr == *$'\n'* ]]; then
        batslib_print_kv_single_or_multi 6 stderr "$stderr" |
            batslib_decorate "expected exactly one line on stderr" | fail
        return
    fi
    if [[ $stderr != 'bufferlock: '* ]]; then
        batslib_print_kv_single_or_multi 6 stderr "$stderr" |
            batslib_decorate "stderr line does not start with 'bufferlock: '" | fail
        return
    fi
    local s
    for s in "$@"; do
        if [[ $stderr != *"$s"* ]]; then
            batslib_print_kv_single 9 substring "$s" stderr "$stderr" |
                batslib_decorate "stderr line lacks expected text" | fail
            return
        fi
    done
}

# assert_busy_until_terminated PID WHAT: KEY's lock in $D is busy (-n gives 75)
# while PID (WHAT, for the message) runs, and free once PID has been sent
# SIGTERM and has exited.
assert_busy_until_terminated() {
    local pid=$1 what=$2
    run --separate-stderr bl -n -d "$D" "$K" true
    assert_failure 75
    kill -TERM "$pid"
    wait_for_exit "$pid" 5 || fail "$what did not exit after SIGTERM"
    run --separate-stderr bl -n -d "$D" "$K" true
    assert_success
}

# assert_usage_error [SUBSTRING...]: status 64, empty stdout, one usage line.
assert_usage_error() {
    assert_equal "$status" 64
    assert_equal "$output" ""
    assert_one_bufferlock_line "$@"
    assert_regex "$stderr" "\(see 'bufferlock --help'\)\$"
}

# assert_stderr_empty
assert_stderr_empty() {
    if [[ -n ${stderr-} ]]; then
        batslib_print_kv_single_or_multi 6 stderr "$stderr" |
            batslib_decorate "expected empty stderr" | fail
    fi
}

# assert_no_crash: the status is not a signal death / abort.
assert_no_crash() {
    if ((status >= 128 && status != 255)); then
        fail "bufferlock looks like it crashed: status $status"
    fi
}

# --- the default lock directory ------------------------------------------------

# private_run_lock [--no-run-lock]: a mount namespace of this test's own, kept
# by a background process (NS_PID, tracked), with an empty tmpfs on /run/lock
# -- or, with --no-run-lock, on /run, so that /run/lock does not exist there.
# bufferlock run through in_ns then takes its default lock directory there,
# never the machine's.  RUN_LOCK is that /run/lock as seen from outside (read
# and lock it from here as any directory).  Needs root.
private_run_lock() {
    is_root || skip "needs root for a mount namespace"
    # In a chroot whose / is not a mount point, the propagation of / cannot
    # be made private, and a mount made without that could reach the host.
    unshare -m --propagation private true 2>/dev/null ||
        skip "no private mount namespace here (is / a mount point?)"
    local on=/run/lock
    [[ ${1:-} == --no-run-lock ]] && on=/run
    unshare -m --propagation private \
        sh -c 'mount -t tmpfs -o mode=1777 tmpfs "$1" && echo ready && exec sleep 600' sh "$on" \
        </dev/null >"$T/ns.ready" 2>&1 3>&- &
    NS_PID=$!
    track_pid "$NS_PID"
    poll_until 10 grep -qx ready "$T/ns.ready" || fail "no mount namespace: $(cat "$T/ns.ready")"
    RUN_LOCK=/proc/$NS_PID/root/run/lock
}

# in_ns CMD...: CMD in the mount namespace of private_run_lock, in this root
# and this directory (setns alone would put it at the namespace's root: out
# of a chroot).
in_ns() {
    nsenter --mount --root --wd="$PWD" --target "$NS_PID" -- "$@"
}

# --- running as another user --------------------------------------------------

is_root() {
    [[ $(id -u) -eq 0 ]]
}

# make_public_dir: a fresh world-readable directory under /tmp holding a copy
# of the binary, for running it as an unprivileged user.  Sets PUB and PUB_BL.
make_public_dir() {
    PUB=$(mktemp -d /tmp/bufferlock-bats.XXXXXX)
    track_path "$PUB"
    chmod 0755 "$PUB"
    cp -- "$BL" "$PUB/bufferlock"
    chmod 0755 "$PUB/bufferlock"
    PUB_BL="$PUB/bufferlock"
}

# as_user UID CMD...: run CMD as UID (group UID, no supplementary groups) when
# root; as ourselves otherwise.
as_user() {
    local uid=$1
    shift
    if is_root; then
        setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@"
    else
        "$@"
    fi
}
