#!/usr/bin/env bats
# Redis Cluster (SPEC §13): a real 3-master cluster; locks whose slots live on
# other nodes than the one named in the URL (MOVED), a slot migrated while a
# lock is held and waited for (ASK), a redirect loop, --hash-tag.

bats_require_minimum_version 1.5.0

load cluster_helpers

setup_file() { cluster_setup_file; }
teardown_file() { redis_teardown_file; }
setup() { cluster_setup; }
teardown() {
    # A test that opened a slot leaves it stable, even when it failed half-way:
    # $T/settle holds "NODE ARGS..." lines for rcli_to.
    local line
    if [[ -s $T/settle ]]; then
        while read -r -a line; do
            rcli_to "${line[@]}" >/dev/null
        done <"$T/settle"
    fi
    redis_teardown
}

# url_of NAME: the redis:// URL of a cluster node.
url_of() {
    local -n _u="$1_URL"
    printf '%s\n' "$_u"
}

@test "cluster: the wake list is in the lock key's slot, with and without --hash-tag" {
    local k rk
    k=$(cluster_key_on C2)
    rk=$(redis_key "$k")
    assert_equal "$(slot_of "{$rk}:wake")" "$(slot_of "$rk")"
    rk=$(redis_key_tagged "$k")
    assert_equal "$(slot_of "$rk:wake")" "$(slot_of "$rk")"
}

@test "cluster: a run through a node that does not serve the slot follows MOVED" {
    local k rk n
    for n in C1 C2 C3; do
        local -n port="${n}_PORT"
        k=$(cluster_key_on "$n")
        rk=$(redis_key "$k")
        run --separate-stderr bl -r "$(url_of "$(other_node "$n")")" "$k" sh -c \
            'redis-cli -p "$0" EXISTS "$BUFFERLOCK_REDIS_KEY"' "$port"
        assert_success
        assert_output 1
        assert_stderr_empty
        assert_equal "$(rcli_to "$n" EXISTS "$rk")" 0
        # the release pushed the wake list on the owner, which expires
        local wake
        wake=$(rcli_to "$n" PTTL "{$rk}:wake")
        ((wake > 0 && wake <= 2000)) || fail "wake list PTTL $wake on $n"
    done
}

@test "cluster: acquire, status, extend and release through other nodes" {
    local k token
    k=$(cluster_key_on C3)
    run --separate-stderr bl acquire -r "$C1_URL" --ttl 30 "$k"
    assert_success
    token=$output
    assert_equal "$(rcli_to C3 GET "$(redis_key "$k")")" "$token"
    run --separate-stderr bl status -r "$C2_URL" "$k"
    assert_failure 75
    assert_output --regexp "^held ttl=[0-9]+\\.[0-9]{3} pid=[0-9]+ host=[^ ]+ since=[0-9.]+ fence=$(fence_counter C3 "$k")\$"
    run --separate-stderr bl -r "$C2_URL" -n "$k" true
    assert_failure 75
    run --separate-stderr bl extend -r "$C2_URL" --ttl 50 "$k" "$token"
    assert_success
    (($(rcli_to C3 PTTL "$(redis_key "$k")") > 40000)) || fail "not extended"
    run --separate-stderr bl release -r "$C1_URL" "$k" "$token"
    assert_success
    assert_stderr_empty
    run --separate-stderr bl status -r "$C1_URL" "$k"
    assert_success
    assert_output free
}

@test "cluster: cache --store redis through a node that does not serve the entry's slot" {
    local k n
    k=$(cluster_key_on C2)
    n=$(other_node C2)
    run --separate-stderr bl cache --cache-dir "$T/c1" --store redis -r "$(url_of "$n")" "$k" \
        sh -c 'echo built >>"$0"; echo payload' "$T/builds"
    assert_success
    assert_output payload
    assert_stderr_empty
    # a second "machine" is served the entry from the cluster, without a build
    run --separate-stderr bl cache --cache-dir "$T/c2" --store redis -r "$C3_URL" "$k" \
        sh -c 'echo built >>"$0"; echo other' "$T/builds"
    assert_success
    assert_output payload
    assert_equal "$(wc -l <"$T/builds")" 1
    run --separate-stderr bl cache --store redis -r "$C1_URL" --drop "$k"
    assert_success
}

