#!/usr/bin/env bats
# Bad input and unusable lock directories: right status, one message, no crash.

load helpers

# expect_usage ARGS...: bufferlock ARGS... is a usage error and runs nothing.
expect_usage() {
    rm -f "$T/ran"
    run --separate-stderr bl "$@"
    if [[ $status -ne 64 ]]; then
        fail "bufferlock $* → status $status, expected 64 (stderr: $stderr)"
        return
    fi
    assert_usage_error
    assert_file_not_exists "$T/ran"
}

@test "no arguments at all: 64" {
    expect_usage
}

@test "missing KEY: 64" {
    expect_usage -d "$D"
    expect_usage -d "$D" -n
}

@test "missing command: 64" {
    expect_usage -d "$D" "$K"
    expect_usage -d "$D" "$K" --
    expect_usage run -d "$D" "$K"
}

@test "-c needs exactly one word" {
    expect_usage -d "$D" "$K" -c
    expect_usage -d "$D" "$K" -c "touch '$T/ran'" extra
}

@test "bad --wait values: 64" {
    local w
    for w in -1 abc nan 1e3 0x10 ' 1' '1 ' '' +1 1e999 5x 5S 5sec 1.2.3 . inf5 -inf 1h30m; do
        expect_usage -w "$w" -d "$D" "$K" touch "$T/ran"
    done
}

@test "bad --wait value message names the value" {
    run --separate-stderr bl -w abc -d "$D" "$K" true
    assert_usage_error abc
}

@test "bad exit codes: 64" {
    expect_usage -E 256 -d "$D" "$K" touch "$T/ran"
    expect_usage -E -1 -d "$D" "$K" touch "$T/ran"
    expect_usage -E abc -d "$D" "$K" touch "$T/ran"
    expect_usage --error-exit -1 -d "$D" "$K" touch "$T/ran"
    expect_usage --error-exit 256 -d "$D" "$K" touch "$T/ran"
    expect_usage --error-exit x -d "$D" "$K" touch "$T/ran"
}

@test "--dir '' is a usage error" {
    expect_usage --dir '' "$K" touch "$T/ran"
    expect_usage -d '' "$K" touch "$T/ran"
}

@test "--dir together with --redis is a usage error" {
    expect_usage -d "$D" --redis redis://127.0.0.1:1 "$K" touch "$T/ran"
}

@test "BUFFERLOCK_DIR and BUFFERLOCK_REDIS both set, no option: 64" {
    BUFFERLOCK_DIR="$D" BUFFERLOCK_REDIS=redis://127.0.0.1:1 expect_usage "$K" touch "$T/ran"
}

@test "BUFFERLOCK_DIR and BUFFERLOCK_REDIS both set, --dir chooses the file backend" {
    BUFFERLOCK_DIR="$T/envdir" BUFFERLOCK_REDIS=redis://127.0.0.1:1 run --separate-stderr bl -d "$D" "$K" echo chosen
    assert_success
    assert_output chosen
    assert_file_exists "$(lock_path "$D" "$K")"
}

@test "redis environment variables are not read by the file backend, even malformed" {
    BUFFERLOCK_TTL=abc BUFFERLOCK_NAMESPACE='' BUFFERLOCK_ON_LOST=bogus BUFFERLOCK_CONNECT_TIMEOUT=-1 \
        run --separate-stderr bl -d "$D" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
    # the same with the default directory (no option chooses the backend), a
    # private one
    private_run_lock
    BUFFERLOCK_TTL=abc BUFFERLOCK_NAMESPACE='' BUFFERLOCK_IO_TIMEOUT=nan \
        run --separate-stderr in_ns "$BL" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
}

@test "a malformed BUFFERLOCK_REDIS is ignored when --dir chooses the file backend" {
    BUFFERLOCK_REDIS='not a url' run --separate-stderr bl -d "$D" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
}

@test "implicit KEY spelled like a subcommand: 64 pointing to 'bufferlock run'" {
    local sub
    for sub in cache status acquire release extend run; do
        expect_usage -d "$D" "$sub" -- touch "$T/ran"
        assert_regex "$stderr" 'bufferlock run'
    done
}

