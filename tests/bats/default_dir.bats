#!/usr/bin/env bats
# Where lock files go without --dir: /run/lock/bufferlock-UID where /run/lock
# exists, else /tmp/bufferlock-UID, whatever the environment (XDG_RUNTIME_DIR
# does not move it); BUFFERLOCK_DIR; --dir beats the environment.
#
# Every run that uses the default directory runs in a mount namespace of the
# test's own with a tmpfs on /run/lock (private_run_lock, in_ns), so that no
# test touches the machine's /run/lock/bufferlock-UID.

load helpers

# A key no other run uses, so tests that touch /tmp/bufferlock-UID never meet
# a lock file they did not create.
unique_key() {
    printf 'bats-default-dir-%s-%s-%s\n' "$$" "$BATS_SUITE_TEST_NUMBER" "$RANDOM"
}

# fresh_xdg_dir: XDG_RUNTIME_DIR is a new, empty 0700 directory $T/xdg, as a
# login shell has it.
fresh_xdg_dir() {
    export XDG_RUNTIME_DIR="$T/xdg"
    mkdir -m 0700 "$XDG_RUNTIME_DIR"
}

# default_dir_setup: a private /run/lock (private_run_lock); DEF is the
# default directory as bufferlock names it, DEF_SEEN the same from here.
default_dir_setup() {
    private_run_lock "$@"
    DEF="/run/lock/bufferlock-$(id -u)"
    DEF_SEEN="$RUN_LOCK/bufferlock-$(id -u)"
}

# track_tmp_default KEY: the lock file of KEY in /tmp/bufferlock-UID (the
# machine's own) goes in teardown -- with the directory when this test made it.
track_tmp_default() {
    local dir lp
    dir="/tmp/bufferlock-$(id -u)"
    lp=$(lock_path "$dir" "$1")
    if [[ -e $dir || -L $dir ]]; then
        TMP_DIR_EXISTED=yes
        track_path "$lp" # only our own, uniquely named lock file
    else
        TMP_DIR_EXISTED=no
        track_path "$dir"
    fi
}

# assert_default_dir_refused: `bufferlock KEY touch $T/ran` exits 69 with one
# message naming the default directory, and the command does not run.
assert_default_dir_refused() {
    run --separate-stderr in_ns "$BL" "$K" touch "$T/ran"
    assert_failure 69
    assert_one_bufferlock_line "$DEF"
    assert_file_not_exists "$T/ran"
}

@test "default dir: /run/lock/bufferlock-UID, created 0700 (umask 000 and 022); XDG_RUNTIME_DIR does not move it" {
    default_dir_setup
    fresh_xdg_dir
    umask 000
    run --separate-stderr in_ns "$BL" "$K" echo ran
    umask 022
    assert_success
    assert_output ran
    assert_stderr_empty
    assert_dir_exists "$DEF_SEEN"
    assert_equal "$(stat -c '%a %u' "$DEF_SEEN")" "700 $(id -u)"
    assert_file_exists "$(lock_path "$DEF_SEEN" "$K")"
    assert_equal "$(ls -A "$XDG_RUNTIME_DIR")" ""
    # again from scratch, under a usual umask and without XDG_RUNTIME_DIR
    rm -rf -- "$DEF_SEEN"
    run --separate-stderr in_ns env -u XDG_RUNTIME_DIR "$BL" "$K" true
    assert_success
    assert_equal "$(stat -c %a "$DEF_SEEN")" 700
}

@test "the default dir really locks (busy while held)" {
    default_dir_setup
    run --separate-stderr in_ns "$BL" "$K" true
    assert_success
    hold_lock "$DEF_SEEN" "$K"
    run --separate-stderr in_ns "$BL" "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
}

@test "cron and a login shell exclude each other: a holder without XDG_RUNTIME_DIR, a caller with it; status says held" {
    default_dir_setup
    # the cron job: no XDG_RUNTIME_DIR
    # (nsenter itself in the background, as in_ns runs it: HOLDER_PID is its PID)
    nsenter --mount --root --wd="$PWD" --target "$NS_PID" -- env -u XDG_RUNTIME_DIR "$BL" report \
        sh -c 'echo started > "$0"; exec sleep 300' "$T/started" </dev/null >/dev/null 2>"$T/cron.err" 3>&- &
    HOLDER_PID=$!
    track_pid "$HOLDER_PID"
    wait_for_file "$T/started" 10 || fail "the cron job's command never started: $(cat "$T/cron.err")"
    # the login shell: XDG_RUNTIME_DIR set
    fresh_xdg_dir
    run --separate-stderr in_ns "$BL" report touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
    run --separate-stderr in_ns "$BL" status report
    assert_failure 75
    assert_output --regexp "^held pid=$HOLDER_PID since="
    run --separate-stderr in_ns env -u XDG_RUNTIME_DIR "$BL" status report
    assert_failure 75
    assert_output --regexp "^held pid=$HOLDER_PID since="
    assert_equal "$(ls -A "$XDG_RUNTIME_DIR")" ""
    assert_file_exists "$(lock_path "$DEF_SEEN" report)"
}

