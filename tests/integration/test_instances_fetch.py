"""Reading a service instance: its last_operation and GET /v2/service_instances/:id, end to end
(harness_instances.py)."""

import time
import unittest

from harness_instances import (
    ASYNC_ONLY, DASHBOARD, FAST, HIDDEN, InstanceTestCase, MAINTAINED, OP_TIMEOUT_S,
    RETRY_AFTER_MAX_S, RETRY_AFTER_MIN_S, SERVICE, SLOW, SLOW_CHANGE, STATES, body_for, new_id)


class LastOperation(InstanceTestCase):
    """0003, last_operation."""

    def test_last_operation_404_unknown_instance(self):
        """Polling Last Operation, 404: MUST be returned if the instance being polled does not
        exist."""
        iid = new_id()
        for gw in (0, 1):
            self.assertError(self.last_operation(iid, gw=gw), 404)
            self.assertError(self.last_operation(iid, "0" * 32, gw=gw), 404)

    def test_last_operation_410_after_async_deprovision_finished(self):
        """Polling Last Operation, 410 Gone: appropriate for asynchronous delete operations,
        the platform considers it a success."""
        iid, op = self.provision_async(FAST)
        self.wait_state(iid, "succeeded", op)
        dop = self.assertAccepted(self.delete(iid, FAST, True))
        self.wait_gone(iid, dop)
        for gw in (0, 1):
            self.assertError(self.last_operation(iid, dop, gw), 410)
            self.assertError(self.last_operation(iid, gw=gw), 410)

    def test_last_operation_400_operation_of_another_instance(self):
        """Polling Last Operation, operation: a broker-provided identifier of this instance's
        operation; 0003: 400 when it names no operation of this instance."""
        a, op_a = self.provision_async(FAST)
        b, op_b = self.provision_async(FAST)
        self.wait_state(a, "succeeded", op_a)
        self.wait_state(b, "succeeded", op_b)
        self.assertError(self.last_operation(a, op_b), 400)
        self.assertError(self.last_operation(b, op_a, gw=1), 400)
        body = self.assertError(self.last_operation(a, "not-an-operation"), 400)
        # The description says what the broker expects (issue 22): this instance's last
        # operation, never another instance's.
        self.assertIn('"operation" value of the broker\'s 202 Accepted answer',
                      body["description"])
        self.assertIn('its last operation is "%s"' % op_a, body["description"])
        self.assertNotIn(op_b, body["description"])
        body = self.assertError(self.last_operation(a, op_b), 400)
        self.assertIn('its last operation is "%s"' % op_a, body["description"])
        self.assertNotIn(op_b, body["description"].replace('"%s" is not' % op_b, ""))
        self.assertEqual(self.last_operation(a, op_a).status, 200)

    def test_last_operation_operation_names_an_older_operation_of_the_instance(self):
        """Polling Last Operation: operation selects the operation; without it the last one is
        reported (Service Brokers SHOULD NOT forget an operation's state)."""
        iid, op = self.provision_async(FAST)
        self.wait_state(iid, "succeeded", op)
        uop = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                   "parameters": {"sim_fail": True}}, True))
        self.wait_state(iid, "failed", uop)
        self.assertEqual(self.last_operation(iid).json()["state"], "failed")
        self.assertEqual(self.last_operation(iid, op, gw=1).json()["state"], "succeeded")

    def test_last_operation_state_in_progress_succeeded_or_failed(self):
        """Polling Last Operation, Body: state* is one of "in progress", "succeeded", "failed"
        (checked on every answer); description, if present, a non-empty string."""
        iid, op = self.provision_async(SLOW)
        seen = []
        deadline = time.monotonic() + OP_TIMEOUT_S
        while time.monotonic() < deadline:
            state = self.last_operation(iid, op).json()["state"]
            seen.append(state)
            if state != "in progress":
                break
            time.sleep(0.05)
        self.assertEqual(seen[0], "in progress")
        self.assertEqual(seen[-1], "succeeded")
        self.assertTrue(set(seen) <= set(STATES), seen)
        fid, fop = self.provision_async(FAST, parameters={"sim_fail": True})
        self.assertEqual(self.wait_state(fid, "failed", fop)["state"], "failed")

    def test_last_operation_retry_after_integer_seconds_2_15_plus(self):
        """Polling Last Operation: the response MAY include Retry-After, RECOMMENDED a
        duration; 0003: integer seconds, 2.15+, while in progress, within
        OSBQ_RETRY_AFTER_MIN_S..MAX_S."""
        iid, op = self.provision_async(SLOW)
        for version in ("2.15", "2.16", "2.17"):
            r = self.last_operation(iid, op, version=version)
            self.assertEqual(r.json()["state"], "in progress")
            value = r.header("Retry-After")
            self.assertIsNotNone(value, "no Retry-After for " + version)
            self.assertRegex(value, r"^[0-9]+$")
            self.assertGreaterEqual(int(value), RETRY_AFTER_MIN_S)
            self.assertLessEqual(int(value), RETRY_AFTER_MAX_S)
        for version in ("2.14", "2.13", "2.7"):
            r = self.last_operation(iid, op, version=version)
            self.assertEqual(r.json()["state"], "in progress")
            self.assertIsNone(r.header("Retry-After"), "Retry-After for " + version)
        self.wait_state(iid, "succeeded", op)
        self.assertIsNone(self.last_operation(iid, op).header("Retry-After"))

    def test_last_operation_retry_after_follows_the_plan_average(self):
        """0003: Retry-After is the plan's average duration for that kind minus the time
        spent: for a 1.5 s plan just accepted, at most 2 s (not the 7 s maximum)."""
        iid, op = self.provision_async(SLOW)
        self.wait_state(iid, "succeeded", op)
        iid, op = self.provision_async(SLOW)
        r = self.last_operation(iid, op)
        self.assertEqual(r.json()["state"], "in progress")
        self.assertIn(r.header("Retry-After"), ("1", "2"))
        self.wait_state(iid, "succeeded", op)

    def test_last_operation_failed_update_instance_usable_update_repeatable_2_16_plus(self):
        """Polling Last Operation, Body: instance_usable and update_repeatable for a failed
        update; 0003: 2.16+, left out for 2.15 and older."""
        iid = self.provisioned(FAST)
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"sim_fail": True}}, True))
        self.wait_state(iid, "failed", op)
        for version in ("2.16", "2.17"):
            body = self.last_operation(iid, op, version=version).json()
            self.assertEqual(body["state"], "failed")
            self.assertIs(body.get("instance_usable"), True, body)
            self.assertIs(body.get("update_repeatable"), False, body)
        for version in ("2.15", "2.14"):
            body = self.last_operation(iid, op, version=version).json()
            self.assertEqual(body["state"], "failed")
            self.assertNotIn("instance_usable", body)
            self.assertNotIn("update_repeatable", body)

    def test_last_operation_failed_provision_has_no_instance_usable(self):
        """Polling Last Operation, Body: instance_usable and update_repeatable MUST NOT be
        present for other operations (a provision)."""
        iid, op = self.provision_async(FAST, parameters={"sim_fail": True})
        self.wait_state(iid, "failed", op)
        for version in ("2.16", "2.17"):
            body = self.last_operation(iid, op, version=version).json()
            self.assertNotIn("instance_usable", body)
            self.assertNotIn("update_repeatable", body)


