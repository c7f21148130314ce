#!/usr/bin/env bash
# The benchmark (issues 3 and 9): one command that installs what is missing, builds a Release
# osbq into build-bench/, and measures on loopback, each case on a stack of its own (redis-server,
# workers, gateways and references, started here and stopped here by PID):
#   catalog      GET /v2/catalog (auth + version header); in the same runs, side by side, the
#                same bytes from nginx and from bench/bare_mhd.c (bare libmicrohttpd): ratios
#   accept       async provision accept: PUT ?accepts_incomplete=true with a new id each, 202;
#                with "redis" also selected, each run is followed by a run of the ceiling:
#   redis        redis-benchmark running the EVALSHA call a gateway makes for an accept (its
#                arguments captured with MONITOR): ratio accept / Redis-script ceiling
#   accept_alone the accept case with no worker (jobs wait in Redis): the accept path alone
#   last_op      last_operation polling over --instances instances, half done, half in progress;
#                each run followed by redis-benchmark GET at 50 clients on the same Redis: ratio
#   lifecycle    sync provision -> sync bind -> unbind -> deprovision, sim 0 ms, one gateway and
#                one worker, then two of each
#   sync_cycle   synchronous provision (201) then deprovision (200) of a new instance
#   scale        last_operation over 10,000 of 1,000,000 preloaded finished instances against
#                the same poll with only those 10,000 loaded; Redis memory per instance
#   memory       gateway and worker RSS idle, under 256 connections, with --suspended sync
#                requests waiting on slow sim jobs; cold start to the first 200
#   round_trips  Redis round trips per request per endpoint (tests/integration/test_round_trips.py
#                on the Release build: commands counted per process with MONITOR)
# Each case runs --runs times; the summary gives the median, min and max of the rate and of the
# p50/p99 latencies, the ratios, every unexpected status, and the command lines.
# docs/benchmarks.md explains the cases and records figures. Only loopback is used; every loop
# is bounded; whatever this script starts is stopped by PID when it ends, also on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

runs=5
duration=10
connections=64
threads=2
instances=10000
scale_instances=1000000
suspended=10000
all_cases="catalog,accept,redis,accept_alone,last_op,lifecycle,sync_cycle,scale,memory,round_trips"
cases=$all_cases
build_dir="$top/build-bench"

usage() {
  cat <<'TEXT'
usage: bench/run.sh [options]
  --runs N          runs of each case (default 5); the summary gives medians
  --duration S      seconds of load per run (default 10)
  --connections C   wrk connections, and redis-benchmark clients (default 64)
  --threads T       wrk threads (default 2)
  --instances N     instances preloaded for the last_operation case (default 10000, even)
  --scale-instances N  finished instances preloaded by the scale case (default 1000000)
  --suspended N     sync requests held waiting by the memory case (default 10000)
  --cases LIST      comma-separated subset of (default all):
                    catalog,accept,redis,accept_alone,last_op,lifecycle,sync_cycle,scale,
                    memory,round_trips
  --build-dir DIR   where to build the Release binaries (default build-bench/)
  --quick           a smoke run of every case: --runs 1 --duration 2 --instances 2000
                    --scale-instances 50000 --suspended 1000 (options after it still apply)
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
    --scale-instances) scale_instances="${2:-}"; shift 2 ;;
    --suspended) suspended="${2:-}"; shift 2 ;;
    --quick) runs=1 duration=2 instances=2000 scale_instances=50000 suspended=1000; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option $1" ;;
  esac
