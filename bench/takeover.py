#!/usr/bin/env python3
"""The takeover case of bench/run.sh (issue 42, docs/decisions/0052): how soon the steps of a
worker SIGKILLed under load run elsewhere, and what the kills cost the load. A stack of its own
(a redis-server, 2 gateways and 3 workers of BUILD_DIR with OSBQ_WORKER_CONCURRENCY=8, on
loopback, started and stopped by PID with the integration tests' launcher) gets, from 16 client
threads, asynchronous lifecycles in a loop (PUT ?accepts_incomplete=true, last_operation polled
every 100 ms until it ended, DELETE ?accepts_incomplete=true, polled until gone) and, from 3
more, synchronous bind + unbind in a loop on an instance each (the threads start spread over
3 s); every thread sends its requests to the two gateways in turn. Every step of the plan
works 1.5 s (VARIANT sim: sim's blocking step, holding a runner thread; exec:
bench/exec/sleep.sh, which sleeps in every kind of step).
After a warm-up of 10 s come a "before" window of DURATION_S / 2 without kills and a "kills"
window of DURATION_S in which one of the three live workers, chosen at random, is SIGKILLed
every 5 s and a fresh one started in its place at once. Then no new lifecycle starts; the
running ones end (bounded), and every operation must end (bounded). Printed as NAME=VALUE lines:

  takeover_ms_p50/p99/max  per step a killed worker was running (its claim in the history before
                           the kill, then "revoked" or "lease_expired" by it): from the kill's
                           wall-clock ms to the next "claimed" by another worker; per step a
                           gateway handed to it after its kill (claimed in its name at the
                           operation's begin, then taken from it): from that claim to the next;
                           and per operation sent to a dead worker and never claimed (its first
                           history line "resent"): from the kill, or from its creation when it
                           came later, to its first claim
  steps_taken_over         their count (taken_running, taken_handed, taken_sent: of each kind;
                           running_at_kill: the first kind seen in Redis just before each kill);
                           not_taken_over: steps a killed worker held that nobody claimed again
  revoked_from_live        running steps taken from a worker that was not killed (a gateway
                           thought it gone)
  rate_before_per_min, rate_kills_per_min, rate_ratio
                           lifecycles that ended within each window, per minute; kills / before
  lifecycle_p99_before_s, lifecycle_p99_kills_s
                           the p99 duration of the lifecycles started and ended in the before
                           window, and of those started in the kills window
  sync_504, sync_other     synchronous binds and unbinds answered 504, and any other status
                           but 201/200 (sync_504_kills: the 504s answered in the kills window)
  sync_p99_before_s, sync_p99_kills_s, sync_max_kills_s
                           a bind's or unbind's time to its answer: p99 of those sent and
                           answered in the before window; p99 and max of those sent in the
                           kills window
  unexpected               asynchronous requests answered other than 202/200/410 (or not at
                           all) and polls that gave up; failed_lifecycles: lifecycles that did
                           not end deprovisioned; failed_ops: operations that ended failed;
                           threads_left: client threads still running after the bounded wait
  lost                     operations still not ended (state neither succeeded nor failed) at
                           the end of the bounded wait
  revoked, lease_expiries, job_retries, workers_gone_disconnected, workers_gone_silent,
  workers_gone_unreachable the gateways' counters (summed) from the start of the kills window to
                           the end (osbq_steps_revoked_total, osbq_lease_expiries_total,
                           osbq_job_retries_total, osbq_workers_gone_total{reason}); a build
                           without a counter prints none

Warning and error lines of the daemons' logs (OSBQ_LOG_LEVEL=warn) are summarised on stderr;
with BENCH_TAKEOVER_LOGS=DIR every log, and the kills and operations read, are copied into a
new directory in DIR. The clocks compared are this machine's.
usage: takeover.py BUILD_DIR [VARIANT [DURATION_S]]   (defaults sim 60; DURATION_S >= 10)"""

