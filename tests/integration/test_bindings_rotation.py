"""Binding rotation (predecessor_binding_id) and the binding endpoints at API versions 2.12,
2.14 and 2.17, end to end (harness_bindings.py)."""

import time
import unittest

from harness_bindings import (
    BindingTestCase, FAST, ROTATABLE, SHORT, bind_body, new_id)


class Rotation(BindingTestCase):
    """0004 rows on predecessor_binding_id; Binding Rotation (2.17)."""

    def test_bind_rotation_predecessor_of_the_same_instance_accepted_both_valid(self):
        """Binding Rotation: predecessor_binding_id of a non-expired binding of the same
        instance creates a new binding; "Both Service Bindings ... MUST both be valid in
        parallel until they expired or are deleted". The backend receives the predecessor
        (sim: credentials.rotated_from)."""
        iid = self.provisioned(ROTATABLE)
        old, old_body = self.bound(iid, ROTATABLE, parameters={"p": 1})
        new, new_body = self.bound(iid, ROTATABLE, predecessor_binding_id=old)
        self.assertNotEqual(new_body["credentials"]["password"],
                            old_body["credentials"]["password"])
        self.assertEqual(new_body["credentials"].get("rotated_from"), old)
        self.assertEqual(self.binding_record(iid, new).get("predecessor"), old)
        for bid, body in ((old, old_body), (new, new_body)):
            fetched = self.fetch(iid, bid)
            self.assertEqual(fetched.status, 200, fetched.body)
            self.assertEqual(fetched.json()["credentials"], body["credentials"])
        # The identical rotation again: 200, same credentials; another predecessor: 409.
        r = self.bind(iid, new, bind_body(ROTATABLE, predecessor_binding_id=old))
        self.assertEqual(self.assertBinding(r, 200, ROTATABLE)["credentials"],
                         new_body["credentials"])
        third, _ = self.bound(iid, ROTATABLE)
        self.assertRefused(iid, new, lambda: self.bind(
            iid, new, bind_body(ROTATABLE, predecessor_binding_id=third)), 409)
        # Asynchronously, from the successor; then the oldest is deleted, the others stay.
        newest, op = self.bind_async(iid, ROTATABLE, predecessor_binding_id=new)
        self.wait_state(iid, newest, "succeeded", op)
        self.assertEqual(self.fetch(iid, newest).json()["credentials"].get("rotated_from"), new)
        self.assertEqual(self.unbind(iid, old, ROTATABLE).status, 200)
        for bid in (new, newest):
            self.assertEqual(self.fetch(iid, bid).status, 200)

    def test_bind_400_predecessor_not_a_bound_binding_of_this_instance(self):
        """Request (Rotating a Service Binding): predecessor_binding_id "MUST be the ID of
        non-expired Service Binding of the same Service Instance"; 0004: otherwise 400 (unknown,
        another instance's, unbound, failed, itself)."""
        iid = self.provisioned(ROTATABLE)
        other = self.provisioned(ROTATABLE)
        elsewhere, _ = self.bound(other, ROTATABLE)
        unbound, _ = self.bound(iid, ROTATABLE)
        self.assertEqual(self.unbind(iid, unbound, ROTATABLE).status, 200)
        failed = new_id()
        self.assertError(self.bind(iid, failed, bind_body(ROTATABLE, parameters={
            "sim_fail": True})), 502)
        for predecessor in (new_id(), elsewhere, unbound, failed, "self"):
            bid = new_id()
            pred = bid if predecessor == "self" else predecessor
            for incomplete in (None, True):
                self.assertRefused(iid, bid, lambda: self.bind(
                    iid, bid, bind_body(ROTATABLE, predecessor_binding_id=pred), incomplete),
                    400)
            self.assertError(self.last_operation(iid, bid), 404)

    def test_bind_400_predecessor_on_a_plan_not_binding_rotatable(self):
        """Binding Rotation: "If the field is set to false or not present, the Platform MUST
        NOT attempt to rotate a Service Binding of this plan"; 0004: 400."""
        iid = self.provisioned(FAST)
        old, _ = self.bound(iid)
        bid = new_id()
        for incomplete in (None, True):
            self.assertRefused(iid, bid, lambda: self.bind(
                iid, bid, bind_body(FAST, predecessor_binding_id=old), incomplete), 400)
        self.assertError(self.last_operation(iid, bid), 404)

    def test_bind_predecessor_ignored_before_2_17(self):
        """0004: predecessor_binding_id is a 2.17 field, ignored from older platforms: a plain
        new binding, even on a plan that is not rotatable or with an unknown predecessor."""
        iid = self.provisioned(FAST)
        old, _ = self.bound(iid)
        for version in ("2.14", "2.16"):
            _, body = self.bound(iid, version=version, predecessor_binding_id=old)
            self.assertNotIn("rotated_from", body["credentials"])
        rid = self.provisioned(ROTATABLE)
        bid, body = self.bound(rid, ROTATABLE, version="2.16", predecessor_binding_id=new_id())
        self.assertNotIn("rotated_from", body["credentials"])
        self.assertNotIn("predecessor", self.binding_record(rid, bid))


