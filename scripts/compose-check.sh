#!/usr/bin/env bash
# The compose deployment, built and run for real (docs/deploy.md, "The compose check"):
#   1. a Docker engine: the one that answers, else dockerd started here (as root), stopped again
#      at the end (scripts/docker-checks.sh); none can start: SKIPPED (exit 77) with the reason
#   2. the base images (scripts/local-images.sh: pulled, or built from Debian's packages); Redis's
#      is OSBQ_REDIS_IMAGE's, redis:7-bookworm unless set (valkey/valkey:8-bookworm: Valkey)
#   3. `docker-compose build` of compose/docker-compose.yml, then compose/init-secrets.sh into a
#      temporary directory (an operator's compose/secrets/ and compose/.env are never read)
#   4. `up` with 2 gateways and 2 workers; waits until every container is healthy
#   5. a full lifecycle through the load balancer; /metrics refused on the public port; /readyz
#      of each gateway
#   6. scaling to 3 gateways and 8 workers, then down to 2 and 1, while instance lifecycles run
#      through the load balancer: every one of them must succeed
#   7. `down -v` of the compose project it created (osbq-check-<pid>), whatever happened
# Prints "compose-check: PASSED" (exit 0), "compose-check: FAILED: ..." (exit 1) or
# "compose-check: SKIPPED: ..." (exit 77). The images are tagged osbq-gateway:compose-check and
# osbq-worker:compose-check, so an operator's :latest ones are left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
check="compose-check"
t0=$SECONDS
# shellcheck source=scripts/docker-checks.sh
. scripts/docker-checks.sh

command -v docker >/dev/null || skip "no docker client (scripts/install-deps.sh installs docker.io)"
if command -v docker-compose >/dev/null; then
  compose=(docker-compose)
elif docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
else
  skip "neither docker-compose nor the compose plugin is installed"
fi

tmp=$(mktemp -d /tmp/osbq-compose-check.XXXXXX)
project=osbq-check-$$
project_up=0

# Takes the project down; "failed": prints its state first.
teardown() { # [failed]
  [ "$project_up" -eq 1 ] || return 0
  if [ "${1:-}" = failed ]; then
    say "state at the failure:"
    dc ps
    dc logs --no-color --tail 30
  fi
  dc down -v --remove-orphans --timeout 30 >/dev/null 2>&1 ||
    say "docker-compose down of $project failed"
}
trap check_exit EXIT
trap 'exit 1' INT TERM

# ---- 1. the engine ----------------------------------------------------------------------------
# shellcheck disable=SC2119 # no options: they would apply to a dockerd started here only
engine_up

# ---- 2. base images ---------------------------------------------------------------------------
images_status=0
scripts/local-images.sh || images_status=$?
[ "$images_status" -eq "$SKIP" ] && skip "the base images are missing and cannot be made here"
[ "$images_status" -eq 0 ] || fail "scripts/local-images.sh failed"
say "base images ready after $(elapsed)"

# ---- 3. build and secrets ---------------------------------------------------------------------
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
secrets=$tmp/secrets
# Replaces compose/.env: the load balancer on a free loopback port, the check's image tag, and
# the Redis image the caller's OSBQ_REDIS_IMAGE names (valkey/valkey:8-bookworm checks Valkey).
cat >"$tmp/env" <<EOF
OSBQ_HTTP_PORT=127.0.0.1:$port
OSBQ_IMAGE_TAG=compose-check
OSBQ_REDIS_IMAGE=${OSBQ_REDIS_IMAGE:-redis:7-bookworm}
EOF
# The check's own secrets in place of compose/secrets/; builds on the host network, which works
# whether or not the engine's bridge reaches the Debian mirror.
cat >"$tmp/override.yml" <<EOF
services:
  gateway:
    build: {network: host}
    volumes: ["$secrets/bus/clients:/etc/osbq/bus-clients:ro"]
  worker:
    build: {network: host}
$(secrets_override "$secrets")
EOF

dc() {
  env "${unset_caller[@]}" "${compose[@]}" -p "$project" --env-file "$tmp/env" \
    -f "$repo/compose/docker-compose.yml" -f "$tmp/override.yml" "$@"
}

dc config -q || fail "docker-compose config rejects the file"
build_start=$SECONDS
# The secrets are not there yet: compose warns about their files, which `build` does not read.
dc build gateway worker >"$tmp/build.log" 2>&1 ||
  { tail -40 "$tmp/build.log"; fail "docker-compose build failed"; }
