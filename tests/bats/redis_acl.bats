#!/usr/bin/env bats
# Least privilege on a shared Redis (man page, SECURITY): a user made from
# exactly the man page's ACL SETUSER lines -- read from the page's source, so
# that page and test cannot drift -- can do everything bufferlock does, and
# nothing more: a key outside its namespace is out of reach, and a user
# lacking one command of the rule is refused at once (69, one line), never
# left waiting or retrying.

load redis_helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() {
    redis_setup # FLUSHALL and SCRIPT FLUSH: the user must be allowed EVAL too
    rcli ACL DELUSER bufferlock >/dev/null
    PW=acl-test-pw-$RANDOM$RANDOM
    U="redis://bufferlock:$PW@127.0.0.1:$REDIS_PORT/0"
}
teardown() { redis_teardown; }

# acl_user [FEATURE...]: the user 'bufferlock' (password $PW) on the shared
# server, made from the man page's base rule plus the line of each FEATURE.
acl_user() {
    acl_user_on REDIS "$@"
}

# as_acl_user ARGS...: redis-cli as the user 'bufferlock'.
as_acl_user() {
    REDISCLI_AUTH=$PW rcli --user bufferlock "$@"
}

@test "acl: the man page's lines are found and are what an operator would paste" {
    run man_acl_line
    assert_output --regexp '^ACL SETUSER bufferlock on >PASSWORD resetkeys ~buffer:lock:\* ~\{buffer:lock:\* resetchannels -@all( \+[a-z|]+)+$'
    for f in list "cache --store redis" "Redis Cluster" Sentinel "A database other than 0"; do
        run man_acl_line "$f"
        assert_output --regexp '^ACL SETUSER bufferlock( \+[a-z|]+)+$'
    done
    # nothing beyond the base rule can list key names
    run man_acl_line
    refute_output --partial "+scan"
    refute_output --partial "+@"
}

@test "acl: run, fences, renewal and a --wait hand-off work for the man page's user" {
    acl_user
    run --separate-stderr bl -r "$U" "$K" sh -c 'echo "$BUFFERLOCK_FENCE"'
    assert_success
    assert_output "$(fence_counter REDIS "$K")"
    assert_stderr_empty
    local first=$output
    run --separate-stderr bl -r "$U" "$K" sh -c 'echo "$BUFFERLOCK_FENCE"'
    assert_output "$(fence_counter REDIS "$K")"
    ((output > first)) || fail "fence $output after $first"
    assert_stderr_empty
    (($(rcli PTTL "{$(redis_key "$K")}:fence") > 0)) || fail "the fence counter has no TTL"
    # renewal: a --ttl 1.5 lock through a 3.5 s command, never lost (short
    # timeouts, so that an attempt and --kill-after fit in the lease)
    run --separate-stderr bl -r "$U" --ttl 1.5 --connect-timeout 0.2 --io-timeout 0.2 --on-lost term \
        renewed sh -c 'sleep 3.5; echo done'
    assert_success
    assert_output 'done'
    assert_stderr_empty
    # hand-off: a waiter gets the lock when the holder's command ends (BLPOP on the wake list)
    bl_bg -r "$U" handoff sh -c "echo held > '$T/held'; sleep 1"
    wait_for_file "$T/held" 10 || wait_for_key_state REDIS "$(redis_key handoff)" present 10 ||
        fail "the holder never held the lock"
    run --separate-stderr bl -r "$U" -w 20 handoff echo got
    assert_success
    assert_output got
    assert_stderr_empty
    wait_for_exit "$BG_PID" 10 || fail "the holder did not exit"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.err")" ""
}

