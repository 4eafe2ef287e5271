#!/usr/bin/env bash
# Runs every libFuzzer target of a BUFFERLOCK_FUZZ build for a fixed time,
# starting from the seed corpus (copied: the repository's corpus is not
# changed), after replaying the kept regression inputs. One line per target:
#   fuzz NAME: ok, N execs in Ss, cov C of E edges, ft F, corpus K
# and a crash, leak or hang fails the target, its input kept in OUT.
#
#   tests/fuzz/run.sh BUILD_DIR OUT_DIR [TARGET...]
#
# Environment: FUZZ_SECONDS per target (default 8).
# A finding: minimise it with
#   BUILD_DIR/tests/fuzz/fuzz_NAME -minimize_crash=1 -runs=20000 INPUT
# and keep the smallest input as tests/fuzz/regressions/NAME/<what-it-was>.
set -uo pipefail

build=${1:?usage: run.sh BUILD_DIR OUT_DIR [TARGET...]}
out=${2:?usage: run.sh BUILD_DIR OUT_DIR [TARGET...]}
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
seconds=${FUZZ_SECONDS:-8}
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(duration size redis_url cache_entry messages cli resp json s3)
mkdir -p "$out"

failed=0
for name in "${targets[@]}"; do
  bin=$build/tests/fuzz/fuzz_$name
  log=$out/$name.log
  work=$out/corpus-$name
  rm -rf "$work" && mkdir -p "$work"
  cp -R "$here/corpus/$name/." "$work/"
  status=0
  # Regression inputs first: each must run clean on its own.
  if compgen -G "$here/regressions/$name/*" >/dev/null; then
    "$bin" "$here"/regressions/"$name"/* >"$log.regressions" 2>&1 || status=$?
  fi
  if [[ $status -eq 0 ]]; then
    "$bin" "$work" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$out/$name-" >"$log" 2>&1 || status=$?
  fi
  if [[ $status -ne 0 ]]; then
    failed=$((failed + 1))
    echo "fuzz $name: FAILED (status $status); log: $log"
    grep -hE 'ERROR|fuzz check failed|SUMMARY|Test unit written' "$log.regressions" "$log" 2>/dev/null | head -n 8
    continue
  fi
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log")
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
  # every instrumented edge of the binary (the library included)
  edges=$(sed -nE 's/^INFO: Loaded 1 modules +\(([0-9]+) inline 8-bit counters\).*/\1/p' "$log" | head -n 1)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$done_line")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$done_line")
  corp=$(sed -nE 's/.* corp: ([0-9]+).*/\1/p' <<<"$done_line")
  echo "fuzz $name: ok, ${execs:-?} execs in ${seconds}s, cov ${cov:-?} of ${edges:-?} edges, ft ${ft:-?}, corpus ${corp:-?}"
done
exit $((failed > 0))
