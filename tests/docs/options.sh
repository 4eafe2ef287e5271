#!/usr/bin/env bash
# Lists the options that a piece of documentation names, one per line,
# sorted and without repeats, for tests/bats/docs.bats to compare.
#
#   options.sh help BINARY          long options of "--help" and "cache --help"
#   options.sh help-short BINARY    short options (-d ...) of both help texts
#   options.sh cache-only BINARY    the options "cache --help" describes in its
#                                   option column (those of cache, long and short)
#   options.sh man-documented PAGE  options in the tags of the items under
#                                   OPTIONS in a man(7) page (long and short)
#   options.sh man-mentioned PAGE   every long option named anywhere in it
#   options.sh script FILE          every long option a completion script
#                                   names (bash, zsh, or fish "-l NAME")
#   options.sh man-exit-codes PAGE  the numbers tagged under EXIT STATUS
#   options.sh help-exit-codes BINARY  the numbers of "Exit status:" in --help
#   options.sh man-env PAGE         the variables tagged under ENVIRONMENT
#   options.sh help-env BINARY      the variables both help texts name
set -euo pipefail

mode=${1:?mode}
file=${2:?file}

long_options() { grep -oE -- '--[a-z][a-z0-9]*(-[a-z0-9]+)*' || true; }

# A man page's text with \- as -, font escapes and \& removed, comment
# lines dropped.
man_text() {
    grep -v '^\.\\"' "$1" | sed -e 's/\\-/-/g' -e 's/\\f[RBIP]//g' -e 's/\\&//g'
}

# The lines of section $2 (".SH NAME") of man page $1.
man_section() {
    man_text "$1" | awk -v want="$2" '
        /^\.SH / { sub(/^\.SH +/, ""); gsub(/"/, ""); on = ($0 == want); next }
        on'
}

# The tag lines of the .TP items of the text on stdin.
tp_tags() { awk 'tag { print; tag = 0 } /^\.TP/ { tag = 1 }'; }

case $mode in
help)
    { "$file" --help; "$file" cache --help; } | long_options | sort -u
    ;;
help-short)
    { "$file" --help; "$file" cache --help; } |
        grep -oE '^ +-[a-zA-Z],' | tr -d ' ,' | sort -u
    ;;
cache-only)
    # long and short names, as "help" and "help-short" give them (-J, --json)
    "$file" cache --help | grep -E '^ +(-[a-zA-Z], )?--[a-z]' |
        { grep -oE -- '^ +-[a-zA-Z],|--[a-z][a-z0-9]*(-[a-z0-9]+)*' || true; } | tr -d ' ,' | sort -u
    ;;
man-documented)
    man_section "$file" OPTIONS | tp_tags |
        { grep -oE -- '(^|[^-[:alnum:]])--?[a-zA-Z][a-z0-9-]*' || true; } |
        sed -E 's/^[^-]//' | sort -u
    ;;
man-mentioned)
    man_text "$file" | long_options | sort -u
    ;;
script)
    # Comments aside, and fish's "function NAME --argument-names ...".
    code=$(grep -vE '^[[:space:]]*(#|function )' "$file")
    {
        long_options <<<"$code"
        # fish: complete ... -l NAME (or --long NAME)
        grep -E '^[[:space:]]*complete ' <<<"$code" |
            grep -oE -- '[[:space:]](-l|--long) [a-z][a-z0-9-]*' | sed -E 's/.* /--/' || true
    } | sort -u
    ;;
man-exit-codes)
    man_section "$file" "EXIT STATUS" | tp_tags | { grep -oE '^\.B +[0-9]+$' || true; } |
        grep -oE '[0-9]+' | sort -n
    ;;
help-exit-codes)
    "$file" --help | sed -n '/^Exit status:/,/^$/p' | grep -oE '(^|[ ;(])[0-9]+' |
        grep -oE '[0-9]+' | sort -nu
    ;;
man-env)
    man_section "$file" ENVIRONMENT | tp_tags | { grep -oE '^\.B +[A-Z][A-Z0-9_]*$' || true; } |
        awk '{ print $2 }' | sort -u
    ;;
help-env)
    { "$file" --help; "$file" cache --help; } |
        grep -oE '\b(BUFFERLOCK_[A-Z_]+|REDISCLI_AUTH|XDG_[A-Z_]+)\b' | sort -u
    ;;
*)
    echo "options.sh: unknown mode '$mode'" >&2
    exit 64
    ;;
esac
