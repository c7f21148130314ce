# shellcheck shell=bash
# Case accept of bench/run.sh (sourced), and with it case redis: the Redis-script ceiling.

# The EVALSHA a gateway sends for an accept, as redis-benchmark arguments: one accept is sent
# while MONITOR records it, and bench/monitor_call.py turns the recorded line into arguments
# with __rand_int__ in place of the instance and operation ids (a new one at each place of each
# call) and the job replaced by as many bytes (its msgpack holds NULs, which no argv can).
capture_accept_call() {
  local monitor_out="$stack_dir/monitor.out" code mon_pid
  start_process "$monitor_out" redis-cli -p "$redis_port" MONITOR
  mon_pid=$started_pid
  sleep 0.2
  code=$(broker_curl -X PUT -H 'Content-Type: application/json' -d "$(provision_body "$plan_instant")" \
    "$base_url/v2/service_instances/sample-0?accepts_incomplete=true") || true
  [ "$code" = 202 ] || stack_die "sample provision: HTTP $code (expected 202)"
  wait_until 5 grep -q '"sample-0"' "$monitor_out" || die "MONITOR did not show the accept"
  stop_pid "$mon_pid"
  mapfile -d '' accept_call < <(python3 "$top/bench/monitor_call.py" sample-0 <"$monitor_out") ||
    die "cannot read the accept's EVALSHA from MONITOR"
  [ "${#accept_call[@]}" -gt 3 ] || die "cannot read the accept's EVALSHA from MONITOR"
}

# The ceiling's own redis-server (the accept stack's keeps serving its gateway), its
# scripts loaded, and -n sized by a calibration run so that a run lasts about --duration.
start_ceiling() {
  local saved=$redis_port
  start_redis_only "$stack_dir/ceiling"
  redis_port=$launched_redis_port
  ceiling_port=$redis_port
  # -x: the file's bytes as they are (a command substitution would drop the last newline and
  # change the digest).
  rcli -x SCRIPT LOAD <"$top/store/lua/begin_instance.lua" >/dev/null
  [ "$(rcli SCRIPT EXISTS "${accept_call[1]}")" = 1 ] ||
    die "the gateway's script digest is not begin_instance.lua's: the ceiling would run another script"
  local answer
  answer=$(rcli "${accept_call[@]//__rand_int__/000000000001}" | head -1)
  [ "$answer" = accepted ] || die "begin_instance.lua answered '$answer' to the captured call"
  rcli FLUSHALL >/dev/null
  local out="$workdir/redis-calibrate.out" rps
  run_load "$out" redis-benchmark -h 127.0.0.1 -p "$ceiling_port" -c "$connections" -n 20000 \
    -r 1000000000 --csv "${accept_call[@]}" || { cat "$out" >&2; die "redis-benchmark failed"; }
  rps=$(tail -1 "$out" | csv_field 6)
  ceiling_n=$(awk -v r="$rps" -v d="$duration" 'BEGIN { n = int(r * d); if (n < 20000) n = 20000; if (n > 5000000) n = 5000000; print n }')
  redis_port=$saved
}

ceiling_run() { # $1 run
  local saved=$redis_port accepted
  redis_port=$ceiling_port
  rcli FLUSHALL >/dev/null
  local cmd=(redis-benchmark -h 127.0.0.1 -p "$ceiling_port" -c "$connections" -n "$ceiling_n"
    -r 1000000000 --csv "${accept_call[@]}")
  [ "$1" = 1 ] && echo "$(shell_words "${cmd[@]:0:11}") <the EVALSHA a gateway sent, captured with MONITOR: bench/monitor_call.py>" >>"$workdir/commands.txt"
  measure_redis_benchmark redis "$1" calls/s "${cmd[@]}"
  # Every call must have been an acceptance: each leaves an operation in the queue (1 in 1000
  # may repeat a random id).
  accepted=$(rcli ZCARD osbq:queue)
  awk -v a="$accepted" -v n="$ceiling_n" 'BEGIN { exit !(a >= n * 0.999) }' ||
    problem "redis run $1: only $accepted of $ceiling_n calls were acceptances"
  redis_port=$saved
}

case_accept() {
  echo "== 2 accept: async provision accept (PUT ?accepts_incomplete=true, new id each, expect 202)"
  start_stack accept
  local with_ceiling=""
  if want_case redis; then
    with_ceiling=1
    capture_accept_call
    start_ceiling
    echo "  each run followed by redis-benchmark on the gateway's own EVALSHA (${#accept_call[@]} words)"
  fi
  warm_up provision_accept.lua tag=w
  local run
  for ((run = 1; run <= runs; run++)); do
    # The worker runs every accepted job (sim, 0 ms); start each run without the last backlog.
    wait_queue_at_most 0 60
    wrk_command provision_accept.lua "$duration" "tag=a$run"
    measure_wrk accept "$run" req/s "${wrk_cmd[@]}"
    # The ceiling runs alone too: not beside the worker still running this run's jobs.
    if [ -n "$with_ceiling" ]; then
      wait_queue_at_most 0 60
      ceiling_run "$run"
    fi
  done
  stop_stack
}
