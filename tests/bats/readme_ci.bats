#!/usr/bin/env bats
# The README's "CI recipe", run as written: its job step from two clones of
# one project (own HOME each) against a redis-server and an nginx (WebDAV) of
# this file's own, the servers given through the variables the README names;
# then its job summary line, and its crontab line cleaning the store.

bats_require_minimum_version 1.5.0

load http_helpers
load cache_helpers
load stats_helpers

setup_file() { http_redis_setup_file; }
teardown_file() { http_redis_teardown_file; }

setup() {
    http_redis_setup
    mkdir -p "$T/path"
    ln -s "$BL" "$T/path/bufferlock"
}
teardown() { http_redis_teardown; }

# readme_block N: the Nth ```sh block of the README's "### CI recipe" section.
readme_block() {
    awk -v want="$1" '
        /^### / { in_section = ($0 == "### CI recipe") }
        in_section && /^```sh$/ { n++; inside = (n == want); next }
        inside && /^```$/ { inside = 0 }
        inside { print }' "$REPO_ROOT/README.md"
}

# The project: a Makefile that builds build/app from src/, counts its builds
# in $RUNS, and leaves a build.log in the tree (which --exclude '*.log' keeps
# out of the inputs).
make_project() {
    local origin=$T/origin
    mkdir -p "$origin/src"
    echo 'int main(void) { return 0; }' >"$origin/src/main.c"
    printf 'build/app: src/main.c\n\tmkdir -p build\n\tcat src/main.c >build/app\n\techo built >>"$$RUNS"\n\tdate >build.log\n' \
        >"$origin/Makefile"
    git -C "$origin" init -q
    git -C "$origin" add -A
    git -C "$origin" -c user.name=ci -c user.email=ci@example.invalid commit -qm one
}

# job RUNNER: the README's step in RUNNER's clone, HOME and environment.
job() {
    local runner=$1 dir=$T/$1
    mkdir -p "$dir/home"
    [[ -d $dir/repo ]] || git clone -q "$T/origin" "$dir/repo"
    run --separate-stderr env -C "$dir/repo" HOME="$dir/home" PATH="$T/path:$PATH" RUNS="$RUNS" \
        BUFFERLOCK_REDIS="$REDIS_URL" BUFFERLOCK_CACHE_STORE="$STORE" CI_PROJECT_NAME=demo \
        bash -euo pipefail -c "$(readme_block 1)"
}

@test "README CI recipe: the job step as written builds once, a second clone restores it, an edit rebuilds" {
    local step
    step=$(readme_block 1)
    [[ $step == *'bufferlock cache'* ]] || fail "no bufferlock cache step in the README's CI recipe: $step"
    # The servers come from the variables the README names, nothing else.
    grep -q 'BUFFERLOCK_REDIS=' <<<"$step" || fail "the step does not name BUFFERLOCK_REDIS"
    grep -q 'BUFFERLOCK_CACHE_STORE=' <<<"$step" || fail "the step does not name BUFFERLOCK_CACHE_STORE"
    make_project
    job a
    assert_success
    assert_equal "$(runs)" 1
    assert_file_exists "$T/a/repo/build/app"
    # the log says build or hit, as the README shows
    assert_regex "$stderr" "bufferlock: cache 'demo-build': built and stored \(build [0-9.]+s, stored [0-9]+ bytes, in HTTP store at "
    ! grep -q "cache '.*': hit" <<<"$stderr" || fail "a build read as a hit: $stderr"
    # another runner: its own clone and HOME, the same commit: restored, not built
    job b
    assert_success
    assert_equal "$(runs)" 1
    grep -q "cache '.*': hit" <<<"$stderr" || fail "the hit is not in the log: $stderr"
    cmp "$T/a/repo/build/app" "$T/b/repo/build/app" || fail "build/app differs between the runners"
    assert_equal "$(key_objects demo-build | wc -l)" 1
    # the Redis lock was used: its fence counter is there
    [[ -n $(rcli --scan --pattern '*buffer:lock:*') ]] || fail "no Redis lock key was written"
    # an edit is another input state: built again, and stored beside the first
    echo '/* edited */' >>"$T/b/repo/src/main.c"
    job b
    assert_success
    assert_equal "$(runs)" 2
    assert_equal "$(key_objects demo-build | wc -l)" 2
}

