"""The cap on each tenant's operations in progress (OSBQ_POLICY in_progress_per_tenant,
docs/policies.md) through a real gateway, worker and redis-server: a tenant whose operations in
progress reach the cap gets a 422 naming the cap, its limit and the tenant, for a provision, an
update and a bind, with nothing written; another tenant is still accepted; a deprovision is
counted but never refused; an identical request joins its running operation without counting;
and every way an operation ends (success, failure, an operator's fail, the recovery loop's
abandon) gives its place back, so the counter is gone once everything has ended."""

import json
import os
import tempfile
import threading
import unittest
import uuid

import harness

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-cap.json")
CTL = os.path.join(harness.BUILD_DIR, "bin", "osbq-ctl")
SERVICE = "c4a90000-0000-4000-8000-000000000001"
WAITS = "c4a90000-0000-4000-8000-000000000101"    # provision, update, bind: 10 min, waiting
INSTANT = "c4a90000-0000-4000-8000-000000000102"  # every operation at once
FAILS = "c4a90000-0000-4000-8000-000000000103"    # a provision fails at once
HANGS = "c4a90000-0000-4000-8000-000000000104"    # a provision hangs past its 1-s deadline

CAP = 3
# Short recovery timings, and one attempt: a hung provision is abandoned at its first deadline.
ENV = {
    "OSBQ_LEASE_MS": "2000",
    "OSBQ_RECOVERY_INTERVAL_MS": "200",
    "OSBQ_MAX_ATTEMPTS": "1",
    "OSBQ_SHUTDOWN_GRACE_MS": "500",
}
# What a bound allows beyond the work itself: scheduling under sanitizers, polling.
SLACK_S = 10.0


new_id = harness.new_id


def new_org():
    return "org-" + uuid.uuid4().hex[:12]


def cf(org):
    return {"platform": "cloudfoundry", "organization_guid": org, "space_guid": "space-1"}


def capped(org):
    """The 422's description for org's tenant (the "default" platform: no OSBQ_PLATFORMS)."""
    return ("The tenant \"default/%s\" already has %d operations in progress, and this broker's "
            "policy allows at most %d per tenant (OSBQ_POLICY in_progress_per_tenant); retry when "
            "some have ended." % (org, CAP, CAP))


