#!/usr/bin/env bash
# Runs a gateway and a worker (RelWithDebInfo, no sanitizers) under valgrind through a whole
# synchronous lifecycle (provision, bind, unbind, async deprovision) against a redis-server of
# its own on loopback, then stops them and prints valgrind's verdicts. Exit 1 on any error.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
command -v valgrind >/dev/null || { echo "valgrind-check: install valgrind" >&2; exit 1; }
build=build-valgrind
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOSBQ_BUILD_TESTS=OFF -DOSBQ_SANITIZE= \
  >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

work=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
redis_port=$(free_port); http_port=$(free_port); bus_port=$(free_port)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --dir "$work" >/dev/null &
pids+=($!)
export OSBQ_BROKER_USERNAME=u OSBQ_BROKER_PASSWORD=p OSBQ_REDIS_URL="redis://127.0.0.1:$redis_port"
export OSBQ_LISTEN="127.0.0.1:$http_port" OSBQ_BUS_BIND="tcp://127.0.0.1:$bus_port"
export OSBQ_CATALOG="$top/examples/catalog.json" OSBQ_LOG_LEVEL=warn OSBQ_WORKER_CONCURRENCY=2
vg=(valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9)
"${vg[@]}" "$build/bin/osbq-gateway" >"$work/gateway.log" 2>&1 &
gateway=$!
"${vg[@]}" "$build/bin/osbq-worker" >"$work/worker.log" 2>&1 &
worker=$!
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$http_port/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
sleep 3 # the worker finds the gateway through the registry
base="http://127.0.0.1:$http_port/v2/service_instances"
h=(-s -m 30 -o /dev/null -w '%{http_code} ' -u u:p -H 'X-Broker-API-Version: 2.17'
   -H 'Content-Type: application/json')
svc=5f1c7a2e-3b8d-4c6a-9e41-0d2b7f9a1c11; plan=8a3e0c5d-6f27-4b19-a8d4-2c9e1f7b3a21
body="{\"service_id\":\"$svc\",\"plan_id\":\"$plan\",\"context\":{}}"
q="service_id=$svc&plan_id=$plan"
codes=$(curl "${h[@]}" -X PUT -d "$body" "$base/vg1"
        curl "${h[@]}" -X PUT -d "$body" "$base/vg1/service_bindings/b1"
        curl "${h[@]}" -X DELETE "$base/vg1/service_bindings/b1?$q"
        curl "${h[@]}" -X DELETE "$base/vg1?$q&accepts_incomplete=true")
echo "statuses: $codes (expected: 201 201 200 202)"
sleep 2
kill "$gateway" "$worker"
status=0
wait "$gateway" || status=1
wait "$worker" || status=1
grep -h "ERROR SUMMARY" "$work/gateway.log" "$work/worker.log"
[ "$codes" = "201 201 200 202 " ] || status=1
exit $status
