#!/usr/bin/env bats
# bufferlock cache when things go wrong: killed builders, damaged entries,
# consumers that stop reading, full or read-only disks, lock errors, --gc.

load helpers
load cache_helpers

setup() { cache_setup; }
teardown() { cache_teardown; }

# start_build_then_kill KEY: a build of KEY that prints a line and sleeps;
# once its temporary file exists, SIGKILL bufferlock and its command.
start_build_then_kill() {
    local key=$1
    BG_OUT="$T/killed.out" BG_ERR="$T/killed.err" \
        blc_bg "$key" sh -c 'echo partial-output; exec sleep 30'
    wait_for_temp_file 10
    wait_for_file "$T/killed.out" 10 || fail "the build printed nothing"
    kill_tree "$BG_PID"
}

# assert_warned_and_rebuilt KEY: the next call of KEY warns once (ignoring the
# entry, rebuilding it) and prints the new output; the call after is a clean hit.
assert_warned_and_rebuilt() {
    local key=$1
    run --separate-stderr blc "$key" "$COUNTED" 0 rebuilt-value
    assert_success
    assert_output rebuilt-value
    assert_one_bufferlock_line "ignoring cache entry" "$(entry_path "$key")" "rebuilding it"
    run --separate-stderr blc "$key" "$COUNTED" 0 third-value
    assert_success
    assert_output rebuilt-value
    assert_stderr_empty
}

# store_seq_entry N: KEY's entry holds the output of `seq 1 N`; sets E to its
# path and SIZE to its size in bytes.
store_seq_entry() {
    run --separate-stderr blc "$K" sh -c "seq 1 $1"
    assert_success
    E=$(entry_path "$K")
    SIZE=$(stat -c %s "$E")
}

@test "a SIGKILLed builder leaves at most a temporary file, no entry; the next call rebuilds" {
    start_build_then_kill "$K"
    assert_file_not_exists "$(entry_path "$K")"
    local f
    for f in "$C"/* "$C"/.[!.]*; do
        [[ -e $f ]] || continue
        case ${f##*/} in
        locks | .tmp-*) ;;
        *) fail "unexpected file left by a killed builder: $f" ;;
        esac
    done
    run --separate-stderr blc "$K" "$COUNTED" 0 rebuilt-value
    assert_success
    assert_output rebuilt-value
    assert_stderr_empty
    assert_runs 1
    run --separate-stderr blc "$K" false
    assert_output rebuilt-value
}

@test "a truncated entry gives one warning and is rebuilt" {
    store_seq_entry 200
    truncate -s $((SIZE - 5)) "$E"
    assert_warned_and_rebuilt "$K"
}

@test "entries truncated to 0 bytes, inside the header, or by one byte are each rebuilt with a warning" {
    local cut
    for cut in 0 20 -1; do
        blc --drop "$K"
        store_seq_entry 200
        if ((cut < 0)); then
            truncate -s $((SIZE + cut)) "$E"
        else
            truncate -s "$cut" "$E"
        fi
        assert_warned_and_rebuilt "$K"
    done
}

@test "an entry with one byte flipped in the middle gives a warning and is rebuilt" {
    store_seq_entry 1000
    flip_byte "$E" $((SIZE / 2))
    assert_equal "$(stat -c %s "$E")" "$SIZE"
    assert_warned_and_rebuilt "$K"
}

@test "an entry with a flipped byte in its header (the creation time) or trailer is rebuilt" {
    local off
    for off in 17 -1; do
        blc --drop "$K"
        store_seq_entry 1000
        ((off < 0)) && off=$((SIZE + off))
        flip_byte "$E" "$off"
        assert_warned_and_rebuilt "$K"
    done
}

@test "a sound entry of another KEY at KEY's path (an MD5 collision) is not served; KEY is rebuilt" {
    blc other sh -c 'echo for-other' >/dev/null
    mv -f -- "$(entry_path other)" "$(entry_path "$K")"
    run --separate-stderr blc "$K" "$COUNTED" 0 rebuilt-value
    assert_success
    assert_output rebuilt-value
    # (A warning is allowed but not required: the entry is not corrupt.)
    run --separate-stderr blc "$K" false
    assert_success
    assert_output rebuilt-value
    assert_stderr_empty
}

@test "a foreign file at the entry path gives a warning and is rebuilt" {
    mkdir -p "$C"
    head -c 3000 /dev/urandom | base64 >"$(entry_path "$K")"
    assert_warned_and_rebuilt "$K"
    assert_runs 1
}

@test "'| head -c 1': the status is still the command's and the entry is complete" {
    head -c 1000000 /dev/urandom >"$T/src"
    local st
    set +e
    blc "$K" sh -c 'echo run >>"$1"; cat "$2"; echo tail-line' _ "$RUNS" "$T/src" 2>"$T/err" | head -c 1 >"$T/first"
    st=("${PIPESTATUS[@]}")
    set -e
    assert_equal "${st[0]}" 0
    assert_equal "$(stat -c %s "$T/first")" 1
    assert_runs 1
    { cat "$T/src"; echo tail-line; } >"$T/want"
    blc "$K" false >"$T/hit"
    assert_same_bytes "$T/want" "$T/hit"
    assert_runs 1
}

