#!/usr/bin/env bash
# Prints the completions a shell offers for a command line, one per line
# (the candidate only, without descriptions), sorted and without repeats.
#
#   complete.sh bash|zsh|fish 'bufferlock cache --ca'
#
# The line is completed at its end; a trailing space means "a new word".
# The completion scripts come from COMPLETIONS_DIR (default: the repository's
# completions/). Start-up files of the user are never read: HOME and the XDG
# directories point to a scratch directory, removed on exit.
# Exit status: 0, or 2 when the shell gave no answer, 3 on a set-up problem.
set -uo pipefail

shell=${1:?usage: complete.sh bash|zsh|fish LINE}
line=${2?usage: complete.sh bash|zsh|fish LINE}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${COMPLETIONS_DIR:-$here/../../completions}
dir=$(cd "$dir" && pwd) || exit 3

scratch=$(mktemp -d "${TMPDIR:-/tmp}/complete.XXXXXX") || exit 3
trap 'rm -rf -- "$scratch"' EXIT
mkdir -p "$scratch/config" "$scratch/data" "$scratch/cache"
export HOME=$scratch XDG_CONFIG_HOME=$scratch/config XDG_DATA_HOME=$scratch/data \
    XDG_CACHE_HOME=$scratch/cache

case $shell in
bash | bash-plain)
    # bash-plain: a bash without the bash-completion package.
    init='source /usr/share/bash-completion/bash_completion || exit 3'
    [[ $shell == bash ]] || init=':'
    # The words as readline splits them: at blanks, and at each character
    # of COMP_WORDBREAKS that bash-completion cares about (= and :), which
    # become words of their own. No quoting: the tests do not need it.
    # shellcheck disable=SC2016
    bash --norc --noprofile -c '
        eval "$3"
        source "$1/bufferlock.bash" || exit 3
        # Outside a real completion, compopt complains; what it sets (no
        # space after a match) is not part of the list anyway.
        compopt() { builtin compopt "$@" 2>/dev/null || true; }
        line=$2
        COMP_WORDS=()
        read -r -a blank_words <<<"$line"
        for w in "${blank_words[@]}"; do
            while [[ $w =~ ^([^=:]*)([=:])(.*)$ ]]; do
                [[ -n ${BASH_REMATCH[1]} ]] && COMP_WORDS+=("${BASH_REMATCH[1]}")
                COMP_WORDS+=("${BASH_REMATCH[2]}")
                w=${BASH_REMATCH[3]}
            done
            [[ -n $w ]] && COMP_WORDS+=("$w")
        done
        [[ $line == *" " || ${#COMP_WORDS[@]} -eq 0 ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE=$line
        COMP_POINT=${#line}
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]:-}
        COMPREPLY=()
        _bufferlock bufferlock "$cur" "$prev"
        printf "%s\n" "${COMPREPLY[@]}"
    ' bash "$dir" "$line" "$init" | sed '/^$/d' | sort -u
    exit "${PIPESTATUS[0]}"
    ;;
zsh)
    command -v zsh >/dev/null || exit 3
    timeout 30 zsh -f "$here/zsh-complete.zsh" "$dir" "$line" | sort -u
    exit "${PIPESTATUS[0]}"
    ;;
fish)
    command -v fish >/dev/null || exit 3
    # Not fish -N: it would also skip fish's own completion path, and the
    # command after KEY is completed with the other commands' completions.
    # shellcheck disable=SC2016
    timeout 30 fish -c 'source $argv[1]/bufferlock.fish; or exit 3
        complete -C $argv[2]' "$dir" "$line" | cut -f1 | sort -u
    exit "${PIPESTATUS[0]}"
    ;;
*)
    echo "complete.sh: unknown shell '$shell'" >&2
    exit 3
    ;;
esac
