"""A delete halts the creation it meets (issue 42, docs/decisions/0051): a deprovision accepted
while the instance is being provisioned, an unbind while the binding is being bound. Real
redis-server, two gateways and two workers on loopback, the sim backend; every wait bounded."""

import json
import os
import signal
import tempfile
import time
import unittest

import harness

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-halt.json")
SERVICE = "7a1e0c3d-5b2f-4e6a-8d9c-0f1e2d3c4b01"
RUNNING = "7a1e0c3d-5b2f-4e6a-8d9c-0f1e2d3c4f01"  # blocking sim: 30 s in one step; deprovision 2 s
WAITING = "7a1e0c3d-5b2f-4e6a-8d9c-0f1e2d3c4f02"  # sim: waits 30 s in Redis
NO_HALT = "7a1e0c3d-5b2f-4e6a-8d9c-0f1e2d3c4f03"  # halt_on_delete false, 3 s
BIND_RUNNING = "7a1e0c3d-5b2f-4e6a-8d9c-0f1e2d3c4f04"  # binds in 30 s in one step
BIND_WAITING = "7a1e0c3d-5b2f-4e6a-8d9c-0f1e2d3c4f05"  # binds in 30 s, waiting in Redis
NAMESPACE = harness.ClusterTestCase.NAMESPACE
# A short lease: a halted step hears of it at its next renewal, a third of this (the halt
# message of issue 42 is still to come).
LEASE_MS = 3000
# Bounds of the waits (seconds): far below the 30 s a creation would take.
HALT_TIMEOUT_S = 15.0


class HaltTestCase(harness.ClusterTestCase):
    """The requests and checks of the halting tests, on tests/data/catalog-halt.json."""

    CATALOG = CATALOG
    EXTRA_ENV = dict(harness.ClusterTestCase.EXTRA_ENV, OSBQ_LEASE_MS=str(LEASE_MS),
                     OSBQ_RECOVERY_INTERVAL_MS="200")
    WORKER_ENV = {"OSBQ_LEASE_MS": str(LEASE_MS)}
    QUIET_TIMEOUT_S = 40.0

    @classmethod
    def warm_up_gateway(cls, c):
        """Nothing to warm: the tests' first requests are asynchronous."""

    # ---- requests ----

    def put(self, iid, plan, incomplete=True, gw=0):
        return self.client(gw).request("PUT", harness.ipath(iid, incomplete=incomplete),
                                       harness.provision_body(SERVICE, plan))

    def delete(self, iid, plan, incomplete=True, gw=0):
        return self.client(gw).request("DELETE", harness.instance_path(
            iid, accepts_incomplete="true" if incomplete else None, service_id=SERVICE,
            plan_id=plan))

    def bpath(self, iid, bid, suffix="", **query):
        return harness.instance_path(iid, "/service_bindings/" + bid + suffix, **query)

    def bind(self, iid, bid, plan, gw=0):
        return self.client(gw).request("PUT", self.bpath(iid, bid, accepts_incomplete="true"),
                                       {"service_id": SERVICE, "plan_id": plan})

    def unbind(self, iid, bid, plan, gw=0):
        return self.client(gw).request("DELETE", self.bpath(
            iid, bid, accepts_incomplete="true", service_id=SERVICE, plan_id=plan))

    def last_operation(self, iid, operation, bid=None):
        path = (self.bpath(iid, bid, "/last_operation", operation=operation) if bid else
                harness.instance_path(iid, "/last_operation", operation=operation))
        return self.client(0).request("GET", path)

    def ended(self, iid, operation, bid=None):
        return self.wait_ended(lambda: self.last_operation(iid, operation, bid),
                               "operation %s" % operation, HALT_TIMEOUT_S)

    def accepted(self, r):
        self.assertEqual(r.status, 202, r.body)
        return r.json()["operation"]

    def op(self, operation):
        return harness.redis_hash(self.stack.redis, "%s:op:%s" % (NAMESPACE, operation))

    def running(self, operation):
        """Waits until a worker runs the operation's step (its state in Redis)."""
        harness.wait_until(lambda: self.op(operation).get("state") == "running", 10,
                           "operation %s running" % operation)

    def assertHalted(self, iid, creation, deletion, bid=None):
        """The creation ended failed, halted by deletion, which then succeeded."""
        r = self.ended(iid, creation, bid)
        self.assertEqual(r.status, 200, r.body)
        body = r.json()
        self.assertEqual(body["state"], "failed", body)
        self.assertIn("Halted", body.get("description", ""))
        self.assertIn(deletion, body["description"])
        record = self.op(creation)
        self.assertEqual(record.get("halted_by"), deletion)
        self.assertIn('"event":"halted"', record.get("history", "").replace(" ", ""))
        self.assertError(self.ended(iid, deletion, bid), 410)



