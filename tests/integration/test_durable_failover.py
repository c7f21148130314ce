"""Acknowledged means kept (issue 20, docs/reliability.md "What survives what"): a primary, a
replica and three Sentinels, two gateways and two workers with OSBQ_REDIS_MIN_ACKS=1, a steady
load of asynchronous provisions and binds from a thread pool; the replica is cut off for a second
(a partition) and the primary is SIGKILLed, Sentinel promotes the replica, a new replica joins it, and
the load goes on. Then every
operation that got a 2xx is found and reaches a final state, every binding's credentials are
the ones the platform read before, and no lock is held. The figures are printed.

OSBQ_DURABLE_MIN_ACKS=0 runs the same load with today's default and only reports how many
acknowledged operations the failover lost (the figure docs/reliability.md quotes)."""

import http.client
import os
import re
import signal
import sys
import threading
import time
import unittest

import harness
import test_sentinel

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-bindings.json")
SERVICE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"
PLAN = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"
MASTER = test_sentinel.MASTER
MIN_ACKS = int(os.environ.get("OSBQ_DURABLE_MIN_ACKS", "1"))
THREADS = 16
LOAD_BEFORE_S = 3.0    # load before the kill
LOAD_AFTER_S = 4.0     # load once acceptances work again
LAG_S = 1.0            # how long the replica is cut off before the primary dies
RETRY_FOR_S = 30.0     # how long one request is retried through the failover
SETTLE_S = 30.0        # for every acknowledged operation to end
PAUSE_S = 0.0          # between a thread's lifecycles


