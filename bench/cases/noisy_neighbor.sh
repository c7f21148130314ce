# shellcheck shell=bash
# Case noisy_neighbor of bench/run.sh (sourced), issue 28: tenant B's instant provisions, alone
# and while tenant A's burst of 6-s blocking steps runs, and A's throughput beside B and alone
# (bench/noisy_neighbor.py; its docstring defines each figure). --noisy-count sets A's burst
# (default 10,000, the issue's: over an hour of work on 16 slots); --noisy-reference DIR runs the
# same against another build after each run, side by side.

noisy_once() { # $1 label, $2 build directory
  local cmd=(python3 "$top/bench/noisy_neighbor.py" "$2" "$noisy_count" a_alone)
  record_command "${cmd[@]}"
  "${cmd[@]}" | sed "s/^/$1 /" | tee -a "$workdir/noisy_neighbor.txt" | sed 's/^/  /' ||
    problem "noisy_neighbor: the $1 run failed"
}

case_noisy_neighbor() {
  echo "== noisy_neighbor: B's 0-ms provisions every 200 ms, alone and beside A's $noisy_count" \
    "provisions of 6-s blocking steps (one gateway, one worker of 16 slots)${noisy_reference:+," \
    "side by side with $noisy_reference}"
  : >"$workdir/noisy_neighbor.txt"
  local run
  for ((run = 1; run <= runs; run++)); do
    noisy_once current "$build_dir"
    if [ -n "$noisy_reference" ]; then noisy_once reference "$noisy_reference"; fi
  done
}