class InProgressCap(harness.GatewayTestCase):
    @classmethod
    def setUpClass(cls):
        cls.policy_file = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump({"in_progress_per_tenant": CAP}, cls.policy_file)
        cls.policy_file.close()
        cls.stack = harness.Stack(catalog=CATALOG, extra_env=ENV)
        cls.gateway = cls.stack.start_gateway(OSBQ_POLICY=cls.policy_file.name)
        # Room beside the hung provision's thread, which stays busy until the worker exits.
        cls.worker = cls.stack.start_worker(OSBQ_WORKER_CONCURRENCY="4")
        harness.wait_workers_connected([cls.gateway], 1)

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()
        os.unlink(cls.policy_file.name)

    # ---- requests ----

    def provision(self, iid, plan, org, asynchronous=False):
        path = "/v2/service_instances/" + iid + ("?accepts_incomplete=true" if asynchronous else "")
        return self.client.request("PUT", path,
                                   {"service_id": SERVICE, "plan_id": plan, "context": cf(org)})

    def started(self, plan, org):
        """An asynchronous provision of plan, accepted: (instance id, operation id)."""
        iid = new_id()
        r = self.provision(iid, plan, org, asynchronous=True)
        self.assertEqual(r.status, 202, r.body)
        return iid, r.json()["operation"]

    def last_operation(self, iid):
        r = self.client.request("GET", "/v2/service_instances/%s/last_operation" % iid)
        self.assertEqual(r.status, 200, r.body)
        return r.json()

    def wait_waiting(self, started):
        """Waits until each (instance, operation) of started has run its first step: it waits in
        Redis for its next one, 10 minutes away, and nothing writes to it meanwhile."""
        harness.wait_until(lambda: all(
            self.stack.redis.command("HGET", "osbq:op:" + op, "state") == "waiting"
            for _, op in started), SLACK_S, "the first steps to run")

    def assertCapped(self, r, org):
        self.assertEqual(r.status, 422, r.body)
        self.assertEqual(r.json(), {"description": capped(org)})

    # ---- Redis and osbq-ctl ----

    def counter(self, org):
        got = self.stack.redis.command("GET", "osbq:inprogress:default%2F" + org)
        return int(got) if got is not None else None

    def ctl(self, *args):
        status, out = harness.run_once([CTL] + list(args), self.stack.env())
        return status, out

    def operator_fail(self, op):
        status, out = self.ctl("fail", op, "--yes")
        self.assertEqual(status, 0, out)

    def history(self, op):
        status, out = self.ctl("--json", "operation", op)
        self.assertEqual(status, 0, out)
        return [e["event"] for e in json.loads(out)["history"]]

    def capped_metric(self, kind):
        r = harness.Client(self.gateway.port)
        try:
            text = r.request("GET", "/metrics", auth=False, version=False).body.decode()
        finally:
            r.close()
        return harness.metric_sum(harness.parse_metrics(text), "osbq_gateway_operations_total",
                                  kind=kind, state="capped")

    # ---- tests ----

    def test_1_full_cap_refuses_with_its_description_until_an_operation_ends(self):
        a, b = new_org(), new_org()
        # An instance of A's to update, bind and deprovision later; its provision has ended.
        done = new_id()
        self.assertEqual(self.provision(done, INSTANT, a).status, 201)
        self.assertIsNone(self.counter(a))
        running = [self.started(WAITS, a) for _ in range(CAP)]
        self.assertEqual(self.counter(a), CAP)
        # The identical request joins its running operation: not counted, not refused.
        r = self.provision(running[0][0], WAITS, a, asynchronous=True)
        self.assertEqual(r.status, 202, r.body)
        self.assertEqual(r.json()["operation"], running[0][1])
        self.assertEqual(self.counter(a), CAP)

        # Full: provisions (asynchronous or not), updates and binds are refused, writing nothing.
        refused = new_id()
        capped_before = self.capped_metric("provision")
        self.wait_waiting(running)
        before = harness.redis_snapshot(self.stack.redis)
        self.assertCapped(self.provision(refused, WAITS, a, asynchronous=True), a)
        self.assertCapped(self.provision(new_id(), INSTANT, a), a)
        self.assertCapped(self.client.request(
            "PATCH", "/v2/service_instances/%s?accepts_incomplete=true" % done,
            {"service_id": SERVICE, "parameters": {"size": 2}}), a)
        self.assertCapped(self.client.request(
            "PUT", "/v2/service_instances/%s/service_bindings/%s" % (done, new_id()),
            {"service_id": SERVICE, "plan_id": INSTANT}), a)
        self.assertEqual(harness.redis_snapshot(self.stack.redis), before)
        self.assertEqual(self.capped_metric("provision"), capped_before + 2)
        self.assertEqual(self.counter(a), CAP)

        # Another tenant is not A's cap's business.
        self.assertEqual(self.provision(new_id(), INSTANT, b).status, 201)
        self.assertIsNone(self.counter(b))

        # A deprovision is never refused: counted beside the cap while it runs, given back.
        r = self.client.request("DELETE", "/v2/service_instances/%s?service_id=%s&plan_id=%s"
                                % (done, SERVICE, INSTANT))
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(self.counter(a), CAP)

        # An operator fails one: its place is free, and the refused provision is accepted.
        self.operator_fail(running[0][1])
        self.assertEqual(self.counter(a), CAP - 1)
        r = self.provision(refused, WAITS, a, asynchronous=True)
        self.assertEqual(r.status, 202, r.body)
        running.append((refused, r.json()["operation"]))
        self.assertEqual(self.counter(a), CAP)
        self.assertCapped(self.provision(new_id(), WAITS, a, asynchronous=True), a)

        for _, op in running[1:]:
            self.operator_fail(op)
        self.assertIsNone(self.counter(a))
        self.assertEqual(self.stack.redis.keys("osbq:inprogress:*"), [])

    def test_2_failed_and_abandoned_operations_give_their_place_back(self):
        c = new_org()
        running = [self.started(WAITS, c) for _ in range(CAP - 1)]
        self.assertEqual(self.counter(c), CAP - 1)
        # Failed by its backend: counted while it ran, given back with its outcome.
        r = self.provision(new_id(), FAILS, c)
        self.assertEqual(r.status, 502, r.body)
        self.assertEqual(self.counter(c), CAP - 1)

        # A provision that hangs takes the last place...
        hung, hung_op = self.started(HANGS, c)
        self.assertEqual(self.counter(c), CAP)
        self.assertCapped(self.provision(new_id(), INSTANT, c), c)
        # ...until the recovery loop abandons it (released at its 1-s deadline, one attempt).
        harness.wait_until(lambda: self.last_operation(hung)["state"] == "failed", SLACK_S,
                           "the hung provision to be abandoned")
        self.assertIn("abandoned", self.history(hung_op))
        self.assertEqual(self.counter(c), CAP - 1)
        self.assertEqual(self.provision(new_id(), INSTANT, c).status, 201)

        for _, op in running:
            self.operator_fail(op)
        self.assertIsNone(self.counter(c))
        self.assertEqual(self.stack.redis.keys("osbq:inprogress:*"), [])

    def test_3_concurrent_requests_race_for_the_last_places_exactly(self):
        """20 concurrent provisions of one tenant race for its 3 places: exactly 3 accepted."""
        d = new_org()
        results = [None] * 20
        start = threading.Barrier(len(results))

        def one(i):
            c = self.stack.client(self.gateway)
            try:
                start.wait(timeout=10)
                iid = new_id()
                r = c.request("PUT", "/v2/service_instances/%s?accepts_incomplete=true" % iid,
                              {"service_id": SERVICE, "plan_id": WAITS, "context": cf(d)})
                results[i] = (r.status, r.json())
            finally:
                c.close()

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(results))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        accepted = [body["operation"] for status, body in results if status == 202]
        refused = [body for status, body in results if status == 422]
        self.assertEqual(len(accepted), CAP, results)
        self.assertEqual(len(refused), len(results) - CAP, results)
        for body in refused:
            self.assertEqual(body, {"description": capped(d)})
        self.assertEqual(self.counter(d), CAP)
        for op in accepted:
            self.operator_fail(op)
        self.assertIsNone(self.counter(d))


if __name__ == "__main__":
    unittest.main()
