#!/usr/bin/env bash
# Configures and builds osbq into build/ (Debug: AddressSanitizer + UndefinedBehaviorSanitizer).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE="${OSBQ_BUILD_TYPE:-Debug}" >/dev/null
cmake --build build -j"$(nproc)"
