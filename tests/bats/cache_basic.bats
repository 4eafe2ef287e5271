#!/usr/bin/env bats
# bufferlock cache: miss, hit, failed builds, --drop, where the cache and its
# locks live, binary safety, large payloads, usage errors.

load helpers
load cache_helpers

setup() { cache_setup; }
teardown() { cache_teardown; }

@test "a miss runs the command and prints its output; the entry is stored" {
    run --separate-stderr blc "$K" "$COUNTED" "" "hello world"
    assert_success
    assert_output "hello world"
    assert_stderr_empty
    assert_runs 1
    assert_file_exists "$(entry_path "$K")"
    [[ -z $(temp_files) ]] || fail "temporary file left after a successful build: $(temp_files)"
}

@test "a hit prints the same bytes without running the command" {
    run --separate-stderr blc "$K" "$COUNTED"
    assert_success
    assert_runs 1
    local first=$output
    [[ $first == "run "* ]] || fail "unexpected first output: $first"

    run --separate-stderr blc "$K" "$COUNTED"
    assert_success
    assert_output "$first"
    assert_stderr_empty
    assert_runs 1

    # The command given on a hit does not matter: only KEY does.
    run --separate-stderr blc "$K" touch "$T/ran"
    assert_success
    assert_output "$first"
    assert_file_not_exists "$T/ran"

    # Another KEY is another entry.
    run --separate-stderr blc other "$COUNTED"
    assert_success
    assert_runs 2
    refute_output "$first"
}

@test "a failed build (exit 3) stores nothing, exits 3, stderr passes through" {
    run --separate-stderr blc "$K" sh -c 'echo partial; echo "oops on stderr" >&2; exit 3'
    assert_failure 3
    assert_output "partial"
    assert_equal "$stderr" "oops on stderr"
    assert_no_entry "$K"

    # Nothing was stored: the next call builds.
    run --separate-stderr blc "$K" "$COUNTED" "" good
    assert_success
    assert_output good
    assert_runs 1
}

@test "a command killed by a signal stores nothing and gives 128+N" {
    run --separate-stderr blc "$K" sh -c 'echo partial; kill -TERM $$'
    assert_failure 143
    assert_output partial
    assert_no_entry "$K"
}

@test "the command's stderr passes through on a successful build, and is not cached" {
    run --separate-stderr blc "$K" sh -c 'echo out; echo err >&2'
    assert_success
    assert_output out
    assert_equal "$stderr" err
    run --separate-stderr blc "$K" sh -c 'echo out2; echo err2 >&2'
    assert_success
    assert_output out
    assert_stderr_empty
}

@test "--drop removes the entry (exit 0, even when absent); the next call rebuilds" {
    run --separate-stderr blc --drop "$K"
    assert_success
    assert_output ""
    assert_stderr_empty

    run --separate-stderr blc "$K" "$COUNTED"
    assert_success
    local first=$output
    assert_file_exists "$(entry_path "$K")"

    run --separate-stderr blc --drop "$K"
    assert_success
    assert_output ""
    assert_stderr_empty
    assert_file_not_exists "$(entry_path "$K")"

    run --separate-stderr blc --drop "$K"
    assert_success

    run --separate-stderr blc "$K" "$COUNTED"
    assert_success
    assert_runs 2
    refute_output "$first"
}

@test "--drop of one KEY leaves the others" {
    blc a echo A >/dev/null
    blc b echo B >/dev/null
    run --separate-stderr blc --drop a
    assert_success
    assert_file_not_exists "$(entry_path a)"
    assert_file_exists "$(entry_path b)"
    run --separate-stderr blc b false
    assert_success
    assert_output B
}

