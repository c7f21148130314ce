"""The live records' count (issue 43, docs/decisions/0056): the scripts that write instances and
bindings keep "<ns>:record_counts" by kind, state, plan and maintenance version, so that
osbq-ctl stats and the gateways' osbq_instances, osbq_instances_outdated and osbq_bindings
gauges read one small hash instead of walking every record. Checked against a walk of every
record (osbq-ctl stats --walk) after a lifecycle (provisions, a plan change, binds, an unbind, a
deprovision with a binding left, a purge, a failed provision, an import), after records an older
release wrote (no count: the gateways' walk builds it, beside provisions and deprovisions that
run while it walks), and after osbq-ctl recount (which walks itself). Real redis-server, gateways, worker (sim)."""

import json
import os
import shutil
import tempfile

import harness
from test_ctl import CtlTestCase

BASE_CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-bindings.json")
SERVICE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"
FAST = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"  # maintenance_info 1.2.0 in the test's catalog
SLOW = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f02"  # binds and unbinds take 1.5 s; no version
NAMESPACE = "counts"
ENV = {"OSBQ_NAMESPACE": NAMESPACE, "OSBQ_COUNTS_REFRESH_S": "1",
       "OSBQ_RECOVERY_INTERVAL_MS": "200"}
TIMEOUT_S = 15.0


def catalog_with_version(path, version):
    """catalog-bindings.json with FAST at maintenance_info version, written to path."""
    with open(BASE_CATALOG) as f:
        doc = json.load(f)
    for service in doc["services"]:
        for plan in service["plans"]:
            if plan["id"] == FAST:
                plan["maintenance_info"] = {"version": version, "description": "v" + version}
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


