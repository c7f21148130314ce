# shellcheck shell=bash
# Installing what the benchmark needs and building the Release binaries it measures (sourced by
# bench/run.sh).

# wrk (the load) and nginx (case catalog's reference) are the benchmark's own packages. Debian's
# nginx package starts a service on port 80 where invoke-rc.d allows it; the benchmark never
# uses that one, only an nginx of its own on a free loopback port.
install_missing() {
  scripts/install-deps.sh
  local missing=() p
  for p in wrk nginx; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null || die "run as root to install ${missing[*]}"
      sudo=(sudo)
    fi
    echo "bench: installing ${missing[*]}" >&2
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
}

build_release() {
  mkdir -p "$build_dir"
  # A build tree never belongs in git, whatever the top-level .gitignore says.
  [ -e "$build_dir/.gitignore" ] || echo "*" >"$build_dir/.gitignore"
  # Release: no sanitizers (OSBQ_SANITIZE empty, also over an older cache), tests not built.
  # OSBQ_WERROR=OFF: -O2 enables warnings (maybe-uninitialized) the Debug build does not see;
  # a benchmark measures, it does not lint.
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DOSBQ_BUILD_TESTS=OFF -DOSBQ_SANITIZE= \
    -DOSBQ_WERROR=OFF >"$workdir/cmake.log" 2>&1 || { cat "$workdir/cmake.log" >&2; die "cmake failed"; }
  cmake --build "$build_dir" -j"$(nproc)" >"$workdir/build.log" 2>&1 ||
    { tail -40 "$workdir/build.log" >&2; die "build failed"; }
  # The bare libmicrohttpd reference: one file, built here rather than by CMake, which builds
  # only what osbq ships.
  bare_bin="$build_dir/bare_mhd"
  # shellcheck disable=SC2046 # pkg-config prints several words
  cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -o "$bare_bin" "$top/bench/bare_mhd.c" \
    $(pkg-config --cflags --libs libmicrohttpd) || die "cannot build bench/bare_mhd.c"
}
