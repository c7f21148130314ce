#!/usr/bin/env bash
# Installs the Debian packages osbq needs to build, test and run, and does nothing when all of
# them are already there. Runs apt-get as root (directly, or through sudo).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libmicrohttpd-dev libjansson-dev libhiredis-dev libczmq-dev libmsgpack-dev
  libsodium-dev libcurl4-gnutls-dev libcmocka-dev
  redis-server curl python3 clang-format git jq postgresql docker-compose haproxy
  valkey-server  # the test command's Valkey pass (docs/reliability.md#the-valkey-pass)
  docker.io debootstrap  # scripts/compose-check.sh: the engine, and base images made locally
  libgnutls28-dev openssl  # the gateway's HTTPS (GnuTLS); test certificates (openssl)
  libpcre2-dev json-schema-test-suite # plan schemas: regexes, and the suite their tests run
  python3-jsonschema python3-yaml  # integration tests: answers checked against the OpenAPI document
  clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer (-fsanitize=fuzzer) comes with clang's runtime
  prometheus                # tests/deploy: promtool checks deploy/prometheus/alerts.yml
  dpkg-dev lintian man-db   # scripts/package.sh (dpkg-shlibdeps, dpkg-buildflags); tests/package
)
# tests/deploy validates deploy/kubernetes with npm packages; a node and npm installed otherwise
# (not from Debian) do as well.
command -v npm >/dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
# Debian 12 has Valkey only in bookworm-backports (8.0.1; Debian 13 has it in main). The
# archive is added with a pin that takes valkey-server and valkey-tools from it and nothing else:
# every other package keeps coming from bookworm.
if [[ " ${missing[*]} " == *" valkey-server "* ]] &&
  [ "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" = bookworm ]; then
  echo "install-deps: adding bookworm-backports for valkey-server alone" >&2
  "${sudo[@]}" tee /etc/apt/sources.list.d/osbq-bookworm-backports.sources >/dev/null <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  "${sudo[@]}" tee /etc/apt/preferences.d/osbq-valkey >/dev/null <<'EOF'
# Written by osbq's scripts/install-deps.sh: from bookworm-backports, valkey-server and
# valkey-tools only.
Package: *
Pin: release n=bookworm-backports
Pin-Priority: -1

Package: valkey-server valkey-tools
Pin: release n=bookworm-backports
Pin-Priority: 500
EOF
fi
echo "install-deps: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
