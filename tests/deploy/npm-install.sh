#!/usr/bin/env bash
# Installs the npm packages of tests/deploy (package-lock.json, exactly) and the validator into
# DIR, a directory of the build tree; does nothing more when that lock file is installed already.
#   tests/deploy/npm-install.sh DIR
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: npm-install.sh DIR}
command -v npm >/dev/null || { echo "npm-install: npm is missing (scripts/install-deps.sh)" >&2; exit 1; }
mkdir -p "$dir"
cp "$src/validate-manifests.mjs" "$dir/"
if [ -d "$dir/node_modules" ] && cmp -s "$src/package-lock.json" "$dir/.installed-lock.json"; then
  exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dir/"
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
cp "$src/package-lock.json" "$dir/.installed-lock.json"