class Halting(HaltTestCase):
    """Deprovisioning and Unbinding: "If a Service Broker accepts the request to delete a
    Service Instance during the process of it being provisioned, then it MUST have the net
    effect of halting the current creation process and beginning the deletion of any resources
    associated with the Service Instance"."""

    # ---- instances ----

    def test_deprovision_halts_a_running_provision(self):
        """The provision's step (holding a runner) is stopped, the provision ends failed with a
        description naming the deprovision, the deprovision then runs and succeeds; a repeated
        DELETE meanwhile is the same operation; afterwards 410 and 404, nothing locked."""
        iid = harness.new_id()
        creation = self.accepted(self.put(iid, RUNNING))
        self.running(creation)
        started = time.monotonic()
        deletion = self.accepted(self.delete(iid, RUNNING))
        self.assertNotEqual(deletion, creation)
        self.assertEqual(self.accepted(self.delete(iid, RUNNING, gw=1)), deletion)
        self.assertHalted(iid, creation, deletion)
        self.assertLess(time.monotonic() - started, HALT_TIMEOUT_S)
        self.assertError(self.delete(iid, RUNNING), 410)
        self.assertError(self.client(0).request("GET", harness.instance_path(iid)), 404)
        record = harness.redis_hash(self.stack.redis, "%s:instance:%s" % (NAMESPACE, iid))
        self.assertEqual(record.get("state"), "gone")
        self.assertNotIn("lock_x", record)

    def test_deprovision_halts_a_provision_waiting_between_its_steps(self):
        """A provision waiting in Redis for its next step is not run again: it ends failed at
        once (no second claim), and the deprovision runs."""
        iid = harness.new_id()
        creation = self.accepted(self.put(iid, WAITING))
        harness.wait_until(lambda: self.op(creation).get("state") == "waiting", 10,
                           "the provision waiting")
        deletion = self.accepted(self.delete(iid, WAITING))
        self.assertHalted(iid, creation, deletion)
        self.assertEqual(self.op(creation).get("claims"), "1")

    def test_synchronous_delete_during_an_asynchronous_provision(self):
        """Deprovisioning, sync: the DELETE waits for the deprovision, which follows the halted
        provision: 200, and the provision ended failed."""
        iid = harness.new_id()
        creation = self.accepted(self.put(iid, RUNNING))
        self.running(creation)
        r = self.delete(iid, RUNNING, incomplete=False)
        self.assertEqual((r.status, r.json()), (200, {}), r.body)
        body = self.ended(iid, creation).json()
        self.assertEqual(body["state"], "failed", body)

    def test_halt_on_delete_false_keeps_the_concurrency_error(self):
        """A plan whose backend cannot clean up a half-made resource keeps the old answer: 422
        ConcurrencyError while the provision runs; the DELETE works once it ended."""
        iid = harness.new_id()
        creation = self.accepted(self.put(iid, NO_HALT))
        self.running(creation)
        self.assertError(self.delete(iid, NO_HALT), 422, "ConcurrencyError")
        r = self.ended(iid, creation)
        self.assertEqual(r.json()["state"], "succeeded", r.body)
        deletion = self.accepted(self.delete(iid, NO_HALT))
        self.assertError(self.ended(iid, deletion), 410)

    # ---- bindings ----

    def provisioned(self, plan):
        iid = harness.new_id()
        r = self.put(iid, plan, incomplete=False)
        self.assertEqual(r.status, 201, r.body)
        return iid

    def test_unbind_halts_a_running_bind_and_no_credentials_are_served(self):
        """Unbinding during the bind: the bind ends failed (halted), the unbind succeeds, the
        binding is gone (fetch 404) and no credentials were ever stored."""
        for plan in (BIND_RUNNING, BIND_WAITING):
            iid = self.provisioned(plan)
            bid = harness.new_id()
            creation = self.accepted(self.bind(iid, bid, plan))
            if plan == BIND_RUNNING:
                self.running(creation)
            deletion = self.accepted(self.unbind(iid, bid, plan))
            self.assertHalted(iid, creation, deletion, bid)
            self.assertError(self.client(0).request("GET", self.bpath(iid, bid)), 404)
            record = harness.redis_hash(self.stack.redis,
                                        "%s:binding:%s:%s" % (NAMESPACE, iid, bid))
            self.assertEqual(record.get("state"), "gone")
            self.assertNotIn("result", record)
            instance = harness.redis_hash(self.stack.redis,
                                          "%s:instance:%s" % (NAMESPACE, iid))
            self.assertNotIn("lock_s", instance)



