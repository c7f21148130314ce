"""osbq-ctl purge (issue 43, docs/decisions/0053): the broker forgets an instance (with its
bindings) or a binding without calling any backend; its quotas are given back and a platform's
later DELETE gets 410, its GET 404; refused while an operation of it runs, unless --force, which
fails that operation first. Real redis-server, a gateway, a worker running an exec program that
records every job it gets (so "no backend was called" is read from what it received)."""

import json
import os
import time
import unittest

import harness
from test_ctl import CtlTestCase

SERVICE = "9b2d4f60-1a3c-4e5f-8a7b-0c1d2e3f4a00"
PLAN = "9b2d4f60-1a3c-4e5f-8a7b-0c1d2e3f4a01"
EXEC_DIR = os.path.join(harness.SOURCE_DIR, "tests", "data", "exec")
NAMESPACE = "osbq"
QUOTA = "total"
OP_TIMEOUT_S = 15.0


class Purge(harness.GatewayStackTestCase, CtlTestCase):
    DIR_PREFIX = "osbq-purge-"

    @classmethod
    def make_stack(cls):
        catalog = {"services": [{
            "name": "osbq-purge-test", "id": SERVICE, "description": "purge", "bindable": True,
            "instances_retrievable": True, "bindings_retrievable": True,
            "plans": [{"id": PLAN, "name": "probe", "description": "records its jobs",
                       "osbq": {"backend": "exec",
                                "command": ["python3", os.path.join(EXEC_DIR, "halt_probe.py")],
                                "env": {"RECORD_DIR": cls.dir}}}]}]}
        path = cls.write_json("catalog.json", catalog)
        cls.policy = cls.write_json("policy.json",
                                    {"quotas": [{"name": QUOTA, "max_instances": 100}]})
        # A short lease: a step failed by --force stops at its next renewal, a third of it.
        return harness.Stack(catalog=path, extra_env={
            "OSBQ_RECOVERY_INTERVAL_MS": "200", "OSBQ_POLICY": cls.policy,
            "OSBQ_LEASE_MS": "3000"})

    def ctl_env(self, **overrides):
        return super().ctl_env(OSBQ_POLICY=self.policy, OSBQ_NAMESPACE=NAMESPACE, **overrides)

    # ---- platform calls ----

    def wait_last_operation(self, iid, operation):
        last = []

        def ended():
            r = self.request("GET", harness.instance_path(iid, "/last_operation",
                                                          operation=operation))
            last[:] = [r]
            return r.status != 200 or r.json()["state"] != "in progress"
        harness.wait_until(ended, OP_TIMEOUT_S, "operation %s to end" % operation)
        return last[0]

    def provision(self, mode):
        iid = harness.new_id()
        body = harness.provision_body(SERVICE, PLAN)
        body["parameters"] = {"mode": mode}
        r = self.request("PUT", harness.ipath(iid, incomplete=True), body)
        self.assertEqual(r.status, 202, r.body)
        return iid, r.json()["operation"]

    def provisioned(self):
        iid, operation = self.provision("done")
        r = self.wait_last_operation(iid, operation)
        self.assertEqual(r.json()["state"], "succeeded", r.body)
        return iid

    def bind(self, iid):
        return self.put_binding(iid, SERVICE, PLAN)

    def delete_instance(self, iid):
        return self.request("DELETE", harness.instance_path(
            iid, accepts_incomplete="true", service_id=SERVICE, plan_id=PLAN))

    def delete_binding(self, iid, bid):
        return self.request("DELETE", harness.instance_path(
            iid, "/service_bindings/" + bid, accepts_incomplete="true", service_id=SERVICE,
            plan_id=PLAN))

    # ---- what the backend got, and the quota ----

    def jobs(self, **match):
        try:
            with open(os.path.join(self.dir, "jobs.jsonl")) as f:
                lines = [json.loads(line) for line in f]
        except FileNotFoundError:
            return []
        return [j for j in lines if all(j.get(k) == v for k, v in match.items())]

    def quota_used(self):
        value = self.stack.redis.command("GET", "%s:quota:%s" % (NAMESPACE, QUOTA))
        return int(value or 0)

    def record(self, kind, *ids):
        return harness.redis_hash(self.stack.redis, ":".join((NAMESPACE, kind) + ids))

    # ---- tests ----

    def test_purge_instance_with_bindings(self):
        iid = self.provisioned()
        bids = [self.bind(iid), self.bind(iid)]
        used = self.quota_used()
        self.assertGreaterEqual(used, 1)
        # Destructive: refused without --yes, nothing changed.
        status, _, err = self.ctl("purge", "instance", iid)
        self.assertEqual(status, 2, err)
        self.assertIn("instance %s" % iid, err)
        self.assertEqual(self.record("instance", iid)["state"], "provisioned")

        out = self.ctl_json("purge", "instance", iid, "--yes")
        self.assertEqual((out["result"], out["kind"], out["id"], out["bindings"]),
                         ("purged", "instance", iid, 2), out)
        self.assertEqual(self.quota_used(), used - 1)
        inst = self.record("instance", iid)
        self.assertEqual(inst["state"], "gone")
        self.assertIn("purged_ms", inst)
        self.assertTrue(inst.get("purged_by"))
        self.assertNotIn("quota_keys", inst)
        self.assertGreater(self.stack.redis.command("TTL", "%s:instance:%s" % (NAMESPACE, iid)), 0)
        for bid in bids:
            binding = self.record("binding", iid, bid)
            self.assertEqual(binding["state"], "gone")
            self.assertNotIn("result", binding)
            self.assertEqual(self.request("GET", harness.instance_path(
                iid, "/service_bindings/" + bid)).status, 404)
        self.assertEqual(self.stack.redis.command("EXISTS", "%s:bindings:%s" % (NAMESPACE, iid)),
                         0)
        # The platform's later calls: 410 for its DELETE, 404 for its GET.
        self.assertEqual(self.delete_instance(iid).status, 410)
        self.assertEqual(self.request("GET", harness.instance_path(iid)).status, 404)
        # No backend call for any of it.
        self.assertEqual(self.jobs(kind="deprovision"), [])
        self.assertEqual([j for j in self.jobs(kind="unbind")], [])
        # Twice: nothing left to purge.
        status, _, err = self.ctl("purge", "instance", iid, "--yes")
        self.assertEqual(status, 3, err)
        self.assertIn("nothing to purge", err)

    def test_purge_a_binding_with_and_without_its_instance_named(self):
        iid = self.provisioned()
        first, second, kept = self.bind(iid), self.bind(iid), self.bind(iid)
        out = self.ctl_ok("purge", "binding", first, "--instance", iid, "--yes")
        self.assertIn("binding %s of instance %s purged" % (first, iid), out)
        # Found by walking the bindings when --instance is not given.
        out = self.ctl_json("purge", "binding", second, "--yes")
        self.assertEqual((out["result"], out["instance_id"]), ("purged", iid), out)
        for bid in (first, second):
            self.assertEqual(self.record("binding", iid, bid)["state"], "gone")
            self.assertEqual(self.delete_binding(iid, bid).status, 410)
        self.assertEqual(self.request("GET", harness.instance_path(
            iid, "/service_bindings/" + kept)).status, 200)
        self.assertEqual(self.record("instance", iid)["state"], "provisioned")
        self.assertEqual(self.stack.redis.command("SMEMBERS", "%s:bindings:%s" % (NAMESPACE, iid)),
                         ["%s:binding:%s:%s" % (NAMESPACE, iid, kept)])
        self.assertEqual(self.jobs(kind="unbind"), [])
        status, _, err = self.ctl("purge", "binding", harness.new_id(), "--yes")
        self.assertEqual(status, 3, err)

    def test_purge_refused_while_an_operation_runs_and_force_fails_it_first(self):
        iid, operation = self.provision("run")
        harness.wait_until(lambda: self.jobs(operation_id=operation), 10,
                           "the program to start")
        status, out, err = self.ctl("--json", "purge", "instance", iid, "--yes")
        self.assertEqual(status, 4, err)
        self.assertEqual((json.loads(out)["result"], json.loads(out)["operation_id"]),
                         ("refused", operation))
        self.assertEqual(self.record("instance", iid)["state"], "provisioning")

        out = self.ctl_json("purge", "instance", iid, "--force", "--yes")
        self.assertEqual((out["result"], out["failed_operations"]), ("purged", [operation]), out)
        op = self.record("op", operation)
        self.assertEqual(op["state"], "failed")
        self.assertIn("purged", op["description"])
        self.assertEqual(self.record("instance", iid)["state"], "gone")
        self.assertEqual(self.delete_instance(iid).status, 410)
        # The program is stopped (its step's lease is no longer its worker's), and no
        # deprovision is ever run.
        harness.wait_until(lambda: self.jobs(signal="TERM", operation_id=operation), 10,
                           "the program to be stopped")
        time.sleep(0.5)
        self.assertEqual(self.jobs(kind="deprovision"), [])


if __name__ == "__main__":
    unittest.main()
