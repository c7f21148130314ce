# shellcheck shell=bash
# Processes of bench/run.sh (sourced): every PID started is recorded, and only those are
# stopped, newest first, when the script ends, also on Ctrl-C or an error.

started_pids=()
# Seconds stop_started allows a process before SIGKILL, where not 13 (stop_pid), by PID.
declare -A stop_limit_s=()
workdir=""

die() {
  echo "bench: $*" >&2
  exit 1
}

# Drops a PID from started_pids once its process is gone or being stopped, so that a number
# the kernel hands out again later is never signalled.
forget_pid() {
  local kept=() p
  for p in "${started_pids[@]}"; do [ "$p" = "$1" ] || kept+=("$p"); done
  started_pids=("${kept[@]}")
}

# Stops one process we started: SIGTERM; if it is still there after 3 s, SIGTERM again; SIGKILL
# if it is still there after $2 s (default 13: a worker gives its running jobs 10 s of grace
# after the first signal and cancels them on the second; a stack's bench/lib/bench_stack.py stops
# daemons one after the other and gets longer).
stop_pid() {
  local pid=$1 limit_s=${2:-13} i
  forget_pid "$pid"
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < limit_s * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    [ "$i" = 30 ] && { kill -TERM "$pid" 2>/dev/null || true; }
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "bench: PID $pid did not stop within $limit_s s of SIGTERM; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

# Stops what is still running, newest first (a load generator before the stack it loads).
stop_started() {
  local pid
  while [ ${#started_pids[@]} -gt 0 ]; do
    pid=${started_pids[${#started_pids[@]} - 1]}
    stop_pid "$pid" "${stop_limit_s[$pid]:-13}"
  done
}

on_exit() {
  local status=$?
  trap - EXIT INT TERM
  stop_started
  [ -n "$workdir" ] && rm -rf "$workdir"
  exit "$status"
}
trap on_exit EXIT
# On Ctrl-C or SIGTERM: exit, which runs on_exit (see run_load for how wrk is waited for).
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs "$@" in the background with its output in log $1; records its PID in started_pid.
start_process() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 </dev/null &
  started_pid=$!
  started_pids+=("$started_pid")
}

# Runs a load generator to its end with its output in $1. It runs in the background and the
# script waits for it with the wait builtin, because bash runs a trap at once during wait but
# only after a foreground command ends, and lets Ctrl-C pass when that command (wrk) catches
# it: the script must stop on Ctrl-C, not print an interrupted run as a result.
run_load() {
  local out=$1 status=0
  shift
  start_process "$out" "$@"
  wait "$started_pid" || status=$?
  forget_pid "$started_pid"
  return "$status"
}

# Waits up to $1 seconds for "${@:2}" to succeed.
wait_until() {
  local timeout_s=$1 i
  shift
  for ((i = 0; i < timeout_s * 10; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

# A TCP port on 127.0.0.1 that nothing listens on now (the kernel's choice, as the tests do).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
