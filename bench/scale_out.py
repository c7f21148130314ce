#!/usr/bin/env python3
"""The scale_out case of bench/run.sh (issue 29): whether capacity grows with the fleet. Each run
gets a stack of its own (a redis-server, gateways and workers of BUILD_DIR on loopback, started
and stopped by PID with the integration tests' launcher, bench/catalog.json), a 2-second
unrecorded warm-up, then --duration seconds of wrk (bench/lua/lifecycle.lua: synchronous
provision, bind, unbind, deprovision of each new instance), one wrk per gateway, each with its
share of --threads and --connections:

  fleet  the instant plan (sim, 0 ms): the broker's own work, with G gateways and G workers for
         each GxG of --fleet (default 1x1,2x2,4x4,8x8)
  cpu    backend-bound work: the same lifecycles on a plan whose every step burns --cpu-ms of a
         core (sim's cpu_ms, default 20), 1 gateway and W workers for each W of --cpu-workers
         (default 1,2,4,8), each worker with --cpu-slots slots (default 1: a worker is one
         core's worth of backend work, so the figure says whether work spreads over workers),
         --cpu-connections in all (default 32); its throughput is in operations (steps) per
         second, as a lifecycle queued behind the others' may not end within a short run

With at least 8 cores (--pin auto) Redis, the broker (gateways and workers) and the load
generator (wrk, and this script) run on separate cores, pinned with taskset -a -p (every thread)
once started: Redis on the last core, wrk on the quarter before it, the broker on the rest. With
fewer, nothing is pinned and every figure is a shared-core one (the output says so).

Per run: lifecycles per second (wrk's deprovision 200s over its seconds); Redis CPU (INFO cpu
used_cpu_user + used_cpu_sys, delta over the load) and lifecycles per second of Redis CPU
(lifecycles / that delta: a figure that holds across machines while Redis is the limit); each
group's CPU in cores (utime + stime deltas of /proc/<pid>/stat for Redis and for every gateway
and worker, wrk's own rusage); p50 and p99 per request; unexpected answers and socket errors,
which make the script exit 1. The summary gives the medians over --runs, each fleet shape's
ratio to 1x1, each cpu shape's ratio to 1 worker, and with --reference DIR (the build directory
of another commit, measured right after each run of this one) this build's ratio to it, shape by
shape. A build whose catalog check refuses cpu_ms (before issue 29) skips the cpu part.

--json FILE gets every figure, rewritten after each run (a run cut short keeps what it had);
--deadline-s S skips what would end past S seconds from the start; --check-maps DIR reports
every shared object a daemon or wrk maps from outside DIR (bench/device/scale_out.sh: binaries
carried with their libraries and loader).

usage: scale_out.py BUILD_DIR [--reference DIR] [--fleet LIST] [--cpu-workers LIST]
         [--cpu-ms MS] [--cpu-slots N] [--cpu-connections C] [--runs N] [--duration S]
         [--warmup S] [--threads T] [--connections C] [--pin auto|on|off] [--deadline-s S]
         [--json FILE] [--check-maps DIR]   (--pin on with 2 cores: a test of the pinning, Redis
         and wrk on one core, the broker on the other)"""

import argparse
import base64
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(BENCH_DIR, "..", "tests", "lib"))

import osbq_stack  # noqa: E402 (found through the path set above)

CPU_PLAN = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f1c0"  # the cpu part's plan, added to the catalog
QUEUE = "osbq:queue"
PIN_MIN_CORES = 8
BENCH_LINE = re.compile(r"^BENCH (.*)$", re.M)
COUNTS_LINE = re.compile(r"^BENCH_COUNTS (.*)$", re.M)
# The answers of lifecycle.lua that end an operation (a step of a lifecycle) as expected.
EXPECTED = ("provision 201", "bind 201", "unbind 200", "deprovision 200")
CLK_TCK = os.sysconf("SC_CLK_TCK")
# What one run may take beyond its warm-up and load: a stack's start and stop, the wait for
# the queue to empty (--deadline-s).
RUN_OVERHEAD_S = 15


class Unsupported(Exception):
    """The build refuses the run's catalog (a build before sim's cpu_ms)."""