import collections
import http.client
import json
import os
import random
import re
import shutil
import signal
import sys
import threading
import time
import urllib.request
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from own_stack import (  # noqa: E402
    BENCH_DIR, INSTANT, SERVICE, Broker, osbq_stack, own_stack, plan_operations, quantiles,
    variant_args)

PLAN = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f1b2"
STEP_S = 1.5
GATEWAYS = 2
WORKERS = 3
CONCURRENCY = 8
CLIENTS = 16
SYNC_CLIENTS = 3
WARM_UP_S = 10
KILL_EVERY_S = 5
POLL_S = 0.1
# The client threads start spread over this long, about a lifecycle's time.
STAGGER_S = 3.0
# One operation's poll gives up after this long (a lease of 15 s, a claim timeout of 10 s, and
# the abandon after 5 claims are all well inside it).
POLL_LIMIT_S = 120
# After the kills window: the running lifecycles end, then every operation must have ended.
END_TIMEOUT_S = 150
# A synchronous request waits for its worker up to the plan's sync_timeout_ms: 20 s, the limit of
# the soak, whose synchronous binds and unbinds got 504 when a killed worker's step
# waited out its 15-s lease.
SYNC_TIMEOUT_MS = 20000
HTTP_TIMEOUT_S = 40
NAMESPACE = "osbq"
# The operations the queue holds and their state and worker, just before a kill.
QUEUE_SCRIPT = """
local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local r = redis.call('HMGET', ARGV[1] .. id, 'state', 'worker')
  out[#out + 1] = {id, r[1] or '', r[2] or ''}
end
return cjson.encode(out)
"""
NOT_ENDED_SCRIPT = """
local n = 0
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  local s = redis.call('HGET', key, 'state')
  if s ~= 'succeeded' and s ~= 'failed' then n = n + 1 end
end
return n
"""
WORKER_PID = re.compile(r"-(\d+)-[0-9a-f]+$")


def worker_pid(worker_id):
    """The PID in a worker's id ("<host>-<pid>-<hex>"), or None."""
    m = WORKER_PID.search(worker_id or "")
    return int(m.group(1)) if m else None


def takeover_plan(variant):
    """The bindable plan of variant whose every step works STEP_S."""
    ms = int(STEP_S * 1000)
    settings = {"backend": "sim", "blocking": True, "provision_ms": ms, "deprovision_ms": ms,
                "update_ms": ms, "bind_ms": ms, "unbind_ms": ms}
    if variant == "exec":
        settings = {"backend": "exec", "env": {"SLEEP_S": str(STEP_S)},
                    "command": ["/bin/sh", os.path.join(BENCH_DIR, "exec", "sleep.sh")]}
    settings["sync_timeout_ms"] = SYNC_TIMEOUT_MS
    return {"id": PLAN, "name": "takeover-%s" % variant,
            "description": "Every step works %g s; its workers are killed (takeover)." % STEP_S,
            "osbq": settings}


class Stats:
    """What the client threads record, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.lifecycles = []  # (start s, end s, ok)
        self.sync = []  # (epoch s sent, epoch s of the answer, kind, status)
        self.unexpected = collections.Counter()

    def add(self, attr, item):
        with self.lock:
            getattr(self, attr).append(item)

    def odd(self, what):
        with self.lock:
            self.unexpected[what] += 1


class Client:
    """A thread's keep-alive connections, one per gateway; each request goes to the next."""

    def __init__(self, ports, password, turn):
        self.headers = Broker(ports[0], password).headers
        self.ports = ports
        self.conns = [None] * len(ports)
        self.turn = turn

    def request(self, method, path, body=None):
        """(status, parsed body or None); status 0 when the connection failed."""
        i = self.turn % len(self.ports)
        self.turn += 1
        if self.conns[i] is None:
            self.conns[i] = http.client.HTTPConnection("127.0.0.1", self.ports[i],
                                                       timeout=HTTP_TIMEOUT_S)
        try:
            self.conns[i].request(method, path, body=None if body is None else json.dumps(body),
                                  headers=self.headers)
            r = self.conns[i].getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException):
            self.conns[i].close()
            self.conns[i] = None
            return 0, None
        try:
            return r.status, json.loads(data) if data else None
        except ValueError:
            return r.status, None

    def close(self):
        for c in self.conns:
            if c is not None:
                c.close()


