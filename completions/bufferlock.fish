# fish completion for bufferlock(1)
#
# Installed as .../fish/vendor_completions.d/bufferlock.fish, it is loaded
# the first time "bufferlock <TAB>" is completed.
#
# The command line is read the way bufferlock reads it: an optional
# subcommand first, then options, then KEY (the first word that is not an
# option, or the word after "--"), then the command, which is completed as a
# command line of its own.
#
# Every long option of "bufferlock --help" and "bufferlock cache --help" is
# listed below, and nothing else: tests/bats/docs.bats checks both ways.

# Options that take a value as the next word (-w 5, --wait 5).
function __bufferlock_takes_value --argument-names word
    contains -- $word -d --dir -r --redis -w --wait --timeout -E --busy-exit \
        --conflict-exit-code --error-exit -c --command --messages --ttl \
        --namespace --connect-timeout --io-timeout --step --ratio --max-step --outage-allowance \
        --on-lost --kill-after --cache-dir --max-age --stale --tls-ca --tls-cert --tls-key \
        --slots --also
end

# Reads the words before the cursor. Prints the subcommand (run when none
# was given); "options" (the cursor is before KEY), "key" (after "--", at
# KEY) or "after" (past KEY); "shell" when -c came before KEY, else "-";
# "drop" when --drop was given, else "-"; then, for "after", the words after
# KEY.
function __bufferlock_parse
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l sub run
    if set -q tokens[1]; and contains -- $tokens[1] run cache status acquire release extend list
        set sub $tokens[1]
        set -e tokens[1]
    end
    set -l shell -
    set -l drop -
    set -l n (count $tokens)
    set -l i 1
    while test $i -le $n
        set -l w $tokens[$i]
        switch $w
            case --
                if test $i -lt $n
                    printf '%s\n' $sub after $shell $drop $tokens[(math $i + 2)..-1]
                else
                    printf '%s\n' $sub key $shell $drop
                end
                return
            case '--command=*'
                set shell shell
            case '--*=*'
            case '--*'
                test $w = --command; and set shell shell
                test $w = --drop; and set drop drop
                __bufferlock_takes_value $w; and set i (math $i + 1)
            case '-?*'
                # A cluster of short options: -nv, -w5, -dDIR, -nw 5.
                set -l letters (string split '' -- (string sub -s 2 -- $w))
                set -l j 1
                for c in $letters
                    if __bufferlock_takes_value -$c
                        test $c = c; and set shell shell
                        test $j -eq (count $letters); and set i (math $i + 1)
                        break
                    end
                    set j (math $j + 1)
                end
            case '*'
                printf '%s\n' $sub after $shell $drop $tokens[(math $i + 1)..-1]
                return
        end
        set i (math $i + 1)
    end
    printf '%s\n' $sub options $shell $drop
end

# True when the cursor is before KEY, in one of the subcommands given.
function __bufferlock_options_for
    set -l state (__bufferlock_parse)
    test "$state[2]" = options; and contains -- $state[1] $argv
end

# True for the first word after "bufferlock".
function __bufferlock_first_word
    test (count (commandline -opc)) -eq 1
end

# The words of the command after KEY, for run and cache; false when there
# is no command to complete (status, acquire, release, extend, -c, --drop).
function __bufferlock_command_words
    set -l state (__bufferlock_parse)
    test "$state[2]" = after; or return 1
    contains -- $state[1] run cache; or return 1
    test "$state[3]" = shell; and return 1
    test "$state[4]" = drop; and return 1
    set -l words $state[5..-1]
    if test "$words[1]" = --
        set -e words[1]
    else if contains -- "$words[1]" -c --command; or string match -q -- '--command=*' "$words[1]"
        return 1
    end
    set -q words[1]; and printf '%s\n' $words
    return 0
end

function __bufferlock_in_command
    __bufferlock_command_words >/dev/null
end

# Completes the command after KEY as a command line of its own.
function __bufferlock_complete_command
    set -l words (__bufferlock_command_words); or return
    set -l current (commandline -ct)
    if not set -q words[1]; and string match -q -- '-*' $current
        # Right after KEY: "--" or "-c" may come first.
        printf '%s\n' -- -c --command
    end
    complete -C (string join ' ' -- (string escape -- $words) "$current")
end

complete -c bufferlock -f

