#!/usr/bin/env bash
# The benchmark (issues 3 and 9): one command that installs what is missing, builds a Release
# osbq into build-bench/, and measures on loopback, each case on a stack of its own (redis-server,
# workers, gateways and references, started here and stopped here by PID):
#   catalog      GET /v2/catalog (auth + version header); in the same runs, side by side, the
#                same bytes from nginx and from bench/bare_mhd.c (bare libmicrohttpd): ratios
#   accept       async provision accept: PUT ?accepts_incomplete=true with a new id each, 202;
#                with "redis" also selected, each run is followed by a run of the ceiling:
#   redis        redis-benchmark running the EVALSHA call a gateway makes for an accept (its
#                arguments captured with MONITOR): ratio accept / Redis-script ceiling
#   accept_alone the accept case with no worker (jobs wait in Redis): the accept path alone
#   last_op      last_operation polling over --instances instances, half done, half in progress;
#                each run followed by redis-benchmark GET at 50 clients on the same Redis: ratio
#   lifecycle    sync provision -> sync bind -> unbind -> deprovision, sim 0 ms, one gateway and
#                one worker, then two of each
#   sync_cycle   synchronous provision (201) then deprovision (200) of a new instance
#   scale        last_operation over 10,000 of 1,000,000 preloaded finished instances against
#                the same poll with only those 10,000 loaded; Redis memory per instance
#   memory       gateway and worker RSS idle, under 256 connections, with --suspended sync
#                requests waiting on slow sim jobs; cold start to the first 200
#   round_trips  Redis round trips per request per endpoint (tests/integration/test_round_trips.py
#                on the Release build: commands counted per process with MONITOR)
#   long_ops     long sim operations waiting in Redis (issue 19, bench/long_ops.py): 100,000
#                ten-minute provisions in flight (worker RSS, Redis memory per operation, the
#                polls' cost); 10,000 of 60 s on time; 0-ms sync cycles with 10,000 in flight
#                and during a burst of 10,000 more; 160 of 6 s as steps and on threads
#                (--long-ops-scale multiplies the counts, --long-ops-phases picks phases). Not
#                in the default selection: it takes minutes and 100,000 operations' worth of Redis memory.
#   durable      accept and lifecycle with no replica, with a replica, and with a replica and
#                OSBQ_REDIS_MIN_ACKS=1 (WAIT behind each batch), side by side: ratios
#   long_ops_exec  exec programs watched by the worker's event loop (issue 19,
#                bench/long_ops_exec.py): 1,000 old-style programs of 30 s on one worker
#                (OSBQ_WORKER_EXEC_CONCURRENCY raised to their count), 10,000 poll-style exec
#                operations of 60 s (--long-ops-scale multiplies the counts). Not in the
#                default selection either.
#   due          how late the due steps of waiting operations run: 300 provisions of 300 ms
#                through 4 gateways and 2 workers (issue 27, bench/due.py); with
#                --due-reference DIR the same against another build, side by side. Not in
#                the default selection.
#   noisy_neighbor  one tenant's instant provisions alone and beside another tenant's burst of
#                6-s steps (sim steps holding their runner, or old-style exec programs), the
#                burst's throughput beside it and alone, and the shares of two saturating
#                platforms of weights 3 and 1 (issue 28, bench/noisy_neighbor.py;
#                --noisy-count, --noisy-window, --noisy-variant, --noisy-gateways,
#                --noisy-workers, --noisy-reference). Not in the default selection: each run
#                takes about ten minutes.
#   halt         how soon a DELETE halts the creation it meets (issue 42, bench/halt.py): 200
#                provisions of one 30-s step (sim blocking, then exec), each deleted 1 to 10 s
#                after its 202: from the DELETE's 202 to the halted end and to the deprovision's,
#                and the slots still held afterwards (--halt-count N). Not in the default
#                selection.
#   takeover     how soon a SIGKILLed worker's steps run elsewhere (issue 42, bench/takeover.py):
#                2 gateways, 3 workers, 16 clients of async lifecycles and 3 of sync bind +
#                unbind, every step 1.5 s (sim blocking, then exec); a window without kills, then
#                one worker killed every 5 s (and replaced) for --takeover-duration S: from each
#                kill to its steps' next claim, the lifecycles' rate and p99 in both windows,
#                sync 504s, operations lost; with --takeover-reference DIR the same against
#                another build, side by side. Not in the default selection.
#   repair       osbq-ctl at a large broker's size (issue 43, bench/repair.py): --repair-count
#                instances (default 100,000, a fifth bound) cloned from real ones; instance by
#                id, stats, listings, export, import, 1,000 purges: time and peak memory of
#                each; Redis bytes per instance. Not in the default selection.
#   scale_out    capacity as the fleet grows (issue 29, bench/scale_out.py): sync lifecycles
#                with 1x1, 2x2, 4x4 and 8x8 gateways x workers, and 20-ms CPU steps (sim's
#                cpu_ms) with 1, 2, 4 and 8 one-slot workers; lifecycles per second of Redis
#                CPU, each group's CPU, pinned on >= 8 cores (--scale-out-reference DIR). Not
#                in the default selection: 8 stacks, --runs runs each.
# Each case runs --runs times; the summary gives the median, min and max of the rate and of the
# p50/p99 latencies, the ratios, every unexpected status, and the command lines.
# docs/benchmarks.md explains the cases and records figures. Only loopback is used; every loop
# is bounded; whatever this script starts is stopped by PID when it ends, also on Ctrl-C.
#
# Layout: this file reads the options and runs the cases; bench/cases/<case>.sh holds each case;
# bench/lib/ the shared parts: processes.sh (PIDs, traps), build.sh, stack.sh with
# bench_stack.py (a stack started by tests/lib/osbq_stack.py, the integration tests' launcher),
# measure.sh (wrk and redis-benchmark runs, one row per run) and report.py (the summary).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
# The Python parts import each other: no __pycache__ left in the source tree.
export PYTHONDONTWRITEBYTECODE=1

