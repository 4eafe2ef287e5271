#!/usr/bin/env bats
# Slips a user makes on the way to a working command line, caught before
# anything runs, each with one line that says what to change.

load helpers

@test "an option of ours after KEY is a usage error: options go before KEY" {
    run --separate-stderr bl cache --cache-dir "$T/c" k --depends "$T/src" -- touch "$T/ran"
    assert_equal "$status" 64
    assert_equal "$stderr" "bufferlock: option '--depends' after KEY 'k': options go before KEY (see 'bufferlock --help')"
    assert_file_not_exists "$T/ran"
    # The run subcommand too, in every spelling: short, bundled, --opt=value.
    local opt
    for opt in -w -nv --wait=5 --ttl; do
        run --separate-stderr bl -d "$D" k "$opt" 5 touch "$T/ran"
        assert_equal "$status" 64
        assert_equal "$(wc -l <<<"$stderr")" 1
        assert_regex "$stderr" "^bufferlock: option '-[-a-z]+' after KEY 'k': options go before KEY"
    done
    assert_file_not_exists "$T/ran"
}

@test "after --, or as the command's own arguments, option-like words run as written" {
    printf '#!/bin/sh\necho "ran $*"\n' >"$T/--depends"
    chmod +x "$T/--depends"
    PATH="$T:$PATH" run --separate-stderr bl -d "$D" k -- --depends x
    assert_success
    assert_output "ran x"
    run --separate-stderr bl -d "$D" k echo --depends -w 5
    assert_success
    assert_output "--depends -w 5"
    # a word that only looks like an option of ours is the command's business
    run -127 --separate-stderr bl -d "$D" k --no-such-option
    assert_equal "$status" 127
    assert_equal "$stderr" "bufferlock: cannot run --no-such-option: No such file or directory"
}

@test "a KEY one slip away from a subcommand, whose command is not found: did you mean" {
    local slip
    for slip in cach cahce caches sttus lst; do
        run -127 --separate-stderr bl -d "$D" "$slip" k -- true
        assert_equal "$status" 127
        assert_regex "$stderr" "^bufferlock: cannot run k: No such file or directory \(did you mean 'bufferlock (cache|status|list)'\?\)$"
    done
    run -127 --separate-stderr bl -d "$D" cach k -- true
    assert_equal "$stderr" "bufferlock: cannot run k: No such file or directory (did you mean 'bufferlock cache'?)"
    # A command that is found runs: a KEY spelt like that is the user's choice.
    run --separate-stderr bl -d "$D" cach true
    assert_success
    assert_equal "$stderr" ""
    # Further from every subcommand: no guess.
    run -127 --separate-stderr bl -d "$D" deploy k -- true
    assert_equal "$status" 127
    assert_equal "$stderr" "bufferlock: cannot run k: No such file or directory"
    # Under --close (a supervised child) the same line.
    run -127 --separate-stderr bl -d "$D" -o cach k -- true
    assert_equal "$status" 127
    assert_equal "$stderr" "bufferlock: cannot run k: No such file or directory (did you mean 'bufferlock cache'?)"
}

@test "BUFFERLOCK_WAIT with a bad duration gets the same hint as -w" {
    run --separate-stderr bl -d "$D" -w 10mins k -- true
    assert_equal "$status" 64
    assert_equal "$stderr" "bufferlock: invalid duration '10mins' for --wait: expected seconds such as 5, 0.25, 250ms or inf (see 'bufferlock --help')"
    BUFFERLOCK_WAIT=10mins run --separate-stderr bl -d "$D" k -- true
    assert_equal "$status" 64
    assert_equal "$stderr" "bufferlock: invalid duration '10mins' for BUFFERLOCK_WAIT: expected seconds such as 5, 0.25, 250ms or inf (see 'bufferlock --help')"
    BUFFERLOCK_WAIT=10mins run --separate-stderr bl cache --cache-dir "$T/c" k -- true
    assert_equal "$status" 64
    assert_regex "$stderr" "for BUFFERLOCK_WAIT: expected seconds such as 5, 0.25, 250ms or inf"
}
