#!/usr/bin/env python3
"""The long_ops_exec case of bench/run.sh (issue 19): exec programs on one gateway and one
worker, against a stack bench/run.sh started on the catalog this script writes. One phase per
call; each prints NAME=VALUE lines. Every loop is bounded.

  catalog PATH          writes bench/catalog.json plus the exec plans (absolute paths to
                        bench/exec/) to PATH
  old_style N           N async provisions whose program sleeps 30 s (one step, watched by
                        the worker's exec loop): seconds from the first acceptance and from
                        the last to the last end, the worker's threads and RSS meanwhile
  poll_style N          N async provisions whose program answers in progress for 60 s and is
                        polled (a program run per step): seconds from the last acceptance to
                        the last end

usage: long_ops_exec.py catalog PATH
       long_ops_exec.py PHASE GATEWAY_PORT REDIS_PORT WORKER_PID PASSWORD_FILE N"""

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)

import long_ops  # noqa: E402 (bench/long_ops.py: the stack helpers of the sim phases)

SLEEP_PLAN = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f201"
POLL_PLAN = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f202"
SLEEP_S = 30
WAIT_S = 60


def write_catalog(path):
    with open(os.path.join(BENCH_DIR, "catalog.json")) as f:
        catalog = json.load(f)

    def plan(pid, name, shell, script, env):
        return {"id": pid, "name": name, "description": name, "free": True,
                "osbq": {"backend": "exec", "timeout_ms": 600000, "env": env,
                         "command": [shell, os.path.join(BENCH_DIR, "exec", script)]}}

    catalog["services"][0]["plans"] += [
        plan(SLEEP_PLAN, "exec-sleep", "/bin/sh", "sleep.sh", {"SLEEP_S": str(SLEEP_S)}),
        plan(POLL_PLAN, "exec-poll", "/bin/sh", "poll.sh", {"WAIT_S": str(WAIT_S)}),
    ]
    with open(path, "w") as f:
        json.dump(catalog, f)


def accept(port, password, plan, count):
    """count async provisions on long_ops.SENDERS connections, each retried after a 503 (the
    gateway's Redis call timed out: on a loaded shared machine it happens, and a platform
    retries too); returns when the last was accepted, and how many 503s there were."""
    retried = []

    def send(sender):
        b = long_ops.Broker(port, password)
        for _ in range(sender, count, long_ops.SENDERS):
            for _attempt in range(20):
                _, status, data = b.provision(plan, True)
                if status != 503:
                    break
                retried.append(1)
                time.sleep(0.5)
            if status != 202:
                raise RuntimeError("provision: %d %r" % (status, data[:200]))

    with ThreadPoolExecutor(long_ops.SENDERS) as pool:
        list(pool.map(send, range(long_ops.SENDERS)))
    return time.monotonic(), len(retried)


def threads(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def failed_ops(redis_port):
    return long_ops.redis(redis_port, "EVAL", "local n = 0 for _, k in ipairs(redis.call('KEYS', "
                          "'osbq:op:*')) do if redis.call('HGET', k, 'state') == 'failed' then "
                          "n = n + 1 end end return n", 0)


def phase_old_style(port, redis_port, worker, password, n):
    t0 = time.monotonic()
    last, retried = accept(port, password, SLEEP_PLAN, n)
    peak_threads, peak_rss = 0, 0.0
    deadline = time.monotonic() + SLEEP_S + 300
    ended = None
    while time.monotonic() < deadline:
        peak_threads = max(peak_threads, threads(worker))
        peak_rss = max(peak_rss, long_ops.rss_mb(worker))
        if long_ops.unfinished(redis_port) == 0:
            ended = time.monotonic()
            break
        time.sleep(0.2)
    long_ops.report(old_style_ops=n, old_style_sleep_s=SLEEP_S, accept_s=last - t0,
                    accept_503=retried,
                    all_ended_after_first_accept_s=(ended - t0) if ended else "timeout",
                    end_after_last_accept_s=(ended - last) if ended else "timeout",
                    failed=failed_ops(redis_port), worker_threads_peak=peak_threads,
                    worker_rss_mb_peak=peak_rss)


def phase_poll_style(port, redis_port, worker, password, n):
    t0 = time.monotonic()
    last, retried = accept(port, password, POLL_PLAN, n)
    ended = long_ops.wait_unfinished(redis_port, 0, WAIT_S + 300)
    long_ops.report(poll_style_ops=n, poll_style_wait_s=WAIT_S, accept_s=last - t0,
                    accept_503=retried,
                    end_after_last_accept_s=(ended - last) if ended else "timeout",
                    failed=failed_ops(redis_port), worker_rss_mb=long_ops.rss_mb(worker))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "catalog":
        write_catalog(sys.argv[2])
        return
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    phase = sys.argv[1]
    port, redis_port, worker = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    with open(sys.argv[5]) as f:
        password = f.read().strip()
    {"old_style": phase_old_style, "poll_style": phase_poll_style}[phase](
        port, redis_port, worker, password, int(sys.argv[6]))


if __name__ == "__main__":
    main()