@test "cache dir: --cache-dir > BUFFERLOCK_CACHE_DIR > XDG_CACHE_HOME/bufferlock > HOME/.cache/bufferlock" {
    local opt="$T/opt/a/b" envd="$T/envd/c/d" xdg="$T/xdg/e" home="$T/home/f"
    local md5
    md5=$(key_md5 "$K")

    run --separate-stderr env HOME="$home" XDG_CACHE_HOME="$xdg" BUFFERLOCK_CACHE_DIR="$envd" \
        "$BL" cache --cache-dir "$opt" "$K" echo from-option
    assert_success
    assert_output from-option
    assert_file_exists "$opt/$md5.entry"
    assert_equal "$(stat -c %a "$opt")" 700
    assert_dir_not_exists "$envd"
    assert_dir_not_exists "$xdg"
    assert_dir_not_exists "$home"

    run --separate-stderr env HOME="$home" XDG_CACHE_HOME="$xdg" BUFFERLOCK_CACHE_DIR="$envd" \
        "$BL" cache "$K" echo from-env
    assert_success
    assert_output from-env
    assert_file_exists "$envd/$md5.entry"
    assert_equal "$(stat -c %a "$envd")" 700
    assert_dir_not_exists "$xdg"
    assert_dir_not_exists "$home"

    run --separate-stderr env HOME="$home" XDG_CACHE_HOME="$xdg" \
        "$BL" cache "$K" echo from-xdg
    assert_success
    assert_output from-xdg
    assert_file_exists "$xdg/bufferlock/$md5.entry"
    assert_equal "$(stat -c %a "$xdg/bufferlock")" 700
    assert_dir_not_exists "$home"

    run --separate-stderr env -u XDG_CACHE_HOME HOME="$home" \
        "$BL" cache "$K" echo from-home
    assert_success
    assert_output from-home
    assert_file_exists "$home/.cache/bufferlock/$md5.entry"
    assert_equal "$(stat -c %a "$home/.cache/bufferlock")" 700

    # Each directory now serves its own entry.
    run env -u XDG_CACHE_HOME HOME="$home" "$BL" cache "$K" echo again
    assert_output from-home
    run env HOME="$home" XDG_CACHE_HOME="$xdg" "$BL" cache "$K" echo again
    assert_output from-xdg
}

@test "cache dir: the last component is 0700 whatever the umask; parents are created" {
    run --separate-stderr bash -c 'umask 000; exec "$@"' _ "$BL" cache --cache-dir "$T/p/q/r" "$K" echo x
    assert_success
    assert_output x
    assert_dir_exists "$T/p/q"
    assert_equal "$(stat -c %a "$T/p/q/r")" 700

    # An existing cache dir is used as it is.
    mkdir -m 0755 "$T/existing"
    run --separate-stderr "$BL" cache --cache-dir "$T/existing" "$K" echo y
    assert_success
    assert_output y
    assert_file_exists "$(entry_path "$K" "$T/existing")"
}

@test "locks live in CACHEDIR/locks by default, held during the build" {
    blc_bg "$K" sh -c 'i=0; while [ ! -e "$1" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done; echo built' _ "$T/go"
    wait_until_held "$C/locks" "$K" "" 10
    touch "$T/go"
    wait_for_exit "$BG_PID" 15 || fail "build did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.out")" built
    assert_file_exists "$(lock_path "$C/locks" "$K")"
    wait_until_free "$C/locks" "$K" 5
}

@test "locks live in -d DIR when given (and not in CACHEDIR/locks)" {
    blc_bg -d "$D" "$K" sh -c 'i=0; while [ ! -e "$1" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done; echo built' _ "$T/go"
    wait_until_held "$D" "$K" "" 10
    touch "$T/go"
    wait_for_exit "$BG_PID" 15 || fail "build did not finish"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.out")" built
    assert_file_exists "$(entry_path "$K")"
    assert_file_not_exists "$(lock_path "$C/locks" "$K")"
}

@test "locks live in BUFFERLOCK_DIR when it is set" {
    run --separate-stderr env BUFFERLOCK_DIR="$D" "$BL" cache --cache-dir "$C" "$K" echo x
    assert_success
    assert_output x
    assert_file_exists "$(lock_path "$D" "$K")"
    assert_file_not_exists "$(lock_path "$C/locks" "$K")"
}

@test "a busy lock is waited for by default (cache waits inf), -n gives 75" {
    mkdir -p "$C"
    hold_lock "$C/locks" "$K"
    run --separate-stderr blc -n "$K" touch "$T/ran"
    assert_failure 75
    assert_file_not_exists "$T/ran"

    blc_bg "$K" "$COUNTED" "" waited
    sleep 1
    pid_alive "$BG_PID" || fail "bufferlock cache did not wait for the busy lock"
    release_lock
    wait_for_exit "$BG_PID" 10 || fail "did not finish after the lock was released"
    reap "$BG_PID"
    assert_equal "$REAPED_STATUS" 0
    assert_equal "$(cat "$T/bg.out")" waited
}

