#!/usr/bin/env bash
# The benchmark (issue 3): one command that installs what is missing, builds a Release osbq into
# build-bench/, and measures on loopback, each case on a stack of its own (redis-server, one
# worker, one gateway, started here and stopped here):
#   1 accept       async provision accept: PUT ?accepts_incomplete=true with a new id each, 202
#   2 last_op      last_operation polling over preloaded instances, half done, half in progress
#   3 sync_cycle   synchronous provision (201) then deprovision (200) of a new instance, sim 0 ms
#   R redis        the ceiling: redis-benchmark running common/lua/begin_instance.lua, the script
#                  a provision accept costs, so that case 1 can be read as a fraction of it
# Each case runs --runs times; the summary gives the median, min and max of the rate and of the
# p50/p99 latencies, every unexpected status, and the command lines. docs/benchmarks.md explains
# the cases and records figures. Only loopback is used; every loop is bounded; whatever this
# script starts is stopped by PID when it ends, also on Ctrl-C or an error.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

runs=5
duration=10
connections=64
threads=2
instances=10000
cases="accept,last_op,sync_cycle,redis"
build_dir="$top/build-bench"

usage() {
  cat <<'TEXT'
usage: bench/run.sh [options]
  --runs N          runs of each case (default 5); the summary gives medians
  --duration S      seconds of load per run (default 10)
  --connections C   wrk connections, and redis-benchmark clients (default 64)
  --threads T       wrk threads (default 2)
  --instances N     instances preloaded for the last_operation case (default 10000, even)
  --cases LIST      comma-separated subset of: accept,last_op,sync_cycle,redis (default all)
  --build-dir DIR   where to build the Release binaries (default build-bench/)
TEXT
}

die() {
  echo "bench: $*" >&2
  exit 1
}

positive_int() { [[ $1 =~ ^[1-9][0-9]*$ ]] || die "$2 must be a positive integer, not '$1'"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="${2:-}"; shift 2 ;;
    --duration) duration="${2:-}"; shift 2 ;;
    --connections) connections="${2:-}"; shift 2 ;;
    --threads) threads="${2:-}"; shift 2 ;;
    --instances) instances="${2:-}"; shift 2 ;;
    --cases) cases="${2:-}"; shift 2 ;;
    --build-dir) build_dir="${2:-}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option $1" ;;
  esac
done
positive_int "$runs" --runs
positive_int "$duration" --duration
positive_int "$connections" --connections
positive_int "$threads" --threads
positive_int "$instances" --instances
# Even ids are loaded on the instant plan, odd ones on the hold plan: an even count keeps it half.
[ $((instances % 2)) -eq 0 ] || die "--instances must be even"
[ "$threads" -le "$connections" ] || die "--threads must not exceed --connections"
for c in ${cases//,/ }; do
  case "$c" in accept | last_op | sync_cycle | redis) ;; *) die "unknown case '$c'" ;; esac
done
want_case() { [[ ",$cases," == *",$1,"* ]]; }

# ---- Processes: every PID started is recorded, and only those are stopped. ----

started_pids=()
workdir=""

# Drops a PID from started_pids once its process is gone or being stopped, so that a number
# the kernel hands out again later is never signalled.
forget_pid() {
  local kept=() p
  for p in "${started_pids[@]}"; do [ "$p" = "$1" ] || kept+=("$p"); done
  started_pids=("${kept[@]}")
}

