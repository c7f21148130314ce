#!/usr/bin/env bash
# Source checks run by CTest: clang-format is applied everywhere, and no banned function is used.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t sources < <(git ls-files -- '*.c' '*.h' 2>/dev/null || find schema common proto bus gateway worker ctl kit tests -name '*.[ch]')
case "${1:-all}" in
  format)
    clang-format --dry-run --Werror "${sources[@]}"
    ;;
  banned)
    # Unbounded or unsafe on untrusted input; use snprintf, memcpy with a checked length, strtoul.
    if grep -nE '\b(sprintf|vsprintf|strcpy|strcat|strtok|atoi|atol|gets)\s*\(' "${sources[@]}"; then
      echo "lint: banned function used (see above)" >&2
      exit 1
    fi
    ;;
  *)
    "$0" format
    "$0" banned
    ;;
esac
