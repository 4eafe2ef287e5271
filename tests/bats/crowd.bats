#!/usr/bin/env bats
# A crowd on one key: 100 callers at once, each with --wait inf around one
# locked increment (bench/crowd.sh has the 1,000-caller figures). The counter
# must end exact, nobody hangs, and Redis sees every connection closed.

bats_require_minimum_version 1.5.0

load redis_helpers

setup_file() { redis_setup_file; }
teardown_file() { redis_teardown_file; }
setup() { redis_setup; }
teardown() { redis_teardown; }

CALLERS=100

# crowd BACKEND-OPTION...: CALLERS callers of $K started at once; each adds 1
# to $T/counter under the lock. Fails if one fails or is still running after
# 120 s (a loaded 2-core machine, or the sanitizer build).
crowd() {
    echo 0 >"$T/counter"
    local pids=() i pid failed=0
    for ((i = 0; i < CALLERS; i++)); do
        "$BL" "$@" -w inf "$K" sh -c 'n=$(cat "$0"); echo $((n + 1)) > "$0"' "$T/counter" \
            </dev/null >/dev/null 2>>"$T/crowd.err" 3>&- &
        pids+=($!)
    done
    track_pid "${pids[@]}"
    for pid in "${pids[@]}"; do
        wait_for_exit "$pid" 120 || fail "caller $pid hangs: $(head -c 500 "$T/crowd.err")"
        reap "$pid"
        ((REAPED_STATUS == 0)) || failed=$((failed + 1))
    done
    ((failed == 0)) || fail "$failed callers failed: $(head -c 500 "$T/crowd.err")"
    assert_equal "$(cat "$T/counter")" "$CALLERS"
    assert_equal "$(cat "$T/crowd.err")" ""
}

@test "crowd: $CALLERS callers of one key with -w inf, file backend: every increment counted" {
    crowd -d "$D"
}

@test "crowd: $CALLERS callers of one key with -w inf, redis: every increment counted, every connection closed" {
    local before after i
    before=$(rcli INFO clients | tr -d '\r' | sed -n 's/^connected_clients://p')
    crowd -r "$REDIS_URL"
    for ((i = 0; i < 50; i++)); do
        after=$(rcli INFO clients | tr -d '\r' | sed -n 's/^connected_clients://p')
        [[ $after == "$before" ]] && break
        sleep 0.1
    done
    assert_equal "$after" "$before"
    assert_equal "$(rcli EXISTS "$(redis_key "$K")")" 0
}
