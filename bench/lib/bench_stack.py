#!/usr/bin/env python3
"""One stack of the benchmark, started with the launcher the integration tests use
(tests/lib/osbq_stack.py): a redis-server without persistence, then GATEWAYS gateways (each
waited for until /readyz answers 200) and WORKERS workers, on free loopback ports, with the
bench's settings (settings() below) and the NAME=VALUE words given; the word replicas=N first
starts N replicas of the redis-server (each in its own directory) and waits until the primary
sees them in sync. Once all are started it
writes DIR/stack.sh, shell assignments bench/lib/stack.sh reads:

    launched_redis_port=PORT launched_gateway_pids=(PID...) launched_gateway_ports=(PORT...)
    launched_worker_pids=(PID...)

then stays until SIGTERM, and stops what it started by PID, newest first (each daemon: SIGTERM,
again after 3 s, SIGKILL after 13 s: a worker gives its running jobs 10 s of grace after the
first signal and cancels them on the second). While it waits it reaps a daemon that exits, so
the bench sees that PID gone. A start that fails writes DIR/stack.failed and exits 1.

usage: bench_stack.py DIR BUILD_DIR PASSWORD_FILE GATEWAYS WORKERS [replicas=N] [NAME=VALUE...]"""

import os
import signal
import sys
import time

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(BENCH_DIR, "..", "tests", "lib"))

import osbq_stack  # noqa: E402 (found through the path set above)


def settings(password_file, extra=None):
    """The bench's daemon settings (those of scripts/run-local.sh). OSBQ_LOG_LEVEL=warn: at
    info every request writes an access-log line, and that logging would be what is measured."""
    s = {
        "OSBQ_CATALOG": os.path.join(BENCH_DIR, "catalog.json"),
        "OSBQ_BROKER_USERNAME": "bench",
        "OSBQ_BROKER_PASSWORD_FILE": password_file,
        "OSBQ_LOG_LEVEL": "warn",
    }
    s.update(extra or {})
    return s


class StopRequested(Exception):
    pass


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    workdir, build_dir, password_file = sys.argv[1:4]
    gateways, workers = int(sys.argv[4]), int(sys.argv[5])
    extra = dict(word.split("=", 1) for word in sys.argv[6:])
    replicas = int(extra.pop("replicas", "0"))
    stopping = []

    def on_term(signo, frame):
        if not stopping:
            stopping.append(signo)
            raise StopRequested()

    signal.signal(signal.SIGTERM, on_term)
    os.makedirs(workdir, exist_ok=True)
    gateway_bin, worker_bin = osbq_stack.binaries(build_dir)
    stack = None
    status = 0
    try:
        stack = osbq_stack.Stack(gateway_bin, worker_bin, settings(password_file, extra),
                                 workdir=workdir)
        for i in range(replicas):
            replica_dir = os.path.join(workdir, "replica-%d" % i)
            os.makedirs(replica_dir, exist_ok=True)
            stack.processes.append(osbq_stack.Redis(
                replica_dir, name="replica-%d" % i, persistence=osbq_stack.NO_PERSISTENCE +
                ("--replicaof", "127.0.0.1", str(stack.redis.port))))
        osbq_stack.wait_until(
            lambda: stack.redis.command("INFO", "replication").count("state=online") >= replicas,
            30, "%d replica(s) in sync" % replicas)
        gws = [stack.start_gateway(name="gateway-%d" % i, ready_path="/readyz")
               for i in range(gateways)]
        wks = [stack.start_worker(name="worker-%d" % i) for i in range(workers)]
        ready = os.path.join(workdir, "stack.sh")
        with open(ready + ".tmp", "w") as f:
            f.write("launched_redis_port=%d\nlaunched_gateway_pids=(%s)\n"
                    "launched_gateway_ports=(%s)\nlaunched_worker_pids=(%s)\n" % (
                stack.redis.port, " ".join(str(p.pid) for p in gws),
                " ".join(str(p.port) for p in gws), " ".join(str(p.pid) for p in wks)))
        os.rename(ready + ".tmp", ready)
        while True:
            for p in stack.processes:
                p.alive()  # reaps it once it exited
            time.sleep(0.2)
    except StopRequested:
        pass
    except AssertionError as e:
        with open(os.path.join(workdir, "stack.failed"), "w") as f:
            f.write("%s\n" % e)
        status = 1
    finally:
        # A second SIGTERM must not cut the stop short.
        stopping.append(signal.SIGTERM)
        for p in reversed(stack.processes if stack else []):
            try:
                p.stop(timeout_s=13, again_after_s=3)
            except AssertionError as e:
                print("bench: %s" % str(e).split("\n", 1)[0], file=sys.stderr)
    sys.exit(status)


if __name__ == "__main__":
    main()
