# shellcheck shell=bash
# Measuring helpers of bench/run.sh (sourced): the requests, the load generators (wrk and
# redis-benchmark) run and parsed, one row per run in $workdir/<case>.tsv (rate rps p50 p99 max
# unexpected socket_errors) for bench/lib/report.py, the command lines in $workdir/commands.txt,
# and the problems in $workdir/problems.txt.

# Prints a problem now and keeps it for the summary, which then fails the script.
problem() {
  echo "  PROBLEM: $*"
  echo "$*" >>"$workdir/problems.txt"
}

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

# A case of one gateway and one worker: the stack, a warm-up, then wrk_series of the script
# named after the case.
wrk_case() { # $1 case (its stack, its results, its script <case>.lua), $2 unit, $3 tag prefix
  start_stack "$1"
  warm_up "$1.lua" tag=w
  wrk_series "$1" "$1.lua" "$2" "$3"
  stop_stack
}

