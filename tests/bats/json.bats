#!/usr/bin/env bats
# -J/--json (issue 25): status, list and cache --list print one JSON
# document; every document is parsed with jq and its fields compared with
# the text form's. Three redis-servers per file (R, and Q2, Q3 for a quorum
# with R).

bats_require_minimum_version 1.5.0

load redis_helpers

setup_file() {
    local n
    for n in R Q2 Q3; do
        start_redis_as "$n" || return 1
    done
    export R_PORT Q2_PORT Q3_PORT R_PID Q2_PID Q3_PID R_URL Q2_URL Q3_URL R_DIR Q2_DIR Q3_DIR
}
teardown_file() { redis_teardown_file; }
setup() {
    common_setup
    command -v jq >/dev/null || fail "jq is not installed (Debian package jq)"
    local n
    for n in R Q2 Q3; do
        local -n _pid="${n}_PID"
        _is_redis_pid "$_pid" || fail "$n (pid $_pid) is gone"
        rcli_to "$n" FLUSHALL >/dev/null
    done
}
teardown() { redis_teardown; }

# doc: $output must be exactly one JSON document on one line; jq FILTER of it.
doc() {
    [[ $output != *$'\n'* ]] || fail "more than one line: $output"
    jq -e . <<<"$output" >/dev/null || fail "not JSON: $output"
    jq -c "$@" <<<"$output"
}

# keys_are KEY...: the sorted field names of the document are exactly these.
keys_are() {
    assert_equal "$(doc 'keys_unsorted | sort | join(" ")')" "\"$(printf '%s\n' "$@" | sort | paste -sd ' ')\""
}

# text_field NAME: the value of NAME= in the text line $1.
text_field() {
    sed -nE "s/.* $2=([^ ]*).*/\1/p" <<<"$1"
}

# --- status, file backend -----------------------------------------------------

@test "file: a free key: state, key, digest, backend, dir, path; exit 0 as the text form" {
    run --separate-stderr bl status -d "$D" "$K"
    assert_success
    assert_output free
    run --separate-stderr bl status --json -d "$D" "$K"
    assert_success
    assert_stderr_empty
    keys_are key digest state backend dir path
    assert_equal "$(doc -r .state)" free
    assert_equal "$(doc -r .key)" "$K"
    assert_equal "$(doc -r .digest)" "$(key_md5 "$K")"
    assert_equal "$(doc -r .backend)" file
    assert_equal "$(doc -r .dir)" "$D"
    assert_equal "$(doc -r .path)" "$(lock_path "$D" "$K")"
}

@test "file: held by bufferlock: pids, since and fence as the text's; exit 75; -J is --json" {
    bl_hold_lock "$D" "$K"
    run --separate-stderr bl status -d "$D" "$K"
    assert_failure 75
    local text=$output
    run --separate-stderr bl status -J -d "$D" "$K"
    assert_failure 75
    assert_stderr_empty
    keys_are key digest state backend dir path pids since fence
    assert_equal "$(doc -r .state)" held
    assert_equal "$(doc .pids)" "[$HOLDER_PID]"
    assert_equal "$(doc .pids[0])" "$(text_field "$text" pid)"
    assert_equal "$(doc .fence)" "$(text_field "$text" fence)"
    assert_equal "$(doc '.since | type')" '"number"'
    # since grows: the JSON one was read after the text one
    doc --arg t "$(text_field "$text" since)" -e '.since >= ($t | tonumber)' >/dev/null
    run --separate-stderr bl status -J -E 3 -d "$D" "$K"
    assert_failure 3
}

@test "file: held by flock(1), which records nothing: pids only, the rest left out" {
    hold_lock "$D" "$K"
    run --separate-stderr bl status --json -d "$D" "$K"
    assert_failure 75
    keys_are key digest state backend dir path pids
    assert_equal "$(doc .pids)" "[$HOLDER_PID]"
}