def parse_list(text, what):
    if text in ("", "none"):
        return []
    try:
        items = [int(w) for w in text.split(",")]
    except ValueError:
        sys.exit("scale_out: %s must be a comma-separated list of numbers, not %r" % (what, text))
    if any(i < 1 for i in items):
        sys.exit("scale_out: %s: every number must be at least 1" % what)
    return items


def parse_shapes(text):
    shapes = []
    for word in ([] if text in ("", "none") else text.split(",")):
        m = re.match(r"^(\d+)x(\d+)$", word)
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
            sys.exit("scale_out: --fleet takes GxW words (gateways x workers), not %r" % word)
        shapes.append((int(m.group(1)), int(m.group(2))))
    return shapes


def cpu_ranges(cpus):
    """"0-3,8" for [0, 1, 2, 3, 8]."""
    out, cpus = [], sorted(cpus)
    start = prev = None
    for c in cpus + [None]:
        if start is not None and (c is None or c != prev + 1):
            out.append("%d" % start if start == prev else "%d-%d" % (start, prev))
            start = None
        if c is not None and start is None:
            start = c
        prev = c
    return ",".join(out)


def core_groups(mode):
    """{"redis", "load", "broker": [cpu...]} or None (shared cores)."""
    cpus = sorted(os.sched_getaffinity(0))
    if mode == "off" or (mode == "auto" and len(cpus) < PIN_MIN_CORES):
        return None
    if len(cpus) < 3:
        # --pin on with 2 cores: a test of the pinning itself, Redis and wrk sharing a core.
        if len(cpus) < 2:
            sys.exit("scale_out: --pin on needs at least 2 cores")
        return {"broker": cpus[:1], "load": cpus[1:], "redis": cpus[1:]}
    load = max(1, len(cpus) // 4)
    return {"broker": cpus[:len(cpus) - 1 - load], "load": cpus[len(cpus) - 1 - load:-1],
            "redis": cpus[-1:]}


def pin(pid, cpus):
    """Every thread of pid on cpus: taskset -a -p where there is one, else sched_setaffinity
    thread by thread."""
    taskset = shutil.which("taskset")
    if taskset:
        subprocess.run([taskset, "-a", "-p", "-c", cpu_ranges(cpus), str(pid)], check=True,
                       stdout=subprocess.DEVNULL)
        return
    for tid in os.listdir("/proc/%d/task" % pid):
        os.sched_setaffinity(int(tid), cpus)


def allowed(pid):
    """The set of CPUs every thread of pid may run on (their union)."""
    seen = set()
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                for line in f:
                    if line.startswith("Cpus_allowed_list:"):
                        for part in line.split(":", 1)[1].strip().split(","):
                            lo, _, hi = part.partition("-")
                            seen.update(range(int(lo), int(hi or lo) + 1))
        except FileNotFoundError:
            pass  # the thread ended meanwhile
    return seen


def proc_cpu_s(pid):
    """utime + stime of a process (all its threads), in seconds; 0 once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def outside_maps(pid, root):
    """Shared objects pid maps from outside root."""
    out = set()
    try:
        with open("/proc/%d/maps" % pid) as f:
            for line in f:
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) == 6 else ""
                if ".so" in os.path.basename(path) and not path.startswith(root + os.sep):
                    out.add(path)
    except FileNotFoundError:
        pass
    return out


def redis_cpu_s(redis):
    info = dict(line.split(":", 1) for line in redis.command("INFO", "cpu").splitlines()
                if ":" in line)
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def workers_live(port):
    """osbq_workers_live of a gateway's /metrics, or -1 when it does not answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode(errors="replace")
    except (OSError, http.client.HTTPException):
        return -1
    finally:
        conn.close()
    m = re.search(r"^osbq_workers_live (\d+)", text, re.M)
    return int(m.group(1)) if m else -1


def write_catalog(path, cpu_ms):
    """bench/catalog.json plus the cpu part's plan."""
    with open(os.path.join(BENCH_DIR, "catalog.json")) as f:
        catalog = json.load(f)
    catalog["services"][0]["plans"].append({
        "id": CPU_PLAN, "name": "scale-out-cpu", "free": True,
        "description": "Every step burns %d ms of a worker core (scale_out)." % cpu_ms,
        "osbq": {"backend": "sim", "cpu_ms": cpu_ms}})
    with open(path, "w") as f:
        json.dump(catalog, f, indent=1)


class Bench:
    def __init__(self, a):
        self.a = a
        self.t0 = time.monotonic()
        self.groups = core_groups(a.pin)
        self.workdir = tempfile.mkdtemp(prefix="osbq-bench-scale-out-")
        self.password = uuid.uuid4().hex
        self.password_file = os.path.join(self.workdir, "password")
        with open(self.password_file, "w") as f:
            f.write(self.password)
        self.cpu_catalog = os.path.join(self.workdir, "catalog-cpu.json")
        write_catalog(self.cpu_catalog, a.cpu_ms)
        token = base64.b64encode(("bench:%s" % self.password).encode()).decode()
        self.headers = ["-H", "Authorization: Basic " + token, "-H", "X-Broker-API-Version: 2.17"]
        self.wrk = shutil.which("wrk")
        if self.wrk is None:
            sys.exit("scale_out: wrk is not on PATH")
        cores = len(os.sched_getaffinity(0))
        self.threads = a.threads or (len(self.groups["load"]) if self.groups else 2)
        self.runs, self.problems, self.notes = [], [], []
        self.machine = {"cores": cores, "pinned": self.groups is not None,
                        "groups": {k: cpu_ranges(v) for k, v in (self.groups or {}).items()},
                        "threads": self.threads, "connections": a.connections,
                        "cpu_connections": a.cpu_connections, "cpu_ms": a.cpu_ms,
                        "cpu_slots": a.cpu_slots,
                        "duration_s": a.duration, "runs": a.runs}
        if self.groups:
            # This script polls and reads /proc beside the load: on the load generator's cores.
            os.sched_setaffinity(0, self.groups["load"])
            self.say("scale_out: %d cores, pinned with taskset: Redis on %s, broker (gateways "
                     "and workers) on %s, wrk and this script on %s" % (
                         cores, cpu_ranges(self.groups["redis"]),
                         cpu_ranges(self.groups["broker"]), cpu_ranges(self.groups["load"])))
        else:
            self.say("scale_out: SHARED-CORE FIGURES: %d cores (fewer than %d, or --pin off), "
                     "Redis, the broker and wrk share them; nothing is pinned" % (
                         cores, PIN_MIN_CORES))

    def say(self, text):
        print(text, flush=True)

    def problem(self, text):
        self.say("  PROBLEM: " + text)
        self.problems.append(text)

    def left_s(self):
        return self.a.deadline_s - (time.monotonic() - self.t0) if self.a.deadline_s else 1e9

    def start(self, build_dir, catalog, gateways, workers, worker_env):
        settings = {"OSBQ_CATALOG": catalog, "OSBQ_BROKER_USERNAME": "bench",
                    "OSBQ_BROKER_PASSWORD_FILE": self.password_file, "OSBQ_LOG_LEVEL": "warn"}
        run_dir = tempfile.mkdtemp(dir=self.workdir)
        stack = osbq_stack.Stack(*osbq_stack.binaries(build_dir), settings, workdir=run_dir)
        try:
            # Redis as the compose file runs it (bench/capacity.py does the same): osbq's
            # records keep their compact encoding.
            stack.redis.command("CONFIG", "SET", "hash-max-listpack-value", "1024")
            try:
                gws = [stack.start_gateway(name="gateway-%d" % i, ready_path="/readyz")
                       for i in range(gateways)]
            except AssertionError as e:
                if "unknown setting" in str(e):
                    raise Unsupported(str(e).splitlines()[-1])
                raise
            wks = [stack.start_worker(name="worker-%d" % i, **worker_env)
                   for i in range(workers)]
            try:
                osbq_stack.wait_until(
                    lambda: all(workers_live(g.port) >= workers for g in gws), 60,
                    "%d workers connected to each of %d gateways" % (workers, gateways))
            except AssertionError:
                self.problem("%dx%d: workers connected per gateway: %s (expected %d)" % (
                    gateways, workers, [workers_live(g.port) for g in gws], workers))
            if self.groups:
                pin(stack.redis.pid, self.groups["redis"])
                for p in gws + wks:
                    pin(p.pid, self.groups["broker"])
            if self.a.check_maps:
                for p in [stack.redis] + gws + wks:
                    self.check_maps(p.name, p.pid)
            return stack, gws, wks
        except BaseException:
            stack.stop(timeout_s=30)
            raise

    def check_maps(self, name, pid):
        """A problem when pid maps a shared object from outside --check-maps (one line per
        process: the first few paths)."""
        paths = sorted(outside_maps(pid, self.a.check_maps))
        if paths:
            self.problem("%s maps %d shared object(s) from outside %s: %s" % (
                name, len(paths), self.a.check_maps, ", ".join(paths[:4])))

    def wrk_commands(self, gws, seconds, tag, plan):
        n = len(gws)
        threads = max(1, self.threads // n)
        connections = max(threads, (self.a.cpu_connections if plan else self.a.connections) // n)
        prefix = ["taskset", "-c", cpu_ranges(self.groups["load"])] \
            if self.groups and shutil.which("taskset") else []
        cmds = []
        for i, g in enumerate(gws):
            cmds.append(prefix + [self.wrk, "-t%d" % threads, "-c%d" % connections,
                                  "-d%ds" % seconds, "--timeout", "10s"] + self.headers +
                        ["-s", os.path.join(BENCH_DIR, "lua", "lifecycle.lua"),
                         "http://127.0.0.1:%d" % g.port, "--", "tag=%sg%d" % (tag, i)] +
                        (["plan=" + plan] if plan else []))
        return cmds

    def run_wrk(self, cmds, out_prefix):
        """Runs the wrk commands at once; returns their outputs and their CPU seconds."""
        procs, outs = [], []
        preexec = None
        if self.groups and not shutil.which("taskset"):
            cpus = self.groups["load"]

            def preexec():
                os.sched_setaffinity(0, cpus)
        for i, cmd in enumerate(cmds):
            path = "%s-%d.out" % (out_prefix, i)
            outs.append(path)
            with open(path, "w") as f:
                procs.append(subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, preexec_fn=preexec))
        if self.a.check_maps:
            time.sleep(0.5)
            for p in procs:
                self.check_maps("wrk", p.pid)
        cpu, failed = 0.0, []
        for p in procs:
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            cpu += usage.ru_utime + usage.ru_stime
            if p.returncode != 0:
                failed.append(p.returncode)
        texts = []
        for path in outs:
            with open(path) as f:
                texts.append(f.read())
        if failed:
            raise RuntimeError("wrk exited %s:\n%s" % (failed, texts[0][-2000:]))
        return texts, cpu

    def wait_queue(self, redis):
        try:
            osbq_stack.wait_until(lambda: redis.command("ZCARD", QUEUE) == 0, 60,
                                  "the queue to empty")
        except AssertionError:
            self.problem("%d operations still unfinished after 60 s"
                         % redis.command("ZCARD", QUEUE))

    def one_run(self, part, label, build_dir, gateways, workers, run):
        """One stack, its warm-up and its measured load; returns the run's figures."""
        a = self.a
        if part == "fleet":
            catalog, plan, env = os.path.join(BENCH_DIR, "catalog.json"), None, {}
        else:
            catalog, plan = self.cpu_catalog, CPU_PLAN
            env = {"OSBQ_WORKER_CONCURRENCY": str(a.cpu_slots)}
        stack, gws, wks = self.start(build_dir, catalog, gateways, workers, env)
        try:
            tag = "%s%s%dx%dr%d" % (label[0], part[0], gateways, workers, run)
            redis = stack.redis
            run_dir = os.path.dirname(gws[0].log_path)
            if a.warmup > 0:
                self.run_wrk(self.wrk_commands(gws, a.warmup, tag + "w", plan),
                             os.path.join(run_dir, "warmup"))
                self.wait_queue(redis)
            daemons = gws + wks
            broker0 = sum(proc_cpu_s(p.pid) for p in daemons)
            redis0, info0, t0 = proc_cpu_s(redis.pid), redis_cpu_s(redis), time.monotonic()
            texts, load_cpu = self.run_wrk(self.wrk_commands(gws, a.duration, tag + "m", plan),
                                           os.path.join(run_dir, "wrk"))
            wall = time.monotonic() - t0
            info1, redis1 = redis_cpu_s(redis), proc_cpu_s(redis.pid)
            broker1 = sum(proc_cpu_s(p.pid) for p in daemons)
            pinned_ok = None
            if self.groups:
                pinned_ok = allowed(redis.pid) <= set(self.groups["redis"]) and all(
                    allowed(p.pid) <= set(self.groups["broker"]) for p in daemons)
            self.wait_queue(redis)
            for p in daemons:
                if not p.alive():
                    self.problem("%s %s %dx%d run %d: %s stopped" % (
                        label, part, gateways, workers, run, p.name))
        finally:
            stack.stop(timeout_s=30)
        lifecycles, operations, seconds, p50, p99, bad, sock = 0, 0, 0.0, 0.0, 0.0, 0, 0
        unexpected = []
        for text in texts:
            m = BENCH_LINE.search(text)
            if m is None:
                raise RuntimeError("no BENCH line from wrk:\n" + text[-2000:])
            v = dict(w.split("=", 1) for w in m.group(1).split())
            counted = COUNTS_LINE.search(text)
            counts = dict(w.rsplit(":", 1) for w in counted.group(1).split(", ")) \
                if counted and counted.group(1).strip() else {}
            lifecycles += int(counts.get("deprovision 200", 0))
            operations += sum(int(counts.get(k, 0)) for k in EXPECTED)
            seconds = max(seconds, float(v["seconds"]))
            p50, p99 = max(p50, float(v["p50_ms"])), max(p99, float(v["p99_ms"]))
            bad += int(v["unexpected"])
            sock += sum(int(v[k]) for k in ("connect_errors", "read_errors", "write_errors",
                                            "timeouts"))
            unexpected += re.findall(r"^BENCH_UNEXPECTED (.*)$", text, re.M)
        redis_cpu = info1 - info0
        r = {
            "part": part, "label": label, "gateways": gateways, "workers": workers, "run": run,
            "lifecycles": lifecycles, "seconds": round(seconds, 3),
            "lifecycles_per_s": round(lifecycles / seconds, 1) if seconds else 0.0,
            "operations": operations,
            "operations_per_s": round(operations / seconds, 1) if seconds else 0.0,
            "redis_cpu_s": round(redis_cpu, 3),
            "lifecycles_per_redis_cpu_s": round(lifecycles / redis_cpu, 1) if redis_cpu else None,
            "cores": {"redis": round((redis1 - redis0) / wall, 2),
                      "broker": round((broker1 - broker0) / wall, 2),
                      "load": round(load_cpu / wall, 2)},
            "p50_ms": p50, "p99_ms": p99, "unexpected": bad, "socket_errors": sock,
            "pinned_ok": pinned_ok,
        }
        if part == "cpu":
            r["cpu_ms"], r["slots_per_worker"] = a.cpu_ms, a.cpu_slots
        self.say("  %-9s %-5s %dx%d run %d/%d: %8.1f lifecycles/s (%.1f operations/s)  Redis "
                 "%.2f cores (%s lifecycles per Redis CPU s)  broker %.2f cores  wrk %.2f cores  "
                 "p50 %.2f ms  p99 %.2f ms  unexpected %d  socket errors %d%s" % (
                     label, part, gateways, workers, run, a.runs, r["lifecycles_per_s"],
                     r["operations_per_s"],
                     r["cores"]["redis"], r["lifecycles_per_redis_cpu_s"], r["cores"]["broker"],
                     r["cores"]["load"], p50, p99, bad, sock,
                     "" if pinned_ok in (None, True) else "  (NOT PINNED as asked)"))
        if bad or sock:
            self.problem("%s %s %dx%d run %d: %d unexpected answers (%s), %d socket errors" % (
                label, part, gateways, workers, run, bad, "; ".join(unexpected), sock))
        if pinned_ok is False:
            self.notes.append("pinning asked but not in force in %s %s %dx%d run %d "
                              "(Cpus_allowed_list differs)" % (label, part, gateways, workers,
                                                               run))
        return r

    def plan(self):
        """(part, gateways, workers) of every shape, in order."""
        a = self.a
        return [("fleet", g, w) for g, w in a.fleet] + \
            [("cpu", 1, w) for w in a.cpu_workers]

    def main(self):
        a = self.a
        builds = [("current", a.build_dir)] + ([("reference", a.reference)] if a.reference
                                               else [])
        unsupported = {}
        per_run_s = a.warmup + a.duration + RUN_OVERHEAD_S
        for part, gateways, workers in self.plan():
            for run in range(1, a.runs + 1):
                for label, build_dir in builds:
                    if (label, part) in unsupported:
                        continue
                    if self.left_s() < per_run_s:
                        self.notes.append("skipped (--deadline-s): %s %s %dx%d run %d" % (
                            label, part, gateways, workers, run))
                        self.say("  skipped (--deadline-s): %s %s %dx%d run %d" % (
                            label, part, gateways, workers, run))
                        continue
                    try:
                        self.runs.append(self.one_run(part, label, build_dir, gateways,
                                                      workers, run))
                    except Unsupported as e:
                        unsupported[(label, part)] = str(e)
                        self.notes.append("%s: no %s part: its catalog check refuses the cpu "
                                          "plan (%s)" % (label, part, e))
                        self.say("  %s: no %s part (%s)" % (label, part, e))
                    except (AssertionError, RuntimeError, OSError,
                            subprocess.CalledProcessError) as e:
                        self.problem("%s %s %dx%d run %d failed: %s" % (
                            label, part, gateways, workers, run, str(e)[:1500]))
                    self.write_json()
        self.summary()
        self.write_json()
        return 1 if self.problems else 0

    def medians(self):
        rows = {}
        for r in self.runs:
            rows.setdefault((r["part"], r["label"], r["gateways"], r["workers"]), []).append(r)
        out = []
        for (part, label, g, w), rs in rows.items():
            def med(get):
                values = [get(r) for r in rs if get(r) is not None]
                return round(statistics.median(values), 2) if values else None
            out.append({
                "part": part, "label": label, "gateways": g, "workers": w, "runs": len(rs),
                "lifecycles_per_s": med(lambda r: r["lifecycles_per_s"]),
                "lifecycles_per_s_min": min(r["lifecycles_per_s"] for r in rs),
                "lifecycles_per_s_max": max(r["lifecycles_per_s"] for r in rs),
                "operations_per_s": med(lambda r: r["operations_per_s"]),
                "lifecycles_per_redis_cpu_s": med(lambda r: r["lifecycles_per_redis_cpu_s"]),
                "redis_cores": med(lambda r: r["cores"]["redis"]),
                "broker_cores": med(lambda r: r["cores"]["broker"]),
                "load_cores": med(lambda r: r["cores"]["load"]),
                "p50_ms": med(lambda r: r["p50_ms"]), "p99_ms": med(lambda r: r["p99_ms"]),
            })
        for m in out:
            # The fleet in lifecycles; the cpu part in operations (steps), since a lifecycle
            # of 4 steps queued behind the others' may not end within a short run.
            rate = "lifecycles_per_s" if m["part"] == "fleet" else "operations_per_s"
            base = next((b for b in out if b["part"] == m["part"] and b["label"] == m["label"]
                         and b["gateways"] == 1 and b["workers"] == 1), None)
            if base and base[rate]:
                m["ratio_to_1x1"] = round(m[rate] / base[rate], 3)
            if m["label"] == "current":
                ref = next((b for b in out if b["part"] == m["part"] and b["label"] ==
                            "reference" and b["gateways"] == m["gateways"] and
                            b["workers"] == m["workers"]), None)
                if ref and ref[rate] and ref["lifecycles_per_redis_cpu_s"]:
                    m["vs_reference"] = {
                        rate: round(m[rate] / ref[rate], 3),
                        "lifecycles_per_redis_cpu_s": round(
                            m["lifecycles_per_redis_cpu_s"] / ref["lifecycles_per_redis_cpu_s"],
                            3)}
        return out

    def summary(self):
        a = self.a
        self.say("")
        self.say("scale_out summary: medians of %d run(s) of %d s; %s" % (
            a.runs, a.duration, "pinned (Redis %s, broker %s, wrk %s)" % (
                self.machine["groups"]["redis"], self.machine["groups"]["broker"],
                self.machine["groups"]["load"]) if self.groups else
            "SHARED-CORE figures (%d cores, nothing pinned)" % self.machine["cores"]))
        self.say("  %-5s %-9s %-6s %13s %-17s %10s %15s %6s %7s %5s %8s %8s  %s" % (
            "part", "build", "shape", "lifecycles/s", "(min-max)", "ops/s", "per Redis CPU s",
            "Redis", "broker", "wrk", "p50 ms", "p99 ms", "ratio (fleet: lifecycles/s, "
            "cpu: ops/s)"))
        for m in self.medians():
            ratio = []
            if "ratio_to_1x1" in m:
                ratio.append("%.2fx of %s" % (m["ratio_to_1x1"], "1x1" if m["part"] == "fleet"
                                               else "1 worker"))
            vs = m.get("vs_reference")
            if vs:
                ratio.append("%.2fx reference (%.2fx per Redis CPU s)" % (
                    vs.get("lifecycles_per_s", vs.get("operations_per_s")),
                    vs["lifecycles_per_redis_cpu_s"]))
            self.say("  %-5s %-9s %-6s %13.1f (%7.1f-%7.1f) %10.1f %15s %6.2f %7.2f %5.2f %8.2f "
                     "%8.2f  %s" % (m["part"], m["label"], "%dx%d" % (m["gateways"],
                                                                      m["workers"]),
                                    m["lifecycles_per_s"], m["lifecycles_per_s_min"],
                                    m["lifecycles_per_s_max"], m["operations_per_s"],
                                    m["lifecycles_per_redis_cpu_s"], m["redis_cores"],
                                    m["broker_cores"], m["load_cores"], m["p50_ms"],
                                    m["p99_ms"], "; ".join(ratio)))
        if any(r["part"] == "cpu" for r in self.runs):
            self.say("  cpu: every step burns %d ms of CPU, %d slot(s) per worker, 1 gateway; "
                     "4 steps per lifecycle" % (a.cpu_ms, a.cpu_slots))
        for note in self.notes:
            self.say("  note: " + note)
        for p in self.problems:
            self.say("  PROBLEM: " + p)

    def write_json(self):
        if not self.a.json:
            return
        data = {"machine": self.machine, "build_dir": self.a.build_dir,
                "reference": self.a.reference, "runs": self.runs, "medians": self.medians(),
                "notes": self.notes, "problems": self.problems}
        with open(self.a.json + ".tmp", "w") as f:
            json.dump(data, f, indent=1)
        os.replace(self.a.json + ".tmp", self.a.json)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--reference")
    ap.add_argument("--fleet", default="1x1,2x2,4x4,8x8")
    ap.add_argument("--cpu-workers", default="1,2,4,8")
    ap.add_argument("--cpu-ms", type=int, default=20)
    ap.add_argument("--cpu-slots", type=int, default=1)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0,
                    help="wrk threads in all (default: the load generator's cores, or 2)")
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--cpu-connections", type=int, default=32,
                    help="wrk connections in the cpu part (default 32: 4 per slot at 8 workers)")
    ap.add_argument("--pin", choices=("auto", "on", "off"), default="auto")
    ap.add_argument("--deadline-s", type=float, default=0)
    ap.add_argument("--json")
    ap.add_argument("--check-maps")
    a = ap.parse_args()
    a.fleet = parse_shapes(a.fleet)
    a.cpu_workers = parse_list(a.cpu_workers, "--cpu-workers")
    if min(a.runs, a.duration, a.connections, a.cpu_connections, a.cpu_ms, a.cpu_slots) < 1 \
            or a.warmup < 0:
        ap.error("--runs, --duration, --connections, --cpu-connections, --cpu-ms and "
                 "--cpu-slots must be positive")
    a.build_dir = os.path.abspath(a.build_dir)
    a.reference = os.path.abspath(a.reference) if a.reference else None
    a.check_maps = os.path.realpath(a.check_maps) if a.check_maps else None
    bench = Bench(a)
    try:
        status = bench.main()
    finally:
        shutil.rmtree(bench.workdir, ignore_errors=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
