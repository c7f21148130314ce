#!/usr/bin/env python3
"""What one Redis primary carries for osbq (docs/capacity.md), measured on this machine: a
stack (redis-server with the compose file's hash-max-listpack-value 1024, one gateway, one
worker, bench/catalog.json's instant plan) takes N asynchronous provisions, N polls, N binds,
N binding polls, then N/2 unbinds and N/2 deprovisions, each phase alone. For each phase (an
operation kind) it reads Redis's INFO commandstats (commands per operation in all, EVALSHA
calls, and by name) and INFO cpu (Redis CPU per operation, the scripts of the worker's claim and
finish included); after the provisions and the binds, INFO memory and MEMORY USAGE (bytes per
instance, per binding); at the end MEMORY USAGE of a finished operation of each kind (kept for
OSBQ_RETENTION_S). commandstats cannot tell a script's commands from another's, so with
--monitor M (default 20) each phase is followed by M more operations of its kind under MONITOR
(not counted in the figures above), which gives each script's calls and the commands run
inside each call (tests/lib/redis_monitor.py: the attribution the round-trip guard uses).

Prints a table on stderr and the figures as JSON on stdout (also written to --json FILE).

usage: bench/capacity.py [--build-dir DIR] [--count N] [--threads T] [--monitor M]
       [--json FILE] [NAME=VALUE...]   (more OSBQ_* settings for the gateway and the worker,
                                        e.g. OSBQ_REDIS_MIN_ACKS=1, which also starts a replica)"""

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
sys.path.insert(0, os.path.join(BENCH_DIR, "lib"))

import json_report  # noqa: E402 (found through the paths set above)
import osbq_stack  # noqa: E402 (likewise)
import redis_monitor  # noqa: E402 (likewise)

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


def server_of(fields):
    """"valkey 8.0.1" or "redis 7.0.15" from INFO server's fields: server_name and its own
    <name>_version where the server names itself (Valkey), else redis and redis_version."""
    name = fields.get("server_name") or "redis"
    return "%s %s" % (name, fields.get(name + "_version") or fields.get("redis_version"))


def commandstats(redis):
    """({command: calls}, {command: microseconds spent in it}) of INFO commandstats. A
    script's microseconds include those of the commands it runs."""
    calls, usec = {}, {}
    for key, value in info(redis, "commandstats").items():
        if key.startswith("cmdstat_"):
            fields = dict(f.split("=") for f in value.split(","))
            calls[key[len("cmdstat_"):]] = int(fields["calls"])
            usec[key[len("cmdstat_"):]] = int(fields["usec"])
    return calls, usec


def process_cpu_s(pid):
    """CPU seconds (user and system) a process has used, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def redis_cpu_s(redis):
    i = info(redis, "cpu")
    return float(i["used_cpu_sys"]) + float(i["used_cpu_user"])


def wait_idle(redis, timeout_s=120):
    osbq_stack.wait_until(lambda: redis.command("ZCARD", "osbq:queue") == 0, timeout_s,
                          "every operation to finish")


# The operation kinds, in the order run: (phase, kind, method, path of an instance id, body,
# expected status, share of --count). Each phase works on what the one before left.
QUERY = "?accepts_incomplete=true&service_id=%s&plan_id=%s" % (SERVICE, PLAN)
INSTANCE = "/v2/service_instances/%s"
BINDING = INSTANCE + "/service_bindings/%s-b"
PHASES = (
    ("provision", "async provision", "PUT", INSTANCE + "?accepts_incomplete=true", PROVISION,
     202, 1),
    ("last_operation", "poll", "GET", INSTANCE + "/last_operation", None, 200, 1),
    ("bind", "bind", "PUT", BINDING + "?accepts_incomplete=true",
     {"service_id": SERVICE, "plan_id": PLAN}, 202, 1),
    ("binding_last_op", "poll", "GET", BINDING + "/last_operation", None, 200, 1),
    # As platforms poll: naming the operation of the broker's 202 ({op}: the one the record
    # names last), which the gateway reads alone (docs/decisions/0043).
    ("named_poll", "named poll", "GET", INSTANCE + "/last_operation?operation={op}", None, 200,
     1),
    ("binding_named", "named poll", "GET", BINDING + "/last_operation?operation={op}", None,
     200, 1),
    ("unbind", "unbind", "DELETE", BINDING + QUERY, None, 202, 0.5),
    ("deprovision", "deprovision", "DELETE", INSTANCE + QUERY, None, 202, 0.5),
)


def with_values(phases, size):
    """phases with each provision's and bind's body carrying request values: parameters with a
    value of size bytes and a context with one of size/2 (what sealing at rest encrypts)."""
    if size <= 0:
        return phases
    out = []
    for spec in phases:
        body = spec[4]
        if spec[0] in ("provision", "bind"):
            body = dict(body, parameters={"password": "p" * size},
                        context={"platform": "cloudfoundry", "organization_guid": "o",
                                 "space_guid": "s", "note": "c" * (size // 2)})
        out.append(spec[:4] + (body,) + spec[5:])
    return tuple(out)


# Commands of the measuring itself: not the broker's.
OWN_COMMANDS = ("config|resetstat", "info", "zcard", "echo", "monitor")


def named_operations(redis, path, ids):
    """For a path naming an operation ({op}): the operation each id's instance (or binding, for
    a binding's path) names last, by id; else {}."""
    if "{op}" not in path:
        return {}
    record = "osbq:binding:%s:%s-b" if "service_bindings" in path else "osbq:instance:%s"
    return {i: redis.command("HGET", record % ((i,) * record.count("%s")), "last_op")
            for i in ids}