@test "no /run/lock: lock file in /tmp/bufferlock-UID, whatever XDG_RUNTIME_DIR says" {
    default_dir_setup --no-run-lock
    fresh_xdg_dir
    local key
    key=$(unique_key)
    track_tmp_default "$key"
    run --separate-stderr in_ns "$BL" "$key" echo ran
    assert_success
    assert_output ran
    assert_stderr_empty
    assert_dir_exists "/tmp/bufferlock-$(id -u)"
    assert_file_exists "$(lock_path "/tmp/bufferlock-$(id -u)" "$key")"
    if [[ $TMP_DIR_EXISTED == no ]]; then
        assert_equal "$(stat -c '%a %u' "/tmp/bufferlock-$(id -u)")" "700 $(id -u)"
    fi
    assert_equal "$(ls -A "$XDG_RUNTIME_DIR")" ""
}

@test "the command's lock descriptor is the file in /run/lock/bufferlock-UID" {
    default_dir_setup
    # shellcheck disable=SC2016
    run --separate-stderr in_ns "$BL" "$K" sh -c 'readlink "/proc/$$/fd/$BUFFERLOCK_FD"'
    assert_success
    assert_output "$(lock_path "$DEF" "$K")"
}

@test "fresh user: its own 0700 directory in /run/lock; in /tmp where it may not create in /run/lock" {
    is_root || skip "needs root to run as a fresh uid"
    local uid=54321
    default_dir_setup
    make_public_dir
    run --separate-stderr in_ns setpriv --reuid=$uid --regid=$uid --clear-groups -- "$PUB_BL" "$K" echo ran
    assert_success
    assert_output ran
    assert_equal "$(stat -c '%a %u' "$RUN_LOCK/bufferlock-$uid")" "700 $uid"
    assert_file_exists "$(lock_path "$RUN_LOCK/bufferlock-$uid" "$K")"
    # a /run/lock that only root may write to (as on Fedora)
    local dir="/tmp/bufferlock-$uid"
    [[ -e $dir || -L $dir ]] && skip "$dir already exists; not touching it"
    track_path "$dir"
    chmod 0755 "$RUN_LOCK"
    run --separate-stderr in_ns setpriv --reuid=$uid --regid=$uid --clear-groups -- "$PUB_BL" other echo ran
    assert_success
    assert_output ran
    assert_equal "$(stat -c '%a %u' "$dir")" "700 $uid"
    assert_file_exists "$(lock_path "$dir" other)"
}

@test "a symlink planted at the default dir: 69 naming it, nothing created at the target" {
    default_dir_setup
    mkdir -m 0700 "$T/elsewhere"
    ln -s "$T/elsewhere" "$DEF_SEEN"
    assert_default_dir_refused
    assert_equal "$(ls -A "$T/elsewhere")" ""
}

@test "a dangling symlink planted at the default dir: 69, target not created" {
    default_dir_setup
    ln -s "$T/target" "$DEF_SEEN"
    assert_default_dir_refused
    assert_not_exist "$T/target"
}

@test "a file at the default dir path: 69" {
    default_dir_setup
    touch "$DEF_SEEN"
    assert_default_dir_refused
}

@test "a default dir owned by another user: 69" {
    is_root || skip "needs root to chown"
    default_dir_setup
    mkdir -m 0700 "$DEF_SEEN"
    chown 65534:65534 "$DEF_SEEN"
    assert_default_dir_refused
    assert_equal "$(ls -A "$DEF_SEEN")" ""
}

@test "a default dir problem with --fail-open: runs with a warning" {
    default_dir_setup
    ln -s "$T/elsewhere" "$DEF_SEEN"
    run --separate-stderr in_ns "$BL" --fail-open "$K" echo ran
    assert_success
    assert_output ran
    assert_one_bufferlock_line "$DEF"
}

@test "BUFFERLOCK_DIR is used (and created with parents)" {
    default_dir_setup
    BUFFERLOCK_DIR="$T/env/a/b" run --separate-stderr in_ns "$BL" "$K" echo ran
    assert_success
    assert_output ran
    assert_file_exists "$(lock_path "$T/env/a/b" "$K")"
    assert_not_exist "$DEF_SEEN"
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

@test "status and list use the default dir too" {
    default_dir_setup
    run --separate-stderr in_ns "$BL" "$K" true
    assert_success
    hold_lock "$DEF_SEEN" "$K"
    run --separate-stderr in_ns "$BL" status "$K"
    assert_failure 75
    assert_output "held pid=$HOLDER_PID"
    run --separate-stderr in_ns "$BL" list
    assert_success
    [[ $output == *"$K"* || $output == *"$(key_md5 "$K")"* ]] || fail "list does not show it: $output"
}
