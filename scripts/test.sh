#!/usr/bin/env bash
# The test command: installs what is missing, builds the Debug (sanitized) configuration, runs every
# unit, component and integration test with CTest (its summary, then the exchanges checked against
# the spec's OpenAPI document per endpoint; the tests of the store's features run twice, on
# redis-server and on valkey-server, label valkey: docs/reliability.md#the-valkey-pass), a short
# fuzz run of every fuzz target (scripts/fuzz.sh; "N passed, N failed"), then the compose check
# (scripts/compose-check.sh: builds the images and runs the stack; "compose-check: PASSED", or
# SKIPPED with the reason when no Docker engine can run here), then the swarm check
# (scripts/swarm-check.sh: the same images as a swarm stack on a single-node swarm; "swarm-check:
# PASSED", or SKIPPED with the reason). Fails when any of them fails; a skip does not fail it.
# OSBQ_COMPOSE_CHECK=0 and OSBQ_SWARM_CHECK=0 leave those checks out (said so at the end). The last
# line counts the four stages (ctest, fuzz, compose-check, swarm-check).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
passed=0 failed=0 skipped=0
count() { if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi; }
ctest_status=0
(cd build && ctest --output-on-failure -j"$(nproc)" "$@") || ctest_status=$?
count "$ctest_status"
# The OpenAPI conformance totals of the integration tests that ran (docs/conformance.md).
python3 tests/integration/openapi_report.py summary build/openapi-report || true
fuzz_status=0
# 30 s a target: five targets two at once are three rounds, and the whole command stays under
# 15 minutes on 2 cores; longer runs are scripts/fuzz.sh's own (docs/security.md).
scripts/fuzz.sh --seconds "${OSBQ_FUZZ_SECONDS:-30}" || fuzz_status=$?
count "$fuzz_status"
# A stage that may skip: NAME, its switch variable, its command. Exit status 77 is SKIPPED (the
# stage printed why), not a failure.
docker_stage() { # NAME SWITCH COMMAND
  local status=0
  if [ "${!2:-1}" = 0 ]; then
    echo "$1: SKIPPED: $2=0"
    skipped=$((skipped + 1))
    return 0
  fi
  "$3" || status=$?
  case "$status" in
    0) count 0 ;;
    77) skipped=$((skipped + 1)); status=0 ;;
    *) count "$status" ;;
  esac
  return "$status"
}
compose_status=0
docker_stage compose-check OSBQ_COMPOSE_CHECK scripts/compose-check.sh || compose_status=$?
# After the compose check, whose images it runs (osbq-*:compose-check).
swarm_status=0
docker_stage swarm-check OSBQ_SWARM_CHECK scripts/swarm-check.sh || swarm_status=$?
echo "stages: $passed passed, $failed failed, $skipped skipped"
[ "$ctest_status" = 0 ] && [ "$fuzz_status" = 0 ] && [ "$compose_status" = 0 ] &&
  [ "$swarm_status" = 0 ]
