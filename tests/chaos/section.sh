#!/usr/bin/env bash
# One critical section, run by bufferlock under the lock, with its own
# witnesses (the harness's analysis reads them, bufferlock is not asked):
#   - an O_EXCL marker file (bash's noclobber) naming the holder: finding it
#     taken by a live holder is an overlap, logged at once;
#   - an append-only log: "enter TAG READ FENCE", "exit TAG WROTE", and
#     "term TAG" when a SIGTERM ends it (one write(2) each, O_APPEND, so
#     lines never interleave);
#   - a counter incremented read-modify-write with a nap in between, so that
#     two holders at once lose or duplicate an increment.
# Only builtins between enter and exit: nothing else of ours holds the lock
# (with the file backend this process is the holder: bufferlock exec'd it).
# Environment: CHAOS_DIR, CHAOS_TAG, CHAOS_NAP (seconds).
set -u
dir=$CHAOS_DIR tag=$CHAOS_TAG
exec 8>>"$dir/log" 9<>"$dir/nap.fifo"
# A SIGTERM (bufferlock's --on-lost term) ends the section: logged at that
# moment, so the analysis sees whether it ended before the next holder
# entered (the marker is left, as a killed holder leaves it).
trap 'printf "term %s\n" "$tag" >&8; exit 143' TERM

set -o noclobber
if ! { printf '%s %s\n' "$tag" "$$" >"$dir/marker"; } 2>/dev/null; then
    read -r other other_pid <"$dir/marker" || other_pid=
    # Its holder is gone (killed mid-section): the marker is stale.
    if [[ -n $other_pid ]] && kill -0 "$other_pid" 2>/dev/null &&
        [[ $(</proc/"$other_pid"/stat) != *") Z "* ]]; then
        printf 'overlap %s %s\n' "$tag" "$other" >&8
    fi
    set +o noclobber
    printf '%s %s\n' "$tag" "$$" >"$dir/marker"
fi
set +o noclobber

read -r n <"$dir/counter" || n=0
printf 'enter %s %s %s\n' "$tag" "${n:-0}" "${BUFFERLOCK_FENCE:--}" >&8
read -r -t "$CHAOS_NAP" -u 9 _ # a nap without a child process
# One write in place: the number only grows, so no truncation is needed.
printf '%s\n' $((n + 1)) 1<>"$dir/counter"
printf 'exit %s %s\n' "$tag" $((n + 1)) >&8
[[ $(<"$dir/marker") == "$tag $$" ]] && rm -f "$dir/marker"
exit 0
