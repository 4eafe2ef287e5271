#!/usr/bin/env bats
# bufferlock cache --keep-stderr (SPEC §15): the build's stderr passes
# through as it comes and is stored; hits replay it on stderr. Without the
# option, hits write nothing to stderr.

load helpers
load cache_helpers

setup() {
    cache_setup
    # Every byte value on both streams, different on each.
    # shellcheck disable=SC2016
    BOTH='printf "$(printf "\\\\%03o" $(seq 0 255))" >&2; printf "out\n"; printf "err\0end\n" >&2'
    sh -c "$BOTH" >"$T/want.out" 2>"$T/want.err"
    [[ $(stat -c %s "$T/want.err") == 264 ]] || fail "test data: $(stat -c %s "$T/want.err") bytes"
}
teardown() { cache_teardown; }

@test "--keep-stderr: a hit replays stdout and stderr byte for byte (binary)" {
    blc --keep-stderr "$K" sh -c "$BOTH; echo x >>'$RUNS'" >"$T/b.out" 2>"$T/b.err"
    assert_same_bytes "$T/want.out" "$T/b.out"
    assert_same_bytes "$T/want.err" "$T/b.err"
    blc --keep-stderr "$K" false >"$T/h.out" 2>"$T/h.err"
    assert_same_bytes "$T/want.out" "$T/h.out"
    assert_same_bytes "$T/want.err" "$T/h.err"
    assert_runs 1
}

@test "without --keep-stderr a hit writes nothing to stderr, whatever the entry holds" {
    blc --keep-stderr "$K" sh -c "$BOTH" >/dev/null 2>&1
    run --separate-stderr blc "$K" false
    assert_success
    assert_output out
    assert_stderr_empty
    # An entry built without the option has no stderr to replay.
    blc other sh -c "$BOTH" >/dev/null 2>"$T/b.err"
    assert_same_bytes "$T/want.err" "$T/b.err"
    run --separate-stderr blc --keep-stderr other false
    assert_success
    assert_output out
    assert_stderr_empty
}

@test "--keep-stderr: stderr passes through while the build runs" {
    BG_ERR=$T/live.err blc_bg --keep-stderr "$K" sh -c "echo early >&2; while [ ! -e '$T/go' ]; do sleep 0.05; done; echo out"
    wait_for_file "$T/live.err" 10
    local i
    for ((i = 0; i < 100; i++)); do
        [[ $(cat "$T/live.err") == early ]] && break
        sleep 0.05
    done
    assert_equal "$(cat "$T/live.err")" early
    pid_alive "$BG_PID" || fail "the build ended before it was told to"
    touch "$T/go"
    wait_for_exit "$BG_PID" 10 || fail "the build did not end"
    run --separate-stderr blc --keep-stderr "$K" false
    assert_output out
    assert_equal "$stderr" early
}

@test "--keep-stderr: a reader that stops (| head -1) and a closed stderr cut nothing" {
    # shellcheck disable=SC2016
    local big='i=0; while [ $i -lt 2000 ]; do echo "line $i"; echo "err $i" >&2; i=$((i+1)); done'
    sh -c "$big" >"$T/want.out" 2>"$T/want.err"
    run bash -c "'$BL' cache --cache-dir '$C' --keep-stderr '$K' sh -c '$big' 2>&- | head -n 1; echo \"status \${PIPESTATUS[0]}\""
    assert_output $'line 0\nstatus 0'
    blc --keep-stderr "$K" false >"$T/h.out" 2>"$T/h.err"
    assert_same_bytes "$T/want.out" "$T/h.out"
    assert_same_bytes "$T/want.err" "$T/h.err"
}

@test "--keep-stderr: a failed build stores nothing; its stderr still passes through" {
    run --separate-stderr blc --keep-stderr "$K" sh -c 'echo out; echo bad >&2; exit 5'
    assert_failure 5
    assert_output out
    assert_equal "$stderr" bad
    assert_no_entry "$K"
}
