#!/usr/bin/env bats
# The completion scripts, asked for completions by their own shells:
# bash through the bash-completion machinery (COMP_WORDS/COMP_CWORD set,
# _bufferlock called), zsh through compinit in a pseudo-terminal (zpty), fish
# through "complete -C". tests/docs/complete.sh does the asking; each call
# is bounded by timeout(1) there and here.

load helpers

COMPLETE="$REPO_ROOT/tests/docs/complete.sh"
OPTS="$REPO_ROOT/tests/docs/options.sh"

setup() {
    common_setup
    mkdir -p "$T/tree/subdir" "$T/tree/other-dir"
    : >"$T/tree/file-one"
    : >"$T/tree/messages.txt"
}

need_shell() {
    case $1 in
    bash) [[ -r /usr/share/bash-completion/bash_completion ]] ||
        skip "bash-completion is not installed (Debian package bash-completion)" ;;
    zsh) command -v zsh >/dev/null || skip "zsh is not installed (Debian package zsh)" ;;
    fish) command -v fish >/dev/null || skip "fish is not installed (Debian package fish)" ;;
    esac
}

# offers SHELL LINE: the candidates, one per line, in $output; fails when the
# shell gave no answer at all.
offers() {
    run --separate-stderr timeout 60 "$COMPLETE" "$1" "$2"
    [[ $status -eq 0 ]] || fail "$1 did not complete '$2' (status $status): $stderr"
}

