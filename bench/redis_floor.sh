#!/usr/bin/env bash
# What one Redis call costs Redis's own CPU on this machine, alone and in a batch (issue 29,
# docs/capacity.md "Where Redis's time goes"): a redis-server of its own on a free loopback port
# (no persistence), then redis-benchmark with 4 clients and N requests of each command, one at a
# time (-P 1) and 16 per write (-P 16): PING, HSET, EVALSHA of an empty script, and EVALSHA of
# a claim-sized script (an HMGET of 8 fields, an HSET of 3 and a ZADD, like claim.lua), and
# EVALSHA of the end of finish.lua that announces an outcome (cjson.encode of the outcome and a
# PUBLISH to a channel a redis-cli SUBSCRIBE listens on): against the empty script, what
# announcing over the bus instead would save Redis (docs/capacity.md). Prints
# microseconds of Redis CPU (INFO cpu, user + sys) per call. The difference between the two
# columns is what a call pays for travelling alone: the read, the reply's write, the wake-up.
#
# usage: bench/redis_floor.sh [N]   (default 100000)
set -euo pipefail
n="${1:-100000}"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
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
printf '%-28s %14s %14s\n' "command" "alone (us)" "16 per write"
for name in PING HSET "EVALSHA empty" "EVALSHA claim-sized" "EVALSHA announce"; do
    case "$name" in
    PING) args=(PING) ;;
    HSET) args=(HSET h f v) ;;
    "EVALSHA empty") args=(EVALSHA "$empty" 0) ;;
    "EVALSHA announce") args=(EVALSHA "$announce" 1 events:gw 0123456789abcdef__rand_int__) ;;
    *) args=(EVALSHA "$claim" 2 "op:__rand_int__" queue w1 12345 __rand_int__) ;;
    esac
    row=()
    for pipeline in 1 16; do
        before=$(cpu_s)
        redis-benchmark -p "$port" -q -n "$n" -c 4 -P "$pipeline" -r 100000 "${args[@]}" >/dev/null
        after=$(cpu_s)
        row+=("$(python3 -c "print(round(($after - $before) / $n * 1e6, 2))")")
    done
    printf '%-28s %14s %14s\n' "$name" "${row[0]}" "${row[1]}"
done