# shellcheck source-path=SCRIPTDIR/..
source bench/lib/processes.sh
source bench/lib/build.sh
source bench/lib/stack.sh
source bench/lib/measure.sh
source bench/cases/catalog.sh
source bench/cases/accept.sh
source bench/cases/accept_alone.sh
source bench/cases/last_op.sh
source bench/cases/lifecycle.sh
source bench/cases/sync_cycle.sh
source bench/cases/scale.sh
source bench/cases/memory.sh
source bench/cases/round_trips.sh
source bench/cases/long_ops.sh
source bench/cases/durable.sh
source bench/cases/long_ops_exec.sh
source bench/cases/due.sh
source bench/cases/noisy_neighbor.sh
source bench/cases/scale_out.sh
source bench/cases/halt.sh
source bench/cases/takeover.sh
source bench/cases/repair.sh

runs=5
duration=10
connections=64
threads=2
threads_given=
instances=10000
scale_instances=1000000
suspended=10000
long_ops_scale=1
long_ops_phases=in_flight,on_time,hol,steps,threads
long_ops_sender_nice=19
exec_poll_limit=
due_reference=
noisy_count=10000
noisy_reference=
scale_out_reference=
noisy_window=120
noisy_variant=sim
noisy_gateways=1
noisy_workers=1
halt_count=200
takeover_duration=60
repair_count=100000
takeover_reference=
all_cases="catalog,accept,redis,accept_alone,last_op,lifecycle,sync_cycle,scale,memory,round_trips,durable"
cases=$all_cases
# Every case, the long one included, for --cases.
known_cases="$all_cases,long_ops,long_ops_exec,due,noisy_neighbor,scale_out,halt,takeover,repair"
build_dir="$top/build-bench"