# Subcommands, as the first word.
complete -c bufferlock -n __bufferlock_first_word -a run -d 'run COMMAND under the lock for KEY'
complete -c bufferlock -n __bufferlock_first_word -a cache -d 'build COMMAND\'s output once, serve it to everyone'
complete -c bufferlock -n __bufferlock_first_word -a status -d 'tell whether the lock for KEY is held'
complete -c bufferlock -n __bufferlock_first_word -a acquire -d 'redis: take the lock, print its token'
complete -c bufferlock -n __bufferlock_first_word -a release -d 'redis: release the lock held with TOKEN'
complete -c bufferlock -n __bufferlock_first_word -a extend -d 'redis: reset the TTL of the lock held with TOKEN'
complete -c bufferlock -n __bufferlock_first_word -a list -d 'every lock held now, its KEY and holder'

# The command after KEY.
complete -c bufferlock -n __bufferlock_in_command -xa '(__bufferlock_complete_command)'

# Which subcommands take which options.
set -l any '__bufferlock_options_for run cache status acquire release extend list'
set -l file_backend '__bufferlock_options_for run cache status list'
set -l slots '__bufferlock_options_for run cache status'
set -l waiting '__bufferlock_options_for run cache acquire'
set -l busy '__bufferlock_options_for run cache status acquire extend'
set -l commands '__bufferlock_options_for run cache'
set -l run '__bufferlock_options_for run'
set -l file_shared '__bufferlock_options_for run status'
set -l ttl '__bufferlock_options_for run cache acquire extend'
set -l backoff '__bufferlock_options_for run cache acquire'
set -l cache '__bufferlock_options_for cache'
set -l json '__bufferlock_options_for cache status list'

# Backend
complete -c bufferlock -n $file_backend -s d -l dir -xa '(__fish_complete_directories)' -d 'file locks in DIR'
complete -c bufferlock -n $any -s r -l redis -xa 'redis:// rediss:// unix:// redis-sentinel://' -d 'a Redis server shared by many machines'

# Waiting
complete -c bufferlock -n $waiting -s n -l nonblock -d 'try once; if busy, skip the command'
complete -c bufferlock -n $waiting -s w -l wait -xa 'inf 0 0.5 1 5 10 30 60 250ms 2m 10m 1h' -d 'wait up to SECONDS'
complete -c bufferlock -n $waiting -l timeout -xa 'inf 0 0.5 1 5 10 30 60 250ms 2m 10m 1h' -d 'wait up to SECONDS'

# Exit codes
complete -c bufferlock -n $busy -s E -l busy-exit -xa '75 0 1' -d 'status when busy (default 75)'
complete -c bufferlock -n $busy -l conflict-exit-code -xa '75 0 1' -d 'status when busy (default 75)'
complete -c bufferlock -n $any -l error-exit -xa '69 0 1' -d 'status on a lock error (default 69)'
complete -c bufferlock -n $commands -l fail-open -d 'on a lock error, run the command anyway'

# Running
complete -c bufferlock -n $commands -s c -l command -x -d 'run STRING with /bin/sh -c'
complete -c bufferlock -n $file_shared -s s -l shared -d 'file: take a shared (read) lock'
complete -c bufferlock -n $run -s o -l close -d 'the command does not inherit the lock'
complete -c bufferlock -n $run -s F -l no-fork -d 'accepted for flock(1) compatibility'

# Slots and several keys
complete -c bufferlock -n $slots -l slots -xa '2 3 4 8' -d 'up to N holders at once (default 1)'
complete -c bufferlock -n $commands -l also -x -d 'take KEY2 as well, all or nothing'

# Redis
complete -c bufferlock -n $ttl -l ttl -xa '60 10 30 5m 10m 1h' -d 'lock lifetime (default 60)'
complete -c bufferlock -n $any -l namespace -x -d 'key prefix (default buffer:lock:)'
complete -c bufferlock -n $any -l hash-tag -d 'key {PREFIX}MD5: one Redis Cluster slot'
complete -c bufferlock -n $any -l connect-timeout -x -d 'connect timeout (default 1)'
complete -c bufferlock -n $any -l io-timeout -x -d 'timeout of each command (default 1)'
complete -c bufferlock -n $any -l tls-ca -rF -d 'rediss: trust the CA certificates in FILE'
complete -c bufferlock -n $any -l tls-cert -rF -d 'rediss: client certificate for mutual TLS'
complete -c bufferlock -n $any -l tls-key -rF -d 'rediss: private key of --tls-cert'
complete -c bufferlock -n $backoff -l step -x -d 'first pause between tries (default 0.001)'
complete -c bufferlock -n $backoff -l ratio -x -d 'growth of the pause (default 2)'
complete -c bufferlock -n $backoff -l max-step -x -d 'longest pause (default 0.5)'
complete -c bufferlock -n $backoff -l outage-allowance -x -d 'how long --wait inf retries a Redis that never answered (default 30)'
complete -c bufferlock -n $commands -l on-lost -xa 'warn\t"print a warning" term\t"also SIGTERM the command"' -d 'when renewal finds the lock lost'
complete -c bufferlock -n $commands -l kill-after -x -d 'after term: SIGKILL SECONDS after the SIGTERM (default 10, fitted to the TTL)'

