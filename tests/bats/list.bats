#!/usr/bin/env bats
# bufferlock list, file and Redis backends (SPEC §14).

load redis_helpers

# The Redis cases start a private server each (stopped by PID in teardown).
teardown() { redis_teardown; }

@test "list of an empty or missing directory: nothing, exit 0" {
    run --separate-stderr bl list -d "$D"
    assert_success
    assert_output ""
    assert_stderr_empty
    mkdir -p "$D"
    bl -d "$D" "$K" true # a lock file that nobody holds
    run --separate-stderr bl list -d "$D"
    assert_success
    assert_output ""
}

@test "list: the KEY bufferlock recorded, or md5:DIGEST for flock(1), with the status fields" {
    bl_hold_lock "$D" "deploy prod"
    local bl_pid=$HOLDER_PID
    hold_lock "$D" other
    local flock_pid=$HOLDER_PID
    "$BL" --slots 2 -d "$D" other sleep 300 </dev/null >/dev/null 2>&1 3>&- &
    local slot_pid=$!
    track_pid "$slot_pid"
    for ((i = 0; i < 100; i++)); do
        [[ $(bl list -d "$D" | wc -l) -eq 3 ]] && break
        sleep 0.05
    done
    run --separate-stderr bl list -d "$D"
    assert_success
    assert_stderr_empty
    local lines=()
    mapfile -t lines <<<"$output"
    assert_equal "${#lines[@]}" 3
    # by digest, then slot: md5("other") = 795f3202..., md5("deploy prod") = c9a0b8f5...
    local other deploy
    other=$(key_md5 other)
    deploy=$(key_md5 "deploy prod")
    assert_equal "${lines[0]}" "md5:$other pid=$flock_pid"
    assert_regex "${lines[1]}" "^other slot=1 pid=$slot_pid since=[0-9]+\.[0-9]{3} fence=1\$"
    assert_regex "${lines[2]}" "^deploy prod pid=$bl_pid since=[0-9]+\.[0-9]{3} fence=1\$"
    [[ $other < $deploy ]] || fail "test keys no longer sort as assumed"
}

@test "list never calls flock(2), so it cannot disturb or wait for a holder" {
    command -v strace >/dev/null || skip "strace is not installed"
    mkdir -p "$D"
    bl -d "$D" "$K" true
    bl_hold_lock "$D" held
    run bash -c "strace -f -e trace=flock,open,openat '$BL' list -d '$D' 2>&1 >/dev/null"
    assert_regex "$output" "$(key_md5 "$K")\.lock" # the free lock file was looked at
    refute_regex "$output" 'flock\('
}

@test "list escapes bytes that would break its line" {
    bl_hold_lock "$D" $'two\nlines'
    run --separate-stderr bl list -d "$D"
    assert_success
    assert_regex "$output" '^two\\x0alines pid='
}

@test "list takes no KEY and no lock options; not over a quorum yet" {
    run --separate-stderr bl list -d "$D" "$K"
    assert_usage_error "$K"
    run --separate-stderr bl list --slots 2 -d "$D"
    assert_usage_error "--slots" list
    run --separate-stderr bl list -r redis://127.0.0.1:1 -r redis://127.0.0.1:2
    assert_usage_error "list" "quorum of Redis servers yet"
}

# --- redis --------------------------------------------------------------------

@test "redis: list shows the recorded KEY or md5:DIGEST, slots, and the status fields; empty is exit 0" {
    start_redis_as R
    run --separate-stderr bl list -r "$R_URL"
    assert_success
    assert_output ""
    assert_stderr_empty
    bl -r "$R_URL" "deploy prod" true # released: not listed, its fence counter is no lock
    rcli_to R SET "$(redis_key foreign)" x PX 30000 >/dev/null
    rcli_to R SET unrelated x >/dev/null
    "$BL" -r "$R_URL" --slots 2 "deploy prod" sh -c "touch '$T/a'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    track_pid $!
    "$BL" -r "$R_URL" --slots 2 "deploy prod" sh -c "touch '$T/b'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    track_pid $!
    for ((i = 0; i < 200; i++)); do
        [[ -e $T/a && -e $T/b ]] && break
        sleep 0.01
    done
    run --separate-stderr bl list -r "$R_URL"
    assert_success
    assert_stderr_empty
    local lines=() fields="ttl=[0-9]+\.[0-9]{3} pid=[0-9]+ host=$(hostname) since=[0-9]+\.[0-9]{3}"
    mapfile -t lines <<<"$output"
    assert_equal "${#lines[@]}" 3
    # by digest: md5("foreign") = 684a72e0..., md5("deploy prod") = c9a0b8f5...
    assert_regex "${lines[0]}" "^md5:$(key_md5 foreign) ttl=[0-9]+\.[0-9]{3}\$"
    assert_regex "${lines[1]}" "^deploy prod $fields fence=[23]\$"
    assert_regex "${lines[2]}" "^deploy prod slot=1 $fields fence=[23]\$"
    # and status says the same of the plain key
    run --separate-stderr bl status -r "$R_URL" "deploy prod"
    assert_failure 75
    assert_regex "$output" "^held $fields fence=[23]\$"
}