usage() {
  cat <<'TEXT'
usage: bench/run.sh [options]
  --runs N          runs of each case (default 5); the summary gives medians
  --duration S      seconds of load per run (default 10)
  --connections C   wrk connections, and redis-benchmark clients (default 64)
  --threads T       wrk threads (default 2)
  --instances N     instances preloaded for the last_operation case (default 10000, even)
  --scale-instances N  finished instances preloaded by the scale case (default 1000000)
  --suspended N     sync requests held waiting by the memory case (default 10000)
  --cases LIST      comma-separated subset of (default all but long_ops and long_ops_exec):
                    catalog,accept,redis,accept_alone,last_op,lifecycle,sync_cycle,scale,
                    memory,round_trips,long_ops,long_ops_exec,durable,due,noisy_neighbor,
                    scale_out,halt,takeover,repair
  --long-ops-scale F  multiplies long_ops' and long_ops_exec's counts (default 1; 0.1 for a
                    quick run)
  --long-ops-phases LIST  comma-separated phases of long_ops to run (default all:
                    in_flight,on_time,hol,steps,threads)
  --long-ops-sender-nice N  the nice value of long_ops' hol burst sender (default 19: it takes
                    only the CPU the broker leaves, as a platform on another host; 0: it
                    competes with the broker for this machine's cores)
  --due-reference DIR  the due case also runs the gateway and worker of this build directory
                    (a Release build of another commit), after each run of this one
  --noisy-count N   tenant A's provisions in the noisy_neighbor case (default 10000)
  --noisy-window S  seconds of A's burst the noisy_neighbor case measures, its stack then
                    stopped (default 120; 0: until A's last operation ended)
  --noisy-variant V A's 6-s steps: sim (a sim step holding its runner), exec (an old-style
                    exec program), or both (default sim)
  --noisy-gateways N, --noisy-workers N  the noisy_neighbor stack (default 1 and 1); each
                    tenant's requests go to the gateways in turn
  --noisy-reference DIR  the noisy_neighbor case also runs this build directory's binaries
  --scale-out-reference DIR  the scale_out case also runs this build directory's binaries,
                    after each run of this one
  --halt-count N    provisions the halt case deletes while they run (default 200)
  --repair-count N  instances the repair case makes (default 100000)
  --takeover-duration S  seconds of the takeover case's kills window, one kill every 5 s, after
                    a window of S / 2 without kills (default 60, at least 10)
  --takeover-reference DIR  the takeover case also runs this build directory's binaries, after
                    each run of this one
  --exec-poll-limit N  OSBQ_WORKER_EXEC_CONCURRENCY in long_ops_exec's poll phase (default:
                    the worker's, 256)
  --build-dir DIR   where to build the Release binaries (default build-bench/)
  --env NAME=VALUE  an OSBQ_* setting more for the gateways and workers of the stacks
                    bench/lib/stack.sh starts (lifecycle, long_ops, accept, ...; not the cases
                    whose Python script starts its own); repeatable
  --quick           a smoke run of every case: --runs 1 --duration 2 --instances 2000
                    --scale-instances 50000 --suspended 1000 (options after it still apply)
TEXT
}

positive_int() { [[ $1 =~ ^[1-9][0-9]*$ ]] || die "$2 must be a positive integer, not '$1'"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="${2:-}"; shift 2 ;;
    --duration) duration="${2:-}"; shift 2 ;;
    --connections) connections="${2:-}"; shift 2 ;;
    --threads) threads="${2:-}" threads_given=1; shift 2 ;;
    --instances) instances="${2:-}"; shift 2 ;;
    --cases) cases="${2:-}"; shift 2 ;;
    --build-dir) build_dir="${2:-}"; shift 2 ;;
    --env)
      [[ ${2:-} =~ ^OSBQ_[A-Z0-9_]+= ]] || die "--env takes OSBQ_NAME=VALUE, not '${2:-}'"
      osbq_extra_env+=("$2")
      shift 2
      ;;
    --scale-instances) scale_instances="${2:-}"; shift 2 ;;
    --suspended) suspended="${2:-}"; shift 2 ;;
    --long-ops-scale) long_ops_scale="${2:-}"; shift 2 ;;
    --long-ops-phases) long_ops_phases="${2:-}"; shift 2 ;;
    --long-ops-sender-nice) long_ops_sender_nice="${2:-}"; shift 2 ;;
    --exec-poll-limit) exec_poll_limit="${2:-}"; shift 2 ;;
    --due-reference) due_reference="${2:-}"; shift 2 ;;
    --noisy-count) noisy_count="${2:-}"; shift 2 ;;
    --noisy-reference) noisy_reference="${2:-}"; shift 2 ;;
    --scale-out-reference) scale_out_reference="${2:-}"; shift 2 ;;
    --noisy-window) noisy_window="${2:-}"; shift 2 ;;
    --noisy-variant) noisy_variant="${2:-}"; shift 2 ;;
    --noisy-gateways) noisy_gateways="${2:-}"; shift 2 ;;
    --noisy-workers) noisy_workers="${2:-}"; shift 2 ;;
    --halt-count) halt_count="${2:-}"; shift 2 ;;
    --repair-count) repair_count="${2:-}"; shift 2 ;;
    --takeover-duration) takeover_duration="${2:-}"; shift 2 ;;
    --takeover-reference) takeover_reference="${2:-}"; shift 2 ;;
    --quick) runs=1 duration=2 instances=2000 scale_instances=50000 suspended=1000; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option $1" ;;
  esac
