#!/usr/bin/env bash
# Runs a gateway and a worker (RelWithDebInfo, no sanitizers) under valgrind through a whole
# synchronous lifecycle (provision, bind, fetch, unbind, async deprovision) against a
# redis-server of its own on loopback, with every hardening setting on (HTTPS, sealed
# credentials, the CurveZMQ bus, a policy), then stops them and prints valgrind's verdicts.
# Exit 1 on any error.
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
# The hardening settings (docs/security.md), so their code runs under valgrind too.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
"$build/bin/osbq-ctl" secret-key >"$work/secret-keys"
mkdir -p "$work/bus/clients"
"$build/bin/osbq-ctl" bus-cert "$work/bus/gateways" >/dev/null
"$build/bin/osbq-ctl" bus-cert "$work/bus/worker" >/dev/null
cp "$work/bus/worker" "$work/bus/clients/"
echo '{"quotas": [{"name": "total", "max_instances": 10}]}' >"$work/policy.json"
chmod 0600 "$work/secret-keys"
export OSBQ_TLS_CERT="$work/cert.pem" OSBQ_TLS_KEY="$work/key.pem"
export OSBQ_SECRET_KEY_FILE="$work/secret-keys" OSBQ_POLICY="$work/policy.json"
export OSBQ_BUS_CURVE_SERVER_CERT="$work/bus/gateways_secret"
export OSBQ_BUS_CURVE_CLIENTS_DIR="$work/bus/clients" OSBQ_BUS_CURVE_CLIENT_CERT="$work/bus/worker_secret"
vg=(valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9)
"${vg[@]}" "$build/bin/osbq-gateway" >"$work/gateway.log" 2>&1 &
gateway=$!
# One slot: the concurrent requests below wait for it before they begin (decision 0045).
OSBQ_BUS_CURVE_SERVER_CERT="$work/bus/gateways" OSBQ_WORKER_CONCURRENCY=1 \
  "${vg[@]}" "$build/bin/osbq-worker" >"$work/worker.log" 2>&1 &
worker=$!
for _ in $(seq 1 100); do
  curl -fs --cacert "$work/cert.pem" "https://127.0.0.1:$http_port/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
sleep 3 # the worker finds the gateway through the registry
base="https://127.0.0.1:$http_port/v2/service_instances"
h=(-s -m 30 -o /dev/null -w '%{http_code} ' --cacert "$work/cert.pem" -u u:p
   -H 'X-Broker-API-Version: 2.17' -H 'Content-Type: application/json')
svc=5f1c7a2e-3b8d-4c6a-9e41-0d2b7f9a1c11; plan=8a3e0c5d-6f27-4b19-a8d4-2c9e1f7b3a21
body="{\"service_id\":\"$svc\",\"plan_id\":\"$plan\",\"context\":{}}"
q="service_id=$svc&plan_id=$plan"
codes=$(curl "${h[@]}" -X PUT -d "$body" "$base/vg1"
        curl "${h[@]}" -X PUT -d "$body" "$base/vg1/service_bindings/b1"
        curl "${h[@]}" "$base/vg1/service_bindings/b1"
        curl "${h[@]}" -X DELETE "$base/vg1/service_bindings/b1?$q")
# An asynchronous deprovision, then polls naming its operation (the gateway reads it alone,
# docs/decisions/0043): in progress (200) or deleted (410) as they come.
accepted=$(curl -s -m 30 -w ' %{http_code}' --cacert "$work/cert.pem" -u u:p \
  -H 'X-Broker-API-Version: 2.17' -X DELETE "$base/vg1?$q&accepts_incomplete=true")
codes+="${accepted##* } "
op=$(printf '%s' "${accepted% *}" | python3 -c 'import json, sys; print(json.load(sys.stdin)["operation"])')
polls=$(for _ in 1 2 3; do curl "${h[@]}" "$base/vg1/last_operation?operation=$op"; done)
# Four synchronous provisions at once, then their deprovisions: on the worker's one slot, the
# requests that find it taken wait for it in the gateway's lane, then begin handed to it.
at_once() {
  for n in 2 3 4 5; do
    curl "${h[@]}" -X "$1" ${2:+-d "$2"} "$base/vg$n${3:+?$3}" >"$work/at-once-$n" &
  done
  wait
  cat "$work/at-once-"{2,3,4,5}
}
together=$(at_once PUT "$body" "")
together+=$(at_once DELETE "" "$q")
echo "statuses: $codes (expected: 201 201 200 200 202), polls: $polls (each 200 or 410)," \
  "at once: $together (expected: 201 x4, 200 x4)"
sleep 2
kill "$gateway" "$worker"
status=0
wait "$gateway" || status=1
wait "$worker" || status=1
grep -h "ERROR SUMMARY" "$work/gateway.log" "$work/worker.log"
[ "$codes" = "201 201 200 200 202 " ] || status=1
for code in $polls; do [ "$code" = 200 ] || [ "$code" = 410 ] || status=1; done
[ "$together" = "201 201 201 201 200 200 200 200 " ] || status=1
exit $status