done
positive_int "$runs" --runs
positive_int "$duration" --duration
positive_int "$connections" --connections
positive_int "$threads" --threads
positive_int "$instances" --instances
positive_int "$scale_instances" --scale-instances
positive_int "$suspended" --suspended
[ "$scale_instances" -ge 10000 ] || die "--scale-instances must be at least 10000 (the polled set)"
# Even ids are loaded on the instant plan, odd ones on the hold plan: an even count keeps it half.
[ $((instances % 2)) -eq 0 ] || die "--instances must be even"
[ "$threads" -le "$connections" ] || die "--threads must not exceed --connections"
for c in ${cases//,/ }; do
  [[ ",$all_cases," == *",$c,"* ]] || die "unknown case '$c'"
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

# wrk (the load) and nginx (case catalog's reference) are the benchmark's own packages. Debian's
# nginx package starts a service on port 80 where invoke-rc.d allows it; the benchmark never
# uses that one, only an nginx of its own on a free loopback port.
install_missing() {
  scripts/install-deps.sh
  local missing=() p
  for p in wrk nginx; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null || die "run as root to install ${missing[*]}"
      sudo=(sudo)
    fi
    echo "bench: installing ${missing[*]}" >&2
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
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
  # The bare libmicrohttpd reference: one file, built here rather than by CMake, which builds
  # only what osbq ships.
  bare_bin="$build_dir/bare_mhd"
  # shellcheck disable=SC2046 # pkg-config prints several words
  cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -o "$bare_bin" "$top/bench/bare_mhd.c" \
    $(pkg-config --cflags --libs libmicrohttpd) || die "cannot build bench/bare_mhd.c"
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
# osbq_extra_env: more NAME=value words for the daemons of a case (the memory case raises the
# gateway's connection and waiter limits).
osbq_extra_env=()
osbq_env() {
  osbq_env_cmd=(env OSBQ_REDIS_URL="redis://127.0.0.1:$redis_port/0"
    OSBQ_CATALOG="$top/bench/catalog.json" OSBQ_BROKER_USERNAME=bench
    OSBQ_BROKER_PASSWORD_FILE="$workdir/broker-password" OSBQ_LISTEN="127.0.0.1:$http_port"
    OSBQ_BUS_BIND="tcp://127.0.0.1:$bus_port" OSBQ_LOG_LEVEL=warn "${osbq_extra_env[@]}")
}
run_osbq() {
  osbq_env
  exec "${osbq_env_cmd[@]}" "$@"
}

# Each gateway's PID and URL are also kept in gateway_pids and gateway_urls (two-gateway
# stacks); gateway_pid and base_url are the last one's.
gateway_pids=() gateway_urls=() worker_pids=()
start_gateway() {
  http_port=$(free_port)
  bus_port=$(free_port)
  base_url="http://127.0.0.1:$http_port"
  start_process "$stack_dir/gateway-${#gateway_pids[@]}.log" run_osbq "$gateway_bin"
  gateway_pid=$started_pid
  gateway_pids+=("$gateway_pid")
  gateway_urls+=("$base_url")
  wait_until 10 gateway_ready || stack_die "the gateway did not answer /readyz within 10 s"
}

gateway_ready() { curl -fsS --max-time 1 "$base_url/readyz" >/dev/null 2>&1; }

start_worker() {
  start_process "$stack_dir/worker-${#worker_pids[@]}.log" run_osbq "$worker_bin"
  worker_pid=$started_pid
  worker_pids+=("$worker_pid")
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

start_stack() { # $1: name; $2: --no-worker (no worker), or the number of gateways and workers
  stack_dir="$workdir/$1"
  mkdir -p "$stack_dir"
  gateway_pids=() gateway_urls=() worker_pids=()
  start_redis
  local n=1 i
  [[ ${2:-} =~ ^[0-9]+$ ]] && n=$2
  for ((i = 0; i < n; i++)); do start_gateway; done
  if [ "${2:-}" != --no-worker ]; then
    for ((i = 0; i < n; i++)); do start_worker; done
    # Each gateway once through the whole path (which also waits for the workers to find it).
    for ((i = 0; i < n; i++)); do base_url=${gateway_urls[$i]} check_stack; done
  fi
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
      sort "$log" | sed 's/^ts=[^ ]* //' | uniq -c | sort -rn | head -3 | sed 's/^/    /'
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

# Prints a problem now and keeps it for the summary, which then fails the script.
problem() {
  echo "  PROBLEM: $*"
  echo "$*" >>"$workdir/problems.txt"
}

# ---- Measuring ----

service_id="0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f001" # bench/catalog.json, also in bench/lua/common.lua
plan_instant="0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f101"
plan_hold="0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f102"
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

# The wrk command of a case script, into the array wrk_cmd. wrk_threads / wrk_connections
# override --threads / --connections (the two-gateway lifecycle splits them between two wrk).
wrk_command() { # $1 script, $2 duration, rest: script arguments
  local script=$1 seconds=$2
  shift 2
  wrk_cmd=(wrk -t"${wrk_threads:-$threads}" -c"${wrk_connections:-$connections}" -d"${seconds}s"
    --timeout 10s -H "$auth_header" -H "$version_header" -s "$top/bench/lua/$script" "$base_url"
    -- "$@")
}

# A value from the BENCH line wrk's done() printed.
bench_value() { # $1 file, $2 key
  sed -n "s/^BENCH .*\b$2=\([^ ]*\).*/\1/p" "$1"
}

# Reads the BENCH line of wrk output $1 into rate rps p50 p99 max bad sock.
parse_bench() { # $1 output, $2 what (for errors)
  local out=$1 seconds
  grep -q '^BENCH ' "$out" || { cat "$out" >&2; die "no BENCH line from wrk in $2"; }
  seconds=$(bench_value "$out" seconds)
  awk -v s="$seconds" -v d="$duration" 'BEGIN { exit !(s >= 0.9 * d) }' ||
    die "wrk ran $seconds s instead of $duration s in $2 (interrupted?)"
  rate=$(bench_value "$out" rate)
  rps=$(bench_value "$out" rps)
  p50=$(bench_value "$out" p50_ms)
  p99=$(bench_value "$out" p99_ms)
  max=$(bench_value "$out" max_ms)
  bad=$(bench_value "$out" unexpected)
  sock=$(($(bench_value "$out" connect_errors) + $(bench_value "$out" read_errors) +
    $(bench_value "$out" write_errors) + $(bench_value "$out" timeouts)))
}

# Appends the row (rate rps p50 p99 max unexpected socket_errors) to $workdir/<case>.tsv and
# prints it; a row with unexpected answers or socket errors is a problem.
record_row() { # $1 case, $2 run, $3 unit, $4 label; uses rate rps p50 p99 max bad sock
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rate" "$rps" "$p50" "$p99" "$max" "$bad" "$sock" \
    >>"$workdir/$1.tsv"
  printf '  run %d/%d %-8s %10.0f %-9s p50 %7.2f ms  p99 %7.2f ms  max %7.1f ms  unexpected %d  socket errors %d\n' \
    "$2" "$runs" "$4" "$rate" "$3" "$p50" "$p99" "$max" "$bad" "$sock"
  if [ "$bad" != 0 ] || [ "$sock" != 0 ]; then
    problem "$1 run $2: $bad unexpected answers, $sock socket errors"
  fi
}

# One measured wrk run: records the command, keeps the output, records its row.
measure_wrk() { # $1 case, $2 run number, $3 unit, rest: wrk command
  local case=$1 run=$2 unit=$3 out
  shift 3
  out="$workdir/$case-$run.out"
  record_command "$@"
  run_load "$out" "$@" || { cat "$out" >&2; die "wrk failed in $case run $run"; }
  parse_bench "$out" "$case run $run"
  record_row "$case" "$run" "$unit" "${label:-osbq}"
  sed -n 's/^BENCH_UNEXPECTED /    unexpected: /p; s/^BENCH_COUNTS /    answers: /p' "$out"
}

# Two wrk at once, one per gateway of gateway_urls (each with half the threads and
# connections); the row's rate is their sum, its latencies the higher of the two.
measure_wrk_pair() { # $1 case, $2 run, $3 unit, $4 script, $5 id tag, rest: script arguments
  local case=$1 run=$2 unit=$3 script=$4 tag=$5 i pids=() outs=()
  shift 5
  local wrk_threads=$(((threads + 1) / 2)) wrk_connections=$((connections / 2))
  for i in 0 1; do
    base_url=${gateway_urls[$i]}
    # Ids unique per run and per gateway: a repeated id would be a repeated request.
    wrk_command "$script" "$duration" "$@" "tag=${tag}g$i"
    record_command "${wrk_cmd[@]}"
    outs+=("$workdir/$case-$run-$i.out")
    start_process "${outs[$i]}" "${wrk_cmd[@]}"
    pids+=("$started_pid")
  done
  for i in 0 1; do
    wait "${pids[$i]}" || { cat "${outs[$i]}" >&2; die "wrk failed in $case run $run"; }
    forget_pid "${pids[$i]}"
  done
  local r=() q=() a=() b=() m=() u=() k=()
  for i in 0 1; do
    parse_bench "${outs[$i]}" "$case run $run"
    r+=("$rate") q+=("$rps") a+=("$p50") b+=("$p99") m+=("$max") u+=("$bad") k+=("$sock")
  done
  read -r rate rps p50 p99 max <<<"$(awk -v r="${r[*]}" -v q="${q[*]}" -v a="${a[*]}" \
    -v b="${b[*]}" -v m="${m[*]}" 'function hi(s, x) { split(s, x, " "); return x[1] > x[2] ? x[1] : x[2] }
    function sum(s, x) { split(s, x, " "); return x[1] + x[2] }
    BEGIN { print sum(r), sum(q), hi(a), hi(b), hi(m) }')"
  bad=$((u[0] + u[1])) sock=$((k[0] + k[1]))
  record_row "$case" "$run" "$unit" "2x2"
  for i in 0 1; do
    sed -n "s/^BENCH_UNEXPECTED /    gateway $i unexpected: /p; s/^BENCH_COUNTS /    gateway $i answers: /p" "${outs[$i]}"
  done
}

# A short unrecorded run first: the first seconds of a fresh process (page faults, Redis
# growing its tables, connections opening) are not what the runs measure.
warm_up() { # $1 script, rest: script arguments
  local script=$1
  shift
  wrk_command "$script" 2 "$@"
  run_load "$workdir/warmup.out" "${wrk_cmd[@]}" || { cat "$workdir/warmup.out" >&2; die "warm-up failed"; }
}

# A field of redis-benchmark's --csv row counted from the end ($1 = 0: the last), since the
# first field, the command, holds commas: ..., rps, avg, min, p50, p95, p99, max (ms).
csv_field() { awk -F, -v k="$1" '{ v = $(NF - k); gsub(/"/, "", v); print v }'; }

# One redis-benchmark run; the row as measure_wrk's (no unexpected answers: the caller checks).
measure_redis_benchmark() { # $1 case, $2 run, $3 unit, rest: the command
  local case=$1 run=$2 unit=$3 out
  shift 3
  out="$workdir/$case-$run.out"
  run_load "$out" "$@" || { cat "$out" >&2; die "redis-benchmark failed in $case run $run"; }
  rate=$(tail -1 "$out" | csv_field 6)
  rps=$rate
  p50=$(tail -1 "$out" | csv_field 3)
  p99=$(tail -1 "$out" | csv_field 1)
  max=$(tail -1 "$out" | csv_field 0)
  bad=0 sock=0
  record_row "$case" "$run" "$unit" redis
}

# ---- 1 catalog: osbq, nginx and bare libmicrohttpd serving the same bytes ----

start_nginx() { # $1 port, $2 directory holding www/v2/catalog
  local dir=$2
  mkdir -p "$dir/logs"
  # The worker processes run as the user running this script, so they can read its temp dir;
  # two of them, like the gateway's two HTTP threads; no access log, like OSBQ_LOG_LEVEL=warn.
  cat >"$dir/nginx.conf" <<CONF
daemon off;
worker_processes 2;
$([ "$(id -u)" -eq 0 ] && echo "user root;")
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; use epoll; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $dir/tmp-body;
  proxy_temp_path $dir/tmp-proxy;
  fastcgi_temp_path $dir/tmp-fastcgi;
  uwsgi_temp_path $dir/tmp-uwsgi;
  scgi_temp_path $dir/tmp-scgi;
  server {
    listen 127.0.0.1:$1;
    location / { types { } default_type application/json; root $dir/www; }
  }
}
CONF
  start_process "$dir/nginx.out" nginx -e "$dir/logs/error.log" -p "$dir" -c "$dir/nginx.conf"
}

case_catalog() {
  echo "== 1 catalog: GET /v2/catalog (auth + version header), osbq vs nginx vs bare libmicrohttpd"
  start_stack catalog --no-worker
  local body="$stack_dir/www/v2/catalog" code
  mkdir -p "${body%/*}"
  code=$(broker_curl "$base_url/v2/catalog") || true
  [ "$code" = 200 ] || stack_die "catalog: HTTP $code"
  cp "$stack_dir/last" "$body"
  local nginx_port bare_port
  nginx_port=$(free_port)
  start_nginx "$nginx_port" "$stack_dir"
  bare_port=$(free_port)
  start_process "$stack_dir/bare.out" "$bare_bin" "$bare_port" "$body"
  local url
  for url in "http://127.0.0.1:$nginx_port" "http://127.0.0.1:$bare_port"; do
    wait_until 10 curl -fsS --max-time 1 -o "$stack_dir/ref" "$url/v2/catalog" ||
      stack_die "no answer from the reference at $url"
    cmp -s "$body" "$stack_dir/ref" || die "the reference at $url serves other bytes than osbq"
  done
  echo "  the same $(wc -c <"$body") bytes from osbq, nginx ($nginx_port) and bare_mhd ($bare_port)"
  local osbq_url=$base_url run label
  for ((run = 1; run <= runs; run++)); do
    # Side by side: each run measures the three servers one after the other.
    for label in osbq nginx bare; do
      case $label in
        osbq) base_url=$osbq_url ;;
        nginx) base_url="http://127.0.0.1:$nginx_port" ;;
        bare) base_url="http://127.0.0.1:$bare_port" ;;
      esac
      [ "$run" = 1 ] && warm_up catalog.lua
      wrk_command catalog.lua "$duration"
      local case_name=catalog
      [ "$label" = osbq ] || case_name="catalog_$label"
      label=$label measure_wrk "$case_name" "$run" req/s "${wrk_cmd[@]}"
    done
  done
  base_url=$osbq_url
  stop_stack
}

