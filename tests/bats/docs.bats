#!/usr/bin/env bats
# The documentation against the binary: the options of "--help" and
# "cache --help" against the man page and each completion script (both
# ways), the man page's EXIT STATUS, ENVIRONMENT, SYNOPSIS and version, and
# the man page's own lint. The listing is done by tests/docs/options.sh.

load helpers

OPTS="$REPO_ROOT/tests/docs/options.sh"
PAGE="$REPO_ROOT/man/bufferlock.1"

# Options the binary accepts that --help does not list. Each is checked to
# really be accepted, so that this list cannot outlive the option.
HIDDEN_OPTIONS=(--nb)

# Variables the man page's ENVIRONMENT must describe besides those --help
# names: what the command gets, and what chooses the default directories.
COMMAND_ENV=(BUFFERLOCK_FD BUFFERLOCK_KEY BUFFERLOCK_BACKEND BUFFERLOCK_TOKEN BUFFERLOCK_REDIS_KEY
    BUFFERLOCK_SLOT BUFFERLOCK_FENCE BUFFERLOCK_ALSO_SLOT BUFFERLOCK_ALSO_FENCE)

# list NAME COMMAND...: writes COMMAND's output to $T/NAME; fails when the
# command fails or lists nothing (a broken lister must not pass as "equal").
list() {
    local name=$1
    shift
    "$@" >"$T/$name" || fail "listing $name failed: $*"
    [[ -s $T/$name ]] || fail "listing $name is empty: $*"
}

# expect_subset WHAT A B: every line of file $T/A is in $T/B, else fails
# naming the lines that are not.
expect_subset() {
    local what=$1 missing
    missing=$(comm -23 <(sort -u "$T/$2") <(sort -u "$T/$3"))
    [[ -z $missing ]] || fail "$what: $(tr '\n' ' ' <<<"$missing")"
}

@test "the help texts list options (the lister works)" {
    list help "$OPTS" help "$BL"
    # A few that must be there, so that a parsing mistake cannot hide.
    for o in --dir --redis --wait --cache-dir --gc --on-lost --messages --list-messages; do
        grep -qx -- "$o" "$T/help" || fail "$o not found in --help by the lister"
    done
}

@test "man page: every long option of --help and cache --help is documented under OPTIONS" {
    list help "$OPTS" help "$BL"
    list man "$OPTS" man-documented "$PAGE"
    expect_subset "in --help but not documented in man/bufferlock.1" help man
}

@test "man page: every option documented under OPTIONS is in --help" {
    list help "$OPTS" help "$BL"
    list help-short "$OPTS" help-short "$BL"
    cat "$T/help" "$T/help-short" >"$T/all"
    list man "$OPTS" man-documented "$PAGE"
    expect_subset "documented in man/bufferlock.1 but not in --help" man all
}

@test "man page: every short option of --help is documented under OPTIONS" {
    list help-short "$OPTS" help-short "$BL"
    list man "$OPTS" man-documented "$PAGE"
    expect_subset "short option in --help but not documented in man/bufferlock.1" help-short man
}

@test "man page: every long option it names anywhere is one --help lists (or a checked synonym)" {
    list help "$OPTS" help "$BL"
    printf '%s\n' "${HIDDEN_OPTIONS[@]}" >>"$T/help"
    list mentioned "$OPTS" man-mentioned "$PAGE"
    expect_subset "named in man/bufferlock.1 but unknown to --help" mentioned help
}

@test "the synonyms the man page names beyond --help are accepted by the binary" {
    local o
    for o in "${HIDDEN_OPTIONS[@]}"; do
        run --separate-stderr bl "$o" -d "$D" "$K" true
        [[ $status -eq 0 ]] || fail "bufferlock $o exits $status: $stderr"
    done
}

@test "bash completion: names exactly the long options of --help" {
    list help "$OPTS" help "$BL"
    list script "$OPTS" script "$REPO_ROOT/completions/bufferlock.bash"
    expect_subset "in --help but not in completions/bufferlock.bash" help script
    expect_subset "in completions/bufferlock.bash but not in --help" script help
}