done
positive_int "$runs" --runs
positive_int "$noisy_count" --noisy-count
positive_int "$noisy_gateways" --noisy-gateways
positive_int "$noisy_workers" --noisy-workers
positive_int "$halt_count" --halt-count
positive_int "$repair_count" --repair-count
positive_int "$takeover_duration" --takeover-duration
[ "$takeover_duration" -ge 10 ] || die "--takeover-duration must be at least 10 (two kills)"
[[ $noisy_window =~ ^[0-9]+$ ]] ||
  die "--noisy-window must be a whole number of seconds, not '$noisy_window'"
[[ ",sim,exec,both," == *",$noisy_variant,"* ]] ||
  die "--noisy-variant must be sim, exec or both, not '$noisy_variant'"
positive_int "$duration" --duration
positive_int "$connections" --connections
positive_int "$threads" --threads
positive_int "$instances" --instances
positive_int "$scale_instances" --scale-instances
positive_int "$suspended" --suspended
[ -z "$exec_poll_limit" ] || positive_int "$exec_poll_limit" --exec-poll-limit
[ "$scale_instances" -ge 10000 ] || die "--scale-instances must be at least 10000 (the polled set)"
# Even ids are loaded on the instant plan, odd ones on the hold plan: an even count keeps it half.
[ $((instances % 2)) -eq 0 ] || die "--instances must be even"
[ "$threads" -le "$connections" ] || die "--threads must not exceed --connections"
for c in ${cases//,/ }; do
  [[ ",$known_cases," == *",$c,"* ]] || die "unknown case '$c'"
done
if ! [[ $long_ops_scale =~ ^[0-9]*\.?[0-9]+$ ]] ||
  ! awk -v s="$long_ops_scale" 'BEGIN { exit !(s > 0 && s <= 10) }'; then
  die "--long-ops-scale must be a number above 0, at most 10, not '$long_ops_scale'"
fi
[[ $long_ops_sender_nice =~ ^[0-9]+$ ]] && [ "$long_ops_sender_nice" -le 19 ] ||
  die "--long-ops-sender-nice must be 0 to 19, not '$long_ops_sender_nice'"
for p in ${long_ops_phases//,/ }; do
  [[ ",in_flight,on_time,hol,steps,threads," == *",$p,"* ]] || die "unknown long_ops phase '$p'"
done
want_case() { [[ ",$cases," == *",$1,"* ]]; }

# The report step (bench/lib/report.py): the machine lines, or the summary of $workdir's results.
report() {
  python3 "$top/bench/lib/report.py" "$1" --workdir "$workdir" --top "$top" \
    --build-dir "$build_dir" --runs "$runs" --duration "$duration" --threads "$threads" \
    --connections "$connections" --scale-instances "$scale_instances"
}

main() {
  local t0=$SECONDS
  install_missing
  workdir=$(mktemp -d "${TMPDIR:-/tmp}/osbq-bench.XXXXXX")
  : >"$workdir/commands.txt"
  build_release
  (umask 077 && head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$workdir/broker-password")
  auth_header="Authorization: Basic $(printf 'bench:%s' "$(cat "$workdir/broker-password")" | base64 -w0)"
  version_header="X-Broker-API-Version: 2.17"
  report machine
  if want_case catalog; then case_catalog; fi
  # The Redis-script ceiling is measured beside the accept runs: "redis" alone runs both.
  if want_case accept || want_case redis; then case_accept; fi
  local name
  for name in accept_alone last_op lifecycle sync_cycle scale memory round_trips long_ops durable \
    long_ops_exec due noisy_neighbor scale_out halt takeover repair; do
    if want_case "$name"; then "case_$name"; fi
  done
  local status=0
  report summary || status=1
  echo "bench: done in $((SECONDS - t0)) s"
  return "$status"
}

main
