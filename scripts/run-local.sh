#!/usr/bin/env bash
# The run command: installs what is missing, builds, then runs a local broker on loopback: its own
# redis-server (data in var/, which git ignores), workers and gateways (one of each by default;
# the gateways on consecutive ports from http://127.0.0.1:8080) with the example catalog: the
# compose topology as plain processes. Ctrl-C stops everything it started.
set -euo pipefail
caller_dir=$(pwd)
cd "$(dirname "$0")/.."
top=$(pwd)

usage() {
  cat <<'TEXT'
usage: scripts/run-local.sh [--port N] [--gateways N] [--workers M] [--catalog FILE] [--var DIR]
                            [--no-install]

  --port N        HTTP port of the first gateway (default 8080); the gateways listen on
                  127.0.0.1:N, N+1, ..., and all those ports must be free
  --gateways N    number of gateways, 1 to 16 (default 1)
  --workers M     number of workers, 1 to 16 (default 1)
  --catalog FILE  the catalog the gateways serve and the workers run (default
                  $OSBQ_CATALOG, else examples/catalog.json); e.g.
                  examples/exec/catalog-postgres.json with PG* in the environment
                  (docs/backends.md, "Running the PostgreSQL example locally")
  --var DIR       where Redis keeps its data, the logs, the broker password and the key
                  sealing binding credentials (secret-keys) are
                  (default var/ in the repository, which git ignores)
  --no-install    skip scripts/install-deps.sh and scripts/build.sh: run the binaries of an
                  existing build, $OSBQ_BUILD_DIR/bin (default build/bin)

With more than one gateway or worker, each output line of a gateway or worker starts with its
name ([gateway-1], [worker-2], ...). Ctrl-C or SIGTERM stops every process it started; the exit
status is 0 when all of them stopped cleanly. With OSBQ_TLS_CERT and OSBQ_TLS_KEY in the
environment, the gateways serve HTTPS with that certificate (docs/security.md).
TEXT
}

die_usage() { echo "run-local: $*" >&2; echo "run-local: see scripts/run-local.sh --help" >&2; exit 2; }
# shellcheck source=scripts/options.sh
. scripts/options.sh

port=8080
gateways=1
workers=1
var="$top/var"
catalog="${OSBQ_CATALOG:-$top/examples/catalog.json}"
install=1
while [ $# -gt 0 ]; do
  case "$1" in
    --port|--gateways|--workers|--var|--catalog)
      [ $# -ge 2 ] || die_usage "$1 needs a value"
      case "$1" in
        --port) port="$2" ;;
        --gateways) gateways="$2" ;;
        --workers) workers="$2" ;;
        --var) var="$2" ;;
        --catalog) catalog="$2" ;;
      esac
      shift 2 ;;
    --no-install) install=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die_usage "unknown option $1" ;;
  esac
