#!/usr/bin/env bats
# Command-line grammar: the forms of SPEC §2 and the option syntax.

load helpers

@test "implicit form: KEY then COMMAND runs the command" {
    run --separate-stderr bl -d "$D" "$K" echo hello world
    assert_success
    assert_output "hello world"
    assert_stderr_empty
    assert_file_exists "$(lock_path "$D" "$K")"
}

@test "KEY -- COMMAND runs the command" {
    run --separate-stderr bl -d "$D" "$K" -- echo hello
    assert_success
    assert_output "hello"
    assert_stderr_empty
}

@test "only one leading -- after KEY is stripped; the command's own -- is kept" {
    run --separate-stderr bl -d "$D" "$K" -- printf '<%s>' -- a
    assert_success
    assert_output "<-->"'<a>'
    run --separate-stderr bl -d "$D" "$K" printf '<%s>' -- b
    assert_success
    assert_output "<-->"'<b>'
}

@test "-c right after KEY runs one shell command" {
    # shellcheck disable=SC2016
    run --separate-stderr bl -d "$D" "$K" -c 'echo $((6 * 7)) "$0"'
    assert_success
    assert_output --regexp '^42 '
    assert_stderr_empty
}

@test "--command right after KEY runs one shell command" {
    run --separate-stderr bl -d "$D" "$K" --command 'echo via-long; exit 3'
    assert_failure 3
    assert_output "via-long"
}

@test "-c before KEY runs the shell command" {
    run --separate-stderr bl -d "$D" -c 'echo before-key' "$K"
    assert_success
    assert_output "before-key"
    assert_stderr_empty
    assert_file_exists "$(lock_path "$D" "$K")"
}

@test "--command=STRING before KEY" {
    run --separate-stderr bl -d "$D" --command='echo long-eq' "$K"
    assert_success
    assert_output "long-eq"
}

@test "-c is a shell command: pipes and redirections work" {
    run --separate-stderr bl -d "$D" "$K" -c "printf 'a\nb\nc\n' | wc -l > '$T/count'"
    assert_success
    assert_equal "$(tr -d ' ' <"$T/count")" 3
}

@test "run form: bufferlock run [OPTIONS] KEY COMMAND" {
    run --separate-stderr bl run -d "$D" "$K" echo from-run
    assert_success
    assert_output "from-run"
    assert_stderr_empty
    assert_file_exists "$(lock_path "$D" "$K")"
}

@test "run form accepts a KEY spelled like a subcommand" {
    run --separate-stderr bl run -d "$D" cache -- echo cache-key
    assert_success
    assert_output "cache-key"
    assert_file_exists "$(lock_path "$D" cache)"
}

@test "run form with -c after KEY" {
    run --separate-stderr bl run -d "$D" "$K" -c 'echo run-c'
    assert_success
    assert_output "run-c"
}

@test "-- before KEY ends options: KEY may begin with -" {
    run --separate-stderr bl -d "$D" -- -odd-key -- echo odd
    assert_success
    assert_output "odd"
    assert_stderr_empty
    assert_file_exists "$(lock_path "$D" -odd-key)"
}

@test "-- before KEY: a KEY spelled like a subcommand is just a KEY" {
    run --separate-stderr bl -d "$D" -- cache echo is-key
    assert_success
    assert_output "is-key"
    assert_file_exists "$(lock_path "$D" cache)"
}

@test "empty KEY is a valid key" {
    run --separate-stderr bl -d "$D" '' sh -c 'printf "[%s]" "$BUFFERLOCK_KEY"'
    assert_success
    assert_output "[]"
    assert_file_exists "$D/d41d8cd98f00b204e9800998ecf8427e.lock"
}

@test "command words beginning with - are passed verbatim" {
    run --separate-stderr bl -d "$D" "$K" printf '<%s>' -n -v --help --dir=x -w 5 -c
    assert_success
    assert_output '<-n><-v><--help><--dir=x><-w><5><-c>'
    assert_stderr_empty
}

@test "after KEY --, a first word -c is the command's name, not the shell option" {
    mkdir -p "$T/bin"
    printf '#!/bin/sh\necho "dash-c ran with: $*"\n' >"$T/bin/-c"
    chmod +x "$T/bin/-c"
    PATH="$T/bin:$PATH" run --separate-stderr bl -d "$D" "$K" -- -c 'echo shell'
    assert_success
    assert_output "dash-c ran with: echo shell"
}

@test "a first command word that is one of our options runs after --, and is a slip without" {
    mkdir -p "$T/bin"
    printf '#!/bin/sh\necho "dash-n ran with: $*"\n' >"$T/bin/-n"
    chmod +x "$T/bin/-n"
    PATH="$T/bin:$PATH" run --separate-stderr bl -d "$D" "$K" -- -n -v
    assert_success
    assert_output "dash-n ran with: -v"
    PATH="$T/bin:$PATH" run --separate-stderr bl -d "$D" "$K" -n -v
    assert_equal "$status" 64
    assert_output ""
    assert_equal "$stderr" "bufferlock: option '-n' after KEY '$K': options go before KEY (see 'bufferlock --help')"
}

