# shellcheck shell=bash
# Case durable of bench/run.sh (sourced): the cost of OSBQ_REDIS_MIN_ACKS (docs/reliability.md).

# The accept case and the lifecycle case (one gateway, one worker) on three stacks, one after
# the other within each run so that the machine's load is shared alike: no replica (today's
# deployment), a replica with OSBQ_REDIS_MIN_ACKS=0 (replication, no waiting), and a replica with
# OSBQ_REDIS_MIN_ACKS=1 (every answer waits for a WAIT behind its pipeline batch; each outcome
# for its own).
case_durable() {
  echo "== 6 durable: accept and lifecycles with no replica, a replica, a replica + OSBQ_REDIS_MIN_ACKS=1"
  local run config saved=("${osbq_extra_env[@]}")
  for ((run = 1; run <= runs; run++)); do
    for config in plain r0 r1; do
      case $config in
        plain) osbq_extra_env=("${saved[@]}") ;;
        r0) osbq_extra_env=("${saved[@]}" replicas=1 OSBQ_REDIS_MIN_ACKS=0) ;;
        # A long WAIT timeout: on a loaded machine a replica's acknowledgement can take most of a
        # second, and a 503 would not be a measure of the cost.
        r1) osbq_extra_env=("${saved[@]}" replicas=1 OSBQ_REDIS_MIN_ACKS=1 OSBQ_REDIS_ACK_TIMEOUT_MS=5000) ;;
      esac
      start_stack "durable_${config}_$run"
      warm_up provision_accept.lua tag=w
      wait_queue_at_most 0 60
      wrk_command provision_accept.lua "$duration" "tag=d$config$run"
      measure_wrk "durable_accept_$config" "$run" req/s "${wrk_cmd[@]}"
      wait_queue_at_most 0 60
      wrk_command lifecycle.lua "$duration" "tag=e$config$run"
      measure_wrk "durable_lifecycle_$config" "$run" cycles/s "${wrk_cmd[@]}"
      stop_stack
    done
  done
  osbq_extra_env=("${saved[@]}")
}
