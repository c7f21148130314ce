#!/usr/bin/env bash
# The swarm stack (compose/docker-compose.yml with compose/docker-compose.swarm.yml) deployed and
# run for real on a single-node swarm of this machine (docs/deploy.md, "Several hosts"):
#   1. a Docker engine, as the compose check finds or starts one (scripts/docker-checks.sh); a
#      dockerd started here binds published ports to 127.0.0.1 (--ip). An engine that is a swarm
#      member already is left alone: SKIPPED (exit 77), as when none can run
#   2. the images the compose check builds (osbq-gateway:compose-check, osbq-worker:compose-check)
#      and the base images, reused as they are: missing ones are a SKIP (run it first)
#   3. `docker swarm init --advertise-addr 127.0.0.1`, its own secrets (compose/init-secrets.sh
#      --dir, a temporary directory), the node labelled for Redis, `docker stack deploy`
#   4. a full lifecycle through the published port; /metrics refused there
#   5. while instance lifecycles run: `docker service scale` of the workers 1 -> 4 -> 1, then
#      `docker service update --force` of the workers, then of the gateways; every lifecycle
#      must succeed and every task be replaced
#   6. whatever happened: `docker stack rm`, its volume, `docker swarm leave --force`, the
#      docker_gwbridge network swarm made, the dockerd it started
# Prints "swarm-check: PASSED" (exit 0), "swarm-check: FAILED: ..." (exit 1) or
# "swarm-check: SKIPPED: ..." (exit 77).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
check="swarm-check"
t0=$SECONDS
tag=compose-check
# shellcheck source=scripts/docker-checks.sh
. scripts/docker-checks.sh

command -v docker >/dev/null || skip "no docker client (scripts/install-deps.sh installs docker.io)"

tmp=$(mktemp -d /tmp/osbq-swarm-check.XXXXXX)
stack=osbq-swarm-$$
swarm_made=0
gwbridge_made=0

# Removes the stack and its volume, leaves the swarm; "failed": prints the stack's state first.
teardown() { # [failed]
  [ "$swarm_made" -eq 1 ] || return 0
  if [ "${1:-}" = failed ]; then
    say "state at the failure:"
    docker stack ps --no-trunc "$stack" 2>&1 | head -40
    for svc in gateway worker lb; do docker service logs --tail 20 "${stack}_$svc" 2>&1; done
  fi
  docker stack rm "$stack" >/dev/null 2>&1
  # The stack's containers stop within their grace; its volume goes once they are gone.
  for _ in $(seq 1 90); do
    [ -z "$(docker ps -aq --filter "label=com.docker.stack.namespace=$stack")" ] && break
    sleep 1
  done
  docker volume rm "${stack}_redis-data" >/dev/null 2>&1
  docker swarm leave --force >/dev/null 2>&1 || say "docker swarm leave --force failed"
  [ "$gwbridge_made" -eq 1 ] && docker network rm docker_gwbridge >/dev/null 2>&1
  say "removed $stack, left the swarm"
}
trap check_exit EXIT
trap 'exit 1' INT TERM

# ---- 1. the engine ----------------------------------------------------------------------------
engine_up --ip 127.0.0.1
state=$(docker info -f '{{.Swarm.LocalNodeState}}')
[ "$state" = inactive ] ||
  skip "the Docker engine is a swarm member already ($state): the check makes its own swarm"

# ---- 2. images ----------------------------------------------------------------------------------
for image in "osbq-gateway:$tag" "osbq-worker:$tag" redis:7-bookworm haproxy:2.8-bookworm; do
  docker image inspect "$image" >/dev/null 2>&1 ||
    skip "$image is missing (scripts/compose-check.sh builds it)"
done

# ---- 3. swarm, secrets, deploy --------------------------------------------------------------------
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
url=http://127.0.0.1:$port
secrets=$tmp/secrets
OSBQ_IMAGE_TAG=$tag compose/init-secrets.sh --dir "$secrets" 2>/dev/null ||
  fail "compose/init-secrets.sh failed"
cat >"$tmp/override.yml" <<EOF
$(secrets_override "$secrets")
configs:
  bus_worker: {file: $secrets/bus/worker}
# Scaled 1 -> 4 -> 1 below.
services:
  worker:
    deploy: {replicas: 1}
EOF

docker network inspect docker_gwbridge >/dev/null 2>&1 || gwbridge_made=1
swarm_made=1
# Loopback only: the managers' port, the advertised address.
docker swarm init --advertise-addr 127.0.0.1 --listen-addr "127.0.0.1:$(free_port)" >/dev/null ||
  fail "docker swarm init"