def run_requests(ids, threads, clients, method, path, body, expect, name, ops):
    """Sends the request of each id on threads threads (a client each); ops: the operation
    each id's request names ({op} in path), by id."""
    def one(k, i):
        target = path % ((i,) * path.count("%s"))
        status, answer = clients[k].request(method, target.replace("{op}", ops.get(i, "")),
                                            body)
        if status != expect:
            raise RuntimeError("%s %s: HTTP %d %r" % (name, i, status, answer[:200]))

    # Each thread takes every threads-th id, so a client is used by one thread only.
    def lane(k):
        for i in ids[k::threads]:
            one(k, i)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lane, range(threads)))


def phase(redis, spec, ids, threads, clients, daemons):
    """Runs one phase's requests over ids, waits until nothing is queued, and returns the
    phase's figures per operation. daemons: {"gateway": pid, "worker": pid}, whose CPU is
    counted too."""
    name, kind, method, path, body, expect, _ = spec
    count = len(ids)
    ops = named_operations(redis, path, ids)
    redis.command("CONFIG", "RESETSTAT")
    cpu0, t0 = redis_cpu_s(redis), time.monotonic()
    daemon0 = {k: process_cpu_s(pid) for k, pid in daemons.items()}
    run_requests(ids, threads, clients, method, path, body, expect, name, ops)
    wait_idle(redis)
    elapsed = time.monotonic() - t0
    cpu = redis_cpu_s(redis) - cpu0
    daemon_cpu = {k: process_cpu_s(pid) - daemon0[k] for k, pid in daemons.items()}
    stats, usec = commandstats(redis)
    for own in OWN_COMMANDS:
        stats.pop(own, None)
    return {
        "phase": name,
        "kind": kind,
        "operations": count,
        "seconds": round(elapsed, 2),
        "redis_cpu_us_per_op": round(cpu / count * 1e6, 1),
        # The daemons' own CPU (clock ticks of /proc: 10 ms each, so only large counts tell).
        "gateway_cpu_us_per_op": round(daemon_cpu["gateway"] / count * 1e6, 1),
        "worker_cpu_us_per_op": round(daemon_cpu["worker"] / count * 1e6, 1),
        # The part of it spent running the scripts; the rest is reading requests, writing
        # replies and the event loop, which is paid per call and per wake-up.
        "in_scripts_us_per_op": round(usec.get("evalsha", 0) / count, 1),
        "commands_in_all_per_op": round(sum(stats.values()) / count, 2),
        "evalsha_per_op": round(stats.get("evalsha", 0) / count, 2),
        "commands_per_op": {k: round(v / count, 2) for k, v in sorted(stats.items())},
    }


def monitored(redis, spec, ids, threads, clients, names):
    """The same phase's requests over a few more ids under MONITOR: each script's calls and
    the commands inside them, per operation (redis_monitor.breakdown)."""
    name, _, method, path, body, expect, _ = spec
    ops = named_operations(redis, path, ids)
    monitor = redis_monitor.Monitor(redis.port)
    try:
        marker = "capacity-%s-%s" % (name, ids[0])
        redis.command("ECHO", marker + "-start")
        run_requests(ids, threads, clients, method, path, body, expect, name, ops)
        wait_idle(redis)
        redis.command("ECHO", marker + "-end")
        osbq_stack.wait_until(lambda: any(marker + "-end" in l for l in monitor.lines()), 10,
                              "the end marker on the MONITOR connection")
        lines = monitor.lines()
    finally:
        monitor.stop()
    start = next(i for i, l in enumerate(lines) if marker + "-start" in l)
    end = next(i for i, l in enumerate(lines) if marker + "-end" in l)
    theirs, _ = redis_monitor.operation_calls(redis_monitor.calls(lines[start + 1:end], names),
                                              list(ids) + list(ops.values()))
    split = redis_monitor.breakdown(theirs, len(ids))
    split["operations"] = len(ids)
    split["commands_in_all_per_op"] = round(sum(c.commands() for c in theirs) / len(ids), 2)
    return split


def memory_usage(redis, key):
    """MEMORY USAGE of key, or None when it is not there."""
    return redis.command("MEMORY", "USAGE", key)


def finished_operation(redis, key):
    """(operation id, MEMORY USAGE of its hash, its state) of the last operation of an
    instance's or a binding's hash."""
    op = redis.command("HGET", key, "last_op")
    if not op:
        return None
    state = redis.command("HGET", "osbq:op:" + op, "state")
    return {"operation": op, "state": state,
            "memory_usage_bytes": memory_usage(redis, "osbq:op:" + op)}


