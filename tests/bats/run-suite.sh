#!/usr/bin/env bash
# Runs one bats suite for CTest, keeping its TAP stream for the test runner's
# count of single tests. Usage: run-suite.sh SUITE.bats OUT.tap
set -uo pipefail
suite=$1 out=$2
mkdir -p "$(dirname "$out")"
bats --tap "$suite" | tee "$out"
exit "${PIPESTATUS[0]}"
