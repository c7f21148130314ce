#!/usr/bin/env bash
# The run command: installs what is missing, builds, then runs a local broker on loopback: its own
# redis-server (data in var/, which git ignores), one worker and one gateway on
# http://127.0.0.1:8080 with the example catalog. Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

port=8080
while [ $# -gt 0 ]; do
  case "$1" in
    --port) port="$2"; shift 2 ;;
    -h|--help) echo "usage: scripts/run-local.sh [--port N]   (HTTP port, default 8080)"; exit 0 ;;
    *) echo "run-local: unknown option $1" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh
scripts/build.sh

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port_from() {
  local p=$1
  while port_in_use "$p"; do p=$((p + 1)); done
  echo "$p"
}
if port_in_use "$port"; then
  echo "run-local: 127.0.0.1:$port is in use; stop what holds it or pass --port N" >&2
  exit 1
fi

var="$top/var"
mkdir -p "$var/redis"
# The password is made once and kept, so a platform registered against this broker keeps working.
if [ ! -s "$var/broker-password" ]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$var/broker-password")
fi
redis_port=$(free_port_from 6390)
target_port=$(free_port_from $((redis_port + 1)))
bus_port=$(free_port_from 5555)
# The `redis` service's shared server (see the README walk-through); its admin password is made
# once and kept, like the broker's.
if [ ! -s "$var/target-password" ]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$var/target-password")
fi
mkdir -p "$var/redis-target"

pids=()
stopping=0
stop_all() {
  stopping=1
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "run-local: stopped" >&2
}
trap stop_all INT TERM EXIT

redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$var/redis" \
  --appendonly yes --appendfsync everysec --save "" --logfile "$var/redis.log" &
pids+=($!)
redis-server --port "$target_port" --bind 127.0.0.1 --dir "$var/redis-target" \
  --appendonly yes --appendfsync everysec --save "" --logfile "$var/redis-target.log" \
  --requirepass "$(cat "$var/target-password")" &
pids+=($!)

export OSBQ_REDIS_URL="redis://127.0.0.1:$redis_port/0"
export OSBQ_REDIS_TARGET_URL="redis://:$(cat "$var/target-password")@127.0.0.1:$target_port/0"
export OSBQ_CATALOG="${OSBQ_CATALOG:-$top/examples/catalog.json}"
export OSBQ_BROKER_USERNAME=osbq
export OSBQ_BROKER_PASSWORD_FILE="$var/broker-password"
export OSBQ_LISTEN="127.0.0.1:$port"
export OSBQ_BUS_BIND="tcp://127.0.0.1:$bus_port"

build/bin/osbq-worker &
pids+=($!)
build/bin/osbq-gateway &
pids+=($!)

for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
password=$(cat "$var/broker-password")
cat <<TEXT

osbq is running on http://127.0.0.1:$port (Redis on 127.0.0.1:$redis_port, data in var/redis;
the redis service's shared server on 127.0.0.1:$target_port)
  user name: osbq
  password:  $password
Try:
  curl -u 'osbq:$password' -H 'X-Broker-API-Version: 2.17' http://127.0.0.1:$port/v2/catalog
Ctrl-C stops everything.

TEXT
wait -n "${pids[@]}" || true
[ "$stopping" = 1 ] || echo "run-local: a process exited; stopping the rest" >&2