IDS = "service_id=%s&plan_id=%s" % (SERVICE, PLAN)


def poll(client, stats, iid, operation, kind):
    """Polls last_operation until the operation ended: "succeeded", "failed", "gone" (410), or
    None after POLL_LIMIT_S."""
    limit = time.monotonic() + POLL_LIMIT_S
    while time.monotonic() < limit:
        time.sleep(POLL_S)
        status, body = client.request("GET", "/v2/service_instances/%s/last_operation?%s&"
                                      "operation=%s" % (iid, IDS, operation))
        if status == 410:
            return "gone"
        if status == 200 and body and body.get("state") in ("succeeded", "failed"):
            return body["state"]
        if status != 200:
            stats.odd("%s last_operation %d" % (kind, status))
    stats.odd("%s poll gave up" % kind)
    return None


def provision_body():
    return {"service_id": SERVICE, "plan_id": PLAN, "organization_guid": "o", "space_guid": "s",
            "context": {"platform": "cloudfoundry", "organization_guid": "o", "space_guid": "s"}}


def provisioned(client, stats):
    """An instance provisioned asynchronously; its id, or None."""
    iid = uuid.uuid4().hex
    status, body = client.request("PUT", "/v2/service_instances/%s?accepts_incomplete=true" % iid,
                                  provision_body())
    if status != 202:
        stats.odd("provision %d" % status)
        return None
    return iid if poll(client, stats, iid, body["operation"], "provision") == "succeeded" else None


def lifecycles(client, stats, stop, delay):
    """Async lifecycles until stop is set, the first after delay s (the clients out of step)."""
    time.sleep(delay)
    while not stop.is_set():
        start = time.time()
        iid = provisioned(client, stats)
        if iid is None:
            stats.add("lifecycles", (start, time.time(), False))
            time.sleep(0.5)
            continue
        status, body = client.request(
            "DELETE", "/v2/service_instances/%s?accepts_incomplete=true&%s" % (iid, IDS))
        if status != 202:
            stats.odd("deprovision %d" % status)
            stats.add("lifecycles", (start, time.time(), False))
            continue
        end = poll(client, stats, iid, body["operation"], "deprovision")
        stats.add("lifecycles", (start, time.time(), end in ("gone", "succeeded")))


def binds(client, stats, stop, delay):
    """Sync bind + unbind on an instance of its own until stop is set."""
    time.sleep(delay)
    iid = None
    for _ in range(5):
        iid = iid or provisioned(client, stats)
    if iid is None:
        stats.odd("the bind thread's instance")
        return
    while not stop.is_set():
        path = "/v2/service_instances/%s/service_bindings/%s" % (iid, uuid.uuid4().hex)
        sent = time.time()
        status, _ = client.request("PUT", path, {"service_id": SERVICE, "plan_id": PLAN})
        stats.add("sync", (sent, time.time(), "bind", status))
        sent = time.time()
        status, _ = client.request("DELETE", "%s?%s" % (path, IDS))
        stats.add("sync", (sent, time.time(), "unbind", status))


def gateway_counters(ports):
    """{name{labels}: value} of the osbq counters this case reads, summed over the gateways."""
    wanted = ("osbq_steps_revoked_total", "osbq_lease_expiries_total", "osbq_job_retries_total",
              "osbq_workers_gone_total")
    out = collections.Counter()
    for port in ports:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(wanted):
                    name, value = line.rsplit(" ", 1)
                    out[name] += float(value)
    return out


def history(op):
    """The operation's history lines, its first claim written out when nothing else was."""
    _, _, _, _, _, worker, text, started = op
    events = [json.loads(line) for line in text.splitlines() if line.strip()]
    if not events and started:
        events = [{"ms": int(started), "event": "claimed", "worker": worker, "attempt": 1}]
    return events


