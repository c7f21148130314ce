#!/usr/bin/env python3
"""The long_ops case of bench/run.sh (issue 19): long sim operations on one gateway and one
worker, against a stack bench/run.sh started. One phase per call; each prints NAME=VALUE lines
(and a human line on stderr). Every loop is bounded.

  in_flight N   N async provisions of 10 minutes (polled every minute), accepted as fast as
                8 connections go; then, with all of them in flight: the worker's RSS, Redis
                memory per operation, and over 10 s the Redis calls per second and the worker's
                CPU seconds per second (the polls' cost)
  on_time N     N async provisions of 60 s; seconds from the last acceptance to the last end
  hol N [NICE]  N long provisions in flight; 10 s of synchronous 0-ms provision + deprovision
                cycles (p50, p99), then the same while a burst of N more long provisions is sent
                by another process (burst), so the measuring client is alone in its own: its
                latencies hold no wait for a lock its senders hold (Python's GIL); the burst's
                rate and the CPU seconds of each process meanwhile; the time jobs waited in the
                gateway's dispatcher (osbq_dispatch_wait_seconds), by lane. The sender runs at
                nice NICE (default 0; 19: it takes only CPU the broker leaves, as if it ran on
                another host); and the time each process's threads waited for a CPU (their
                run queue wait, ms per s), quiet and during the burst
  burst N       (hol's sender) N async ten-minute provisions on 8 connections; prints
                burst_started once connected, then burst_s
  threads PLAN N  N async provisions of 6 s on PLAN (sim steps, or sim blocking: a thread per
                operation), then a synchronous 0-ms provision: when all ended after the first
                acceptance, and when the 0-ms one was answered (201, or 504 past the plan's
                sync_timeout_ms) and ended

usage: long_ops.py PHASE GATEWAY_PORT REDIS_PORT WORKER_PID GATEWAY_PID PASSWORD_FILE ARG..."""

import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(BENCH_DIR, "..", "tests", "lib"))

import osbq_stack  # noqa: E402 (found through the path set above)

SERVICE = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f001"  # bench/catalog.json
INSTANT = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f101"
TEN_MINUTES = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f103"
MINUTE = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f104"
PLANS = {"six": "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f105",
         "six_blocking": "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f106"}
SENDERS = 8
# How often the operations of the in_flight and hol phases are polled (sim_poll_ms).
POLL_MS = 60000
CONTEXT = {"platform": "cloudfoundry", "organization_guid": "o", "space_guid": "s"}


class Broker:
    """One keep-alive connection to the gateway."""

    def __init__(self, port, password):
        self.port = port
        token = base64.b64encode(("bench:%s" % password).encode()).decode()
        self.headers = {"Authorization": "Basic " + token, "X-Broker-API-Version": "2.17",
                        "Content-Type": "application/json"}
        self.conn = None

    def request(self, method, path, body=None):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            self.conn.request(method, path, body=json.dumps(body) if body is not None else None,
                              headers=self.headers)
            r = self.conn.getresponse()
            data = r.read()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = None
            raise
        return r.status, data

    def provision(self, plan, incomplete, parameters=None):
        body = {"service_id": SERVICE, "plan_id": plan, "organization_guid": "o",
                "space_guid": "s", "context": CONTEXT}
        if parameters:
            body["parameters"] = parameters
        iid = uuid.uuid4().hex
        path = "/v2/service_instances/%s%s" % (iid, "?accepts_incomplete=true" if incomplete
                                               else "")
        status, data = self.request("PUT", path, body)
        return iid, status, data

    def deprovision(self, iid, plan):
        return self.request("DELETE", "/v2/service_instances/%s?service_id=%s&plan_id=%s"
                            % (iid, SERVICE, plan))[0]


def redis(port, *args):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(osbq_stack.encode_command(args))
        return osbq_stack.read_resp(s.makefile("rb"))


def redis_info(port, section, key):
    for line in redis(port, "INFO", section).splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1]
    return None


def redis_calls(port):
    """Commands Redis ran so far (INFO commandstats): all kinds, those the scripts run
    included; and of those, the script calls (EVALSHA, EVAL): the clients' round trips."""
    total = scripts = 0
    for line in redis(port, "INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_"):
            calls = int(line.split("calls=", 1)[1].split(",", 1)[0])
            total += calls
            if line.startswith(("cmdstat_evalsha:", "cmdstat_eval:")):
                scripts += calls
    return total, scripts


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    return text