@test "file: --slots: slots and slots_taken, pids once all are taken" {
    hold_lock "$D" "$K"
    run --separate-stderr bl status --json --slots 2 -d "$D" "$K"
    assert_success
    keys_are key digest state backend dir path slots slots_taken
    assert_equal "$(doc '[.state, .slots, .slots_taken]')" '["free",2,1]'
    local first=$HOLDER_PID
    mkdir -p "$D"
    flock -F "$D/$(key_md5 "$K").1.lock" sleep 300 </dev/null >/dev/null 2>&1 &
    HOLDER_PID=$!
    track_pid "$HOLDER_PID"
    for ((i = 0; i < 500; i++)); do
        [[ $(lock_holders "$D/$(key_md5 "$K").1.lock" 2>/dev/null) == *"$HOLDER_PID"* ]] && break
        run bl status --slots 2 -d "$D" "$K"
        [[ $status -eq 75 ]] && break
        sleep 0.01
    done
    run --separate-stderr bl status --slots 2 -d "$D" "$K"
    assert_failure 75
    assert_output "held slots=2/2 pid=$first,$HOLDER_PID"
    run --separate-stderr bl status --json --slots 2 -d "$D" "$K"
    assert_failure 75
    assert_equal "$(doc '[.state, .slots, .slots_taken, .pids]')" "[\"held\",2,2,[$first,$HOLDER_PID]]"
}

@test "file: keys with quotes, backslashes, newlines, controls and UTF-8 come back as they are" {
    local key=$'say "hi" \\ back\nslash\t\x01\x7f caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92'
    bl_hold_lock "$D" "$key"
    run --separate-stderr bl status --json -d "$D" "$key"
    assert_failure 75
    # raw control bytes never reach the document
    [[ $output != *[$'\x01'$'\t'$'\x7f']* ]] || fail "a raw control byte in: $output"
    assert_equal "$(doc -j .key | od -An -tx1)" "$(printf %s "$key" | od -An -tx1)"
    assert_equal "$(doc -r .digest)" "$(key_md5 "$key")"
    run --separate-stderr bl list --json -d "$D"
    assert_success
    assert_equal "$(doc -j '.locks[0].key' | od -An -tx1)" "$(printf %s "$key" | od -An -tx1)"
}

@test "file: invalid UTF-8 in a key: each bad byte is U+FFFD; the digest is the raw key's" {
    local key=$'bad \xff \xc3 \xc0\xaf \xed\xa0\x80 ok \xc3\xa9'
    bl_hold_lock "$D" "$key"
    run --separate-stderr bl status --json -d "$D" "$key"
    assert_failure 75
    assert_equal "$(doc -j .key)" $'bad \uFFFD \uFFFD \uFFFD\uFFFD \uFFFD\uFFFD\uFFFD ok \u00e9'
    assert_regex "$output" '"key": "bad \\ufffd \\ufffd \\ufffd\\ufffd '
    assert_equal "$(doc -r .digest)" "$(key_md5 "$key")"
    run --separate-stderr bl list --json -d "$D"
    assert_success
    assert_equal "$(doc -j '.locks[0].key')" $'bad \uFFFD \uFFFD \uFFFD\uFFFD \uFFFD\uFFFD\uFFFD ok \u00e9'
}

# --- list, file backend -------------------------------------------------------

@test "file: list: empty is {\"locks\": []}; a missing directory too" {
    run --separate-stderr bl list --json -d "$D"
    assert_success
    assert_output '{"locks": []}'
    assert_stderr_empty
    mkdir -p "$D"
    run --separate-stderr bl list --json -d "$D"
    assert_success
    assert_output '{"locks": []}'
}

