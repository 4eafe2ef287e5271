#!/usr/bin/env bats
# What `bufferlock cache -v` says (the man page's "Reading the log"): one
# line per call with what it came to (hit, built and stored, waited, served
# stale, not stored) on the file, Redis and HTTP stores; the wait line naming
# KEY; --list's stored size; what --gc -v and --drop -v removed; a cache
# directory that cannot be used; a --depends PATH that is missing.

bats_require_minimum_version 1.5.0

load http_helpers
load cache_helpers

setup_file() { http_redis_setup_file; }
teardown_file() { http_redis_teardown_file; }

setup() { http_redis_setup; }
teardown() {
    tmux -L cl kill-server 2>/dev/null || true
    http_redis_teardown
}

# outcome_lines: the lines of $stderr that say what a call came to.
outcome_lines() {
    grep -E "^bufferlock: cache '.*': (hit|built and stored|waited|served stale|not stored) " <<<"$stderr" || true
}

# assert_outcome REGEX: $stderr has exactly one outcome line, and it matches.
assert_outcome() {
    local got
    got=$(outcome_lines)
    [[ -n $got && $got != *$'\n'* ]] || fail "expected one outcome line, got: $stderr"
    assert_regex "$got" "$1"
}

size_of() { stat -c %s -- "$1"; }

# One decimal number of seconds, as the log writes them.
SECS='[0-9]+\.[0-9]{3}'

@test "file store: -v says built and stored, then hit, with the entry's stored size and path; nothing without -v" {
    run --separate-stderr blc -v "$K" echo hello
    assert_success
    assert_output hello
    local path size
    path=$(entry_path "$K")
    size=$(size_of "$path")
    assert_outcome "^bufferlock: cache '$K': built and stored \(build ${SECS}s, stored $size bytes, in $path\)\$"
    run --separate-stderr blc -v "$K" echo other
    assert_success
    assert_output hello
    assert_outcome "^bufferlock: cache '$K': hit \(age ${SECS}s, stored $size bytes, from $path\)\$"
    run --separate-stderr blc "$K" echo other
    assert_success
    assert_stderr_empty
}

@test "redis store: -v says where a hit came from: the server and the key" {
    run --separate-stderr bls -v "$K" echo hello
    assert_success
    assert_outcome "^bufferlock: cache '$K': built and stored \(build ${SECS}s, stored [0-9]+ bytes, in Redis at "
    local built=$stderr
    run --separate-stderr bls -v "$K" echo other
    assert_success
    assert_output hello
    assert_outcome "^bufferlock: cache '$K': hit \(age ${SECS}s, stored [0-9]+ bytes, from Redis at redis://127\.0\.0\.1:$REDIS_PORT.*, key \{buffer:lock:$(key_md5 "$K")\}:entry\)\$"
    # The stored size is the hash's fields, header to trailer: an entry file's bytes.
    local stored fields
    stored=$(outcome_lines | sed -E 's/.*stored ([0-9]+) bytes.*/\1/')
    fields=$(rcli HGETALL "$(ekey "$K")" | awk 'NR % 2 == 0' | tr -d '\n' | wc -c)
    [[ $built == *"stored $stored bytes"* ]] || fail "build and hit differ: $built / $stderr"
    (( stored > 0 && stored >= fields - 8 )) || fail "stored $stored, the fields hold about $fields"
}

