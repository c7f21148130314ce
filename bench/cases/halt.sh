# shellcheck shell=bash
# Case halt of bench/run.sh (sourced), issue 42: how soon a DELETE halts the creation it meets
# (bench/halt.py: one gateway, two workers, --halt-count provisions whose one step works 30 s,
# each deleted 1 to 10 s after its 202; sim's blocking step, then an exec program). The summary
# gives each figure's median over the runs.

case_halt() {
  echo "== halt: $halt_count provisions of one 30-s step each, deleted 1 to 10 s after their" \
    "202 (sim blocking, then exec)"
  : >"$workdir/halt.txt"
  local run variant
  for ((run = 1; run <= runs; run++)); do
    for variant in sim exec; do
      local cmd=(python3 "$top/bench/halt.py" "$build_dir" "$variant" "$halt_count")
      record_command "${cmd[@]}"
      "${cmd[@]}" | sed "s/^/$variant /" | tee -a "$workdir/halt.txt" | sed 's/^/  /' ||
        problem "halt: the $variant run failed"
    done
  done
  python3 "$top/bench/lib/medians.py" "$workdir/halt.txt" '^(?!count$|work_s$)' sim exec
}