# Cache
complete -c bufferlock -n $cache -l cache-dir -xa '(__fish_complete_directories)' -d 'where cache entries live'
complete -c bufferlock -n $cache -l max-age -x -d 'entries older than SECONDS are rebuilt'
complete -c bufferlock -n $cache -l stale -x -d 'serve an expired entry while another rebuilds'
complete -c bufferlock -n $cache -l background -d 'with --stale: rebuild in a detached process'
complete -c bufferlock -n $cache -l stale-if-error -d 'serve the expired entry when the rebuild fails'
complete -c bufferlock -n $cache -l drop -d 'remove KEY\'s entries, for any inputs'
complete -c bufferlock -n $cache -l gc -d 'remove expired and corrupt entries, abandoned temporary files'
complete -c bufferlock -n $cache -l max-size -x -d 'with --gc: remove the least recently used entries until the store is under SIZE'
complete -c bufferlock -n $cache -l max-unused -x -d 'with --gc: remove entries not used for SECONDS'
complete -c bufferlock -n $cache -l depends -rF -d 'the entry also depends on what PATH holds'
complete -c bufferlock -n $cache -l exclude -x -d 'leave paths matching PATTERN out of each --depends directory'
complete -c bufferlock -n $cache -l output -rF -d 'store the file or directory PATH with the entry'
complete -c bufferlock -n $cache -l warm -d 'on a miss, build over the --output of the newest entry of KEY'
complete -c bufferlock -n $cache -l warm-from -x -d '--warm, else from the newest entry of this KEY'
complete -c bufferlock -n $cache -l keep-stderr -d 'store stderr too; hits replay it'
complete -c bufferlock -n $cache -l explain -d 'say why a miss missed, and which entry a hit served'
complete -c bufferlock -n $cache -l compress -d 'file store: store stdout and stderr compressed with zstd'
complete -c bufferlock -n $cache -l sign-key -rF -d 'sign entries with HMAC-SHA256 keyed by FILE; serve only entries that check'
complete -c bufferlock -n $cache -l force -d 'rebuild now even when the entry is fresh'
complete -c bufferlock -n $cache -l read-only -d 'serve hits, write nothing to the store; a miss runs unlocked'
complete -c bufferlock -n $cache -l store -xa 'file\t"the cache directory" redis\t"the --redis server" http://\t"an HTTP server (URL)" https://\t"an HTTPS server (URL)"' -d 'where entries live'
complete -c bufferlock -n $cache -l store-token-file -rF -d 'http store: send the bearer token in FILE'
complete -c bufferlock -n $cache -l store-timeout -x -d 'http store: give up a stalled request (default 10)'
complete -c bufferlock -n $cache -l max-entry -x -d 'every store: larger outputs are not stored (redis default 64M)'
complete -c bufferlock -n $cache -l list -d 'print age, size, inputs and key of every entry'
complete -c bufferlock -n $cache -l stats -d 'print the store\'s counters and the keys that saved most'
complete -c bufferlock -n $cache -l zero -d 'with --stats: reset the counters'
complete -c bufferlock -n $cache -l format -xa 'text json markdown prometheus' -d 'with --stats: the report\'s format'

# Messages
complete -c bufferlock -n $any -s v -l verbose -d 'say what happened on stderr'
complete -c bufferlock -n $any -s q -l quiet -d 'no warnings'
complete -c bufferlock -n $json -s J -l json -d 'print one JSON document'
complete -c bufferlock -n $any -l messages -rF -d 'message texts from FILE'
complete -c bufferlock -n $any -s h -l help -d 'show the help'
complete -c bufferlock -n $run -s V -l version -d 'show the version, backends and libraries'
complete -c bufferlock -n $run -l list-messages -d 'print every message key with its default text'