@test "http store: -v names the server of a hit, never its password" {
    local url=${STORE/http:\/\//http://someone:pw-never-logged@}
    BUFFERLOCK_CACHE_STORE=$url run --separate-stderr "$BL" cache --cache-dir "$C" -v "$K" echo hello
    assert_success
    local object size
    object=$(obj_path "$K")
    size=$(size_of "$object")
    assert_outcome "^bufferlock: cache '$K': built and stored \(build ${SECS}s, stored $size bytes, in HTTP store at "
    BUFFERLOCK_CACHE_STORE=$url run --separate-stderr "$BL" cache --cache-dir "$C" -v "$K" echo other
    assert_success
    assert_output hello
    assert_outcome "^bufferlock: cache '$K': hit \(age ${SECS}s, stored $size bytes, from HTTP store at http://someone:[^@]*@127\.0\.0\.1:$HTTP_PORT/cache/$HTTP_T/, object $(key_md5 "$K")\.entry\)\$"
    [[ $stderr != *pw-never-logged* ]] || fail "the password is in the log: $stderr"
}

@test "a caller that waited for another's build says so, once, and how long it waited" {
    blc_bg "$K" "$GATED" built
    wait_until_held "$C/locks" "$K" "$BG_PID"
    BG_OUT=$T/w.out BG_ERR=$T/w.err blc_bg -v "$K" echo never
    local waiter=$BG_PID
    wait_until_waiting "$C/locks" "$K" "$waiter" 2>/dev/null || sleep 0.5
    open_gate
    wait_for_exit "$waiter" 30 || fail "the waiter did not finish"
    assert_equal "$(cat "$T/w.out")" built
    stderr=$(cat "$T/w.err")
    assert_outcome "^bufferlock: cache '$K': waited ${SECS}s for another caller's build, served it \(age ${SECS}s, stored $(size_of "$(entry_path "$K")") bytes, from $(entry_path "$K")\)\$"
    assert_runs 1
}

@test "served stale: a failed rebuild under --stale-if-error, and a stale entry served while another rebuilds" {
    blc "$K" echo old >/dev/null
    run --separate-stderr blc -v --force --stale-if-error "$K" sh -c 'exit 3'
    assert_success
    assert_output old
    assert_outcome "^bufferlock: cache '$K': served stale \(age ${SECS}s, stored [0-9]+ bytes, from $(entry_path "$K")\): the rebuild failed: the command exited with status 3\$"
    # An entry past --max-age within --stale, its lock held: served as it is.
    sleep 0.3
    hold_lock "$C/locks" "$K"
    run --separate-stderr blc -v --max-age 0.1 --stale 1h "$K" echo new
    release_lock
    assert_success
    assert_output old
    assert_outcome "^bufferlock: cache '$K': served stale \(age ${SECS}s, .*\): another caller is rebuilding it\$"
}

@test "not stored: -v says why in one line (over --max-entry, a failed command), and no 'built' line" {
    run --separate-stderr blc -v --max-entry 10 "$K" echo "more than ten bytes"
    assert_success
    assert_output "more than ten bytes"
    assert_outcome "^bufferlock: cache '$K': not stored \(build ${SECS}s\): its stored size, [0-9]+ bytes, is over --max-entry\$"
    run --separate-stderr blc -v "$K" sh -c 'echo partial; exit 3'
    assert_failure 3
    assert_outcome "^bufferlock: cache '$K': not stored \(build ${SECS}s\): the command exited with status 3\$"
    # Without -v: the one warning of --max-entry, nothing more.
    run --separate-stderr blc --max-entry 10 "$K" echo "more than ten bytes"
    assert_one_bufferlock_line "over --max-entry"
}

@test "the wait line of a cache caller names KEY, not the lock's KEY@inputs:DIGEST" {
    printf 'x\n' >"$T/dep"
    blc_bg --depends "$T/dep" "$K" sh -c "echo \$\$ >>'$RUNS'; $GATE_WAIT; echo built" "$T/gate"
    poll_until 10 test -s "$RUNS" || fail "the build did not start"
    export TMUX_TMPDIR="$T" TERM=xterm
    tmux -L cl -f /dev/null new-session -d -x 150 -y 10 \
        "$(printf '%q ' "$BL" cache --cache-dir "$C" --depends "$T/dep" -w 10m "$K" echo rebuilt); sleep 30"
    local i shown=""
    for ((i = 0; i < 100 * TIME_SCALE; i++)); do
        shown=$(tmux -L cl capture-pane -p)
        [[ $shown == *"waiting for the build of"* ]] && break
        sleep 0.1
    done
    open_gate
    assert_regex "$shown" "bufferlock: waiting for the build of '$K' \(by pid [0-9]+"
    [[ $shown != *@inputs* ]] || fail "the line shows the lock's key: $shown"
}

@test "--list shows the stored size of an --output entry beside its stdout size, in text and JSON" {
    mkdir -p "$T/w"
    cd "$T/w"
    run --separate-stderr blc --output out "$K" sh -c 'head -c 300000 /dev/urandom >out; echo done'
    assert_success
    local entry size
    entry=$(key_entries "$K")
    size=$(size_of "$entry")
    ((size > 300000)) || fail "the entry holds $size bytes"
    run --separate-stderr blc --list
    assert_success
    assert_output --regexp "^[0-9.]+ 5\+1 $size - $K\$"
    run --separate-stderr blc --list --json
    assert_success
    assert_equal "$(jq -c '.entries[] | [.size, .stored, (.stored | type)]' <<<"$output")" "[5,$size,\"number\"]"
    # The HTTP store: the object's size.
    run --separate-stderr blh --output out "$K" sh -c 'head -c 300000 /dev/urandom >out; echo done'
    assert_success
    size=$(size_of "$(key_objects "$K")")
    run --separate-stderr blh --list --json
    assert_success
    assert_equal "$(jq -c '.entries[] | [.size, .stored]' <<<"$output")" "[5,$size]"
}

@test "--gc -v names each entry and file it removed, and why; --drop -v each entry" {
    printf 'x\n' >"$T/dep"
    blc "$K" echo a >/dev/null
    blc --depends "$T/dep" "$K" echo b >/dev/null
    local plain dep
    plain=$(entry_path "$K")
    dep=$(key_entries "$K" | grep -v "^$plain\$")
    printf 'junk\n' >"$C/0123456789abcdef0123456789abcdef.entry"
    : >"$C/.tmp-0123-1-abcdefgh"
    sleep 0.3
    local psize dsize
    psize=$(size_of "$plain")
    dsize=$(size_of "$dep")
    run --separate-stderr blc -v --max-age 0.2 --gc
    assert_success
    assert_output ""
    local inputs=${dep#"$C/$(key_md5 "$K")."}
    inputs=${inputs:0:12}
    assert_regex "$stderr" "(^|"$'\n'")bufferlock: removed '$K' \(inputs -, $psize bytes\) from $plain: expired(\$|"$'\n'")"
    assert_regex "$stderr" "bufferlock: removed '$K' \(inputs $inputs, $dsize bytes\) from $dep: expired"
    assert_regex "$stderr" "bufferlock: removed $C/0123456789abcdef0123456789abcdef\.entry: corrupt"
    assert_regex "$stderr" "bufferlock: removed $C/\.tmp-0123-1-abcdefgh: leftover"
    assert_regex "$stderr" "bufferlock: removed 3 entries and 1 temporary files from $C"

    blc "$K" echo a >/dev/null
    run --separate-stderr blc -v --drop "$K"
    assert_success
    assert_one_bufferlock_line "removed '$K' (inputs -, $psize bytes) from $plain: dropped"
    run --separate-stderr blc --drop "$K"
    assert_stderr_empty
}

@test "--drop -v on the Redis and HTTP stores, --gc -v on the HTTP store" {
    bls "$K" echo a >/dev/null
    run --separate-stderr bls -v --drop "$K"
    assert_success
    assert_one_bufferlock_line
    assert_regex "$stderr" "^bufferlock: removed '$K' \(inputs -, [0-9]+ bytes\) from Redis at redis://127\.0\.0\.1:$REDIS_PORT.*, key \{buffer:lock:$(key_md5 "$K")\}:entry: dropped\$"
    run --separate-stderr bls -v --drop "$K"
    assert_stderr_empty

    blh "$K" echo a >/dev/null
    local size
    size=$(size_of "$(obj_path "$K")")
    run --separate-stderr blh -v --drop "$K"
    assert_success
    assert_one_bufferlock_line "removed '$K' (inputs -, $size bytes) from HTTP store at $STORE, object $(key_md5 "$K").entry: dropped"
    blh "$K" echo a >/dev/null
    sleep 0.3
    run --separate-stderr blh -v --max-age 0.2 --gc
    assert_success
    assert_regex "$stderr" "bufferlock: removed '$K' \(inputs -, $size bytes\) from HTTP store at .*: expired"
}

@test "a cache directory that cannot be created is named as such: 69, or a build without lock under --fail-open" {
    local runner=() bin=$BL parent
    if is_root; then
        make_public_dir
        parent="$PUB/ro"
        mkdir -m 0755 "$parent"
        bin=$PUB_BL
        runner=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
    else
        parent="$T/ro"
        mkdir -m 0555 "$parent"
    fi
    run --separate-stderr "${runner[@]}" "$bin" cache --cache-dir "$parent/c" "$K" echo hi
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "cannot use the cache directory $parent/c (its locks live there): Permission denied"
    run --separate-stderr "${runner[@]}" "$bin" cache --fail-open --cache-dir "$parent/c" "$K" echo hi
    assert_success
    assert_output hi
    assert_one_bufferlock_line "cannot use the cache directory $parent/c (its locks live there): Permission denied; running the command without the lock (--fail-open)"
    is_root || chmod 0755 "$parent"
}

@test "a read-only cache directory (a read-only mount) is named as such" {
    is_root && unshare -m true 2>/dev/null || skip "needs root for a private mount namespace"
    mkdir -p "$T/ro/c"
    run --separate-stderr unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && exec "$2" cache --cache-dir "$1" "$3" echo hi' \
        sh "$T/ro/c" "$BL" "$K"
    assert_failure 69
    assert_one_bufferlock_line "cannot use the cache directory $T/ro/c (its locks live there): Read-only file system"
}

@test "-v names a --depends PATH that is missing (a typo is a legal input state); nothing without -v" {
    printf 'x\n' >"$T/there"
    run --separate-stderr blc -v --depends "$T/there" --depends "$T/src/mian.c" "$K" echo built
    assert_success
    assert_output built
    [[ $(grep -c -- "--depends" <<<"$stderr") == 1 ]] || fail "not one --depends line: $stderr"
    assert_regex "$stderr" "(^|"$'\n'")bufferlock: --depends $T/src/mian\.c: No such file or directory \(counted as missing\)"
    run --separate-stderr blc --depends "$T/src/mian.c" "$K" echo built
    assert_success
    assert_stderr_empty
}
