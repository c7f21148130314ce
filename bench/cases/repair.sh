# shellcheck shell=bash
# Case repair of bench/run.sh (sourced), issue 43: osbq-ctl at a large broker's size
# (bench/repair.py: --repair-count instances cloned from two real ones, a fifth bound; instance
# by id, stats, --outdated and --state listings, every instance listed, export, import into
# another namespace, 1,000 purges; each command's time and peak memory; Redis bytes per
# instance). The summary gives each figure's median over the runs.

case_repair() {
  echo "== repair: osbq-ctl over $repair_count instances (a fifth bound)"
  : >"$workdir/repair.txt"
  local run
  for ((run = 1; run <= runs; run++)); do
    local cmd=(python3 "$top/bench/repair.py" "$build_dir" "$repair_count")
    record_command "${cmd[@]}"
    "${cmd[@]}" | sed 's/^/repair /' | tee -a "$workdir/repair.txt" | sed 's/^/  /' ||
      problem "repair: the run failed"
  done
  python3 "$top/bench/lib/medians.py" "$workdir/repair.txt" '^(?!count$|bound$)' repair
}
