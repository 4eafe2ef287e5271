# bash completion for bufferlock(1)                          -*- shell-script -*-
#
# Uses the bash-completion package's helpers (_init_completion, _filedir,
# _command_offset) where they are loaded. Installed as
# .../bash-completion/completions/bufferlock, it is loaded on demand the first
# time "bufferlock <TAB>" is completed. Sourced in a bash without that package
# (a container, a minimal install), it falls back on plain compgen: the words
# split at blanks only, files and commands without bash-completion's extras.
#
# The command line is read the way bufferlock reads it: an optional
# subcommand first, then options, then KEY (the first word that is not an
# option, or the word after "--"), then the command, which is completed as a
# command line of its own.
#
# Every long option of "bufferlock --help" and "bufferlock cache --help" is
# listed below, and nothing else: tests/bats/docs.bats checks both ways.

# Options that take a value, as separate words (-w 5, --wait 5).
_bufferlock_takes_value()
{
    case $1 in
        -d | --dir | -r | --redis | -w | --wait | --timeout | -E | --busy-exit | \
            --conflict-exit-code | --error-exit | -c | --command | --messages | \
            --ttl | --namespace | --connect-timeout | --io-timeout | --step | \
            --ratio | --max-step | --outage-allowance | --on-lost | --kill-after | --cache-dir | \
            --max-age | --stale | --tls-ca | --tls-cert | --tls-key | --slots | --also | \
            --depends | --exclude | --output | --warm-from | --sign-key | --store | --store-token-file | --store-timeout | --max-entry | --max-size | --max-unused | --format)
            return 0
            ;;
    esac
    return 1
}

# The options that make sense with subcommand $1 (run when none was given).
_bufferlock_options()
{
    local backend='-d --dir -r --redis'
    local wait='-n --nonblock -w --wait --timeout'
    local busy='-E --busy-exit --conflict-exit-code'
    local messages='-v --verbose -q --quiet --messages -h --help'
    local redis='--namespace --hash-tag --connect-timeout --io-timeout --tls-ca --tls-cert --tls-key'
    local redis_wait='--ttl --step --ratio --max-step --outage-allowance'
    local redis_run='--on-lost --kill-after'
    local keys='--slots --also'
    case $1 in
        run)
            echo "$backend $wait $busy --error-exit --fail-open -c --command
                -s --shared -o --close -F --no-fork $keys $redis $redis_wait $redis_run
                $messages -V --version --list-messages"
            ;;
        cache)
            echo "--cache-dir --max-age --stale --background --stale-if-error
                --depends --exclude --output --warm --warm-from --keep-stderr --explain --sign-key --compress --force --read-only --store --store-token-file --store-timeout --max-entry --list
                --drop --gc --max-size --max-unused --stats --zero --format -J --json $backend $wait $busy --error-exit --fail-open
                -c --command $keys $redis $redis_wait $redis_run $messages"
            ;;
        status)
            echo "$backend -s --shared --slots $busy --error-exit -J --json $redis $messages"
            ;;
        list)
            echo "$backend --error-exit -J --json $messages"
            ;;
        acquire)
            echo "-r --redis $wait $busy --error-exit $redis $redis_wait $messages"
            ;;
        release)
            echo "-r --redis --error-exit $redis $messages"
            ;;
        extend)
            echo "-r --redis --ttl $busy --error-exit $redis $messages"
            ;;
    esac
}

