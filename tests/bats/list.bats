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
    # Ready when both bufferlock holders have written their records (a lock
    # is visible in /proc/locks a moment before its record is).
    local now
    for ((i = 0; i < 200; i++)); do
        now=$(bl list -d "$D")
        [[ $(wc -l <<<"$now") -eq 3 && $now == *"deploy prod pid="* && $now == *"other slot=1 pid="* ]] && break
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

@test "list shows a byte that is not UTF-8 as \\xHH, and valid UTF-8 as it is" {
    bl_hold_lock "$D" $'caf\xc3\xa9 \xff'
    run --separate-stderr bl list -d "$D"
    assert_success
    assert_regex "$output" '^café \\xff pid='
}

@test "list takes no KEY and no lock options" {
    run --separate-stderr bl list -d "$D" "$K"
    assert_usage_error "$K"
    run --separate-stderr bl list --slots 2 -d "$D"
    assert_usage_error "--slots" list
}

# --- redis --------------------------------------------------------------------

# What status and list show of a bufferlock holder on Redis (before fence=).
holder_fields="ttl=[0-9]+\.[0-9]{3} pid=[0-9]+ host=$(hostname) since=[0-9]+\.[0-9]{3}"

# assert_three_listed FENCE BACKEND-OPTION...: list shows the foreign lock as
# md5:DIGEST, then both slots of "deploy prod" with the holder's fields and
# FENCE (a regex, "" for none).
assert_three_listed() {
    local fence=$1
    shift
    run --separate-stderr bl list "$@"
    assert_success
    assert_stderr_empty
    local lines=()
    mapfile -t lines <<<"$output"
    assert_equal "${#lines[@]}" 3
    # by digest: md5("foreign") = 684a72e0..., md5("deploy prod") = c9a0b8f5...
    assert_regex "${lines[0]}" "^md5:$(key_md5 foreign) ttl=[0-9]+\.[0-9]{3}\$"
    assert_regex "${lines[1]}" "^deploy prod $holder_fields$fence\$"
    assert_regex "${lines[2]}" "^deploy prod slot=1 $holder_fields$fence\$"
}

@test "redis: list shows the recorded KEY or md5:DIGEST, slots, and the status fields; empty is exit 0" {
    start_redis_as R
    run --separate-stderr bl list -r "$R_URL"
    assert_success
    assert_output ""
    assert_stderr_empty
    bl -r "$R_URL" "deploy prod" true # released: not listed, its fence counter is no lock
    local f0 f
    f0=$(fence_counter R "deploy prod")
    rcli_to R SET "$(redis_key foreign)" x PX 30000 >/dev/null
    rcli_to R SET unrelated x >/dev/null
    "$BL" -r "$R_URL" --slots 2 "deploy prod" sh -c "touch '$T/a'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    track_pid $!
    "$BL" -r "$R_URL" --slots 2 "deploy prod" sh -c "touch '$T/b'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    track_pid $!
    for ((i = 0; i < 1000; i++)); do
        [[ -e $T/a && -e $T/b ]] && break
        sleep 0.01
    done
    assert_three_listed " fence=[0-9]+" -r "$R_URL"
    # the two acquisitions after the first, and the later the counter's
    for f in $(sed -n 's/.* fence=//p' <<<"$output"); do
        ((f > f0 && f <= $(fence_counter R "deploy prod"))) || fail "fence $f, not after $f0: $output"
    done
    # and status says the same of the plain key
    f=$(sed -n '2s/.* fence=//p' <<<"$output")
    run --separate-stderr bl status -r "$R_URL" "deploy prod"
    assert_failure 75
    assert_regex "$output" "^held $holder_fields fence=$f\$"
}

@test "quorum: list shows what a majority holds with one token; empty is exit 0; no majority is an error" {
    start_redis_as Q1 && start_redis_as Q2 && start_redis_as Q3 || fail "cannot start servers"
    local quorum=(-r "$Q1_URL" -r "$Q2_URL" -r "$Q3_URL")
    run --separate-stderr bl list "${quorum[@]}"
    assert_success
    assert_output ""
    assert_stderr_empty
    # on 1 of 3 only (a foreign client): not held; on 2 of 3 with two values: not held either
    rcli_to Q2 SET "$(redis_key "one server")" x PX 30000 >/dev/null
    rcli_to Q1 SET "$(redis_key split)" x PX 30000 >/dev/null
    rcli_to Q3 SET "$(redis_key split)" y PX 30000 >/dev/null
    # on 2 of 3 with one value: held, without holder fields
    rcli_to Q1 SET "$(redis_key foreign)" x PX 30000 >/dev/null
    rcli_to Q2 SET "$(redis_key foreign)" x PX 30000 >/dev/null
    # One after the other: two holders racing for the slots can each end up on
    # a bare majority (A on Q1+Q3, B on Q1+Q3, none on Q2), which the loss of
    # Q3 below would rightly leave unlisted.
    "$BL" "${quorum[@]}" --slots 2 "deploy prod" sh -c "echo held > '$T/a'; exec sleep 30" </dev/null >/dev/null 2>"$T/a.err" &
    track_pid $!
    wait_for_file "$T/a" 5 || fail "not held: $(cat "$T/a.err")"
    "$BL" "${quorum[@]}" --slots 2 "deploy prod" sh -c "echo held > '$T/b'; exec sleep 30" </dev/null >/dev/null 2>"$T/b.err" &
    track_pid $!
    wait_for_file "$T/b" 5 || fail "not both held: $(cat "$T/a.err" "$T/b.err")"
    assert_three_listed "" "${quorum[@]}" # no fence over a quorum
    # one server down: the other two still make the list; two down: the error status
    kill_redis Q3
    run --separate-stderr bl list "${quorum[@]}"
    assert_success
    assert_equal "$(wc -l <<<"$output")" 3
    kill_redis Q2
    run --separate-stderr bl list "${quorum[@]}"
    assert_failure 69
    assert_one_bufferlock_line
}

