#!/usr/bin/env bats
# bufferlock cache --store http://… across a fleet (issue 33): runners that
# share no file system, one redis-server for the build lock (-r), one nginx
# for the blobs.  A runner restores what another built without building;
# concurrent callers on several runners build once and all get the same
# tree.  Without -r the lock is the file lock: one machine, one build.

bats_require_minimum_version 1.5.0

load http_helpers
load cache_helpers

setup_file() { http_redis_setup_file; }
teardown_file() { http_redis_teardown_file; }

setup() {
    http_redis_setup
    make_mkdist
}
teardown() { http_redis_teardown; }

# runner NAME [DIR] -- ARGS...: `bufferlock cache --store STORE -r REDIS ARGS...`
# on runner NAME: its own HOME (so its own default cache dir) and its own
# clone directory (DIR, default $T/NAME/repo).
runner() {
    local name=$1 dir=$T/$1/repo
    shift
    if [[ $1 != -- ]]; then
        dir=$1
        shift
    fi
    shift
    mkdir -p "$T/$name/home" "$dir"
    (cd "$dir" && HOME="$T/$name/home" XDG_CACHE_HOME='' \
        "$BL" cache --store "$STORE" -r "$REDIS_URL" "$@")
}

# assert_no_local_entries NAME: runner NAME wrote no entry of its own.
assert_no_local_entries() {
    local found
    found=$(find "$T/$1/home" \( -name '*.entry' -o -name '.tmp-*' \) -print 2>/dev/null)
    [[ -z $found ]] || fail "entry files on runner $1: $found"
}

@test "runner B restores runner A's 40 MiB --output from the http store, without building" {
    run --separate-stderr runner A -- --output dist "$K" "$MKDIST" 40960
    assert_success
    assert_output built
    assert_stderr_empty
    assert_regex "$(objects)" "^$(key_md5 "$K")\.[0-9a-f]{32}\.entry\$"
    run --separate-stderr runner B -- --output dist "$K" "$MKDIST" 40960
    assert_success
    assert_output built
    assert_stderr_empty
    assert_runs 1
    assert_equal "$(tree_sum "$T/B/repo/dist")" "$(tree_sum "$T/A/repo/dist")"
    assert_no_local_entries A
    assert_no_local_entries B
    # The lock lived on Redis, not in a lock file of a runner.
    local locks
    locks=$(find "$T/A/home" "$T/B/home" -name '*.lock' -print 2>/dev/null)
    [[ -z $locks ]] || fail "lock files on the runners: $locks"
}

@test "10 concurrent callers on two runners, a 1 s build: one build, the same tree for every caller" {
    fleet_callers 10 --store "$STORE" -r "$REDIS_URL"
    local want=$FLEET_TREE
    assert_runs 1
    assert_regex "$(objects)" "^$(key_md5 "$K")\.[0-9a-f]{32}\.entry\$"
    # A third runner, later, is served the same tree.
    run --separate-stderr runner C -- --output dist "$K" "$MKDIST" 2048
    assert_success
    assert_stderr_empty
    assert_equal "$(tree_sum "$T/C/repo/dist")" "$want"
    assert_runs 1
}

@test "without -r the lock is the file lock: 6 callers on one machine build once" {
    local i
    for ((i = 0; i < 6; i++)); do
        spawn_caller "$i" --store "$STORE" "$K" "$COUNTED" 1
    done
    wait_callers 60
    for ((i = 0; i < 6; i++)); do
        assert_equal "$(caller_status "$i")" 0
        [[ ! -s $T/err.$i ]] || fail "caller $i stderr: $(cat "$T/err.$i")"
        assert_same_bytes "$T/out.0" "$T/out.$i"
    done
    [[ $(cat "$T/out.0") == "run "* ]] || fail "caller 0 printed '$(cat "$T/out.0")'"
    assert_runs 1
    # The lock file is in the cache dir's locks; the entry is not.
    assert_file_exists "$(lock_path "$C/locks" "$K")"
    assert_file_not_exists "$(entry_path "$K")"
    assert_file_exists "$(obj_path "$K")"
}

@test "an upload that waits for its server still renews the lock (--ttl 1) and passes signals on" {
    start_fault_server putstall
    "$BL" cache --cache-dir "$C" -r "$REDIS_URL" --ttl 1 --store "$FAULT_URL" --store-timeout 6 "$K" \
        sh -c 'echo $$ > "$0"; exec head -c 64M /dev/urandom' "$T/child" </dev/null >/dev/null 2>"$T/err" 3>&- &
    local bl=$! child locks
    track_pid "$bl"
    poll_until 10 grep -q '^PUT ' "$FAULT_LOG" || fail "no PUT reached the server: $(cat "$T/err")"
    child=$(cat "$T/child")
    # The server reads nothing: the upload waits (incompressible bytes: the
    # parts are full), the command blocks on its pipe, for longer than the
    # TTL. The lock is renewed all the while.
    sleep 2.5
    pid_alive "$child" || fail "the command ended: $(cat "$T/err")"
    locks=$(rcli --scan --pattern 'buffer:lock:*')
    [[ -n $locks ]] || fail "the lock expired while the upload waited: $(cat "$T/err")"
    # SIGTERM reaches the command while the upload still waits.
    kill -TERM "$bl"
    local t0
    t0=$(now_us)
    wait_for_exit "$child" 3 || fail "the command did not get the SIGTERM"
    wait_for_exit "$bl" 15 || fail "bufferlock did not finish"
    reap "$bl"
    assert_equal "$REAPED_STATUS" 143
    # The command failed: its upload is given up at once, not waited out
    # (--store-timeout 6), and the lock is released while it is still ours.
    (($(elapsed_ms "$t0") < 4000)) || fail "ended $(elapsed_ms "$t0") ms after the SIGTERM"
    run cat "$T/err"
    [[ $output != *lost* ]] || fail "stderr: $output"
    [[ -z $(rcli --scan --pattern 'buffer:lock:*') ]] || fail "the lock was not released"
}