@test "acl: slots, --also, status, acquire, extend and release work for the man page's user" {
    acl_user
    local i
    for i in 1 2; do
        BG_OUT=$T/s$i.out BG_ERR=$T/s$i.err bl_bg -r "$U" --slots 2 "$K" sh -c "echo \$BUFFERLOCK_SLOT > '$T/slot$i'; sleep 300"
        wait_for_file "$T/slot$i" 10 || fail "holder $i never held a slot: $(cat "$T/s$i.err")"
    done
    assert_equal "$(sort "$T/slot1" "$T/slot2" | tr '\n' ' ')" "0 1 "
    run --separate-stderr bl -r "$U" --slots 2 "$K" touch "$T/third"
    assert_failure 75
    assert_file_not_exists "$T/third"
    run --separate-stderr bl status -r "$U" --slots 2 "$K"
    assert_failure 75
    assert_output --partial "held"
    assert_output --partial "slots=2/2"
    assert_stderr_empty

    run --separate-stderr bl -r "$U" --also second --also third first sh -c 'echo "$BUFFERLOCK_ALSO_FENCE"'
    assert_success
    assert_output "$(fence_counter REDIS second) $(fence_counter REDIS third)"
    assert_stderr_empty

    run --separate-stderr bl acquire -r "$U" --ttl 30 step
    assert_success
    local token=$output
    assert_stderr_empty
    run --separate-stderr bl status -r "$U" step
    assert_failure 75
    assert_output --partial "held"
    run --separate-stderr bl extend -r "$U" --ttl 60 step "$token"
    assert_success
    assert_stderr_empty
    local pttl
    pttl=$(rcli PTTL "$(redis_key step)")
    ((pttl > 30000)) || fail "extend did not reset the TTL: PTTL $pttl"
    run --separate-stderr bl release -r "$U" step "$token"
    assert_success
    assert_stderr_empty
    run --separate-stderr bl status -r "$U" step
    assert_success
    assert_output free
}

@test "acl: list needs the man page's list line; with it, it lists" {
    acl_user
    run --separate-stderr bl acquire -r "$U" --ttl 30 listed
    assert_success
    run --separate-stderr bl list -r "$U"
    assert_failure 69
    assert_one_bufferlock_line "Redis at redis://bufferlock@127.0.0.1:$REDIS_PORT/0" NOPERM "SECURITY in bufferlock(1)"
    acl_user list
    run --separate-stderr bl list -r "$U"
    assert_success
    assert_output --regexp "^listed "
    assert_stderr_empty
}

@test "acl: cache --store redis builds, serves, lists and drops with the man page's cache line" {
    acl_user "cache --store redis" list
    local cmd="echo run >> '$T/runs'; echo output"
    run --separate-stderr bl cache --store redis -r "$U" report sh -c "$cmd"
    assert_success
    assert_output output
    assert_stderr_empty
    run --separate-stderr bl cache --store redis -r "$U" report sh -c "$cmd"
    assert_success
    assert_output output
    assert_stderr_empty
    assert_equal "$(wc -l <"$T/runs")" 1 # the second was a hit
    # A hit records its use (its last one planted two minutes back), and --gc removes by it.
    local ekey planted
    ekey="{buffer:lock:$(key_md5 report)}:entry"
    planted=$(($(date +%s%3N) - 120000))
    rcli HSET "$ekey" u "$planted" >/dev/null
    run --separate-stderr bl cache --store redis -r "$U" report sh -c "$cmd"
    assert_output output
    assert_stderr_empty
    (($(rcli HGET "$ekey" u) > planted)) || fail "the hit recorded no use"
    run --separate-stderr bl cache --store redis -r "$U" --gc --max-unused 1h
    assert_success
    assert_stderr_empty
    run --separate-stderr bl cache --store redis -r "$U" --list
    assert_success
    assert_output --partial report
    assert_stderr_empty
    run --separate-stderr bl cache --store redis -r "$U" --drop report
    assert_success
    assert_stderr_empty
    assert_equal "$(rcli EXISTS "{buffer:lock:$(key_md5 report)}:entry")" 0
}

@test "acl: without the cache line, --store redis says why it cannot store, naming Redis" {
    acl_user
    run --separate-stderr bl cache --store redis -r "$U" report echo output
    assert_success # the cache is best effort: the output is still served
    assert_output output
    [[ $stderr == *"Redis at redis://bufferlock@127.0.0.1:$REDIS_PORT/0"* ]] || fail "no Redis named: $stderr"
    [[ $stderr == *"SECURITY in bufferlock(1)"* ]] || fail "no pointer to the rights: $stderr"
}