@test "file: list: the text's locks in its order, key or digest, slot, holder fields" {
    bl_hold_lock "$D" "deploy prod"
    local bl_pid=$HOLDER_PID
    hold_lock "$D" foreign
    local flock_pid=$HOLDER_PID
    mkdir -p "$D"
    "$BL" -d "$D" --slots 3 "slotted" sh -c "touch '$T/s0'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    track_pid $!
    "$BL" -d "$D" --slots 3 "slotted" sh -c "touch '$T/s1'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    track_pid $!
    for ((i = 0; i < 1000; i++)); do
        [[ -e $T/s0 && -e $T/s1 ]] && break
        sleep 0.01
    done
    run --separate-stderr bl list -d "$D"
    assert_success
    local tl=()
    mapfile -t tl <<<"$output"
    assert_equal "${#tl[@]}" 4
    run --separate-stderr bl list --json -d "$D"
    assert_success
    assert_stderr_empty
    assert_equal "$(doc '.locks | length')" 4
    local i line d
    for ((i = 0; i < 4; i++)); do
        line=${tl[i]}
        d=$(doc -r ".locks[$i].digest")
        assert_equal "$(doc -r ".locks[$i].state")" held
        assert_equal "$(doc -r ".locks[$i].backend")" file
        assert_equal "$(doc -r ".locks[$i].dir")" "$D"
        if [[ $line == md5:* ]]; then
            assert_equal "${line%% *}" "md5:$d"
            assert_equal "$(doc ".locks[$i] | has(\"key\")")" false
        else
            assert_equal "$(doc -r ".locks[$i].key")" "$(sed -E 's/ (slot|pid)=.*//' <<<"$line")"
            assert_equal "$d" "$(key_md5 "$(doc -r ".locks[$i].key")")"
            assert_equal "$(doc ".locks[$i].fence")" "$(text_field "$line" fence)"
        fi
        assert_equal "$(doc ".locks[$i].pids | map(tostring) | join(\",\")" | tr -d '"')" "$(text_field "$line" pid)"
        if [[ $line == *" slot="* ]]; then
            assert_equal "$(doc ".locks[$i].slot")" "$(text_field "$line" slot)"
            assert_equal "$(doc -r ".locks[$i].path")" "$D/$d.$(text_field "$line" slot).lock"
        else
            assert_equal "$(doc ".locks[$i] | has(\"slot\")")" false
            assert_equal "$(doc -r ".locks[$i].path")" "$D/$d.lock"
        fi
    done
    # the flock(1) holder: pids, nothing else of a holder
    assert_equal "$(doc -c ".locks[] | select(.digest == \"$(key_md5 foreign)\") | keys_unsorted | sort")" \
        '["backend","digest","dir","path","pids","state"]'
    assert_equal "$(doc ".locks[] | select(.key == \"deploy prod\") | .pids")" "[$bl_pid]"
    assert_equal "$(doc ".locks[] | select(.digest == \"$(key_md5 foreign)\") | .pids")" "[$flock_pid]"
}

# --- errors and where --json does not apply -----------------------------------

@test "errors: the usual message on stderr, nothing on stdout, the text form's status" {
    mkdir -p "$(lock_path "$D" "$K")" # a directory where the lock file goes
    run --separate-stderr bl status -d "$D" "$K"
    assert_failure 69
    local text_err=$stderr
    run --separate-stderr bl status --json -d "$D" "$K"
    assert_failure 69
    assert_output ""
    assert_equal "$stderr" "$text_err"
    run --separate-stderr bl status --json --error-exit 7 -d "$D" "$K"
    assert_failure 7
    assert_output ""
    chmod 000 "$D"
    if ! is_root; then
        run --separate-stderr bl list --json -d "$D"
        assert_failure 69
        assert_output ""
        assert_regex "$stderr" '^bufferlock: '
    fi
    chmod 755 "$D"
    local port
    port=$(free_port)
    run --separate-stderr bl status --json --connect-timeout 0.5 -r "redis://127.0.0.1:$port" "$K"
    assert_failure 69
    assert_output ""
    assert_regex "$stderr" '^bufferlock: '
    run --separate-stderr bl list --json --connect-timeout 0.5 -r "redis://127.0.0.1:$port"
    assert_failure 69
    assert_output ""
    run --separate-stderr bl cache --list --json --store redis --connect-timeout 0.5 \
        -r "redis://127.0.0.1:$port"
    assert_failure 69
    assert_output ""
}