class HaltMessage(HaltTestCase):
    """The gateway that accepts the delete tells the worker running the step at once, over the
    bus (HALT), rather than leave it to hear at its next lease renewal: with a lease renewed
    every 20 s, the halted provision still ends within the tests' bound."""

    EXTRA_ENV = dict(harness.ClusterTestCase.EXTRA_ENV, OSBQ_LEASE_MS="60000",
                     OSBQ_RECOVERY_INTERVAL_MS="200")
    WORKER_ENV = {"OSBQ_LEASE_MS": "60000"}

    def test_halt_reaches_the_running_step_over_the_bus(self):
        """A worker whose next renewal is 20 s away stops the halted step on the gateway's
        HALT (its log says so), and the deprovision follows."""
        iid = harness.new_id()
        creation = self.accepted(self.put(iid, RUNNING))
        self.running(creation)
        deletion = self.accepted(self.delete(iid, RUNNING))
        self.assertHalted(iid, creation, deletion)
        told = [w for w in self.workers
                if "operation %s halted by a delete" % creation in w.log()]
        self.assertEqual(len(told), 1, "no worker logged the HALT of %s" % creation)



class HaltPolicy(HaltTestCase):
    """With OSBQ_POLICY: the halted provision's quota and the tenant's operations in progress
    are given back once (the deprovision carries the instance's quotas, decision 0044)."""

    POLICY = {"quotas": [{"name": "halting", "plans": [RUNNING], "max_instances": 1}],
              "in_progress_per_tenant": 5}

    @classmethod
    def setUpClass(cls):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(cls.POLICY, f)
        cls.policy_path = f.name
        cls.EXTRA_ENV = dict(HaltTestCase.EXTRA_ENV, OSBQ_POLICY=cls.policy_path)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            os.unlink(cls.policy_path)

    def counters(self):
        """The quota's counter and the tenants' in-progress counters, as Redis holds them."""
        redis = self.stack.redis
        quota = redis.command("GET", NAMESPACE + ":quota:halting")
        in_progress = [redis.command("GET", k)
                       for k in redis.keys(NAMESPACE + ":inprogress:*")]
        return quota, in_progress

    def test_quota_and_operations_in_progress_are_given_back_once(self):
        """Deprovisioning during the provision: the quota counter and the tenant's in-progress
        counter the provision took are freed once (the next instance counts 1 again), and the
        quota holds while the halted instance lives."""
        iid = harness.new_id()
        creation = self.accepted(self.put(iid, RUNNING))
        self.running(creation)
        self.assertEqual(self.counters(), ("1", ["1"]))
        # The quota is full: a second instance of the plan is refused.
        self.assertError(self.put(harness.new_id(), RUNNING), 403)
        deletion = self.accepted(self.delete(iid, RUNNING))
        self.assertHalted(iid, creation, deletion)
        self.assertEqual(self.counters(), (None, []))
        # Given back exactly once: the next instance counts 1 again, and goes as the first did.
        again = harness.new_id()
        creation = self.accepted(self.put(again, RUNNING))
        self.running(creation)
        self.assertEqual(self.counters(), ("1", ["1"]))
        deletion = self.accepted(self.delete(again, RUNNING))
        self.assertHalted(again, creation, deletion)
        self.assertEqual(self.counters(), (None, []))