say "images built in $((SECONDS - build_start)) s"
# After the build, so it takes osbq-ctl from the gateway image just built.
OSBQ_IMAGE_TAG=compose-check compose/init-secrets.sh --dir "$secrets" ||
  fail "compose/init-secrets.sh failed"
for name in broker_password secret_keys bus/gateways bus/gateways_secret bus/worker \
  bus/worker_secret bus/clients/worker; do
  [ -s "$secrets/$name" ] || fail "compose/init-secrets.sh did not write $name"
done
user=osbq
password_file=$secrets/broker_password

# ---- 4. up, healthy ---------------------------------------------------------------------------
# Every container of the project healthy (lb has no health check: running, never restarted).
wait_healthy() { # WHAT
  local what=$1 deadline=$((SECONDS + 180)) ids state bad
  while :; do
    bad=
    ids=$(dc ps -q)
    [ -n "$ids" ] || bad="no containers"
    for id in $ids; do
      state=$(docker inspect -f '{{.Name}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}} {{.RestartCount}}' "$id")
      set -- $state
      if [ "$2" != running ] || { [ "$3" != healthy ] && [ "$3" != none ]; } || [ "$4" != 0 ]; then
        bad="$bad ${1#/}:$2/$3/restarts=$4"
      fi
    done
    [ -z "$bad" ] && return 0
    [ "$SECONDS" -lt "$deadline" ] || fail "$what: not healthy after 180 s:$bad"
    sleep 1
  done
}
count() { dc ps -q "$1" | wc -l; }

up_start=$SECONDS
project_up=1
dc up -d --scale gateway=2 --scale worker=2 >"$tmp/up.log" 2>&1 ||
  { cat "$tmp/up.log"; fail "docker-compose up failed"; }
wait_healthy "up"
say "stack up and healthy in $((SECONDS - up_start)) s (redis, 2 gateways, 2 workers, lb)"

# ---- 5. through the load balancer ---------------------------------------------------------------
client() { python3 "$repo/scripts/compose_check_client.py" "$1" "$url" "$user" "$password_file" "${@:2}"; }
client lifecycle || fail "the lifecycle through the load balancer"
client metrics || fail "/metrics on the public port"

# Each gateway: ready (Redis answers) and serving its metrics on the compose network.
readyz_all() {
  local id n=0
  for id in $(dc ps -q gateway); do
    docker exec "$id" /usr/local/bin/osbq-healthcheck /readyz ||
      fail "gateway $(docker inspect -f '{{.Name}}' "$id"): /readyz"
    docker exec "$id" /usr/local/bin/osbq-healthcheck /metrics ||
      fail "gateway $(docker inspect -f '{{.Name}}' "$id"): /metrics on the compose network"
    n=$((n + 1))
  done
  say "/readyz of each of the $n gateways: 200"
}
readyz_all
[ "$(docker inspect -f '{{.HostConfig.Ulimits}}' "$(dc ps -q lb)")" != "[]" ] ||
  fail "lb runs without the nofile limit of the compose file"

# ---- 6. scaling while operations run ----------------------------------------------------------
scale() { # GATEWAYS WORKERS
  local started=$SECONDS
  dc up -d --no-recreate --scale gateway="$1" --scale worker="$2" >"$tmp/up.log" 2>&1 ||
    { cat "$tmp/up.log"; fail "scaling to $1 gateways and $2 workers failed"; }
  say "scaled to gateway=$1 worker=$2 in $((SECONDS - started)) s"
  [ "$(count gateway)" -eq "$1" ] && [ "$(count worker)" -eq "$2" ] ||
    fail "after scaling: $(count gateway) gateways, $(count worker) workers"
}
# Lifecycles start every 0.25 s from before the first scaling until after the last.
load_start
sleep 3
scale 3 8
wait_healthy "after scaling up"
sleep 5
scale 2 1
sleep 3
load_stop "the scaling"
wait_healthy "after scaling down"
readyz_all
client lifecycle || fail "the lifecycle after scaling"

# ---- 7. down ----------------------------------------------------------------------------------
down_start=$SECONDS
dc down -v --remove-orphans --timeout 30 >"$tmp/down.log" 2>&1 ||
  { cat "$tmp/down.log"; fail "docker-compose down -v failed"; }
project_up=0
left=$(docker ps -aq --filter "label=com.docker.compose.project=$project")
left_volumes=$(docker volume ls -q --filter "label=com.docker.compose.project=$project")
[ -z "$left$left_volumes" ] || fail "down -v left containers or volumes of $project"
say "down -v in $((SECONDS - down_start)) s, nothing of $project left"
say "PASSED in $(elapsed)"