class RecordCounts(CtlTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="osbq-counts-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.catalog = catalog_with_version(os.path.join(self.dir, "catalog.json"), "1.2.0")
        self.moved_on = catalog_with_version(os.path.join(self.dir, "moved-on.json"), "2.0.0")
        self.stack = harness.Stack(catalog=self.catalog, extra_env=ENV)
        self.addCleanup(self.stack.stop)
        self.gateway, _ = harness.start_connected(self.stack, 1)

    def ctl_env(self, **overrides):
        return super().ctl_env(**dict({"OSBQ_NAMESPACE": NAMESPACE,
                                       "OSBQ_CATALOG": self.catalog}, **overrides))

    def request(self, method, path, body=None, gateway=None):
        return harness.request_once(self.stack, gateway or self.gateway, method, path, body)

    def provision(self, plan=FAST, version=None, expect=201, parameters=None):
        iid = harness.new_id()
        body = harness.provision_body(SERVICE, plan)
        if version:
            body["maintenance_info"] = {"version": version}
        if parameters:
            body["parameters"] = parameters
        r = self.request("PUT", harness.instance_path(iid), body)
        if expect is not None:
            self.assertEqual(r.status, expect, r.body)
        return iid

    def bind(self, iid, plan=FAST):
        bid = harness.new_id()
        r = self.request("PUT", harness.instance_path(iid, "/service_bindings/" + bid),
                         {"service_id": SERVICE, "plan_id": plan})
        self.assertEqual(r.status, 201, r.body)
        return bid

    def delete(self, iid, plan=FAST, bid=None):
        suffix = "/service_bindings/" + bid if bid else ""
        r = self.request("DELETE", harness.instance_path(iid, suffix, service_id=SERVICE,
                                                         plan_id=plan))
        self.assertEqual(r.status, 200, r.body)

    def ctl_json(self, *args, **env):
        status, out, err = self.ctl("--json", *args, env=self.ctl_env(**env) if env else None)
        self.assertEqual(status, 0, err)
        return json.loads(out)

    def samples(self, gateway=None):
        scraper = harness.MetricsScraper((gateway or self.gateway).port)
        try:
            return scraper.samples()
        finally:
            scraper.close()

    def wait_built(self, gateway=None, **env):
        """Until stats reads the count, and the gateway's gauges say it is built."""
        harness.wait_until(lambda: self.ctl_json("stats", **env)["records_from"] == "count",
                           TIMEOUT_S, "the count of live records built")
        harness.wait_until(
            lambda: harness.metric_value(self.samples(gateway), "osbq_record_counts_built") == 1,
            TIMEOUT_S, "osbq_record_counts_built")

    def assertCountIsTheWalk(self, **env):
        """stats from the count equals stats by a walk, gone records left out of the walk's."""
        counted = self.ctl_json("stats", **env)
        walked = self.ctl_json("stats", "--walk", **env)
        self.assertEqual((counted["records_from"], walked["records_from"]), ("count", "walk"))
        for kind in ("instances", "bindings"):
            by_state = dict(walked[kind]["by_state"])
            gone = by_state.pop("gone", 0)
            self.assertEqual(counted[kind]["by_state"], by_state, kind)
            self.assertEqual(counted[kind]["total"], walked[kind]["total"] - gone, kind)
        self.assertEqual(counted["instances"].get("outdated"), walked["instances"].get("outdated"))
        return counted

    def gauge(self, samples, name, plan, state=None):
        labels = {"service": SERVICE, "plan": plan}
        if state:
            labels["state"] = state
        return harness.metric_value(samples, name, **labels)

    def test_count_follows_a_lifecycle(self):
        self.wait_built()
        current = [self.provision(FAST, "1.2.0") for _ in range(3)]
        unversioned = self.provision(FAST)
        plain = [self.provision(SLOW) for _ in range(2)]
        bound = self.bind(plain[0], SLOW)
        kept = self.bind(current[0])
        self.bind(current[1])
        self.delete(current[1])  # with its binding: both gone
        self.delete(current[0], bid=kept)
        purged = self.provision(FAST, "1.2.0")
        self.assertIn("purged", self.ctl_ok("purge", "instance", purged, "--yes"))
        # A plan change moves an instance from one plan's line to the other's.
        r = self.request("PATCH", harness.instance_path(current[2]),
                         {"service_id": SERVICE, "plan_id": SLOW})
        self.assertEqual(r.status, 200, r.body)
        # A failed provision and a failed bind are live records (failed) until deleted.
        self.provision(SLOW, expect=None, parameters={"sim_fail": True})
        r = self.request("PUT", harness.instance_path(plain[1], "/service_bindings/x1"),
                         {"service_id": SERVICE, "plan_id": SLOW,
                          "parameters": {"sim_fail": True}})
        self.assertNotIn(r.status, (200, 201), r.body)

        # FAST: current[0], unversioned; SLOW: plain[0], plain[1], current[2] and the failed.
        stats = self.assertCountIsTheWalk()
        self.assertEqual(stats["instances"]["by_state"], {"provisioned": 5, "failed": 1})
        self.assertEqual(stats["bindings"]["by_state"], {"bound": 1, "failed": 1})
        self.assertEqual(stats["instances"]["outdated"], 1)  # the one made without a version
        expected = {("osbq_instances", FAST, "provisioned"): 2,
                    ("osbq_instances", SLOW, "provisioned"): 3,
                    ("osbq_instances", SLOW, "failed"): 1,
                    ("osbq_bindings", SLOW, "bound"): 1,
                    ("osbq_bindings", SLOW, "failed"): 1,
                    ("osbq_bindings", FAST, "bound"): 0,
                    ("osbq_instances_outdated", FAST, None): 1}

        def gauges():
            samples = self.samples()
            return samples, {k: self.gauge(samples, *k) for k in expected}
        # Read anew every OSBQ_COUNTS_REFRESH_S (1 s here).
        harness.wait_until(lambda: gauges()[1] == expected, TIMEOUT_S,
                           "the gauges read anew: %r" % (expected,))
        samples = gauges()[0]
        # A plan without maintenance_info has no outdated series.
        self.assertNotIn(("osbq_instances_outdated",
                          frozenset({("service", SERVICE), ("plan", SLOW)})), samples)
        self.assertNotIn(bound, json.dumps(stats))

        # A gateway serving a catalog whose plan moved on counts the instance at 1.2.0 too.
        moved = self.stack.start_gateway(OSBQ_CATALOG=self.moved_on)
        harness.wait_until(
            lambda: self.gauge(self.samples(moved), "osbq_instances_outdated", FAST) == 2,
            TIMEOUT_S, "the moved-on gateway's outdated gauge")
        self.assertEqual(self.gauge(self.samples(), "osbq_instances_outdated", FAST), 1)
        self.assertEqual(self.assertCountIsTheWalk(OSBQ_CATALOG=self.moved_on)
                         ["instances"]["outdated"], 2)

    def test_walk_builds_the_count_of_an_older_release(self):
        """Records an older release wrote carry no 'counted' and no count exists: the gateways'
        walk (1,000 keys a step) counts them, while a provision and a deprovision running
        beside it are counted once; osbq-ctl recount drops the count and it is built again."""
        self.wait_built()
        made = [self.provision(FAST, "1.2.0") for _ in range(3)]
        # 3,000 instances as a release without the count wrote them, in one script call.
        self.stack.redis.command(
            "EVAL", "for i = 1, tonumber(ARGV[1]) do "
            "redis.call('HSET', KEYS[1] .. i, 'instance_id', 'old-' .. i, 'state', "
            "i % 3 == 0 and 'failed' or 'provisioned', 'plan_id', ARGV[2], "
            "'service_id', ARGV[3], 'maintenance_version', i % 2 == 0 and '1.2.0' or '1.0.0') "
            "end", "1", "%s:instance:old-" % NAMESPACE, "3000", FAST, SERVICE)
        for iid in made:
            self.stack.redis.command("HDEL", "%s:instance:%s" % (NAMESPACE, iid), "counted")
        self.stack.redis.command("DEL", "%s:record_counts" % NAMESPACE)
        status, _, err = self.ctl("recount")
        self.assertEqual(status, 2, err)  # destructive: --yes
        # While the walk goes (3 steps of 100 ms at least), a provision and a deprovision.
        harness.wait_until(
            lambda: self.stack.redis.command("HGET", "%s:record_counts" % NAMESPACE, "walk"),
            TIMEOUT_S, "the walk begun")
        during = self.provision(FAST, "1.2.0")
        self.delete(made[0])
        self.wait_built()
        stats = self.assertCountIsTheWalk()
        self.assertEqual(stats["instances"]["by_state"], {"provisioned": 2000 + 3, "failed": 1000})
        self.assertEqual(stats["instances"]["outdated"], 1500)
        self.assertIn("the count of live records is built", self.gateway.log())
        self.assertNotIn(during, json.dumps(stats))

        # recount: dropped and counted again by its own walk (the gateway may share it), the
        # same figures at once.
        self.assertIn("counted the live records again", self.ctl_ok("recount", "--yes"))
        self.assertEqual(self.assertCountIsTheWalk()["instances"], stats["instances"])
        answer = self.ctl_json("recount", "--yes")
        self.assertEqual(answer["built"], True)
        self.assertLessEqual(answer["counted"], 3000 + 3)
        self.assertEqual(self.assertCountIsTheWalk()["instances"], stats["instances"])
        # The count's own field is neither shown nor exported.
        shown = self.ctl_json("instance", made[1])
        self.assertNotIn("counted", json.dumps(shown))
        self.assertNotIn('"counted"', self.ctl_ok("export"))

    def test_import_is_counted(self):
        """An import into a namespace whose gateway keeps a count adds its instances and
        bindings there."""
        iid = self.provision(FAST, "1.2.0")
        self.bind(iid)
        path = os.path.join(self.dir, "export.jsonl")
        self.ctl_ok("export", "--output", path)
        target = "counts-target"
        other = self.stack.start_gateway(OSBQ_NAMESPACE=target)
        self.wait_built(other, OSBQ_NAMESPACE=target)
        status, out, err = self.ctl("import", path, "--yes",
                                    env=self.ctl_env(OSBQ_NAMESPACE=target))
        self.assertEqual(status, 0, out + err)
        counted = self.ctl_json("stats", OSBQ_NAMESPACE=target)
        self.assertEqual((counted["records_from"], counted["instances"]["by_state"],
                          counted["bindings"]["by_state"]),
                         ("count", {"provisioned": 1}, {"bound": 1}))
        self.assertCountIsTheWalk(OSBQ_NAMESPACE=target)