# =====================================================================================
class Fetching(InstanceTestCase):
    """0003, Fetch."""

    def test_fetch_404_unknown_instance(self):
        """Fetching a Service Instance, 404: MUST be returned if the instance does not
        exist."""
        for gw in (0, 1):
            self.assertError(self.fetch(new_id(), gw), 404)

    def test_fetch_404_while_provisioning(self):
        """Fetching a Service Instance, 404: MUST be returned if a provisioning operation is
        still in progress."""
        iid, op = self.provision_async(SLOW)
        self.assertError(self.fetch(iid), 404)
        self.assertError(self.fetch(iid, 1), 404)
        self.wait_state(iid, "succeeded", op)

    def test_fetch_404_after_failed_provision(self):
        """Fetching a Service Instance, 404 (0003: its provision failed)."""
        iid, op = self.provision_async(FAST, parameters={"sim_fail": True})
        self.wait_state(iid, "failed", op)
        self.assertError(self.fetch(iid), 404)

    def test_fetch_404_after_deprovision(self):
        """Fetching a Service Instance, 404 (0003: it is deprovisioned)."""
        iid = self.provisioned(FAST)
        self.assertEqual(self.delete(iid, FAST).status, 200)
        self.assertError(self.fetch(iid), 404)

    def test_fetch_422_concurrency_error_while_updating(self):
        """Fetching a Service Instance, 422: MUST be returned if the instance is being updated,
        with error ConcurrencyError."""
        iid, op = self.provision_async(SLOW, parameters={"v": 1})
        self.wait_state(iid, "succeeded", op)
        uop = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                   "parameters": {"v": 2}}, True))
        for gw in (0, 1):
            self.assertError(self.fetch(iid, gw), 422, "ConcurrencyError")
        self.wait_state(iid, "succeeded", uop)
        self.assertEqual(self.fetch(iid).json()["parameters"], {"v": 2})

    def test_fetch_422_concurrency_error_while_deprovisioning(self):
        """0003 Fetch: 422 ConcurrencyError while a deprovision runs."""
        iid = self.provisioned(SLOW_CHANGE)
        op = self.assertAccepted(self.delete(iid, SLOW_CHANGE, True))
        self.assertError(self.fetch(iid), 422, "ConcurrencyError")
        self.wait_gone(iid, op)
        self.assertError(self.fetch(iid), 404)

    def test_fetch_400_service_without_instances_retrievable(self):
        """Fetching a Service Instance: only for offerings with instances_retrievable true;
        0003: 400 otherwise."""
        iid = self.provisioned(HIDDEN)
        self.assertError(self.fetch(iid), 400)

    def test_fetch_200_service_id_plan_id_parameters(self):
        """Fetching a Service Instance, Body: service_id, plan_id, dashboard_url, parameters."""
        iid = self.provisioned(DASHBOARD, parameters={"size": 4, "tier": {"x": "y"}})
        url = self.put(iid, body_for(DASHBOARD, parameters={"size": 4, "tier": {"x": "y"}}))
        url = url.json()["dashboard_url"]
        for gw in (0, 1):
            r = self.fetch(iid, gw)
            self.assertEqual(r.status, 200, r.body)
            body = r.json()
            self.assertEqual(body["service_id"], SERVICE)
            self.assertEqual(body["plan_id"], DASHBOARD)
            self.assertEqual(body["parameters"], {"size": 4, "tier": {"x": "y"}})
            self.assertEqual(body.get("dashboard_url"), url)

    def test_fetch_available_immediately_after_last_operation_succeeded(self):
        """Fetching a Service Instance: the endpoint MUST be available immediately after
        last_operation returns "succeeded" for a provision."""
        for plan in (SLOW, ASYNC_ONLY):
            iid, op = self.provision_async(plan, parameters={"p": plan})
            self.wait_state(iid, "succeeded", op, gw=1)
            r = self.fetch(iid)
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json()["parameters"], {"p": plan})

    def test_fetch_maintenance_info_2_15_plus(self):
        """Fetching a Service Instance, Body: maintenance_info; 0003: 2.15+ only."""
        iid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        for version in ("2.15", "2.16", "2.17"):
            body = self.fetch(iid, version=version).json()
            self.assertEqual(body.get("maintenance_info", {}).get("version"), "1.2.0", body)
        body = self.fetch(iid, version="2.14").json()
        self.assertNotIn("maintenance_info", body)
        self.assertEqual(body["plan_id"], MAINTAINED)

    def test_fetch_404_for_api_2_13(self):
        """0003 Versions: fetch is 2.14+; older platforms get 404 (the endpoint is not theirs).
        """
        iid = self.provisioned(FAST)
        for version in ("2.13", "2.12", "2.0"):
            self.assertError(self.fetch(iid, version=version), 404)
        self.assertEqual(self.fetch(iid, version="2.14").status, 200)

    def test_fetch_metadata_only_2_16_plus(self):
        """0003 Versions: metadata is 2.16+; a 2.15 body carries none."""
        iid = self.provisioned(DASHBOARD)
        self.assertNotIn("metadata", self.fetch(iid, version="2.15").json())
        body = self.fetch(iid, version="2.16").json()
        if "metadata" in body:
            self.assertIsInstance(body["metadata"], dict)
            self.assertNotIn("attributes", body["metadata"])


if __name__ == "__main__":
    unittest.main()
