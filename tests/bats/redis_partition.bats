#!/usr/bin/env bats
# Network partitions, for real (SPEC §7, the holder's lease): bufferlock and
# its servers run in a private network namespace whose loopback link the
# test takes down, which drops packets silently (no RST, no answer). The
# host's interfaces are never touched. The test itself reaches the servers
# through unix sockets, which a downed link does not cut, so it can read the
# server's own PTTL in the middle of a partition.
#
# Needs CAP_NET_ADMIN (root) for unshare -n: skipped otherwise.

bats_require_minimum_version 1.5.0

load redis_helpers

setup() {
    common_setup
    if [[ $(id -u) != 0 ]] || ! unshare -n true 2>/dev/null; then
        skip "needs CAP_NET_ADMIN (root) for private network namespaces (unshare -n)"
    fi
    if ! command -v nsenter >/dev/null || ! command -v ip >/dev/null; then
        skip "needs nsenter and ip"
    fi
    # The namespace lives as long as this process (stopped by PID in teardown).
    unshare -n sh -c 'ip link set lo up && exec sleep 600' </dev/null >/dev/null 2>&1 3>&- &
    NS_PID=$!
    track_pid "$NS_PID"
    NS=/proc/$NS_PID/ns/net
    local i
    for ((i = 0; i < 200; i++)); do
        if [[ $(readlink "$NS") != "$(readlink /proc/self/ns/net)" ]] &&
            nsenter --net="$NS" ip -o link show lo | grep -q LOWER_UP; then
            break
        fi
        sleep 0.02
    done
    ((i < 200)) || fail "the private network namespace did not come up"
    # One `ip -batch` inside the namespace takes the link down and up, fed
    # line by line, and a fifo that never holds data gives a sleep without a
    # fork: a partition starts and ends within a millisecond of its time
    # even when a loaded machine takes 200 ms to start a process.
    mkfifo "$T/link.in" "$T/link.out" "$T/never"
    exec {LINK_IN}<>"$T/link.in" {LINK_OUT}<>"$T/link.out" {NEVER}<>"$T/never"
    nsenter --net="$NS" ip -force -oneline -batch - <&"$LINK_IN" >&"$LINK_OUT" 2>&1 3>&- &
    track_pid $!
    # redis-server started inside the namespace (nsenter execs it: same PID)
    printf '#!/bin/sh\nexec nsenter --net=%s %s "$@"\n' "$NS" "$(command -v "$REDIS_SERVER_BIN")" >"$T/redis-in-ns"
    chmod +x "$T/redis-in-ns"
}

teardown() { redis_teardown; }

# ns_redis_as NAME PORT: a server inside the namespace on 127.0.0.1:PORT there
# (NAME_TCP_URL), and on a unix socket for this test (rcli_to NAME).
ns_redis_as() {
    REDIS_SERVER_BIN=$T/redis-in-ns start_redis_unix_as "$1" --port "$2" || fail "cannot start $1"
    printf -v "$1_TCP_URL" 'redis://127.0.0.1:%s/0' "$2"
}

# link up|down: the namespace's loopback link.
link() {
    local state
    printf 'link set lo %s\nlink show lo\n' "$1" >&"$LINK_IN"
    read -r -t 5 -u "$LINK_OUT" state || fail "ip did not answer"
    case $1 in
        up) [[ $state == *LOWER_UP* ]] ;;
        down) [[ $state != *,UP* ]] ;;
    esac || fail "link $1: $state"
}

