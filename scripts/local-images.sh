#!/usr/bin/env bash
# Makes sure the Docker engine has the base images compose/Dockerfile and
# compose/docker-compose.yml name: debian:bookworm, debian:bookworm-slim, the Redis image
# (OSBQ_REDIS_IMAGE: redis:7-bookworm unless valkey/valkey:8-bookworm is set, as in compose/.env),
# haproxy:2.8-bookworm. An image already there is used as it is; a missing one is pulled from the
# registry, and when the registry cannot be reached it is built here from Debian's packages:
# debian:* from a debootstrap of bookworm (root and debootstrap needed), Redis or Valkey and
# haproxy on top of it with apt-get (compose/local-images/). docs/deploy.md, "Without a container
# registry".
#
#   scripts/local-images.sh            OSBQ_DEBIAN_MIRROR: the Debian mirror (deb.debian.org)
# Exit status 77 when a Debian base is missing and can be neither pulled nor made here.
set -euo pipefail
cd "$(dirname "$0")/.."

mirror=${OSBQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${OSBQ_DEBIAN_SECURITY_MIRROR:-${mirror%/debian}/debian-security}
suite=bookworm

say() { echo "local-images: $*" >&2; }
have() { docker image inspect "$1" >/dev/null 2>&1; }

# A pull that cannot reach the registry fails within seconds (DNS); the limit is for a registry
# that accepts the connection and then stalls.
pulled() {
  say "$1 is missing: pulling it"
  if timeout 120 docker pull -q "$1" >/dev/null 2>&1; then
    return 0
  fi
  say "$1: no registry answered; building it from Debian's packages"
  return 1
}

# The debootstrap tree, removed on exit however the script ends.
root=
remove_root() {
  [ -n "$root" ] || return 0
  umount -R "$root/proc" "$root/sys" 2>/dev/null || true
  rm -rf "$root" "$root.log"
}
trap remove_root EXIT

debian_base() {
  command -v debootstrap >/dev/null || { say "debootstrap is not installed"; return 1; }
  [ "$(id -u)" -eq 0 ] || { say "debootstrap needs root"; return 1; }
  root=$(mktemp -d /tmp/osbq-debootstrap.XXXXXX)
  say "debootstrap $suite from $mirror (a few minutes)"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1 ||
    { tail -20 "$root.log" >&2; return 1; }
  cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security_mirror $suite-security main
EOF
  # As the official images do: no apt caches or lists in the layers built on top.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/tmp/*
  tar -C "$root" --numeric-owner -c . |
    docker import -c 'CMD ["bash"]' -m "debootstrap $suite ($mirror)" - "debian:$suite" >/dev/null ||
    return 1
  docker tag "debian:$suite" "debian:$suite-slim" || return 1
  say "built debian:$suite and debian:$suite-slim"
}

if ! have "debian:$suite" || ! have "debian:$suite-slim"; then
  for tag in "debian:$suite" "debian:$suite-slim"; do
    have "$tag" || pulled "$tag" || { debian_base || exit 77; break; }
  done
fi
for name in "${OSBQ_REDIS_IMAGE:-redis:7-bookworm}" haproxy:2.8-bookworm; do
  have "$name" && continue
  pulled "$name" && continue
  # The stand-ins this script can make: redis:7-bookworm, valkey/valkey:8-bookworm,
  # haproxy:2.8-bookworm (compose/local-images/<name>.Dockerfile).
  case "$name" in
    redis:7-bookworm | valkey/valkey:8-bookworm | haproxy:2.8-bookworm) ;;
    *) say "$name: no registry answered and no stand-in is made here"; exit 1 ;;
  esac
  base=${name%%:*}
  file=compose/local-images/${base##*/}.Dockerfile
  log=$(mktemp /tmp/osbq-local-image.XXXXXX)
  docker build --network host --build-arg "DEBIAN_MIRROR=$mirror" -t "$name" -f "$file" \
    compose/local-images >"$log" 2>&1 ||
    { tail -30 "$log" >&2; rm -f "$log"; say "building $name failed"; exit 1; }
  rm -f "$log"
  say "built $name from $file"
done
