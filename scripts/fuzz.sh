#!/usr/bin/env bash
# The fuzz run: builds the libFuzzer targets of tests/fuzz with clang into build-fuzz/ (git
# ignores it) and runs each one for a bounded time from its seed corpus and its regressions.
# New inputs go to a scratch corpus in build-fuzz/; the repository's corpus changes only with
# --update-corpus. Exits non-zero when a target crashed, leaked, timed out or ran out of
# memory, naming the input that did it. The last line is "N passed, N failed" (N targets).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

usage() {
  cat <<'TEXT'
usage: scripts/fuzz.sh [--seconds N] [--jobs N] [--timeout N] [--rss-mb N] [--update-corpus]
                       [--no-build] [TARGET...]

  --seconds N       how long each target runs (default 45, or $OSBQ_FUZZ_SECONDS)
  --jobs N          targets run at once (default 2)
  --timeout N       seconds one input may take before it counts as a hang (default 10)
  --rss-mb N        memory limit of one target in MiB (default 1536)
  --update-corpus   merge the inputs that found new coverage into tests/fuzz/corpus/<target>
  --no-build        run the binaries already in build-fuzz/fuzz
  TARGET...         route, catalog, job, exec_output, bus (default: all)

A failing input is kept in build-fuzz/artifacts/<target>/; the output names it. Replay it with
  build-fuzz/fuzz/fuzz_<target> <file>
and make it a regression test: copy it into tests/fuzz/regressions/<target>/ (docs/security.md).
TEXT
}

die_usage() { echo "fuzz: $*" >&2; echo "fuzz: see scripts/fuzz.sh --help" >&2; exit 2; }
# shellcheck source=scripts/options.sh
. scripts/options.sh

all_targets=(route catalog job exec_output bus)
seconds=${OSBQ_FUZZ_SECONDS:-45}
jobs=2
timeout=10
rss_mb=1536
update=false
build=true
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) [ $# -ge 2 ] || die_usage "--seconds needs a value"; seconds=$2; shift 2 ;;
    --jobs) [ $# -ge 2 ] || die_usage "--jobs needs a value"; jobs=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || die_usage "--timeout needs a value"; timeout=$2; shift 2 ;;
    --rss-mb) [ $# -ge 2 ] || die_usage "--rss-mb needs a value"; rss_mb=$2; shift 2 ;;
    --update-corpus) update=true; shift ;;
    --no-build) build=false; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) die_usage "unknown option $1" ;;
    *)
      case " ${all_targets[*]} " in
        *" $1 "*) targets+=("$1") ;;
        *) die_usage "unknown target $1 (targets: ${all_targets[*]})" ;;
      esac
      shift
      ;;
  esac
done
check_count "$seconds" --seconds 99999
check_count "$jobs" --jobs 99999
check_count "$timeout" --timeout 99999
check_count "$rss_mb" --rss-mb 99999
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

out=$top/build-fuzz
if $build; then
  command -v clang >/dev/null || { echo "fuzz: clang is missing (scripts/install-deps.sh)" >&2; echo "0 passed, ${#targets[@]} failed"; exit 1; }
  mkdir -p "$out"
  if ! { CC=clang cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=Debug -DOSBQ_FUZZ=ON &&
         cmake --build "$out" -j"$(nproc)" --target osbq_fuzz_targets; } >"$out/build.log" 2>&1; then
    tail -n 40 "$out/build.log" >&2
    echo "fuzz: the fuzz build failed (build-fuzz/build.log)" >&2
    echo "0 passed, ${#targets[@]} failed"
    exit 1
  fi
fi

# run_target NAME: one bounded run; its log in build-fuzz/logs, its status in build-fuzz/status.
run_target() {
  local name=$1
  local work=$out/work/$name
  rm -rf "$work"
  mkdir -p "$work/corpus" "$out/artifacts/$name" "$out/logs"
  # libFuzzer reads only one dictionary: the target's own, plus the JSON tokens it parses.
  local dict=$top/tests/fuzz/dict/$name.dict
  case "$name" in
    route|catalog) cat "$dict" "$top/tests/fuzz/dict/json.dict" >"$work/dict" ;;
    *) cp "$dict" "$work/dict" ;;
  esac
  # New inputs are written only to the first directory: the repository's stay as they are.
  local dirs=("$work/corpus" "$top/tests/fuzz/corpus/$name")
  [ -d "$top/tests/fuzz/regressions/$name" ] && dirs+=("$top/tests/fuzz/regressions/$name")
  local rc=0
  "$out/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss_mb" \
    -dict="$work/dict" -artifact_prefix="$out/artifacts/$name/" -print_final_stats=1 \
    "${dirs[@]}" >"$out/logs/$name.log" 2>&1 || rc=$?
  echo "$rc" >"$out/status/$name"
}

rm -rf "$out/status"
mkdir -p "$out/status"
echo "fuzz: ${targets[*]} for ${seconds} s each, $jobs at once (logs in build-fuzz/logs)"
running=0
for name in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$name" &
  running=$((running + 1))
done
wait || true

passed=0
failed=0
for name in "${targets[@]}"; do
  rc=$(cat "$out/status/$name" 2>/dev/null || echo missing)
  log=$out/logs/$name.log
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" 2>/dev/null | grep -o '[0-9]*$' || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" 2>/dev/null | tail -1 || true)
  if [ "$rc" = 0 ]; then
    passed=$((passed + 1))
    echo "fuzz: $name passed (${runs:-?} inputs, ${cov:-cov: ?})"
    if $update; then
      "$out/fuzz/fuzz_$name" -merge=1 "$top/tests/fuzz/corpus/$name" "$out/work/$name/corpus" \
        >>"$log" 2>&1 && echo "fuzz: $name: corpus merged into tests/fuzz/corpus/$name"
    fi
  else
    failed=$((failed + 1))
    echo "fuzz: $name FAILED (exit status $rc); the end of $log:"
    tail -n 40 "$log" | sed 's/^/    /'
    reproducer=$(grep -o 'Test unit written to .*' "$log" | tail -1 | sed 's/^Test unit written to //' || true)
    if [ -n "$reproducer" ]; then
      echo "fuzz: $name: reproducer $reproducer"
      echo "fuzz: replay it with: $out/fuzz/fuzz_$name $reproducer"
    fi
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
