#!/usr/bin/env bash
# bufferlock's one entry point for building and testing.
#
#   ./build.sh            install missing build dependencies, build build/bufferlock (Release)
#   ./build.sh test       the same, then the whole test suite: unit + bats, then again
#                         under AddressSanitizer + UndefinedBehaviorSanitizer with gcov
#                         counters; then the checks: fuzzing, the chaos harness, the
#                         coverage of the whole sanitizer pass, clang-tidy and cppcheck
#   ./build.sh checks     only the checks (after ./build.sh test built the Release tree)
#   ./build.sh deps       only install the Debian packages that are missing (and the
#                         S3 test server from npm, into .test-deps/)
#
# Environment: JOBS (parallel build jobs, default: nproc), BUFFERLOCK_SKIP_SANITIZE=1
# to skip the sanitizer pass, BUFFERLOCK_SKIP_CHECKS=1 the checks, during development;
# FUZZ_SECONDS (per fuzz target, default 8), BATS_JOBS (bats suites run at once, default 4).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

build_packages=(cmake g++ make pkg-config libcli11-dev libfmt-dev libssl-dev libhiredis-dev libxxhash-dev libarchive-dev libzstd-dev libcurl4-openssl-dev)
# Everything the tests, checks and packaging scripts call that a minimal
# Debian 12 (debootstrap --variant=minbase) lacks: .ci/fresh-root.sh proves it.
test_packages=(bats bats-assert bats-support bats-file libgtest-dev nlohmann-json3-dev jq util-linux tmux procps
  iproute2 python3 time redis-server redis-tools openssl strace git mandoc groff-base zsh fish bash-completion
  dpkg-dev debhelper build-essential clang-14 libclang-rt-14-dev libfuzzer-14-dev clang-tidy-14 cppcheck gcovr
  lintian rpm nginx libnginx-mod-http-dav-ext curl nodejs awscli ca-certificates prometheus)
# awscli is the `aws` command the S3 suites use as the reference client
# (s3_helpers.bash); nodejs (Debian's 18 in a fresh root) runs their S3 server.
# prometheus brings promtool, which checks what `cache --stats --format
# prometheus` prints (stats_helpers.bash); policy-rc.d keeps its daemon stopped.
# Debian's npm, unless the installed node brought its own (NodeSource's
# nodejs does, and conflicts with Debian's npm).
command -v npm >/dev/null 2>&1 || test_packages+=(npm)
# The S3 test server (tests/bats/s3_helpers.bash): from npm, as Debian has no
# S3 server that checks signatures; pinned, installed outside git.
s3rver_package=@20minutes/s3rver
s3rver_version=4.0.4
test_node_dir=.test-deps/s3rver
jobs=${JOBS:-$(nproc)}
# The bats suites mostly wait (for locks, timeouts, servers): four at once keep
# two cores busy. Each suite starts its own servers on free ports.
bats_jobs=${BATS_JOBS:-4}

say() { printf '==> %s\n' "$*"; }

install_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  # No service may start from a package's install script (redis-server would
  # start one on port 6379): the tests start their own servers.
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    made_policy=1
  fi
  local status=0
  "${sudo[@]}" apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null || status=$?
  [ "$made_policy" -eq 0 ] || "${sudo[@]}" rm -f "$policy"
  return "$status"
}

# npm-installs the S3 test server into $test_node_dir unless that version is there.
install_s3rver() {
  local installed=$test_node_dir/node_modules/$s3rver_package/package.json
  if [ -f "$installed" ] && grep -q "\"version\": \"$s3rver_version\"" "$installed"; then
    return 0
  fi
  say "npm install $s3rver_package@$s3rver_version (into $test_node_dir, for node $(node --version 2>/dev/null || echo "(none)"))"
  mkdir -p "$test_node_dir"
  local try
  for try in 1 2 3; do # a registry that drops a connection now and then
    (cd "$test_node_dir" && npm install --save-exact --no-audit --no-fund --loglevel=error \
      "$s3rver_package@$s3rver_version" >/dev/null) && return 0
    say "npm install failed (try $try of 3)"
    sleep $((try * 5))
  done
  return 1
}

