# shellcheck shell=bash
# The calls whose entries tests/fixtures/entries holds (cache_format_fixtures.bats
# wrote them, and replays them). An entry's address is KEY, the inputs and the
# --output list: the same calls from a directory made by fixture_work find the
# same entries, whatever COMMAND they give.

# fixture_work DIR: the working directory of the calls (dep/a.txt, key).
fixture_work() {
    mkdir -p "$1/dep"
    printf 'fixed input\n' >"$1/dep/a.txt"
    printf 'a fixed signing key of 32 bytes.' >"$1/key"
    chmod 0600 "$1/key"
}

# fixture_calls_file BL ARGS...: the file store's calls (plain, stderr kept
# with --depends, a compressed --output, signed) with BL cache ARGS....
fixture_calls_file() {
    local bl=$1
    shift
    "$bl" cache "$@" fx-plain -- printf 'hello fixture\n'
    "$bl" cache "$@" --keep-stderr --depends dep fx-stderr -- sh -c 'cat dep/a.txt; echo err >&2'
    "$bl" cache "$@" --compress --depends dep --output out fx-output -- \
        sh -c 'mkdir -p out && printf "built\n" >out/f && echo done'
    "$bl" cache "$@" --sign-key key fx-signed -- printf 'signed fixture\n'
}

# fixture_calls_remote BL ARGS...: a remote store's calls (plain, --output).
fixture_calls_remote() {
    local bl=$1
    shift
    "$bl" cache "$@" fx-plain -- printf 'hello fixture\n'
    "$bl" cache "$@" --depends dep --output out fx-output -- \
        sh -c 'mkdir -p out && printf "built\n" >out/f && echo done'
}
