#!/usr/bin/env python3
"""The long_ops case of bench/run.sh (issue 19): long sim operations on one gateway and one
worker, against a stack bench/run.sh started. One phase per call; each prints NAME=VALUE lines
(and a human line on stderr). Every loop is bounded.

  in_flight N   N async provisions of 10 minutes (polled every minute), accepted as fast as
                8 connections go; then, with all of them in flight: the worker's RSS, Redis
                memory per operation, and over 10 s the Redis calls per second and the worker's
                CPU seconds per second (the polls' cost)
  on_time N     N async provisions of 60 s; seconds from the last acceptance to the last end
  hol N         N long provisions in flight; 10 s of synchronous 0-ms provision + deprovision
                cycles (p50, p99), then the same while a burst of N more long provisions is sent
  threads PLAN N  N async provisions of 6 s on PLAN (sim steps, or sim blocking: a thread per
                operation), then a synchronous 0-ms provision: when all ended after the first
                acceptance, and when the 0-ms one was answered (201, or 504 past the plan's
                sync_timeout_ms) and ended

usage: long_ops.py PHASE GATEWAY_PORT REDIS_PORT WORKER_PID PASSWORD_FILE ARG..."""

import base64
import http.client
import json
import os
import socket
import sys
import threading
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


def polls(port):
    """osbq_polls_total of the gateway."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    for line in text.splitlines():
        if line.startswith("osbq_polls_total "):
            return float(line.split()[1])
    return 0.0


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
    """Synchronous 0-ms provision + deprovision cycles for seconds (or until stop is set);
    each cycle's latency in ms."""
    b = Broker(port, password)
    out = []
    until = time.monotonic() + seconds
    while time.monotonic() < until and not (stop and stop.is_set()):
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


def phase_hol(port, redis_port, worker, password, n):
    accept(port, password, TEN_MINUTES, n, {"sim_poll_ms": POLL_MS})
    sync_cycles(port, password, 2)  # warm up
    quiet = sync_cycles(port, password, 10)
    stop = threading.Event()
    result = {}

    def burst():
        t = time.monotonic()
        accept(port, password, TEN_MINUTES, n, {"sim_poll_ms": POLL_MS})
        result["burst_s"] = time.monotonic() - t
        stop.set()

    thread = threading.Thread(target=burst)
    thread.start()
    during = sync_cycles(port, password, 300, stop)
    thread.join()
    report(hol_in_flight=n, quiet_cycles=len(quiet), quiet_p50_ms=percentile(quiet, 50),
           quiet_p99_ms=percentile(quiet, 99), burst_ops=n, burst_s=result.get("burst_s", 0.0),
           burst_cycles=len(during), burst_p50_ms=percentile(during, 50),
           burst_p99_ms=percentile(during, 99))


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
    if len(sys.argv) < 7:
        sys.exit(__doc__)
    phase = sys.argv[1]
    port, redis_port, worker = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    with open(sys.argv[5]) as f:
        password = f.read().strip()
    args = sys.argv[6:]
    if phase == "threads":
        phase_threads(port, redis_port, worker, password, args[0], int(args[1]))
    else:
        {"in_flight": phase_in_flight, "on_time": phase_on_time,
         "hol": phase_hol}[phase](port, redis_port, worker, password, int(args[0]))


if __name__ == "__main__":
    main()
