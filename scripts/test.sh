#!/usr/bin/env bash
# The test command: installs what is missing, builds the Debug (sanitized) configuration and runs
# every unit and integration test with CTest, ending with CTest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
