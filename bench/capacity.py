#!/usr/bin/env python3
"""What one Redis primary carries for osbq (docs/capacity.md), measured on this machine: a
stack (redis-server with the compose file's hash-max-listpack-value 1024, one gateway, one
worker, bench/catalog.json's instant plan) takes N asynchronous provisions, N polls, N binds,
N binding fetches, then N/2 unbinds and N/2 deprovisions, each phase alone. For each phase it
reads Redis's INFO commandstats (commands per operation, by name) and INFO cpu (Redis CPU per
operation, the scripts of the worker's claim and finish included); after the provisions and
the binds, INFO memory and MEMORY USAGE (bytes per instance, per binding, per finished
operation kept for OSBQ_RETENTION_S). Prints a table and writes the figures as JSON.

usage: bench/capacity.py [--build-dir DIR] [--count N] [--threads T] [--json FILE]
       [NAME=VALUE...]   (more OSBQ_* settings for the gateway and the worker, e.g.
                          OSBQ_REDIS_MIN_ACKS=1, which also starts a replica)"""

import argparse
import base64
import http.client
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(BENCH_DIR)
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "lib"))

import osbq_stack  # noqa: E402 (found through the path set above)

SERVICE = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f001"
PLAN = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f101"
PASSWORD = "capacity-pass"
PROVISION = {"service_id": SERVICE, "plan_id": PLAN, "organization_guid": "o", "space_guid": "s"}


class Client:
    """One keep-alive connection per thread to the gateway."""

    def __init__(self, port):
        self.port = port
        self.conn = None
        token = base64.b64encode(("bench:%s" % PASSWORD).encode()).decode()
        self.headers = {"Authorization": "Basic " + token, "X-Broker-API-Version": "2.17",
                        "Content-Type": "application/json"}

    def request(self, method, path, body=None):
        for _ in range(3):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                self.conn.request(method, path, json.dumps(body) if body is not None else None,
                                  self.headers)
                r = self.conn.getresponse()
                data = r.read()
                if r.will_close:
                    self.conn.close()
                    self.conn = None
                return r.status, data
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
        raise RuntimeError("%s %s: no answer" % (method, path))


def info(redis, section):
    text = redis.command("INFO", section)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def commandstats(redis):
    """{command: calls} of INFO commandstats."""
    out = {}
    for key, value in info(redis, "commandstats").items():
        if key.startswith("cmdstat_"):
            fields = dict(f.split("=") for f in value.split(","))
            out[key[len("cmdstat_"):]] = int(fields["calls"])
    return out


def redis_cpu_s(redis):
    i = info(redis, "cpu")
    return float(i["used_cpu_sys"]) + float(i["used_cpu_user"])


def wait_idle(redis, timeout_s=120):
    osbq_stack.wait_until(lambda: redis.command("ZCARD", "osbq:queue") == 0, timeout_s,
                          "every operation to finish")


