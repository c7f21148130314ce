# shellcheck shell=bash
# Case lifecycle of bench/run.sh (sourced): lifecycles, one gateway and one worker, then two of
# each.

case_lifecycle() {
  echo "== 4 lifecycle: sync provision, bind, unbind, deprovision (sim 0 ms), 1 gateway + 1 worker"
  wrk_case lifecycle cycles/s l
  echo "== 4 lifecycle: the same with 2 gateways + 2 workers (one wrk per gateway, half the load each)"
  start_stack lifecycle2 2
  local run
  for ((run = 1; run <= runs; run++)); do
    wait_queue_at_most 0 60
    measure_wrk_pair lifecycle2 "$run" cycles/s lifecycle.lua "m$run"
  done
  stop_stack
}

