# shellcheck shell=bash
# Case long_ops_exec of bench/run.sh (sourced), issue 19: exec programs watched by the worker's
# event loop, not by threads. bench/long_ops_exec.py runs each phase against a stack of its own
# (one gateway, one worker) on a catalog with two exec plans; --long-ops-scale multiplies the
# counts (1: the 1,000 old-style programs of 30 s and 10,000 poll-style operations of
# 60 s).

# Runs one phase on a fresh stack; its NAME=VALUE lines go to $workdir/long_ops_exec.txt.
long_ops_exec_phase() { # $1 phase, $2 count
  start_stack "long_ops_exec_$1"
  local cmd=(python3 "$top/bench/long_ops_exec.py" "$1" "$http_port" "$redis_port" "$worker_pid"
    "$workdir/broker-password" "$2")
  record_command "${cmd[@]}"
  "${cmd[@]}" | tee -a "$workdir/long_ops_exec.txt" | sed 's/^/  /' ||
    problem "long_ops_exec: $1 failed"
  stop_stack
}

case_long_ops_exec() {
  local old poll catalog="$workdir/catalog-exec.json"
  old=$(awk -v s="$long_ops_scale" 'BEGIN { printf "%d", 1000 * s }')
  poll=$(awk -v s="$long_ops_scale" 'BEGIN { printf "%d", 10000 * s }')
  echo "== long_ops_exec (scale $long_ops_scale): $old old-style programs of 30 s;" \
    "$poll poll-style exec operations of 60 s"
  : >"$workdir/long_ops_exec.txt"
  python3 "$top/bench/long_ops_exec.py" catalog "$catalog"
  # Every old-style program runs at once: the limit is raised to their count (256 by default).
  # Each running program costs the worker four descriptors.
  local fds=$((old * 4 + 4096))
  [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge "$fds" ] ||
    die "long_ops_exec needs $fds file descriptors (ulimit -Hn: $(ulimit -Hn)); use --long-ops-scale"
  ulimit -n "$fds"
  # A 5 s Redis timeout: on the shared 2-core machine, hundreds of programs starting at once
  # starve redis-server for more than the default second now and then.
  local common=(OSBQ_CATALOG="$catalog" OSBQ_MAX_QUEUED_JOBS=$((poll + old + 1000))
    OSBQ_REDIS_TIMEOUT_MS=5000)
  osbq_extra_env=("${common[@]}" OSBQ_WORKER_EXEC_CONCURRENCY=$((old > 256 ? old : 256)))
  long_ops_exec_phase old_style "$old"
  # Poll-style steps are short and CPU-bound (a program start each): --exec-poll-limit sizes
  # the programs running at once to the cores, as an operator running only such programs would;
  # without it the worker's default (256) applies.
  osbq_extra_env=("${common[@]}")
  [ -z "$exec_poll_limit" ] || osbq_extra_env+=(OSBQ_WORKER_EXEC_CONCURRENCY="$exec_poll_limit")
  echo "  poll phase: OSBQ_WORKER_EXEC_CONCURRENCY=${exec_poll_limit:-256 (default)}"
  long_ops_exec_phase poll_style "$poll"
  osbq_extra_env=()
}
