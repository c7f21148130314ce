#!/usr/bin/env python3
"""The noisy_neighbor case of bench/run.sh (issue 28, docs/reliability.md "Fairness"): one
organization's burst of slow steps against another's instant operations. Stacks of their own (a
redis-server, --gateways gateways and --workers workers of BUILD_DIR, on loopback, started and
stopped by PID with the integration tests' launcher), bench/catalog.json plus one exec plan.

Tenant A's provisions keep a worker busy for 6 s each: with --variant sim (the default) a sim
step that holds its runner (six-seconds-blocking); with --variant exec an old-style exec
program that runs 6 s (bench/exec/sleep.sh, one process per operation, watched by the worker's
exec loop; while the worker's exec places, OSBQ_WORKER_EXEC_CONCURRENCY, are all taken, A's
next steps wait for one on their runners). Every tenant's requests go to the gateways in turn
(round robin, as a load balancer spreads them).

Phases, in this order:
  alone   tenant B (organization org-b) sends an asynchronous 0-ms provision every 200 ms for
          10 s; each one's accept-to-succeeded time from Redis (created_ms, finished_ms)
  burst   tenant A (org-a) sends COUNT provisions on 8 connections while B goes on as above;
          B's times, and A's throughput beside B
  a_alone (optional) A's COUNT provisions alone, for its throughput without B
  shares  (optional) two platforms of weights 3 and 1 (OSBQ_PLATFORMS), each one tenant sending
          COUNT of A's provisions at once: each one's share of the work done in the window

With --window 0 (the default) the burst phase runs until A's last operation ended (at most the
time A's work takes alone plus a minute), and a_alone after it on the same stack: A's
throughput is COUNT over its first acceptance to its last end. With --window S (S > 0; for
counts whose work takes longer, as the issue's 10,000: an hour on 16 slots) each phase measures
S seconds from A's first request and its stack is then stopped, A's backlog with it; a_alone
and shares get stacks of their own. A's throughput is then the work done in the window: each
operation counts for the part of its run (first claim to end) inside it, over the window's
length (an operation that ran wholly inside counts 1), which is the operations completed per
second without the error of a batch of 16 ending just inside or outside the window. B's times
are those of the provisions B sent in the window; one that has not ended a minute after the
window counts with its age then (a lower bound), and b_burst_unfinished says how many did so.
The shares phase always uses a window (S, or 60 s with --window 0), starting one step after both
tenants began sending.

Printed as NAME=VALUE lines: b_alone_p50/p99_ms; b_burst_p50/p99/max_ms, b_count,
b_burst_unfinished, and with several gateways the same of the provisions sent through each
(b_burst_gateway<N>_...); a_count, a_ops_per_s_beside_b, window_s; a_ops_per_s_alone and
a_beside_over_alone (a_alone); shares_heavy, shares_light (fractions of the work done),
shares_heavy_over_light (the target is 3) and shares_saturated (both tenants still had
provisions waiting at the window's end) (shares).

usage: noisy_neighbor.py BUILD_DIR [COUNT [a_alone] [shares]] [--variant sim|exec]
                         [--window S] [--gateways N] [--workers N]   (COUNT default 10000)"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from own_stack import BENCH_DIR, INSTANT, Broker, osbq_stack, own_stack, quantiles  # noqa: E402

SIX_BLOCKING = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f106"
EXEC_SIX = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f203"  # added to the catalog by exec_catalog
A_PLAN = {"sim": SIX_BLOCKING, "exec": EXEC_SIX}
STEP_S = 6.0
SLOTS = 16  # the worker's default OSBQ_WORKER_CONCURRENCY
B_EVERY_S = 0.2
B_SECONDS = 10.0
B_LATE_S = 60.0  # how long after a window B's provisions may take to end
SENDERS = 8
SHARES_WINDOW_S = 60.0
WEIGHTS = {"heavy": 3, "light": 1}
NAMESPACE = "osbq"
TIMES_SCRIPT = """
local out = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  local r = redis.call('HMGET', key, 'instance', 'state', 'created_ms', 'started_ms',
                       'finished_ms')
  out[#out + 1] = {r[1] or '', r[2] or '', r[3] or '0', r[4] or '0', r[5] or '0'}
end
return cjson.encode(out)
"""


class Spread:
    """A tenant's requests, sent to the gateways in turn over one connection to each."""

    def __init__(self, ports, password, username="bench", prefix=""):
        self.brokers = [Broker(p, password, username, prefix) for p in ports]
        self.next = 0
        self.gateway_of = {}  # instance id -> the index of the gateway it was sent to

    def provision(self, plan, org):
        """An asynchronous provision that must be accepted; its instance id."""
        gateway = self.next % len(self.brokers)
        self.next += 1
        status, iid = self.brokers[gateway].provision(plan, org)
        if status != 202:
            raise SystemExit("provision answered %d" % status)
        self.gateway_of[iid] = gateway
        return iid


def redis_ms(redis):
    """Redis' clock, the one of the operations' times."""
    s, us = redis.command("TIME")
    return int(s) * 1000 + int(us) // 1000


def times(redis):
    """{instance id: (state, created_ms, started_ms, finished_ms)} of every operation."""
    rows = json.loads(redis.command("EVAL", TIMES_SCRIPT, 0, NAMESPACE + ":op:*"))
    return {r[0]: (r[1], int(r[2]), int(r[3]), int(r[4])) for r in rows}


def ended(t, i):
    return t.get(i, ("",))[0] in ("succeeded", "failed")


def wait_ended(redis, ids, timeout_s, must=True):
    """Every operation's times once those of ids all ended; after timeout_s, an error (must) or
    the times as they are."""
    deadline = time.monotonic() + timeout_s
    while True:
        t = times(redis)
        if all(ended(t, i) for i in ids):
            return t
        if time.monotonic() > deadline:
            if must:
                raise SystemExit("operations still running after %d s" % timeout_s)
            return t
        time.sleep(0.5)


def b_stream(spread, stop, out):
    """B's 0-ms provisions every B_EVERY_S until stop is set; their ids in out."""
    next_at = time.monotonic()
    while not stop.is_set():
        out.append(spread.provision(INSTANT, "org-b"))
        next_at += B_EVERY_S
        stop.wait(max(0.0, next_at - time.monotonic()))


def burst(make_spread, plan, org, count, senders=SENDERS):
    """count provisions of plan for org on senders connections to each gateway; their ids."""
    def send(sender):
        spread = make_spread()
        spread.next = sender
        return [spread.provision(plan, org) for _ in range(sender, count, senders)]
    with ThreadPoolExecutor(senders) as pool:
        return [i for ids in pool.map(send, range(senders)) for i in ids]


def work_done(t, ids, w0, w1, now):
    """The operations of ids completed in [w0, w1] (ms): each counts for the part of its run
    (first claim to end) inside the window; one still running at now as if it ended then (at
    the earliest after one step)."""
    done = 0.0
    for i in ids:
        state, _, start, end = t.get(i, ("", 0, 0, 0))
        if start <= 0:
            continue
        if end <= 0:
            end = max(now, start + int(STEP_S * 1000))
        inside = min(end, w1) - max(start, w0)
        if inside > 0:
            done += inside / max(1, end - start)
    return done


def b_latencies(t, ids, now):
    """(p50, p99, max) of B's accept-to-end times (ms), one not ended counting with its age at
    now; and how many had not ended."""
    values, unfinished = [], 0
    for i in ids:
        state, created, _, end = t[i]
        if not ended(t, i):
            unfinished += 1
            end = now
        values.append(end - created)
    return quantiles(values), unfinished


def exec_catalog(path):
    """bench/catalog.json plus the exec plan of A's old-style 6-s program, written to path."""
    with open(os.path.join(BENCH_DIR, "catalog.json")) as f:
        catalog = json.load(f)
    catalog["services"][0]["plans"].append({
        "id": EXEC_SIX, "name": "exec-six-seconds", "description": "a program that runs 6 s",
        "free": True,
        "osbq": {"backend": "exec", "timeout_ms": 600000, "env": {"SLEEP_S": "%d" % STEP_S},
                 "command": ["/bin/sh", os.path.join(BENCH_DIR, "exec", "sleep.sh")]}})
    with open(path, "w") as f:
        json.dump(catalog, f)


def platforms_file(directory):
    """OSBQ_PLATFORMS with the platforms of WEIGHTS (prefix /<name>, user <name>, password
    pw-<name>) written in directory; its path."""
    platforms = []
    for name, weight in WEIGHTS.items():
        with open(os.path.join(directory, name + "-password"), "w") as f:
            f.write("pw-" + name)
        platforms.append({"name": name, "prefix": "/" + name, "weight": weight,
                          "basic": {"username": name, "password_file": name + "-password"}})
    path = os.path.join(directory, "platforms.json")
    with open(path, "w") as f:
        json.dump({"platforms": platforms}, f)
    return path


class Bench:

    def __init__(self, args):
        self.args = args
        self.plan = A_PLAN[args.variant]
        self.slots = SLOTS * args.workers
        self.work_s = args.count / self.slots * STEP_S
        self.dir = tempfile.mkdtemp(prefix="osbq-bench-noisy-files-")
        self.catalog = os.path.join(self.dir, "catalog.json")
        exec_catalog(self.catalog)

    @contextmanager
    def stack(self, platforms=False):
        """A stack of --gateways gateways and --workers workers; yields (stack, a function
        making a Spread of B's broker user, or of platform name's user)."""
        gateway = {}
        if platforms:
            gateway = {"OSBQ_PLATFORMS": platforms_file(self.dir), "OSBQ_BROKER_USERNAME": None,
                       "OSBQ_BROKER_PASSWORD_FILE": None}
        with own_stack(self.args.build_dir, "osbq-bench-noisy-", OSBQ_CATALOG=self.catalog,
                       OSBQ_MAX_QUEUED_JOBS=str(2 * self.args.count + 10000)) as (stack, pw):
            ports = [stack.start_gateway(name="gateway-%d" % g, ready_path="/readyz",
                                         **gateway).port
                     for g in range(self.args.gateways)]
            for w in range(self.args.workers):
                stack.start_worker(name="worker-%d" % w)

            def spread(name=None):
                if name is None:
                    return Spread(ports, pw)
                return Spread(ports, "pw-" + name, name, "/" + name)
            # One instant provision through each gateway: every worker has connected to it.
            warm = spread(next(iter(WEIGHTS)) if platforms else None)
            for _ in ports:
                warm.provision(INSTANT, "org-warm")
            osbq_stack.wait_until(
                lambda: stack.redis.command("ZCARD", NAMESPACE + ":queue") == 0, 30,
                "a worker to take a job")
            yield stack, spread

    def b_alone(self, stack, spread):
        stop, b_ids = threading.Event(), []
        sender = threading.Thread(target=b_stream, args=(spread(), stop, b_ids))
        sender.start()
        time.sleep(B_SECONDS)
        stop.set()
        sender.join()
        t = wait_ended(stack.redis, b_ids, 60)
        alone, _ = b_latencies(t, b_ids, 0)
        print("b_alone_p50_ms=%d b_alone_p99_ms=%d" % alone[:2], flush=True)

    def a_window(self, stack, a_ids, w0, started, end_by):
        """Waits for the window's end (or, with --window 0, for A's operations to end): the
        times, the window (w0, w1) in Redis ms, and Redis' time now."""
        window = self.args.window
        if window > 0:
            time.sleep(max(0.0, started + window - time.monotonic()))
            w1 = redis_ms(stack.redis)
            # A step running at the window's end ends before the times are read.
            time.sleep(STEP_S + 2)
            t = times(stack.redis)
            if all(ended(t, i) for i in a_ids):
                w1 = min(w1, max(t[i][3] for i in a_ids))
        else:
            t = wait_ended(stack.redis, a_ids, end_by)
            w0 = min(t[i][1] for i in a_ids)
            w1 = max(t[i][3] for i in a_ids)
        return t, w0, w1

    def a_rate(self, t, a_ids, w0, w1, now):
        return work_done(t, a_ids, w0, w1, now) / ((w1 - w0) / 1000.0)

    def b_burst(self, stack, spread):
        """B beside A's burst; A's rate."""
        stop, b_ids, b = threading.Event(), [], spread()
        sender = threading.Thread(target=b_stream, args=(b, stop, b_ids))
        sender.start()
        started, w0 = time.monotonic(), redis_ms(stack.redis)
        a_ids = burst(spread, self.plan, "org-a", self.args.count)
        t, w0, w1 = self.a_window(stack, a_ids, w0, started, self.work_s * 1.5 + 60)
        stop.set()
        sender.join()
        if self.args.window > 0:
            t = times(stack.redis)
            b_ids = [i for i in b_ids if w0 <= t[i][1] <= w1]
            t = wait_ended(stack.redis, b_ids, B_LATE_S, must=False)
        else:
            t = wait_ended(stack.redis, b_ids + a_ids, self.work_s + 60)
        now = redis_ms(stack.redis)
        (p50, p99, worst), unfinished = b_latencies(t, b_ids, now)
        beside = self.a_rate(t, a_ids, w0, w1, now)
        print("b_burst_p50_ms=%d b_burst_p99_ms=%d b_burst_max_ms=%d b_count=%d "
              "b_burst_unfinished=%d" % (p50, p99, worst, len(b_ids), unfinished), flush=True)
        if self.args.gateways > 1:
            # Through each gateway apart: where the stack is less fair than one gateway.
            for g in range(self.args.gateways):
                (p50, p99, worst), unfinished = b_latencies(
                    t, [i for i in b_ids if b.gateway_of[i] == g], now)
                print("b_burst_gateway%d_p50_ms=%d b_burst_gateway%d_p99_ms=%d "
                      "b_burst_gateway%d_max_ms=%d b_burst_gateway%d_unfinished=%d"
                      % (g, p50, g, p99, g, worst, g, unfinished), flush=True)
        print("a_count=%d a_ops_per_s_beside_b=%.3f window_s=%.1f"
              % (self.args.count, beside, (w1 - w0) / 1000.0), flush=True)
        return beside

    def a_alone(self, stack, spread, beside):
        started, w0 = time.monotonic(), redis_ms(stack.redis)
        a_ids = burst(spread, self.plan, "org-a", self.args.count)
        t, w0, w1 = self.a_window(stack, a_ids, w0, started, self.work_s * 1.5 + 60)
        alone = self.a_rate(t, a_ids, w0, w1, redis_ms(stack.redis))
        print("a_ops_per_s_alone=%.3f a_beside_over_alone=%.3f" % (alone, beside / alone),
              flush=True)

    def shares(self, stack, spread):
        """Two saturating tenants of weights 3 and 1: their shares of the work done."""
        window = self.args.window or SHARES_WINDOW_S
        ids = {}

        def send(name):
            ids[name] = burst(lambda: spread(name), self.plan, "org-" + name, self.args.count,
                              SENDERS // 2)
        senders = [threading.Thread(target=send, args=(name,)) for name in WEIGHTS]
        for s in senders:
            s.start()
        # The first steps were claimed before both tenants waited: the window starts once they
        # ended.
        time.sleep(STEP_S + 2)
        w0 = redis_ms(stack.redis)
        time.sleep(window)
        w1 = redis_ms(stack.redis)
        for s in senders:
            s.join()
        time.sleep(STEP_S + 2)
        t, now = times(stack.redis), redis_ms(stack.redis)
        done = {name: work_done(t, ids[name], w0, w1, now) for name in WEIGHTS}
        total = sum(done.values())
        # Saturated: each tenant still had provisions not yet started at the window's end.
        saturated = all(any(t[i][2] <= 0 or t[i][2] > w1 for i in ids[name])
                        for name in WEIGHTS)
        print("shares_heavy=%.3f shares_light=%.3f shares_heavy_over_light=%.2f "
              "shares_ops_per_s=%.3f shares_window_s=%.1f shares_saturated=%s"
              % (done["heavy"] / total, done["light"] / total, done["heavy"] / done["light"],
                 total / ((w1 - w0) / 1000.0), (w1 - w0) / 1000.0,
                 "yes" if saturated else "no"), flush=True)

    def run(self):
        args = self.args
        print("variant=%s gateways=%d workers=%d window_s=%g"
              % (args.variant, args.gateways, args.workers, args.window), flush=True)
        with self.stack() as (stack, spread):
            self.b_alone(stack, spread)
            beside = self.b_burst(stack, spread)
            if "a_alone" in args.phases and args.window <= 0:
                self.a_alone(stack, spread, beside)
        if "a_alone" in args.phases and args.window > 0:
            with self.stack() as (stack, spread):
                self.a_alone(stack, spread, beside)
        if "shares" in args.phases:
            with self.stack(platforms=True) as (stack, spread):
                self.shares(stack, spread)


def main():
    p = argparse.ArgumentParser(usage=__doc__.rsplit("usage: ", 1)[1])
    p.add_argument("build_dir")
    p.add_argument("count", nargs="?", type=int, default=10000)
    p.add_argument("phases", nargs="*", default=[], help="a_alone, shares")
    p.add_argument("--variant", choices=sorted(A_PLAN), default="sim")
    p.add_argument("--window", type=float, default=0.0)
    p.add_argument("--gateways", type=int, default=1)
    p.add_argument("--workers", type=int, default=1)
    args = p.parse_intermixed_args()
    if args.count < 1 or args.gateways < 1 or args.workers < 1 or args.window < 0:
        p.error("COUNT, --gateways and --workers must be positive, --window not negative")
    for phase in args.phases:
        if phase not in ("a_alone", "shares"):
            p.error("unknown phase %r (a_alone, shares)" % phase)
    bench = Bench(args)
    try:
        bench.run()
    finally:
        for name in os.listdir(bench.dir):
            os.unlink(os.path.join(bench.dir, name))
        os.rmdir(bench.dir)


if __name__ == "__main__":
    main()
