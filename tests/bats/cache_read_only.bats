#!/usr/bin/env bats
# bufferlock cache --read-only (SPEC §22) on the file, Redis and http stores:
# hits are served, nothing is written to the store (each store checked from
# outside: the cache directory, Redis MONITOR, nginx's access log); a miss
# during a build waits for it and is served, a miss without one runs the
# command unlocked and stores nothing, so that a trusted build of the same
# KEY starts at once; --force, --drop and --gc with it are usage errors.

bats_require_minimum_version 1.5.0

load http_helpers
load cache_helpers

setup_file() { http_redis_setup_file; }
teardown_file() { http_redis_teardown_file; }

setup() {
    http_redis_setup
    MONITOR_PID=
}
teardown() { http_redis_teardown; }

# state STORE: what STORE holds, seen from outside: the cache directory's
# files with their sizes and times (all stores: the file store's entries,
# locks and stat cache; nothing for the others), the entries' last use, the Redis keys with their
# values' digests (the store's keys), the http store's objects.
state() {
    find "$C" -printf '%P %y %s %T@\n' 2>/dev/null | LC_ALL=C sort
    # The file store's entries' last use (SPEC §22): their access time.
    find "$C" -maxdepth 1 -name '*.entry' -printf '%P used %A@\n' 2>/dev/null | LC_ALL=C sort
    case $1 in
    redis)
        local k
        # The store's keys: entries and builds (a lock's wake list expires by itself).
        for k in $(rcli --scan | grep -E ':(entry|tmp)' | LC_ALL=C sort); do
            printf '%s %s\n' "$k" "$(rcli DUMP "$k" | sha256sum | cut -c1-16)"
        done
        ;;
    http) find "$(obj_dir)" -type f -printf '%P %s %T@\n' | LC_ALL=C sort ;;
    esac
}

# start_monitor: redis-cli MONITOR on the shared server into $T/monitor
# (stopped by PID in stop_monitor, or in teardown).
start_monitor() {
    timeout 120 "$REDIS_CLI_BIN" -h 127.0.0.1 -p "$REDIS_PORT" MONITOR >"$T/monitor" 2>&1 3>&- &
    MONITOR_PID=$!
    track_pid "$MONITOR_PID"
    poll_until 10 grep -qx OK "$T/monitor" || fail "MONITOR did not start: $(cat "$T/monitor")"
}

# stop_monitor: once the server has sent MONITOR every command before it.
stop_monitor() {
    rcli ECHO monitor-end >/dev/null
    poll_until 10 grep -q '"monitor-end"' "$T/monitor" || fail "MONITOR missed the last command"
    kill "$MONITOR_PID" 2>/dev/null || true
    wait "$MONITOR_PID" 2>/dev/null || true
}

# monitored_writes: the commands MONITOR saw (scripts' included) that Redis
# flags as writes, one a line.
monitored_writes() {
    local cmd
    for cmd in $(sed -nE 's/^[0-9.]+ \[[^]]*\] "([^"]+)".*/\1/p' "$T/monitor" | tr 'A-Z' 'a-z' | LC_ALL=C sort -u); do
        rcli COMMAND INFO "$cmd" | grep -qx write && printf '%s\n' "$cmd"
    done
    return 0
}

# assert_monitored_some CMD: MONITOR saw CMD (the check sees bufferlock's commands).
assert_monitored_some() {
    grep -qi "\"$1\"" "$T/monitor" || fail "MONITOR saw no $1: $(head -c 600 "$T/monitor")"
}