# _lock_waiters_at_least N: N processes wait in the kernel for $K's lock in $C/locks.
_lock_waiters_at_least() { (($(lock_waiters "$(lock_path "$C/locks" "$K")" | wc -l) >= $1)); }

@test "waiters release the lock before they restore: 3 slow restores side by side, the lock free meanwhile" {
    # /slow/ answers at 1 MiB/s a connection: a 6 MiB --output takes each
    # waiter about 6 s to read. Read under the lock, one after the other,
    # the last would be done 18 s after the build.
    local slow i t_end start last=0 ms
    slow=$(http_url slow)
    mkdir -p "$T/c0"
    cd "$T/c0"
    spawn_caller 0 --store "$slow" --output dist "$K" sh -c "$GATE_WAIT"'; exec "$1" 6144' "$T/gate" "$MKDIST"
    wait_until_held "$C/locks" "$K"
    for i in 1 2 3; do
        mkdir -p "$T/c$i"
        cd "$T/c$i"
        start[i]=$(now_us)
        spawn_caller "$i" --store "$slow" --output dist "$K" "$MKDIST" 6144
    done
    cd "$T"
    poll_until 20 _lock_waiters_at_least 3 || fail "the waiters did not all wait for the lock"
    : >"$T/gate"
    wait_results 1 60
    t_end=$(now_us)
    assert_equal "$(caller_status 0)" 0
    # Each waiter found the entry and let the lock go before reading it.
    sleep 1.5
    for i in 1 2 3; do
        [[ ! -e $T/res.$i ]] || fail "waiter $i was done already: the restores were not slow"
    done
    ! lock_is_held "$C/locks" "$K" || fail "a waiter holds the lock while it reads the entry"
    wait_callers 120
    for i in 1 2 3; do
        assert_equal "$(caller_status "$i")" 0
        [[ ! -s $T/err.$i ]] || fail "waiter $i stderr: $(cat "$T/err.$i")"
        assert_equal "$(cat "$T/out.$i")" built
        assert_equal "$(tree_sum "$T/c$i/dist")" "$(tree_sum "$T/c0/dist")"
        ms=$(((start[i] / 1000 + $(caller_ms "$i")) - t_end / 1000))
        ((ms > last)) && last=$ms
    done
    assert_runs 1
    # Side by side: about one read (6 s) after the build, far from three.
    echo "# the last waiter was done $last ms after the build" >&3
    ((last < 12000)) || fail "the last waiter was done $last ms after the build"
}

@test "a stop signal during the upload after the build (INT, TERM): abandoned at once, exit 128+N" {
    start_fault_server putstall
    local sig want bl t0 waited n=0
    mkdir -p "$T/w"
    for sig in INT TERM; do
        want=130
        [[ $sig == TERM ]] && want=143
        # The command ends at once; its 32 MiB --output archive is sent after
        # it, to a server that reads nothing: the upload waits (--store-timeout 30).
        (cd "$T/w" && exec "$BL" cache --cache-dir "$C" --store "$FAULT_URL" --store-timeout 30 \
            --output dist "$K" "$MKDIST" 32768) </dev/null >"$T/out" 2>"$T/err" 3>&- &
        bl=$!
        track_pid "$bl"
        n=$((n + 1))
        poll_until 20 _put_count_at_least "$n" || fail "no PUT reached the server: $(cat "$T/err")"
        sleep 1
        pid_alive "$bl" || fail "bufferlock ended before the signal: $(cat "$T/err")"
        t0=$(now_us)
        kill "-$sig" "$bl"
        wait_for_exit "$bl" 10 || fail "SIG$sig did not end the upload within 10 s"
        waited=$(elapsed_ms "$t0")
        reap "$bl"
        assert_equal "$REAPED_STATUS" "$want"
        echo "# SIG$sig: bufferlock ended $waited ms after it" >&3
        assert_within "$waited" 2000
        assert_equal "$(cat "$T/out")" built
        run cat "$T/err"
        [[ $output != *bufferlock:* ]] || fail "stderr: $output"
    done
    assert_runs 2
}

# _put_count_at_least N: the fault server logged N PUTs or more.
_put_count_at_least() { (($(grep -c '^PUT ' "$FAULT_LOG") >= $1)); }
