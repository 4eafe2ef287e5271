#!/usr/bin/env bash
# The command of the cache chaos run: prints KEY's output, always the same
# bytes (expected.KEY), slowly enough to be killed in the middle. Registers
# its PID in CHAOS_DIR/builders while it runs, so the harness can pick a
# builder to kill without searching processes by name.
set -u
key=$1 dir=$CHAOS_DIR
: >"$dir/builders/$$"
exec 9<>"$dir/nap.fifo"
for ((i = 0; i < 400; i++)); do
    printf '%s %05d the quick brown fox jumps over the lazy dog\n' "$key" "$i"
    ((i % 100 == 99)) && read -r -t 0.002 -u 9 _
done
printf 'end of %s\n' "$key"
rm -f "$dir/builders/$$"
