"""Broker-side policies (OSBQ_POLICY, docs/policies.md) through a real gateway, worker and
redis-server: quotas hold exactly under concurrency, failed provisions and deprovisions give
their slot back, plan changes move the count, deny rules for both platforms' context shapes,
and every refusal is a 403 JSON description (422 for an update) with nothing written."""

import json
import os
import tempfile
import threading
import unittest

import harness

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-policies.json")
CTL = os.path.join(harness.BUILD_DIR, "bin", "osbq-ctl")
DB = "7d1e0000-0000-4000-8000-000000000001"
CACHE = "7d1e0000-0000-4000-8000-000000000002"
RACE = "7d1e0000-0000-4000-8000-000000000101"
SMALL = "7d1e0000-0000-4000-8000-000000000102"
LARGE = "7d1e0000-0000-4000-8000-000000000103"
BROKEN = "7d1e0000-0000-4000-8000-000000000104"
TINY = "7d1e0000-0000-4000-8000-000000000201"

POLICY = {
    "quotas": [
        {"name": "race", "plans": [RACE], "max_instances": 8},
        {"name": "small-per-namespace", "plans": [SMALL], "per": "namespace",
         "max_instances": 2},
        {"name": "large", "plans": [LARGE], "max_instances": 1},
        {"name": "broken", "plans": [BROKEN], "max_instances": 1},
        # Without OSBQ_PLATFORMS every request is the "default" platform's.
        {"name": "tiny-per-platform", "plans": [TINY], "per": "platform", "max_instances": 2},
    ],
    "deny": [
        {"name": "no-large-in-dev", "plans": [LARGE], "operations": ["provision"],
         "namespaces": ["dev"], "organization_guids": ["org-dev"]},
        {"name": "cache-locked-space", "services": [CACHE], "operations": ["bind"],
         "space_guids": ["space-locked"]},
    ],
}


def k8s(namespace):
    return {"platform": "kubernetes", "namespace": namespace, "clusterid": "c1"}


def cf(org, space):
    return {"platform": "cloudfoundry", "organization_guid": org, "space_guid": space}


