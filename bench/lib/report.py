#!/usr/bin/env python3
"""The report step of bench/run.sh: the machine line it prints first, and the summary it prints
last, from the files the cases left in the run's directory: one row per run in <result>.tsv
(rate rps p50 p99 max unexpected socket_errors, tab-separated), the memory, scale and cold-start
figures, the round trips, the command lines and the problems. The summary gives the median and
the min-max over the runs and the ratios of medians; it exits 1 when a problem was recorded.

usage: report.py machine|summary --workdir DIR --top DIR --build-dir DIR --runs N --duration S
                 --threads T --connections C --scale-instances N"""

import argparse
import os
import subprocess
import sys

# (result file, label, unit) of each summary row, in the order printed.
ROWS = (
    ("catalog", "1 catalog, osbq (200)", "req/s"),
    ("catalog_nginx", "1 catalog, nginx", "req/s"),
    ("catalog_bare", "1 catalog, bare libmicrohttpd", "req/s"),
    ("accept", "2 provision accept (202)", "req/s"),
    ("redis", "2 redis-benchmark accept EVALSHA", "calls/s"),
    ("accept_alone", "2b provision accept, no worker", "req/s"),
    ("last_op", "3 last_operation (200)", "req/s"),
    ("last_op_get", "3 redis-benchmark GET -c 50", "GET/s"),
    ("lifecycle", "4 lifecycles, 1 gateway 1 worker", "cycles/s"),
    ("lifecycle2", "4 lifecycles, 2 gateways 2 workers", "cycles/s"),
    ("sync_cycle", "sync provision+deprovision", "cycles/s"),
    ("scale_small", "5 last_operation, 10k in Redis", "req/s"),
    ("scale_large", "5 last_operation, {scale} in Redis", "req/s"),
    ("durable_accept_plain", "6 accept, no replica", "req/s"),
    ("durable_accept_r0", "6 accept, replica, MIN_ACKS=0", "req/s"),
    ("durable_accept_r1", "6 accept, replica, MIN_ACKS=1", "req/s"),
    ("durable_lifecycle_plain", "6 lifecycles, no replica", "cycles/s"),
    ("durable_lifecycle_r0", "6 lifecycles, replica, MIN_ACKS=0", "cycles/s"),
    ("durable_lifecycle_r1", "6 lifecycles, replica, MIN_ACKS=1", "cycles/s"),
)

# (label, numerator, denominator, column, target) of each ratio of medians. Column 1 is the
# rate, 3 the p50, 4 the p99.
RATIOS = (
    ("catalog osbq / nginx", "catalog", "catalog_nginx", 1, ">= 1.0"),
    ("catalog osbq / bare libmicrohttpd", "catalog", "catalog_bare", 1, ">= 0.8"),
    ("accept / Redis-script ceiling", "accept", "redis", 1, ">= 0.5"),
    ("accept, no worker / Redis-script ceiling", "accept_alone", "redis", 1, ">= 0.5"),
    ("last_operation / redis-benchmark GET", "last_op", "last_op_get", 1, ">= 0.5"),
    ("lifecycles 2x2 / 1x1", "lifecycle2", "lifecycle", 1, "(scaling)"),
    ("scale p50: {scale} / 10k", "scale_large", "scale_small", 3, "<= 1.10"),
    ("scale p99: {scale} / 10k", "scale_large", "scale_small", 4, "(p99)"),
    ("accept MIN_ACKS=1 / no replica", "durable_accept_r1", "durable_accept_plain", 1, ">= 0.7"),
    ("accept MIN_ACKS=1 / replica, MIN_ACKS=0", "durable_accept_r1", "durable_accept_r0", 1,
     "(cost of WAIT)"),
    ("lifecycles MIN_ACKS=1 / no replica", "durable_lifecycle_r1", "durable_lifecycle_plain", 1,
     "(cost)"),
    ("accept p99 MIN_ACKS=1 / no replica", "durable_accept_r1", "durable_accept_plain", 4,
     "(p99)"),
)


def as_printed(x):
    """x as the earlier awk-based report printed a number before reading it again: integers
    whole, others with 6 significant digits."""
    return float(int(x)) if x == int(x) else float("%.6g" % x)