_bufferlock()
{
    local cur prev words cword split
    # -n : keeps KEYs such as "deploy:prod" in one word; -s splits --opt=value.
    if declare -F _init_completion >/dev/null; then
        _init_completion -s -n : || return
    else
        _bufferlock_init
    fi

    local subcommands="run cache status acquire release extend list"

    # Walk the words before the cursor: subcommand, options, KEY.
    local sub=run i=1 key_at=0 shell_before_key=false end_of_options=false
    local no_command=false
    if ((cword > 1)); then
        case ${words[1]} in
            run | cache | status | acquire | release | extend | list)
                sub=${words[1]}
                i=2
                ;;
        esac
    fi
    local w j c
    while ((i < cword)); do
        w=${words[i]}
        if [[ $w == -- ]]; then
            ((i + 1 < cword)) && key_at=$((i + 1))
            end_of_options=true
            break
        elif [[ $w == --?* ]]; then
            [[ $w == --command || $w == --command=* ]] && shell_before_key=true
            [[ $w == --drop ]] && no_command=true
            [[ $w != *=* ]] && _bufferlock_takes_value "$w" && ((i++))
        elif [[ $w == -?* ]]; then
            # A cluster of short options: -nv, -w5, -dDIR, -nw 5.
            for ((j = 1; j < ${#w}; j++)); do
                c=${w:j:1}
                if _bufferlock_takes_value "-$c"; then
                    [[ $c == c ]] && shell_before_key=true
                    ((j == ${#w} - 1)) && ((i++))
                    break
                fi
            done
        else
            key_at=$i
            break
        fi
        ((i++))
    done

    if ((key_at > 0)); then
        # Past KEY: the command for run and cache; nothing else takes one
        # (release and extend take a TOKEN, which only "acquire" knows).
        [[ $sub == run || $sub == cache ]] || return
        $shell_before_key && return
        $no_command && return
        local cmd_at=$((key_at + 1))
        if ((cword == cmd_at)) && [[ $cur == -* ]]; then
            _bufferlock_reply '-- -c --command'
            return
        fi
        case ${words[cmd_at]} in
            --) ((cmd_at++)) ;;
            -c | --command) return ;; # the shell command: free text
            --command=*) return ;;
        esac
        ((cword < cmd_at)) && return
        if declare -F _command_offset >/dev/null; then
            _bufferlock_command_offset "$cmd_at"
        elif ((cword == cmd_at)); then
            mapfile -t COMPREPLY < <(compgen -c -- "$cur")
        else
            _bufferlock_files
        fi
        return
    fi

    # Before KEY: the KEY itself (free text), an option's value, an option,
    # or a subcommand.
    $end_of_options && return

    # The option whose value is at the cursor: --dir DIR, --dir=DIR, -d DIR,
    # or the last letter of a cluster such as -nw 5.
    local value_of=$prev
    if [[ $prev == -[!-]?* ]] && ! $split; then
        value_of=-${prev: -1}
        # -w5 x: the cluster already had its value.
        for ((j = 1; j < ${#prev} - 1; j++)); do
            _bufferlock_takes_value "-${prev:j:1}" && value_of=
        done
    fi
    case $value_of in
        -d | --dir | --cache-dir)
            _bufferlock_files -d
            return
            ;;
        --messages | --tls-ca | --tls-cert | --tls-key | --depends | --output | --sign-key)
            _bufferlock_files
            return
            ;;
        -r | --redis)
            _bufferlock_reply 'redis://localhost:6379/0 rediss://localhost:6379/0 unix:/// redis-sentinel://localhost:26379'
            _bufferlock_ltrim_colon
            compopt -o nospace
            return
            ;;
        -w | --wait | --timeout)
            _bufferlock_reply 'inf 0 0.5 1 5 10 30 60 250ms 2m 10m 1h'
            return
            ;;
        -E | --busy-exit | --conflict-exit-code)
            _bufferlock_reply '75 0 1'
            return
            ;;
        --error-exit)
            _bufferlock_reply '69 0 1'
            return
            ;;
        --on-lost)
            _bufferlock_reply 'warn term'
            return
            ;;
        --ttl)
            _bufferlock_reply '60 10 30 5m 10m 1h'
            return
            ;;
        --slots)
            _bufferlock_reply '2 3 4 8'
            return
            ;;
        --store)
            _bufferlock_reply 'file redis http:// https://'
            _bufferlock_ltrim_colon
            compopt -o nospace
            return
            ;;
        -c | --command | --namespace | --connect-timeout | --io-timeout | \
            --step | --ratio | --max-step | --outage-allowance | --kill-after | --max-age | --stale | --also)
            return # free text or a number
            ;;
    esac
    $split && return

    if [[ $cur == -* ]]; then
        _bufferlock_reply "$(_bufferlock_options "$sub")"
        return
    fi
    # A subcommand only as the first word; a KEY is free text.
    ((cword == 1)) && _bufferlock_reply "$subcommands"
}

# COMPREPLY = the words of $1 that begin with $cur.
_bufferlock_reply()
{
    mapfile -t COMPREPLY < <(compgen -W "$1" -- "$cur")
}

# _command_offset counts in COMP_WORDS, where "deploy:prod" is three words;
# words (from _init_completion -n :) has it as one. Map words index $1 to
# the COMP_WORDS index where that word starts, then complete from there.
_bufferlock_command_offset()
{
    local target=$1 k=0 n=0 acc
    while ((k < target && n < ${#COMP_WORDS[@]})); do
        acc=${COMP_WORDS[n]}
        ((n++))
        while [[ $acc != "${words[k]}" && ${words[k]} == "$acc"* ]] &&
            ((n < ${#COMP_WORDS[@]})); do
            acc+=${COMP_WORDS[n]}
            ((n++))
        done
        ((k++))
    done
    _command_offset "$n"
}

# Without bash-completion: what _init_completion -s -n : sets, from the line
# up to the cursor split at blanks (so "deploy:prod" stays one word).
_bufferlock_init()
{
    local line=${COMP_LINE:0:COMP_POINT}
    read -r -a words <<<"$line"
    [[ -z $line || $line == *[[:blank:]] ]] && words+=("")
    cword=$((${#words[@]} - 1))
    cur=${words[cword]}
    prev=${words[cword - 1]:-}
    split=false
    if [[ $cur == --?*=* ]]; then
        prev=${cur%%=*}
        cur=${cur#*=}
        split=true
    fi
}

# File (or, with -d, directory) names for the word at the cursor.
_bufferlock_files()
{
    if declare -F _filedir >/dev/null; then
        _filedir "$@"
        return
    fi
    local kind=-f
    [[ ${1:-} == -d ]] && kind=-d
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen "$kind" -- "$cur")
}

# Readline replaces only the part of the word after its last colon: drop the
# rest from each candidate (bash-completion's __ltrim_colon_completions).
_bufferlock_ltrim_colon()
{
    if declare -F __ltrim_colon_completions >/dev/null; then
        __ltrim_colon_completions "$cur"
        return
    fi
    [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]] || return
    local prefix=${cur%"${cur##*:}"} i
    for i in "${!COMPREPLY[@]}"; do
        COMPREPLY[i]=${COMPREPLY[i]#"$prefix"}
    done
}

complete -F _bufferlock bufferlock

# ex: filetype=sh