class HaltFaults(unittest.TestCase):
    """Decision 0051, Atomicity: a worker that dies while halting, a gateway that dies right
    after the delete's 202; each test on a stack of its own. Nothing stuck, no lock left."""

    ENV = {"OSBQ_LEASE_MS": str(LEASE_MS), "OSBQ_RECOVERY_INTERVAL_MS": "200"}

    def make_stack(self):
        stack = harness.Stack(catalog=CATALOG, extra_env=self.ENV)
        self.addCleanup(stack.stop)
        self.stack = stack
        return stack

    def request(self, gateway, method, path, body=None):
        c = self.stack.client(gateway)
        self.addCleanup(c.close)
        return c.request(method, path, body)

    def provision(self, gateway, iid):
        r = self.request(gateway, "PUT", harness.ipath(iid, incomplete=True),
                         harness.provision_body(SERVICE, RUNNING))
        self.assertEqual(r.status, 202, r.body)
        return r.json()["operation"]

    def delete(self, gateway, iid):
        r = self.request(gateway, "DELETE", harness.instance_path(
            iid, accepts_incomplete="true", service_id=SERVICE, plan_id=RUNNING))
        self.assertEqual(r.status, 202, r.body)
        return r.json()["operation"]

    def op(self, operation):
        return harness.redis_hash(self.stack.redis, "%s:op:%s" % (NAMESPACE, operation))

    def wait_running(self, operation):
        harness.wait_until(lambda: self.op(operation).get("state") == "running", 10,
                           "operation %s running" % operation)
        return self.op(operation)["worker"]

    def assertHaltedThenGone(self, gateway, iid, creation, deletion):
        harness.wait_until(lambda: self.op(deletion).get("state") == "succeeded", HALT_TIMEOUT_S,
                           "the deprovision %s to succeed" % deletion)
        record = self.op(creation)
        self.assertEqual((record.get("state"), record.get("halted_by")), ("failed", deletion))
        r = self.request(gateway, "GET", harness.instance_path(
            iid, "/last_operation", operation=creation))
        self.assertEqual((r.status, r.json()["state"]), (200, "failed"), r.body)
        instance = harness.redis_hash(self.stack.redis, "%s:instance:%s" % (NAMESPACE, iid))
        self.assertEqual(instance.get("state"), "gone")
        self.assertNotIn("lock_x", instance)

    def test_worker_killed_while_its_step_halts(self):
        """The worker running the provision dies as the DELETE comes: its lease runs out, the
        recovery loop ends the provision halted, and the other worker runs the deprovision."""
        stack = self.make_stack()
        gateway, workers = harness.start_connected(stack, 2)
        by_id = {harness.worker_id(w): w for w in workers}
        iid = harness.new_id()
        creation = self.provision(gateway, iid)
        victim = by_id[self.wait_running(creation)]
        self.assertEqual(harness.kill(victim), -signal.SIGKILL)
        deletion = self.delete(gateway, iid)
        self.assertHaltedThenGone(gateway, iid, creation, deletion)
        survivor = [w for w in workers if w is not victim][0]
        self.assertEqual(self.op(deletion).get("worker"), harness.worker_id(survivor))

    def test_gateway_killed_right_after_the_deletes_202(self):
        """The gateway that accepted the DELETE dies at once: the halt and the deprovision are
        in Redis, and the other gateway's recovery loop carries them to their end."""
        stack = self.make_stack()
        gateways = [stack.start_gateway(), stack.start_gateway()]
        stack.start_worker()
        harness.wait_workers_connected(gateways, 1)
        iid = harness.new_id()
        creation = self.provision(gateways[0], iid)
        self.wait_running(creation)
        deletion = self.delete(gateways[0], iid)
        self.assertEqual(harness.kill(gateways[0]), -signal.SIGKILL)
        self.assertHaltedThenGone(gateways[1], iid, creation, deletion)


if __name__ == "__main__":
    unittest.main()
