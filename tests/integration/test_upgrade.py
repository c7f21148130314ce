"""A rolling upgrade under load (docs/deploy.md#upgrades): a stack of the previous release
(previous_release.py: Redis, two gateways, two workers) serves synchronous and asynchronous
lifecycles (provision, bind, fetch, unbind, deprovision) through both gateways, as a platform
behind a load balancer would, while its workers and then its gateways are replaced one by one by
this build's, each old one drained by SIGTERM. Checked: no request failed but a 503 that a retry
then answered; every acknowledged operation ended, none failed; bindings made before the upgrade
fetch the same credentials after it; the old processes stopped cleanly; and old and new processes
exchanged work both ways: an old gateway's jobs ran on new workers, a new worker's outcome
answered an old gateway's waiting request, and a new gateway sent the next step of an operation
an old gateway had accepted. Only processes the harness started are signalled, by PID; every loop
is bounded in count and time."""

import collections
import json
import os
import threading
import time
import unittest

import harness
import previous_release

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-upgrade.json")
SERVICE = "7e0a1b2c-3d4e-4f50-8a61-72b3c4d5e601"
NOW = "7e0a1b2c-3d4e-4f50-8a61-72b3c4d5f601"    # every operation at once
STEPS = "7e0a1b2c-3d4e-4f50-8a61-72b3c4d5f602"  # 300-400 ms: two steps on a new worker
LONG = "7e0a1b2c-3d4e-4f50-8a61-72b3c4d5f603"   # provisions in 6 s, longer than a drain
LONG_S = 6.0
NAMESPACE = "osbq"
GRACE_MS = 5000
SETTINGS = {
    "OSBQ_SHUTDOWN_GRACE_MS": str(GRACE_MS),
    # A job an old worker could not claim (a waiting operation: only new workers know the state)
    # is sent again after this, not after the default 10 s.
    "OSBQ_CLAIM_TIMEOUT_MS": "3000",
}
# Load between two replacements, and after the last.
LOAD_S = 2.0
# A platform's retries of a 503, and its pause between them.
RETRIES = 10
RETRY_PAUSE_S = 0.5
# The longest an asynchronous operation may take, polled every POLL_S.
OPERATION_TIMEOUT_S = 40.0
POLL_S = 0.1
# Bounds of each load thread: lifecycles, and time.
MAX_LIFECYCLES = 500
LOAD_TIMEOUT_S = 240.0


def ipath(instance):
    return "/v2/service_instances/" + instance


def bpath(instance, binding):
    return ipath(instance) + "/service_bindings/" + binding


def query(plan, incomplete):
    q = "service_id=%s&plan_id=%s" % (SERVICE, plan)
    return q + "&accepts_incomplete=true" if incomplete else q


class Balancer:
    """The gateways a platform reaches, in turn, as a load balancer would: a draining gateway
    is taken out before it gets SIGTERM."""

    def __init__(self):
        self.lock = threading.Lock()
        self.live = []
        self.turn = 0

    def add(self, gateway):
        with self.lock:
            self.live.append(gateway)

    def remove(self, gateway):
        with self.lock:
            self.live.remove(gateway)

    def pick(self):
        with self.lock:
            self.turn += 1
            return self.live[self.turn % len(self.live)]


