#!/usr/bin/env bash
# The scale_out case of bench/run.sh (issue 29, bench/scale_out.py) on a lent machine of many
# cores that has none of osbq's programs or libraries (the device's run tool: 16 cores, a copy of
# the working tree, python3, nothing to install from): everything runs from the directory
# bench/device/pack.sh made (the Release gateway and worker, redis-server, wrk and taskset with
# their libraries and the dynamic loader), Redis, the broker and wrk pinned on separate cores
# with taskset. Within SCALE_OUT_BUDGET_S (default 480 s: 8 minutes) in all: the runs get that
# less 40 s (--deadline-s: what would end later is skipped and said so), and the whole is stopped
# at that less 10 s. Writes to OUT_DIR (default $OUT, where the device's tool fetches from):
#
#   machine.txt       cores, affinity, kernel, python, the packed tools' versions, MANIFEST
#   scale_out.txt     every run's line and the summary (also on stdout)
#   scale_out.json    every figure (bench/scale_out.py --json), rewritten after each run
#
# usage: bench/device/scale_out.sh [PACK_DIR [OUT_DIR]]   (PACK_DIR default
#        build-bench/device-pack; run from anywhere in the working tree)
# settings: SCALE_OUT_DURATION (s per run, default 10), SCALE_OUT_RUNS (default 1),
#           SCALE_OUT_BUDGET_S (default 480), SCALE_OUT_ARGS (more bench/scale_out.py options,
#           e.g. "--fleet 1x1,8x8 --cpu-workers 1,8" or "--pin on")
# On the device (run's carry: build-bench/device-pack):
#   bench/device/scale_out.sh build-bench/device-pack "$OUT"
set -euo pipefail
cd "$(dirname "$0")/../.."

pack=${1:-build-bench/device-pack}
out=${2:-${OUT:-}}
[ -n "$out" ] || { echo "scale_out.sh: no OUT_DIR and no \$OUT" >&2; exit 2; }
[ -x "$pack/current/bin/osbq-gateway" ] ||
  { echo "scale_out.sh: $pack holds no pack (bench/device/pack.sh makes it)" >&2; exit 2; }
pack=$(cd "$pack" && pwd)
mkdir -p "$out"
duration=${SCALE_OUT_DURATION:-10}
runs=${SCALE_OUT_RUNS:-1}
budget=${SCALE_OUT_BUDGET_S:-480}
[ "$budget" -ge 60 ] || { echo "scale_out.sh: SCALE_OUT_BUDGET_S must be at least 60" >&2; exit 2; }
t0=$SECONDS

# The packed programs first on PATH: osbq_stack starts redis-server from it, scale_out.py wrk and
# taskset. No locale: a packed program must not look for the device's locale files.
export PATH="$pack/bin:$PATH" LC_ALL=C PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "cores: nproc $(nproc), this shell's affinity $(python3 -c 'import os; print(sorted(os.sched_getaffinity(0)))')"
  echo "kernel: $(uname -srm)"
  echo "python: $(python3 --version 2>&1) at $(command -v python3)"
  grep -m1 'model name' /proc/cpuinfo || true
  grep -m1 MemTotal /proc/meminfo || true
  echo "redis-server: $(redis-server --version)"
  echo "wrk: $(wrk -v 2>&1 | head -1)"
  echo "taskset: $(taskset -V 2>&1)"
  # Whether pinning holds here (a sandboxed kernel may take the mask and ignore it).
  echo "taskset -c 0 sees: $(taskset -c 0 sh -c 'grep Cpus_allowed_list /proc/self/status')"
  echo "--- MANIFEST"
  cat "$pack/MANIFEST"
} >"$out/machine.txt" 2>&1
sed -n '1,9p' "$out/machine.txt"

reference=()
if [ -x "$pack/reference/bin/osbq-gateway" ]; then reference=(--reference "$pack/reference"); fi
left=$((budget - (SECONDS - t0)))
# The script's status, not tee's: no pipefail here, PIPESTATUS instead.
set +o pipefail
# shellcheck disable=SC2086 # SCALE_OUT_ARGS: options, split on purpose
timeout -k 5 $((left - 10)) python3 bench/scale_out.py "$pack/current" "${reference[@]}" \
  --runs "$runs" --duration "$duration" --deadline-s $((left - 40)) \
  --json "$out/scale_out.json" --check-maps "$pack" ${SCALE_OUT_ARGS:-} 2>&1 |
  tee "$out/scale_out.txt"
status=${PIPESTATUS[0]}
echo "scale_out.sh: done in $((SECONDS - t0)) s, status $status" | tee -a "$out/scale_out.txt"
exit "$status"
