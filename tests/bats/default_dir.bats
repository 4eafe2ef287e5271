#!/usr/bin/env bats
# Where lock files go without --dir: $XDG_RUNTIME_DIR/bufferlock, else
# /tmp/bufferlock-UID; BUFFERLOCK_DIR; --dir beats the environment.

load helpers

# A key no other run uses, so tests that touch /tmp/bufferlock-UID never meet
# a lock file they did not create.
unique_key() {
    printf 'bats-default-dir-%s-%s-%s\n' "$$" "$BATS_SUITE_TEST_NUMBER" "$RANDOM"
}

# fresh_xdg_dir: XDG_RUNTIME_DIR is a new, empty 0700 directory $T/xdg.
fresh_xdg_dir() {
    export XDG_RUNTIME_DIR="$T/xdg"
    mkdir -m 0700 "$XDG_RUNTIME_DIR"
}

# assert_default_dir_refused: `bufferlock KEY touch $T/ran` exits 69 with one
# message naming $XDG_RUNTIME_DIR/bufferlock, and the command does not run.
assert_default_dir_refused() {
    run --separate-stderr bl "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line "$XDG_RUNTIME_DIR/bufferlock"
    assert_file_not_exists "$T/ran"
}

@test "XDG_RUNTIME_DIR set: lock file in \$XDG_RUNTIME_DIR/bufferlock, created 0700" {
    fresh_xdg_dir
    umask 000
    run --separate-stderr bl "$K" echo ran
    umask 022
    assert_success
    assert_output ran
    assert_stderr_empty
    assert_dir_exists "$XDG_RUNTIME_DIR/bufferlock"
    assert_equal "$(stat -c %a "$XDG_RUNTIME_DIR/bufferlock")" 700
    assert_file_exists "$(lock_path "$XDG_RUNTIME_DIR/bufferlock" "$K")"
}

@test "XDG_RUNTIME_DIR default dir is 0700 under a usual umask too" {
    fresh_xdg_dir
    umask 022
    run --separate-stderr bl "$K" true
    assert_success
    assert_equal "$(stat -c %a "$XDG_RUNTIME_DIR/bufferlock")" 700
}

@test "the default dir really locks (busy while held)" {
    fresh_xdg_dir
    run --separate-stderr bl "$K" true
    assert_success
    hold_lock "$XDG_RUNTIME_DIR/bufferlock" "$K"
    run --separate-stderr bl "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
}

@test "no XDG_RUNTIME_DIR: lock file in /tmp/bufferlock-UID" {
    local dir key lp existed=no
    dir="/tmp/bufferlock-$(id -u)"
    key=$(unique_key)
    lp=$(lock_path "$dir" "$key")
    [[ -e $dir || -L $dir ]] && existed=yes
    if [[ $existed == yes ]]; then
        track_path "$lp" # only our own, uniquely named lock file
    else
        track_path "$dir"
    fi
    run --separate-stderr env -u XDG_RUNTIME_DIR "$BL" "$key" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
    assert_dir_exists "$dir"
    assert_file_exists "$lp"
    if [[ $existed == no ]]; then
        assert_equal "$(stat -c '%a %u' "$dir")" "700 $(id -u)"
    fi
}

@test "no XDG_RUNTIME_DIR: the command's lock descriptor is the file in /tmp/bufferlock-UID" {
    local dir key lp
    dir="/tmp/bufferlock-$(id -u)"
    key=$(unique_key)
    lp=$(lock_path "$dir" "$key")
    if [[ -e $dir || -L $dir ]]; then
        track_path "$lp"
    else
        track_path "$dir"
    fi
    # shellcheck disable=SC2016
    run --separate-stderr env -u XDG_RUNTIME_DIR "$BL" "$key" sh -c 'readlink "/proc/$$/fd/$BUFFERLOCK_FD"'
    assert_success
    assert_output "$lp"
}