# ---- 2 accept, and the Redis-script ceiling ----

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
  redis_port=$(free_port)
  start_process "$stack_dir/ceiling-redis.log" redis-server --port "$redis_port" --bind 127.0.0.1 \
    --dir "$stack_dir" --dbfilename ceiling.rdb --save '' --appendonly no
  wait_until 10 redis_ping || stack_die "the ceiling's redis-server did not answer PING"
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

# ---- 3 last_operation, and redis-benchmark GET ----

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

# redis-benchmark GET at 50 clients on the stack's Redis: the issue's reference for a
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

# ---- 4 lifecycles, one gateway and one worker, then two of each ----

# --runs runs of one wrk script on the stack, each once the worker has finished the last one's
# jobs (a run never starts with the previous run's backlog).
wrk_series() { # $1 result name, $2 script, $3 unit, $4 tag prefix
  local run
  for ((run = 1; run <= runs; run++)); do
    wait_queue_at_most 0 60
    wrk_command "$2" "$duration" "tag=$4$run"
    measure_wrk "$1" "$run" "$3" "${wrk_cmd[@]}"
  done
}

case_lifecycle() {
  echo "== 4 lifecycle: sync provision, bind, unbind, deprovision (sim 0 ms), 1 gateway + 1 worker"
  start_stack lifecycle
  warm_up lifecycle.lua tag=w
  wrk_series lifecycle lifecycle.lua cycles/s l
  stop_stack
  echo "== 4 lifecycle: the same with 2 gateways + 2 workers (one wrk per gateway, half the load each)"
  start_stack lifecycle2 2
  local run
  for ((run = 1; run <= runs; run++)); do
    wait_queue_at_most 0 60
    measure_wrk_pair lifecycle2 "$run" cycles/s lifecycle.lua "m$run"
  done
  stop_stack
}