def takeovers(ops, kills):
    """(takeover ms list, counts) over ops; kills: (epoch ms, PID) each. counts: running (steps
    a killed worker ran at its kill), handed (handed to it by a gateway at their begin after
    its kill: from that claim instead of the kill), sent (sent to a dead worker, never claimed,
    their first history line "resent"), stuck (a killed worker's steps nobody claimed again),
    from_live (running steps taken from a worker that was not killed)."""
    killed_at = {pid: ms for ms, pid in kills}
    worker_ids = {e.get("worker") for op in ops for e in history(op)} | {op[5] for op in ops}
    kill_ms = {w: killed_at[worker_pid(w)] for w in worker_ids if worker_pid(w) in killed_at}
    kill_times = sorted(ms for ms, _ in kills)
    out, counts = [], collections.Counter(running=0, handed=0, sent=0, stuck=0, from_live=0)
    for op in ops:
        events = history(op)
        for i, e in enumerate(events):
            if e.get("event") in ("revoked", "lease_expired") and e.get("worker") not in kill_ms:
                counts["from_live"] += 1
            if e.get("event") != "claimed" or e.get("worker") not in kill_ms:
                continue
            w = e["worker"]
            rest = events[i + 1:]
            if not rest:
                # Never taken from it: ended by it before the kill, or still its.
                if op[2] not in ("succeeded", "failed") or int(op[4] or 0) > kill_ms[w]:
                    counts["stuck"] += 1
                continue
            if rest[0].get("event") not in ("revoked", "lease_expired") or \
                    rest[0].get("worker") != w:
                continue
            claim = [x["ms"] for x in rest if x.get("event") == "claimed" and
                     x.get("worker") != w]
            if not claim:
                counts["stuck"] += 1
                continue
            out.append(claim[0] - max(kill_ms[w], e["ms"]))
            counts["running" if e["ms"] <= kill_ms[w] else "handed"] += 1
        if events and events[0].get("event") == "resent":
            before = [t for t in kill_times if t <= events[0]["ms"]]
            claim = [x["ms"] for x in events if x.get("event") == "claimed"]
            if before and claim:
                out.append(claim[0] - max(before[-1], int(op[3])))
                counts["sent"] += 1
    return out, counts


# The start-up warnings every bench stack logs (docs/benchmarks.md): no bus keys, no secret key.
EXPECTED_WARNINGS = ("the job bus is not authenticated", "OSBQ_SECRET_KEY_FILE is not set")


def log_summary(stack, keep_dir):
    """Prints the daemons' warn and error lines to stderr, counted by message, but for the
    expected start-up warnings."""
    counts, first = collections.Counter(), {}
    for p in stack.daemons():
        if keep_dir:
            shutil.copy(p.log_path, keep_dir)
        for line in p.log().splitlines():
            m = re.search(r"level=(warn|error)\b.*?msg=(\"[^\"]*\"|\S+)", line)
            if m and not any(w in m.group(2) for w in EXPECTED_WARNINGS):
                key = "%s %s %s" % (p.name.rsplit("-", 1)[0], m.group(1), m.group(2))
                counts[key] += 1
                first.setdefault(key, line)
    for key, n in counts.most_common():
        print("takeover log: %d x %s; first: %s" % (n, key, first[key][:400]), file=sys.stderr)