class Platform:
    """One platform thread's requests: each to the next live gateway over a keep-alive
    connection (closed once its gateway left the balancer), a 503 retried up to RETRIES times
    as a platform does. Whatever a retry did not mend goes to failures."""

    def __init__(self, test):
        self.test = test
        self.clients = {}

    def close(self, keep=()):
        for gateway in [g for g in self.clients if g not in keep]:
            self.clients.pop(gateway).close()

    def request(self, method, path, body=None, ok=(200,)):
        """The answer (and the gateway that gave it) whose status is in ok, or None after
        recording the failure."""
        what = "%s %s" % (method, path)
        for attempt in range(RETRIES):
            gateway = self.test.balancer.pick()
            with self.test.balancer.lock:
                self.close(keep=self.test.balancer.live)
            if gateway not in self.clients:
                self.clients[gateway] = harness.CheckedClient(
                    gateway.port, self.test.stack.username, self.test.stack.password, "2.17",
                    self.test.violations)
            try:
                r = self.clients[gateway].request(method, path, body)
            except OSError as e:
                self.test.fail_later("%s via %s: %s" % (what, gateway.name, e))
                return None, gateway
            if r.status in ok:
                if attempt > 0:
                    self.test.count("503 then answered by a retry")
                return r, gateway
            if r.status != 503:
                self.test.fail_later("%s via %s: %d %r" % (what, gateway.name, r.status, r.body))
                return None, gateway
            self.test.count("503")
            time.sleep(RETRY_PAUSE_S)
        self.test.fail_later("%s: still 503 after %d tries" % (what, RETRIES))
        return None, None

    def wait_done(self, path, operation, deleting):
        """Polls an asynchronous operation's last_operation until it ends; True when it
        succeeded."""
        deadline = time.monotonic() + OPERATION_TIMEOUT_S
        ok = (200, 410) if deleting else (200,)
        while time.monotonic() < deadline:
            r, _ = self.request("GET", "%s/last_operation?operation=%s" % (path, operation),
                                ok=ok)
            if r is None:
                return False
            if r.status == 410:
                return True
            state = r.json()["state"]
            if state == "succeeded":
                return True
            if state == "failed":
                self.test.fail_later("%s: operation %s failed: %r" % (path, operation, r.body))
                return False
            time.sleep(POLL_S)
        self.test.fail_later("%s: operation %s still in progress after %ss"
                             % (path, operation, OPERATION_TIMEOUT_S))
        return False

    def run(self, path, params, body, incomplete, deleting=False, method="PUT"):
        """One operation on path (with the query params), waited for when it runs
        asynchronously; (its last answer or None, the gateway that answered it first)."""
        ok = (200, 201, 202) if incomplete else ((200,) if deleting else (201, 200))
        r, gateway = self.request(method, path + "?" + params, body, ok)
        if r is None or r.status != 202:
            return r, gateway
        operation = r.json().get("operation", "")
        self.test.record_async(operation)
        return (r if self.wait_done(path, operation, deleting) else None), gateway