configure_and_build() { # DIR [cmake args...]
  local dir=$1
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
}

# Runs the unit tests and bats suites of one build; prints and records counts.
passed=0 failed=0
run_tests() { # DIR LABEL [CTEST ARGS...]
  local dir=$1 label=$2 status=0
  shift 2
  rm -rf "$dir/bats-results"
  say "tests ($label)"
  (cd "$dir" && ctest -L unit -j "$jobs" --output-on-failure) >"$dir/unit.log" 2>&1 || status=1
  grep -E 'tests passed' "$dir/unit.log" || cat "$dir/unit.log"
  local unit_total unit_failed
  unit_total=$(sed -nE 's/.*tests failed out of ([0-9]+).*/\1/p' "$dir/unit.log")
  unit_failed=$(sed -nE 's/.* ([0-9]+) tests failed out of.*/\1/p' "$dir/unit.log")
  (cd "$dir" && ctest -L bats -j "$bats_jobs" --output-on-failure "$@") >"$dir/bats.log" 2>&1 || status=1
  local ok not_ok
  ok=$(cat "$dir"/bats-results/*.tap 2>/dev/null | grep -cE '^ok ' || true)
  not_ok=$(cat "$dir"/bats-results/*.tap 2>/dev/null | grep -cE '^not ok ' || true)
  grep -E '^not ok|^#' "$dir"/bats-results/*.tap 2>/dev/null | grep -A20 'not ok' | head -n 60 || true
  if [ "$status" -ne 0 ] && [ "$not_ok" -eq 0 ] && [ $((${unit_failed:-1})) -eq 0 ]; then
    tail -n 40 "$dir/bats.log" # a suite failed outside any single test
    not_ok=1
  fi
  printf '%s: unit %s passed, %s failed; bats %s passed, %s failed\n' "$label" \
    $((${unit_total:-0} - ${unit_failed:-0})) "${unit_failed:-0}" "$ok" "$not_ok"
  passed=$((passed + ${unit_total:-0} - ${unit_failed:-0} + ok))
  failed=$((failed + ${unit_failed:-0} + not_ok))
  [ -n "$unit_total" ] || failed=$((failed + 1))
}

# Counts the lines "NAME: ok..." and "NAME: FAILED..." of a check's output as
# passed and failed items, and a check that failed without such a line as one failure.
count_check() { # LOG STATUS
  local ok bad
  ok=$(grep -cE '^(fuzz|lint) [a-z_-]+: ok' "$1" || true)
  bad=$(grep -cE '^(fuzz|lint) [a-z_-]+: FAILED' "$1" || true)
  passed=$((passed + ok))
  failed=$((failed + bad))
  [ "$2" -eq 0 ] || [ "$bad" -gt 0 ] || failed=$((failed + 1))
}

# The sanitizer tree also carries gcov counters, so that its pass measures the
# coverage of the whole suite.
build_sanitize() {
  say "building (AddressSanitizer + UndefinedBehaviorSanitizer, gcov counters)"
  # Counters of an earlier build would not match the objects rebuilt now.
  [ ! -d build-sanitize ] || find build-sanitize -name '*.gcda' -delete
  configure_and_build build-sanitize -DBUFFERLOCK_SANITIZE=ON -DBUFFERLOCK_COVERAGE=ON -DBUFFERLOCK_REQUIRE_TESTS=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
}

# The tests also run bufferlock as other users, who could neither reach nor
# write counter files under the build tree (libgcov would then complain on
# their stderr). So the counters live under GCOV_PREFIX, in a directory
# everyone may write, with every file made once (one run of each program
# writes all of its files) and opened to all before the tests start.
counters=
counters_begin() {
  counters=$(mktemp -d "${TMPDIR:-/tmp}/bufferlock-counters.XXXXXX")
  GCOV_PREFIX=$counters build-sanitize/bufferlock --version >/dev/null
  GCOV_PREFIX=$counters build-sanitize/tests/unit_tests --gtest_filter=-* >/dev/null
  chmod -R a+rwX "$counters"
}

# Puts the counters back next to the objects, for gcovr.
counters_end() {
  [ -n "$counters" ] || return 0
  find build-sanitize -name '*.gcda' -delete
  cp -r "$counters/$PWD/build-sanitize/." build-sanitize/
  rm -rf "$counters"
  counters=
}

# The checks after the two test passes (README: Checks).
run_checks() {
  local status log
  say "fuzzing (clang 14, libFuzzer, ASan + UBSan; ${FUZZ_SECONDS:-8}s per target)"
  CC=clang-14 CXX=clang++-14 configure_and_build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBUFFERLOCK_FUZZ=ON -DBUFFERLOCK_TESTS=OFF
  log=build-fuzz/fuzz.log status=0
  tests/fuzz/run.sh build-fuzz build-fuzz/findings | tee "$log" || status=$?
  count_check "$log" "$status"

  build_sanitize
  [ -n "$counters" ] || counters_begin
  say "chaos harness (short)"
  status=0
  BUFFERLOCK_BIN=build-sanitize/bufferlock GCOV_PREFIX=$counters tests/chaos/chaos.sh short |
    tee build-sanitize/chaos.log || status=$?
  local chaos_ok chaos_bad
  chaos_ok=$(sed -nE 's/^chaos: ([0-9]+) checks passed, ([0-9]+) failed$/\1/p' build-sanitize/chaos.log)
  chaos_bad=$(sed -nE 's/^chaos: ([0-9]+) checks passed, ([0-9]+) failed$/\2/p' build-sanitize/chaos.log)
  passed=$((passed + ${chaos_ok:-0}))
  failed=$((failed + ${chaos_bad:-1}))

  say "coverage of src/ (unit tests, bats suites and chaos harness of the sanitizer pass)"
  counters_end
  # A line gcov cannot count (a negative count) is skipped with a warning on
  # stderr rather than ending the run without a report.
  gcovr -r . --object-directory build-sanitize --filter 'src/' --exclude-throw-branches \
    --exclude-unreachable-branches --gcov-ignore-parse-errors --print-summary -o build-sanitize/coverage.txt build-sanitize |
    sed 's/^/coverage of src\/: /'

  say "static analysis: layers, clang-tidy 14, cppcheck"
  cmake -S . -B build -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
  log=build/lint.log status=0
  JOBS=$jobs tests/lint/run.sh build | tee "$log" || status=$?
  count_check "$log" "$status"
}

case "${1:-build}" in
deps)
  install_packages "${build_packages[@]}" "${test_packages[@]}"
  install_s3rver
  ;;
build)
  install_packages "${build_packages[@]}"
  configure_and_build build -DBUFFERLOCK_TESTS=OFF
  say "built build/bufferlock"
  ;;
test)
  install_packages "${build_packages[@]}" "${test_packages[@]}"
  install_s3rver
  say "building (Release)"
  configure_and_build build -DBUFFERLOCK_TESTS=ON -DBUFFERLOCK_REQUIRE_TESTS=ON
  run_tests build release
  if [ "${BUFFERLOCK_SKIP_SANITIZE:-0}" != 1 ]; then
    build_sanitize
    counters_begin
    # The package, docs and completion suites test files and shells, not
    # the binary's memory: once, in the Release pass, is enough.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      GCOV_PREFIX=$counters run_tests build-sanitize sanitizers -E '^bats[.](package|docs|completion)$'
  fi
  [ "${BUFFERLOCK_SKIP_CHECKS:-0}" = 1 ] || run_checks
  echo "total: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  ;;
checks)
  install_packages "${build_packages[@]}" "${test_packages[@]}"
  run_checks
  echo "total: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  ;;
*)
  echo "usage: $0 [build|test|checks|deps]" >&2
  exit 64
  ;;
esac