class Run:
    """One run's load on a started stack: the client threads, the windows and the kills."""

    def __init__(self, stack, password, kills_s):
        self.stack, self.password, self.kills_s = stack, password, kills_s
        self.stats = Stats()
        self.stop = threading.Event()
        self.rng = random.Random(42)
        self.workers_started = 0
        self.kills = []  # (epoch ms, PID)
        self.running_at_kill = 0

    def start_worker(self):
        self.workers_started += 1
        return self.stack.start_worker(name="worker-%d" % self.workers_started,
                                       OSBQ_WORKER_CONCURRENCY=str(CONCURRENCY))

    def kill_one(self, live):
        """SIGKILLs one of the live workers, chosen at random, and starts another in its
        place."""
        victim = self.rng.choice(live)
        queue = json.loads(self.stack.redis.command("EVAL", QUEUE_SCRIPT, 1, NAMESPACE + ":queue",
                                                    NAMESPACE + ":op:"))
        os.kill(victim.pid, signal.SIGKILL)
        self.kills.append((int(time.time() * 1000), victim.pid))
        victim.proc.wait(timeout=10)
        live[live.index(victim)] = self.start_worker()
        self.running_at_kill += sum(1 for _, state, w in queue
                                    if state == "running" and worker_pid(w) == victim.pid)

    def not_ended(self):
        return self.stack.redis.command("EVAL", NOT_ENDED_SCRIPT, 0, NAMESPACE + ":op:*")

    def run(self):
        stack = self.stack
        ports = [stack.start_gateway(name="gateway-%d" % i, ready_path="/readyz").port
                 for i in range(GATEWAYS)]
        live = [self.start_worker() for _ in range(WORKERS)]

        def instant_through_each():
            return all(Broker(p, self.password).provision(INSTANT, "o", asynchronous=False)[0]
                       == 201 for p in ports)
        osbq_stack.wait_until(instant_through_each, 30, "every gateway to reach a worker")
        clients = [Client(ports, self.password, i) for i in range(CLIENTS + SYNC_CLIENTS)]
        threads = [threading.Thread(target=lifecycles if i < CLIENTS else binds,
                                    args=(c, self.stats, self.stop,
                                          STAGGER_S * i / len(clients)), daemon=True)
                   for i, c in enumerate(clients)]
        for t in threads:
            t.start()
        time.sleep(WARM_UP_S)
        self.before_at = time.time()
        time.sleep(self.kills_s / 2.0)
        self.kills_at = time.time()
        self.counters_before = gateway_counters(ports)
        for k in range(int(self.kills_s // KILL_EVERY_S)):
            pause = self.kills_at + k * KILL_EVERY_S - time.time()
            if pause > 0:
                time.sleep(pause)
            self.kill_one(live)
        pause = self.kills_at + self.kills_s - time.time()
        if pause > 0:
            time.sleep(pause)
        self.kills_end = time.time()
        # No new lifecycle; the running ones end, then every operation (both bounded).
        self.stop.set()
        deadline = time.monotonic() + END_TIMEOUT_S
        for t in threads:
            t.join(max(0.1, deadline - time.monotonic()))
        self.threads_left = sum(1 for t in threads if t.is_alive())
        try:
            osbq_stack.wait_until(lambda: self.not_ended() == 0,
                                  max(1.0, deadline - time.monotonic()), "every operation to end")
        except AssertionError:
            pass
        self.lost = self.not_ended()
        self.counters_after = gateway_counters(ports)
        self.ops = plan_operations(stack.redis, NAMESPACE, PLAN, "kind", "state", "created_ms",
                                   "finished_ms", "worker", "history", "started_ms")
        for c in clients:
            c.close()

    def report(self, variant):
        samples, counts = takeovers(self.ops, self.kills)
        lcs, sync = self.stats.lifecycles, self.stats.sync

        def rate(t0, t1):
            return sum(1 for s, e, ok in lcs if ok and t0 <= e < t1) * 60.0 / (t1 - t0)

        def p99(t0, t1, ended_by):
            q = quantiles([e - s for s, e, ok in lcs if t0 <= s < t1 and e < ended_by])
            return q[1] if q else 0.0
        before, kills = rate(self.before_at, self.kills_at), rate(self.kills_at, self.kills_end)
        codes = collections.Counter((kind, status) for _, _, kind, status in sync)
        expected = {("bind", 201), ("unbind", 200)}
        print("variant=%s clients=%d sync_clients=%d workers=%d concurrency=%d step_s=%g "
              "before_s=%g kills_s=%d kills=%d"
              % (variant, CLIENTS, SYNC_CLIENTS, WORKERS, CONCURRENCY, STEP_S,
                 self.kills_s / 2.0, self.kills_s, len(self.kills)))
        if samples:
            print("takeover_ms_p50=%d takeover_ms_p99=%d takeover_ms_max=%d" % quantiles(samples))
        print("steps_taken_over=%d taken_running=%d taken_handed=%d taken_sent=%d "
              "running_at_kill=%d not_taken_over=%d revoked_from_live=%d"
              % (len(samples), counts["running"], counts["handed"], counts["sent"],
                 self.running_at_kill, counts["stuck"], counts["from_live"]))
        print("rate_before_per_min=%.1f rate_kills_per_min=%.1f rate_ratio=%.2f"
              % (before, kills, kills / before if before else 0))
        print("lifecycle_p99_before_s=%.2f lifecycle_p99_kills_s=%.2f"
              % (p99(self.before_at, self.kills_at, self.kills_at),
                 p99(self.kills_at, self.kills_end, float("inf"))))
        print("sync_requests=%d sync_504=%d sync_504_kills=%d sync_other=%d" % (
            len(sync), sum(n for (_, s), n in codes.items() if s == 504),
            sum(1 for _, at, _, s in sync if s == 504 and self.kills_at <= at),
            sum(n for (k, s), n in codes.items() if (k, s) not in expected and s != 504)))
        before_sync = quantiles([e - s for s, e, _, _ in sync
                                 if self.before_at <= s and e < self.kills_at])
        kills_sync = quantiles([e - s for s, e, _, _ in sync if self.kills_at <= s])
        print("sync_p99_before_s=%.2f sync_p99_kills_s=%.2f sync_max_kills_s=%.2f" % (
            before_sync[1] if before_sync else 0, kills_sync[1] if kills_sync else 0,
            kills_sync[2] if kills_sync else 0))
        print("unexpected=%d failed_lifecycles=%d failed_ops=%d lost=%d threads_left=%d" % (
            sum(self.stats.unexpected.values()), sum(1 for _, _, ok in lcs if not ok),
            sum(1 for op in self.ops if op[2] == "failed"), self.lost, self.threads_left))
        names = [("revoked", "osbq_steps_revoked_total"),
                 ("lease_expiries", "osbq_lease_expiries_total"),
                 ("job_retries", "osbq_job_retries_total")] + [
            ("workers_gone_%s" % r, 'osbq_workers_gone_total{reason="%s"}' % r)
            for r in ("disconnected", "silent", "unreachable")]
        print(" ".join("%s=%d" % (short, self.counters_after[name] -
                                  self.counters_before.get(name, 0))
                       for short, name in names if name in self.counters_after))
        for (kind, status), n in sorted(codes.items()):
            if (kind, status) not in expected:
                print("takeover: sync %s answered %d: %d times" % (kind, status, n),
                      file=sys.stderr)
        for what, n in self.stats.unexpected.most_common():
            print("takeover: %s: %d times" % (what, n), file=sys.stderr)


def main():
    build_dir, variant, kills_s = variant_args(__doc__, 60)
    if variant not in ("sim", "exec") or kills_s < 10:
        sys.exit(__doc__)
    with own_stack(build_dir, "osbq-bench-takeover-", plan=takeover_plan(variant)) as (
            stack, password):
        run = Run(stack, password, kills_s)
        run.run()
        keep = os.environ.get("BENCH_TAKEOVER_LOGS")
        if keep:
            keep = os.path.join(keep, "%s-%d" % (variant, time.time()))
            os.makedirs(keep)
        log_summary(stack, keep)
        if keep:
            with open(os.path.join(keep, "operations.json"), "w") as f:
                json.dump({"kills": run.kills, "operations": run.ops}, f)
        # Printed before the stack stops: a stop that fails must not hide them.
        run.report(variant)


if __name__ == "__main__":
    main()
