"""The deletion guard of OSBQ_POLICY (issue 43, docs/policies.md, docs/decisions/0054): at most N
deprovisions and unbinds of usable records a minute per tenant (422 past it, naming the cap,
and counted), and an instance whose parameters or context set "osbq_deletion_protection": true
refused deletion until an update clears it; the delete of a failed provision (the platform's
orphan mitigation) is never refused. Real redis-server, a gateway and a worker, the sim
backend; every wait bounded."""

import time
import unittest

import harness

SERVICE = "3c5e7a90-2b4d-4f6a-8c1e-5d7f9b1a3c00"
PLAN = "3c5e7a90-2b4d-4f6a-8c1e-5d7f9b1a3c01"
CAP = 3


class DeletionGuard(harness.GatewayStackTestCase):
    DIR_PREFIX = "osbq-deletion-guard-"

    @classmethod
    def make_stack(cls):
        catalog = {"services": [{
            "name": "osbq-guard-test", "id": SERVICE, "description": "deletion guard",
            "bindable": True, "plan_updateable": True, "instances_retrievable": True,
            "bindings_retrievable": True,
            "plans": [{"id": PLAN, "name": "fast", "description": "fast",
                       "osbq": {"backend": "sim", "provision_ms": 0, "update_ms": 0,
                                "deprovision_ms": 0, "bind_ms": 0, "unbind_ms": 0}}]}]}
        path = cls.write_json("catalog.json", catalog)
        policy = cls.write_json("policy.json", {"deletes_per_minute_per_tenant": {"*": CAP}})
        return harness.Stack(catalog=path, extra_env={"OSBQ_POLICY": policy})

    def provision(self, org, parameters=None, context=None):
        iid = harness.new_id()
        body = harness.provision_body(SERVICE, PLAN, {"organization_guid": org})
        if parameters is not None:
            body["parameters"] = parameters
        if context is not None:
            body["context"].update(context)
        r = self.request("PUT", harness.ipath(iid), body)
        self.assertEqual(r.status, 201, r.body)
        return iid

    def delete(self, iid):
        return self.request("DELETE", harness.instance_path(iid, service_id=SERVICE, plan_id=PLAN))

    def bind(self, iid):
        return self.put_binding(iid, SERVICE, PLAN)

    def unbind(self, iid, bid):
        return self.request("DELETE", harness.instance_path(
            iid, "/service_bindings/" + bid, service_id=SERVICE, plan_id=PLAN))

    def refused(self, r, *words):
        self.assertEqual(r.status, 422, r.body)
        description = r.json()["description"]
        for word in words:
            self.assertIn(word, description)

    def metric(self, state, kind):
        scraper = harness.MetricsScraper(self.gateway.port)
        try:
            return harness.metric_sum(scraper.samples(), "osbq_gateway_operations_total",
                                      kind=kind, state=state)
        finally:
            scraper.close()

    @staticmethod
    def within_one_minute():
        """The cap counts per wall-clock minute: start well inside one, so that a test's deletes
        all fall in it (waits at most 20 s)."""
        if time.time() % 60 > 40:
            time.sleep(60.5 - time.time() % 60)

    def test_deletes_past_the_cap_are_refused_for_that_tenant_only(self):
        a = [self.provision("org-a") for _ in range(CAP + 1)]
        bid = self.bind(a[-1])
        b = self.provision("org-b")
        self.within_one_minute()
        for iid in a[:CAP]:
            self.assertEqual(self.delete(iid).status, 200)
        self.refused(self.delete(a[CAP]), "deletes_per_minute_per_tenant", str(CAP))
        # Unbinds count and are refused alike.
        self.refused(self.unbind(a[CAP], bid), "deletes_per_minute_per_tenant")
        # Nothing was recorded for the refused ones: the instance and binding still answer.
        self.assertEqual(self.request("GET", harness.instance_path(a[CAP])).status, 200)
        self.assertEqual(self.request("GET", harness.instance_path(
            a[CAP], "/service_bindings/" + bid)).status, 200)
        # Another tenant's deletes are its own.
        self.assertEqual(self.delete(b).status, 200)
        self.assertGreaterEqual(self.metric("delete_capped", "deprovision"), 1)
        self.assertGreaterEqual(self.metric("delete_capped", "unbind"), 1)
        # The orphan mitigation of a failed provision is never refused, cap reached or not.
        failed = harness.new_id()
        body = harness.provision_body(SERVICE, PLAN, {"organization_guid": "org-a",
                                                      "parameters": {"sim_fail": True}})
        self.assertEqual(self.request("PUT", harness.ipath(failed), body).status, 502)
        self.assertEqual(self.delete(failed).status, 200)

    def test_protected_instance_is_refused_deletion_until_an_update_clears_it(self):
        iid = self.provision("org-p", parameters={"osbq_deletion_protection": True, "size": 1})
        self.refused(self.delete(iid), "osbq_deletion_protection")
        self.assertGreaterEqual(self.metric("protected", "deprovision"), 1)
        # An update that does not send parameters keeps them, and the protection.
        r = self.request("PATCH", harness.instance_path(iid), {
            "service_id": SERVICE, "context": {"platform": "osbq-tests", "instance_name": "x"}})
        self.assertEqual(r.status, 200, r.body)
        self.refused(self.delete(iid), "osbq_deletion_protection")
        r = self.request("PATCH", harness.instance_path(iid), {
            "service_id": SERVICE, "parameters": {"osbq_deletion_protection": False, "size": 1}})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(self.delete(iid).status, 200)

    def test_protection_by_context_and_a_failed_provision_not_protected(self):
        iid = self.provision("org-q", context={"osbq_deletion_protection": True})
        self.refused(self.delete(iid), "protected")
        failed = harness.new_id()
        body = harness.provision_body(SERVICE, PLAN, {
            "organization_guid": "org-q",
            "parameters": {"sim_fail": True, "osbq_deletion_protection": True}})
        self.assertEqual(self.request("PUT", harness.ipath(failed), body).status, 502)
        self.assertEqual(self.delete(failed).status, 200)


if __name__ == "__main__":
    unittest.main()
