#!/usr/bin/env python3
"""Where a synchronous lifecycle's CPU goes, by process, this build against another side by side
(issue 45): for each build in turn, round after round, a stack of its own (a redis-server, one
gateway and one worker of the build, bench/catalog.json, started and stopped by PID on loopback,
the bench's settings), 2 s of wrk to warm it, then --seconds of wrk (2 threads, 64 connections)
running bench/lua/lifecycle.lua (synchronous provision, bind, unbind, deprovision, sim 0 ms),
as the lifecycle case of bench/run.sh does. Each process's CPU (user + system, /proc/PID/stat)
is read around the measured run and divided by the lifecycles wrk completed.

Printed: per build the medians of the rounds (lifecycles a second; µs of CPU per lifecycle in
Redis, the gateway, the worker and the three together), then the ratio of each (this build /
reference). On two cores the three share the machine with wrk, so a lifecycle's rate follows
their sum; Redis's part is the one bench/script_cost.py breaks down by script.

usage: bench/lifecycle_cpu.py BUILD_DIR [--reference BUILD_DIR] [--rounds N] [--seconds S]
       [--json FILE] [NAME=VALUE...]   (OSBQ_* settings more, for this build's daemons only)"""

import argparse
import base64
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(BENCH_DIR, "lib"))

from own_stack import own_stack  # noqa: E402 (found through the path set above)

RATE = re.compile(r"^BENCH .*\brate=([\d.]+)", re.M)
PARTS = ("redis", "gateway", "worker")


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)


def wrk(port, password, seconds, tag):
    token = base64.b64encode(("bench:%s" % password).encode()).decode()
    out = subprocess.run(
        ["wrk", "-t2", "-c64", "-d%ds" % seconds, "--timeout", "10s",
         "-H", "Authorization: Basic " + token, "-H", "X-Broker-API-Version: 2.17",
         "-s", os.path.join(BENCH_DIR, "lua", "lifecycle.lua"),
         "http://127.0.0.1:%d" % port, "--", "tag=" + tag],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False).stdout
    m = RATE.search(out)
    if m is None:
        sys.exit("lifecycle_cpu: wrk printed no BENCH line:\n" + out[-2000:])
    return float(m.group(1))


def one_round(build_dir, seconds, settings, round_no):
    """One stack of build_dir: lifecycles a second and µs of CPU per lifecycle by process."""
    with own_stack(build_dir, "osbq-bench-lifecycle-cpu-", **settings) as (stack, password):
        gateway = stack.start_gateway(ready_path="/readyz")
        worker = stack.start_worker()
        pids = {"redis": stack.redis.proc.pid, "gateway": gateway.pid, "worker": worker.pid}
        wrk(gateway.port, password, 2, "w%d" % round_no)
        before = {name: cpu_ticks(pid) for name, pid in pids.items()}
        rate = wrk(gateway.port, password, seconds, "m%d" % round_no)
        after = {name: cpu_ticks(pid) for name, pid in pids.items()}
    lifecycles = rate * seconds
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    got = {"lifecycles_per_s": rate}
    for name in PARTS:
        got[name + "_us"] = (after[name] - before[name]) * tick_us / lifecycles
    got["total_us"] = sum(got[name + "_us"] for name in PARTS)
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--reference")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--json")
    ap.add_argument("settings", nargs="*", metavar="NAME=VALUE")
    a = ap.parse_intermixed_args()
    if shutil.which("wrk") is None:
        sys.exit("lifecycle_cpu: wrk is not installed (bench/run.sh installs it)")
    settings = dict(word.split("=", 1) for word in a.settings)
    builds = [("current", a.build_dir, settings)]
    if a.reference:
        builds.append(("reference", a.reference, {}))
    rounds = {label: [] for label, _, _ in builds}
    for r in range(a.rounds):
        for label, build_dir, extra in builds:
            rounds[label].append(one_round(build_dir, a.seconds, extra, r))
    medians = {label: {key: statistics.median(run[key] for run in runs) for key in runs[0]}
               for label, runs in rounds.items()}
    keys = ["lifecycles_per_s"] + [name + "_us" for name in PARTS] + ["total_us"]
    print("%-10s %s" % ("", " ".join("%16s" % key for key in keys)))
    for label, m in medians.items():
        print("%-10s %s" % (label, " ".join("%16.1f" % m[key] for key in keys)))
    if a.reference:
        cur, ref = medians["current"], medians["reference"]
        print("%-10s %s" % ("ratio", " ".join("%16.3f" % (cur[key] / ref[key]) for key in keys)))
    print("(medians of %d rounds of %d s, taken in turn)" % (a.rounds, a.seconds))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"medians": medians, "rounds": rounds}, f, indent=1)


if __name__ == "__main__":
    main()
