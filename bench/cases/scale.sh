# shellcheck shell=bash
# Case scale of bench/run.sh (sourced): 1,000,000 finished instances.

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

