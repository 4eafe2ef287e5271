#!/usr/bin/env bash
# The layers of ARCHITECTURE.md, checked: every #include "..." of src/ names
# a module its own module may include (itself, or one listed below for it).
# One line: "lint layers: ok, N files" or "lint layers: FAILED, N includes"
# with each one that breaks the rule.
#
#   tests/lint/layers.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1

# Who may include whom. A module is a directory of src/ or a top-level file's
# stem. Lower layers never include upper ones; cli sees the settings and
# requests of the layers below it, never their workings' callers.
declare -A may=(
  [main]="app"
  [app]="cli help secrets cache lock run redis messages exit_codes util"
  [help]="cli http redis"
  [secrets]="cli redis messages util"
  [cli]="argv_scan help cache lock redis http s3 messages util"
  [argv_scan]="util"
  [cache]="lock run redis http s3 messages exit_codes util"
  [lock]="run redis messages exit_codes util"
  [run]="messages exit_codes util"
  [redis]="messages util"
  [http]="redis messages util"
  [s3]="http messages util"
  [messages]="util"
  [exit_codes]=""
  [util]=""
)

module() { # PATH under src/ -> its module
  case $1 in
  */*) echo "${1%%/*}" ;;
  *) local b=${1%%.*}; echo "$b" ;;
  esac
}

bad=()
n=0
while IFS= read -r f; do
  n=$((n + 1))
  from=$(module "${f#src/}")
  while IFS= read -r inc; do
    to=$(module "$inc")
    [[ $to == "$from" ]] && continue
    if [[ -z ${may[$from]+set} ]]; then
      bad+=("$f: module '$from' is in no layer of tests/lint/layers.sh")
      break
    fi
    [[ " ${may[$from]} " == *" $to "* ]] || bad+=("$f: $from may not include \"$inc\"")
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done < <(find src -name '*.[ch]pp' | sort)

if ((${#bad[@]})); then
  echo "lint layers: FAILED, ${#bad[@]} includes"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "lint layers: ok, $n files"