case_sync_cycle() {
  echo "== sync_cycle: sync provision (201) + sync deprovision (200) of a new instance, sim 0 ms"
  start_stack sync_cycle
  warm_up sync_cycle.lua tag=w
  wrk_series sync_cycle sync_cycle.lua cycles/s c
  stop_stack
}

# ---- 5 scale: 1,000,000 finished instances ----

used_memory() { rcli INFO memory | sed -n 's/^used_memory:\([0-9]*\)\r$/\1/p'; }

# Clones the finished instance sc-0 into s-<first> .. s-<first+count-1> with redis-cli --pipe.
clone_instances() { # $1 first, $2 count
  local out="$stack_dir/pipe-$1.out"
  record_command python3 "$top/bench/preload_clone.py" "$redis_port" sc-0 "$2" s- "$1" "|" \
    redis-cli -p "$redis_port" --pipe
  python3 "$top/bench/preload_clone.py" "$redis_port" sc-0 "$2" s- "$1" |
    redis-cli -p "$redis_port" --pipe >"$out" 2>&1 || { cat "$out" >&2; die "redis-cli --pipe failed"; }
  grep -q 'errors: 0,' "$out" || { cat "$out" >&2; die "redis-cli --pipe reported errors"; }
}

# "<instance hash bytes> <operation hash bytes>" (MEMORY USAGE) of instance $1 and its last
# operation.
key_bytes() {
  local op
  op=$(rcli HGET "osbq:instance:$1" last_op)
  echo "$(rcli MEMORY USAGE "osbq:instance:$1") $(rcli MEMORY USAGE "osbq:op:$op")"
}

