#!/usr/bin/env bats
# bufferlock cache --sign-key FILE: entries carry an HMAC-SHA256 over the
# whole entry, checked before the first byte is served; an entry changed in
# the store (and resealed: its checksums recomputed, as anyone who can write
# the store can) or written without the key is a miss, rebuilt and signed.

bats_require_minimum_version 1.5.0

load redis_helpers
load cache_helpers

setup_file() {
    redis_setup_file
    RESEAL="$(dirname "$BL")/reseal_entry"
    [[ -x $RESEAL ]] || {
        echo "reseal_entry not built next to $BL (configure with -DBUFFERLOCK_TESTS=ON)" >&2
        return 1
    }
    export RESEAL
}
teardown_file() { redis_teardown_file; }

setup() {
    cache_setup
    redis_reset_shared
    K="sign-key"
    SECRET="s3cr3t-$RANDOM$RANDOM-never-shown"
    printf '%s' "$SECRET" >"$T/key"
    chmod 600 "$T/key"
    printf 'another-%s' "$SECRET" >"$T/key2"
    chmod 600 "$T/key2"
}
teardown() {
    track_descendants
    redis_teardown
}

# change_payload FILE FROM TO: replaces the stored stdout text FROM (same
# length) by TO in the entry file FILE, then recomputes its checksums.
change_payload() {
    local at
    at=$(grep -abo -- "$2" "$1" | head -n 1 | cut -d: -f1)
    [[ -n $at ]] || fail "'$2' not in $1"
    printf '%s' "$3" | dd of="$1" bs=1 seek="$at" conv=notrunc status=none
    "$RESEAL" "$1" || fail "cannot reseal $1"
}

# assert_secret_hidden: the key is in neither $output nor $stderr.
assert_secret_hidden() {
    [[ ${output-} != *"$SECRET"* && ${stderr-} != *"$SECRET"* ]] || fail "the key was printed"
}

@test "a signed entry is served with the key; the key is never printed nor on the command line" {
    run --separate-stderr blc --sign-key "$T/key" "$K" "$COUNTED" 0 payload-AAAA
    assert_success
    assert_output payload-AAAA
    [[ -z $stderr ]] || fail "stderr: $stderr"
    run --separate-stderr env BUFFERLOCK_SIGN_KEY="$T/key" "$BL" cache --cache-dir "$C" "$K" "$COUNTED" 0 other
    assert_success
    assert_output payload-AAAA
    [[ -z $stderr ]] || fail "stderr: $stderr"
    assert_runs 1
    grep -qF -- "$SECRET" "$(entry_path "$K")" && fail "the key is in the entry"
    # While a build runs, ps shows the key file's name, not the key.
    blc_bg --sign-key "$T/key" -v other-key "$GATED" slow
    local i
    for ((i = 0; i < 200; i++)); do [[ $(runs) == 2 ]] && break; sleep 0.05; done
    run ps -ww -eo args
    [[ $output == *"--sign-key $T/key"* ]] || fail "the build is not in ps: $output"
    assert_secret_hidden
    open_gate
    wait "$BG_PID"
    stderr=$(cat "$T/bg.err") output=$(cat "$T/bg.out")
    assert_secret_hidden
}

@test "file store: an entry changed by one byte (checksums resealed) is a miss with one warning, rebuilt signed" {
    run --separate-stderr blc --sign-key "$T/key" "$K" "$COUNTED" 0 payload-AAAA
    assert_success
    change_payload "$(entry_path "$K")" payload-AAAA payload-AAAB
    # Without the key the change passes every check: the forging works.
    run --separate-stderr blc "$K" "$COUNTED" 0 unused
    assert_success
    assert_output payload-AAAB
    assert_runs 1
    run --separate-stderr blc --sign-key "$T/key" "$K" "$COUNTED" 0 payload-NEW1
    assert_success
    assert_output payload-NEW1
    assert_one_bufferlock_line "signature does not match" "rebuilding"
    assert_secret_hidden
    assert_runs 2
    # Rebuilt and signed: served with the key, no warning.
    run --separate-stderr blc --sign-key "$T/key" "$K" "$COUNTED" 0 unused
    assert_success
    assert_output payload-NEW1
    [[ -z $stderr ]] || fail "stderr: $stderr"
    assert_runs 2
}

@test "file store: an entry written without the key, or with another key, is a miss and rebuilt" {
    run --separate-stderr blc "$K" "$COUNTED" 0 unsigned
    assert_success
    run --separate-stderr blc --sign-key "$T/key" "$K" "$COUNTED" 0 signed-1
    assert_success
    assert_output signed-1
    assert_one_bufferlock_line "not signed" "rebuilding"
    assert_runs 2
    run --separate-stderr blc --sign-key "$T/key2" "$K" "$COUNTED" 0 signed-2
    assert_success
    assert_output signed-2
    assert_one_bufferlock_line "signature does not match"
    assert_runs 3
    run --separate-stderr blc --sign-key "$T/key2" "$K" "$COUNTED" 0 unused
    assert_output signed-2
    [[ -z $stderr ]] || fail "stderr: $stderr"
    # Without the option a signed entry is served as it is.
    run --separate-stderr blc "$K" "$COUNTED" 0 unused
    assert_output signed-2
    [[ -z $stderr ]] || fail "stderr: $stderr"
    assert_runs 3
}

