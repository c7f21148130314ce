#!/usr/bin/env bash
# Packs what bench/device/scale_out.sh needs on a machine that has none of it (issue 29: a lent
# machine of 16 cores, bare, nothing to install from): the Release gateway and worker of
# --build-dir (and of --reference, another commit's build, for a side-by-side run), redis-server,
# wrk and taskset, every shared library they load (their ldd closure) and the dynamic loader,
# each program behind a small sh wrapper that runs it through the packed loader with the packed
# libraries only:
#
#   OUT/ld-linux-x86-64.so.2    the loader (the name the programs' ELF interpreter has)
#   OUT/lib/                    the libraries, by soname
#   OUT/real/                   redis-server, wrk, taskset
#   OUT/bin/                    their wrappers (scale_out.sh puts this first on PATH)
#   OUT/current/{real,bin}/     osbq-gateway and osbq-worker of --build-dir, and wrappers: a
#   OUT/reference/{real,bin}/   build directory for bench/scale_out.py (osbq_stack.binaries)
#   OUT/MANIFEST                what is inside, from which commit, and its size
#
# It checks that the packed loader resolves every library of every program inside OUT. The
# device's tool carries OUT when asked (run's carry: build-bench/device-pack); the working tree
# with it must stay under 64 MiB.
#
# usage: bench/device/pack.sh [--build-dir DIR] [--reference DIR] [--out DIR]
#        (defaults: build-bench, none, build-bench/device-pack; bench/run.sh builds build-bench)
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)

die() {
  echo "pack: $*" >&2
  exit 1
}

build_dir=build-bench reference="" out=build-bench/device-pack
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="${2:-}"; shift 2 ;;
    --reference) reference="${2:-}"; shift 2 ;;
    --out) out="${2:-}"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
for dir in "$build_dir" ${reference:+"$reference"}; do
  if ! { [ -x "$dir/bin/osbq-gateway" ] && [ -x "$dir/bin/osbq-worker" ]; }; then
    die "no osbq-gateway and osbq-worker in $dir/bin: build it first (bench/run.sh --cases round_trips --runs 1 builds build-bench/)"
  fi
done
tools=()
for t in redis-server wrk taskset; do
  p=$(command -v "$t") || die "$t is not installed here (bench/run.sh installs wrk; taskset is util-linux's)"
  tools+=("$p")
done

rm -rf "$out"
mkdir -p "$out/lib" "$out/real" "$out/bin"
out=$(cd "$out" && pwd)
loader=""

# Copies $1's libraries (ldd: every one it needs, transitively) into lib/, and the loader.
add_libraries() {
  local line name path
  while read -r line; do
    case "$line" in
      *" => "/*)
        name=${line%% => *}
        path=${line#* => }
        path=${path%% (*}
        [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
        ;;
      /*ld-linux*)
        path=${line%% (*}
        if [ -z "$loader" ]; then
          loader=$(basename "$path")
          cp -L "$path" "$out/$loader"
        fi
        [ "$(basename "$path")" = "$loader" ] || die "$1 wants loader $path, others $loader"
        ;;
      *"linux-vdso"* | "") ;;
      *"not found"*) die "$1: $line" ;;
      *) die "$1: ldd line not understood: $line" ;;
    esac
  done < <(ldd "$1")
}

# A wrapper bin/NAME in directory $1 (the pack or a build directory in it) running $1/real/NAME
# through the loader; $2 is the way from $1 up to the pack ("." or "..").
add_program() { # $1 directory, $2 way up, $3 source program
  local dir=$1 up=$2 src=$3 name
  name=$(basename "$src")
  mkdir -p "$dir/real" "$dir/bin"
  cp -L "$src" "$dir/real/$name"
  add_libraries "$src"
  cat >"$dir/bin/$name" <<WRAP
#!/bin/sh
# Written by bench/device/pack.sh: $name through the packed loader, with the packed libraries.
here=\$(cd "\$(dirname "\$0")/.." && pwd)
pack=\$(cd "\$here/$up" && pwd)
exec "\$pack/$loader" --library-path "\$pack/lib" "\$here/real/$name" "\$@"
WRAP
  chmod +x "$dir/bin/$name"
}

for t in "${tools[@]}"; do add_program "$out" . "$t"; done
add_program "$out/current" .. "$build_dir/bin/osbq-gateway"
add_program "$out/current" .. "$build_dir/bin/osbq-worker"
if [ -n "$reference" ]; then
  add_program "$out/reference" .. "$reference/bin/osbq-gateway"
  add_program "$out/reference" .. "$reference/bin/osbq-worker"
fi

# Every library of every program resolves inside the pack, through the packed loader.
for prog in "$out"/real/* "$out"/*/real/*; do
  while read -r line; do
    case "$line" in
      *" => "/*)
        path=${line#* => }
        path=${path%% (*}
        case "$(realpath "$path")" in
          "$out"/*) ;;
          *) die "$prog: $line resolves outside the pack" ;;
        esac
        ;;
      *" => not found"*) die "$prog: $line" ;;
    esac
  done < <("$out/$loader" --library-path "$out/lib" --list "$prog")
done
# Each wrapper starts its program.
"$out/bin/redis-server" --version >/dev/null || die "the packed redis-server does not start"
"$out/bin/taskset" -c 0 true || die "the packed taskset does not run"
"$out/current/bin/osbq-gateway" --version >/dev/null || die "the packed osbq-gateway does not start"

describe() { git -C "$1" describe --always --dirty 2>/dev/null || echo "?"; }
ref_source() { # the source tree of a build directory, from its CMake cache
  sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt" 2>/dev/null
}
{
  echo "packed by bench/device/pack.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ) from $top ($(describe "$top"))"
  echo "current: $(realpath "$build_dir") (source $(ref_source "$build_dir"), now at $(describe "$(ref_source "$build_dir")"))"
  [ -z "$reference" ] ||
    echo "reference: $(realpath "$reference") (source $(ref_source "$reference"), now at $(describe "$(ref_source "$reference")"))"
  echo "loader: $loader; tools: ${tools[*]}"
  "$out/current/bin/osbq-gateway" --version 2>&1 | head -1 | sed 's/^/current osbq-gateway: /'
  [ -z "$reference" ] ||
    "$out/reference/bin/osbq-gateway" --version 2>&1 | head -1 | sed 's/^/reference osbq-gateway: /'
  "$out/bin/redis-server" --version | sed 's/^/redis: /'
  echo "size: $(du -sh "$out" | cut -f1)"
  (cd "$out" && find . -type f | sort)
} >"$out/MANIFEST"
sed -n '1,9p' "$out/MANIFEST"
