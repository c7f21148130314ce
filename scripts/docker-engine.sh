# shellcheck shell=bash disable=SC2154  # $tmp, $t0, say and skip are the caller's
# The Docker engine the compose and swarm checks run on, sourced by scripts/compose-check.sh and
# scripts/swarm-check.sh: the engine that answers, else dockerd started here (as root) with its
# exec root under the caller's $tmp, stopped again by engine_down, by its PID; when none can
# start, skip() with the reason. The caller defines $tmp, say() and skip().

dockerd_pid=

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

# Starts dockerd with the given options; true once it answers, false (and dockerd stopped) when
# it exits or does not answer within 60 s.
start_dockerd() {
  local log=$tmp/dockerd.log
  dockerd --exec-root "$tmp/dockerd-exec" --pidfile "$tmp/dockerd.pid" "$@" >"$log" 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 1 120); do
    engine_answers && return 0
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.5
  done
  kill "$dockerd_pid" 2>/dev/null
  wait "$dockerd_pid" 2>/dev/null
  dockerd_pid=
  say "dockerd $* did not start; its last lines:"
  tail -5 "$log" | sed 's/^/  /'
  return 1
}

# The engine that answers, or dockerd started with OPTIONS (used only for one started here).
engine_up() { # [OPTION...]
  engine_answers && return 0
  command -v dockerd >/dev/null ||
    skip "no Docker engine answers and dockerd is not installed (docker.io)"
  [ "$(id -u)" -eq 0 ] || skip "no Docker engine answers, and starting dockerd needs root"
  # The defaults first; then without iptables and with the vfs storage driver, for kernels
  # or sandboxes that refuse overlay mounts or netfilter.
  start_dockerd "$@" || start_dockerd --iptables=false --storage-driver=vfs "$@" ||
    skip "no Docker engine answers, and dockerd could not start here (see above)"
  say "started dockerd (pid $dockerd_pid) after $((SECONDS - t0)) s"
}

# Stops the dockerd engine_up started, if any, and unmounts what it left under $tmp.
engine_down() {
  if [ -n "$dockerd_pid" ]; then
    kill "$dockerd_pid" 2>/dev/null
    for _ in $(seq 1 60); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.5; done
    say "stopped the dockerd it started (pid $dockerd_pid)"
    dockerd_pid=
  fi
  # A network namespace dockerd left mounted under its exec root would keep the directory.
  awk -v dir="$tmp/" 'index($2, dir) == 1 { print $2 }' /proc/mounts | sort -r |
    while read -r mount; do umount -l "$mount"; done
}