@test "file store: --keep-stderr and --output are covered by the signature too" {
    mkdir -p "$T/w"
    cat >"$T/bin/both" <<EOF
#!/bin/sh
echo "\$\$" >>'$RUNS'
mkdir -p dist && printf 'file-%s\n' "\$1" >dist/f
echo out-\$1
echo err-STDERR >&2
EOF
    chmod +x "$T/bin/both"
    (cd "$T/w" && blc --sign-key "$T/key" --keep-stderr --output dist "$K" "$T/bin/both" one) >/dev/null 2>&1
    change_payload "$(key_entries "$K")" err-STDERR err-CHANGE
    run --separate-stderr bash -c 'cd "$1" && shift && "$@"' _ "$T/w" "$BL" cache --cache-dir "$C" \
        --sign-key "$T/key" --keep-stderr --output dist "$K" "$T/bin/both" two
    assert_success
    assert_output out-two
    [[ $stderr == *"signature does not match"* ]] || fail "stderr: $stderr"
    [[ $stderr != *CHANGE* ]] || fail "the changed stderr was served: $stderr"
    [[ $(cat "$T/w/dist/f") == file-two ]] || fail "dist/f: $(cat "$T/w/dist/f")"
    assert_runs 2
}

@test "Redis store: a signed entry is served; a part changed by one byte, or an unsigned entry, is rebuilt" {
    local ekey
    ekey=$(ekey "$K")
    run --separate-stderr blc --store redis -r "$REDIS_URL" --sign-key "$T/key" "$K" "$COUNTED" 0 payload-AAAA
    assert_success
    run --separate-stderr blc --store redis -r "$REDIS_URL" --sign-key "$T/key" "$K" "$COUNTED" 0 other
    assert_output payload-AAAA
    [[ -z $stderr ]] || fail "stderr: $stderr"
    assert_runs 1
    # The hash as an entry file, changed, resealed, loaded back part by part.
    local f="$T/entry"
    {
        rcli --raw HGET "$ekey" h | head -c -1
        rcli --raw HGET "$ekey" 0 | head -c -1
        rcli --raw HGET "$ekey" t | head -c -1
    } >"$f"
    local hlen plen
    hlen=$(rcli HSTRLEN "$ekey" h)
    plen=$(rcli HSTRLEN "$ekey" 0)
    change_payload "$f" payload-AAAA payload-AAAB
    tail -c +$((hlen + 1)) "$f" | head -c "$plen" | rcli -x HSET "$ekey" 0 >/dev/null
    tail -c 16 "$f" | rcli -x HSET "$ekey" t >/dev/null
    run --separate-stderr blc --store redis -r "$REDIS_URL" "$K" "$COUNTED" 0 unused
    assert_output payload-AAAB # without the key the change passes: the forging works
    run --separate-stderr blc --store redis -r "$REDIS_URL" --sign-key "$T/key" "$K" "$COUNTED" 0 payload-NEW1
    assert_success
    assert_output payload-NEW1
    assert_one_bufferlock_line "signature does not match" "rebuilding"
    assert_runs 2
    run --separate-stderr blc --store redis -r "$REDIS_URL" --sign-key "$T/key" "$K" "$COUNTED" 0 unused
    assert_output payload-NEW1
    [[ -z $stderr ]] || fail "stderr: $stderr"
    # Written by a client without the key: a miss, rebuilt.
    run --separate-stderr blc --store redis -r "$REDIS_URL" --force "$K" "$COUNTED" 0 unsigned
    run --separate-stderr blc --store redis -r "$REDIS_URL" --sign-key "$T/key" "$K" "$COUNTED" 0 signed-2
    assert_success
    assert_output signed-2
    assert_one_bufferlock_line "not signed"
    assert_runs 4
}

@test "a key file that is missing, empty, a directory or readable by others: one line, usage status, no run" {
    : >"$T/empty"
    chmod 600 "$T/empty"
    printf '%s' "$SECRET" >"$T/open"
    chmod 644 "$T/open"
    local f why
    for f in "$T/missing:No such file" "$T/empty:empty" "$T:not a regular file" "$T/open:readable by group or others"; do
        why=${f##*:}
        run --separate-stderr blc --sign-key "${f%:*}" "$K" "$COUNTED"
        assert_usage_error "--sign-key ${f%:*}" "$why"
        assert_secret_hidden
        run --separate-stderr env BUFFERLOCK_SIGN_KEY="${f%:*}" "$BL" cache --cache-dir "$C" "$K" "$COUNTED"
        assert_usage_error "$why"
    done
    assert_runs 0
    run --separate-stderr blc --sign-key "" "$K" "$COUNTED"
    assert_failure 64
    assert_runs 0
}