@test "redis-only options with the file backend: 64" {
    expect_usage --ttl 5 -d "$D" "$K" touch "$T/ran"
    expect_usage --namespace x: -d "$D" "$K" touch "$T/ran"
    expect_usage --hash-tag -d "$D" "$K" touch "$T/ran"
    expect_usage --connect-timeout 1 -d "$D" "$K" touch "$T/ran"
    expect_usage --io-timeout 1 -d "$D" "$K" touch "$T/ran"
    expect_usage --step 0.01 -d "$D" "$K" touch "$T/ran"
    expect_usage --ratio 2 -d "$D" "$K" touch "$T/ran"
    expect_usage --max-step 1 -d "$D" "$K" touch "$T/ran"
    expect_usage --on-lost warn -d "$D" "$K" touch "$T/ran"
    expect_usage --kill-after 1 -d "$D" "$K" touch "$T/ran"
}

@test "a DIR that is a file: 69 naming the path" {
    touch "$T/afile"
    run --separate-stderr bl -d "$T/afile" "$K" touch "$T/ran"
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "$T/afile"
    # ... and the OS's reason
    assert_regex "$stderr" 'Not a directory|File exists'
    assert_file_not_exists "$T/ran"
}

@test "a file in the way of DIR's parents: 69" {
    touch "$T/afile"
    run --separate-stderr bl -d "$T/afile/sub/dir" "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line "$T/afile"
    assert_file_not_exists "$T/ran"
}

@test "--error-exit 3 changes the error status" {
    touch "$T/afile"
    run --separate-stderr bl --error-exit 3 -d "$T/afile" "$K" touch "$T/ran"
    assert_failure 3
    assert_one_bufferlock_line
    assert_file_not_exists "$T/ran"
}

@test "--error-exit does not change the busy status" {
    hold_lock "$D" "$K"
    run --separate-stderr bl --error-exit 3 -d "$D" "$K" true
    assert_failure 75
}

@test "an error message stays one line even for a KEY with a newline" {
    touch "$T/afile"
    run --separate-stderr bl -d "$T/afile" $'two\nlines' touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line
}

@test "a symlink at the lock path: 69 naming the path; the target is not created" {
    mkdir -p "$D"
    local lp
    lp=$(lock_path "$D" "$K")
    ln -s "$T/victim" "$lp"
    run --separate-stderr bl -d "$D" "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line "$lp"
    assert_file_not_exists "$T/victim"
    assert_file_not_exists "$T/ran"
    [[ -L $lp ]] || fail "the symlink was replaced or removed"
}

@test "a symlink at the lock path to an existing file: 69; the target is untouched" {
    mkdir -p "$D"
    local lp
    lp=$(lock_path "$D" "$K")
    printf 'precious\n' >"$T/victim"
    touch -d '2001-02-03 04:05:06' "$T/victim"
    local before
    before=$(stat -c '%s %Y %a' "$T/victim")
    ln -s "$T/victim" "$lp"
    run --separate-stderr bl -d "$D" "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line "$lp"
    assert_equal "$(stat -c '%s %Y %a' "$T/victim")" "$before"
    assert_equal "$(<"$T/victim")" precious
    assert_file_not_exists "$T/ran"
}

@test "a fifo at the lock path: 69, no hang" {
    mkdir -p "$D"
    local lp
    lp=$(lock_path "$D" "$K")
    mkfifo "$lp"
    run --separate-stderr timeout 10 "$BL" -d "$D" "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line
    assert_file_not_exists "$T/ran"
}

@test "a directory at the lock path: 69" {
    mkdir -p "$(lock_path "$D" "$K")"
    run --separate-stderr bl -d "$D" "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line
    assert_file_not_exists "$T/ran"
}

@test "status with a symlink at the lock path: 69, target not created" {
    mkdir -p "$D"
    ln -s "$T/victim" "$(lock_path "$D" "$K")"
    run --separate-stderr bl status -d "$D" "$K"
    assert_failure 69
    assert_one_bufferlock_line
    assert_file_not_exists "$T/victim"
}

# ro_dir: a directory the test user cannot write, with RUNNER (command prefix
# array) running bufferlock as that user.
setup_ro_dir() {
    if is_root; then
        make_public_dir
        RO="$PUB/ro"
        mkdir -m 0755 "$RO"
        RUNNER=(setpriv --reuid=65534 --regid=65534 --clear-groups -- "$PUB_BL")
    else
        RO="$T/ro"
        mkdir "$RO"
        RUNNER=("$BL")
    fi
}

