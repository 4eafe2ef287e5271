#!/usr/bin/env bats
# bufferlock cache --warm, --warm-from KEY (SPEC §20): on a miss, the builder
# starts from the --output PATHs of the nearest entry (KEY's newest for any
# inputs, else each --warm-from KEY's in order), verified first; waiters are
# served the new entry; on the file, Redis and http stores.
#
# Each "clone" is a directory with src/ (the --depends) and out/ (the
# --output), named relatively, as two checkouts on two runners would.

bats_require_minimum_version 1.5.0

load http_helpers
load cache_helpers

setup_file() { http_redis_setup_file; }
teardown_file() { http_redis_teardown_file; }

setup() {
    http_redis_setup
    K="warm-key"
    # grow LABEL: counts one run, appends LABEL to out/log (built upon what
    # is there) and prints how many lines out/log has now.
    cat >"$T/bin/grow" <<EOF
#!/bin/sh
echo "\$\$" >>'$RUNS'
mkdir -p out && printf '%s\n' "\$1" >>out/log && printf 'built-%s %s\n' "\$1" "\$(wc -l <out/log)"
EOF
    chmod +x "$T/bin/grow"
    GROW="$T/bin/grow"
    STORE_ARGS=()
}
teardown() { http_redis_teardown; }

# use_store file|redis|http: what the following `bw` calls store in.
use_store() {
    case $1 in
    file) STORE_ARGS=() ;;
    redis) STORE_ARGS=(--store redis -r "$REDIS_URL") ;;
    http) STORE_ARGS=(--store "$STORE") ;;
    esac
}

# clone NAME [SRC]: a directory $T/NAME with src/a holding SRC (default 1), no out/.
clone() {
    mkdir -p "$T/$1/src"
    printf '%s\n' "${2:-1}" >"$T/$1/src/a"
}

# cache_of DIR: the cache directory of clone DIR: the test's, or with
# RUNNERS=1 one of its own (another runner, which shares only the store).
cache_of() {
    if [[ -n ${RUNNERS:-} ]]; then printf '%s\n' "$T/cache-$1"; else printf '%s\n' "$C"; fi
}

# bw DIR ARGS...: `bufferlock cache` in clone DIR with the test's store,
# --depends src --output out.
bw() {
    local dir=$1
    shift
    (cd "$T/$dir" && "$BL" cache --cache-dir "$(cache_of "$dir")" "${STORE_ARGS[@]}" --depends src --output out "$@")
}

# bw_bg DIR ARGS...: bw in the background, stdout/stderr to $T/DIR.out/.err.
bw_bg() {
    local dir=$1
    shift
    (cd "$T/$dir" && exec "$BL" cache --cache-dir "$(cache_of "$dir")" "${STORE_ARGS[@]}" --depends src --output out "$@") \
        </dev/null >"$T/$dir.out" 2>"$T/$dir.err" 3>&- &
    track_pid $!
    BG_PID=$!
}

# newest_inputs: the (short) inputs digest of KEY's newest entry, as --list shows it.
newest_inputs() {
    "$BL" cache --cache-dir "$C" "${STORE_ARGS[@]}" --list | awk -v k="$K" '$5 == k { print $4; exit }'
}

# built_upon STORE: a first build, then a changed source in a fresh clone:
# the warm build sees the old out/log and adds to it, -v names the entry it
# started from; a third caller of the new inputs is a hit of the new entry.
built_upon() {
    use_store "$1"
    clone one 1
    run --separate-stderr bw one --warm "$K" "$GROW" first
    assert_success
    assert_output "built-first 1"
    local old
    old=$(newest_inputs)
    [[ -n $old && $old != - ]] || fail "no inputs digest listed for the first entry"
    clone two 2
    run --separate-stderr bw two --warm -v "$K" "$GROW" second
    assert_success
    assert_output "built-second 2"
    assert_equal "$(cat "$T/two/out/log")" $'first\nsecond'
    [[ $stderr == *"cache '$K': warm start from '$K' (inputs $old, age "* ]] || fail "no warm line: $stderr"
    [[ $stderr != *warning* ]] || fail "stderr: $stderr"
    clone three 2
    run --separate-stderr bw three --warm "$K" "$GROW" third
    assert_success
    assert_output "built-second 2"
    assert_equal "$(cat "$T/three/out/log")" $'first\nsecond'
    assert_runs 2
}

@test "file store: the newest entry of KEY for other inputs is restored and built upon; the next caller hits" {
    built_upon file
}

@test "Redis store: the newest entry of KEY for other inputs is restored and built upon" {
    built_upon redis
}

@test "http store: the newest entry of KEY for other inputs is restored and built upon" {
    built_upon http
}