docker node update --label-add osbq.redis=true "$(docker info -f '{{.Swarm.NodeID}}')" >/dev/null

deploy_start=$SECONDS
env "${unset_caller[@]}" OSBQ_IMAGE_TAG="$tag" OSBQ_HTTP_PORT="$port" \
  docker stack deploy --resolve-image never -c compose/docker-compose.yml \
  -c compose/docker-compose.swarm.yml -c "$tmp/override.yml" "$stack" >"$tmp/deploy.log" 2>&1 ||
  { cat "$tmp/deploy.log"; fail "docker stack deploy"; }

# Every service at its replicas, every task running (healthy: swarm starts a task with a health
# check as "starting" and counts it once healthy), none restarted.
wait_converged() { # WHAT
  local deadline=$((SECONDS + 180)) bad
  while :; do
    bad=$(docker service ls --filter "label=com.docker.stack.namespace=$stack" \
      --format '{{.Name}} {{.Replicas}}' | awk '{ split($2, r, "/"); if (r[1] != r[2] || r[2] == 0) print }')
    [ "$(docker service ls -q --filter "label=com.docker.stack.namespace=$stack" | wc -l)" -eq 4 ] ||
      bad="$bad (services missing)"
    [ -z "$bad" ] && return 0
    [ "$SECONDS" -lt "$deadline" ] || fail "$1: not converged after 180 s: $bad"
    sleep 1
  done
}
wait_converged "deploy"
say "stack deployed and healthy in $((SECONDS - deploy_start)) s (redis, 2 gateways, 1 worker, lb)"

# ---- 4. through the published port ----------------------------------------------------------------
client() {
  OSBQ_CHECK_NAME=swarm-check python3 "$repo/scripts/compose_check_client.py" "$1" "$url" osbq \
    "$secrets/broker_password" "${@:2}"
}
client lifecycle || fail "the lifecycle through the published port"
client metrics || fail "/metrics on the published port"

# ---- 5. scaling and rolling updates while operations run ------------------------------------------
# The service's tasks meant to run: "ID STATE" lines, STATE Running once healthy (a task with a
# health check is Starting until then).
tasks() { docker service ps --filter desired-state=running --format '{{.ID}} {{.CurrentState}}' "${stack}_$1"; }
# Until SERVICE runs exactly N tasks, all healthy, none of them among the task IDs in NOT.
wait_tasks() { # SERVICE N WHAT [NOT]
  local deadline=$((SECONDS + 180)) now
  while :; do
    now=$(tasks "$1")
    if [ "$(echo "$now" | grep -c ' Running')" -eq "$2" ] && [ "$(echo "$now" | wc -l)" -eq "$2" ] &&
      [ -z "$(comm -12 <(echo "$now" | cut -d' ' -f1 | sort) <(echo "${4:-}" | sort))" ]; then
      return 0
    fi
    [ "$SECONDS" -lt "$deadline" ] || fail "$3: after 180 s, the tasks of $1: $(echo "$now" | tr '\n' ';')"
    sleep 1
  done
}
scale_workers() { # N
  local started=$SECONDS
  docker service scale --detach "${stack}_worker=$1" >/dev/null || fail "docker service scale"
  wait_tasks worker "$1" "scaling the workers to $1"
  say "workers scaled to $1 in $((SECONDS - started)) s"
}
# Replaces every task of SERVICE by the update rules of docker-compose.swarm.yml.
roll() { # SERVICE
  local started=$SECONDS before n
  before=$(tasks "$1" | cut -d' ' -f1)
  n=$(echo "$before" | wc -l)
  docker service update --force --detach --no-resolve-image "${stack}_$1" >/dev/null ||
    fail "docker service update --force $1"
  wait_tasks "$1" "$n" "the rolling update of $1" "$before"
  say "$1: $n tasks replaced, one at a time, in $((SECONDS - started)) s"
}
# An update ends after its last task was watched for update_config's monitor period: completed,
# not rolled back.
update_completed() { # SERVICE
  local state
  for _ in $(seq 1 120); do
    state=$(docker service inspect -f '{{if .UpdateStatus}}{{.UpdateStatus.State}}{{end}}' "${stack}_$1")
    case "$state" in
      completed) return 0 ;;
      updating) sleep 1 ;;
      *) fail "the update of $1 ended $state" ;;
    esac
  done
  fail "the update of $1 still $state after 120 s"
}
load_start
sleep 2
scale_workers 4
sleep 3
scale_workers 1
roll worker
roll gateway
# Lifecycles go on while swarm watches the last new tasks.
update_completed worker
update_completed gateway
load_stop "the scaling and the rolling updates"
wait_converged "after the updates"
say "PASSED in $(elapsed)"