# now_ns: the wall clock in ns (as date +%s%N), without a fork.
now_ns() { local t=${EPOCHREALTIME/./}; NOW_NS=$((10#$t * 1000)); }

# at_ms START_NS MS: returns at MS ms after START_NS (at once if that is past).
at_ms() {
    local left pause
    while now_ns; left=$((($1 + $2 * 1000000 - NOW_NS) / 1000)); ((left > 0)); do
        # a read with a timeout on a fifo that never holds data: a sleep without a fork
        printf -v pause '0.%06d' $((left > 999999 ? 999999 : left))
        read -r -t "$pause" -u "$NEVER" || true
    done
}

# command_start FILE: the time (ns) the command wrote to FILE, seen within
# about a millisecond (in START).
command_start() {
    local i
    for ((i = 0; i < 10000; i++)); do
        [[ -s $1 ]] && read -r START <"$1" && [[ -n $START ]] && return 0
        read -r -t 0.001 -u "$NEVER" || true
    done
    return 1
}

# ns_bg ARGS...: bufferlock inside the namespace, in the background (as
# bl_bg: $BG_PID, stdout/stderr in ${BG_OUT:-$T/bg.out}, ${BG_ERR:-$T/bg.err}).
ns_bg() {
    env --default-signal=INT,QUIT nsenter --net="$NS" "$BL" "$@" </dev/null \
        >"${BG_OUT:-$T/bg.out}" 2>"${BG_ERR:-$T/bg.err}" 3>&- &
    BG_PID=$!
    track_pid "$BG_PID"
}

# watch_death PID FILE: writes the time (ns) PID is gone to FILE.
watch_death() {
    (
        while kill -0 "$1" 2>/dev/null; do read -r -t 0.002 -u "$NEVER" || true; done
        now_ns
        echo "$NOW_NS" >"$2"
    ) &
    track_pid $!
}

ms_between() { echo $((($2 - $1) / 1000000)); }

# healed_partition DOWN_MS UP_MS SECONDS ARGS...: a holder run with ARGS
# whose command lasts SECONDS, the link down from DOWN_MS to UP_MS after the
# command's start: the renewal it met is retried until one gets through, and
# nothing is lost (the lock still ours at the end, then released).
healed_partition() {
    local down=$1 up=$2 seconds=$3 rk start
    shift 3
    rk=$(redis_key "$K")
    ns_bg -r "$R_TCP_URL" "$@" "$K" sh -c 'date +%s%N > "$0.start"; sleep "$2"
        redis-cli -s "$1" GET "$BUFFERLOCK_REDIS_KEY" > "$0.holder"; echo "$BUFFERLOCK_TOKEN" > "$0.token"' \
        "$T/c" "$R_SOCK" "$seconds"
    command_start "$T/c.start" || fail "the command did not start: $(cat "$T/bg.err")"
    start=$START
    at_ms "$start" "$down"
    link down
    at_ms "$start" "$up"
    link up
    wait_for_exit "$BG_PID" 15 || fail "bufferlock did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/c.holder")" "$(cat "$T/c.token")"
    local err
    err=$(cat "$T/bg.err")
    [[ $err != *lost* && $err != *SIGTERM* ]] || fail "stderr: $err"
    [[ $err == *"retrying while the lock may still be ours"* ]] || fail "the partition was not noticed: $err"
    assert_equal "$(rcli_to R EXISTS "$rk")" 0
}

# cut_off_holder DOWN_MS GRACE_MS ARGS...: a holder run with ARGS whose
# command ignores SIGTERM (noting when it came) is cut off DOWN_MS after the
# command's start: SIGTERM after the partition, SIGKILL GRACE_MS (its
# --kill-after) after the SIGTERM, both before the server's own expiry;
# bufferlock ends 137.
cut_off_holder() {
    local down_ms=$1 grace_ms=$2 rk start down pttl now expiry term dead grace err
    shift 2
    rk=$(redis_key "$K")
    ns_bg -r "$R_TCP_URL" "$@" "$K" \
        sh -c 'trap "date +%s%N > \"\$0.term\"" TERM; echo $$ > "$0.pid"; date +%s%N > "$0.start"
               while :; do sleep 0.01; done' "$T/c"
    command_start "$T/c.start" || fail "the command did not start: $(cat "$T/bg.err")"
    start=$START
    watch_death "$(cat "$T/c.pid")" "$T/c.dead"
    at_ms "$start" "$down_ms"
    link down
    now_ns
    down=$NOW_NS
    # The server's own view, through its unix socket: nothing reaches it any
    # more, so its expiry is fixed from now on.
    pttl=$(rcli_to R PTTL "$rk")
    now=$(date +%s%N)
    ((pttl > 0)) || fail "the key was gone already (PTTL $pttl)"
    expiry=$((now + pttl * 1000000))
    wait_for_file "$T/c.dead" 10 || fail "the command was not killed: $(cat "$T/bg.err")"
    term=$(cat "$T/c.term")
    dead=$(cat "$T/c.dead")
    echo "# timeline from the command's start: link down $(ms_between "$start" "$down") ms," \
        "SIGTERM $(ms_between "$start" "$term") ms, SIGKILL $(ms_between "$start" "$dead") ms," \
        "server expiry $(ms_between "$start" "$expiry") ms" >&3
    ((term > down)) || fail "SIGTERM before the partition"
    # a grace of --kill-after measured from the SIGTERM
    grace=$(ms_between "$term" "$dead")
    ((grace >= grace_ms - 50 && grace < grace_ms + $(slack_ms 400))) ||
        fail "SIGKILL $grace ms after SIGTERM, expected --kill-after ($grace_ms ms)"
    ((dead < expiry)) || fail "SIGKILL $(ms_between "$expiry" "$dead") ms after the server's expiry"
    link up
    wait_for_exit "$BG_PID" 10 || fail "bufferlock did not exit"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 137
    err=$(cat "$T/bg.err")
    [[ $err == *"in time: it may be lost; sending the command SIGTERM"* ]] || fail "stderr: $err"
    [[ $err == *"SIGKILL"* ]] || fail "stderr: $err"
    ! grep -qv '^bufferlock: ' <<<"$err" || fail "stray stderr lines: $err"
}

@test "partition: a cut-off holder gets SIGTERM and SIGKILL before the server's expiry (the lease)" {
    ns_redis_as R 6379
    # TTL 3, renewals every 1 s, attempts of 0.4 s, --kill-after 1; down at
    # 1.3 s after the start (the renewal at about 1.0 s went through):
    # SIGTERM at about 2.57 s, SIGKILL 1 s later.
    cut_off_holder 1300 1000 --ttl 3 --on-lost term --kill-after 1 --connect-timeout 0.2 --io-timeout 0.2
}

@test "partition: a waiter cut off from Redis gives up within its timeouts, with the error status" {
    ns_redis_as R 6379
    rcli_to R SET "$(redis_key "$K")" foreign PX 60000 >/dev/null
    local t0 ms
    t0=$(now_us)
    ns_bg -r "$R_TCP_URL" -w 2 --connect-timeout 0.2 --io-timeout 0.2 "$K" echo ran
    sleep 0.5
    link down
    wait_for_exit "$BG_PID" 10 || fail "the waiter hangs"
    ms=$(elapsed_ms "$t0")
    reap "$BG_PID"
    # the wait (2 s) plus one attempt's timeouts, with room for a loaded machine
    ((ms >= 1900 && ms < 4000)) || fail "gave up after $ms ms, expected about 2 s + 0.4 s"
    assert_equal "$REAPED_STATUS" 69
    assert_equal "$(cat "$T/bg.out")" ""
    local err
    err=$(cat "$T/bg.err")
    assert_equal "$(grep -c . <<<"$err")" 1
    [[ $err == "bufferlock: cannot take the lock: Redis at $R_TCP_URL: "* ]] || fail "stderr: $err"
    # cut off from the start: the same, through the connect timeout
    t0=$(now_us)
    ns_bg -r "$R_TCP_URL" -w 1 --connect-timeout 0.2 --io-timeout 0.2 "$K" echo ran
    wait_for_exit "$BG_PID" 10 || fail "the waiter hangs"
    ms=$(elapsed_ms "$t0")
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 69
    ((ms < 3000)) || fail "gave up after $ms ms, expected about 1 s + 0.2 s"
}

@test "partition: a partition healed within the lease loses nothing" {
    ns_redis_as R 6379
    # TTL 3, --kill-after 0.5: SIGTERM would come 2.07 s after the last
    # renewal. The link is down from 0.7 s to 1.3 s: the renewal at 1.0 s
    # times out and is retried until one gets through.
    healed_partition 700 1300 4 --ttl 3 --on-lost term --kill-after 0.5 --connect-timeout 0.2 --io-timeout 0.2 \
        --max-step 0.1
}

@test "partition: a quorum with one master partitioned keeps the lock" {
    # Two masters on unix sockets (not cut), the third over TCP in the
    # namespace: taking the link down partitions that one alone.
    ns_redis_as Q1 6381
    ns_redis_as Q2 6382
    ns_redis_as Q3 6383
    local rk
    rk=$(redis_key "$K")
    ns_bg -r "$Q1_URL" -r "$Q2_URL" -r "$Q3_TCP_URL" --ttl 3 --on-lost term --kill-after 0.5 \
        --connect-timeout 0.2 --io-timeout 0.2 "$K" sh -c \
        'echo x > "$0.start"; sleep 4.5; redis-cli -s "$1" GET "$BUFFERLOCK_REDIS_KEY" > "$0.q1"
         redis-cli -s "$2" GET "$BUFFERLOCK_REDIS_KEY" > "$0.q2"; echo "$BUFFERLOCK_TOKEN" > "$0.token"' \
        "$T/c" "$Q1_SOCK" "$Q2_SOCK"
    wait_for_file "$T/c.start" 10 || fail "the command did not start: $(cat "$T/bg.err")"
    assert_equal "$(rcli_to Q3 EXISTS "$rk")" 1
    sleep 0.3
    link down
    wait_for_exit "$BG_PID" 20 || fail "bufferlock did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    # the command outlived the TTL (3 s) and the majority still held its token
    assert_equal "$(cat "$T/c.q1")" "$(cat "$T/c.token")"
    assert_equal "$(cat "$T/c.q2")" "$(cat "$T/c.token")"
    local err
    err=$(cat "$T/bg.err")
    [[ $err != *lost* ]] || fail "stderr: $err"
    # released on the majority; the partitioned one keeps it until its TTL
    assert_equal "$(rcli_to Q1 EXISTS "$rk")" 0
    assert_equal "$(rcli_to Q2 EXISTS "$rk")" 0
    link up
}

# --- --ttl 1 --on-lost term with the default timeouts (issue #32): renewal
# attempts of TTL/18 (two timeouts of 1/36 s), --kill-after 1/6 - 0.012 s.

@test "partition: --ttl 1 --on-lost term with the defaults: SIGTERM and SIGKILL before the server's expiry" {
    ns_redis_as R 6379
    # renewals every 1/3 s, attempts of 1/18 s, --kill-after 1/6 - 0.012 s
    cut_off_holder 1200 155 --ttl 1 --on-lost term
}

@test "partition: --ttl 1 --on-lost term with the defaults: a partition shorter than a renewal interval kills nothing" {
    ns_redis_as R 6379
    # down from 0.18 s to 0.48 s (0.3 s, a renewal period is 1/3 s): the
    # renewal due at 1/3 s fails and is retried until one gets through,
    # long before SIGTERM would come (about 0.79 s)
    healed_partition 180 480 2 --ttl 1 --on-lost term
}