def median(values):
    v = sorted(values)
    n = len(v)
    return v[(n - 1) // 2] if n % 2 else as_printed((v[n // 2 - 1] + v[n // 2]) / 2)


class Results:
    def __init__(self, workdir):
        self.workdir = workdir

    def path(self, name):
        return os.path.join(self.workdir, name)

    def text(self, name):
        """The file's text, or None when it is missing or empty."""
        try:
            with open(self.path(name)) as f:
                text = f.read()
        except FileNotFoundError:
            return None
        return text if text else None

    def column(self, result, column):
        """Column (1-based) of every row of <result>.tsv; empty when there is none."""
        text = self.text(result + ".tsv")
        if text is None:
            return []
        return [float(line.split("\t")[column - 1]) for line in text.splitlines() if line]

    def stats(self, result, column):
        """(median, min, max) of a column, or None."""
        v = self.column(result, column)
        return (median(v), min(v), max(v)) if v else None


def machine_lines(a):
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                mem_kb = int(line.split()[1])
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    describe = subprocess.run(["git", "-C", a.top, "describe", "--always", "--dirty"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    version = describe.stdout.strip() if describe.returncode == 0 else "not a git tree"
    wrk = subprocess.run(["wrk", "-v"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout.splitlines()
    redis = subprocess.run(["redis-server", "--version"], stdout=subprocess.PIPE,
                           text=True).stdout.split(" ")
    return [
        "machine: %d cores (%s), %.1f GiB memory, load average %s"
        % (len(os.sched_getaffinity(0)), cpu, mem_kb / 1048576, load),
        "osbq: %s, Release build in %s" % (version, a.build_dir),
        "tools: %s, %s" % (" ".join((wrk[0] if wrk else "").split(" ")[:2]),
                           " ".join(redis[:3]).rstrip("\n")),
        "load: wrk -t%d -c%d, %d runs of %d s per case" % (a.threads, a.connections, a.runs,
                                                          a.duration),
    ]


def summary_lines(a, results):
    scale = str(a.scale_instances)
    out = ["", "==== summary: median (min-max) of %d runs" % a.runs]
    out += machine_lines(a)
    out.append("%-34s %9s %-9s %-17s   %-20s   %-20s" % (
        "case", "rate", "unit", "(min-max)", "p50 ms (min-max)", "p99 ms (min-max)"))
    for result, label, unit in ROWS:
        rate, p50, p99 = (results.stats(result, c) for c in (1, 3, 4))
        if rate is None:
            continue
        out.append("%-34s %9.0f %-9s (%6.0f-%6.0f)   %6.2f (%5.2f-%5.2f)   %6.2f (%5.2f-%5.2f)"
                   % ((label.format(scale=scale), rate[0], unit, rate[1], rate[2]) + p50 + p99))
    out += ["", "ratios (medians of runs taken side by side):"]
    for label, top, bottom, column, target in RATIOS:
        a_stats, b_stats = results.stats(top, column), results.stats(bottom, column)
        if a_stats is None or b_stats is None:
            continue
        num, den = a_stats[0], b_stats[0]
        out.append("%-44s %10.2f  (%.6g / %.6g; target %s)"
                   % (label.format(scale=scale), num / den, num, den, target))
    if results.column("sync_cycle", 2):
        out.append("sync_cycle counts two requests per cycle: median %.0f req/s"
                   % results.stats("sync_cycle", 2)[0])
    if results.column("lifecycle", 2):
        out.append("lifecycles count four requests per cycle: median %.0f req/s (1x1); "
                   "target >= 3000 cycles/s" % results.stats("lifecycle", 2)[0])
    if results.column("accept", 4):
        out.append("accept p99 at %d connections: %.2f ms (target <= 5 ms)"
                   % (a.connections, results.stats("accept", 4)[0]))
    per_instance = results.text("scale-bytes")
    if per_instance is not None:
        out.append("Redis memory per finished instance: %s bytes (target <= 1024)"
                   % per_instance.strip())
    keys = results.text("scale-keys")
    if keys is not None:
        d_inst, d_op, l_inst, l_op = keys.split()
        out.append("Redis per live instance once its operation expired (MEMORY USAGE of the "
                   "instance hash): %s bytes with Redis defaults, %s with hash-max-listpack-value "
                   "1024 (target <= 1024); its operation's record until OSBQ_RETENTION_S: %s / %s "
                   "bytes" % (d_inst, l_inst, d_op, l_op))
    idle = results.text("memory-idle")
    if idle is not None:
        def row(name):
            return " ".join((results.text(name) or "").rstrip("\n").split("\t"))
        out.append("RSS MB (gateway, worker): idle %s; at 256 connections %s; suspended "
                   "(gateway, worker, waits) %s (target: gateway <= 32 MB)"
                   % (row("memory-idle"), row("memory-256"), row("memory-held")))
    cold = results.text("cold.tsv")
    if cold is not None:
        starts = [float(line) for line in cold.split()]
        out.append("cold start to the first 200: median %.1f ms (target <= 50 ms)"
                   % as_printed(median(starts)))
    trips = results.text("round_trips.txt")
    if trips is not None:
        out.append("Redis round trips (gateway commands per request; worker commands in the "
                   "window):")
        out += ["  " + line[len("ROUND_TRIPS "):] if line.startswith("ROUND_TRIPS ") else line
                for line in trips.splitlines()]
    scale_out = results.text("scale_out.txt")
    if scale_out is not None:
        out += [""] + scale_out.rstrip("\n").splitlines()
    out += ["", "commands (the osbq stacks: redis-server --bind 127.0.0.1 --save '' "
            "--appendonly no;",
            "osbq-gateway and osbq-worker from %s/bin with OSBQ_LOG_LEVEL=warn; see bench/run.sh):"
            % a.build_dir]
    out += ["  " + line for line in (results.text("commands.txt") or "").splitlines()]
    out.append("")
    problems = results.text("problems.txt")
    if problems is not None:
        out.append("PROBLEMS (unexpected answers, socket errors, stopped daemons, backlogs):")
        out += ["  " + line for line in problems.splitlines()]
    else:
        out.append("no unexpected answers and no socket errors in any run")
    return out, problems is None


def main():
    p = argparse.ArgumentParser(description="the report step of bench/run.sh")
    p.add_argument("what", choices=("machine", "summary"))
    p.add_argument("--workdir", default="")
    p.add_argument("--top", required=True)
    p.add_argument("--build-dir", required=True)
    for name in ("runs", "duration", "threads", "connections", "scale-instances"):
        p.add_argument("--" + name, type=int, required=True)
    a = p.parse_args()
    if a.what == "machine":
        print("\n".join(machine_lines(a)))
        return 0
    lines, clean = summary_lines(a, Results(a.workdir))
    print("\n".join(lines))
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
