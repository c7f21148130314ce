# shellcheck shell=bash
# A stack of bench/run.sh (sourced): redis-server, gateways and workers, started and stopped by
# bench/lib/bench_stack.py with the launcher the integration tests use
# (tests/lib/osbq_stack.py).

redis_port="" http_port="" gateway_pid="" worker_pid="" base_url="" stack_dir=""
gateway_pids=() gateway_urls=() worker_pids=()
# More NAME=value words for the daemons of a case (the memory case raises the gateway's
# connection and waiter limits).
osbq_extra_env=()

rcli() { redis-cli -p "$redis_port" "$@"; }

# Starts bench/lib/bench_stack.py in $1 with $2 gateways and $3 workers and waits until it has
# written $1/stack.sh, which it then reads: launched_redis_port, launched_gateway_pids,
# launched_gateway_ports, launched_worker_pids.
launch_stack() { # $1 directory, $2 gateways, $3 workers
  local dir=$1 pid
  mkdir -p "$dir"
  start_process "$dir/stack.out" python3 "$top/bench/lib/bench_stack.py" "$dir" "$build_dir" \
    "$workdir/broker-password" "$2" "$3" "${osbq_extra_env[@]}"
  pid=$started_pid
  # Each daemon gets up to 13 s, one after the other.
  stop_limit_s[$pid]=$((13 * ($2 + $3 + 1) + 5))
  wait_until 60 stack_started "$dir" "$pid" || true
  [ -f "$dir/stack.sh" ] ||
    stack_die "the stack did not start: $(cat "$dir/stack.failed" "$dir/stack.out" 2>/dev/null)"
  # shellcheck disable=SC1091 # written by bench/lib/bench_stack.py
  source "$dir/stack.sh"
}

stack_started() { [ -f "$1/stack.sh" ] || ! kill -0 "$2" 2>/dev/null; }

# Each gateway's PID and URL are in gateway_pids and gateway_urls (two-gateway stacks);
# gateway_pid, http_port and base_url are the last one's.
start_stack() { # $1: name; $2: --no-worker (no worker), or the number of gateways and workers
  stack_dir="$workdir/$1"
  local n=1 workers i
  [[ ${2:-} =~ ^[0-9]+$ ]] && n=$2
  workers=$n
  [ "${2:-}" = --no-worker ] && workers=0
  launch_stack "$stack_dir" "$n" "$workers"
  redis_port=$launched_redis_port
  gateway_pids=("${launched_gateway_pids[@]}") worker_pids=("${launched_worker_pids[@]}")
  gateway_urls=()
  for i in "${!launched_gateway_ports[@]}"; do
    http_port=${launched_gateway_ports[$i]}
    base_url="http://127.0.0.1:$http_port"
    gateway_urls+=("$base_url")
  done
  gateway_pid=${gateway_pids[${#gateway_pids[@]} - 1]}
  worker_pid=""
  if [ "$workers" -gt 0 ]; then worker_pid=${worker_pids[${#worker_pids[@]} - 1]}; fi
  if [ "$workers" -gt 0 ]; then
    # Each gateway once through the whole path (which also waits for the workers to find it).
    for ((i = 0; i < n; i++)); do base_url=${gateway_urls[$i]} check_stack; done
  fi
}

# A redis-server alone (no gateway, no worker) in directory $1; sets launched_redis_port.
start_redis_only() { launch_stack "$1" 0 0; }

# One synchronous provision and deprovision through the whole path (gateway, Redis, bus,
# worker, event thread): it also waits for the worker to find the gateway in the registry.
check_stack() {
  local id="check-$RANDOM" code
  code=$(broker_curl -X PUT -H 'Content-Type: application/json' -d "$(provision_body "$plan_instant")" \
    "$base_url/v2/service_instances/$id") || true
  [ "$code" = 201 ] || stack_die "sync provision check: HTTP $code (expected 201)"
  code=$(broker_curl -X DELETE \
    "$base_url/v2/service_instances/$id?service_id=$service_id&plan_id=$plan_instant") || true
  [ "$code" = 200 ] || stack_die "sync deprovision check: HTTP $code (expected 200)"
}

# Fails with the end of the answer and of the daemons' logs: the temp dir holding them goes.
stack_die() {
  local f
  for f in "$stack_dir"/{last,redis.log,gateway-*.log,worker-*.log}; do
    [ -s "$f" ] || continue
    echo "--- ${f##*/} (end)" >&2
    tail -5 "$f" >&2
    echo >&2
  done
  die "$1"
}

# curl with the broker's credentials; prints the status code (the body goes to $stack_dir/last).
broker_curl() {
  curl -sS --max-time 20 -o "$stack_dir/last" -w '%{http_code}' -H "$auth_header" \
    -H "$version_header" "$@"
}

# Before stopping: a crash or warnings in the daemons' logs are part of the result.
report_stack_logs() {
  local log name lines pid
  for log in "$stack_dir"/gateway-*.log "$stack_dir"/worker-*.log; do
    [ -f "$log" ] || continue
    name=${log##*/}
    lines=$(wc -l <"$log")
    if [ "$lines" -gt 0 ]; then
      echo "  note: ${name%.log} log has $lines line(s) at warn level or above, e.g.:"
      sort "$log" | sed 's/^ts=[^ ]* //' | uniq -c | sort -rn | sed -n '1,3s/^/    /p'
    fi
  done
  for pid in "${gateway_pids[@]}" "${worker_pids[@]}"; do
    kill -0 "$pid" 2>/dev/null ||
      problem "${stack_dir##*/}: a gateway or worker (PID $pid) stopped during the case"
  done
}

stop_stack() {
  report_stack_logs
  stop_started
  # What bench/lib/bench_stack.py said while stopping (a daemon that needed SIGKILL).
  local out
  for out in "$stack_dir"/stack.out "$stack_dir"/*/stack.out; do
    [ -s "$out" ] && cat "$out" >&2
  done
  gateway_pid="" worker_pid="" gateway_pids=() gateway_urls=() worker_pids=()
}

# Waits (up to $2 s) until at most $1 operations are unfinished: each run then starts with an
# idle worker instead of the previous run's backlog.
wait_queue_at_most() {
  local most=$1 timeout_s=$2 i n
  for ((i = 0; i < timeout_s * 10; i++)); do
    n=$(rcli ZCARD osbq:queue)
    [ "$n" -le "$most" ] && return 0
    sleep 0.1
  done
  problem "${stack_dir##*/}: $n operations still unfinished after ${timeout_s} s (expected at most $most)"
}
