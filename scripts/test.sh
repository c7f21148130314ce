#!/usr/bin/env bash
# The test command: installs what is missing, builds the Debug (sanitized) configuration, runs
# every unit and integration test with CTest (its summary, then the exchanges checked against the
# spec's OpenAPI document per endpoint), then a short fuzz run of every fuzz
# target (scripts/fuzz.sh; its "N passed, N failed" line comes last). Fails when either fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
status=0
(cd build && ctest --output-on-failure -j"$(nproc)" "$@") || status=$?
# The OpenAPI conformance totals of the integration tests that ran (docs/conformance.md).
python3 tests/integration/openapi_report.py summary build/openapi-report || true
scripts/fuzz.sh || status=$?
exit "$status"