@test "README CI recipe: the summary line writes the fleet's counts as a markdown table" {
    local summary_step
    summary_step=$(readme_block 2)
    [[ $summary_step == *'--stats'*'GITHUB_STEP_SUMMARY'* ]] || fail "no --stats line in the README's CI recipe: $summary_step"
    make_project
    job a # builds
    assert_success
    job b # another runner: a hit
    assert_success
    # The summary step on a third machine: the counts are the fleet's, kept in
    # the Redis the jobs share, whatever its own cache directory holds.
    mkdir -p "$T/c/home"
    echo '### earlier step' >"$T/summary.md"
    run --separate-stderr env -C "$T/c/home" HOME="$T/c/home" PATH="$T/path:$PATH" \
        BUFFERLOCK_REDIS="$REDIS_URL" BUFFERLOCK_CACHE_STORE="$STORE" GITHUB_STEP_SUMMARY="$T/summary.md" \
        bash -euo pipefail -c "$summary_step"
    assert_success
    assert_equal "$output" ""
    assert_equal "$(head -1 "$T/summary.md")" '### earlier step'
    sed 1d "$T/summary.md" >"$T/table.md"
    check_stats_markdown "$T/table.md"
    grep -qx '| Builds | 1 |' "$T/table.md" || fail "not one build: $(cat "$T/table.md")"
    grep -qx '| Hits | 1 |' "$T/table.md" || fail "not one hit: $(cat "$T/table.md")"
    grep -q '^| `demo-build` |' "$T/table.md" || fail "the key is not among those that saved most: $(cat "$T/table.md")"
}

@test "README CI recipe: the crontab line cleans the store it names" {
    local cron env_names schedule_line
    cron=$(readme_block 3)
    env_names=$(grep -E '^[A-Z_]+=' <<<"$cron" | cut -d= -f1 | LC_ALL=C sort | tr '\n' ' ')
    schedule_line=$(grep -E '^[0-9*]' <<<"$cron")
    # The servers come from the crontab's variables: the store, and the Redis
    # whose record of uses --max-size reads.
    [[ $env_names == "BUFFERLOCK_CACHE_STORE BUFFERLOCK_REDIS " ]] ||
        fail "the crontab does not set BUFFERLOCK_CACHE_STORE and BUFFERLOCK_REDIS: $cron"
    [[ -n $schedule_line ]] || fail "no crontab line: $cron"
    make_project
    job a
    assert_success
    assert_equal "$(key_objects demo-build | wc -l)" 1
    # As written: the entry is young and small, and stays.
    local command
    command=$(sed -E 's/^([^ ]+ +){5}//' <<<"$schedule_line")
    run --separate-stderr env PATH="$T/path:$PATH" HOME="$T/a/home" BUFFERLOCK_CACHE_STORE="$STORE" \
        BUFFERLOCK_REDIS="$REDIS_URL" bash -euo pipefail -c "$command"
    assert_success
    assert_equal "$stderr" ""
    assert_equal "$(key_objects demo-build | wc -l)" 1
    # The same line with the limits the README gives, but a store over them
    # (--max-size below one entry): the line removes it.
    run --separate-stderr env PATH="$T/path:$PATH" HOME="$T/a/home" BUFFERLOCK_CACHE_STORE="$STORE" \
        BUFFERLOCK_REDIS="$REDIS_URL" bash -euo pipefail -c "${command/--max-size 50G/--max-size 1}"
    assert_success
    assert_equal "$(key_objects demo-build | wc -l)" 0
}
