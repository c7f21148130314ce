# shellcheck shell=bash
# Case scale_out of bench/run.sh (sourced), issue 29: capacity as the fleet grows
# (bench/scale_out.py; its docstring defines each figure): synchronous lifecycles (sim 0 ms)
# with 1x1, 2x2, 4x4 and 8x8 gateways x workers, one wrk per gateway; then backend-bound work,
# steps that burn 20 ms of CPU each (sim's cpu_ms), with 1, 2, 4 and 8 workers of one slot
# behind one gateway. With 8 cores or more Redis, the broker and wrk are pinned on separate
# cores (taskset); with fewer the figures are shared-core ones. With --scale-out-reference DIR
# each run is followed by the same run of that build directory's binaries, side by side.

case_scale_out() {
  echo "== scale_out: lifecycles with 1x1, 2x2, 4x4, 8x8 gateways x workers; 20-ms CPU steps" \
    "with 1, 2, 4, 8 workers${scale_out_reference:+; side by side with $scale_out_reference}"
  local cmd=(python3 "$top/bench/scale_out.py" "$build_dir" --runs "$runs" --duration "$duration"
    --connections "$connections" --json "$workdir/scale_out.json")
  # The load generator's cores by default (2 threads on a shared machine); --threads overrides.
  if [ -n "$threads_given" ]; then cmd+=(--threads "$threads"); fi
  if [ -n "$scale_out_reference" ]; then cmd+=(--reference "$scale_out_reference"); fi
  record_command "${cmd[@]}"
  "${cmd[@]}" 2>&1 | tee "$workdir/scale_out.out" | sed 's/^/  /' ||
    problem "scale_out: a run failed, stopped a daemon or had unexpected answers (see above)"
  sed -n '/^scale_out summary/,$p' "$workdir/scale_out.out" >"$workdir/scale_out.txt"
}
