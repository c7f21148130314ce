# shellcheck shell=bash
# Case accept_alone of bench/run.sh (sourced).

# The accept path by itself: no worker, so every job waits in Redis and in the gateway's queue
# (a burst taken in before workers catch up). In case_accept the worker runs each job at once,
# adding a claim and a finish script in the same Redis and its own CPU on the same 2 cores;
# the ceiling is the accept script alone. One fresh stack per run: nothing queued from before,
# and the claim timeout is long enough that the recovery loop stays idle.
case_accept_alone() {
  echo "== 2b accept_alone: async provision accept with no worker running (jobs wait in Redis)"
  local run saved=("${osbq_extra_env[@]}")
  osbq_extra_env=(OSBQ_CLAIM_TIMEOUT_MS=600000 OSBQ_MAX_QUEUED_JOBS=10000000)
  for ((run = 1; run <= runs; run++)); do
    start_stack "accept_alone_$run" --no-worker
    warm_up provision_accept.lua tag=w
    wrk_command provision_accept.lua "$duration" "tag=b$run"
    measure_wrk accept_alone "$run" req/s "${wrk_cmd[@]}"
    stop_stack
  done
  osbq_extra_env=("${saved[@]}")
}

