"""Updating a service instance (PATCH /v2/service_instances/:id) end to end
(harness_instances.py)."""

import json
import os
import subprocess
import time
import unittest

import harness
from harness_instances import (
    ASYNC_ONLY, FAST, FAST_OTHER, FIXED, InstanceTestCase, MAINTAINED, NAMESPACE, SERVICE, SLOW,
    SLOW_CHANGE, SYNC_TIMEOUT, TEMPLATED, body_for, new_id)


class Updating(InstanceTestCase):
    """0003, Update."""

    def assertPlanAndParameters(self, iid, plan_id, parameters):
        """The instance's plan and parameters as a GET answers them."""
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["plan_id"], fetched["parameters"]), (plan_id, parameters))

    def test_update_404_unknown_instance(self):
        """0003 Update: 404 for an unknown instance, or one not provisioned (its provision
        failed, or it was deprovisioned)."""
        self.assertError(self.patch(new_id(), {"service_id": SERVICE}, True), 404)
        self.assertError(self.patch(new_id(), {"service_id": SERVICE}), 404)
        failed = new_id()
        self.assertError(self.put(failed, body_for(FAST, parameters={"sim_fail": True})), 502)
        self.assertError(self.patch(failed, {"service_id": SERVICE}, True), 404)
        gone = self.provisioned(FAST)
        self.assertEqual(self.delete(gone, FAST).status, 200)
        self.assertError(self.patch(gone, {"service_id": SERVICE}, True), 404)

    def test_update_422_plan_change_not_plan_updateable(self):
        """Updating a Service Instance: plan changes need plan_updateable; 422 MUST be returned
        if the requested change is not supported (0003: no error code). Parameters may still
        change."""
        iid = self.provisioned(FIXED, parameters={"v": 1})
        for incomplete in (None, True):
            r = self.patch(iid, {"service_id": SERVICE, "plan_id": FAST}, incomplete)
            body = self.assertError(r, 422)
            self.assertNotIn("error", body)
        self.assertEqual(self.fetch(iid).json()["plan_id"], FIXED)
        r = self.patch(iid, {"service_id": SERVICE, "plan_id": FIXED, "parameters": {"v": 2}})
        self.assertEqual(r.status, 200, r.body)
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 3}})
        self.assertEqual(r.status, 200, r.body)
        self.assertPlanAndParameters(iid, FIXED, {"v": 3})

    def test_update_422_maintenance_info_conflict(self):
        """Updating a Service Instance, 422: MUST be returned with MaintenanceInfoConflict if
        maintenance_info.version does not match the plan's in the catalog."""
        iid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        for body in ({"service_id": SERVICE, "maintenance_info": {"version": "1.1.0"}},
                     {"service_id": SERVICE, "plan_id": FAST,
                      "maintenance_info": {"version": "1.2.0"}}):
            for incomplete in (None, True):
                self.assertError(self.patch(iid, body, incomplete), 422,
                                 "MaintenanceInfoConflict")
        self.assertEqual(self.fetch(iid).json()["plan_id"], MAINTAINED)
        r = self.patch(iid, {"service_id": SERVICE, "maintenance_info": {"version": "1.2.0"}})
        self.assertEqual(r.status, 200, r.body)

    def test_update_maintenance_info_empty_or_before_2_15_is_absent(self):
        """Updating a Service Instance, Body: maintenance_info {} (a generated client's unset
        field) is absent, and a request below 2.15 (which added it) has none (issue 22)."""
        iid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        r = self.patch(iid, {"service_id": SERVICE, "maintenance_info": {}})
        self.assertEqual(r.status, 200, r.body)
        r = self.patch(iid, {"service_id": SERVICE, "maintenance_info": {"version": "0.1.0"}},
                       version="2.14")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(self.fetch(iid).json()["maintenance_info"], {"version": "1.2.0"})

    def test_update_422_async_required(self):
        """Updating a Service Instance, 422: MUST be returned with AsyncRequired if the plan
        supports only asynchronous updates and accepts_incomplete=true is missing (0003: the
        target plan's async_required)."""
        iid = self.provisioned(FAST)
        for incomplete in (None, False):
            self.assertError(self.patch(iid, {"service_id": SERVICE, "plan_id": ASYNC_ONLY},
                                        incomplete), 422, "AsyncRequired")
        self.assertEqual(self.fetch(iid).json()["plan_id"], FAST)
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE, "plan_id": ASYNC_ONLY},
                                            True))
        self.wait_state(iid, "succeeded", op)
        self.assertEqual(self.fetch(iid).json()["plan_id"], ASYNC_ONLY)

    def test_update_422_concurrency_error_while_another_operation_holds_instance(self):
        """Blocking Operations: 422 ConcurrencyError for a request the broker cannot process
        due to a concurrency issue (0003: another operation holds the instance)."""
        iid = self.provisioned(SLOW_CHANGE, parameters={"v": 1})
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"v": 2}}, True))
        for gw in (0, 1):
            for incomplete in (None, True):
                self.assertError(self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 3}},
                                            incomplete, gw), 422, "ConcurrencyError")
        self.assertError(self.patch(iid, {"service_id": SERVICE, "plan_id": FAST}, True), 422,
                         "ConcurrencyError")
        self.wait_state(iid, "succeeded", op)
        self.assertEqual(self.fetch(iid).json()["parameters"], {"v": 2})

    def test_update_422_concurrency_error_while_provisioning(self):
        """Blocking Operations: the provision still running holds the instance; an update is a
        concurrent mutation -> 422 ConcurrencyError."""
        iid, op = self.provision_async(SLOW)
        self.assertError(self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 1}}, True),
                         422, "ConcurrencyError")
        self.wait_state(iid, "succeeded", op)

    def test_update_identical_in_progress_202_same_operation(self):
        """Updating a Service Instance, 202: the operation string MUST match that returned for
        the original request; a re-sent PATCH MUST return 202, not 200, until it completed."""
        iid = self.provisioned(SLOW_CHANGE, parameters={"v": 1})
        body = {"service_id": SERVICE, "parameters": {"v": 2}}
        op = self.assertAccepted(self.patch(iid, body, True))
        for gw in (1, 0):
            self.assertEqual(self.assertAccepted(self.patch(iid, body, True, gw)), op)
        self.wait_state(iid, "succeeded", op)

    def test_update_sync_200_empty_object(self):
        """Updating a Service Instance, 200: MUST be returned if the changes have been applied;
        the expected body is {} (0003: plus dashboard_url/metadata when the backend gives
        them, which sim does not on update)."""
        iid = self.provisioned(FAST, parameters={"v": 1})
        r = self.patch(iid, {"service_id": SERVICE, "plan_id": FAST_OTHER,
                             "parameters": {"v": 2}}, gw=1)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})
        self.assertPlanAndParameters(iid, FAST_OTHER, {"v": 2})

    def test_update_async_202_operation_applied_on_success(self):
        """Updating a Service Instance, 202 with operation; 0003: parameters and plan change
        are applied only when the update succeeds."""
        # The job runs with the target plan's settings: SLOW updates in 1.5 s.
        iid = self.provisioned(SLOW_CHANGE, parameters={"v": 1})
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE, "plan_id": SLOW,
                                                  "parameters": {"v": 2}}, True))
        self.assertEqual(self.last_operation(iid, op).json()["state"], "in progress")
        record = harness.redis_hash(self.stack.redis, NAMESPACE + ":instance:" + iid)
        self.assertEqual((record.get("plan_id"), json.loads(record.get("parameters", "null"))),
                         (SLOW_CHANGE, {"v": 1}), "applied before the update succeeded")
        self.wait_state(iid, "succeeded", op)
        self.assertPlanAndParameters(iid, SLOW, {"v": 2})

    def test_update_failed_applies_nothing(self):
        """Updating a Service Instance: when the update fails (4xx/5xx or state failed) the
        broker MUST NOT apply the requested changes."""
        iid = self.provisioned(FAST, parameters={"v": 1})
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE, "plan_id": FAST_OTHER,
                                                  "parameters": {"sim_fail": True}}, True))
        self.wait_state(iid, "failed", op)
        self.assertPlanAndParameters(iid, FAST, {"v": 1})
        # The instance is still usable: another update works.
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 5}})
        self.assertEqual(r.status, 200, r.body)

    def test_update_sync_backend_failure_502(self):
        """0003 (sync and the worker fails -> 502 with the backend's description); Service
        Broker Errors: instance_usable and update_repeatable for a failed update, 2.16+."""
        iid = self.provisioned(FAST, parameters={"v": 1})
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"sim_fail": True}},
                       version="2.16")
        body = self.assertError(r, 502)
        self.assertIn("sim_fail", body["description"])
        self.assertIs(body.get("instance_usable"), True, r.body)
        self.assertIs(body.get("update_repeatable"), False, r.body)
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"sim_fail": True}},
                       version="2.15")
        body = self.assertError(r, 502)
        self.assertNotIn("instance_usable", body)
        self.assertNotIn("update_repeatable", body)
        self.assertEqual(self.fetch(iid).json()["parameters"], {"v": 1})