@test "zsh completion: names exactly the long options of --help" {
    list help "$OPTS" help "$BL"
    list script "$OPTS" script "$REPO_ROOT/completions/_bufferlock"
    expect_subset "in --help but not in completions/_bufferlock" help script
    expect_subset "in completions/_bufferlock but not in --help" script help
}

@test "fish completion: names exactly the long options of --help" {
    list help "$OPTS" help "$BL"
    list script "$OPTS" script "$REPO_ROOT/completions/bufferlock.fish"
    expect_subset "in --help but not in completions/bufferlock.fish" help script
    expect_subset "in completions/bufferlock.fish but not in --help" script help
}

@test "man page: mandoc -Tlint is clean" {
    command -v mandoc >/dev/null || skip "mandoc is not installed (Debian package mandoc)"
    run mandoc -Tlint "$PAGE"
    assert_success
    assert_output ""
}

@test "man page: groff -ww -man gives no warnings" {
    command -v groff >/dev/null || skip "groff is not installed (Debian package groff-base)"
    run --separate-stderr groff -ww -man -Tutf8 "$PAGE"
    assert_success
    [[ -z $stderr ]] || fail "groff warns: $stderr"
    [[ -n $output ]] || fail "groff printed nothing"
}

@test "man page: EXIT STATUS lists exactly 64, 69, 75, 126 and 127, as --help does" {
    list man "$OPTS" man-exit-codes "$PAGE"
    assert_equal "$(tr '\n' ' ' <"$T/man")" "64 69 75 126 127 "
    list help "$OPTS" help-exit-codes "$BL"
    # --help also says 128+N for a command killed by signal N.
    assert_equal "$(grep -vx 128 "$T/help" | tr '\n' ' ')" "64 69 75 126 127 "
}

@test "the binary exits with the statuses of EXIT STATUS" {
    # 64: usage
    run bl --no-such-option "$K" true
    assert_equal "$status" 64
    # 69: error (a file where the lock directory should be)
    : >"$T/not-a-dir"
    run bl -d "$T/not-a-dir" "$K" true
    assert_equal "$status" 69
    # 75: busy
    hold_lock "$D" "$K"
    run bl -d "$D" "$K" true
    assert_equal "$status" 75
    release_lock
    # 126: found but not executable; 127: not found
    : >"$T/not-executable"
    chmod 0644 "$T/not-executable"
    run bl -d "$D" "$K" "$T/not-executable"
    assert_equal "$status" 126
    run -127 bl -d "$D" "$K" "$T/no-such-command"
    assert_equal "$status" 127
    # the command's own status, and 128+N
    run bl -d "$D" "$K" sh -c 'exit 3'
    assert_equal "$status" 3
    run bl -d "$D" "$K" sh -c 'kill -USR1 $$'
    assert_equal "$status" $((128 + 10))
}

@test "man page: ENVIRONMENT describes every variable --help names, and the command's" {
    list help "$OPTS" help-env "$BL"
    printf '%s\n' "${COMMAND_ENV[@]}" XDG_CACHE_HOME >>"$T/help"
    list man "$OPTS" man-env "$PAGE"
    expect_subset "variables missing from ENVIRONMENT in man/bufferlock.1" help man
}

@test "man page: SYNOPSIS shows every subcommand of --help" {
    "$BL" --help | sed -n '/^Usage:/,/^$/p' | grep -oE '^ +bufferlock [a-z]+' |
        awk '{ print $2 }' | sort -u >"$T/help"
    [[ -s $T/help ]] || fail "no subcommand found in --help"
    sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$PAGE" | grep -oE '^\.SY "bufferlock [a-z]+"' |
        grep -oE '[a-z]+"$' | tr -d '"' | sort -u >"$T/man"
    expect_subset "subcommands missing from the SYNOPSIS of man/bufferlock.1" help man
}

@test "man page: the version in .TH is the binary's" {
    local version
    version=$("$BL" --version | head -n 1)
    [[ $version == "bufferlock "[0-9]* ]] || fail "unexpected --version: $version"
    grep -qE "^\.TH BUFFERLOCK 1 [0-9-]+ \"$version\"" "$PAGE" ||
        fail "man/bufferlock.1 .TH does not say \"$version\": $(grep '^\.TH' "$PAGE")"
}
