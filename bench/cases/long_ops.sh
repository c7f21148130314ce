# shellcheck shell=bash
# Case long_ops of bench/run.sh (sourced), issue 19: long sim operations wait in Redis, not on
# threads. bench/long_ops.py runs each phase against a stack of its own (one gateway, one
# worker); --scale multiplies the counts (1: the 100,000, 10,000 and 10,000);
# --long-ops-phases picks the phases (in_flight, on_time, hol, steps, threads; default all);
# --long-ops-sender-nice is the nice value of hol's burst sender.

# Runs one phase of bench/long_ops.py on a fresh stack; its NAME=VALUE lines go to
# $workdir/long_ops.txt.
long_ops_phase() { # $1 stack name, then the phase and its arguments
  local name=$1
  shift
  [[ ",$long_ops_phases," == *",$name,"* ]] || return 0
  start_stack "long_ops_$name"
  local cmd=(python3 "$top/bench/long_ops.py" "$1" "$http_port" "$redis_port" "$worker_pid"
    "$gateway_pid" "$workdir/broker-password" "${@:2}")
  record_command "${cmd[@]}"
  "${cmd[@]}" | tee -a "$workdir/long_ops.txt" | sed 's/^/  /' || problem "long_ops: $name failed"
  stop_stack
}

case_long_ops() {
  local in_flight on_time hol
  in_flight=$(awk -v s="$long_ops_scale" 'BEGIN { printf "%d", 100000 * s }')
  on_time=$(awk -v s="$long_ops_scale" 'BEGIN { printf "%d", 10000 * s }')
  hol=$on_time
  echo "== long_ops (scale $long_ops_scale, phases $long_ops_phases): $in_flight ten-minute" \
    "provisions in flight; $on_time of 60 s on time; 0-ms cycles with $hol in flight and a" \
    "burst of $hol more; 160 of 6 s as steps and on threads"
  : >"$workdir/long_ops.txt"
  # Room for every accepted job in the gateway's queue, whatever the worker takes meanwhile.
  osbq_extra_env=(OSBQ_MAX_QUEUED_JOBS=$((in_flight + hol + 1000)))
  long_ops_phase in_flight in_flight "$in_flight"
  long_ops_phase on_time on_time "$on_time"
  long_ops_phase hol hol "$hol" "$long_ops_sender_nice"
  long_ops_phase steps threads six 160
  long_ops_phase threads threads six_blocking 160
  osbq_extra_env=()
}