def polls(port):
    """osbq_polls_total of the gateway."""
    for line in metrics(port).splitlines():
        if line.startswith("osbq_polls_total "):
            return float(line.split()[1])
    return 0.0


def dispatch_waits(port):
    """osbq_dispatch_wait_seconds of the gateway by lane, summed over its platforms: {lane: {le:
    count, "sum": s}}, empty from a gateway without it."""
    out = {}
    for line in metrics(port).splitlines():
        if not line.startswith("osbq_dispatch_wait_seconds"):
            continue
        name, value = line.rsplit(" ", 1)
        lane = out.setdefault(name.split('lane="', 1)[1].split('"', 1)[0], {})
        if "_bucket" in name:
            le = name.split('le="', 1)[1].split('"', 1)[0]
            lane[le] = lane.get(le, 0.0) + float(value)
        elif name.startswith("osbq_dispatch_wait_seconds_sum"):
            lane["sum"] = lane.get("sum", 0.0) + float(value)
    return out


def wait_figures(before, after, prefix):
    """Per lane between two dispatch_waits: jobs, their mean wait and the bucket their p99 falls
    in (the histogram's bound, ms)."""
    figures = {}
    for lane, b in after.items():
        a = before.get(lane, {})
        count = b.get("+Inf", 0) - a.get("+Inf", 0)
        figures["%s_%s_jobs" % (prefix, lane)] = int(count)
        if count == 0:
            continue
        figures["%s_%s_mean_ms" % (prefix, lane)] = (b["sum"] - a.get("sum", 0)) * 1000 / count
        bounds = sorted((float(le), le) for le in b if le not in ("sum", "+Inf"))
        for bound, le in bounds + [(float("inf"), "+Inf")]:
            if b[le] - a.get(le, 0) >= 0.99 * count:
                figures["%s_%s_p99_le_ms" % (prefix, lane)] = bound * 1000
                break
    return figures


def runq_wait_s(pid):
    """Seconds the threads of pid (those alive now) have spent runnable, waiting for a CPU
    (/proc/<pid>/task/<tid>/schedstat, second field)."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass  # a thread that ended meanwhile
    return total / 1e9


def runq_figures(before, after, seconds, prefix):
    return {"%s_runq_%s_ms_per_s" % (prefix, k): (after[k] - before[k]) * 1000 / seconds
            for k in before}


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def accept(port, password, plan, count, parameters=None):
    """count async provisions on SENDERS connections; returns when the last was accepted."""
    def send(sender):
        b = Broker(port, password)
        for _ in range(sender, count, SENDERS):
            _, status, data = b.provision(plan, True, parameters)
            if status != 202:
                raise RuntimeError("provision: %d %r" % (status, data[:200]))

    with ThreadPoolExecutor(SENDERS) as pool:
        list(pool.map(send, range(SENDERS)))
    return time.monotonic()


def waiting(redis_port):
    """Operations in the waiting state (a walk of every operation: seconds for 100,000)."""
    return redis(redis_port, "EVAL", "local n = 0 for _, k in ipairs(redis.call('KEYS', "
                 "'osbq:op:*')) do if redis.call('HGET', k, 'state') == 'waiting' then n = n "
                 "+ 1 end end return n", 0)


def unfinished(redis_port):
    return redis(redis_port, "ZCARD", "osbq:queue")


def wait_unfinished(redis_port, at_most, timeout_s):
    deadline = time.monotonic() + timeout_s
    while unfinished(redis_port) > at_most:
        if time.monotonic() > deadline:
            return None
        time.sleep(0.1)
    return time.monotonic()


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))] if values else float("nan")


def sync_cycles(port, password, seconds, stop=None):
    """Synchronous 0-ms provision + deprovision cycles for seconds (or until stop() is true);
    each cycle's latency in ms."""
    b = Broker(port, password)
    out = []
    until = time.monotonic() + seconds
    while time.monotonic() < until and not (stop and stop()):
        t = time.monotonic()
        iid, status, data = b.provision(INSTANT, False)
        if status != 201 or b.deprovision(iid, INSTANT) != 200:
            raise RuntimeError("sync cycle: %d %r" % (status, data[:200]))
        out.append((time.monotonic() - t) * 1000)
    return out