case_scale() {
  local stride=$((scale_instances / 10000))
  echo "== 5 scale: last_operation over 10,000 finished instances, with 10,000 in Redis, then with $scale_instances"
  start_stack scale
  local code
  code=$(broker_curl -X PUT -H 'Content-Type: application/json' -d "$(provision_body "$plan_instant")" \
    "$base_url/v2/service_instances/sc-0") || true
  [ "$code" = 201 ] || stack_die "template provision: HTTP $code (expected 201)"
  # What a live instance keeps once its operation's record has expired (OSBQ_RETENTION_S), and
  # what that record costs until then: with Redis's defaults, and with the
  # hash-max-listpack-value 1024 of the compose file and run-local (one more instance, made
  # under that setting; the setting goes back before the clones).
  local defaults listpack
  defaults=$(key_bytes sc-0)
  rcli CONFIG SET hash-max-listpack-value 1024 >/dev/null
  code=$(broker_curl -X PUT -H 'Content-Type: application/json' -d "$(provision_body "$plan_instant")" \
    "$base_url/v2/service_instances/sc-listpack") || true
  [ "$code" = 201 ] || stack_die "listpack provision: HTTP $code (expected 201)"
  listpack=$(key_bytes sc-listpack)
  rcli CONFIG SET hash-max-listpack-value 64 >/dev/null
  echo "  MEMORY USAGE, bytes (instance hash, its operation's hash): Redis defaults $defaults;" \
    "hash-max-listpack-value 1024: $listpack"
  echo "$defaults $listpack" >"$workdir/scale-keys"
  local mem0 mem2 t0=$SECONDS run
  mem0=$(used_memory)
  clone_instances 0 10000
  echo "  10,000 finished instances cloned in $((SECONDS - t0)) s (redis-cli --pipe)"
  warm_up last_operation.lua tag=s count=10000 stride=1
  for ((run = 1; run <= runs; run++)); do
    wrk_command last_operation.lua "$duration" tag=s count=10000 stride=1
    label=10k measure_wrk scale_small "$run" req/s "${wrk_cmd[@]}"
  done
  t0=$SECONDS
  clone_instances 10000 $((scale_instances - 10000))
  mem2=$(used_memory)
  local per=$(((mem2 - mem0) / scale_instances))
  echo "  $((scale_instances - 10000)) more cloned in $((SECONDS - t0)) s; $(rcli DBSIZE) keys;" \
    "used_memory $mem0 -> $mem2 bytes: $per bytes per finished instance (instance + operation hash)"
  echo "$per" >"$workdir/scale-bytes"
  # The same number of ids, spread over the whole keyspace: s-0, s-<stride>, ...
  warm_up last_operation.lua tag=s count=10000 "stride=$stride"
  for ((run = 1; run <= runs; run++)); do
    wrk_command last_operation.lua "$duration" tag=s count=10000 "stride=$stride"
    label=1M measure_wrk scale_large "$run" req/s "${wrk_cmd[@]}"
  done
  stop_stack
}

