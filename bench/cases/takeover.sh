# shellcheck shell=bash
# Case takeover of bench/run.sh (sourced), issue 42: how soon a SIGKILLed worker's steps run
# elsewhere, and what the kills cost a soak of lifecycles (bench/takeover.py: 2 gateways, 3
# workers, 16 clients of async lifecycles and 3 of sync bind + unbind on a plan whose every step
# works 1.5 s; a before window of --takeover-duration / 2 s, then one worker killed every 5 s
# for --takeover-duration s; sim's blocking step, then exec). With --takeover-reference DIR,
# each run is followed by the same runs of the binaries in DIR (a Release build of another
# commit: the reference), side by side. The summary gives each figure's median over the runs.

takeover_once() { # $1 label, $2 build directory, $3 variant
  local cmd=(python3 "$top/bench/takeover.py" "$2" "$3" "$takeover_duration")
  record_command "${cmd[@]}"
  "${cmd[@]}" | sed "s/^/$1-$3 /" | tee -a "$workdir/takeover.txt" | sed 's/^/  /' ||
    problem "takeover: the $1 $3 run failed"
}

case_takeover() {
  echo "== takeover: a worker of 3 SIGKILLed every 5 s for $takeover_duration s under 16 clients'" \
    "lifecycles of 1.5-s steps (sim blocking, then exec)${takeover_reference:+, side by side with" \
    "$takeover_reference}"
  : >"$workdir/takeover.txt"
  local run variant
  for ((run = 1; run <= runs; run++)); do
    for variant in sim exec; do
      takeover_once current "$build_dir" "$variant"
      if [ -n "$takeover_reference" ]; then
        takeover_once reference "$takeover_reference" "$variant"
      fi
    done
  done
  python3 "$top/bench/lib/medians.py" "$workdir/takeover.txt" \
    '^(?!clients$|sync_clients$|workers$|concurrency$|step_s$|before_s$|kills_s$)' \
    current-sim reference-sim current-exec reference-exec
  # The ratios of the medians, this build's to the reference's, where both ran.
  python3 "$top/bench/lib/medians.py" "$workdir/takeover.txt" \
    '^(takeover_ms_|rate_|lifecycle_p99_|sync_504$)' current-sim/reference-sim \
    current-exec/reference-exec
}