@test "bundled short options: -nv" {
    run --separate-stderr bl -nv -d "$D" "$K" true
    assert_success
    assert_output ""
    assert_regex "$stderr" 'acquired'
}

@test "attached short option value: -dDIR" {
    run --separate-stderr bl "-d$D" "$K" echo ok
    assert_success
    assert_output ok
    assert_file_exists "$(lock_path "$D" "$K")"
}

@test "bundled flags with an attached value at the end: -nE3" {
    hold_lock "$D" "$K"
    run --separate-stderr bl -nE3 -d "$D" "$K" touch "$T/ran"
    assert_failure 3
    assert_file_not_exists "$T/ran"
}

@test "attached wait value: -w0.2 waits then reports busy" {
    hold_lock "$D" "$K"
    local t0 t1
    t0=$(now_us)
    run --separate-stderr bl -w0.2 -d "$D" "$K" touch "$T/ran"
    t1=$(now_us)
    assert_failure 75
    assert_file_not_exists "$T/ran"
    (( t1 - t0 >= 150000 )) || fail "returned after $(( (t1 - t0) / 1000 )) ms, expected about 200 ms"
}

@test "--opt=value long options" {
    hold_lock "$D" "$K"
    run --separate-stderr bl --dir="$D" --busy-exit=9 --wait=0.1 "$K" touch "$T/ran"
    assert_failure 9
    assert_file_not_exists "$T/ran"
}

@test "--opt value long options" {
    run --separate-stderr bl --dir "$D" --wait 1 --busy-exit 9 "$K" echo long
    assert_success
    assert_output long
}

@test "long option spellings are accepted" {
    run --separate-stderr bl --dir "$D" --nonblock --quiet --no-fork --error-exit 70 \
        --conflict-exit-code 80 --timeout 0 "$K" echo spelled
    assert_success
    assert_output spelled
    run --separate-stderr bl --dir "$D" --shared --verbose --close "$K" echo shared
    assert_success
    assert_output shared
}

@test "-F is accepted for flock(1) compatibility" {
    run --separate-stderr bl -F -d "$D" "$K" echo no-fork
    assert_success
    assert_output no-fork
    assert_stderr_empty
}

@test "--help prints usage on stdout, exit 0, empty stderr" {
    run --separate-stderr bl --help
    assert_success
    assert_stderr_empty
    assert_output --partial bufferlock
    assert_output --partial KEY
    [[ ${#lines[@]} -ge 3 ]] || fail "help text is suspiciously short"
}

@test "--version prints the version and backends on stdout" {
    run --separate-stderr bl --version
    assert_success
    assert_stderr_empty
    assert_regex "${lines[0]}" '^bufferlock [0-9]+\.[0-9]+\.[0-9]+'
    assert_line --regexp 'backends:.*file'
}

@test "unknown long option is a usage error (64)" {
    run --separate-stderr bl --no-such-option -d "$D" "$K" touch "$T/ran"
    assert_usage_error
    assert_file_not_exists "$T/ran"
}

@test "unknown short option is a usage error (64)" {
    run --separate-stderr bl -Z -d "$D" "$K" touch "$T/ran"
    assert_usage_error
    assert_file_not_exists "$T/ran"
}

@test "of -n and -w, the last one wins (-w then -n: no wait)" {
    hold_lock "$D" "$K"
    local t0 t1
    t0=$(now_us)
    run --separate-stderr bl -w 30 -n -d "$D" "$K" true
    t1=$(now_us)
    assert_failure 75
    (( t1 - t0 < 5000000 )) || fail "-n after -w still waited $(( (t1 - t0) / 1000 )) ms"
}

@test "of -n and -w, the last one wins (-n then -w: waits)" {
    hold_lock "$D" "$K"
    local t0 t1
    t0=$(now_us)
    run --separate-stderr bl -n -w 0.3 -d "$D" "$K" true
    t1=$(now_us)
    assert_failure 75
    (( t1 - t0 >= 250000 )) || fail "-w after -n did not wait: $(( (t1 - t0) / 1000 )) ms"
}

@test "a variable stands in only where its option would: -n is --wait 0, BUFFERLOCK_SLOTS is not read by list" {
    # -n gave the wait: BUFFERLOCK_WAIT is not read, so its bad value is no error
    BUFFERLOCK_WAIT=10mins run --separate-stderr bl -d "$D" -n "$K" echo ran
    assert_success
    assert_output ran
    # list takes no --slots: given, it is refused; its variable is left alone
    run --separate-stderr bl list -d "$D" --slots 2
    assert_usage_error "--slots does not apply to 'bufferlock list'"
    BUFFERLOCK_SLOTS=many run --separate-stderr bl list -d "$D"
    assert_success
    # ... where run reads it
    BUFFERLOCK_SLOTS=many run --separate-stderr bl -d "$D" "$K" true
    assert_usage_error "BUFFERLOCK_SLOTS" "'many'"
}
