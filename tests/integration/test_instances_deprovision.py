"""Deprovisioning a service instance (DELETE /v2/service_instances/:id), orphan mitigation
included, end to end (harness_instances.py)."""

import unittest

from harness_instances import (
    ASYNC_ONLY, FAST, InstanceTestCase, SERVICE, SLOW, SLOW_CHANGE, SYNC_TIMEOUT, body_for, new_id)


class Deprovisioning(InstanceTestCase):
    """0003, Deprovision, and Orphan Mitigation."""

    def test_deprovision_410_unknown_instance(self):
        """Deprovisioning, 410 Gone: MUST be returned if the instance does not exist."""
        for incomplete in (None, True):
            for gw in (0, 1):
                self.assertError(self.delete(new_id(), FAST, incomplete, gw), 410)

    def test_deprovision_410_already_deprovisioned(self):
        """Deprovisioning, 410 Gone: an instance already deprovisioned does not exist."""
        iid = self.provisioned(FAST)
        r = self.delete(iid, FAST)
        self.assertEqual(r.status, 200, r.body)
        self.assertError(self.delete(iid, FAST), 410)
        self.assertError(self.delete(iid, FAST, True, 1), 410)

    def test_deprovision_422_async_required(self):
        """Deprovisioning, 422: MUST be returned with AsyncRequired if the plan can only be
        deprovisioned asynchronously and accepts_incomplete=true is missing."""
        iid, op = self.provision_async(ASYNC_ONLY)
        self.wait_state(iid, "succeeded", op)
        for incomplete in (None, False):
            self.assertError(self.delete(iid, ASYNC_ONLY, incomplete), 422, "AsyncRequired")
        self.assertEqual(self.fetch(iid).status, 200)
        dop = self.assertAccepted(self.delete(iid, ASYNC_ONLY, True))
        self.wait_gone(iid, dop)

    def test_deprovision_422_concurrency_error_while_another_operation_runs(self):
        """Deprovisioning, 422: MUST be returned with ConcurrencyError if the instance is being
        processed by some other operation (here an update)."""
        iid = self.provisioned(SLOW_CHANGE)
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"v": 1}}, True))
        for incomplete in (None, True):
            for gw in (0, 1):
                self.assertError(self.delete(iid, SLOW_CHANGE, incomplete, gw), 422,
                                 "ConcurrencyError")
        self.wait_state(iid, "succeeded", op)
        self.assertEqual(self.fetch(iid).status, 200)

    def test_deprovision_resent_during_deprovision_202_same_operation(self):
        """Deprovisioning, 202: the operation string MUST match the original request's; a
        re-sent DELETE MUST return 202, not 200, if it has not completed yet."""
        iid = self.provisioned(SLOW_CHANGE)
        op = self.assertAccepted(self.delete(iid, SLOW_CHANGE, True))
        for gw in (1, 0):
            self.assertEqual(self.assertAccepted(self.delete(iid, SLOW_CHANGE, True, gw)), op)
        self.assertEqual(self.last_operation(iid, op).json()["state"], "in progress")
        self.wait_gone(iid, op)
        self.assertError(self.delete(iid, SLOW_CHANGE, True), 410)

    def test_deprovision_sync_200_empty_object(self):
        """Deprovisioning, 200: MUST be returned if the instance was deleted as a result of
        this request; the expected body is {}."""
        iid = self.provisioned(FAST)
        r = self.delete(iid, FAST, gw=1)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})
        self.assertError(self.fetch(iid), 404)
        self.assertError(self.last_operation(iid), 410)

    def test_deprovision_async_202_operation(self):
        """Deprovisioning, 202 with operation; Polling Last Operation: in progress while it
        runs, then 410 Gone (a success for a delete)."""
        iid = self.provisioned(SLOW_CHANGE)
        op = self.assertAccepted(self.delete(iid, SLOW_CHANGE, True))
        self.assertEqual(self.last_operation(iid, op, gw=1).json()["state"], "in progress")
        self.wait_gone(iid, op, gw=1)
        self.assertError(self.fetch(iid), 404)

    def test_orphan_mitigation_delete_while_provisioning_halts_it(self):
        """Deprovisioning: a delete accepted during the provision "MUST have the net effect of
        halting the current creation process and beginning the deletion" (decision 0051): 202,
        the provision ends failed (halted) unless it ended first, and the deprovision
        succeeds either way; a re-sent DELETE is the same operation."""
        iid, op = self.provision_async(SLOW)
        dop = self.assertAccepted(self.delete(iid, SLOW, True))
        self.assertEqual(self.assertAccepted(self.delete(iid, SLOW, True, 1)), dop)
        ended = self.wait_done(iid, op).json()
        if ended["state"] == "failed":
            self.assertIn("Halted", ended.get("description", ""))
        else:  # the provision's last step ended before the DELETE reached Redis
            self.assertEqual(ended["state"], "succeeded", ended)
        self.wait_gone(iid, dop)
        self.assertError(self.fetch(iid), 404)

    def test_orphan_mitigation_delete_after_failed_provision_succeeds(self):
        """Orphan Mitigation: a failed synchronous provision or a last_operation "failed" for a
        provision makes the platform delete the instance; 0003: that DELETE is allowed and
        runs the backend's cleanup."""
        iid = new_id()
        self.assertError(self.put(iid, body_for(FAST, parameters={"sim_fail": True})), 502)
        r = self.delete(iid, FAST)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})
        self.assertError(self.last_operation(iid), 410)
        self.assertError(self.delete(iid, FAST), 410)
        # Asynchronous provision that failed, asynchronous delete.
        aid, op = self.provision_async(SLOW, parameters={"sim_fail": True})
        self.wait_state(aid, "failed", op)
        dop = self.assertAccepted(self.delete(aid, SLOW, True, 1))
        self.assertNotEqual(dop, op)
        self.wait_gone(aid, dop)
        kinds = sorted(o.get("kind") for o in self.ops_of(aid))
        self.assertEqual(kinds, ["deprovision", "provision"])

    def test_orphan_mitigation_delete_after_sync_timeout(self):
        """Orphan Mitigation (the broker does not answer in time; platforms delete): the DELETE
        halts the provision still running (decision 0051): it ends failed, and the deprovision
        runs."""
        iid = new_id()
        self.assertError(self.put(iid, body_for(SYNC_TIMEOUT)), 504)
        dop = self.assertAccepted(self.delete(iid, SYNC_TIMEOUT, True))
        self.wait_gone(iid, dop)
        provision = [o for o in self.ops_of(iid) if o.get("kind") == "provision"]
        self.assertEqual(provision[0].get("state"), "failed", provision)
        self.assertEqual(provision[0].get("halted_by"), dop)
        self.assertError(self.delete(iid, SYNC_TIMEOUT, gw=1), 410)


if __name__ == "__main__":
    unittest.main()