done
check_count "$port" --port 65535
check_count "$gateways" --gateways 16
check_count "$workers" --workers 16
port=$((10#$port)); gateways=$((10#$gateways)); workers=$((10#$workers))
last_port=$((port + gateways - 1))
[ "$last_port" -le 65535 ] || die_usage "--port $port with --gateways $gateways goes past port 65535"
[ -n "$var" ] || die_usage "--var needs a directory"
case "$var" in
  /*) ;;
  *) var="$caller_dir/$var" ;;
esac
[ -n "$catalog" ] || die_usage "--catalog needs a file"
case "$catalog" in
  /*) ;;
  *) catalog="$caller_dir/$catalog" ;;
esac
[ -r "$catalog" ] && [ -f "$catalog" ] || die_usage "--catalog: cannot read the file $catalog"

if [ "$install" = 1 ]; then
  scripts/install-deps.sh
  scripts/build.sh
  bin="$top/build/bin"
else
  bin="${OSBQ_BUILD_DIR:-$top/build}/bin"
fi
for b in osbq-gateway osbq-worker osbq-ctl; do
  if [ ! -x "$bin/$b" ]; then
    echo "run-local: $bin/$b is missing; build first (scripts/build.sh) or drop --no-install" >&2
    exit 1
  fi
done

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

busy=()
for ((i = 0; i < gateways; i++)); do
  if port_in_use $((port + i)); then busy+=($((port + i))); fi
done
if [ "${#busy[@]}" -gt 0 ]; then
  if [ "$gateways" = 1 ]; then
    echo "run-local: 127.0.0.1:$port is in use; stop what holds it or pass --port N" >&2
  else
    echo "run-local: the gateways need ports $port to $last_port on 127.0.0.1; in use: ${busy[*]};" \
      "stop what holds them or pass --port N" >&2
  fi
  exit 1
fi

# pick_port FROM: sets `picked` to the first port from FROM on that nothing listens on and that
# this script has not handed out yet (the gateways' HTTP ports included).
taken=" $(seq -s ' ' "$port" "$last_port") "
pick_port() {
  local p=$1
  while [ "$p" -le 65535 ] && { [[ "$taken" == *" $p "* ]] || port_in_use "$p"; }; do
    p=$((p + 1))
  done
  if [ "$p" -gt 65535 ]; then
    echo "run-local: no free port from $1 up" >&2
    exit 1
  fi
  taken="$taken$p "
  picked=$p
}

mkdir -p "$var/redis" "$var/redis-target"
var=$(cd "$var" && pwd)
# The password is made once and kept, so a platform registered against this broker keeps working.
if [ ! -s "$var/broker-password" ]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$var/broker-password")
fi
# The `redis` service's shared server (see the README walk-through); its admin password is made
# once and kept, like the broker's.
if [ ! -s "$var/target-password" ]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$var/target-password")
fi
# The key that seals binding credentials in Redis (OSBQ_SECRET_KEY_FILE, docs/security.md), made
# once and kept: bindings stored under it stay readable across runs.
if [ ! -s "$var/secret-keys" ]; then
  (umask 077; { head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n'; echo; } >"$var/secret-keys")
fi
# The job bus's CurveZMQ keys (docs/security.md, "The job bus"), made once and kept like the
# passwords: the gateways' pair, and one pair the workers share, admitted through clients/.
bus_keys="$var/bus"
mkdir -p "$bus_keys/clients"
for pair in gateways worker; do
  if [ ! -s "$bus_keys/${pair}_secret" ]; then
    rm -f "$bus_keys/$pair"
    "$bin/osbq-ctl" bus-cert "$bus_keys/$pair" >/dev/null
  fi
done
cp "$bus_keys/worker" "$bus_keys/clients/worker"
pick_port 6390; redis_port=$picked
pick_port $((redis_port + 1)); target_port=$picked
bus_ports=()
next=5555
for ((i = 0; i < gateways; i++)); do
  pick_port "$next"; bus_ports+=("$picked"); next=$((picked + 1))
done

# Prefix each line of the gateways' and workers' output with their name when there are several.
prefix=0
if [ "$gateways" -gt 1 ] || [ "$workers" -gt 1 ]; then prefix=1; fi

daemons=()      # PIDs of the gateways and workers
daemon_names=()
servers=()      # PIDs of the redis-servers
server_names=()
filters=()      # PIDs of the sed processes that prefix output lines
stopping=0
stop_status=0

# stop PID...: SIGTERM to each, then waits for each; stop_status becomes 1 if one did not exit 0.
stop() {
  local pid status
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    status=0
    wait "$pid" 2>/dev/null || status=$?
    # 127: already reaped (it ended before the stop, which was reported then).
    if [ "$status" != 0 ] && [ "$status" != 127 ]; then stop_status=1; fi
  done
}

# Stops gateways and workers first (while Redis still answers, so they leave nothing half done),
# then the redis-servers. A second signal meanwhile kills what is left.
stop_all() {
  [ "$stopping" = 0 ] || return 0
  stopping=1
  trap - EXIT
  trap 'kill_all' INT TERM HUP
  stop "${daemons[@]}"
  stop "${servers[@]}"
  local pid
  for pid in "${filters[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$stop_status" = 0 ]; then
    echo "run-local: stopped" >&2
  else
    echo "run-local: stopped; a process did not exit cleanly (see its output above)" >&2
  fi
}
# shellcheck disable=SC2317  # called from a trap
kill_all() {
  echo "run-local: killing what is left" >&2
  local pid
  for pid in "${daemons[@]}" "${servers[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  stop_status=1
}
# shellcheck disable=SC2317  # called from a trap
on_signal() { stop_all; exit "$stop_status"; }
trap on_signal INT TERM HUP
trap stop_all EXIT

# start_daemon NAME COMMAND...: runs COMMAND in the background, its output prefixed by [NAME]
# when there are several gateways or workers.
start_daemon() {
  local name=$1 fd
  shift
  if [ "$prefix" = 1 ]; then
    # sed ignores SIGINT so that it prints the last lines of its process after a Ctrl-C.
    exec {fd}> >(trap '' INT; exec sed -u "s/^/[$name] /")
    filters+=($!)
    "$@" >&"$fd" 2>&1 &
    daemons+=($!)
    exec {fd}>&-
  else
    "$@" &
    daemons+=($!)
  fi
  daemon_names+=("$name")
}

target_password=$(cat "$var/target-password")
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$var/redis" \
  --appendonly yes --appendfsync everysec --save "" --hash-max-listpack-value 1024 \
  --logfile "$var/redis.log" &
servers+=($!); server_names+=(redis)
redis-server --port "$target_port" --bind 127.0.0.1 --dir "$var/redis-target" \
  --appendonly yes --appendfsync everysec --save "" --logfile "$var/redis-target.log" \
  --requirepass "$target_password" &
servers+=($!); server_names+=(redis-target)

export OSBQ_REDIS_URL="redis://127.0.0.1:$redis_port/0"
export OSBQ_REDIS_TARGET_URL="redis://:$target_password@127.0.0.1:$target_port/0"
export OSBQ_CATALOG="$catalog"
export OSBQ_BROKER_USERNAME=osbq
export OSBQ_BROKER_PASSWORD_FILE="$var/broker-password"
export OSBQ_SECRET_KEY_FILE="$var/secret-keys"
unset OSBQ_BROKER_PASSWORD OSBQ_LISTEN OSBQ_BUS_BIND OSBQ_BUS_ADVERTISE
# OSBQ_TLS_CERT and OSBQ_TLS_KEY in the environment: the gateways serve HTTPS only. The probe
# below only asks whether the processes started here answer, so it skips verification.
scheme=http
probe_tls=()
if [ -n "${OSBQ_TLS_CERT:-}" ]; then scheme=https; probe_tls=(--insecure); fi
unset OSBQ_BUS_CURVE_SERVER_CERT OSBQ_BUS_CURVE_CLIENT_CERT OSBQ_BUS_CURVE_CLIENTS_DIR

# Gateways first: workers find them in Redis, and connect to any started later within ~2 s.
for ((i = 0; i < gateways; i++)); do
  start_daemon "gateway-$((i + 1))" env OSBQ_LISTEN="127.0.0.1:$((port + i))" \
    OSBQ_BUS_BIND="tcp://127.0.0.1:${bus_ports[i]}" \
    OSBQ_BUS_CURVE_SERVER_CERT="$bus_keys/gateways_secret" \
    OSBQ_BUS_CURVE_CLIENTS_DIR="$bus_keys/clients" "$bin/osbq-gateway"
done
for ((i = 1; i <= workers; i++)); do
  start_daemon "worker-$i" env OSBQ_BUS_CURVE_SERVER_CERT="$bus_keys/gateways" \
    OSBQ_BUS_CURVE_CLIENT_CERT="$bus_keys/worker_secret" "$bin/osbq-worker"
done

# exited: true if a process this script started has ended (bash reaps its children as they end).
exited() {
  local pid
  for pid in "${daemons[@]}" "${servers[@]}"; do
    kill -0 "$pid" 2>/dev/null || return 0
  done
  return 1
}

# Wait (up to 10 s) until every gateway answers /readyz (it does once Redis answers).
ready=0
for _ in $(seq 1 100); do
  ready=0
  for ((i = 0; i < gateways; i++)); do
    if curl -fsS --max-time 1 "${probe_tls[@]}" "$scheme://127.0.0.1:$((port + i))/readyz" \
      >/dev/null 2>&1; then
      ready=$((ready + 1))
    fi
  done
  if [ "$ready" = "$gateways" ] || exited; then break; fi
  sleep 0.1
done

# The summary: which URL is which gateway, PIDs, where data and logs are, credentials.
print_summary() {
  local password i
  password=$(cat "$var/broker-password")
  echo
  echo "osbq is running on 127.0.0.1 with the catalog $catalog"
  echo "(data, Redis logs, the password and the bus keys in $var):"
  for ((i = 0; i < gateways; i++)); do
    printf '  %-12s %s://127.0.0.1:%-6s bus tcp://127.0.0.1:%-6s pid %s\n' \
      "gateway-$((i + 1))" "$scheme" "$((port + i))" "${bus_ports[i]}" "${daemons[i]}"
  done
  for ((i = 0; i < workers; i++)); do
    printf '  %-12s pid %s\n' "worker-$((i + 1))" "${daemons[gateways + i]}"
  done
  printf '  %-12s 127.0.0.1:%-6s data %s/redis, log %s/redis.log, pid %s\n' \
    redis "$redis_port" "$var" "$var" "${servers[0]}"
  printf '  %-12s 127.0.0.1:%-6s shared server of the redis service, log %s/redis-target.log, pid %s\n' \
    redis-target "$target_port" "$var" "${servers[1]}"
  if [ "$prefix" = 1 ]; then
    echo "Gateways and workers log here, each line starting with its name ([gateway-1], [worker-1], ...)."
  else
    echo "The gateway and the worker log here."
  fi
  echo "  user name: osbq"
  echo "  password:  $password"
  if [ "$gateways" = 1 ]; then echo "Try:"; else echo "Try (every gateway answers the same):"; fi
  for ((i = 0; i < gateways; i++)); do
    echo "  curl ${OSBQ_TLS_CERT:+--cacert '$OSBQ_TLS_CERT' }-u 'osbq:$password' -H 'X-Broker-API-Version: 2.17' $scheme://127.0.0.1:$((port + i))/v2/catalog"
  done
  echo "The operators' command, from another shell (docs/ctl.md):"
  echo "  OSBQ_REDIS_URL=$OSBQ_REDIS_URL OSBQ_CATALOG='$catalog' $bin/osbq-ctl instances"
  echo "Ctrl-C stops everything."
  echo
}

if ! exited; then
  if [ "$ready" -lt "$gateways" ]; then
    echo "run-local: only $ready of $gateways gateways answer /readyz after 10 s; see their output" >&2
  fi
  print_summary
  # Runs until a signal (on_signal exits) or until a process ends by itself.
  wait -n "${daemons[@]}" "${servers[@]}" || true
  [ "$stopping" = 0 ] || exit "$stop_status"
fi
all=("${daemons[@]}" "${servers[@]}")
all_names=("${daemon_names[@]}" "${server_names[@]}")
for i in "${!all[@]}"; do
  if ! kill -0 "${all[i]}" 2>/dev/null; then
    echo "run-local: ${all_names[i]} (pid ${all[i]}) exited; stopping the rest" >&2
    case "${all_names[i]}" in
      redis*)
        echo "run-local: the end of $var/${all_names[i]}.log:" >&2
        tail -n 5 "$var/${all_names[i]}.log" | sed 's/^/  /' >&2 ;;
    esac
  fi
done
stop_all
exit 1
