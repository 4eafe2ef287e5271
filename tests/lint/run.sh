#!/usr/bin/env bash
# Static analysis of src/: the layers (layers.sh: who may include whom),
# clang-tidy (the checks of .clang-tidy) and cppcheck (suppressions in
# cppcheck.supp, each with its reason). One line per tool: "lint TOOL: ok,
# N files" or "lint TOOL: FAILED, N findings".
#
#   tests/lint/run.sh BUILD_DIR      (configured with CMAKE_EXPORT_COMPILE_COMMANDS=ON)
#
# Environment: JOBS (default nproc).
set -uo pipefail
build=${1:?usage: run.sh BUILD_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
jobs=${JOBS:-$(nproc)}
cd "$root" || exit 1
mapfile -t files < <(find src -name '*.cpp' | sort)
failed=0
"$here/layers.sh" || failed=1

# report TOOL LOG PATTERN: the one line of TOOL, from the findings in LOG.
report() {
  local findings
  findings=$(grep -cE "$3" "$2")
  if [[ $findings -eq 0 ]]; then
    echo "lint $1: ok, ${#files[@]} files"
  else
    failed=1
    echo "lint $1: FAILED, $findings findings"
    grep -E "$3" "$2" | head -n 20
  fi
}

# clang-tidy: one process per file, JOBS at a time.
log=$build/clang-tidy.log
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -n 1 clang-tidy-14 -p "$build" --quiet >"$log" 2>&1
report clang-tidy "$log" '^[^ ]+:[0-9]+:[0-9]+: (warning|error):'

log=$build/cppcheck.log
cppcheck --quiet --enable=warning,performance,portability --std=c++20 --language=c++ \
  --inline-suppr --suppressions-list="$here/cppcheck.supp" --suppress=missingIncludeSystem \
  -I src -j "$jobs" "${files[@]}" >"$log" 2>&1
report cppcheck "$log" '^[^ ]+:[0-9]+:[0-9]+: '
exit "$failed"
