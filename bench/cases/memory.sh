# shellcheck shell=bash
# Case memory of bench/run.sh (sourced): RSS and cold start.

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
  start_redis_only "$stack_dir"
  local run ms
  : >"$workdir/cold.tsv"
  for ((run = 1; run <= runs + 2; run++)); do
    ms=$(python3 "$top/bench/cold_start.py" "$build_dir" "$launched_redis_port" \
      "$workdir/broker-password" "$stack_dir" "$auth_header" "$version_header") ||
      die "cold start failed"
    echo "$ms" >>"$workdir/cold.tsv"
  done
  echo "  cold start to the first 200 (ms, $((runs + 2)) starts): $(tr '\n' ' ' <"$workdir/cold.tsv")"
  stop_started
}