class RollingUpgrade(unittest.TestCase):

    def setUp(self):
        self.version, self.old_gateway_bin, self.old_worker_bin = \
            previous_release.build(harness.BUILD_DIR)
        self.stack = harness.Stack(catalog=CATALOG, extra_env=SETTINGS)
        self.addCleanup(self.stack.stop)
        self.balancer = Balancer()
        self.violations = []
        self.failures = []
        self.counts = collections.Counter()
        self.async_ops = []
        self.sync_instance_ops = []  # (instance, answering gateway)
        self.lock = threading.Lock()

    # ---- what the load threads report ----

    def fail_later(self, text):
        with self.lock:
            self.failures.append(text)

    def count(self, what):
        with self.lock:
            self.counts[what] += 1

    def record_async(self, operation):
        with self.lock:
            self.async_ops.append(operation)

    # ---- processes ----

    def start_old_gateway(self, n):
        return self.stack.start_gateway(name="gateway-%d-%s" % (n, self.version),
                                        binary=self.old_gateway_bin)

    def replace_worker(self, old, n, gateways):
        new = self.stack.start_worker(name="worker-%d-new" % n)
        new_id = harness.worker_id(new)
        harness.wait_until(lambda: all(new_id in harness.connected_workers(g) for g in gateways),
                           harness.START_TIMEOUT_S, "every gateway to see %s" % new.name)
        self.stop_old(old)
        return new, new_id

    def replace_gateway(self, old, n, worker_ids, before_stop=None):
        new = self.stack.start_gateway(name="gateway-%d-new" % n)
        harness.wait_until(lambda: worker_ids <= harness.connected_workers(new),
                           harness.START_TIMEOUT_S, "the workers to reach %s" % new.name)
        self.balancer.add(new)
        if before_stop is not None:
            before_stop(old)
        self.balancer.remove(old)
        # What the balancer sent it before is on its way; the drain answers it.
        time.sleep(0.3)
        self.stop_old(old)
        return new

    def stop_old(self, process):
        status = process.stop()
        self.assertEqual(status, 0, "%s on SIGTERM:\n%s" % (process.name, process.log()))

    # ---- load ----

    def lifecycles(self, tag, incomplete, stop):
        platform = Platform(self)
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        try:
            for i in range(MAX_LIFECYCLES):
                if stop.is_set() or time.monotonic() > deadline:
                    return
                plan = STEPS if incomplete or i % 2 else NOW
                if not self.lifecycle(platform, "%s-%d" % (tag, i), plan, incomplete):
                    return
                self.count("lifecycles")
        finally:
            platform.close()

    def lifecycle(self, platform, instance, plan, incomplete):
        binding = "b-" + instance
        r, gateway = self.provision(platform, instance, plan, incomplete)
        if r is None:
            return False
        if not incomplete:
            with self.lock:
                self.sync_instance_ops.append((instance, gateway))
        credentials = self.bind(platform, instance, binding, plan, incomplete)
        if credentials is None:
            return False
        for path in (bpath(instance, binding), ipath(instance)):
            r, _ = platform.run(path, query(plan, incomplete), None, incomplete, deleting=True,
                                method="DELETE")
            if r is None:
                return False
        return True

    @staticmethod
    def provision(platform, instance, plan, incomplete):
        """Provisions instance; (the answer or None, the gateway that gave it)."""
        return platform.run(ipath(instance), query(plan, incomplete),
                            {"service_id": SERVICE, "plan_id": plan,
                             "organization_guid": "org", "space_guid": "space"}, incomplete)

    def bind(self, platform, instance, binding, plan, incomplete):
        """Binds and fetches the binding; its credentials, or None."""
        r, _ = platform.run(bpath(instance, binding), query(plan, incomplete),
                            {"service_id": SERVICE, "plan_id": plan}, incomplete)
        if r is None:
            return None
        fetched, _ = platform.request("GET", bpath(instance, binding))
        if fetched is None:
            return None
        credentials = fetched.json().get("credentials")
        if r.status != 202 and r.json().get("credentials") != credentials:
            self.fail_later("%s: fetched %r, bound %r" % (binding, credentials, r.body))
        return credentials

    # ---- Redis ----

    def operations(self):
        """Every operation record: {operation id: hash}."""
        redis = self.stack.redis
        prefix = NAMESPACE + ":op:"
        return {key[len(prefix):]: harness.redis_hash(redis, key)
                for key in redis.keys(prefix + "*")}

    def instance_operation(self, instance):
        return self.stack.redis.command("HGET", "%s:instance:%s" % (NAMESPACE, instance),
                                        "last_op")

    # ---- the test ----

    def test_workers_then_gateways_one_by_one_under_load(self):
        old_gateways = [self.start_old_gateway(n) for n in (1, 2)]
        old_workers = [self.stack.start_worker(name="worker-%d-%s" % (n, self.version),
                                               binary=self.old_worker_bin) for n in (1, 2)]
        old_worker_ids = {harness.worker_id(w) for w in old_workers}
        harness.wait_workers_connected(old_gateways, 2)
        for g in old_gateways:
            self.balancer.add(g)

        # Bindings made by the old release, fetched again at the end.
        kept = {}
        setup = Platform(self)
        for n, (plan, incomplete) in enumerate(((NOW, False), (STEPS, True)) * 2):
            instance = "kept-%d" % n
            self.assertIsNotNone(self.provision(setup, instance, plan, incomplete)[0],
                                 self.failures)
            kept[instance] = self.bind(setup, instance, "b-" + instance, plan, incomplete)
            self.assertIsNotNone(kept[instance], self.failures)
        setup.close()

        stop = threading.Event()
        threads = [threading.Thread(target=self.lifecycles, args=(tag, incomplete, stop))
                   for tag, incomplete in (("sync-a", False), ("sync-b", False),
                                           ("async-a", True), ("async-b", True))]
        for t in threads:
            t.start()
        try:
            time.sleep(LOAD_S)
            new_workers, new_worker_ids = [], set()
            for n, old in enumerate(old_workers, 1):
                new, new_id = self.replace_worker(old, n, old_gateways)
                new_workers.append(new)
                new_worker_ids.add(new_id)
                time.sleep(LOAD_S)
            # Only old gateways so far: every operation a new worker ran, an old one sent.
            by_old_gateway_on_new_worker = [
                op for op, rec in self.operations().items()
                if rec.get("worker") in new_worker_ids and "platform" in rec]

            long_op = {}

            def accept_long(gateway):
                # Accepted by the last old gateway, its next step falls due after that gateway
                # is gone: only a new gateway can send it.
                client = self.stack.client(gateway)
                r = client.request("PUT", ipath("long") + "?" + query(LONG, True),
                                   {"service_id": SERVICE, "plan_id": LONG,
                                    "organization_guid": "org", "space_guid": "space"})
                client.close()
                self.assertEqual(r.status, 202, r.body)
                long_op["id"] = r.json()["operation"]
                long_op["accepted"] = time.monotonic()

            new_gateways = [self.replace_gateway(old_gateways[0], 1, new_worker_ids)]
            time.sleep(LOAD_S)
            new_gateways.append(self.replace_gateway(old_gateways[1], 2, new_worker_ids,
                                                     before_stop=accept_long))
            long_record = harness.redis_hash(self.stack.redis, "%s:op:%s"
                                             % (NAMESPACE, long_op["id"]))
            time.sleep(LOAD_S)
        finally:
            stop.set()
            for t in threads:
                t.join(OPERATION_TIMEOUT_S * 5)
        self.assertFalse(any(t.is_alive() for t in threads), "load threads still running")

        # The long provision ends through a new gateway.
        after = Platform(self)
        self.assertIn(long_record.get("state"), ("queued", "running", "waiting"),
                      "the long provision ended before its old gateway stopped: %r"
                      % long_record)
        self.assertTrue(after.wait_done(ipath("long"), long_op["id"], False), self.failures)
        # Bindings made before the upgrade: the same credentials through each new gateway.
        for gateway in new_gateways:
            client = self.stack.client(gateway)
            for instance, credentials in kept.items():
                r = client.request("GET", bpath(instance, "b-" + instance))
                self.assertEqual(r.status, 200, r.body)
                self.assertEqual(r.json().get("credentials"), credentials, instance)
            client.close()
        after.close()

        self.assertEqual(self.failures, [], "requests that failed (503s: %d)" % self.counts["503"])
        self.assertEqual(self.violations, [], "error answers without a JSON description")
        harness.wait_until(lambda: not self.stack.redis.command("ZCARD", NAMESPACE + ":queue"),
                           OPERATION_TIMEOUT_S, "every operation to end")
        records = self.operations()
        unfinished = {op: rec.get("state") for op, rec in records.items()
                      if rec.get("state") != "succeeded"}
        self.assertEqual(unfinished, {}, "operations that did not succeed")
        self.assertEqual([op for op in self.async_ops if op not in records], [],
                         "acknowledged operations without a record")

        # Old and new exchanged work both ways.
        self.assertNotEqual(by_old_gateway_on_new_worker, [],
                            "no job of an old gateway ran on a new worker")
        answered_old = [instance for instance, gateway in self.sync_instance_ops
                        if gateway in old_gateways
                        and records.get(self.instance_operation(instance) or "", {})
                        .get("worker") in new_worker_ids]
        self.assertNotEqual(answered_old, [],
                            "no synchronous request to an old gateway was answered by a new "
                            "worker")
        self.assertIn("platform", long_record, "the long provision's record is not an old one")
        self.assertIn(records[long_op["id"]].get("worker"), new_worker_ids)
        ran_old = {rec.get("worker") for rec in records.values()} & old_worker_ids
        self.assertTrue(ran_old, "the old workers ran nothing")
        print("upgrade %s -> this build: %d lifecycles, %d async operations, %d records; "
              "%d jobs of old gateways on new workers, %d synchronous answers of old gateways "
              "from new workers; 503s: %d, answered by a retry: %d"
              % (self.version, self.counts["lifecycles"], len(self.async_ops), len(records),
                 len(by_old_gateway_on_new_worker), len(answered_old), self.counts["503"],
                 self.counts["503 then answered by a retry"]))


if __name__ == "__main__":
    unittest.main()
