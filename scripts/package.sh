#!/usr/bin/env bash
# Builds the Debian package of osbq: a Release build with tests off in build-package/ (or the
# directory OSBQ_PACKAGE_BUILD_DIR names), installed to /usr with the configuration in /etc/osbq,
# packaged by CPack. Prints the path of the .deb it made. Debian's build flags (hardening) when
# dpkg-buildflags is there.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${OSBQ_PACKAGE_BUILD_DIR:-build-package}

if command -v dpkg-buildflags >/dev/null; then
  CFLAGS="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CFLAGS)"
  LDFLAGS="$(dpkg-buildflags --get LDFLAGS)"
  export CFLAGS LDFLAGS
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DOSBQ_BUILD_TESTS=OFF \
  -DCMAKE_INSTALL_PREFIX=/usr -DOSBQ_DEFAULT_CATALOG=/etc/osbq/catalog.json >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
(cd "$build" && cpack -G DEB) | sed -n 's/^CPack: - package: \(.*\) generated\.$/\1/p'
