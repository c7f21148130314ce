#!/usr/bin/env bash
# The test command: installs what is missing, builds the Debug (sanitized) configuration, runs
# every unit and integration test with CTest (its summary), then a short fuzz run of every fuzz
# target (scripts/fuzz.sh; its "N passed, N failed" line comes last). Fails when either fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
status=0
(cd build && ctest --output-on-failure -j"$(nproc)" "$@") || status=$?
scripts/fuzz.sh || status=$?
exit "$status"