@test "acl: keys outside the namespace are out of reach of the man page's user" {
    acl_user
    rcli SET other:team:secret kept >/dev/null
    run as_acl_user GET other:team:secret
    assert_output --partial NOPERM
    run as_acl_user SET other:team:secret stolen
    assert_output --partial NOPERM
    run as_acl_user DEL other:team:secret
    assert_output --partial NOPERM
    run as_acl_user EVAL "return redis.call('GET', KEYS[1])" 1 other:team:secret
    refute_output kept
    run as_acl_user KEYS '*'
    assert_output --partial NOPERM
    run as_acl_user SCAN 0
    assert_output --partial NOPERM
    assert_equal "$(rcli GET other:team:secret)" kept
    # bufferlock itself, pointed at another namespace, is refused at once
    run --separate-stderr bl -r "$U" --namespace other:team: -w 10 "$K" touch "$T/ran"
    assert_failure 69
    assert_file_not_exists "$T/ran"
    assert_one_bufferlock_line "Redis at redis://bufferlock@127.0.0.1:$REDIS_PORT/0" NOPERM "SECURITY in bufferlock(1)"
}

@test "acl: another --namespace: the patterns the man page derives from it work, the default is refused" {
    local line
    line=$(man_acl_line)
    acl_apply REDIS "${line//buffer:lock:/ci:team:}"
    run --separate-stderr bl -r "$U" --namespace ci:team: "$K" sh -c 'echo "$BUFFERLOCK_REDIS_KEY"'
    assert_success
    assert_output "ci:team:$(key_md5 "$K")"
    assert_stderr_empty
    run --separate-stderr bl -r "$U" --namespace ci:team: --hash-tag --slots 2 "$K" true
    assert_success
    assert_stderr_empty
    run --separate-stderr bl -r "$U" "$K" touch "$T/ran"
    assert_failure 69
    assert_file_not_exists "$T/ran"
    assert_one_bufferlock_line "Redis at redis://bufferlock@127.0.0.1:$REDIS_PORT/0"
}

# refused_at_once WHAT ARGS...: bufferlock ARGS (a -w 10 among them, where the
# command takes one) ends within 5 s (far less than the wait) with 69 and one
# line naming Redis and a refusal.
refused_at_once() {
    local what=$1 t0 ms
    shift
    t0=$(now_us)
    run --separate-stderr bl "$@"
    ms=$(elapsed_ms "$t0")
    assert_failure 69
    assert_one_bufferlock_line "Redis at redis://bufferlock@127.0.0.1:$REDIS_PORT/0" "SECURITY in bufferlock(1)"
    [[ $stderr == *NOPERM* || $stderr == *"can't run this command"* ]] || fail "$what: no refusal in: $stderr"
    ((ms < 5000)) || fail "$what: took ${ms} ms: the refusal was retried"
}

@test "acl: a user lacking one command of the rule gets 69 at once, one line, no retrying" {
    acl_user
    rcli ACL SETUSER bufferlock -incr >/dev/null # the acquire script counts fences
    refused_at_once "-incr" -r "$U" -w 10 "$K" touch "$T/ran"
    assert_file_not_exists "$T/ran"
    acl_user
    rcli ACL SETUSER bufferlock -time >/dev/null # and restarts an expired counter from the clock
    refused_at_once "-time" -r "$U" -w 10 "$K" touch "$T/ran"
    assert_file_not_exists "$T/ran"
    acl_user
    rcli ACL SETUSER bufferlock -eval >/dev/null
    rcli SCRIPT FLUSH >/dev/null # a server that does not know the scripts yet
    refused_at_once "-eval" -r "$U" -w 10 "$K" touch "$T/ran"
    assert_file_not_exists "$T/ran"
    acl_user
    rcli ACL SETUSER bufferlock -pttl >/dev/null
    refused_at_once "-pttl" status -r "$U" "$K"
}

@test "acl: a waiter whose user lacks BLPOP ends its wait at once with 69, rather than polling" {
    bl_bg -r "$REDIS_URL" "$K" sh -c "echo held > '$T/held'; sleep 300"
    wait_for_file "$T/held" 10 || wait_for_key_state REDIS "$(redis_key "$K")" present 10 ||
        fail "the holder never held the lock"
    acl_user
    rcli ACL SETUSER bufferlock -blpop >/dev/null
    refused_at_once "-blpop" -r "$U" -w 10 "$K" touch "$T/ran"
    assert_file_not_exists "$T/ran"
    [[ $stderr == *blpop* ]] || fail "the refused command is not named: $stderr"
}
