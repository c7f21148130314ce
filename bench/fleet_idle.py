#!/usr/bin/env python3
"""What each gateway and worker costs Redis while nothing is asked of the broker (issue 29,
"more processes never cost capacity"): for each GxW of --fleet, a stack of its own (redis-server,
G gateways, W workers of BUILD_DIR on loopback, bench/catalog.json, the workers finding the
gateways in Redis's registry), --settle seconds to start up, then --seconds of quiet: Redis's commands per
second by name (INFO commandstats) and its CPU per second (INFO cpu), with each shape's figures
per process. The background work (registry and status renewals, recovery scans, pings) is what
a larger fleet adds whatever the load; the work per operation is bench/capacity.py's.

usage: bench/fleet_idle.py BUILD_DIR [--fleet 1x1,2x2,4x4] [--seconds S] [--settle S]
       [--json FILE]"""

import argparse
import os
import shutil
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(BENCH_DIR), "tests", "lib"))
sys.path.insert(0, os.path.join(BENCH_DIR, "lib"))

import json_report  # noqa: E402 (found through the paths set above)
import osbq_stack  # noqa: E402 (likewise)
from capacity import OWN_COMMANDS, commandstats, redis_cpu_s  # noqa: E402 (bench/, beside it)


def measure(build_dir, gateways, workers, seconds, settle):
    workdir = tempfile.mkdtemp(prefix="osbq-fleet-idle-")
    with open(os.path.join(workdir, "password"), "w") as f:
        f.write("idle-pass")
    settings = {"OSBQ_CATALOG": os.path.join(BENCH_DIR, "catalog.json"),
                "OSBQ_BROKER_USERNAME": "bench",
                "OSBQ_BROKER_PASSWORD_FILE": os.path.join(workdir, "password"),
                "OSBQ_LOG_LEVEL": "warn"}
    gateway_bin, worker_bin = osbq_stack.binaries(build_dir)
    stack = osbq_stack.Stack(gateway_bin, worker_bin, settings, workdir=workdir)
    try:
        for _ in range(gateways):
            stack.start_gateway(ready_path="/readyz")
        # Workers find every gateway in Redis's registry.
        for _ in range(workers):
            stack.start_worker()
        time.sleep(settle)
        redis = stack.redis
        redis.command("CONFIG", "RESETSTAT")
        cpu0, t0 = redis_cpu_s(redis), time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - t0
        cpu = redis_cpu_s(redis) - cpu0
        stats, _ = commandstats(redis)
    finally:
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    for own in OWN_COMMANDS:
        stats.pop(own, None)
    total = sum(stats.values()) / elapsed
    return {"gateways": gateways, "workers": workers, "seconds": round(elapsed, 1),
            "commands_per_s": round(total, 1),
            "commands_per_s_per_process": round(total / (gateways + workers), 2),
            "redis_cpu_ms_per_s": round(cpu / elapsed * 1000, 2),
            "by_name_per_s": {k: round(v / elapsed, 2) for k, v in sorted(stats.items())}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--fleet", default="1x1,2x2,4x4")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--settle", type=float, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    results = []
    for shape in a.fleet.split(","):
        g, w = (int(x) for x in shape.split("x"))
        r = measure(a.build_dir, g, w, a.seconds, a.settle)
        results.append(r)
        sys.stderr.write("%dx%d: %.1f commands/s (%.2f per process), Redis CPU %.2f ms/s: %s\n" % (
            g, w, r["commands_per_s"], r["commands_per_s_per_process"], r["redis_cpu_ms_per_s"],
            ", ".join("%s %.2f" % kv for kv in r["by_name_per_s"].items())))
    json_report.emit(results, a.json)


if __name__ == "__main__":
    main()