# hold_one_per_master: acquires a lock on each master (through C1) and sets
# tokens=(KEY TOKEN KEY TOKEN ...); release_held releases them (through C3).
hold_one_per_master() {
    local n k
    tokens=()
    for n in C1 C2 C3; do
        k=$(cluster_key_on "$n")
        run --separate-stderr bl acquire -r "$C1_URL" --ttl 30 "$k"
        assert_success
        tokens+=("$k" "$output")
    done
}
release_held() {
    local i
    for ((i = 0; i < ${#tokens[@]}; i += 2)); do
        bl release -r "$C3_URL" "${tokens[i]}" "${tokens[i + 1]}"
    done
}

@test "cluster: list shows the locks of every master, asked through any node" {
    local n k tokens=()
    hold_one_per_master
    run --separate-stderr bl list -r "$C2_URL"
    assert_success
    assert_stderr_empty
    assert_equal "$(wc -l <<<"$output")" 3
    for n in C1 C2 C3; do
        k=$(cluster_key_on "$n")
        assert_regex "$output" "(^|"$'\n'")$k ttl="
    done
    release_held
    run --separate-stderr bl list -r "$C3_URL"
    assert_success
    assert_output ""
}

@test "cluster: list --json has the locks of every master, as the text form" {
    local k tokens=()
    hold_one_per_master
    run --separate-stderr bl list -r "$C2_URL"
    assert_success
    local text=$output
    run --separate-stderr bl list --json -r "$C2_URL"
    assert_success
    assert_stderr_empty
    local doc=$output
    assert_equal "$(jq '.locks | length' <<<"$doc")" 3
    # the same locks in the same order as the text's lines
    assert_equal "$(jq -r '.locks[].key' <<<"$doc")" "$(cut -d' ' -f1 <<<"$text")"
    for k in "${tokens[0]}" "${tokens[2]}" "${tokens[4]}"; do
        assert_equal "$(jq -r --arg k "$k" '.locks[] | select(.key == $k) | .redis_key' <<<"$doc")" \
            "$(redis_key "$k")"
        assert_equal "$(jq -r --arg k "$k" '.locks[] | select(.key == $k) | "\(.state) \(.backend) \(.ttl > 0)"' \
            <<<"$doc")" "held redis true"
    done
    release_held
    run --separate-stderr bl list --json -r "$C3_URL"
    assert_success
    assert_output '{"locks": []}'
}

@test "cluster: a user made from the man page's rule with its Cluster and list lines: MOVED, slots, list" {
    PW=acl-test-pw-$RANDOM
    local n k owner
    for n in C1 C2 C3; do
        acl_user_on "$n" "Redis Cluster" list
    done
    k=$(cluster_key_on C2)
    owner=$(other_node C2)
    local -n port="${owner}_PORT"
    local url="redis://bufferlock:$PW@127.0.0.1:$port/0"
    run --separate-stderr bl -r "$url" --slots 2 "$k" sh -c 'echo "$BUFFERLOCK_SLOT $BUFFERLOCK_FENCE"'
    assert_success
    assert_output --regexp '^0 [0-9]+$'
    assert_stderr_empty
    run --separate-stderr bl acquire -r "$url" --ttl 30 "$k"
    assert_success
    run --separate-stderr bl list -r "$url"
    for n in C1 C2 C3; do
        rcli_to "$n" ACL DELUSER bufferlock >/dev/null
    done
    assert_success
    assert_output --regexp "^$k ttl="
    assert_stderr_empty
}

@test "cluster: a release on one node wakes a waiter at once (--step 3)" {
    local k
    k=$(cluster_key_on C2)
    BG_OUT=$T/holder.out BG_ERR=$T/holder.err \
        bl_bg -r "$C1_URL" "$k" sh -c 'echo x > "$0.started"; sleep 1; date +%s%N > "$0"' "$T/holder_end"
    local holder=$BG_PID
    wait_for_file "$T/holder_end.started" 5 || fail "the holder did not start"
    run --separate-stderr bl -r "$C3_URL" -w 10 --step 3 --max-step 3 "$k" sh -c 'date +%s%N > "$0"' "$T/waiter_start"
    assert_success
    assert_stderr_empty
    wait_for_exit "$holder" 5
    reap "$holder"
    assert_equal "$REAPED_STATUS" 0
    local gap
    gap=$((($(cat "$T/waiter_start") - $(cat "$T/holder_end")) / 1000000))
    ((gap >= 0 && gap < $(slack_ms 800))) || fail "the waiter's command started ${gap} ms after the holder's ended"
}

@test "cluster: renewal keeps a lock on another node while the command outlives the TTL" {
    local k
    k=$(cluster_key_on C1)
    run --separate-stderr bl -r "$C2_URL" --ttl 0.3 "$k" sh -c 'sleep 1.2; echo done'
    assert_success
    assert_output done
    assert_stderr_empty
    assert_equal "$(rcli_to C1 EXISTS "$(redis_key "$k")")" 0
}

@test "cluster: --hash-tag puts every lock in one slot, reached from any node" {
    local a b slot owner
    a=$(redis_key_tagged one)
    b=$(redis_key_tagged two)
    slot=$(slot_of "$a")
    assert_equal "$(slot_of "$b")" "$slot"
    owner=$(slot_owner "$slot")
    run --separate-stderr bl -r "$(url_of "$(other_node "$owner")")" --hash-tag one \
        "$BL" -r "$C3_URL" --hash-tag two sh -c 'echo "$BUFFERLOCK_REDIS_KEY"'
    assert_success
    assert_output "$b"
    assert_stderr_empty
}

@test "cluster: a slot migrated while its lock is held and waited for (ASK, then MOVED)" {
    local k rk slot src dst src_id dst_id token n
    k=$(cluster_key_on C1)
    rk=$(redis_key "$k")
    slot=$(slot_of "$rk")
    src=C1 dst=C2
    src_id=$(node_id C1) dst_id=$(node_id C2)
    # (the slot stays with C2: giving it back would need a second migration)
    for n in C1 C2 C3; do
        echo "$n CLUSTER SETSLOT $slot NODE $dst_id"
    done >"$T/settle"
    run --separate-stderr bl acquire -r "$C3_URL" --ttl 30 "$k"
    assert_success
    token=$output
    # Move the lock's keys (the lock key, its holder record and fence
    # counter) to C2 and leave the slot half-migrated: C1 answers ASK. (Between
    # a lock key moved and its record not yet, a script gets TRYAGAIN: a
    # transient error that a wait rides out.)
    rcli_to "$dst" CLUSTER SETSLOT "$slot" IMPORTING "$src_id" >/dev/null
    rcli_to "$src" CLUSTER SETSLOT "$slot" MIGRATING "$dst_id" >/dev/null
    assert_equal "$(rcli_to "$src" MIGRATE 127.0.0.1 "$C2_PORT" "" 0 5000 KEYS "$rk" "{$rk}:holder" "{$rk}:fence")" OK
    [[ $(rcli_to "$src" EXISTS "$rk") == "ASK $slot "* ]] || fail "C1 does not redirect with ASK"
    run --separate-stderr bl status -r "$C1_URL" "$k"
    assert_failure 75
    run --separate-stderr bl -r "$C1_URL" -n "$k" true
    assert_failure 75
    assert_stderr_empty
    # A waiter through C1, then the migration ends and the holder releases.
    BG_OUT=$T/waiter.out BG_ERR=$T/waiter.err bl_bg -r "$C1_URL" -w 20 "$k" echo ran
    local waiter=$BG_PID
    sleep 0.3
    pid_alive "$waiter" || fail "the waiter did not wait"
    # The destination first, as Redis' resharding does: the other order leaves
    # a moment in which C1 sends MOVED to C2 and C2, still importing, back to
    # C1, a loop that ends the waiter's wait with an error.
    for n in C2 C1 C3; do
        rcli_to "$n" CLUSTER SETSLOT "$slot" NODE "$dst_id" >/dev/null
    done
    run --separate-stderr bl release -r "$C1_URL" "$k" "$token"
    assert_success
    assert_stderr_empty
    wait_for_exit "$waiter" 10 || fail "the waiter was not woken"
    reap "$waiter"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/waiter.out")" ran
    assert_equal "$(cat "$T/waiter.err")" ""
    assert_equal "$(rcli_to C2 EXISTS "$rk")" 0
}

@test "cluster: a release while a slot migration stays open (ASK, then TRYAGAIN) releases at once, without a warning" {
    local k rk slot src_id dst_id n holder waiter t0 ms
    k=$(cluster_key_on C1)
    rk=$(redis_key "$k")
    slot=$(slot_of "$rk")
    src_id=$(node_id C1) dst_id=$(node_id C2)
    for n in C1 C2 C3; do
        echo "$n CLUSTER SETSLOT $slot NODE $dst_id"
    done >"$T/settle"
    # A holder with the default timeouts that ends when told to, and a
    # waiter that gives up after the 30 s TTL.
    BG_OUT=$T/holder.out BG_ERR=$T/holder.err bl_bg -r "$C1_URL" --ttl 30 "$k" \
        sh -c 'echo x > "$0.started"; while [ ! -e "$0.go" ]; do sleep 0.05; done' "$T/h"
    holder=$BG_PID
    wait_for_file "$T/h.started" 10 || fail "the holder did not start: $(cat "$T/holder.err")"
    BG_OUT=$T/waiter.out BG_ERR=$T/waiter.err bl_bg -r "$C1_URL" -w 40 "$k" echo ran
    waiter=$BG_PID
    # The lock's keys move to C2, the slot stays half-migrated, as a slow or
    # stuck resharding leaves it: C1 answers ASK for the release script, and
    # C2 answers TRYAGAIN, since its wake list exists on neither node, for
    # as long as the migration lasts.
    rcli_to C2 CLUSTER SETSLOT "$slot" IMPORTING "$src_id" >/dev/null
    rcli_to C1 CLUSTER SETSLOT "$slot" MIGRATING "$dst_id" >/dev/null
    assert_equal "$(rcli_to C1 MIGRATE 127.0.0.1 "$C2_PORT" "" 0 5000 KEYS "$rk" "{$rk}:holder" "{$rk}:fence")" OK
    t0=$(now_us)
    touch "$T/h.go"
    wait_for_exit "$holder" 8 || fail "the holder did not finish its release during the migration"
    ms=$(elapsed_ms "$t0")
    reap "$holder"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/holder.err")" ""
    # released on C2, where the keys are (ASKING): the lock and its record
    [[ $(rcli_to C1 EXISTS "$rk") == "ASK $slot "* ]] || fail "the slot is no longer split"
    assert_equal "$(printf 'ASKING\nEXISTS %s\nASKING\nEXISTS {%s}:holder\n' "$rk" "$rk" | rcli_to C2 | tr '\n' ' ')" "OK 0 OK 0 "
    # the split stays open 10 s beyond the release
    while (($(elapsed_ms "$t0") < ms + 10000)); do sleep 0.2; done
    [[ $(rcli_to C1 EXISTS "$rk") == "ASK $slot "* ]] || fail "the slot is no longer split"
    pid_alive "$waiter" || fail "the waiter gave up during the migration: $(cat "$T/waiter.err")"
    # Redis' resharding order: the destination first.
    for n in C2 C1 C3; do
        rcli_to "$n" CLUSTER SETSLOT "$slot" NODE "$dst_id" >/dev/null
    done
    t0=$(now_us)
    wait_for_exit "$waiter" 10 || fail "the waiter did not get the lock"
    ms=$(elapsed_ms "$t0")
    reap "$waiter"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/waiter.out")" ran
    # at once, not when the TTL (30 s, about 19 s from here) would have ended
    ((ms < 8000)) || fail "the waiter got the lock $ms ms after the migration ended"
    run --separate-stderr bl -r "$C1_URL" -n "$k" echo next
    assert_success
    assert_output next
    assert_equal "$(rcli_to C2 EXISTS "$rk")" 0
}

# split_slot KEY MODE: KEY's lock (taken on C1) gets its slot opened from C1
# to C2 with the lock key moved and its holder record not, so that its
# scripts meet TRYAGAIN: MODE "node" keeps the record on C1, which answers
# TRYAGAIN itself; "ask" deletes it first, so C1 holds none of the keys and
# answers ASK, and C2, the importing node, answers TRYAGAIN. Sets SLOT and RK;
# $T/settle gets what closes the slot.
split_slot() {
    RK=$(redis_key "$1")
    SLOT=$(slot_of "$RK")
    # the node ids once: close_slot must be quick on a loaded machine (the
    # commands riding a split out retry for their io timeout, 1 s)
    C1_ID=$(node_id C1)
    C2_ID=$(node_id C2)
    local n
    for n in C1 C2 C3; do
        echo "$n CLUSTER SETSLOT $SLOT NODE $C2_ID"
    done >>"$T/settle"
    [[ $2 == node ]] || rcli_to C1 DEL "{$RK}:holder" >/dev/null
    rcli_to C2 CLUSTER SETSLOT "$SLOT" IMPORTING "$C1_ID" >/dev/null
    rcli_to C1 CLUSTER SETSLOT "$SLOT" MIGRATING "$C2_ID" >/dev/null
    assert_equal "$(rcli_to C1 MIGRATE 127.0.0.1 "$C2_PORT" "$RK" 0 5000)" OK
    if [[ $2 == node ]]; then
        [[ $(rcli_to C1 EXISTS "$RK" "{$RK}:holder") == TRYAGAIN* ]] || fail "C1 does not answer TRYAGAIN"
    else
        [[ $(rcli_to C1 EXISTS "$RK" "{$RK}:holder") == "ASK $SLOT "* ]] || fail "C1 does not answer ASK"
    fi
}

# close_slot: the migration ends as Redis' resharding ends it: the keys
# left on C1 move, then the slot is given to C2, the destination first.
# Three process starts in a row (the other two nodes are told at once).
close_slot() {
    local moved p1 p3
    # the lock's records left on C1 (NOKEY: none left, mode ask)
    moved=$(rcli_to C1 MIGRATE 127.0.0.1 "$C2_PORT" "" 0 5000 KEYS "{$RK}:holder" "{$RK}:fence")
    [[ $moved == OK || $moved == NOKEY ]] || fail "MIGRATE: $moved"
    rcli_to C2 CLUSTER SETSLOT "$SLOT" NODE "$C2_ID" >/dev/null
    rcli_to C1 CLUSTER SETSLOT "$SLOT" NODE "$C2_ID" >/dev/null &
    p1=$!
    rcli_to C3 CLUSTER SETSLOT "$SLOT" NODE "$C2_ID" >/dev/null &
    p3=$!
    wait "$p1" "$p3"
    assert_equal "$(rcli_to C1 CLUSTER COUNTKEYSINSLOT "$SLOT")" 0
}

# held_split MODE: a lock taken through C1 (KEY in HK, its token in TOKEN),
# its slot then split as split_slot MODE does.
held_split() {
    HK=$(cluster_key_on C1)
    run --separate-stderr bl acquire -r "$C1_URL" --ttl 30 "$HK"
    assert_success
    TOKEN=$output
    split_slot "$HK" "$1"
}

# done_in_split PID...: the commands PID... end while the slot is still
# split (their scripts go one key a command), which close_slot then ends.
done_in_split() {
    local pid
    for pid in "$@"; do
        wait_for_exit "$pid" 8 || fail "still running during the migration"
    done
    [[ $(rcli_to C2 EXISTS "$RK") == "MOVED $SLOT "* ]] || fail "the slot is no longer split"
    close_slot
}

@test "cluster: status, list and extend get through TRYAGAIN at once, on the serving node and through ASK (default timeouts)" {
    local mode pids
    for mode in node ask; do
        held_split "$mode"
        BG_OUT=$T/status.out BG_ERR=$T/status.err bl_bg status -r "$C1_URL" "$HK"
        pids=("$BG_PID")
        BG_OUT=$T/list.out BG_ERR=$T/list.err bl_bg list -r "$C3_URL"
        pids+=("$BG_PID")
        BG_OUT=$T/extend.out BG_ERR=$T/extend.err bl_bg extend -r "$C3_URL" --ttl 50 "$HK" "$TOKEN"
        pids+=("$BG_PID")
        done_in_split "${pids[@]}"
        reap "${pids[0]}"
        assert_equal "$REAPED_STATUS" 75
        [[ $(cat "$T/status.out") == "held ttl="* ]] || fail "$mode: status: $(cat "$T/status.out")"
        reap "${pids[1]}"
        assert_equal "$REAPED_STATUS" 0
        # (named by its digest when its holder record is gone: mode ask)
        grep -Eq "^($HK|md5:$(printf %s "$HK" | md5sum | cut -c1-32)) ttl=" "$T/list.out" ||
            fail "$mode: list: $(cat "$T/list.out")"
        reap "${pids[2]}"
        assert_equal "$REAPED_STATUS" 0
        assert_equal "$(cat "$T/status.err" "$T/list.err" "$T/extend.err")" ""
        (($(rcli_to C2 PTTL "$RK") > 40000)) || fail "$mode: not extended"
        rcli_to C2 DEL "$RK" >/dev/null
    done
}

@test "cluster: release KEY TOKEN gets through TRYAGAIN at once, on the serving node and through ASK (default timeouts)" {
    local mode
    for mode in node ask; do
        held_split "$mode"
        bl_bg release -r "$C1_URL" "$HK" "$TOKEN"
        done_in_split "$BG_PID"
        reap "$BG_PID"
        assert_equal "$REAPED_STATUS" 0
        assert_equal "$(cat "$T/bg.err")" ""
        assert_equal "$(rcli_to C2 EXISTS "$RK" "{$RK}:holder")" 0
    done
}

# gated_done: the command of a bl_bg run that waits at $T/gate ($GATE_WAIT)
# is let go, and the run ends well, its output "done", without a word.
gated_done() {
    : >"$T/gate"
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.out")" "done"
    assert_equal "$(cat "$T/bg.err")" ""
}

@test "cluster: renewal rides out TRYAGAIN longer than its io timeout, without a warning" {
    local k start
    k=$(cluster_key_on C1)
    # Renewals every second with an io timeout of 0.2 s and attempts of
    # 1.2 s: the slot is split from the start to 1.6 s, so the renewal at
    # 1 s meets TRYAGAIN for 0.6 s, more than its io timeout, and is
    # retried (in silence) until one gets through, before its lease's
    # jeopardy at 2.2 s.
    bl_bg -r "$C1_URL" --ttl 3 --connect-timeout 1 --io-timeout 0.2 --max-step 0.1 "$k" \
        sh -c "date +%s%N > \"\$0.started\"; $GATE_WAIT; echo done" "$T/gate"
    wait_for_file "$T/gate.started" 10 || fail "the command did not start: $(cat "$T/bg.err")"
    start=$(cat "$T/gate.started")
    split_slot "$k" node
    while (($(date +%s%N) - start < 1600000000)); do sleep 0.01; done
    close_slot
    # a TTL after the last renewal before the split: renewed on C2 since
    while (($(date +%s%N) - start < 3500000000)); do sleep 0.05; done
    (($(rcli_to C2 PTTL "$RK") > 0)) || fail "the lock was not renewed after the migration: $(cat "$T/bg.err")"
    gated_done
    assert_equal "$(rcli_to C2 EXISTS "$RK")" 0
}

@test "cluster: renewal through a migration that outlasts the TTL keeps the lock, without a warning" {
    local mode start
    for mode in node ask; do
        rm -f "$T/gate" "$T/gate.started" "$T/bg.err" "$T/bg.out"
        HK=$(cluster_key_on C1)
        # --ttl 2: renewed every 0.67 s; the slot then stays split for 5 s,
        # more than twice the TTL, so only renewals during the split keep it
        bl_bg -r "$C1_URL" --ttl 2 "$HK" sh -c "date +%s%N > \"\$0.started\"; $GATE_WAIT; echo done" "$T/gate"
        wait_for_file "$T/gate.started" 10 || fail "the command did not start: $(cat "$T/bg.err")"
        split_slot "$HK" "$mode"
        start=$(date +%s%N)
        while (($(date +%s%N) - start < 5000000000)); do sleep 0.1; done
        # still split, the lock still held on C2, and no warning
        [[ $(rcli_to C2 EXISTS "$RK") == "MOVED $SLOT "* ]] || fail "$mode: the slot is no longer split"
        (($(printf 'ASKING\nPTTL %s\n' "$RK" | rcli_to C2 | tail -n 1) > 0)) ||
            fail "$mode: the lock was not renewed during the migration: $(cat "$T/bg.err")"
        [[ $mode == ask ]] || (($(rcli_to C1 PTTL "{$RK}:holder") > 0)) || fail "$mode: its record was not renewed"
        assert_equal "$(cat "$T/bg.err")" ""
        close_slot
        gated_done
        assert_equal "$(rcli_to C2 EXISTS "$RK" "{$RK}:holder")" 0
    done
}

@test "cluster: nodes that redirect in a loop give the error status, not a hang" {
    local k rk slot t0 ms
    k=$(cluster_key_on C1)
    rk=$(redis_key "$k")
    slot=$(slot_of "$rk")
    # C1 sends the (absent) key to C2 with ASK; C2, not importing, sends it back.
    echo "C1 CLUSTER SETSLOT $slot STABLE" >"$T/settle"
    assert_equal "$(rcli_to C1 CLUSTER SETSLOT "$slot" MIGRATING "$(node_id C2)")" OK
    t0=$(now_us)
    run --separate-stderr bl -r "$C1_URL" -w 6 "$k" true
    ms=$(elapsed_ms "$t0")
    assert_failure 69
    assert_one_bufferlock_line
    [[ $stderr == *"Redis at redis://127.0.0.1:$C1_PORT/0"*"redirect"*"loop"* ]] || fail "stderr: $stderr"
    ((ms < $(slack_ms 1500))) || fail "took $ms ms: a loop is not worth waiting for"
}

@test "cluster: no CROSSSLOT and no key without a TTL after many runs across nodes" {
    local i n k
    for i in 1 2 3; do
        for n in C1 C2 C3; do
            k=$(cluster_key_on "$n")
            run --separate-stderr bl -r "$C1_URL" -w 5 "$k" true
            assert_success
            assert_stderr_empty
        done
    done
    for n in C1 C2 C3; do
        assert_no_key_without_ttl "$n"
    done
}

@test "cluster: fences, holder records and --slots keep every key in the lock's slot (no CROSSSLOT)" {
    local k rk n
    n=C3
    k=$(cluster_key_on "$n")
    rk=$(redis_key "$k")
    run --separate-stderr bl -r "$C1_URL" --slots 3 "$k" sh -c 'echo "$BUFFERLOCK_SLOT $BUFFERLOCK_FENCE"'
    assert_success
    assert_output "0 $(fence_counter "$n" "$k")"
    assert_stderr_empty
    local first=${output#0 } held
    assert_equal "$(slot_of "{$rk}:fence")" "$(slot_of "$rk")"
    assert_equal "$(slot_of "{$rk}:slot:2:holder")" "$(slot_of "$rk")"
    "$BL" -r "$C2_URL" --slots 3 "$k" sleep 30 </dev/null >/dev/null 2>&1 &
    track_pid $!
    wait_for_key_state "$n" "$rk" present || fail "the holder did not take slot 0"
    held=$(rcli_to "$n" HGET "{$rk}:holder" fence)
    ((held > first)) || fail "fence $held after $first"
    run --separate-stderr bl -r "$C1_URL" --slots 3 "$k" sh -c 'echo "$BUFFERLOCK_SLOT $BUFFERLOCK_FENCE"'
    assert_success
    assert_output "1 $(fence_counter "$n" "$k")"
    ((${output#1 } > held)) || fail "fence ${output#1 } after $held"
    run --separate-stderr bl status -r "$C2_URL" --slots 3 "$k"
    assert_success
    assert_output "free slots=1/3"
    run --separate-stderr bl status -r "$C2_URL" "$k"
    assert_failure 75
    assert_output --regexp "^held ttl=[0-9.]+ pid=[0-9]+ host=[^ ]+ since=[0-9.]+ fence=$held\$"
}

@test "cluster: cache --stats counts every call when the URL names a node that does not hold the counters' slot" {
    local owner url k doc
    owner=$(slot_owner "$(slot_of '{buffer:lock:stats}')")
    url=$(url_of "$(other_node "$owner")")
    # KEYs whose entries land on every node: on the URL's (no redirection,
    # so the call learns nothing of the cluster's layout from its entry) and
    # on the others.
    for k in stats-0 stats-1 stats-2 stats-3 stats-4 stats-5; do
        run -0 --separate-stderr "$BL" cache --cache-dir "$T/c" --store redis -r "$url" "$k" echo built
        run -0 --separate-stderr "$BL" cache --cache-dir "$T/c" --store redis -r "$url" "$k" echo again
        assert_output built
    done
    doc=$("$BL" cache --cache-dir "$T/c" --store redis -r "$url" --stats --json) || fail "--stats: $doc"
    python3 - "$doc" <<'PY'
import json, sys
t = json.loads(sys.argv[1])["totals"]
got = (t["builds"], t["hits"], t["misses"])
if got != (6, 6, 6):
    sys.exit("builds, hits, misses: %s, not (6, 6, 6)" % (got,))
PY
    # The counters are on the node of their slot.
    assert_equal "$(rcli_to "$owner" EXISTS '{buffer:lock:stats}')" 1
}