@test "without --warm the build is cold, as before" {
    clone one 1
    bw one "$K" "$GROW" first >/dev/null
    clone two 2
    run bw two "$K" "$GROW" second
    assert_success
    assert_output "built-second 1"
}

@test "--warm-from: KEY's own entry first, else the first --warm-from KEY that has one, in the order given" {
    clone a 1
    bw a main "$GROW" from-main >/dev/null
    clone b 1
    bw b other "$GROW" from-other >/dev/null
    clone f1 2
    run --separate-stderr bw f1 -v --warm-from none --warm-from other --warm-from main feature "$GROW" f1
    assert_success
    assert_output "built-f1 2"
    assert_equal "$(cat "$T/f1/out/log")" $'from-other\nf1'
    [[ $stderr == *"warm start from 'other'"* ]] || fail "stderr: $stderr"
    # Now that feature has an entry, it is the nearest.
    clone f2 3
    run --separate-stderr bw f2 --warm-from main feature "$GROW" f2
    assert_success
    assert_output "built-f2 3"
    assert_equal "$(cat "$T/f2/out/log")" $'from-other\nf1\nf2'
    [[ -z $stderr ]] || fail "stderr: $stderr"
}

@test "--warm and --warm-from without --output are usage errors (64, one line)" {
    run --separate-stderr "$BL" cache --cache-dir "$C" --warm k true
    assert_failure 64
    assert_one_bufferlock_line "--warm needs --output"
    run --separate-stderr "$BL" cache --cache-dir "$C" --warm-from main k true
    assert_failure 64
    assert_one_bufferlock_line "--warm needs --output"
}

# corrupt_newest: a byte of the stored stdout of KEY's newest entry file changed.
corrupt_newest() {
    local f
    f=$(grep -l -- "built-second" $(key_entries "$K"))
    local at
    at=$(grep -abo -- "built-second" "$f" | head -n 1 | cut -d: -f1)
    [[ -n $at ]] || fail "no stdout in $f"
    printf 'X' | dd of="$f" bs=1 seek="$at" conv=notrunc status=none
}

@test "a corrupt newest entry: a cold build with one warning; no older entry is tried; the PATH is left as it was" {
    clone one 1
    bw one "$K" "$GROW" first >/dev/null
    sleep 0.01
    clone two 2
    bw two "$K" "$GROW" second >/dev/null
    corrupt_newest
    clone three 3
    mkdir "$T/three/out"
    printf 'local\n' >"$T/three/out/log"
    run --separate-stderr bw three --warm "$K" "$GROW" third
    assert_success
    assert_output "built-third 2"
    assert_equal "$(cat "$T/three/out/log")" $'local\nthird'
    assert_one_bufferlock_line "no warm start for '$K'" "building cold"
}

@test "--sign-key: an unsigned or wrongly signed nearest entry gives a cold build with one warning" {
    printf 'key-one-%s' "$RANDOM" >"$T/key" && chmod 600 "$T/key"
    printf 'key-two-%s' "$RANDOM" >"$T/key2" && chmod 600 "$T/key2"
    clone one 1
    bw one "$K" "$GROW" unsigned >/dev/null
    clone two 2
    run --separate-stderr bw two --warm --sign-key "$T/key" "$K" "$GROW" signed
    assert_success
    assert_output "built-signed 1"
    assert_one_bufferlock_line "no warm start for '$K'" "building cold"
    clone three 3
    run --separate-stderr bw three --warm --sign-key "$T/key2" "$K" "$GROW" other-key
    assert_success
    assert_output "built-other-key 1"
    assert_one_bufferlock_line "no warm start for '$K'" "building cold"
    # With the right key, the signed entry is built upon.
    clone four 4
    run --separate-stderr bw four --warm --sign-key "$T/key2" "$K" "$GROW" signed-again
    assert_success
    assert_output "built-signed-again 2"
}