def http_text(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def redis_story(*nodes):
    """What each Redis node says of its role (INFO replication, or sentinel for a Sentinel) and
    the end of its log: a sync that never ends is told by them (the primary's fork, the
    replica's transfer, a Sentinel's reconfiguration), not by the timeout."""
    parts = []
    for node in nodes:
        section = "sentinel" if node.name.startswith("sentinel") else "replication"
        try:
            role = node.command("INFO", section)
        except (OSError, RuntimeError) as e:
            role = "INFO %s failed: %s" % (section, e)
        tail = "\n".join(node.log().splitlines()[-40:])
        parts.append("--- %s (port %d)\n%s\n--- its log:\n%s" % (node.name, node.port, role, tail))
    return "\n".join(parts)


class Load:
    """The platforms: THREADS threads, each provisioning an instance, waiting for it, binding
    it, waiting for the binding and reading its credentials, again and again; a request that
    fails (503, or no connection) is retried, as a platform does, until it gets an answer."""

    def __init__(self, stack, gateways):
        self.stack = stack
        self.gateways = gateways
        self.lock = threading.Lock()
        self.acked = []          # (kind, instance id, binding id or None, operation id)
        self.lost = []           # acknowledged, then answered 404/410 by last_operation
        self.credentials = {}    # (instance, binding) -> credentials read after success
        self.unavailable = []    # monotonic times of 503s and connection failures
        self.accepted_at = []    # monotonic times of 2xx acceptances
        self.requests = 0
        self.unexpected = []
        self.done_on_retry = []  # PUTs retried after a 503 whose operation had finished
        self.stopping = threading.Event()

    def note(self, attr, value):
        with self.lock:
            getattr(self, attr).append(value)

    def call(self, client, method, path, body=None):
        """The request, retried through 503s and dropped connections; None past RETRY_FOR_S."""
        until = time.monotonic() + RETRY_FOR_S
        while time.monotonic() < until:
            try:
                r = client.request(method, path, body)
            except OSError:
                r = None
            with self.lock:
                self.requests += 1
            if r is not None and r.status != 503:
                return r
            self.note("unavailable", time.monotonic())
            time.sleep(0.05)
        self.note("unexpected", "%s %s: no answer within %d s" % (method, path, RETRY_FOR_S))
        return None

    def wait_final(self, client, path, what):
        """Polls a last_operation path until succeeded; False when the operation is gone."""
        until = time.monotonic() + RETRY_FOR_S
        while time.monotonic() < until:
            r = self.call(client, "GET", path)
            if r is None:
                return False
            if r.status in (404, 410):
                self.note("lost", what)
                return False
            state = r.json().get("state") if r.status == 200 else None
            if state == "succeeded":
                return True
            if state == "failed" or r.status != 200:
                self.note("unexpected", "%s: %d %r" % (path, r.status, r.body))
                return False
            time.sleep(0.05)
        self.note("unexpected", "%s: not finished within %d s" % (path, RETRY_FOR_S))
        return False

    def accept(self, client, path, body, kind, iid, bid):
        r = self.call(client, "PUT", path, body)
        if r is None:
            return False
        # 200 (201 for a bind): a retry of an acceptance that got 503 finds its operation
        # finished (the job went out with an earlier retry or through recovery).
        if r.status not in (200, 201, 202):
            self.note("unexpected", "PUT %s: %d %r" % (path, r.status, r.body))
            return False
        if r.status != 202:
            self.note("done_on_retry", (kind, iid, bid))
            return True
        self.note("acked", (kind, iid, bid, r.json()["operation"]))
        self.note("accepted_at", time.monotonic())
        return True

    def lifecycle(self, client, iid):
        base = "/v2/service_instances/%s" % iid
        ok = self.accept(client, base + "?accepts_incomplete=true",
                         {"service_id": SERVICE, "plan_id": PLAN, "organization_guid": "o",
                          "space_guid": "s"}, "instance", iid, None)
        if not ok or not self.wait_final(client, base + "/last_operation", ("instance", iid)):
            return
        binding = base + "/service_bindings/b"
        ok = self.accept(client, binding + "?accepts_incomplete=true",
                         {"service_id": SERVICE, "plan_id": PLAN}, "binding", iid, "b")
        if not ok or not self.wait_final(client, binding + "/last_operation", ("binding", iid)):
            return
        r = self.call(client, "GET", binding)
        if r is not None and r.status == 200:
            with self.lock:
                self.credentials[(iid, "b")] = r.json()["credentials"]
        elif r is not None:
            self.note("unexpected", "GET %s: %d %r" % (binding, r.status, r.body))

    def thread(self, index):
        client = self.stack.client(self.gateways[index % len(self.gateways)])
        n = 0
        try:
            while not self.stopping.is_set():
                self.lifecycle(client, "d%d-%d" % (index, n))
                n += 1
                time.sleep(PAUSE_S)
        finally:
            client.close()

    def start(self):
        self.threads = [threading.Thread(target=self.thread, args=(i,), daemon=True)
                        for i in range(THREADS)]
        for t in self.threads:
            t.start()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(2 * RETRY_FOR_S + 10)


class DurableFailover(unittest.TestCase):
    def setUp(self):
        self.stack = harness.Stack(catalog=CATALOG)
        # Also when setUp fails half-way: every process started so far is stopped.
        self.addCleanup(self.stack.stop)
        primary = self.stack.redis
        workdir = self.stack.workdir
        # Promoted, it serves the new replica's full sync at once, not after the 5 s Redis waits
        # by default for more replicas to share it.
        self.replica = test_sentinel.RedisNode(workdir, "replica",
                                               ["replicaof 127.0.0.1 %d" % primary.port,
                                                "repl-diskless-sync-delay 0"])
        self.stack.processes.append(self.replica)
        harness.wait_until(lambda: test_sentinel.info(self.replica, "replication").get(
            "master_link_status") == "up", 10, "the replica to sync")
        self.sentinels = test_sentinel.start_sentinels(self.stack, primary)
        env = dict(OSBQ_REDIS_SENTINELS=",".join("127.0.0.1:%d" % s.port for s in self.sentinels),
                   OSBQ_REDIS_MASTER_NAME=MASTER,
                   OSBQ_REDIS_URL="redis://127.0.0.1:%d/0" % harness.free_port(),
                   OSBQ_REDIS_MIN_ACKS=MIN_ACKS, OSBQ_REDIS_ACK_TIMEOUT_MS=500,
                   OSBQ_REDIS_TIMEOUT_MS=1000, OSBQ_RECOVERY_INTERVAL_MS=200,
                   OSBQ_CLAIM_TIMEOUT_MS=3000, OSBQ_SHUTDOWN_GRACE_MS=3000)
        self.gateways = [self.stack.start_gateway(ready_path="/readyz", **env) for _ in range(2)]
        self.workers = [self.stack.start_worker(OSBQ_LEASE_MS=3000, **env) for _ in range(2)]
        harness.wait_workers_connected(self.gateways, 2)

    def primary_port(self):
        try:
            addr = self.sentinels[0].command("SENTINEL", "get-master-addr-by-name", MASTER)
            return int(addr[1])
        except (OSError, RuntimeError, TypeError, IndexError):
            return None

    def test_primary_killed_under_load(self):
        # Synchronous answers too wait for the replica: the instance's once an acknowledgement
        # follows the announced outcome, the binding's through its read.
        client = self.stack.client(self.gateways[0])
        r = client.request("PUT", "/v2/service_instances/sync-0",
                           {"service_id": SERVICE, "plan_id": PLAN, "organization_guid": "o",
                            "space_guid": "s"})
        self.assertEqual(r.status, 201, r.body)
        r = client.request("PUT", "/v2/service_instances/sync-0/service_bindings/b",
                           {"service_id": SERVICE, "plan_id": PLAN})
        self.assertEqual(r.status, 201, r.body)
        self.assertIn("credentials", r.json())
        client.close()
        load = Load(self.stack, self.gateways)
        load.start()
        time.sleep(LOAD_BEFORE_S)
        # The replica is cut off (a network partition: here it is paused and its link closed,
        # so it cannot reconnect) for LAG_S just before the primary's machine is lost: what
        # asynchronous replication loses.
        old = self.stack.redis
        os.kill(self.replica.pid, signal.SIGSTOP)
        old.command("CLIENT", "KILL", "TYPE", "replica")
        time.sleep(LAG_S)
        os.kill(old.pid, signal.SIGKILL)
        os.kill(self.replica.pid, signal.SIGCONT)
        killed = time.monotonic()
        harness.wait_until(lambda: self.primary_port() == self.replica.port, 30,
                           "Sentinel to promote the replica")
        promoted = time.monotonic()
        # The promoted replica has no replica of its own: OSBQ_REDIS_MIN_ACKS=1 cannot be met.
        ready_without_replica = [harness.osbq_stack.http_status(g.port, "/readyz", timeout_s=5)
                                 for g in self.gateways]
        # A new machine replaces the lost one (empty: the disk went with it) as a replica of the
        # new primary, so OSBQ_REDIS_MIN_ACKS=1 can be met again. (Restarted at the old address,
        # the old primary would be turned into a replica by Sentinel too, some 10 s later.)
        # As an operator brings up an empty replica, it starts with replica-priority 0: Sentinel
        # counts a replica that never synced as fresh, and a second failover (a PING answered
        # late on a loaded machine, with down-after at 1 s) must not promote it over the data.
        back = test_sentinel.RedisNode(self.stack.workdir, "new-replica",
                                       ["replicaof 127.0.0.1 %d" % self.replica.port,
                                        "dbfilename new-replica.rdb", "replica-priority 0"])
        self.stack.processes.append(back)
        # Its full sync runs while the load goes on and the ASan daemons share two cores: a
        # fresh-clone CI run once needed more than 30 s. The bound is the harness's patience,
        # not the property under test (nothing acknowledged lost, below).
        nodes = (self.replica, back, *self.sentinels)
        try:
            harness.wait_until(lambda: test_sentinel.info(back, "replication").get(
                "master_link_status") == "up", 90, "the new replica to sync with the new primary")
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, redis_story(*nodes))) from None
        back.command("CONFIG", "SET", "replica-priority", "100")
        rejoined = time.monotonic()
        if self.primary_port() != self.replica.port:
            self.fail("a second failover moved the primary:\n" + redis_story(*nodes))
        harness.wait_until(lambda: any(t > rejoined for t in list(load.accepted_at)), 30,
                           "acceptances after the failover")
        time.sleep(LOAD_AFTER_S)
        load.stop()
        stopped = time.monotonic()

        # Every acknowledged operation is on the new primary and ends; no lock stays held.
        primary = self.replica
        states = {}
        final = ("succeeded", "failed")

        def all_final():
            for kind, iid, bid, op in load.acked:
                if states.get(op, "") not in final:
                    states[op] = primary.command("HGET", "osbq:op:" + op, "state")
            # None: the operation's record is gone (lost), which no waiting brings back.
            return all(s in final or s is None for s in states.values())

        harness.wait_until(all_final, SETTLE_S, "every acknowledged operation to end")
        vanished = [op for op, s in states.items() if s is None]
        failed = [op for op, s in states.items() if s == "failed"]
        changed = []
        client = self.stack.client(self.gateways[0])
        for (iid, bid), creds in sorted(load.credentials.items()):
            r = client.request("GET", "/v2/service_instances/%s/service_bindings/%s" % (iid, bid))
            if r.status != 200 or r.json().get("credentials") != creds:
                changed.append((iid, bid, r.status))
        client.close()
        held = []
        for key in primary.command("KEYS", "osbq:instance:*") + primary.command(
                "KEYS", "osbq:binding:*"):
            lock = primary.command("HMGET", key, "lock_x", "lock_s")
            if lock[0] is not None or lock[1] not in (None, "0"):
                held.append((key, lock))
        queued = primary.command("ZCARD", "osbq:queue")

        seen_gone = set(load.lost)
        lost = sum(1 for kind, iid, bid, op in load.acked
                   if states.get(op) is None or (kind, iid) in seen_gone)
        outage = [t for t in load.unavailable if t >= killed - LAG_S - 1]
        seen = (max(outage) - min(outage)) if outage else 0.0
        first_failed = min(outage) if outage else killed
        first_after = min((t for t in load.accepted_at if t > first_failed), default=None)
        instances = sum(1 for a in load.acked if a[0] == "instance")
        elapsed = stopped - killed + LOAD_BEFORE_S
        figures = [
            ("acknowledged", "%d (%d provisions, %d binds)"
             % (len(load.acked), instances, len(load.acked) - instances)),
            ("retries after a 503 that found their operation done", "%d"
             % len(load.done_on_retry)),
            ("lost", "%d" % lost),
            ("answered 503 (or no connection) during the failover", "%d" % len(outage)),
            ("failover as clients saw it", "%.1f s (first to last failed request)" % seen),
            ("kill to promotion", "%.1f s" % (promoted - killed)),
            ("kill to a new replica in sync", "%.1f s" % (rejoined - killed)),
            ("first failed request to the next 202", "%.1f s"
             % ((first_after - first_failed) if first_after else -1)),
            ("requests", "%d in %.1f s (%.0f/s)" % (load.requests, elapsed,
                                                    load.requests / elapsed)),
            ("failed operations", "%d" % len(failed)),
            ("credentials changed", "%d" % len(changed)),
            ("locks held", "%d" % len(held)),
            ("operations queued", "%d" % queued),
        ]
        print("\ndurable failover, OSBQ_REDIS_MIN_ACKS=%d: %s"
              % (MIN_ACKS, "; ".join("%s %s" % f for f in figures)), file=sys.stderr)
        if MIN_ACKS == 0:
            return  # the figure is the point: docs/reliability.md quotes it
        self.assertEqual(ready_without_replica, [503, 503])
        ack_timeouts = 0
        for g in self.gateways:
            metrics = http_text(g.port, "/metrics")
            ack_timeouts += float(re.search(r"(?m)^osbq_redis_ack_timeouts_total (\S+)$",
                                            metrics).group(1))
        self.assertGreater(ack_timeouts, 0, "no WAIT ended short during the failover")
        self.assertEqual(load.unexpected, [])
        self.assertGreater(len(load.acked), 100)
        self.assertGreater(len(outage), 0, "no request saw the failover")
        self.assertEqual((lost, vanished, load.lost), (0, [], []))
        self.assertEqual(failed, [])
        self.assertEqual(changed, [])
        self.assertEqual(held, [])
        self.assertEqual(queued, 0)


if __name__ == "__main__":
    unittest.main()
