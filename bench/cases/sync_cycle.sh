# shellcheck shell=bash
# Case sync_cycle of bench/run.sh (sourced), kept from issue 3.

case_sync_cycle() {
  echo "== sync_cycle: sync provision (201) + sync deprovision (200) of a new instance, sim 0 ms"
  wrk_case sync_cycle cycles/s c
}