def phase(redis, name, count, threads, clients, work, expect):
    """Runs work(client, i) for i in range(count) on threads threads, waits until nothing is
    queued, and returns the phase's figures per operation."""
    redis.command("CONFIG", "RESETSTAT")
    cpu0, t0 = redis_cpu_s(redis), time.monotonic()

    def one(i):
        client = clients[i % threads]
        status, body = work(client, i)
        if status not in expect:
            raise RuntimeError("%s %d: HTTP %d %r" % (name, i, status, body[:200]))

    # Each thread takes every threads-th item, so a client is used by one thread only.
    def lane(k):
        for i in range(k, count, threads):
            one(i)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lane, range(threads)))
    wait_idle(redis)
    elapsed = time.monotonic() - t0
    cpu = redis_cpu_s(redis) - cpu0
    stats = commandstats(redis)
    # Commands of the measuring itself: not the broker's.
    for own in ("config|resetstat", "info", "zcard"):
        stats.pop(own, None)
    return {
        "phase": name,
        "operations": count,
        "seconds": round(elapsed, 2),
        "redis_cpu_us_per_op": round(cpu / count * 1e6, 1),
        "commands_per_op": {k: round(v / count, 2) for k, v in sorted(stats.items())},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(SOURCE_DIR, "build"))
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--json")
    ap.add_argument("settings", nargs="*")
    a = ap.parse_args()
    extra = dict(word.split("=", 1) for word in a.settings)
    workdir = tempfile.mkdtemp(prefix="osbq-capacity-")
    with open(os.path.join(workdir, "password"), "w") as f:
        f.write(PASSWORD)
    settings = {"OSBQ_CATALOG": os.path.join(BENCH_DIR, "catalog.json"),
                "OSBQ_BROKER_USERNAME": "bench",
                "OSBQ_BROKER_PASSWORD_FILE": os.path.join(workdir, "password"),
                "OSBQ_LOG_LEVEL": "warn"}
    settings.update(extra)
    gateway_bin, worker_bin = osbq_stack.binaries(a.build_dir)
    stack = osbq_stack.Stack(gateway_bin, worker_bin, settings, workdir=workdir)
    try:
        redis = stack.redis
        redis.command("CONFIG", "SET", "hash-max-listpack-value", "1024")
        if int(extra.get("OSBQ_REDIS_MIN_ACKS", "0")) > 0:
            replica_dir = os.path.join(workdir, "replica")
            os.makedirs(replica_dir)
            stack.processes.append(osbq_stack.Redis(
                replica_dir, name="replica", persistence=osbq_stack.NO_PERSISTENCE +
                ("--replicaof", "127.0.0.1", str(redis.port))))
            osbq_stack.wait_until(lambda: "state=online" in redis.command("INFO", "replication"),
                                  30, "the replica in sync")
        gateway = stack.start_gateway(ready_path="/readyz")
        stack.start_worker()
        clients = [Client(gateway.port) for _ in range(a.threads)]
        osbq_stack.wait_until(
            lambda: clients[0].request("PUT", "/v2/service_instances/warm",
                                       PROVISION)[0] in (200, 201),
            30, "a worker to take jobs")
        n = a.count
        base = "/v2/service_instances/c%d"
        memory = {}
        used0 = int(info(redis, "memory")["used_memory"])
        results = [phase(redis, "provision", n, a.threads, clients,
                         lambda c, i: c.request("PUT", (base % i) + "?accepts_incomplete=true",
                                                PROVISION),
                         (202,))]
        used1 = int(info(redis, "memory")["used_memory"])
        results.append(phase(redis, "last_operation", n, a.threads, clients,
                             lambda c, i: c.request("GET", (base % i) + "/last_operation"),
                             (200,)))
        results.append(phase(redis, "bind", n, a.threads, clients,
                             lambda c, i: c.request(
                                 "PUT", (base % i) + "/service_bindings/b?accepts_incomplete=true",
                                 {"service_id": SERVICE, "plan_id": PLAN}), (202,)))
        used2 = int(info(redis, "memory")["used_memory"])
        results.append(phase(redis, "binding_last_op", n, a.threads, clients,
                             lambda c, i: c.request(
                                 "GET", (base % i) + "/service_bindings/b/last_operation"),
                             (200,)))
        half = n // 2
        query = "?accepts_incomplete=true&service_id=%s&plan_id=%s" % (SERVICE, PLAN)
        results.append(phase(redis, "unbind", half, a.threads, clients,
                             lambda c, i: c.request("DELETE", (base % i) + "/service_bindings/b"
                                                    + query), (202,)))
        results.append(phase(redis, "deprovision", half, a.threads, clients,
                             lambda c, i: c.request("DELETE", (base % i) + query), (202,)))
        op = redis.command("HGET", "osbq:instance:c%d" % (n - 1), "last_op")
        bop = redis.command("HGET", "osbq:binding:c%d:b" % (n - 1), "last_op")
        memory = {
            "used_memory_per_provisioned_instance_with_its_operation": round((used1 - used0) / n),
            "used_memory_per_bound_binding_with_its_operation": round((used2 - used1) / n),
            "memory_usage_instance_hash": redis.command("MEMORY", "USAGE",
                                                        "osbq:instance:c%d" % (n - 1)),
            "memory_usage_instance_operation": redis.command("MEMORY", "USAGE", "osbq:op:" + op),
            "memory_usage_binding_hash": redis.command("MEMORY", "USAGE",
                                                       "osbq:binding:c%d:b" % (n - 1)),
            "memory_usage_binding_operation": redis.command("MEMORY", "USAGE", "osbq:op:" + bop),
            "memory_usage_bindings_set": redis.command("MEMORY", "USAGE",
                                                       "osbq:bindings:c%d" % (n - 1)),
        }
        for c in clients:
            if c.conn is not None:
                c.conn.close()
        report = {"count": n, "settings": extra, "phases": results, "memory": memory,
                  "redis_version": info(redis, "server")["redis_version"]}
    finally:
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print("%-16s %6s %8s %12s  %s" % ("phase", "ops", "seconds", "Redis us/op", "commands per op"))
    for r in results:
        print("%-16s %6d %8.2f %12.1f  %s" % (
            r["phase"], r["operations"], r["seconds"], r["redis_cpu_us_per_op"],
            ", ".join("%s %.2f" % kv for kv in r["commands_per_op"].items() if kv[1] >= 0.01)))
    for k, v in memory.items():
        print("%-58s %8d bytes" % (k, v))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
