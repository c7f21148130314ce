# shellcheck shell=bash
# Case round_trips of bench/run.sh (sourced): tests/integration/test_round_trips.py on the
# Release build.

case_round_trips() {
  echo "== 7 round_trips: Redis commands per request per endpoint (MONITOR, per process)"
  local out="$workdir/round_trips.out"
  record_command env "OSBQ_BUILD_DIR=$build_dir" python3 -m unittest -v test_round_trips
  (cd "$top/tests/integration" && OSBQ_BUILD_DIR="$build_dir" PYTHONDONTWRITEBYTECODE=1 \
    timeout 300 python3 -m unittest -v test_round_trips) >"$out" 2>&1 ||
    problem "round_trips: tests/integration/test_round_trips.py failed (see its output above)"
  grep -o 'ROUND_TRIPS .*' "$out" >"$workdir/round_trips.txt" || true
  sed 's/^ROUND_TRIPS /  /' "$workdir/round_trips.txt"
  grep '^FAIL\|Error' "$out" || true
}