def report(**values):
    for k, v in values.items():
        print("%s=%s" % (k, v if not isinstance(v, float) else "%.3f" % v))
    sys.stdout.flush()


def phase_in_flight(port, redis_port, worker, password, n):
    # compose/docker-compose.yml's setting: the records keep their compact encoding.
    redis(redis_port, "CONFIG", "SET", "hash-max-listpack-value", "1024")
    before = int(redis_info(redis_port, "memory", "used_memory"))
    t0 = time.monotonic()
    last = accept(port, password, TEN_MINUTES, n, {"sim_poll_ms": POLL_MS})
    deadline = time.monotonic() + 120
    while waiting(redis_port) < n and time.monotonic() < deadline:
        time.sleep(1)
    after = int(redis_info(redis_port, "memory", "used_memory"))
    # The polls' cost in their steady state: every operation accepted and polled once since.
    time.sleep(max(0.0, max(last, t0 + POLL_MS / 1000) + 2 - time.monotonic()))
    polls0, calls0, cpu0 = polls(port), redis_calls(redis_port), cpu_s(worker)
    t1 = time.monotonic()
    time.sleep(10)
    polls1, calls1, cpu1 = polls(port), redis_calls(redis_port), cpu_s(worker)
    t2 = time.monotonic()
    calls0, scripts0 = calls0
    calls1, scripts1 = calls1
    report(in_flight=n, accept_s=last - t0, accept_per_s=n / (last - t0),
           waiting=waiting(redis_port), polls_expected_per_s=n * 1000.0 / POLL_MS,
           polls_per_s=(polls1 - polls0) / (t2 - t1), worker_rss_mb=rss_mb(worker),
           redis_bytes_per_op=(after - before) / n,
           redis_commands_per_s=(calls1 - calls0) / (t2 - t1),
           redis_scripts_per_s=(scripts1 - scripts0) / (t2 - t1),
           worker_cpu_per_s=(cpu1 - cpu0) / (t2 - t1))


def phase_on_time(port, redis_port, worker, password, n):
    t0 = time.monotonic()
    last = accept(port, password, MINUTE, n)
    ended = wait_unfinished(redis_port, 0, 60 + 120)
    report(on_time_ops=n, accept_s=last - t0,
           end_after_last_accept_s=(ended - last) if ended else "timeout",
           worker_rss_mb=rss_mb(worker))


def phase_hol(port, redis_port, worker, gateway, password, n, sender_nice):
    accept(port, password, TEN_MINUTES, n, {"sim_poll_ms": POLL_MS})
    sync_cycles(port, password, 2)  # warm up
    redis_pid = int(redis_info(redis_port, "server", "process_id"))
    pids = {"gateway": gateway, "worker": worker, "redis": redis_pid}
    # Time the broker's threads and this client waited for a CPU: what a busy machine adds.
    runq_pids = dict(pids, measuring=os.getpid())
    waits0 = dispatch_waits(port)
    runq0 = {k: runq_wait_s(pid) for k, pid in runq_pids.items()}
    t = time.monotonic()
    quiet = sync_cycles(port, password, 10)
    quiet_s = time.monotonic() - t
    runq1 = {k: runq_wait_s(pid) for k, pid in runq_pids.items()}
    waits1 = dispatch_waits(port)
    # The sender in a process of its own: in this one, its 8 threads would hold the GIL the
    # measuring loop needs after each of its reads (5 ms switch interval). At sender_nice it
    # yields the CPU to the broker, as a platform on another host would not take it at all.
    sender = subprocess.Popen([sys.executable, os.path.abspath(__file__), "burst", str(port),
                               str(redis_port), str(worker), str(gateway), sys.argv[6], str(n)],
                              stdout=subprocess.PIPE, text=True,
                              preexec_fn=lambda: os.nice(sender_nice))
    if sender.stdout.readline().strip() != "burst_started":
        sender.kill()
        raise RuntimeError("the burst's sender did not start")
    waits2 = dispatch_waits(port)
    cpu0 = {k: cpu_s(pid) for k, pid in pids.items()}
    runq2 = {k: runq_wait_s(pid) for k, pid in runq_pids.items()}
    own0 = os.times()
    t0 = time.monotonic()
    during = sync_cycles(port, password, 300, lambda: sender.poll() is not None)
    wall = time.monotonic() - t0
    own1 = os.times()
    runq3 = {k: runq_wait_s(pid) for k, pid in runq_pids.items()}
    cpu1 = {k: cpu_s(pid) for k, pid in pids.items()}
    waits3 = dispatch_waits(port)
    out = sender.communicate(timeout=300)[0]
    if sender.returncode != 0:
        raise RuntimeError("the burst's sender failed: %d" % sender.returncode)
    burst_s = float(dict(line.split("=", 1) for line in out.split())["burst_s"])
    children = os.times()
    report(hol_in_flight=n, sender_nice=sender_nice, quiet_cycles=len(quiet), quiet_p50_ms=percentile(quiet, 50),
           quiet_p99_ms=percentile(quiet, 99), burst_ops=n, burst_s=burst_s,
           burst_per_s=n / burst_s, burst_cycles=len(during), burst_p50_ms=percentile(during, 50),
           burst_p99_ms=percentile(during, 99), burst_max_ms=max(during),
           burst_p99_ratio=percentile(during, 99) / percentile(quiet, 99),
           # CPU seconds per second of the burst's window: 2 at most on this machine
           cpu_measuring_per_s=(own1.user + own1.system - own0.user - own0.system) / wall,
           cpu_sender_per_s=(children.children_user + children.children_system) / burst_s,
           **{"cpu_%s_per_s" % k: (cpu1[k] - cpu0[k]) / wall for k in pids},
           **runq_figures(runq0, runq1, quiet_s, "quiet"),
           **runq_figures(runq2, runq3, wall, "burst"),
           # Time the jobs waited in the gateway's dispatcher for a worker's slot.
           **wait_figures(waits0, waits1, "quiet_dispatch"),
           **wait_figures(waits2, waits3, "burst_dispatch"))