@test "'| head -c 1' with a failing command: the status is the command's, nothing stored" {
    head -c 1000000 /dev/urandom >"$T/src"
    local st
    set +e
    blc "$K" sh -c 'cat "$1"; exit 7' _ "$T/src" 2>"$T/err" | head -c 1 >/dev/null
    st=("${PIPESTATUS[@]}")
    set -e
    assert_equal "${st[0]}" 7
    assert_no_entry "$K"
}

@test "disk full (ulimit -f): full output, one 'not stored' warning, the command's status, no entry" {
    head -c 3000000 /dev/urandom >"$T/src"
    local st
    set +e
    (
        # 1 MiB: the entry (3 MB) does not fit; the other files the process
        # writes do (a coverage build's counters, up to some 400 KiB).
        ulimit -f 1024
        exec "$BL" cache --cache-dir "$C" "$K" cat "$T/src"
    ) 2>"$T/err" | cat >"$T/out"
    st=("${PIPESTATUS[@]}")
    set -e
    assert_equal "${st[0]}" 0
    assert_same_bytes "$T/src" "$T/out"
    assert_file_one_warning "$T/err" "not stored"
    assert_no_entry "$K"
    # A later call (no limit) builds and stores it.
    run --separate-stderr blc "$K" echo later
    assert_success
    assert_output later
    assert_file_exists "$(entry_path "$K")"
}

@test "disk full with a failing command: the status is still the command's" {
    head -c 3000000 /dev/urandom >"$T/src"
    local st
    set +e
    (
        # 1 MiB: the entry (3 MB) does not fit; the other files the process
        # writes do (a coverage build's counters, up to some 400 KiB).
        ulimit -f 1024
        exec "$BL" cache --cache-dir "$C" "$K" sh -c 'cat "$1"; exit 6' _ "$T/src"
    ) 2>"$T/err" | cat >"$T/out"
    st=("${PIPESTATUS[@]}")
    set -e
    assert_equal "${st[0]}" 6
    assert_same_bytes "$T/src" "$T/out"
    assert_no_entry "$K"
}

@test "read-only cache dir: output complete, one 'not stored' warning, status 0" {
    local cache bin src runner=()
    if is_root; then
        make_public_dir
        cache="$PUB/cache"
        bin=$PUB_BL
        src="$PUB/src"
        runner=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
        mkdir -p "$cache/locks"
        chown -R 65534:65534 "$cache"
    else
        cache="$T/rocache"
        bin=$BL
        src="$T/src"
        mkdir -p "$cache/locks"
    fi
    head -c 300000 /dev/urandom >"$src"
    chmod 0644 "$src"
    chmod 0500 "$cache"
    local rc=0
    (cd / && "${runner[@]}" "$bin" cache --cache-dir "$cache" "$K" cat "$src") >"$T/out" 2>"$T/err" || rc=$?
    chmod 0700 "$cache"
    assert_equal "$rc" 0
    assert_same_bytes "$src" "$T/out"
    assert_file_one_warning "$T/err" "not stored"
    assert_file_not_exists "$(entry_path "$K" "$cache")"
    [[ -z $(temp_files "$cache") ]] || fail "temporary files left: $(temp_files "$cache")"
}

@test "cache dir removed during the build: output complete, one 'not stored' warning, status 0" {
    blc_bg "$K" sh -c 'echo before; sleep 1; echo after'
    wait_for_temp_file 10
    rm -rf -- "$C"
    wait_for_exit "$BG_PID" 10 || fail "the build did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.out")" $'before\nafter'
    assert_file_one_warning "$T/bg.err" "not stored"
}

@test "the lock dir cannot be created (a FILE named locks): 69 and one line; the command does not run" {
    mkdir -p "$C"
    echo in-the-way >"$C/locks"
    run --separate-stderr blc "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line
    assert_file_not_exists "$T/ran"
    assert_file_not_exists "$(entry_path "$K")"

    run --separate-stderr blc --error-exit 9 "$K" touch "$T/ran"
    assert_failure 9
    assert_file_not_exists "$T/ran"
}

@test "the lock dir cannot be created, --fail-open: the command runs, output printed, a warning" {
    mkdir -p "$C"
    echo in-the-way >"$C/locks"
    run --separate-stderr blc --fail-open "$K" "$COUNTED" 0 fail-open-output
    assert_success
    assert_output fail-open-output
    assert_one_bufferlock_line
    assert_runs 1
    # "a build without lock or cache": nothing stored.
    assert_no_entry "$K"

    run --separate-stderr blc --fail-open "$K" sh -c 'echo x; exit 4'
    assert_failure 4
    assert_output x
}

# wait_until_temp_locked PID: bounded wait until a temporary file exists
# and PID holds its lock (what tells --gc that the build is running); sets TMPF.
wait_until_temp_locked() {
    local i
    for ((i = 0; i < 200; i++)); do
        TMPF=$(temp_files | head -n 1)
        [[ -n $TMPF ]] && grep -qx -- "$1" < <(lock_holders "$TMPF") && return 0
        sleep 0.05
    done
    fail "no temporary file locked by $1 within 10 s"
}