class NoChangeAndLimits(InstanceTestCase):
    """Updates as platforms' clients send them (issue 41): nulls, updates that change nothing,
    the synchronous limit, the dashboard of an asynchronous update."""

    def ctl_operations(self, iid):
        """The kinds of the instance's operations as `osbq-ctl --json instance` shows them."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OSBQ_")}
        env.update(OSBQ_REDIS_URL=self.stack.redis.url, OSBQ_NAMESPACE=NAMESPACE)
        out = subprocess.run([os.path.join(harness.BUILD_DIR, "bin", "osbq-ctl"), "--json",
                              "instance", iid], env=env, stdout=subprocess.PIPE, check=True,
                             stdin=subprocess.DEVNULL, timeout=60).stdout
        return sorted(o.get("kind") for o in json.loads(out)["operations"])

    def test_update_null_members_are_absent(self):
        """docs/conformance.md: a JSON null in an optional member is absent (Korifi sends
        "parameters": null, and null context, maintenance_info and previous_values, whenever
        the user gave none): nothing to change, 200; with a change beside them it runs."""
        iid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"},
                               parameters={"v": 1})
        nulls = {"service_id": SERVICE, "parameters": None, "context": None,
                 "maintenance_info": None, "previous_values": None, "plan_id": None}
        for incomplete in (None, True):
            r = self.patch(iid, nulls, incomplete)
            self.assertEqual((r.status, r.json()), (200, {}), r.body)
        changed = dict(nulls, parameters={"v": 2})
        r = self.patch(iid, changed)
        self.assertEqual(r.status, 200, r.body)
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["parameters"], fetched["maintenance_info"]),
                         ({"v": 2}, {"version": "1.2.0"}))

    def test_update_that_changes_nothing_200_without_an_operation(self):
        """Updating a Service Instance, 200: "MUST be returned if the request's changes have
        been applied or have had no effect": a PATCH that names no other plan, the parameters
        and maintenance version in force and (service without allow_context_updates) any
        context is answered 200 at once, sync or async, without an operation (osbq-ctl shows
        none); a PATCH that changes one thing still runs."""
        iid = self.provisioned(FAST, parameters={"v": 1})
        before = len(self.ops_of(iid))
        same = ({"service_id": SERVICE},
                {"service_id": SERVICE, "plan_id": FAST, "parameters": {"v": 1}},
                {"service_id": SERVICE, "context": {"platform": "osbq-tests", "other": 1}})
        for body in same:
            for incomplete in (None, True):
                r = self.patch(iid, body, incomplete)
                self.assertEqual((r.status, r.json()), (200, {}), (body, r.body))
        self.assertEqual(len(self.ops_of(iid)), before, "a PATCH that changes nothing ran")
        self.assertEqual(self.ctl_operations(iid), ["provision"])
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"v": 2}}, True))
        self.wait_state(iid, "succeeded", op)
        self.assertEqual(len(self.ops_of(iid)), before + 1)
        # {} replaces parameters in force ({"v": 2}): a change.
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {}})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(len(self.ops_of(iid)), before + 2)
        self.assertEqual(self.fetch(iid).json().get("parameters", {}), {})

    def test_update_sync_past_its_limit_applies_nothing(self):
        """Updating a Service Instance, Response: "When the response includes a 4xx or 5xx
        status code, the Service Broker MUST NOT apply any of the requested changes"
        (decision 0048): a synchronous update past its plan's limit is stopped before its 504;
        once its backend would have finished, the instance's parameters are as they were, the
        operation failed, and the instance takes the next update."""
        iid, op = self.provision_async(SYNC_TIMEOUT, parameters={"v": 1})
        self.wait_state(iid, "succeeded", op)
        started = time.monotonic()
        body = self.assertError(self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 2}}),
                                504)
        self.assertLess(time.monotonic() - started, 2.5, "the 504 came long after 500 ms")
        self.assertIn("nothing was changed", body["description"])
        last = self.last_operation(iid).json()
        self.assertEqual(last["state"], "failed", last)
        self.assertIn("synchronous time limit", last.get("description", ""))
        self.assertIs(last.get("update_repeatable"), True, last)
        time.sleep(3.5)  # past the 3 s the stopped update's backend would have taken
        self.assertEqual(self.fetch(iid).json()["parameters"], {"v": 1})
        self.assertEqual(self.last_operation(iid).json()["state"], "failed")
        update = [o for o in self.ops_of(iid) if o.get("kind") == "update"]
        self.assertEqual(len(update), 1)
        self.assertIn("failed_at_sync_limit", update[0].get("history", ""))
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"v": 3}}, True))
        self.wait_state(iid, "succeeded", op)
        self.assertEqual(self.fetch(iid).json()["parameters"], {"v": 3})

    def test_update_async_202_carries_the_dashboard_url(self):
        """Updating a Service Instance, Body: dashboard_url "MUST return it with the initial
        response ... even if the Service Instance is being updated asynchronously" (2.14+), in
        the 202 of a re-sent identical update too; not before 2.14."""
        iid = self.provisioned(TEMPLATED)
        dashboard = "https://dash.example.test/instances/%s/home" % iid
        body = {"service_id": SERVICE, "parameters": {"v": 1}}
        r = self.patch(iid, body, True)
        self.assertEqual(r.status, 202, r.body)
        self.assertEqual(r.json().get("dashboard_url"), dashboard)
        again = self.patch(iid, body, True)
        if again.status == 202:
            self.assertEqual(again.json().get("dashboard_url"), dashboard)
        self.wait_state(iid, "succeeded", r.json()["operation"])
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 2}}, True,
                       version="2.13")
        self.assertEqual(r.status, 202, r.body)
        self.assertNotIn("dashboard_url", r.json())
        self.wait_state(iid, "succeeded", r.json()["operation"])


if __name__ == "__main__":
    unittest.main()
