#!/usr/bin/env bash
# Writes every secret compose/docker-compose.yml needs, with the owners and modes the containers'
# user (uid 10001) needs to read them (compose/secrets/README.md):
#
#   secrets/broker_password            the platforms' basic-auth password       0644
#   secrets/secret_keys                the key sealing binding credentials      0600, uid 10001
#   secrets/bus/gateways, worker       the job bus's CurveZMQ public keys       0644
#   secrets/bus/gateways_secret, worker_secret
#                                      their secret keys                        0600, uid 10001
#   secrets/bus/clients/worker         the worker's public key, admitted by the gateways
#
#   compose/init-secrets.sh [--force] [--dir DIR]
#
# A secret that exists is kept (and said so): replacing the broker password or the keys in use
# locks out platforms, stops the bus or loses stored credentials. --force writes them all anew.
# DIR defaults to compose/secrets. The bus keys are made by `osbq-ctl bus-cert`: $OSBQ_CTL, else
# osbq-ctl on PATH, else the gateway image's (osbq-gateway:${OSBQ_IMAGE_TAG:-latest}, built from
# compose/Dockerfile when missing). Without root (or sudo), secret_keys stays yours with mode 0644
# instead of uid 10001 with 0600 (the broker then warns that others may read secret_keys).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/secrets
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --dir) dir=${2:?--dir needs a directory}; shift ;;
    --dir=*) dir=${1#--dir=} ;;
    -h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "init-secrets: unknown argument $1 (--force, --dir DIR)" >&2; exit 2 ;;
  esac
  shift
done
container_uid=10001

say() { echo "init-secrets: $*" >&2; }

# Whether to write NAME (relative to dir); an existing one is replaced only with --force.
wanted() {
  local path=$dir/$1
  if [ -e "$path" ] || [ -L "$path" ]; then
    if [ "$force" -eq 0 ]; then
      say "$1 exists: kept (--force replaces it)"
      return 1
    fi
    rm -f "$path"
  fi
  return 0
}

# Hands FILE to the containers' user alone (0600, uid 10001): as root, through sudo when it asks
# no password, or else leaves it the caller's with mode 0644. Prints what it did.
seal() {
  local file=$1
  chmod 0600 "$file"
  if [ "$(id -u)" -eq 0 ]; then
    chown "$container_uid" "$file" && { echo "0600, uid $container_uid"; return; }
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo -n chown "$container_uid" "$file" && { echo "0600, uid $container_uid"; return; }
  fi
  chmod 0644 "$file"
  echo "0644: chown to uid $container_uid needs root"
}

ctl=()
bus_cert() { # PATH (relative to dir)
  if [ ${#ctl[@]} -eq 0 ]; then
    if [ -n "${OSBQ_CTL:-}" ]; then
      ctl=("$OSBQ_CTL")
    elif command -v osbq-ctl >/dev/null; then
      ctl=(osbq-ctl)
    else
      local image=osbq-gateway:${OSBQ_IMAGE_TAG:-latest}
      if ! docker image inspect "$image" >/dev/null 2>&1; then
        say "building $image for its osbq-ctl (no osbq-ctl on PATH)"
        local log
        log=$(mktemp)
        docker build -f "$here/Dockerfile" --target gateway -t "$image" "$here/.." >"$log" 2>&1 ||
          { tail -30 "$log" >&2; rm -f "$log"; say "building $image failed"; exit 1; }
        rm -f "$log"
      fi
      ctl=(docker run --rm --network none --user "$(id -u):$(id -g)" -v "$dir/bus:/bus"
           --entrypoint osbq-ctl "$image")
    fi
  fi
  local target=$dir/$1
  [ "${ctl[0]}" = docker ] && target=/bus/${1#bus/}
  "${ctl[@]}" bus-cert "$target" >/dev/null
}

umask 077
mkdir -p "$dir/bus/clients"
# Only the operator reads the directory; Compose bind-mounts each file, whose own mode then
# decides whether uid 10001 reads it in the container.
chmod 0700 "$dir"
chmod 0755 "$dir/bus" "$dir/bus/clients"

if wanted broker_password; then
  head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$dir/broker_password"
  chmod 0644 "$dir/broker_password"
  say "wrote broker_password"
fi

if wanted secret_keys; then
  { head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n'; echo; } >"$dir/secret_keys"
  say "wrote secret_keys ($(seal "$dir/secret_keys")); back it up with the Redis data"
fi

new_worker_key=0
for pair in gateways worker; do
  if [ "$force" -eq 0 ] && { [ -e "$dir/bus/$pair" ] || [ -e "$dir/bus/${pair}_secret" ]; }; then
    say "bus/$pair exists: kept (--force replaces the pair)"
    continue
  fi
  rm -f "$dir/bus/$pair" "$dir/bus/${pair}_secret"
  bus_cert "bus/$pair"
  chmod 0644 "$dir/bus/$pair"
  say "wrote bus/$pair (0644) and bus/${pair}_secret ($(seal "$dir/bus/${pair}_secret"))"
  [ "$pair" = worker ] && new_worker_key=1
done

# A new worker key pair replaces the admitted copy of its old public key.
if [ "$new_worker_key" -eq 1 ] && [ -e "$dir/bus/clients/worker" ]; then
  rm -f "$dir/bus/clients/worker"
fi
if wanted bus/clients/worker; then
  cp "$dir/bus/worker" "$dir/bus/clients/worker"
  chmod 0644 "$dir/bus/clients/worker"
  say "wrote bus/clients/worker (the gateways admit the worker key)"
fi