# =====================================================================================
class ApiVersions(BindingTestCase):
    """0004 by version: async bindings and fetch 2.14, endpoints 2.15, metadata 2.16,
    rotation 2.17."""

    def test_version_2_12_binds_and_unbinds_synchronously_without_fetch(self):
        """0004: asynchronous bindings (2.14+): a 2.12 platform with accepts_incomplete=true
        gets the synchronous answer after the operation; fetch and last_operation need 2.14."""
        iid = self.provisioned(SHORT)
        bid = new_id()
        started = time.monotonic()
        r = self.bind(iid, bid, bind_body(SHORT), True, version="2.12")
        self.assertGreaterEqual(time.monotonic() - started, 0.25)
        created = self.assertBinding(r, 201, SHORT, "2.12")
        self.assertError(self.fetch(iid, bid, version="2.12"), 404)
        self.assertError(self.last_operation(iid, bid, version="2.12"), 404)
        self.assertEqual(self.fetch(iid, bid, version="2.14").json()["credentials"],
                         created["credentials"])
        started = time.monotonic()
        r = self.unbind(iid, bid, SHORT, True, version="2.12")
        self.assertGreaterEqual(time.monotonic() - started, 0.25)
        self.assertEqual((r.status, r.json()), (200, {}))
        self.assertError(self.unbind(iid, bid, SHORT, True, version="2.12"), 410)

    def test_version_2_14_async_bindings_and_fetch_without_endpoints_or_metadata(self):
        """0004: 2.14 has asynchronous bindings, fetch and binding last_operation, but no
        endpoints (2.15), metadata (2.16) or rotation (2.17)."""
        iid = self.provisioned(ROTATABLE)
        bid, op = self.bind_async(iid, ROTATABLE, version="2.14")
        self.wait_state(iid, bid, "succeeded", op, version="2.14")
        body = self.assertFetched(self.fetch(iid, bid, version="2.14"), ROTATABLE, "2.14")
        self.assertNotIn("endpoints", body)
        self.assertNotIn("metadata", body)
        uop = self.assertAccepted(self.unbind(iid, bid, ROTATABLE, True, version="2.14"))
        self.wait_gone(iid, bid, uop)

    def test_version_2_17_rotation_endpoints_metadata(self):
        """0004: 2.17 has every field: endpoints, metadata and rotation; newer minors are
        served as 2.17 (API Version Header)."""
        iid = self.provisioned(ROTATABLE)
        for version in ("2.17", "2.18"):
            old, _ = self.bound(iid, ROTATABLE, version="2.17")
            r = self.bind(iid, new_id(), bind_body(ROTATABLE, predecessor_binding_id=old),
                          version=version)
            body = self.assertBinding(r, 201, ROTATABLE, "2.17")
            self.assertEqual(body["credentials"].get("rotated_from"), old)


if __name__ == "__main__":
    unittest.main()