@test "all 256 byte values round-trip byte for byte, on the miss and on the hit" {
    local fmt='' i
    for ((i = 0; i < 256; i++)); do
        fmt+=$(printf '\\x%02x' "$i")
    done
    perl -e 'print map { chr } 0 .. 255' >"$T/expected"
    assert_equal "$(stat -c %s "$T/expected")" 256

    local rc=0
    blc "$K" bash -c 'printf "$1"' _ "$fmt" >"$T/miss" 2>"$T/miss.err" || rc=$?
    assert_equal "$rc" 0
    assert_same_bytes "$T/expected" "$T/miss"
    [[ ! -s $T/miss.err ]] || fail "stderr: $(cat "$T/miss.err")"

    blc "$K" false >"$T/hit" 2>"$T/hit.err" || rc=$?
    assert_equal "$rc" 0
    assert_same_bytes "$T/expected" "$T/hit"
    [[ ! -s $T/hit.err ]] || fail "stderr: $(cat "$T/hit.err")"

    # Output without a trailing newline and with several trailing newlines.
    blc k2 printf 'no newline' >"$T/k2"
    blc k2 false >"$T/k2.hit"
    assert_equal "$(od -An -c "$T/k2.hit" | tr -s ' ')" "$(printf 'no newline' | od -An -c | tr -s ' ')"
    blc k3 printf 'a\n\n\n' >/dev/null
    blc k3 false >"$T/k3.hit"
    assert_equal "$(stat -c %s "$T/k3.hit")" 4

    # Empty output is an entry too.
    blc k4 true >"$T/k4"
    assert_equal "$(stat -c %s "$T/k4")" 0
    assert_file_exists "$(entry_path k4)"
    run --separate-stderr blc k4 echo not-empty
    assert_success
    assert_output ""
}

@test "a 50 MB payload round-trips (sha256 equal on the miss and the hit)" {
    head -c 50000000 /dev/urandom >"$T/src"
    local want
    want=$(sha "$T/src")

    local rc=0
    blc big sh -c 'echo x >>"$1"; cat "$2"' _ "$RUNS" "$T/src" >"$T/miss" 2>"$T/miss.err" || rc=$?
    assert_equal "$rc" 0
    assert_equal "$(sha "$T/miss")" "$want"
    rm -f -- "$T/miss"
    [[ ! -s $T/miss.err ]] || fail "stderr: $(cat "$T/miss.err")"

    blc big sh -c 'echo x >>"$1"; cat "$2"' _ "$RUNS" "$T/src" >"$T/hit" 2>"$T/hit.err" || rc=$?
    assert_equal "$rc" 0
    assert_equal "$(sha "$T/hit")" "$want"
    [[ ! -s $T/hit.err ]] || fail "stderr: $(cat "$T/hit.err")"
    assert_runs 1

    # Through a pipe as well (the hit path may differ for pipes and files).
    assert_equal "$(blc big false | sha256sum | cut -d' ' -f1)" "$want"
}

@test "usage: --stale without --max-age is 64" {
    run --separate-stderr blc --stale 5 "$K" touch "$T/ran"
    assert_usage_error --stale
    assert_file_not_exists "$T/ran"
}

@test "usage: --background without --stale is 64" {
    run --separate-stderr blc --max-age 5 --background "$K" touch "$T/ran"
    assert_usage_error --background
    assert_file_not_exists "$T/ran"
}

@test "usage: cache options without the cache subcommand are 64" {
    local opt
    for opt in "--max-age 5" "--stale 5" "--cache-dir $T/c" "--stale-if-error" "--background" "--drop" "--gc"; do
        # shellcheck disable=SC2086
        run --separate-stderr bl -d "$D" $opt "$K" touch "$T/ran"
        assert_usage_error
        assert_file_not_exists "$T/ran"
    done
    assert_dir_not_exists "$T/c"
}

@test "usage: --drop with --gc is 64" {
    blc "$K" echo x >/dev/null
    run --separate-stderr blc --gc --drop "$K"
    assert_usage_error
    run --separate-stderr blc --drop "$K" --gc
    assert_usage_error
    assert_file_exists "$(entry_path "$K")"
}

@test "usage: cache without KEY or without COMMAND is 64" {
    run --separate-stderr blc
    assert_usage_error
    run --separate-stderr blc "$K"
    assert_usage_error
    assert_file_not_exists "$(entry_path "$K")"
}

@test "usage: bad --max-age / --stale values are 64" {
    local v
    for v in -1 abc nan ''; do
        run --separate-stderr blc --max-age "$v" "$K" touch "$T/ran"
        assert_usage_error
        run --separate-stderr blc --max-age 5 --stale "$v" "$K" touch "$T/ran"
        assert_usage_error
    done
    assert_file_not_exists "$T/ran"
}