finish_ro_dir() {
    is_root || chmod 0755 "$RO"
}

@test "an unwritable DIR with no lock file: 69 naming the path" {
    setup_ro_dir
    is_root || chmod 0555 "$RO"
    run --separate-stderr "${RUNNER[@]}" -d "$RO" "$K" echo ran
    finish_ro_dir
    assert_failure 69
    assert_output ""
    assert_one_bufferlock_line "$RO" "Permission denied"
    assert_equal "$(ls -A "$RO")" ""
}

@test "an existing lock file in a read-only DIR still locks" {
    setup_ro_dir
    local lp
    lp=$(lock_path "$RO" "$K")
    touch "$lp"
    chmod 0644 "$lp"
    is_root || chmod 0555 "$RO"
    # shellcheck disable=SC2016
    run --separate-stderr "${RUNNER[@]}" -d "$RO" "$K" sh -c 'if flock -n 9 9<"$1"; then echo free; else echo held; fi' sh "$lp"
    finish_ro_dir
    assert_success
    assert_output held
    assert_stderr_empty
}

# nobody_lock_file DIR-MODE: (as root) KEY's lock file $LP, owned by nobody
# (65534) with mode 0644, in a new directory $SHARED (mode DIR-MODE) of the
# public directory $PUB that holds the binary $PUB_BL.
nobody_lock_file() {
    make_public_dir
    SHARED="$PUB/shared"
    mkdir -m "$1" "$SHARED"
    LP=$(lock_path "$SHARED" "$K")
    touch "$LP"
    chown 65534:65534 "$LP"
    chmod 0644 "$LP"
}

@test "a lock file created by another user (nobody, 0644) still locks" {
    is_root || skip "needs root to create a file owned by another user"
    # a world-writable sticky directory, like /tmp: with fs.protected_regular
    # an O_CREAT open of another user's file fails there, a plain open works
    nobody_lock_file 1777
    # shellcheck disable=SC2016
    run --separate-stderr setpriv --reuid=12345 --regid=12345 --clear-groups -- \
        "$PUB_BL" -d "$SHARED" "$K" sh -c 'if flock -n 9 9<"$1"; then echo free; else echo held; fi' sh "$LP"
    assert_success
    assert_output held
    assert_stderr_empty
    assert_equal "$(stat -c '%u %a' "$LP")" "65534 644"
}

@test "a lock file owned by another user: a second user is busy while the first holds it" {
    is_root || skip "needs root to switch users"
    nobody_lock_file 0755
    setpriv --reuid=12345 --regid=12345 --clear-groups -- "$PUB_BL" -d "$SHARED" "$K" sleep 300 \
        </dev/null >/dev/null 2>&1 3>&- &
    local holder=$!
    track_pid "$holder"
    wait_until_held "$SHARED" "$K" "$holder"
    run --separate-stderr setpriv --reuid=12346 --regid=12346 --clear-groups -- "$PUB_BL" -n -d "$SHARED" "$K" true
    assert_failure 75
}

@test "--fail-open with an unusable DIR runs the command with one warning" {
    touch "$T/afile"
    run --separate-stderr bl --fail-open -d "$T/afile" "$K" sh -c 'echo ran; exit 5'
    assert_failure 5
    assert_output ran
    assert_one_bufferlock_line
}

@test "-q --fail-open prints nothing and runs the command" {
    touch "$T/afile"
    run --separate-stderr bl -q --fail-open -d "$T/afile" "$K" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
}

@test "--fail-open with a symlinked lock file runs the command, target untouched" {
    mkdir -p "$D"
    ln -s "$T/victim" "$(lock_path "$D" "$K")"
    run --separate-stderr bl --fail-open -d "$D" "$K" echo ran
    assert_success
    assert_output ran
    assert_one_bufferlock_line
    assert_file_not_exists "$T/victim"
}

@test "--fail-open does not turn busy into a run" {
    hold_lock "$D" "$K"
    run --separate-stderr bl --fail-open -d "$D" "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
}

@test "--fail-open with an unwritable DIR runs the command" {
    setup_ro_dir
    is_root || chmod 0555 "$RO"
    run --separate-stderr "${RUNNER[@]}" --fail-open -d "$RO" "$K" echo ran
    finish_ro_dir
    assert_success
    assert_output ran
    assert_one_bufferlock_line
}