# writes_nothing STORE: a read-only hit, and a read-only miss (with --depends,
# whose file states are cached for the next call of a writer), against a store
# the job could write, leave it as it was; the miss runs its command each time.
writes_nothing() {
    local store=$1 before
    echo dep >"$T/dep"
    run --separate-stderr bl_on "$store" "$K" "$COUNTED"
    assert_success
    local built=$output
    # Past the racy window (2 s) of its change, a reading of dep would be
    # recorded in the stat cache, which lives in the cache directory.
    sleep 2.2
    before=$(state "$store")
    [[ -n $before ]] || fail "the check sees nothing"
    local requests_before
    requests_before=$(requests | wc -l)
    [[ $store != redis ]] || start_monitor
    run --separate-stderr bl_on "$store" --read-only "$K" "$COUNTED"
    assert_success
    assert_stderr_empty
    assert_output "$built"
    assert_runs 1
    local round # not i: bats' run sets an i of its own
    for round in 1 2; do
        run --separate-stderr bl_on "$store" --read-only --depends "$T/dep" other "$COUNTED" 0 "miss $round"
        assert_success
        assert_stderr_empty
        assert_output "miss $round"
    done
    assert_runs 3
    assert_equal "$(state "$store")" "$before"
    case $store in
    redis)
        stop_monitor
        assert_monitored_some hmget
        assert_monitored_some pttl
        assert_equal "$(monitored_writes)" ""
        ;;
    http)
        local since
        since=$(requests_since "$requests_before")
        grep -q '^GET ' <<<"$since" || fail "no GET: the check sees nothing"
        ! grep -vE '^(GET|HEAD) ' <<<"$since" || fail "the read-only job sent: $since"
        ;;
    esac
}

@test "file: a read-only hit and misses write nothing in the cache directory" {
    writes_nothing file
}

@test "redis: a read-only hit and misses send Redis no write command (MONITOR)" {
    writes_nothing redis
}

@test "http: a read-only hit and misses send nginx only GET and HEAD" {
    writes_nothing http
}

@test "file: a read-only miss without a cache directory creates none" {
    echo dep >"$T/dep"
    sleep 2.2 # past the racy window: a writer would record dep in a stat cache in $C
    run --separate-stderr "$BL" cache --cache-dir "$C" --read-only --depends "$T/dep" "$K" echo ran
    assert_success
    assert_output ran
    [[ ! -e $C ]] || fail "$C was made: $(find "$C")"
}

# served_by_build STORE: a read-only miss while a trusted build of the same
# KEY and inputs runs waits for it, is served its entry, and builds nothing.
served_by_build() {
    local store=$1
    on "$store"
    BG_OUT="$T/builder.out" BG_ERR="$T/builder.err" blc_bg "${ON[@]:2}" "$K" "$GATED" built-by-trusted
    poll_until 20 _runs_at_least 1 || fail "the trusted build did not start"
    spawn_caller 0 "${ON[@]:2}" --read-only "$K" "$COUNTED" 0 read-only-built
    # It waits: still running a while later, having run nothing.
    sleep "$(scaled_s 1)"
    [[ ! -e $T/res.0 ]] || fail "the read-only caller ended during the build: $(cat "$T/res.0") $(cat "$T/err.0")"
    open_gate
    wait_callers 60
    assert_equal "$(caller_status 0)" 0
    assert_equal "$(cat "$T/out.0")" built-by-trusted
    [[ ! -s $T/err.0 ]] || fail "read-only stderr: $(cat "$T/err.0")"
    wait_for_exit "$BG_PID" 30 || fail "the trusted build did not end"
    assert_equal "$(cat "$T/builder.out")" built-by-trusted
    assert_runs 1
}

@test "file: a read-only miss during a build in progress waits and is served the new entry, building nothing" {
    served_by_build file
}

@test "redis: a read-only miss during a build in progress waits and is served the new entry, building nothing" {
    served_by_build redis
}

@test "http: a read-only miss during a build in progress waits and is served the new entry, building nothing" {
    served_by_build http
}