@test "no XDG_RUNTIME_DIR, fresh user: /tmp/bufferlock-UID created 0700 owned by the user" {
    is_root || skip "needs root to run as a fresh uid"
    local uid=54321
    local dir="/tmp/bufferlock-$uid"
    [[ -e $dir || -L $dir ]] && skip "$dir already exists; not touching it"
    track_path "$dir"
    make_public_dir
    run --separate-stderr env -u XDG_RUNTIME_DIR setpriv --reuid=$uid --regid=$uid --clear-groups -- \
        "$PUB_BL" "$K" echo ran
    assert_success
    assert_output ran
    assert_dir_exists "$dir"
    assert_equal "$(stat -c '%a %u' "$dir")" "700 $uid"
    assert_file_exists "$(lock_path "$dir" "$K")"
}

@test "a symlink planted at the default dir: 69 naming it, nothing created at the target" {
    fresh_xdg_dir
    mkdir -m 0700 "$T/elsewhere"
    ln -s "$T/elsewhere" "$XDG_RUNTIME_DIR/bufferlock"
    assert_default_dir_refused
    assert_equal "$(ls -A "$T/elsewhere")" ""
}

@test "a dangling symlink planted at the default dir: 69, target not created" {
    fresh_xdg_dir
    ln -s "$T/target" "$XDG_RUNTIME_DIR/bufferlock"
    assert_default_dir_refused
    assert_not_exist "$T/target"
}

@test "a file at the default dir path: 69" {
    fresh_xdg_dir
    touch "$XDG_RUNTIME_DIR/bufferlock"
    assert_default_dir_refused
}

@test "a default dir owned by another user: 69" {
    is_root || skip "needs root to chown"
    fresh_xdg_dir
    mkdir -m 0700 "$XDG_RUNTIME_DIR/bufferlock"
    chown 65534:65534 "$XDG_RUNTIME_DIR/bufferlock"
    assert_default_dir_refused
    assert_equal "$(ls -A "$XDG_RUNTIME_DIR/bufferlock")" ""
}

@test "a default dir problem with --fail-open: runs with a warning" {
    fresh_xdg_dir
    ln -s "$T/elsewhere" "$XDG_RUNTIME_DIR/bufferlock"
    run --separate-stderr bl --fail-open "$K" echo ran
    assert_success
    assert_output ran
    assert_one_bufferlock_line
}

@test "BUFFERLOCK_DIR is used (and created with parents)" {
    fresh_xdg_dir
    BUFFERLOCK_DIR="$T/env/a/b" run --separate-stderr bl "$K" echo ran
    assert_success
    assert_output ran
    assert_file_exists "$(lock_path "$T/env/a/b" "$K")"
    assert_not_exist "$XDG_RUNTIME_DIR/bufferlock"
}

@test "BUFFERLOCK_DIR really locks" {
    hold_lock "$T/env" "$K"
    BUFFERLOCK_DIR="$T/env" run --separate-stderr bl "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
}

@test "BUFFERLOCK_DIR may be a symlink" {
    mkdir -p "$T/real"
    ln -s "$T/real" "$T/link"
    BUFFERLOCK_DIR="$T/link" run --separate-stderr bl "$K" echo ran
    assert_success
    assert_file_exists "$(lock_path "$T/real" "$K")"
}

@test "--dir beats BUFFERLOCK_DIR" {
    BUFFERLOCK_DIR="$T/env" run --separate-stderr bl --dir "$T/opt" "$K" echo ran
    assert_success
    assert_output ran
    assert_file_exists "$(lock_path "$T/opt" "$K")"
    assert_not_exist "$T/env"
}

@test "status uses the default dir too" {
    fresh_xdg_dir
    hold_lock "$XDG_RUNTIME_DIR/bufferlock" "$K"
    chmod 0700 "$XDG_RUNTIME_DIR/bufferlock"
    run --separate-stderr bl status "$K"
    assert_failure 75
    assert_output "held pid=$HOLDER_PID"
}
