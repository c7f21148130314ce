# shellcheck shell=bash
# Case noisy_neighbor of bench/run.sh (sourced), issue 28: tenant B's instant provisions, alone
# and while tenant A's burst of provisions that each keep the worker busy 6 s runs, A's
# throughput beside B and alone, and the shares of two saturating platforms of weights 3 and 1
# (bench/noisy_neighbor.py; its docstring defines each figure). --noisy-count sets A's burst
# (default 10,000, the issue's); --noisy-window S measures S seconds of it (default 120; 0: until
# A's last operation ended, over an hour at 10,000); --noisy-variant picks A's steps (sim: a sim
# step holding its runner; exec: an old-style exec program of 6 s; both: one run of each);
# --noisy-gateways and --noisy-workers size the stack (each tenant's requests go to the gateways
# in turn); --noisy-reference DIR runs the same against another build after each run, side by
# side, without the shares (builds before issue 28 have no weights).

noisy_once() { # $1 label, $2 build directory, $3 variant, $4... phases
  local cmd=(python3 "$top/bench/noisy_neighbor.py" "$2" "$noisy_count" "${@:4}" --variant "$3"
    --window "$noisy_window" --gateways "$noisy_gateways" --workers "$noisy_workers")
  record_command "${cmd[@]}"
  "${cmd[@]}" | sed "s/^/$1 /" | tee -a "$workdir/noisy_neighbor.txt" | sed 's/^/  /' ||
    problem "noisy_neighbor: the $1 $3 run failed"
}

case_noisy_neighbor() {
  local variants=$noisy_variant
  [ "$variants" != both ] || variants=sim,exec
  echo "== noisy_neighbor: B's 0-ms provisions every 200 ms, alone and beside A's $noisy_count" \
    "provisions of 6 s ($variants; $noisy_gateways gateway(s), $noisy_workers worker(s) of 16" \
    "slots; window ${noisy_window} s)${noisy_reference:+, side by side with $noisy_reference}"
  : >"$workdir/noisy_neighbor.txt"
  local run variant
  for ((run = 1; run <= runs; run++)); do
    for variant in ${variants//,/ }; do
      noisy_once current "$build_dir" "$variant" a_alone shares
      if [ -n "$noisy_reference" ]; then
        noisy_once reference "$noisy_reference" "$variant" a_alone
      fi
    done
  done
}