def print_table(results, monitor, memory, out):
    out.write("%-16s %-16s %6s %8s %12s %11s %10s %9s %9s %8s  %s\n" % (
        "phase", "kind", "ops", "seconds", "Redis us/op", "in scripts", "gateway us", "worker us",
        "commands", "EVALSHA", "commands per op by name"))
    for r in results:
        out.write("%-16s %-16s %6d %8.2f %12.1f %11.1f %10.1f %9.1f %9.2f %8.2f  %s\n" % (
            r["phase"], r["kind"], r["operations"], r["seconds"], r["redis_cpu_us_per_op"],
            r["in_scripts_us_per_op"], r["gateway_cpu_us_per_op"], r["worker_cpu_us_per_op"],
            r["commands_in_all_per_op"], r["evalsha_per_op"],
            ", ".join("%s %.2f" % kv for kv in r["commands_per_op"].items() if kv[1] >= 0.01)))
    for name, split in monitor.items():
        out.write("%-16s MONITOR, %d operations: %.2f commands each; %s%s\n" % (
            name, split["operations"], split["commands_in_all_per_op"],
            "; ".join("%s %.2f call(s) of %.2f commands (%s)" % (
                script, s["calls_per_op"], s["commands_inside_per_call"],
                ", ".join("%s %.2f" % kv for kv in s["by_command_per_op"].items()))
                for script, s in split["scripts"].items()),
            "; sent alone: %s" % split["direct_per_op"] if split["direct_per_op"] else ""))
    for k, v in memory.items():
        if isinstance(v, dict):
            out.write("%-58s %8s bytes (%s, %s)\n" % (k, v["memory_usage_bytes"],
                                                     v["operation"], v["state"]))
        else:
            out.write("%-58s %8s bytes\n" % (k, v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(SOURCE_DIR, "build"))
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--monitor", type=int, default=20,
                    help="operations of each kind under MONITOR (0: none)")
    ap.add_argument("--json")
    ap.add_argument("--values", type=int, default=0,
                    help="bytes of a value each provision's and bind's parameters carry, and "
                         "half as many in its context (0: none, as platforms mostly send)")
    ap.add_argument("settings", nargs="*")
    a = ap.parse_args()
    if a.count < 2:
        ap.error("--count must be at least 2")
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
    names = redis_monitor.script_names()
    stack = osbq_stack.Stack(gateway_bin, worker_bin, settings, workdir=workdir)
    results, monitor = [], {}
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
        worker = stack.start_worker()
        daemons = {"gateway": gateway.proc.pid, "worker": worker.proc.pid}
        phases = with_values(PHASES, a.values)
        clients = [Client(gateway.port) for _ in range(a.threads)]
        osbq_stack.wait_until(
            lambda: clients[0].request("PUT", "/v2/service_instances/warm",
                                       PROVISION)[0] in (200, 201),
            30, "a worker to take jobs")
        n = a.count
        ids = ["c%d" % i for i in range(n)]
        watched = ["m%d" % i for i in range(a.monitor)]
        used = {}
        for spec in phases:
            name = spec[0]
            before = int(info(redis, "memory")["used_memory"])
            results.append(phase(redis, spec, ids[:int(n * spec[6])], a.threads, clients,
                                 daemons))
            used[name] = int(info(redis, "memory")["used_memory"]) - before
            if watched:
                monitor[name] = monitored(redis, spec, watched, a.threads, clients, names)
        # c0 .. c(n/2 - 1) were unbound and deprovisioned; the last instance keeps its binding.
        kept, gone = ids[-1], ids[n // 2 - 1]
        memory = {
            "used_memory_per_provisioned_instance_with_its_operation":
                round(used["provision"] / n),
            "used_memory_per_bound_binding_with_its_operation": round(used["bind"] / n),
            "memory_usage_instance_hash": memory_usage(redis, "osbq:instance:" + kept),
            "memory_usage_binding_hash": memory_usage(redis, "osbq:binding:%s:%s-b"
                                                      % (kept, kept)),
            "memory_usage_bindings_set": memory_usage(redis, "osbq:bindings:" + kept),
            "finished_operation_provision": finished_operation(redis, "osbq:instance:" + kept),
            "finished_operation_bind": finished_operation(redis, "osbq:binding:%s:%s-b"
                                                          % (kept, kept)),
            "finished_operation_unbind": finished_operation(redis, "osbq:binding:%s:%s-b"
                                                            % (gone, gone)),
            "finished_operation_deprovision": finished_operation(redis,
                                                                 "osbq:instance:" + gone),
        }
        for c in clients:
            if c.conn is not None:
                c.conn.close()
        report = {"count": n, "settings": extra, "values": a.values, "phases": results,
                  "memory": memory,
                  "monitor": monitor,
                  "redis_version": info(redis, "server")["redis_version"],
                  # Which server ran (OSBQ_TEST_REDIS_SERVER) and its own version: Valkey
                  # answers redis_version 7.2.4 whatever its own.
                  "server": server_of(info(redis, "server"))}
    finally:
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(results, monitor, memory, sys.stderr)
    json_report.emit(report, a.json)


if __name__ == "__main__":
    main()