@test "--gc during a running build keeps its temporary file; the build publishes" {
    blc_bg "$K" sh -c "echo before; while [ ! -e '$T/gate' ]; do sleep 0.05; done; echo after"
    wait_until_temp_locked "$BG_PID"
    local tmp=$TMPF
    run --separate-stderr blc --gc
    assert_success
    assert_output ""
    assert_file_exists "$tmp"
    run --separate-stderr blc --max-age 1 --gc
    assert_success
    assert_file_exists "$tmp"
    : >"$T/gate"
    wait_for_exit "$BG_PID" 10 || fail "the build did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.out")" $'before\nafter'
    assert_file_not_exists "$tmp"
    run --separate-stderr blc "$K" false
    assert_success
    assert_output $'before\nafter'
}

@test "--gc removes dead builders' temp files and corrupt entries; with --max-age, old entries" {
    # Killed builder: a temp file nobody holds.
    start_build_then_kill killed
    local dead_tmp
    dead_tmp=$(temp_files)
    [[ -n $dead_tmp ]] || fail "no temp file left by the killed builder"
    # A made-up leftover temp file as well.
    printf 'junk' >"$C/.tmp-$(key_md5 junk)-999999-abcdef"
    # Corrupt entry.
    blc corrupt sh -c 'seq 1 1000' >/dev/null
    flip_byte "$(entry_path corrupt)" 600
    # Old and fresh entries, built 1.5 s apart.
    blc old echo old >/dev/null
    local old_built fresh_start
    old_built=$(now_us)
    sleep 1.5
    fresh_start=$(now_us)
    blc fresh echo fresh >/dev/null

    run --separate-stderr blc --gc
    assert_success
    assert_output ""
    assert_stderr_empty
    [[ -z $(temp_files) ]] || fail "temp files left by --gc: $(temp_files)"
    assert_file_not_exists "$(entry_path corrupt)"
    assert_file_exists "$(entry_path old)"
    assert_file_exists "$(entry_path fresh)"

    # A --max-age halfway between the two ages (however long the steps
    # above took on a loaded machine): 0.75 s of room on each side.
    local now max_age
    now=$(now_us)
    max_age=$(awk -v a=$((now - old_built)) -v f=$((now - fresh_start)) 'BEGIN { printf "%.3f", (a + f) / 2e6 }')
    run --separate-stderr blc -v --max-age "$max_age" --gc
    assert_success
    assert_output ""
    # One line for the entry removed (-v), then the count.
    assert_equal "${#stderr_lines[@]}" 2
    assert_regex "${stderr_lines[0]}" "^bufferlock: removed 'old' \(inputs -, [0-9]+ bytes\) from $(entry_path old): expired\$"
    assert_equal "${stderr_lines[1]}" "bufferlock: removed 1 entries and 0 temporary files from $C"
    assert_file_not_exists "$(entry_path old)"
    assert_file_exists "$(entry_path fresh)"
    run --separate-stderr blc fresh false
    assert_success
    assert_output fresh
}

@test "--gc between a build's creating its temporary file and locking it: the build still publishes" {
    command -v strace >/dev/null || skip "strace is not installed"
    # strace holds the builder's second flock(2), the one of its temporary
    # file (the first takes KEY's lock), for 5 s: the file is there, unlocked,
    # as a dead builder's would be. (LeakSanitizer cannot run under ptrace.)
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
        strace -qq -o /dev/null -e trace=flock -e inject=flock:delay_enter=5000000:when=2 \
        "$BL" cache --cache-dir "$C" "$K" echo built </dev/null >"$T/bg.out" 2>"$T/bg.err" 3>&- &
    BG_PID=$!
    track_pid "$BG_PID"
    wait_for_temp_file 10
    local tmp=$TMPF
    run --separate-stderr blc -v --gc
    assert_success
    assert_equal "${#stderr_lines[@]}" 2
    assert_equal "${stderr_lines[0]}" "bufferlock: removed $tmp: leftover of a build that ended"
    assert_equal "${stderr_lines[1]}" "bufferlock: removed 0 entries and 1 temporary files from $C"
    assert_file_not_exists "$tmp"
    # The builder finds its file gone once it holds the lock, and makes another.
    wait_for_exit "$BG_PID" 30 || fail "the build did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.out")" built
    [[ ! -s $T/bg.err ]] || fail "build stderr: $(cat "$T/bg.err")"
    assert_file_exists "$(entry_path "$K")"
    [[ -z $(temp_files) ]] || fail "temporary files left: $(temp_files)"
    run --separate-stderr blc "$K" false
    assert_success
    assert_output built
}

@test "--gc on a missing or empty cache dir exits 0" {
    run --separate-stderr blc --gc
    assert_success
    assert_output ""
    mkdir -p "$C"
    run --separate-stderr blc --max-age 5 --gc
    assert_success
    assert_output ""
}