# unlocked_miss STORE: a read-only miss with no build in progress runs its
# command without the lock: a trusted build of the same KEY started while it
# runs starts and ends at once; the read-only output is stored nowhere.
unlocked_miss() {
    local store=$1
    on "$store"
    spawn_caller ro "${ON[@]:2}" --read-only "$K" "$GATED" read-only-output
    poll_until 20 _runs_at_least 1 || fail "the read-only command did not start"
    spawn_caller trusted "${ON[@]:2}" "$K" "$COUNTED" 0 trusted-output
    poll_until "$(scaled_s 10)" test -s "$T/res.trusted" ||
        fail "the trusted build was held up by the read-only job: $(cat "$T/err.trusted")"
    assert_equal "$(caller_status trusted)" 0
    assert_equal "$(cat "$T/out.trusted")" trusted-output
    [[ ! -e $T/res.ro ]] || fail "the read-only command ended before the gate opened"
    open_gate
    wait_callers 60
    assert_equal "$(caller_status ro)" 0
    assert_equal "$(cat "$T/out.ro")" read-only-output
    [[ ! -s $T/err.ro ]] || fail "read-only stderr: $(cat "$T/err.ro")"
    assert_runs 2
    # The entry is the trusted build's, whoever ended last.
    run --separate-stderr bl_on "$store" "$K" false
    assert_success
    assert_output trusted-output
}

@test "file: a read-only miss with no build runs unlocked; a trusted build started meanwhile starts at once" {
    unlocked_miss file
}

@test "redis: a read-only miss with no build runs unlocked; a trusted build started meanwhile starts at once" {
    unlocked_miss redis
}

@test "http: a read-only miss with no build runs unlocked; a trusted build started meanwhile starts at once" {
    unlocked_miss http
}

@test "a read-only miss stores nothing: the next caller runs the command again" {
    local store
    for store in file redis http; do
        run --separate-stderr bl_on "$store" --read-only "k-$store" echo "$store"
        assert_success
        assert_output "$store"
        run --separate-stderr bl_on "$store" "k-$store" echo "$store again"
        assert_success
        assert_output "$store again"
    done
    assert_equal "$(rcli --scan --pattern '*:entry' | wc -l)" 1
    assert_equal "$(objects | wc -l)" 1
}

@test "--force, --drop and --gc with --read-only, or with BUFFERLOCK_CACHE_READ_ONLY=1, are usage errors naming both" {
    local opt
    for opt in --force --drop --gc; do
        local args=("$opt")
        [[ $opt == --gc ]] || args+=("$K")
        [[ $opt != --force ]] || args+=(true)
        run --separate-stderr blc --read-only "${args[@]}"
        assert_usage_error "$opt cannot be used with --read-only"
        run --separate-stderr env BUFFERLOCK_CACHE_READ_ONLY=1 "$BL" cache --cache-dir "$C" "${args[@]}"
        assert_usage_error "$opt cannot be used with BUFFERLOCK_CACHE_READ_ONLY=1"
    done
    run --separate-stderr env BUFFERLOCK_CACHE_READ_ONLY=yes "$BL" cache --cache-dir "$C" "$K" true
    assert_usage_error "invalid BUFFERLOCK_CACHE_READ_ONLY='yes'"
    [[ ! -e $C ]] || fail "$C was made: $(find "$C")"
}

@test "BUFFERLOCK_CACHE_READ_ONLY=1 is --read-only: served, nothing stored; 0 or empty: off" {
    blc "$K" echo stored >/dev/null
    run --separate-stderr env BUFFERLOCK_CACHE_READ_ONLY=1 "$BL" cache --cache-dir "$C" "$K" echo unused
    assert_success
    assert_output stored
    run --separate-stderr env BUFFERLOCK_CACHE_READ_ONLY=1 "$BL" cache --cache-dir "$C" other "$COUNTED" 0 once
    assert_success
    assert_output once
    assert_equal "$(key_entries other)" ""
    run --separate-stderr env BUFFERLOCK_CACHE_READ_ONLY=1 "$BL" cache --cache-dir "$C" --list
    assert_success
    assert_equal "${#lines[@]}" 1
    local v
    for v in 0 ""; do
        run --separate-stderr env BUFFERLOCK_CACHE_READ_ONLY="$v" "$BL" cache --cache-dir "$C" other "$COUNTED" 0 "stored $v"
        assert_success
        assert_output "stored $v"
        [[ -n $(key_entries other) ]] || fail "BUFFERLOCK_CACHE_READ_ONLY='$v' stored nothing"
        blc --drop other
    done
    assert_runs 3
}