def phase_burst(port, password, n):
    """hol's sender: connects first, so the measuring loop starts with the burst."""
    brokers = [Broker(port, password) for _ in range(SENDERS)]
    for b in brokers:
        b.request("GET", "/v2/catalog")
    print("burst_started", flush=True)
    t = time.monotonic()

    def send(sender):
        for _ in range(sender, n, SENDERS):
            _, status, data = brokers[sender].provision(TEN_MINUTES, True,
                                                        {"sim_poll_ms": POLL_MS})
            if status != 202:
                raise RuntimeError("provision: %d %r" % (status, data[:200]))

    with ThreadPoolExecutor(SENDERS) as pool:
        list(pool.map(send, range(SENDERS)))
    report(burst_s=time.monotonic() - t)


def phase_threads(port, redis_port, worker, password, plan, n):
    t0 = time.monotonic()
    accept(port, password, PLANS[plan], n)
    b = Broker(port, password)
    t = time.monotonic()
    iid, status, data = b.provision(INSTANT, False)
    answered_s = time.monotonic() - t
    if status not in (201, 504):
        raise RuntimeError("sync provision: %d %r" % (status, data[:200]))
    # 504: the plan's sync_timeout_ms passed first; the operation goes on, polled here.
    deadline = time.monotonic() + 600
    while status == 504 and time.monotonic() < deadline:
        code, body = b.request("GET", "/v2/service_instances/%s/last_operation" % iid)
        if code == 200 and json.loads(body)["state"] != "in progress":
            break
        time.sleep(0.1)
    short_ended_s = time.monotonic() - t
    ended = wait_unfinished(redis_port, 0, 600)
    report(threads_plan=plan, threads_ops=n, all_ended_s=(ended - t0) if ended else "timeout",
           short_status=status, short_answered_s=answered_s, short_ended_s=short_ended_s)


def main():
    if len(sys.argv) < 8:
        sys.exit(__doc__)
    phase = sys.argv[1]
    port, redis_port, worker = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    gateway = int(sys.argv[5])
    with open(sys.argv[6]) as f:
        password = f.read().strip()
    args = sys.argv[7:]
    if phase == "threads":
        phase_threads(port, redis_port, worker, password, args[0], int(args[1]))
    elif phase == "hol":
        phase_hol(port, redis_port, worker, gateway, password, int(args[0]),
                  int(args[1]) if len(args) > 1 else 0)
    elif phase == "burst":
        phase_burst(port, password, int(args[0]))
    else:
        {"in_flight": phase_in_flight,
         "on_time": phase_on_time}[phase](port, redis_port, worker, password, int(args[0]))


if __name__ == "__main__":
    main()
