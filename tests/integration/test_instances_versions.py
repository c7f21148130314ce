"""The instance endpoints at every API version from 2.0 to 2.17 and newer minors, end to end
(harness_instances.py)."""

import time
import unittest

from harness_instances import (
    ASYNC_ONLY, DASHBOARD, FAST, InstanceTestCase, MAINTAINED, SERVICE, SLOW, SLOW_CHANGE,
    body_for, new_id)


class ApiVersions(InstanceTestCase):
    """0003, Versions: fields a version lacks are left out for its platforms."""

    def test_version_2_0_accepts_incomplete_ignored(self):
        """Synchronous Operations: brokers answering synchronously can ignore
        accepts_incomplete=true; 0003: before 2.7 it is ignored, and there is no operation."""
        iid = new_id()
        r = self.put(iid, body_for(FAST), True, version="2.0")
        self.assertEqual(r.status, 201, r.body)
        self.assertNotIn("operation", r.json())
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 1}}, True, version="2.0")
        self.assertEqual(r.status, 200, r.body)
        self.assertNotIn("operation", r.json())
        r = self.delete(iid, FAST, True, version="2.0")
        self.assertEqual(r.status, 200, r.body)
        self.assertNotIn("operation", r.json())
        # A 1.5 s plan is provisioned synchronously too: the answer comes at completion.
        sid = new_id()
        started = time.monotonic()
        r = self.put(sid, body_for(SLOW), True, version="2.0")
        self.assertEqual(r.status, 201, r.body)
        self.assertGreaterEqual(time.monotonic() - started, 1.4)
        self.assertEqual(self.last_operation(sid).json()["state"], "succeeded")

    def test_version_2_0_async_only_plan_422_async_required(self):
        """0003 Versions: before 2.7 async-only plans answer 422 AsyncRequired, even with
        accepts_incomplete=true; the 422 carries error and description for every version."""
        iid = new_id()
        for incomplete in (None, True):
            self.assertError(self.put(iid, body_for(ASYNC_ONLY), incomplete, version="2.0"), 422,
                             "AsyncRequired")
        self.assertError(self.last_operation(iid), 404)
        iid, op = self.provision_async(ASYNC_ONLY)
        self.wait_state(iid, "succeeded", op)
        self.assertError(self.delete(iid, ASYNC_ONLY, True, version="2.0"), 422, "AsyncRequired")
        self.assertEqual(self.fetch(iid).status, 200)

    def test_version_2_8_202_without_operation(self):
        """0003 Versions: async from 2.7, the operation field from 2.9."""
        iid = new_id()
        r = self.put(iid, body_for(SLOW), True, version="2.8")
        self.assertAccepted(r, with_operation=False)
        r = self.last_operation(iid, version="2.8")
        self.assertEqual(r.json()["state"], "in progress")
        self.assertIsNone(r.header("Retry-After"))
        self.wait_state(iid, "succeeded", version="2.8")
        r = self.put(new_id(), body_for(SLOW), True, version="2.9")
        self.assertAccepted(r)

    def check_before_2_14(self, version):
        iid = new_id()
        op = self.assertAccepted(self.put(iid, body_for(DASHBOARD), True, version=version))
        self.wait_state(iid, "succeeded", op, version=version)
        self.assertError(self.fetch(iid, version=version), 404)
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 1}}, version=version)
        self.assertEqual(r.status, 200, r.body)
        self.assertNotIn("dashboard_url", r.json())
        sid, sop = self.provision_async(SLOW)
        r = self.last_operation(sid, sop, version=version)
        self.assertEqual(r.json()["state"], "in progress")
        self.assertIsNone(r.header("Retry-After"))

    def test_version_2_12_async_with_operation_no_fetch_no_retry_after(self):
        """0003 Versions: 2.12 has async operations and operation, but no fetch (2.14), no
        dashboard_url on update (2.14), no Retry-After (2.15)."""
        self.check_before_2_14("2.12")

    def test_version_2_13_no_fetch_no_dashboard_url_on_update(self):
        """0003 Versions: 2.13 is the last version without fetch and without dashboard_url on
        update."""
        self.check_before_2_14("2.13")

    def test_version_2_14_fetch_without_maintenance_info_or_metadata(self):
        """0003 Versions: fetch from 2.14; maintenance_info and Retry-After from 2.15,
        metadata from 2.16."""
        iid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        r = self.fetch(iid, version="2.14")
        self.assertEqual(r.status, 200, r.body)
        self.assertNotIn("maintenance_info", r.json())
        self.assertNotIn("metadata", r.json())
        did = self.provisioned(DASHBOARD)
        url = self.fetch(did).json()["dashboard_url"]
        r = self.patch(did, {"service_id": SERVICE, "parameters": {"v": 1}}, version="2.14")
        self.assertEqual(r.status, 200, r.body)
        self.assertIn(r.json().get("dashboard_url", url), (url,))

    def test_version_2_16_failure_flags(self):
        """0003 Versions: instance_usable and update_repeatable from 2.16, on a failed update
        polled through last_operation."""
        iid = self.provisioned(FAST)
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"sim_fail": True}}, True,
                                            version="2.16"))
        body = self.wait_state(iid, "failed", op, version="2.16")
        self.assertIn("instance_usable", body)
        self.assertIn("update_repeatable", body)
        body = self.wait_state(iid, "failed", op, version="2.15")
        self.assertNotIn("instance_usable", body)

    def test_versions_2_12_to_2_17_each_boundary(self):
        """Release notes 2.14-2.16, per version from 2.12 to 2.17: fetch from 2.14,
        maintenance_info from 2.15, the failure flags from 2.16 (metadata from 2.16, attributes
        from 2.17 and every other later field are held to their version by the OpenAPI
        checker's VERSIONED_FIELDS on each answer, osb_conformance.py)."""
        iid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        fid = self.provisioned(FAST)
        op = self.assertAccepted(self.patch(fid, {"service_id": SERVICE,
                                                  "parameters": {"sim_fail": True}}, True))
        self.wait_state(fid, "failed", op)
        for minor in range(12, 18):
            version = "2.%d" % minor
            r = self.fetch(iid, version=version)
            if minor < 14:
                self.assertError(r, 404)
            else:
                self.assertEqual(r.status, 200, r.body)
                self.assertEqual("maintenance_info" in r.json(), minor >= 15, (version, r.body))
            body = self.last_operation(fid, op, version=version).json()
            self.assertEqual("instance_usable" in body, minor >= 16, (version, body))
            self.assertEqual("update_repeatable" in body, minor >= 16, (version, body))

    def test_version_2_17_and_newer_minors(self):
        """API Version Header: 2.17 is the latest; 0003: newer minors are served as 2.17."""
        iid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        for version in ("2.17", "2.18", "2.99"):
            r = self.fetch(iid, version=version)
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json().get("maintenance_info", {}).get("version"), "1.2.0")
        sid, sop = self.provision_async(SLOW)
        r = self.last_operation(sid, sop, version="2.18")
        self.assertRegex(r.header("Retry-After") or "", r"^[0-9]+$")

    def test_422_bodies_carry_error_for_every_version(self):
        """Service Broker Errors / Error Codes: AsyncRequired and ConcurrencyError MUST be in
        error; 0003: both error and description for every version."""
        iid = self.provisioned(SLOW_CHANGE)
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"v": 1}}, True))
        for version in ("2.0", "2.7", "2.11", "2.12", "2.13", "2.14", "2.15", "2.16", "2.17"):
            self.assertError(self.put(new_id(), body_for(ASYNC_ONLY), version=version), 422,
                             "AsyncRequired")
            self.assertError(self.delete(iid, SLOW_CHANGE, version=version), 422,
                             "ConcurrencyError")
            self.assertError(self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 9}},
                                        version=version), 422, "ConcurrencyError")
        for version in ("2.15", "2.16", "2.17"):
            self.assertError(self.put(new_id(), body_for(MAINTAINED, maintenance_info={
                "version": "0.0.1"}), version=version), 422, "MaintenanceInfoConflict")
        self.wait_state(iid, "succeeded", op)


if __name__ == "__main__":
    unittest.main()
