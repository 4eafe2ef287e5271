#!/usr/bin/env bats
# Diagnostics: stable keys, --messages / BUFFERLOCK_MESSAGES overrides, --list-messages.

load helpers

@test "--list-messages prints every key with its default text, exit 0, empty stderr" {
    run --separate-stderr bl --list-messages
    assert_success
    assert_stderr_empty
    # the seeds' keys are kept (SPEC §11)
    local key
    for key in lock_key_undefined lock_open_failed lock_failed lock_dir_create_failed \
        lock_dir_not_writable redis_lock_failed redis_unlock_failed redis_ttl_invalid \
        redis_namespace_invalid; do
        assert_line --regexp "^$key = .+"
    done
    # one "key = text" line each, keys unique
    assert_equal "$(grep -cv ' = ' <<<"$output")" 0
    local keys
    keys=$(printf '%s\n' "$output" | cut -d' ' -f1 | sort)
    assert_equal "$(sort -u <<<"$keys")" "$keys"
}

@test "the listed default text is what bufferlock prints" {
    : >"$T/file-in-the-way"
    run --separate-stderr bl -d "$T/file-in-the-way/sub" k true
    assert_failure 69
    local text
    text=$(bl --list-messages | sed -n 's/^lock_dir_create_failed = //p')
    [[ $text == 'cannot create lock directory %{path}: %{error}' ]]
    assert_one_bufferlock_line "cannot create lock directory $T/file-in-the-way"
}

@test "--messages FILE replaces texts by key, in any language, with placeholders" {
    cat >"$T/es.msg" <<'MSG'
# Spanish texts
lock_dir_create_failed = no puedo crear el directorio %{path} — %{error} 🔒
lock_key_undefined = falta la CLAVE
usage_hint = %{error} (vea 'bufferlock --help')
MSG
    : >"$T/file"
    run --separate-stderr bl --messages "$T/es.msg" -d "$T/file/sub" k true
    assert_failure 69
    assert_one_bufferlock_line "no puedo crear el directorio $T/file" "🔒"
    run --separate-stderr bl --messages "$T/es.msg"
    assert_failure 64
    assert_equal "$stderr" "bufferlock: falta la CLAVE (vea 'bufferlock --help')"
}

@test "BUFFERLOCK_MESSAGES does the same, and --messages wins over it" {
    printf 'lock_key_undefined = from the environment\n' >"$T/env.msg"
    printf 'lock_key_undefined = from the option\n' >"$T/opt.msg"
    BUFFERLOCK_MESSAGES=$T/env.msg run --separate-stderr bl -n
    assert_failure 64
    assert_one_bufferlock_line "from the environment"
    BUFFERLOCK_MESSAGES=$T/env.msg run --separate-stderr bl --messages "$T/opt.msg" -n
    assert_failure 64
    assert_one_bufferlock_line "from the option"
}

@test "a usage error after --messages is printed in the file's text" {
    printf 'usage_unknown_option = opción desconocida %%{option}\n' >"$T/es.msg"
    run --separate-stderr bl --messages "$T/es.msg" --bogus k true
    assert_usage_error "opción desconocida --bogus"
}

@test "bad lines, unknown keys and unknown placeholders are warnings naming the line; defaults stay" {
    cat >"$T/bad.msg" <<'MSG'
no equals sign here
no_such_key = whatever
lock_dir_create_failed = %{nonsense} %{path}

lock_key_undefined = still applied
MSG
    : >"$T/file"
    run --separate-stderr bl --messages "$T/bad.msg" -d "$T/file/sub" k true
    assert_failure 69
    assert_equal "$(grep -c '^bufferlock: ' <<<"$stderr")" 4
    assert_equal "$(wc -l <<<"$stderr")" 4
    [[ $stderr == *"$T/bad.msg, line 1:"* ]]
    [[ $stderr == *"$T/bad.msg, line 2:"*no_such_key* ]]
    [[ $stderr == *"$T/bad.msg, line 3:"*'%{nonsense}'* ]]
    # the default text of lock_dir_create_failed stays
    [[ $stderr == *"bufferlock: cannot create lock directory $T/file"* ]]
    run --separate-stderr bl --messages "$T/bad.msg"
    assert_failure 64
    [[ $stderr == *"bufferlock: still applied (see 'bufferlock --help')" ]]
}

@test "-q silences the messages file's warnings, not its errors" {
    printf 'no_such_key = x\n' >"$T/bad.msg"
    : >"$T/file"
    run --separate-stderr bl -q --messages "$T/bad.msg" -d "$T/file/sub" k true
    assert_failure 69
    assert_one_bufferlock_line "cannot create lock directory"
}

@test "a missing or unreadable messages file is a usage error" {
    run --separate-stderr bl --messages "$T/absent.msg" -d "$D" k true
    assert_usage_error "$T/absent.msg"
    mkdir "$T/a-directory"
    run --separate-stderr bl --messages "$T/a-directory" -d "$D" k true
    assert_usage_error "$T/a-directory"
    BUFFERLOCK_MESSAGES=$T/absent.msg run --separate-stderr bl -d "$D" k true
    assert_usage_error "$T/absent.msg"
    # the command did not run
    [[ ! -e $D ]]
}

@test "a KEY with control characters cannot split a message line" {
    run --separate-stderr bl -v -d "$D" $'evil\nkey' true
    assert_success
    assert_one_bufferlock_line 'evil\x0akey'
}