# ---- 6 memory: RSS and cold start ----

rss_mb() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

# The sync waits in flight, from the gateway's /metrics.
sync_waits() {
  curl -fsS --max-time 2 "$base_url/metrics" 2>/dev/null |
    sed -n 's/^osbq_sync_waits_in_flight \([0-9.e+]*\)$/\1/p' | awk '{ printf "%d", $1 }'
}

case_memory() {
  echo "== 6 memory: RSS idle, at 256 connections, with $suspended sync requests suspended; cold start"
  # Room for the held requests: connections, waiters and file descriptors above the defaults.
  local fds=$((suspended + 1024))
  [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge "$fds" ] ||
    die "the memory case needs $fds file descriptors (ulimit -Hn: $(ulimit -Hn)); use --suspended"
  ulimit -n "$fds"
  osbq_extra_env=(OSBQ_MAX_CONNECTIONS=$((suspended + 512)) OSBQ_MAX_WAITERS=$((suspended + 512)))
  start_stack memory
  sleep 1
  local gw=$gateway_pid wk=$worker_pid
  printf '%s\t%s\n' "$(rss_mb "$gw")" "$(rss_mb "$wk")" >"$workdir/memory-idle"
  echo "  idle: gateway $(rss_mb "$gw") MB, worker $(rss_mb "$wk") MB RSS"
  # 256 connections: the catalog at full load (RSS read at the end of the run).
  local wrk_connections=256
  wrk_command catalog.lua "$duration"
  record_command "${wrk_cmd[@]}"
  start_process "$workdir/memory-256.out" "${wrk_cmd[@]}"
  local load_pid=$started_pid
  sleep "$(awk -v d="$duration" 'BEGIN { print d * 0.8 }')"
  printf '%s\t%s\n' "$(rss_mb "$gw")" "$(rss_mb "$wk")" >"$workdir/memory-256"
  wait "$load_pid" || die "wrk failed in the memory case"
  forget_pid "$load_pid"
  parse_bench "$workdir/memory-256.out" "memory at 256 connections"
  local at256
  read -r -a at256 <"$workdir/memory-256"
  echo "  at 256 connections (catalog, $(printf %.0f "$rate") req/s; RSS read during the load):" \
    "gateway ${at256[0]} MB, worker ${at256[1]} MB RSS"
  # Suspended: sync provisions on the hold plan (an hour), each on its own connection.
  local body
  body=$(provision_body "$plan_hold")
  local hold_cmd=(python3 "$top/bench/hold_connections.py" "$http_port" "$suspended" held-
    "$auth_header" "$version_header" "$body")
  record_command "${hold_cmd[@]//$auth_header/Authorization: Basic ...}"
  start_process "$workdir/memory-hold.out" "${hold_cmd[@]}"
  local hold_pid=$started_pid i n=0
  # Bounded: 30 s, plus 1 s per 250 requests to send.
  for ((i = 0; i < 300 + suspended / 25; i++)); do
    n=$(sync_waits)
    [ "${n:-0}" -ge "$suspended" ] && break
    kill -0 "$hold_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ "${n:-0}" -ge "$suspended" ] || problem "memory: only ${n:-0} of $suspended sync waits in flight"
  printf '%s\t%s\t%s\n' "$(rss_mb "$gw")" "$(rss_mb "$wk")" "${n:-0}" >"$workdir/memory-held"
  echo "  with ${n:-0} sync requests suspended: gateway $(rss_mb "$gw") MB, worker $(rss_mb "$wk") MB RSS"
  stop_pid "$hold_pid"
  stop_stack
  osbq_extra_env=()
  # Cold start: a fresh gateway against a running Redis, from exec to the first 200.
  stack_dir="$workdir/cold"
  mkdir -p "$stack_dir"
  start_redis
  local run ms
  : >"$workdir/cold.tsv"
  for ((run = 1; run <= runs + 2; run++)); do
    http_port=$(free_port) bus_port=$(free_port)
    osbq_env
    ms=$(python3 "$top/bench/cold_start.py" "$http_port" "$auth_header" "$version_header" \
      "${osbq_env_cmd[@]}" "$gateway_bin") || die "cold start failed"
    echo "$ms" >>"$workdir/cold.tsv"
  done
  echo "  cold start to the first 200 (ms, $((runs + 2)) starts): $(tr '\n' ' ' <"$workdir/cold.tsv")"
  stop_started
}

