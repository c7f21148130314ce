# shellcheck shell=bash
# Case due of bench/run.sh (sourced), issue 27: how late the due steps of waiting operations run
# with several gateways (bench/due.py: 4 gateways, 2 workers, 300 provisions of 300 ms at 20/s;
# its docstring defines each figure). With --due-reference DIR, each run is followed by the same
# run of the binaries in DIR (a Release build of another commit: the reference), side by side.
# The summary gives each figure's median over the runs.

due_once() { # $1 label, $2 build directory
  local cmd=(python3 "$top/bench/due.py" "$2" 4 2 300 20)
  record_command "${cmd[@]}"
  "${cmd[@]}" | sed "s/^/$1 /" | tee -a "$workdir/due.txt" | sed 's/^/  /' ||
    problem "due: the $1 run failed"
}

case_due() {
  echo "== due: 300 provisions of 300 ms at 20/s through 4 gateways, 2 workers; lateness of" \
    "their polls${due_reference:+, side by side with $due_reference}"
  : >"$workdir/due.txt"
  local run
  for ((run = 1; run <= runs; run++)); do
    due_once current "$build_dir"
    if [ -n "$due_reference" ]; then due_once reference "$due_reference"; fi
  done
  python3 "$top/bench/lib/medians.py" "$workdir/due.txt" 'late|per_op' current reference
}
