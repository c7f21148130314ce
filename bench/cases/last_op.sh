# shellcheck shell=bash
# Case last_op of bench/run.sh (sourced): last_operation, and redis-benchmark GET.

# Provisions ids first, first+2, ... below $instances on a plan through the API with
# bench/lua/preload.lua, and ends wrk once Redis holds $3 "lo-" instances in all (bounded: 3
# tries of at most 60 s each).
preload() { # $1 plan name (instant|hold), $2 first id, $3 instances expected in all after it
  local plan=$1 first=$2 want=$3 try i n=0 pid
  for ((try = 1; try <= 3; try++)); do
    wrk_command preload.lua 60 tag=lo "plan=$plan" "first=$first" stride=2 "to=$instances" \
      "threads=$threads"
    record_command "${wrk_cmd[@]}"
    start_process "$workdir/preload-$plan.out" "${wrk_cmd[@]}"
    pid=$started_pid
    for ((i = 0; i < 600; i++)); do
      n=$(rcli EVAL "return #redis.call('KEYS', ARGV[1])" 0 'osbq:instance:lo-*')
      [ "$n" -ge "$want" ] && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    # wrk prints its results and exits on SIGINT (stop_pid follows up if it does not).
    kill -INT "$pid" 2>/dev/null || true
    stop_pid "$pid"
    [ "$n" -ge "$want" ] && return 0
    echo "  preload of $plan: $n of $want instances after try $try; sending again"
  done
  die "could not preload $want instances (plan $plan)"
}

# redis-benchmark GET at 50 clients on the stack's Redis: the reference for a
# last_operation, one round trip each (keys written first, so GET finds values).
get_reference_run() { # $1 run
  local cmd=(redis-benchmark -h 127.0.0.1 -p "$redis_port" -c 50 -n "$get_n" -r 10000 -t get --csv)
  [ "$1" = 1 ] && record_command "${cmd[@]}"
  measure_redis_benchmark last_op_get "$1" GET/s "${cmd[@]}"
}

case_last_op() {
  echo "== 3 last_op: last_operation polling over $instances instances, half done, half in progress"
  start_stack last_op
  local t0=$SECONDS
  # The instant half first, and wait until it is done: the hold half then fills every worker
  # slot for an hour (the rest queue in the gateway), and would keep the instant jobs waiting.
  preload instant 0 $((instances / 2))
  wait_queue_at_most 0 60
  preload hold 1 "$instances"
  wait_queue_at_most $((instances / 2)) 10
  echo "  preloaded in $((SECONDS - t0)) s: $(rcli ZCARD osbq:queue) operations in progress," \
    "Redis used_memory $(rcli INFO memory | sed -n 's/^used_memory_human:\(.*\)\r$/\1/p')"
  redis-benchmark -h 127.0.0.1 -p "$redis_port" -c 50 -n 10000 -r 10000 -t set -q >/dev/null
  local rps
  rps=$(redis-benchmark -h 127.0.0.1 -p "$redis_port" -c 50 -n 20000 -r 10000 -t get --csv | tail -1 | csv_field 6)
  get_n=$(awk -v r="$rps" -v d="$duration" 'BEGIN { n = int(r * d); if (n < 20000) n = 20000; print n }')
  warm_up last_operation.lua tag=lo "count=$instances"
  local run
  for ((run = 1; run <= runs; run++)); do
    wrk_command last_operation.lua "$duration" tag=lo "count=$instances"
    measure_wrk last_op "$run" req/s "${wrk_cmd[@]}"
    get_reference_run "$run"
  done
  stop_stack
}

