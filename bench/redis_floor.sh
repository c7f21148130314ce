#!/usr/bin/env bash
# What one Redis call costs Redis's own CPU on this machine, alone and in a batch (issue 29,
# docs/capacity.md "Where Redis's time goes"): a redis-server of its own on a free loopback port
# (no persistence), then redis-benchmark with 4 clients and N requests of each command, one at a
# time (-P 1) and 16 per write (-P 16): PING, HSET, EVALSHA of an empty script, and EVALSHA of
# a claim-sized script (an HMGET of 8 fields, an HSET of 3 and a ZADD, like claim.lua), and
# EVALSHA of the end of finish.lua that announces an outcome (cjson.encode of the outcome and a
# PUBLISH to a channel a redis-cli SUBSCRIBE listens on): against the empty script, what
# announcing over the bus instead would save Redis (docs/capacity.md); and EVALSHA of the empty
# script with a provision's begin arguments (5 keys and 23 arguments of begin_instance.lua's
# sizes, a 180-byte job among them): what passing them into Lua costs; and HSET of a new
# operation's record (a key of its own each time) with a handed provision's 14 fields, against
# the same bytes in one field: what a record's field count costs. Prints
# microseconds of Redis CPU (INFO cpu, user + sys) per call. The difference between the two
# columns is what a call pays for travelling alone: the read, the reply's write, the wake-up.
#
# usage: bench/redis_floor.sh [N]   (default 100000)
set -euo pipefail
n="${1:-100000}"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
# As the compose file runs it: a record holding a job stays a listpack.
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
    --hash-max-listpack-value 1024 \
    --logfile "$dir/redis.log" &
pid=$!
subscriber=
trap 'kill $subscriber "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$port" SUBSCRIBE events:gw >/dev/null &
subscriber=$!
cli() { redis-cli -p "$port" "$@"; }
cpu_s() { cli info cpu | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.6f", s }'; }
empty=$(cli script load "return 1")
claim=$(cli script load "local r = redis.call('HMGET', KEYS[1], 'state', 'lease', 'a', 'b', 'c', 'd', 'e', 'f')
redis.call('HSET', KEYS[1], 'state', 'running', 'worker', ARGV[1], 'lease', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return {1, '', tonumber(ARGV[2])}")
announce=$(cli script load "local outcome = cjson.encode({operation = ARGV[1], state = 'succeeded',
  description = 'Provisioned.', dashboard_url = '', metadata = '', instance_usable = true,
  update_repeatable = true})
redis.call('PUBLISH', KEYS[1], outcome)
return 1")
# A provision's begin arguments (store/lua/begin_instance.lua's KEYS and ARGV, in order).
id=0f8e2a4c-1b7d-4e55-9a3c-6d2f8b1e7a90
job=$(printf 'j%.0s' $(seq 180))
begin_args=(5 "t:instance:$id" "t:op:__rand_int__" t:queue "t:waiters:__rand_int__"
    "t:bindings:$id" provision __rand_int__ 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b
    1764280000000 gw-1 svc-1 plan-1 '{}' '{}' '' '' "$job" 1764280030000 '' t: "$id" 2.17 ''
    default default/org-1 '' worker-1 1764280060000)
# A handed provision's operation record (begin_instance.lua and lib/handover.lua's fields).
op_fields=(kind provision instance "$id" plan_id plan-1 state running created_ms 1764280000000
    api 2.17 job "$job" tenant default/org-1 worker worker-1 lease_until 1764280060000 claims 1
    started_ms 1764280000000 waited gw-1 platform cf)
op_packed=$(IFS='|'; echo "${op_fields[*]}")
printf '%-28s %14s %14s\n' "command" "alone (us)" "16 per write"
for name in PING HSET "EVALSHA empty" "EVALSHA empty, begin args" "EVALSHA claim-sized" \
    "EVALSHA announce" "HSET new op, 14 fields" "HSET new op, 1 field"; do
    keyspace=100000
    case "$name" in
    PING) args=(PING) ;;
    HSET) args=(HSET h f v) ;;
    "EVALSHA empty") args=(EVALSHA "$empty" 0) ;;
    "EVALSHA empty, begin args") args=(EVALSHA "$empty" "${begin_args[@]}") ;;
    "HSET new op, 14 fields") args=(HSET "op:__rand_int__" "${op_fields[@]}") keyspace=1000000000 ;;
    "HSET new op, 1 field") args=(HSET "op:__rand_int__" record "$op_packed") keyspace=1000000000 ;;
    "EVALSHA announce") args=(EVALSHA "$announce" 1 events:gw 0123456789abcdef__rand_int__) ;;
    *) args=(EVALSHA "$claim" 2 "op:__rand_int__" queue w1 12345 __rand_int__) ;;
    esac
    row=()
    for pipeline in 1 16; do
        before=$(cpu_s)
        redis-benchmark -p "$port" -q -n "$n" -c 4 -P "$pipeline" -r "$keyspace" "${args[@]}" >/dev/null
        after=$(cpu_s)
        row+=("$(python3 -c "print(round(($after - $before) / $n * 1e6, 2))")")
    done
    printf '%-28s %14s %14s\n' "$name" "${row[0]}" "${row[1]}"
done