@test "--json elsewhere is a usage error naming it" {
    run --separate-stderr bl --json -d "$D" "$K" true
    assert_usage_error --json run
    run --separate-stderr bl run -J -d "$D" "$K" true
    assert_usage_error --json run
    run --separate-stderr bl cache --json --cache-dir "$T/c" "$K" echo x
    assert_usage_error --json --list
    run --separate-stderr bl cache --json --gc --cache-dir "$T/c"
    assert_usage_error --json --list
    run --separate-stderr bl cache --json --drop --cache-dir "$T/c" "$K"
    assert_usage_error --json --list
    run --separate-stderr bl acquire --json -r "$R_URL" "$K"
    assert_usage_error --json acquire
    run --separate-stderr bl release --json -r "$R_URL" "$K" tok
    assert_usage_error --json release
    run --separate-stderr bl extend --json -r "$R_URL" "$K" tok
    assert_usage_error --json extend
    [[ ! -e $T/c ]] || fail "a refused command touched the cache"
    assert_equal "$(rcli_to R DBSIZE)" 0
}

# --- redis ---------------------------------------------------------------------

@test "redis: free, then held with ttl, pid, host, since and fence as the text's" {
    run --separate-stderr bl status --json -r "$R_URL" "$K"
    assert_success
    keys_are key digest state backend server redis_key
    assert_equal "$(doc -r .backend)" redis
    assert_equal "$(doc -r .redis_key)" "$(redis_key "$K")"
    assert_regex "$(doc -r .server)" "127\.0\.0\.1:$R_PORT"
    bl -r "$R_URL" "$K" true
    local first
    first=$(fence_counter R "$K")
    "$BL" -r "$R_URL" "$K" sh -c "echo x >'$T/f'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    local holder=$!
    track_pid "$holder"
    wait_for_file "$T/f" 10 || fail "the holder did not start"
    run --separate-stderr bl status -r "$R_URL" "$K"
    assert_failure 75
    local text=$output
    run --separate-stderr bl status --json -r "$R_URL" "$K"
    assert_failure 75
    keys_are key digest state backend server redis_key pids host since fence ttl
    assert_equal "$(doc .pids)" "[$holder]"
    assert_equal "$(doc -r .host)" "$(text_field "$text" host)"
    assert_equal "$(doc .fence)" "$(fence_counter R "$K")"
    (($(doc .fence) > first)) || fail "fence $(doc .fence) after $first"
    assert_equal "$(doc .fence)" "$(text_field "$text" fence)"
    doc -e '(.ttl | type) == "number" and .ttl > 0 and .ttl <= 60' >/dev/null || fail "ttl: $output"
    doc -e '(.since | type) == "number"' >/dev/null
}

@test "redis: a key without expiry: no_ttl true and no ttl (text ttl=none)" {
    rcli_to R SET "$(redis_key "$K")" x >/dev/null
    run --separate-stderr bl status -r "$R_URL" "$K"
    assert_failure 75
    assert_output "held ttl=none"
    run --separate-stderr bl status --json -r "$R_URL" "$K"
    assert_failure 75
    keys_are key digest state backend server redis_key no_ttl
    assert_equal "$(doc .no_ttl)" true
}