# Stops one process we started: SIGTERM; if it is still there after 3 s, SIGTERM again (a
# worker gives its running jobs 10 s of grace after the first signal and cancels them on the
# second: the last_op case leaves it hour-long jobs); SIGKILL if it is still there 10 s later.
stop_pid() {
  local pid=$1 i
  forget_pid "$pid"
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 130; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    [ "$i" = 30 ] && { kill -TERM "$pid" 2>/dev/null || true; }
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "bench: PID $pid did not stop within 13 s of SIGTERM; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

# Stops what is still running, newest first (gateway and worker before their Redis).
stop_started() {
  while [ ${#started_pids[@]} -gt 0 ]; do stop_pid "${started_pids[${#started_pids[@]} - 1]}"; done
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

# ---- Installation and build ----

install_missing() {
  scripts/install-deps.sh
  if ! dpkg-query -W -f='${Status}' wrk 2>/dev/null | grep -q "install ok installed"; then
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null || die "run as root to install wrk"
      sudo=(sudo)
    fi
    echo "bench: installing wrk" >&2
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
      wrk >/dev/null
  fi
}

build_release() {
  mkdir -p "$build_dir"
  # A build tree never belongs in git, whatever the top-level .gitignore says.
  [ -e "$build_dir/.gitignore" ] || echo "*" >"$build_dir/.gitignore"
  # Release: no sanitizers (OSBQ_SANITIZE empty, also over an older cache), tests not built.
  # OSBQ_WERROR=OFF: -O2 enables warnings (maybe-uninitialized) the Debug build does not see;
  # a benchmark measures, it does not lint.
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DOSBQ_BUILD_TESTS=OFF -DOSBQ_SANITIZE= \
    -DOSBQ_WERROR=OFF >"$workdir/cmake.log" 2>&1 || { cat "$workdir/cmake.log" >&2; die "cmake failed"; }
  cmake --build "$build_dir" -j"$(nproc)" >"$workdir/build.log" 2>&1 ||
    { tail -40 "$workdir/build.log" >&2; die "build failed"; }
  gateway_bin="$build_dir/bin/osbq-gateway"
  worker_bin="$build_dir/bin/osbq-worker"
}

# ---- A stack: redis-server, then gateway and worker (OSBQ_* as scripts/run-local.sh sets them) ----

redis_port="" http_port="" gateway_pid="" worker_pid="" base_url="" stack_dir=""

start_redis() {
  redis_port=$(free_port)
  mkdir -p "$stack_dir/redis"
  # No persistence: the stack is thrown away, and disk writes would only add noise.
  start_process "$stack_dir/redis.log" redis-server --port "$redis_port" --bind 127.0.0.1 \
    --dir "$stack_dir/redis" --save '' --appendonly no
  wait_until 10 redis_ping || stack_die "redis-server did not answer PING within 10 s"
}

redis_ping() { [ "$(redis-cli -p "$redis_port" PING 2>/dev/null)" = PONG ]; }
rcli() { redis-cli -p "$redis_port" "$@"; }

# Runs a gateway or worker with the bench environment. OSBQ_LOG_LEVEL=warn: at info every
# request writes an access-log line, and that logging would be what is measured. exec: the
# background subshell start_process made becomes the daemon, so the PID recorded is its own.
run_osbq() {
  exec env OSBQ_REDIS_URL="redis://127.0.0.1:$redis_port/0" OSBQ_CATALOG="$top/bench/catalog.json" \
    OSBQ_BROKER_USERNAME=bench OSBQ_BROKER_PASSWORD_FILE="$workdir/broker-password" \
    OSBQ_LISTEN="127.0.0.1:$http_port" OSBQ_BUS_BIND="tcp://127.0.0.1:$bus_port" \
    OSBQ_LOG_LEVEL=warn "$@"
}

start_gateway() {
  http_port=$(free_port)
  bus_port=$(free_port)
  base_url="http://127.0.0.1:$http_port"
  start_process "$stack_dir/gateway.log" run_osbq "$gateway_bin"
  gateway_pid=$started_pid
  wait_until 10 gateway_ready || stack_die "the gateway did not answer /readyz within 10 s"
}

gateway_ready() { curl -fsS --max-time 1 "$base_url/readyz" >/dev/null 2>&1; }

start_worker() {
  start_process "$stack_dir/worker.log" run_osbq "$worker_bin"
  worker_pid=$started_pid
}

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
  for f in "$stack_dir"/{last,redis.log,gateway.log,worker.log}; do
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

start_stack() { # $1: name; with --no-worker, no worker
  stack_dir="$workdir/$1"
  mkdir -p "$stack_dir"
  start_redis
  start_gateway
  if [ "${2:-}" != --no-worker ]; then
    start_worker
    check_stack
  fi
}

# Before stopping: a crash or warnings in the daemons' logs are part of the result.
report_stack_logs() {
  local name log lines
  for name in gateway worker; do
    log="$stack_dir/$name.log"
    [ -f "$log" ] || continue
    lines=$(wc -l <"$log")
    if [ "$lines" -gt 0 ]; then
      echo "  note: $name log has $lines line(s) at warn level or above, e.g.:"
      sort "$log" | sed 's/^ts=[^ ]* //' | uniq -c | sort -rn | head -3 | sed 's/^/    /'
    fi
  done
  if [ -n "$gateway_pid" ] && ! kill -0 "$gateway_pid" 2>/dev/null; then
    problem "${stack_dir##*/}: the gateway (PID $gateway_pid) stopped during the case"
  fi
  if [ -n "$worker_pid" ] && ! kill -0 "$worker_pid" 2>/dev/null; then
    problem "${stack_dir##*/}: the worker (PID $worker_pid) stopped during the case"
  fi
}

stop_stack() {
  report_stack_logs
  stop_started
  gateway_pid="" worker_pid=""
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

# Prints a problem now and keeps it for the summary, which then fails the script.
problem() {
  echo "  PROBLEM: $*"
  echo "$*" >>"$workdir/problems.txt"
}

# ---- Measuring ----

service_id="0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f001" # bench/catalog.json, also in bench/lua/common.lua
plan_instant="0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f101"
context_json='{"platform":"cloudfoundry","organization_guid":"7a1e3c55-0f2b-4d8e-9c6a-1b2d3e4f5a6b","space_guid":"c4d5e6f7-8a9b-4c0d-8e1f-2a3b4c5d6e7f","instance_name":"bench"}'

provision_body() {
  printf '{"service_id":"%s","plan_id":"%s","organization_guid":"7a1e3c55-0f2b-4d8e-9c6a-1b2d3e4f5a6b","space_guid":"c4d5e6f7-8a9b-4c0d-8e1f-2a3b4c5d6e7f","context":%s}' \
    "$service_id" "$1" "$context_json"
}

# The words as a shell would need them typed: plain words bare, others in single quotes.
shell_words() {
  local word out=""
  for word in "$@"; do
    if [[ $word =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
      out+="$word "
    else
      out+="'${word//\'/\'\\\'\'}' "
    fi
  done
  printf '%s\n' "${out% }"
}

record_command() { shell_words "$@" >>"$workdir/commands.txt"; }

# The wrk command of a case script, into the array wrk_cmd.
wrk_command() { # $1 script, $2 duration, rest: script arguments
  local script=$1 seconds=$2
  shift 2
  wrk_cmd=(wrk -t"$threads" -c"$connections" -d"${seconds}s" --timeout 10s -H "$auth_header"
    -H "$version_header" -s "$top/bench/lua/$script" "$base_url" -- "$@")
}

# A value from the BENCH line wrk's done() printed.
bench_value() { # $1 file, $2 key
  sed -n "s/^BENCH .*\b$2=\([^ ]*\).*/\1/p" "$1"
}

# One measured wrk run: records the command, keeps the output, appends a result row
# (rate rps p50 p99 max unexpected socket_errors) to $workdir/<case>.tsv, prints one line.
measure_wrk() { # $1 case, $2 run number, $3 unit, rest: wrk command
  local case=$1 run=$2 unit=$3 out
  shift 3
  out="$workdir/$case-$run.out"
  record_command "$@"
  run_load "$out" "$@" || { cat "$out" >&2; die "wrk failed in $case run $run"; }
  grep -q '^BENCH ' "$out" || { cat "$out" >&2; die "no BENCH line from wrk in $case run $run"; }
  local rate rps p50 p99 max bad sock seconds
  seconds=$(bench_value "$out" seconds)
  awk -v s="$seconds" -v d="$duration" 'BEGIN { exit !(s >= 0.9 * d) }' ||
    die "wrk ran $seconds s instead of $duration s in $case run $run (interrupted?)"
  rate=$(bench_value "$out" rate)
  rps=$(bench_value "$out" rps)
  p50=$(bench_value "$out" p50_ms)
  p99=$(bench_value "$out" p99_ms)
  max=$(bench_value "$out" max_ms)
  bad=$(bench_value "$out" unexpected)
  sock=$(($(bench_value "$out" connect_errors) + $(bench_value "$out" read_errors) +
    $(bench_value "$out" write_errors) + $(bench_value "$out" timeouts)))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rate" "$rps" "$p50" "$p99" "$max" "$bad" "$sock" \
    >>"$workdir/$case.tsv"
  printf '  run %d/%d: %10.0f %s  p50 %7.2f ms  p99 %7.2f ms  max %7.1f ms  unexpected %d  socket errors %d\n' \
    "$run" "$runs" "$rate" "$unit" "$p50" "$p99" "$max" "$bad" "$sock"
  if [ "$bad" != 0 ] || [ "$sock" != 0 ]; then
    problem "$case run $run: unexpected answers: $(sed -n 's/^BENCH_UNEXPECTED //p' "$out");" \
      "socket errors: $sock"
  fi
  sed -n 's/^BENCH_COUNTS /    answers: /p' "$out"
}

# A short unrecorded run first: the first seconds of a fresh process (page faults, Redis
# growing its tables, connections opening) are not what the runs measure.
warm_up() { # $1 script, rest: script arguments
  local script=$1
  shift
  wrk_command "$script" 2 "$@"
  run_load "$workdir/warmup.out" "${wrk_cmd[@]}" || { cat "$workdir/warmup.out" >&2; die "warm-up failed"; }
}

case_accept() {
  echo "== 1 accept: async provision accept (PUT ?accepts_incomplete=true, new id each, expect 202)"
  start_stack accept
  warm_up provision_accept.lua tag=w
  local run
  for ((run = 1; run <= runs; run++)); do
    # The worker runs every accepted job (sim, 0 ms); start each run without the last backlog.
    wait_queue_at_most 0 60
    wrk_command provision_accept.lua "$duration" "tag=a$run"
    measure_wrk accept "$run" req/s "${wrk_cmd[@]}"
  done
  stop_stack
}

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

case_last_op() {
  echo "== 2 last_op: last_operation polling over $instances instances, half done, half in progress"
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
  warm_up last_operation.lua tag=lo "count=$instances"
  local run
  for ((run = 1; run <= runs; run++)); do
    wrk_command last_operation.lua "$duration" tag=lo "count=$instances"
    measure_wrk last_op "$run" req/s "${wrk_cmd[@]}"
  done
  stop_stack
}

case_sync_cycle() {
  echo "== 3 sync_cycle: sync provision (201) + sync deprovision (200) of a new instance, sim 0 ms"
  start_stack sync_cycle
  warm_up sync_cycle.lua tag=w
  local run
  for ((run = 1; run <= runs; run++)); do
    wait_queue_at_most 0 60
    wrk_command sync_cycle.lua "$duration" "tag=c$run"
    measure_wrk sync_cycle "$run" cycles/s "${wrk_cmd[@]}"
  done
  stop_stack
}

# A field of redis-benchmark's --csv row counted from the end ($1 = 0: the last), since the
# first field, the command, holds commas: ..., rps, avg, min, p50, p95, p99, max (ms).
csv_field() { awk -F, -v k="$1" '{ v = $(NF - k); gsub(/"/, "", v); print v }'; }

# The Redis-script ceiling: redis-benchmark calls begin_instance.lua as osbq does for a
# provision accept, with a new random instance and operation id each call (so each call is an
# acceptance that writes the instance, the operation and the queue entry), on a redis-server of
# its own started like the others. The arguments are those of a real acceptance: a gateway (no
# worker, so the operation keeps its encoded job) accepts one provision first, and the
# operation's digest and job length are read back from Redis.
case_redis() {
  echo "== R redis: redis-benchmark EVALSHA begin_instance.lua (the Redis-script ceiling)"
  local script="$top/common/lua/begin_instance.lua"
  # The call below passes the 5 keys of the script's header comment; a changed signature
  # must fail here, not measure something else.
  local nkeys
  nkeys=$(awk '/^-- ARGV:/ { exit } /^-- KEYS:/ { on = 1 } on' "$script" | grep -o '\b[0-9]\+ [a-z]' | wc -l)
  [ "$nkeys" = 5 ] ||
    die "begin_instance.lua now takes $nkeys keys (bench/run.sh passes 5): update case_redis"
  start_stack redis --no-worker
  local code op_id digest job_len
  code=$(broker_curl -X PUT -H 'Content-Type: application/json' -d "$(provision_body "$plan_instant")" \
    "$base_url/v2/service_instances/sample?accepts_incomplete=true") || true
  [ "$code" = 202 ] || stack_die "sample provision: HTTP $code (expected 202)"
  op_id=$(sed -n 's/.*"operation":"\([^"]*\)".*/\1/p' "$stack_dir/last")
  digest=$(rcli HGET "osbq:op:$op_id" digest)
  job_len=$(rcli HSTRLEN "osbq:op:$op_id" job)
  if [ -z "$digest" ] || [ "$job_len" -le 0 ]; then die "cannot read the sample operation $op_id"; fi
  stop_pid "$gateway_pid"
  gateway_pid=""
  rcli FLUSHALL >/dev/null
  local sha job now
  sha=$(rcli SCRIPT LOAD "$(cat "$script")")
  job=$(head -c "$job_len" /dev/zero | tr '\0' j) # the job's size; its bytes are opaque to Lua
  now=$(date +%s%3N)
  # KEYS then ARGV in the order of the script's header comment; __rand_int__ is a new random
  # 12-digit number at each place of each call (-r 1000000000: a repeat is rare enough).
  local call=(EVALSHA "$sha" 5 osbq:instance:__rand_int__ osbq:op:__rand_int__ osbq:queue
    osbq:waiters:__rand_int__ osbq:bindings:__rand_int__
    provision __rand_int__ "$digest" "$now" "" "$service_id" "$plan_instant" "" "$context_json"
    "" "" "$job" "$((now + 30000))" "" "osbq:" __rand_int__ 217)
  # One call by hand: it must be an acceptance.
  local answer
  answer=$(rcli "${call[@]//__rand_int__/000000000001}" | head -1)
  [ "$answer" = accepted ] || die "begin_instance.lua answered '$answer' to the reference call"
  rcli FLUSHALL >/dev/null
  # redis-benchmark counts requests, not time: size -n so a run lasts about --duration.
  local calibrate=(redis-benchmark -h 127.0.0.1 -p "$redis_port" -c "$connections" -n 20000
    -r 1000000000 --csv "${call[@]}")
  local rps n
  run_load "$workdir/redis-calibrate.out" "${calibrate[@]}" ||
    { cat "$workdir/redis-calibrate.out" >&2; die "redis-benchmark failed"; }
  rps=$(tail -1 "$workdir/redis-calibrate.out" | csv_field 6)
  n=$(awk -v r="$rps" -v d="$duration" 'BEGIN { n = int(r * d); if (n < 20000) n = 20000; if (n > 5000000) n = 5000000; print n }')
  local run out accepted
  for ((run = 1; run <= runs; run++)); do
    rcli FLUSHALL >/dev/null
    local cmd=(redis-benchmark -h 127.0.0.1 -p "$redis_port" -c "$connections" -n "$n"
      -r 1000000000 --csv "${call[@]}")
    # The job argument is long: the recorded command line says how to make it instead.
    local shown=("${cmd[@]}") text
    shown[${#shown[@]} - 6]=@JOB@
    text=$(shell_words "${shown[@]}")
    echo "${text/@JOB@/\"\$(head -c $job_len /dev/zero | tr \'\\0\' j)\"}" >>"$workdir/commands.txt"
    out="$workdir/redis-$run.out"
    run_load "$out" "${cmd[@]}" || { cat "$out" >&2; die "redis-benchmark failed"; }
    # Every call must have been an acceptance: each one leaves an operation in the queue
    # (redis-benchmark itself does not count error replies).
    accepted=$(rcli ZCARD osbq:queue)
    local rate p50 p99 max bad
    rate=$(tail -1 "$out" | csv_field 6)
    p50=$(tail -1 "$out" | csv_field 3)
    p99=$(tail -1 "$out" | csv_field 1)
    max=$(tail -1 "$out" | csv_field 0)
    # Random ids repeat now and then (birthday bound): tolerate 1 in 1000 calls not accepted.
    bad=$(awk -v a="$accepted" -v n="$n" 'BEGIN { print (a >= n * 0.999) ? 0 : n - a }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t0\n' "$rate" "$rate" "$p50" "$p99" "$max" "$bad" >>"$workdir/redis.tsv"
    printf '  run %d/%d: %10.0f calls/s  p50 %7.2f ms  p99 %7.2f ms  max %7.1f ms  accepted %d of %d\n' \
      "$run" "$runs" "$rate" "$p50" "$p99" "$max" "$accepted" "$n"
    [ "$bad" = 0 ] || problem "redis run $run: only $accepted of $n calls were acceptances"
  done
  stop_stack
}

# ---- Summary ----

# "median min max" of column $2 (1-based) of a result file.
column_stats() {
  cut -f"$2" "$1" | sort -g | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%s %s %s\n", m, v[1], v[NR] }'
}

summary_row() { # $1 case, $2 label, $3 unit
  local file="$workdir/$1.tsv" r p50 p99
  [ -s "$file" ] || return 0
  read -r -a r <<<"$(column_stats "$file" 1)"
  read -r -a p50 <<<"$(column_stats "$file" 3)"
  read -r -a p99 <<<"$(column_stats "$file" 4)"
  printf '%-34s %9.0f %-9s (%6.0f-%6.0f)   %6.2f (%5.2f-%5.2f)   %6.2f (%5.2f-%5.2f)\n' \
    "$2" "${r[0]}" "$3" "${r[1]}" "${r[2]}" "${p50[0]}" "${p50[1]}" "${p50[2]}" \
    "${p99[0]}" "${p99[1]}" "${p99[2]}"
}

print_machine() {
  local cpu mem
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
  mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
  echo "machine: $(nproc) cores ($cpu), $mem memory, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "osbq: $(git -C "$top" describe --always --dirty 2>/dev/null || echo "not a git tree"), Release build in $build_dir"
  echo "tools: $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), $(redis-server --version | cut -d' ' -f1-3)"
  echo "load: wrk -t$threads -c$connections, $runs runs of $duration s per case"
}

print_summary() {
  echo
  echo "==== summary: median (min-max) of $runs runs"
  print_machine
  printf '%-34s %9s %-9s %-17s   %-20s   %-20s\n' case rate unit "(min-max)" "p50 ms (min-max)" \
    "p99 ms (min-max)"
  summary_row accept "1 provision accept (202)" req/s
  summary_row last_op "2 last_operation (200)" req/s
  summary_row sync_cycle "3 sync provision+deprovision" cycles/s
  summary_row redis "R redis-benchmark begin_instance" calls/s
  if [ -s "$workdir/accept.tsv" ] && [ -s "$workdir/redis.tsv" ]; then
    local a r
    a=$(column_stats "$workdir/accept.tsv" 1 | cut -d' ' -f1)
    r=$(column_stats "$workdir/redis.tsv" 1 | cut -d' ' -f1)
    awk -v a="$a" -v r="$r" 'BEGIN { printf "ratio provision accept / Redis-script ceiling (medians): %.3f\n", a / r }'
  fi
  if [ -s "$workdir/sync_cycle.tsv" ]; then
    local q
    q=$(column_stats "$workdir/sync_cycle.tsv" 2 | cut -d' ' -f1)
    printf 'sync_cycle counts two requests per cycle: median %.0f req/s, latencies are per request\n' "$q"
  fi
  echo
  echo "commands (the osbq stacks: redis-server --bind 127.0.0.1 --save '' --appendonly no;"
  echo "osbq-gateway and osbq-worker from $build_dir/bin with OSBQ_LOG_LEVEL=warn; see bench/run.sh):"
  sed 's/^/  /' "$workdir/commands.txt"
  echo
  if [ -s "$workdir/problems.txt" ]; then
    echo "PROBLEMS (unexpected answers, socket errors, stopped daemons, backlogs):"
    sed 's/^/  /' "$workdir/problems.txt"
    return 1
  fi
  echo "no unexpected answers and no socket errors in any run"
}

main() {
  local t0=$SECONDS
  install_missing
  workdir=$(mktemp -d "${TMPDIR:-/tmp}/osbq-bench.XXXXXX")
  : >"$workdir/commands.txt"
  build_release
  (umask 077 && head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$workdir/broker-password")
  auth_header="Authorization: Basic $(printf 'bench:%s' "$(cat "$workdir/broker-password")" | base64 -w0)"
  version_header="X-Broker-API-Version: 2.17"
  print_machine
  if want_case accept; then case_accept; fi
  if want_case last_op; then case_last_op; fi
  if want_case sync_cycle; then case_sync_cycle; fi
  if want_case redis; then case_redis; fi
  local status=0
  print_summary || status=1
  echo "bench: done in $((SECONDS - t0)) s"
  return "$status"
}

main
