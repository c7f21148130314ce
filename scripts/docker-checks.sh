# shellcheck shell=bash disable=SC2154  # $check, $tmp and $t0 are the caller's
# What the compose and swarm checks share, sourced by scripts/compose-check.sh and
# scripts/swarm-check.sh: their lines and exit statuses (prefixed with the caller's $check), the
# caller's variables kept out of the compose files, and the Docker engine they run on: the
# engine that answers, else dockerd started here (as root) with its exec root under the caller's
# $tmp, stopped again by engine_down, by its PID; when none can start, skip() with the reason.

SKIP=77
say() { echo "$check: $*"; }
skip() { say "SKIPPED: $*"; exit "$SKIP"; }
fail() { say "FAILED: $*" >&2; exit 1; }
elapsed() { echo "$((SECONDS - t0)) s"; }

# `env "${unset_caller[@]}" ...`: nothing from the caller's environment substitutes into the files.
unset_caller=()
for name in $(compgen -e); do
  case "$name" in OSBQ_* | COMPOSE_*) unset_caller+=(-u "$name") ;; esac
done

# The compose file's secrets, from the files compose/init-secrets.sh wrote into DIR: the top-level
# `secrets:` of an override file.
secrets_override() { # DIR
  local secrets=$1
  cat <<EOF
secrets:
  broker_password: {file: $secrets/broker_password}
  secret_keys: {file: $secrets/secret_keys}
  bus_gateways_secret: {file: $secrets/bus/gateways_secret}
  bus_gateways: {file: $secrets/bus/gateways}
  bus_worker_secret: {file: $secrets/bus/worker_secret}
EOF
}

# Instance lifecycles through the stack, four a second, from load_start until load_stop (the
# caller's client(): scripts/compose_check_client.py). The caller's cleanup kills $load_pid.
load_pid=
load_start() {
  client load "$tmp/load-stop" "$tmp/load-started" >"$tmp/load.log" 2>&1 &
  load_pid=$!
  for _ in $(seq 1 100); do [ -e "$tmp/load-started" ] && break; sleep 0.2; done
}
# Waits for every lifecycle started; fails unless all succeeded.
load_stop() { # WHAT (the lifecycles ran through it)
  local status=0
  touch "$tmp/load-stop"
  wait "$load_pid" || status=$?
  load_pid=
  cat "$tmp/load.log"
  [ "$status" -eq 0 ] || fail "operations through $1"
}

# The EXIT trap of both checks: stops the load, runs the caller's teardown() (its stack, the
# state printed first when the check failed), the engine, the temporary directory. The check's
# exit status stays.
check_exit() {
  local status=$?
  set +e
  [ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null
  if [ "$status" -ne 0 ] && [ "$status" -ne "$SKIP" ]; then teardown failed; else teardown; fi
  engine_down
  rm -rf "$tmp"
  exit "$status"
}

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
  say "started dockerd (pid $dockerd_pid) after $(elapsed)"
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