@test "redis: a holder recorded by another host, its name escaped" {
    local rk host=$'ci "7"\\\n\xff'
    rk=$(redis_key "$K")
    rcli_to R SET "$rk" tok PX 30000 >/dev/null
    rcli_to R HSET "{$rk}:holder" token tok pid 4242 host "$host" \
        since "$(($(date +%s%N) - 5000000000))" fence 9 key "$K" >/dev/null
    run --separate-stderr bl status -r "$R_URL" "$K"
    assert_failure 75
    assert_regex "$output" '^held ttl=[0-9.]+ pid=4242 host=ci "7"'
    run --separate-stderr bl status --json -r "$R_URL" "$K"
    assert_failure 75
    assert_equal "$(doc .pids)" "[4242]"
    assert_equal "$(doc -j .host)" $'ci "7"\\\n\uFFFD'
    assert_equal "$(doc .fence)" 9
    doc -e '.since >= 5 and .since < 600' >/dev/null || fail "since: $output"
    run --separate-stderr bl list --json -r "$R_URL"
    assert_success
    assert_equal "$(doc -j '.locks[0].host')" $'ci "7"\\\n\uFFFD'
    assert_equal "$(doc -r '.locks[0].key')" "$K"
}

@test "redis: --slots: slots, slots_taken and the pids once all are taken" {
    "$BL" -r "$R_URL" --slots 2 "$K" sh -c "echo x >'$T/a'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    local a=$!
    track_pid $a
    wait_for_file "$T/a" 10 || fail "the first holder did not start"
    run --separate-stderr bl status --json --slots 2 -r "$R_URL" "$K"
    assert_success
    assert_equal "$(doc '[.state, .slots, .slots_taken]')" '["free",2,1]'
    keys_are key digest state backend server redis_key slots slots_taken
    "$BL" -r "$R_URL" --slots 2 "$K" sh -c "echo x >'$T/b'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    local b=$!
    track_pid $b
    wait_for_file "$T/b" 10 || fail "the second holder did not start"
    run --separate-stderr bl status --slots 2 -r "$R_URL" "$K"
    assert_failure 75
    local text=$output
    run --separate-stderr bl status --json --slots 2 -r "$R_URL" "$K"
    assert_failure 75
    assert_equal "$(doc '[.state, .slots, .slots_taken]')" '["held",2,2]'
    assert_equal "$(doc '.pids | map(tostring) | join(",")' | tr -d '"')" "$(text_field "$text" pid)"
    # list: both slots, slot 1 with "slot"
    run --separate-stderr bl list --json -r "$R_URL"
    assert_success
    assert_equal "$(doc '[.locks[] | .slot // 0]')" '[0,1]'
    assert_equal "$(doc -r '.locks[1].redis_key')" "{$(redis_key "$K")}:slot:1"
    # the two acquisitions' fences, the later one the counter's
    assert_equal "$(doc '[.locks[].fence] | sort | .[1]')" "$(fence_counter R "$K")"
    doc -e '[.locks[].fence] | sort | .[0] < .[1]' >/dev/null || fail "fences: $output"
}

@test "redis: list: empty, then a foreign key (md5, ttl only) and a holder, as the text" {
    run --separate-stderr bl list --json -r "$R_URL"
    assert_success
    assert_output '{"locks": []}'
    rcli_to R SET "$(redis_key foreign)" x PX 30000 >/dev/null
    "$BL" -r "$R_URL" "deploy prod" sh -c "echo x >'$T/a'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    track_pid $!
    wait_for_file "$T/a" 10 || fail "the holder did not start"
    run --separate-stderr bl list -r "$R_URL"
    local tl=()
    mapfile -t tl <<<"$output"
    run --separate-stderr bl list --json -r "$R_URL"
    assert_success
    assert_equal "$(doc '.locks | length')" "${#tl[@]}"
    local fi=0 hi=1
    [[ ${tl[0]} == md5:* ]] || { fi=1; hi=0; }
    assert_equal "${tl[fi]%% *}" "md5:$(doc -r ".locks[$fi].digest")"
    assert_equal "$(doc -c ".locks[$fi] | keys_unsorted | sort")" \
        '["backend","digest","redis_key","server","state","ttl"]'
    assert_equal "$(doc -r ".locks[$hi].key")" "deploy prod"
    assert_equal "$(doc ".locks[$hi].pids[0]")" "$(text_field "${tl[hi]}" pid)"
    assert_equal "$(doc -r ".locks[$hi].host")" "$(text_field "${tl[hi]}" host)"
    assert_equal "$(doc ".locks[$hi].fence")" "$(text_field "${tl[hi]}" fence)"
    assert_regex "$(doc -r ".locks[$hi].server")" "127\.0\.0\.1:$R_PORT"
}