# The candidates on one line, cut short for a failure message.
shown() {
    local text
    text=$(tr '\n' ' ' <<<"$output")
    ((${#text} <= 300)) || text="${text:0:300}..."
    printf '%s\n' "$text"
}

# expect_offered WORD...: each WORD is among the candidates.
expect_offered() {
    local w
    for w in "$@"; do
        grep -qxF -- "$w" <<<"$output" ||
            fail "'$w' not offered; offered: $(shown)"
    done
}

# expect_not_offered WORD...: no WORD is among the candidates.
expect_not_offered() {
    local w
    for w in "$@"; do
        ! grep -qxF -- "$w" <<<"$output" ||
            fail "'$w' offered; offered: $(shown)"
    done
}

# expect_offered_like REGEX: some candidate matches REGEX.
expect_offered_like() {
    grep -qE -- "$1" <<<"$output" ||
        fail "nothing like /$1/ offered; offered: $(shown)"
}

expect_nothing() {
    [[ -z $output ]] || fail "expected no candidates; offered: $(shown)"
}

# --- the checks, one function each, run for every shell ------------------------

subcommands_first() {
    local expected
    expected=$("$BL" --help | sed -n '/^Usage:/,/^$/p' | grep -oE '^ +bufferlock [a-z]+' |
        awk '{ print $2 }' | sort -u | tr '\n' ' ')
    assert_equal "$expected" "acquire cache extend list release run status "
    offers "$1" 'bufferlock '
    assert_equal "$(shown)" "$expected"
    offers "$1" 'bufferlock ca'
    assert_equal "$output" "cache"
}

long_option_prefix() {
    offers "$1" 'bufferlock cache --ca'
    assert_equal "$output" "--cache-dir"
    offers "$1" 'bufferlock --no'
    assert_equal "$(shown)" "--no-fork --nonblock "
    # cache's options belong to cache alone (elsewhere they are usage errors)
    offers "$1" 'bufferlock --ca'
    expect_nothing
}

# Every option of both help texts is offered in some context, and nothing
# else; cache offers cache's; the default context everything but cache's.
options_match_help() {
    "$OPTS" help "$BL" >"$T/help-long"
    "$OPTS" help-short "$BL" >"$T/help-short"
    "$OPTS" cache-only "$BL" >"$T/cache-only"
    sort -u "$T/help-long" "$T/help-short" >"$T/help"
    [[ $(wc -l <"$T/help") -gt 30 ]] || fail "the help texts gave too few options"
    local sub union=()
    : >"$T/offered"
    for sub in '' 'run ' 'cache ' 'status ' 'acquire ' 'release ' 'extend ' 'list '; do
        offers "$1" "bufferlock $sub-"
        [[ -n $output ]] || fail "no options offered after 'bufferlock $sub'"
        printf '%s\n' "$output" >>"$T/offered"
        printf '%s\n' "$output" >"$T/offered-${sub% }"
    done
    sort -u -o "$T/offered" "$T/offered"
    local missing extra
    missing=$(comm -23 "$T/help" "$T/offered")
    extra=$(comm -13 "$T/help" "$T/offered")
    [[ -z $missing ]] || fail "$1 never offers: $(tr '\n' ' ' <<<"$missing")"
    [[ -z $extra ]] || fail "$1 offers options --help does not have: $(tr '\n' ' ' <<<"$extra")"
    missing=$(comm -23 "$T/cache-only" <(sort -u "$T/offered-cache"))
    [[ -z $missing ]] || fail "$1 does not offer after 'bufferlock cache': $missing"
    missing=$(comm -23 <(comm -23 "$T/help" "$T/cache-only") <(sort -u "$T/offered-"))
    [[ -z $missing ]] || fail "$1 does not offer after 'bufferlock': $(tr '\n' ' ' <<<"$missing")"
    extra=$(comm -12 "$T/cache-only" <(sort -u "$T/offered-"))
    [[ -z $extra ]] || fail "$1 offers cache options outside cache: $(tr '\n' ' ' <<<"$extra")"
}

directories_for_dir_options() {
    local form
    for form in '--dir ' '-d ' 'cache --cache-dir '; do
        offers "$1" "bufferlock $form$T/tree/"
        expect_offered_like '(^|/)subdir/?$'
        expect_offered_like '(^|/)other-dir/?$'
        ! grep -qE '(^|/)file-one$' <<<"$output" || fail "a file offered for $form: $(shown)"
    done
}

files_for_messages() {
    offers "$1" "bufferlock --messages $T/tree/mes"
    expect_offered_like '(^|/)messages\.txt$'
}

values_of_on_lost() {
    offers "$1" 'bufferlock --on-lost '
    assert_equal "$(shown)" "term warn "
    offers "$1" 'bufferlock -r redis://h --on-lost t'
    assert_equal "$output" "term"
}

url_starts_for_redis() {
    offers "$1" 'bufferlock -r redis'
    expect_offered_like '^redis://'
    expect_offered_like '^rediss://'
    expect_offered_like '^redis-sentinel://'
}

command_after_key() {
    local line
    for line in 'bufferlock job ech' 'bufferlock job -- ech' 'bufferlock -w 5 -d /tmp job ech' \
        'bufferlock -nv job ech' 'bufferlock run cache ech' 'bufferlock cache job ech' \
        'bufferlock -- -odd-key ech' 'bufferlock deploy:prod ech'; do
        offers "$1" "$line"
        expect_offered echo
        expect_not_offered --dir
    done
    # the command's own arguments: cat completes file names
    offers "$1" "bufferlock job cat $T/tree/file-o"
    expect_offered_like '(^|/)file-one$'
    # words beginning with - after KEY belong to the command, not to us
    offers "$1" "bufferlock job ls --di"
    expect_not_offered --dir
}

no_command_where_none_goes() {
    local line
    for line in 'bufferlock status job ' 'bufferlock acquire job ' 'bufferlock release job ' \
        'bufferlock -c true job ' 'bufferlock job -c ' 'bufferlock cache --drop job '; do
        offers "$1" "$line"
        expect_nothing
    done
}

# --- bash ----------------------------------------------------------------------

@test "bash: subcommands as the first word" { need_shell bash; subcommands_first bash; }
@test "bash: long options by prefix, per subcommand" { need_shell bash; long_option_prefix bash; }
@test "bash: exactly the options of --help and cache --help, where they apply" { need_shell bash; options_match_help bash; }
@test "bash: directories for --dir, -d, --cache-dir" { need_shell bash; directories_for_dir_options bash; }
@test "bash: files for --messages" { need_shell bash; files_for_messages bash; }
@test "bash: warn and term for --on-lost" { need_shell bash; values_of_on_lost bash; }
@test "bash: URL starts for --redis, the sentinel form too" { need_shell bash; url_starts_for_redis bash; }
@test "bash: the command after KEY is completed as a command" { need_shell bash; command_after_key bash; }
@test "bash: nothing after KEY where no command goes" { need_shell bash; no_command_where_none_goes bash; }

@test "bash: --opt=value forms complete the value" {
    need_shell bash
    offers bash 'bufferlock --on-lost='
    assert_equal "$(shown)" "term warn "
    offers bash "bufferlock --dir=$T/tree/sub"
    expect_offered_like '(^|/)subdir/?$'
}

# --- bash without the bash-completion package -----------------------------------
# (a container, a minimal install): the script falls back on plain compgen.

@test "bash without bash-completion: subcommands as the first word" { subcommands_first bash-plain; }
@test "bash without bash-completion: long options by prefix, per subcommand" { long_option_prefix bash-plain; }
@test "bash without bash-completion: exactly the options of --help and cache --help" { options_match_help bash-plain; }
@test "bash without bash-completion: directories for --dir, -d, --cache-dir" { directories_for_dir_options bash-plain; }
@test "bash without bash-completion: files for --messages" { files_for_messages bash-plain; }
@test "bash without bash-completion: URL starts for --redis" { url_starts_for_redis bash-plain; }
@test "bash without bash-completion: the command after KEY is completed as a command" { command_after_key bash-plain; }
@test "bash without bash-completion: nothing after KEY where no command goes" { no_command_where_none_goes bash-plain; }

@test "bash without bash-completion: no error on stderr, --opt=value forms complete" {
    offers bash-plain 'bufferlock --on-lost='
    assert_equal "$(shown)" "term warn "
    assert_equal "$stderr" ""
    offers bash-plain 'bufferlock cache --w'
    assert_equal "$(shown)" "--wait --warm --warm-from "
    assert_equal "$stderr" ""
}

# --- --store's values, in every shell ---------------------------------------------

@test "every shell offers file, redis, http:// and https:// for cache --store" {
    local sh
    for sh in bash bash-plain zsh fish; do
        case $sh in
        bash) [[ -r /usr/share/bash-completion/bash_completion ]] || continue ;;
        zsh | fish) command -v "$sh" >/dev/null || continue ;;
        esac
        offers "$sh" 'bufferlock cache --store '
        expect_offered file redis http:// https://
        offers "$sh" 'bufferlock cache --store ht'
        expect_offered http:// https://
        expect_not_offered file redis
    done
}

# --- zsh -----------------------------------------------------------------------

@test "zsh: subcommands as the first word" { need_shell zsh; subcommands_first zsh; }
@test "zsh: long options by prefix, per subcommand" { need_shell zsh; long_option_prefix zsh; }
@test "zsh: exactly the options of --help and cache --help, where they apply" { need_shell zsh; options_match_help zsh; }
@test "zsh: directories for --dir, -d, --cache-dir" { need_shell zsh; directories_for_dir_options zsh; }
@test "zsh: files for --messages" { need_shell zsh; files_for_messages zsh; }
@test "zsh: warn and term for --on-lost" { need_shell zsh; values_of_on_lost zsh; }
@test "zsh: URL starts for --redis, the sentinel form too" { need_shell zsh; url_starts_for_redis zsh; }
@test "zsh: the command after KEY is completed as a command" { need_shell zsh; command_after_key zsh; }
@test "zsh: nothing after KEY where no command goes" { need_shell zsh; no_command_where_none_goes zsh; }

# --- fish ----------------------------------------------------------------------

@test "fish: subcommands as the first word" { need_shell fish; subcommands_first fish; }
@test "fish: long options by prefix, per subcommand" { need_shell fish; long_option_prefix fish; }
@test "fish: exactly the options of --help and cache --help, where they apply" { need_shell fish; options_match_help fish; }
@test "fish: directories for --dir, -d, --cache-dir" { need_shell fish; directories_for_dir_options fish; }
@test "fish: files for --messages" { need_shell fish; files_for_messages fish; }
@test "fish: warn and term for --on-lost" { need_shell fish; values_of_on_lost fish; }
@test "fish: URL starts for --redis, the sentinel form too" { need_shell fish; url_starts_for_redis fish; }
@test "fish: the command after KEY is completed as a command" { need_shell fish; command_after_key fish; }
@test "fish: nothing after KEY where no command goes" { need_shell fish; no_command_where_none_goes fish; }

@test "fish: the example of the brief, complete -C \"bufferlock cache --ca\"" {
    need_shell fish
    # fish keeps history and universal variables under HOME and the XDG dirs.
    run env HOME="$T" XDG_CONFIG_HOME="$T/config" XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache" \
        timeout 30 fish -c "source '$REPO_ROOT/completions/bufferlock.fish'; complete -C 'bufferlock cache --ca'"
    assert_success
    assert_output --partial "--cache-dir"
}