# waiters STORE: a gated warm build; two waiters of the same inputs (their
# own clones) are served the new entry and restore nothing warm; a caller
# of other inputs is not held up.
waiters() {
    use_store "$1"
    clone old 1
    bw old "$K" "$GROW" old >/dev/null
    cat >"$T/bin/gated-grow" <<EOF
#!/bin/sh
echo "\$\$" >>'$RUNS'
i=0
while [ ! -e '$T/gate' ] && [ \$i -lt 1200 ]; do sleep 0.05; i=\$((i + 1)); done
printf '%s\n' "\$1" >>out/log && printf 'built-%s %s\n' "\$1" "\$(wc -l <out/log)"
EOF
    chmod +x "$T/bin/gated-grow"
    clone builder 2
    bw_bg builder --warm -v "$K" "$T/bin/gated-grow" new
    local builder=$BG_PID
    poll_until 30 _runs_at_least 2 || fail "the build did not start"
    local w
    for w in w1 w2; do
        clone "$w" 2
        bw_bg "$w" --warm -v "$K" "$T/bin/gated-grow" "$w"
        eval "pid_$w=\$BG_PID"
    done
    # Another caller's inputs: its own lock, built at once (from the old entry).
    clone elsewhere 3
    run --separate-stderr bw elsewhere --warm "$K" "$GROW" elsewhere
    assert_success
    assert_output "built-elsewhere 2"
    sleep 0.5
    open_gate
    wait "$builder" || fail "the builder failed: $(cat "$T/builder.err")"
    assert_equal "$(cat "$T/builder.out")" "built-new 2"
    grep -q "warm start from '$K'" "$T/builder.err" || fail "builder: $(cat "$T/builder.err")"
    for w in w1 w2; do
        eval "wait \$pid_$w" || fail "$w failed: $(cat "$T/$w.err")"
        assert_equal "$(cat "$T/$w.out")" "built-new 2"
        assert_equal "$(cat "$T/$w/out/log")" $'old\nnew'
        grep -q "warm start" "$T/$w.err" && fail "$w restored the warm entry: $(cat "$T/$w.err")"
        grep -q "waited" "$T/$w.err" || fail "$w did not wait: $(cat "$T/$w.err")"
    done
    assert_runs 3 # old, new, elsewhere
}

@test "file store: waiters are served the new entry and do not restore the warm one; other inputs are not held up" {
    waiters file
}

@test "Redis store, runners with their own cache directories: waiters served the new entry, never the warm one" {
    RUNNERS=1
    waiters redis
}

@test "http store: waiters are served the new entry and do not restore the warm one" {
    waiters http
}

@test "SIGTERM during a warm restore: exit 143, the old PATH untouched, nothing left beside it, no build" {
    printf '#!/bin/sh\necho $$ >>%s\nmkdir -p out\nhead -c 64M /dev/urandom >out/big\necho built\n' \
        "$RUNS" >"$T/bin/mkbig"
    chmod +x "$T/bin/mkbig"
    clone one 1
    bw one "$K" "$T/bin/mkbig" >/dev/null || fail "the first build failed"
    clone two 2
    mkdir "$T/two/out"
    printf 'mine\n' >"$T/two/out/log"
    local ino
    ino=$(stat -c %i "$T/two/out")
    rm -f "$T/go"
    (cd "$T/two" && while [ ! -e "$T/go" ]; do sleep 0.01; done &&
        exec "$BL" cache --cache-dir "$C" --depends src --output out --warm "$K" "$T/bin/mkbig") \
        </dev/null >"$T/two.out" 2>"$T/two.err" 3>&- &
    local pid=$!
    track_pid "$pid"
    local rc=0
    stop_at "$pid" "$T/two/.out.bufferlock-*/new" || rc=$?
    ((rc == 0)) || fail "the warm restore was not caught under way ($rc)"
    kill -TERM "$pid"
    kill -CONT "$pid"
    wait_for_exit "$pid" 10 || fail "SIGTERM did not end the warm restore"
    reap "$pid"
    assert_equal "$REAPED_STATUS" 143
    assert_equal "$(ls -A "$T/two")" "$(printf '%s\n' out src)"
    assert_equal "$(stat -c %i "$T/two/out")" "$ino"
    assert_equal "$(cat "$T/two/out/log")" mine
    [[ ! -s $T/two.out ]] || fail "stdout: $(cat "$T/two.out")"
    assert_runs 1
}

@test "an expired entry of the caller's inputs (within --stale): the caller that rebuilds starts from KEY's newest" {
    clone one 1
    bw one --warm --max-age 1 --stale 600 "$K" "$GROW" first >/dev/null
    clone two 2
    bw two --warm --max-age 1 --stale 600 "$K" "$GROW" second >/dev/null
    assert_equal "$(cat "$T/two/out/log")" $'first\nsecond'
    sleep 1.2
    clone three 1
    run --separate-stderr bw three --warm -v --max-age 1 --stale 600 "$K" "$GROW" third
    assert_success
    assert_output "built-third 3"
    assert_equal "$(cat "$T/three/out/log")" $'first\nsecond\nthird'
    [[ $stderr == *"warm start from '$K'"* ]] || fail "stderr: $stderr"
}

@test "http store that cannot be read (500 on GET): a cold build, its output served, one warning in all" {
    STORE_ARGS=(--store "$(http_url rd500)")
    clone one 1
    bw one --warm "$K" "$GROW" first >/dev/null 2>&1
    clone two 2
    run --separate-stderr bw two --warm "$K" "$GROW" second
    assert_success
    assert_output "built-second 1"
    assert_equal "$(cat "$T/two/out/log")" second
    assert_one_bufferlock_line "HTTP status 500"
}