class Policies(harness.GatewayTestCase):
    @classmethod
    def setUpClass(cls):
        cls.policy_file = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(POLICY, cls.policy_file)
        cls.policy_file.close()
        cls.stack = harness.Stack(catalog=CATALOG)
        cls.gateway = cls.stack.start_gateway(OSBQ_POLICY=cls.policy_file.name)
        cls.worker = cls.stack.start_worker()
        harness.wait_workers_connected([cls.gateway], 1)

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()
        os.unlink(cls.policy_file.name)

    def provision(self, iid, plan, context, client=None, asynchronous=False):
        body = {"service_id": CACHE if plan == TINY else DB, "plan_id": plan, "context": context}
        path = "/v2/service_instances/" + iid + ("?accepts_incomplete=true" if asynchronous else "")
        return (client or self.client).request("PUT", path, body)

    def deprovision(self, iid, plan):
        r = self.client.request("DELETE", "/v2/service_instances/%s?service_id=%s&plan_id=%s"
                                % (iid, CACHE if plan == TINY else DB, plan))
        self.assertEqual(r.status, 200, r.body)

    def assertForbidden(self, r, description, status=403):
        self.assertEqual(r.status, status, r.body)
        self.assertEqual(r.json(), {"description": description})

    def counter(self, name, value=None):
        key = "osbq:quota:" + name + (":" + value if value else "")
        got = self.stack.redis.command("GET", key)
        return int(got) if got is not None else 0

    def ctl_quotas(self):
        env = self.stack.env(OSBQ_POLICY=self.policy_file.name)
        status, out = harness.run_once([CTL, "quotas", "--json"], env)
        self.assertEqual(status, 0, out)
        return {(row["quota"], row["value"]): (row["used"], row["limit"])
                for row in json.loads(out)}

    def test_last_slots_race_exactly(self):
        """50 concurrent provisions race for the last 5 of 8 slots: exactly 5 are accepted."""
        for i in range(3):
            self.assertEqual(self.provision("race-pre-%d" % i, RACE, k8s("t")).status, 201)
        statuses = [None] * 50
        start = threading.Barrier(50)

        def one(i):
            c = self.stack.client(self.gateway)
            try:
                start.wait(timeout=10)
                r = self.provision("race-%d" % i, RACE, k8s("t"), client=c, asynchronous=True)
                statuses[i] = (r.status, r.json())
            finally:
                c.close()

        threads = [threading.Thread(target=one, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        accepted = [s for s in statuses if s and s[0] == 202]
        refused = [s for s in statuses if s and s[0] == 403]
        self.assertEqual(len(accepted), 5, statuses)
        self.assertEqual(len(refused), 45, statuses)
        for _, body in refused:
            self.assertEqual(body, {"description": "Quota \"race\" exceeded: 8 of at most 8 "
                                                   "instances exist."})
        self.assertEqual(self.counter("race"), 8)
        self.assertEqual(self.ctl_quotas()[("race", None)], (8, 8))
        # Only the accepted ones exist.
        winners = [i for i, s in enumerate(statuses) if s[0] == 202]
        keys = self.stack.redis.keys("osbq:instance:race-*")
        self.assertEqual(len(keys), 8)
        # A deprovision frees a slot, and only one.
        harness.wait_until(lambda: self.client.request(
            "GET", "/v2/service_instances/race-%d/last_operation" % winners[0]).json().get(
                "state") == "succeeded", 10, "the provision to finish")
        self.deprovision("race-%d" % winners[0], RACE)
        self.assertEqual(self.counter("race"), 7)
        self.assertEqual(self.provision("race-after", RACE, k8s("t")).status, 201)
        self.assertForbidden(self.provision("race-after-2", RACE, k8s("t")),
                             "Quota \"race\" exceeded: 8 of at most 8 instances exist.")

    def test_failed_provision_gives_its_slot_back(self):
        for i in range(3):
            r = self.provision("broken-%d" % i, BROKEN, k8s("t"))
            self.assertEqual(r.status, 502, r.body)  # failed, not refused by the quota
            self.assertEqual(self.counter("broken"), 0)

    def test_quota_per_namespace(self):
        for i in range(2):
            self.assertEqual(self.provision("ns-a-%d" % i, SMALL, k8s("team-a")).status, 201)
        before = sorted(self.stack.redis.keys("*"))
        self.assertForbidden(
            self.provision("ns-a-2", SMALL, k8s("team-a")),
            "Quota \"small-per-namespace\" exceeded: the namespace \"team-a\" has 2 of at most "
            "2 instances.")
        self.assertEqual(sorted(self.stack.redis.keys("*")), before)
        self.assertEqual(self.provision("ns-b-0", SMALL, k8s("team-b")).status, 201)
        # Cloud Foundry requests have no namespace: that quota does not count them.
        for i in range(3):
            self.assertEqual(self.provision("ns-cf-%d" % i, SMALL, cf("o", "s")).status, 201)
        quotas = self.ctl_quotas()
        self.assertEqual(quotas[("small-per-namespace", "team-a")], (2, 2))
        self.assertEqual(quotas[("small-per-namespace", "team-b")], (1, 2))
        self.deprovision("ns-a-0", SMALL)
        self.assertEqual(self.provision("ns-a-2", SMALL, k8s("team-a")).status, 201)

    def test_deny_provision_by_namespace_and_org(self):
        before = sorted(self.stack.redis.keys("*"))
        self.assertForbidden(
            self.provision("deny-k8s", LARGE, k8s("dev")),
            "Policy \"no-large-in-dev\" does not allow provisioning the plan \"large\" of the "
            "service \"pol-db\" in the namespace \"dev\".")
        self.assertForbidden(
            self.provision("deny-cf", LARGE, cf("org-dev", "any")),
            "Policy \"no-large-in-dev\" does not allow provisioning the plan \"large\" of the "
            "service \"pol-db\" in the organization \"org-dev\".")
        # Before 2.12 platforms send the organization at the top level.
        old = self.stack.client(self.gateway, api_version="2.11")
        try:
            r = old.request("PUT", "/v2/service_instances/deny-old", {
                "service_id": DB, "plan_id": LARGE, "organization_guid": "org-dev",
                "space_guid": "s"})
            self.assertEqual(r.status, 403, r.body)
        finally:
            old.close()
        self.assertEqual(sorted(self.stack.redis.keys("*")), before)

    def test_plan_change_moves_the_count(self):
        self.assertEqual(self.provision("move-1", SMALL, k8s("mover")).status, 201)
        self.assertEqual(self.provision("move-2", SMALL, k8s("mover")).status, 201)
        self.assertEqual(self.counter("small-per-namespace", "mover"), 2)
        r = self.client.request("PATCH", "/v2/service_instances/move-1",
                                {"service_id": DB, "plan_id": LARGE})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(self.counter("large"), 1)
        self.assertEqual(self.counter("small-per-namespace", "mover"), 1)
        self.assertForbidden(
            self.client.request("PATCH", "/v2/service_instances/move-2",
                                {"service_id": DB, "plan_id": LARGE}),
            "Quota \"large\" exceeded: 1 of at most 1 instances exist.", 422)
        # Moving into dev's deny rule is refused like provisioning it (stored context).
        self.assertEqual(self.provision("move-dev", SMALL, k8s("dev")).status, 201)
        r = self.client.request("PATCH", "/v2/service_instances/move-dev",
                                {"service_id": DB, "plan_id": LARGE})
        self.assertEqual(r.status, 422, r.body)  # the spec's status for an update (0011)
        # An update that keeps the plan leaves the counters alone.
        r = self.client.request("PATCH", "/v2/service_instances/move-1",
                                {"service_id": DB, "parameters": {"x": 1}})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(self.counter("large"), 1)
        r = self.client.request("PATCH", "/v2/service_instances/move-1",
                                {"service_id": DB, "plan_id": SMALL})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(self.counter("large"), 0)
        self.assertEqual(self.counter("small-per-namespace", "mover"), 2)
        self.deprovision("move-1", SMALL)
        self.deprovision("move-2", SMALL)
        self.assertEqual(self.counter("small-per-namespace", "mover"), 0)
        self.assertIsNone(self.stack.redis.command("GET", "osbq:quota:small-per-namespace:mover"))

    def test_deny_bind_by_space(self):
        self.assertEqual(self.provision("cache-locked", TINY, cf("o", "space-locked")).status,
                         201)
        self.assertEqual(self.provision("cache-open", TINY, cf("o", "space-open")).status, 201)
        want = ("Policy \"cache-locked-space\" does not allow binding the plan \"tiny\" of the "
                "service \"pol-cache\" in the space \"space-locked\".")
        before = sorted(self.stack.redis.keys("*"))
        # The bind's own context decides...
        r = self.client.request("PUT", "/v2/service_instances/cache-open/service_bindings/b1",
                                {"service_id": CACHE, "plan_id": TINY,
                                 "context": cf("o", "space-locked")})
        self.assertForbidden(r, want)
        # ...and without one, the instance's.
        r = self.client.request("PUT", "/v2/service_instances/cache-locked/service_bindings/b2",
                                {"service_id": CACHE, "plan_id": TINY})
        self.assertForbidden(r, want)
        self.assertEqual(sorted(self.stack.redis.keys("*")), before)
        r = self.client.request("PUT", "/v2/service_instances/cache-open/service_bindings/b3",
                                {"service_id": CACHE, "plan_id": TINY})
        self.assertEqual(r.status, 201, r.body)
        # Counted per platform (docs/policies.md): the two instances above are "default"'s.
        self.assertEqual(self.counter("tiny-per-platform", "default"), 2)
        self.assertForbidden(
            self.provision("cache-third", TINY, cf("o", "space-open")),
            "Quota \"tiny-per-platform\" exceeded: the platform \"default\" has 2 of at most 2 "
            "instances.")


class PolicyStartup(unittest.TestCase):
    def test_bad_policy_stops_the_gateway(self):
        stack = harness.Stack(catalog=CATALOG)
        try:
            with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
                json.dump({"quotas": [{"name": "x", "plans": ["nope"], "max_instances": 1}]}, f)
                f.flush()
                status, out = harness.run_once([harness.GATEWAY],
                                               stack.env(OSBQ_POLICY=f.name,
                                                         OSBQ_LISTEN="127.0.0.1:%d"
                                                         % harness.free_port()))
            self.assertEqual(status, 1, out)
            self.assertIn("OSBQ_POLICY", out)
            self.assertIn("quotas[0].plans[0]: unknown plan id \"nope\"", out)
        finally:
            stack.stop()


if __name__ == "__main__":
    unittest.main()