# ---- 7 round trips: tests/integration/test_round_trips.py on the Release build ----

case_round_trips() {
  echo "== 7 round_trips: Redis commands per request per endpoint (MONITOR, per process)"
  local out="$workdir/round_trips.out"
  record_command env "OSBQ_BUILD_DIR=$build_dir" python3 -m unittest -v test_round_trips
  (cd "$top/tests/integration" && OSBQ_BUILD_DIR="$build_dir" PYTHONDONTWRITEBYTECODE=1 \
    timeout 300 python3 -m unittest -v test_round_trips) >"$out" 2>&1 ||
    problem "round_trips: tests/integration/test_round_trips.py failed (see its output above)"
  grep -o 'ROUND_TRIPS .*' "$out" >"$workdir/round_trips.txt" || true
  sed 's/^ROUND_TRIPS /  /' "$workdir/round_trips.txt"
  grep '^FAIL\|Error' "$out" || true
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

# The median of column $2 of a result file (empty if there is none).
median_of() { [ -s "$1" ] && column_stats "$1" "$2" | cut -d' ' -f1; }

# "name: a / b = ratio (target)" from two medians.
print_ratio() { # $1 label, $2 numerator file, $3 denominator file, $4 column, $5 target text
  local a b
  a=$(median_of "$2" "$4") b=$(median_of "$3" "$4")
  [ -n "$a" ] && [ -n "$b" ] || return 0
  awk -v l="$1" -v a="$a" -v b="$b" -v t="$5" 'BEGIN { printf "%-44s %10.2f  (%.6g / %.6g; target %s)\n", l, a / b, a, b, t }'
}

print_summary() {
  local w=$workdir
  echo
  echo "==== summary: median (min-max) of $runs runs"
  print_machine
  printf '%-34s %9s %-9s %-17s   %-20s   %-20s\n' case rate unit "(min-max)" "p50 ms (min-max)" \
    "p99 ms (min-max)"
  summary_row catalog "1 catalog, osbq (200)" req/s
  summary_row catalog_nginx "1 catalog, nginx" req/s
  summary_row catalog_bare "1 catalog, bare libmicrohttpd" req/s
  summary_row accept "2 provision accept (202)" req/s
  summary_row redis "2 redis-benchmark accept EVALSHA" calls/s
  summary_row accept_alone "2b provision accept, no worker" req/s
  summary_row last_op "3 last_operation (200)" req/s
  summary_row last_op_get "3 redis-benchmark GET -c 50" GET/s
  summary_row lifecycle "4 lifecycles, 1 gateway 1 worker" cycles/s
  summary_row lifecycle2 "4 lifecycles, 2 gateways 2 workers" cycles/s
  summary_row sync_cycle "sync provision+deprovision" cycles/s
  summary_row scale_small "5 last_operation, 10k in Redis" req/s
  summary_row scale_large "5 last_operation, ${scale_instances} in Redis" req/s
  echo
  echo "ratios (medians of runs taken side by side):"
  print_ratio "catalog osbq / nginx" "$w/catalog.tsv" "$w/catalog_nginx.tsv" 1 ">= 1.0"
  print_ratio "catalog osbq / bare libmicrohttpd" "$w/catalog.tsv" "$w/catalog_bare.tsv" 1 ">= 0.8"
  print_ratio "accept / Redis-script ceiling" "$w/accept.tsv" "$w/redis.tsv" 1 ">= 0.5"
  print_ratio "accept, no worker / Redis-script ceiling" "$w/accept_alone.tsv" "$w/redis.tsv" 1 ">= 0.5"
  print_ratio "last_operation / redis-benchmark GET" "$w/last_op.tsv" "$w/last_op_get.tsv" 1 ">= 0.5"
  print_ratio "lifecycles 2x2 / 1x1" "$w/lifecycle2.tsv" "$w/lifecycle.tsv" 1 "(scaling)"
  print_ratio "scale p50: ${scale_instances} / 10k" "$w/scale_large.tsv" "$w/scale_small.tsv" 3 "<= 1.10"
  print_ratio "scale p99: ${scale_instances} / 10k" "$w/scale_large.tsv" "$w/scale_small.tsv" 4 "(p99)"
  if [ -s "$w/sync_cycle.tsv" ]; then
    printf 'sync_cycle counts two requests per cycle: median %.0f req/s\n' "$(median_of "$w/sync_cycle.tsv" 2)"
  fi
  if [ -s "$w/lifecycle.tsv" ]; then
    printf 'lifecycles count four requests per cycle: median %.0f req/s (1x1); target >= 3000 cycles/s\n' \
      "$(median_of "$w/lifecycle.tsv" 2)"
  fi
  [ -s "$w/accept.tsv" ] && printf 'accept p99 at %d connections: %.2f ms (target <= 5 ms)\n' \
    "$connections" "$(median_of "$w/accept.tsv" 4)"
  [ -s "$w/scale-bytes" ] && echo "Redis memory per finished instance: $(cat "$w/scale-bytes") bytes (target <= 1024)"
  if [ -s "$w/scale-keys" ]; then
    local d_inst d_op l_inst l_op
    read -r d_inst d_op l_inst l_op <"$w/scale-keys"
    echo "Redis per live instance once its operation expired (MEMORY USAGE of the instance hash):" \
      "$d_inst bytes with Redis defaults, $l_inst with hash-max-listpack-value 1024 (target <= 1024);" \
      "its operation's record until OSBQ_RETENTION_S: $d_op / $l_op bytes"
  fi
  if [ -s "$w/memory-idle" ]; then
    echo "RSS MB (gateway, worker): idle $(tr '\t' ' ' <"$w/memory-idle"); at 256 connections" \
      "$(tr '\t' ' ' <"$w/memory-256"); suspended (gateway, worker, waits) $(tr '\t' ' ' <"$w/memory-held")" \
      "(target: gateway <= 32 MB)"
  fi
  [ -s "$w/cold.tsv" ] && printf 'cold start to the first 200: median %.1f ms (target <= 50 ms)\n' \
    "$(sort -g "$w/cold.tsv" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
  if [ -s "$w/round_trips.txt" ]; then
    echo "Redis round trips (gateway commands per request; worker commands in the window):"
    sed 's/^ROUND_TRIPS /  /' "$w/round_trips.txt"
  fi
  echo
  echo "commands (the osbq stacks: redis-server --bind 127.0.0.1 --save '' --appendonly no;"
  echo "osbq-gateway and osbq-worker from $build_dir/bin with OSBQ_LOG_LEVEL=warn; see bench/run.sh):"
  sed 's/^/  /' "$w/commands.txt"
  echo
  if [ -s "$w/problems.txt" ]; then
    echo "PROBLEMS (unexpected answers, socket errors, stopped daemons, backlogs):"
    sed 's/^/  /' "$w/problems.txt"
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
  if want_case catalog; then case_catalog; fi
  # The Redis-script ceiling is measured beside the accept runs: "redis" alone runs both.
  if want_case accept || want_case redis; then case_accept; fi
  if want_case accept_alone; then case_accept_alone; fi
  if want_case last_op; then case_last_op; fi
  if want_case lifecycle; then case_lifecycle; fi
  if want_case sync_cycle; then case_sync_cycle; fi
  if want_case scale; then case_scale; fi
  if want_case memory; then case_memory; fi
  if want_case round_trips; then case_round_trips; fi
  local status=0
  print_summary || status=1
  echo "bench: done in $((SECONDS - t0)) s"
  return "$status"
}

main
