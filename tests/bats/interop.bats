#!/usr/bin/env bats
# The lock file layout is shared with flock(1): DIR/<md5 of key bytes>.lock.

load helpers

@test "lock file is DIR/md5(KEY).lock and nothing else is created" {
    run --separate-stderr bl -d "$D" my-job true
    assert_success
    local expected
    expected="$(printf %s my-job | md5sum | cut -d' ' -f1).lock"
    assert_equal "$(ls -A "$D")" "$expected"
    assert_file_exists "$D/$expected"
}

@test "the lock file is not deleted after the run" {
    bl -d "$D" "$K" true
    bl -d "$D" "$K" true
    assert_file_exists "$(lock_path "$D" "$K")"
    assert_equal "$(find "$D" -type f | wc -l)" 1
}

@test "flock(1) holding the file makes bufferlock busy" {
    hold_lock "$D" "$K"
    run --separate-stderr bl -n -d "$D" "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"
    release_lock
    run --separate-stderr bl -n -d "$D" "$K" touch "$T/ran"
    assert_success
    assert_file_exists "$T/ran"
}

@test "bufferlock holding makes flock -n fail from another process" {
    bl_hold_lock "$D" "$K"
    local lp
    lp=$(lock_path "$D" "$K")
    run flock -n "$lp" true
    assert_failure 1
    release_lock
    run flock -n "$lp" true
    assert_success
}

@test "UTF-8 key: hashed as its UTF-8 bytes" {
    local key='clé-ключ-日本語-🔒'
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$key" sh -c 'printf %s "$BUFFERLOCK_KEY"'
    assert_success
    assert_output "$key"
    assert_file_exists "$D/$(printf %s "$key" | md5sum | cut -d' ' -f1).lock"
    assert_equal "$(find "$D" -mindepth 1 | wc -l)" 1
}

@test "invalid UTF-8 key: accepted and hashed as raw bytes" {
    local key=$'bad-\xff\xfe-\xc3(-utf8'
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$key" sh -c 'printf %s "$BUFFERLOCK_KEY" | od -An -tx1'
    assert_success
    assert_stderr_empty
    assert_equal "$output" "$(printf %s "$key" | od -An -tx1)"
    assert_file_exists "$D/$(printf %s "$key" | md5sum | cut -d' ' -f1).lock"
}

@test "keys that differ only by case or trailing space are different locks" {
    hold_lock "$D" Key
    run --separate-stderr bl -n -d "$D" key true
    assert_success
    run --separate-stderr bl -n -d "$D" 'Key ' true
    assert_success
    run --separate-stderr bl -n -d "$D" Key true
    assert_failure 75
}

@test "a 131071-byte key works; BUFFERLOCK_KEY is unset for it" {
    local key
    key=$(head -c 131071 /dev/zero | tr '\0' k)
    assert_equal "${#key}" 131071
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$key" sh -c 'echo "key=${BUFFERLOCK_KEY+set}"'
    assert_success
    assert_output "key="
    assert_stderr_empty
    assert_file_exists "$(lock_path "$D" "$key")"
}

@test "a 131071-byte key is exclusive like any other" {
    local key
    key=$(head -c 131071 /dev/zero | tr '\0' z)
    hold_lock "$D" "$key"
    run --separate-stderr bl -n -d "$D" "$key" true
    assert_failure 75
}

@test "a 100-byte key sets BUFFERLOCK_KEY" {
    local key
    key=$(head -c 100 /dev/zero | tr '\0' q)
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$key" sh -c 'printf %s "$BUFFERLOCK_KEY"'
    assert_success
    assert_output "$key"
}

@test "BUFFERLOCK_KEY boundary: 131056 bytes set, 131057 bytes unset" {
    local key
    key=$(head -c 131056 /dev/zero | tr '\0' b)
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$key" sh -c 'printf %s "${#BUFFERLOCK_KEY}"'
    assert_success
    assert_output 131056
    key="${key}b"
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$key" sh -c 'echo "${BUFFERLOCK_KEY+set}"'
    assert_success
    assert_output ""
}

@test "--dir reached through a symbolic link is allowed" {
    mkdir -p "$T/real"
    ln -s "$T/real" "$T/link"
    run --separate-stderr bl -d "$T/link" "$K" echo via-link
    assert_success
    assert_output via-link
    assert_file_exists "$(lock_path "$T/real" "$K")"
}

@test "--dir is created with its parents" {
    run --separate-stderr bl -d "$T/a/b/c" "$K" true
    assert_success
    assert_file_exists "$(lock_path "$T/a/b/c" "$K")"
}
