# shellcheck shell=bash
# Case sync_cycle of bench/run.sh (sourced), kept from issue 3.

case_sync_cycle() {
  echo "== sync_cycle: sync provision (201) + sync deprovision (200) of a new instance, sim 0 ms"
  start_stack sync_cycle
  warm_up sync_cycle.lua tag=w
  wrk_series sync_cycle sync_cycle.lua cycles/s c
  stop_stack
}