@test "quorum: list: what a majority holds, with the quorum's server" {
    local quorum=(-r "$R_URL" -r "$Q2_URL" -r "$Q3_URL")
    run --separate-stderr bl list --json "${quorum[@]}"
    assert_success
    assert_output '{"locks": []}'
    rcli_to R SET "$(redis_key "one server")" x PX 30000 >/dev/null
    "$BL" "${quorum[@]}" "deploy prod" sh -c "echo x >'$T/a'; exec sleep 30" </dev/null >/dev/null 2>&1 &
    track_pid $!
    wait_for_file "$T/a" 10 || fail "the holder did not start"
    run --separate-stderr bl list "${quorum[@]}"
    assert_success
    local text=$output
    run --separate-stderr bl list --json "${quorum[@]}"
    assert_success
    assert_equal "$(doc '.locks | length')" 1
    assert_equal "$(doc -r '.locks[0].key')" "deploy prod"
    assert_equal "$(doc '.locks[0].pids[0]')" "$(text_field "$text" pid)"
    assert_equal "$(doc '.locks[0] | has("fence")')" false
    run --separate-stderr bl status --json "${quorum[@]}" "deploy prod"
    assert_failure 75
    assert_equal "$(doc -r .server)" "$(bl list --json "${quorum[@]}" | jq -r '.locks[0].server')"
    assert_regex "$(doc -r .server)" "$R_PORT"
}

# --- cache --list ----------------------------------------------------------------

@test "cache --list: empty is {\"entries\": []}, for both stores" {
    run --separate-stderr bl cache --list --json --cache-dir "$T/c"
    assert_success
    assert_output '{"entries": []}'
    assert_stderr_empty
    run --separate-stderr bl cache --list --json --store redis -r "$R_URL"
    assert_success
    assert_output '{"entries": []}'
}

@test "cache --list: key, age, size, store and the full inputs digest, newest first as the text" {
    local s
    for s in file redis; do
        local opts=(--cache-dir "$T/c-$s" --store "$s")
        [[ $s == redis ]] && opts+=(-r "$R_URL")
        echo one >"$T/dep"
        bl cache "${opts[@]}" -- $'old "key"\n' printf 12345
        sleep 0.05
        bl cache "${opts[@]}" --depends "$T/dep" -- "new key" printf abc
        run --separate-stderr bl cache --list "${opts[@]}"
        assert_success
        local tl=()
        mapfile -t tl <<<"$output"
        assert_equal "${#tl[@]}" 2
        run --separate-stderr bl cache --list --json "${opts[@]}"
        assert_success
        assert_stderr_empty
        assert_equal "$(doc '[.entries[].key]')" '["new key","old \"key\"\n"]'
        assert_equal "$(doc '[.entries[].size]')" '[3,5]'
        assert_equal "$(doc '[.entries[].store]')" "[\"$s\",\"$s\"]"
        assert_equal "$(doc '.entries[1] | has("inputs")')" false
        local short stored
        read -r _ _ stored short _ <<<"${tl[0]}"
        assert_equal "$(doc '.entries[0].stored')" "$stored"
        doc -e '.entries | all((.stored | type) == "number" and .stored > .size)' >/dev/null || fail "stored: $output"
        doc -e --arg s "$short" '.entries[0].inputs | startswith($s) and (length == 64 or length == 32 or length == 40)' \
            >/dev/null || fail "inputs: $output (text: ${tl[0]})"
        doc -e '.entries | all(.age | type == "number" and . >= 0 and . < 600)' >/dev/null || fail "age: $output"
    done
}
