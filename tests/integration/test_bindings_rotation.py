"""Binding rotation (predecessor_binding_id) and the binding endpoints at API versions 2.12,
2.14 and 2.17, end to end (harness_bindings.py)."""

import json
import time
import unittest

from harness_bindings import (
    APP_GUID, BindingTestCase, FAST, ROTATABLE, ROTATABLE_APP, SHORT, bind_body, new_id)


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
class RotationAsWritten(BindingTestCase):
    """Request (Rotating a Service Binding): the body is predecessor_binding_id alone (decision
    0047): the rest comes from the instance and the predecessor."""

    def rotate(self, iid, bid, predecessor, incomplete=None):
        return self.bind(iid, bid, {"predecessor_binding_id": predecessor}, incomplete)

    def test_rotation_body_predecessor_alone_sync_and_async(self):
        """Binding Rotation: "Platforms do not necessarily store these parameter values": a
        body of predecessor_binding_id alone makes a successor with the predecessor's
        parameters, context and bind_resource, the instance's service and plan; both valid in
        parallel; the identical request again is the same one (200)."""
        iid = self.provisioned(ROTATABLE)
        old, old_body = self.bound(iid, ROTATABLE, parameters={"p": 1})
        new = new_id()
        body = self.assertBinding(self.rotate(iid, new, old), 201, ROTATABLE)
        self.assertEqual(body["credentials"].get("rotated_from"), old)
        self.assertNotEqual(body["credentials"]["password"], old_body["credentials"]["password"])
        old_record, new_record = self.binding_record(iid, old), self.binding_record(iid, new)
        for field in ("parameters", "context", "bind_resource", "service_id", "plan_id"):
            self.assertEqual(new_record.get(field), old_record.get(field), field)
        self.assertEqual(self.assertFetched(self.fetch(iid, new), ROTATABLE,
                                            parameters={"p": 1})["credentials"],
                         body["credentials"])
        self.assertEqual(self.fetch(iid, old).status, 200)
        again = self.rotate(iid, new, old)
        self.assertEqual(self.assertBinding(again, 200, ROTATABLE)["credentials"],
                         body["credentials"])
        newest = new_id()
        op = self.assertAccepted(self.rotate(iid, newest, new, True))
        self.wait_state(iid, newest, "succeeded", op)
        fetched = self.assertFetched(self.fetch(iid, newest), ROTATABLE, parameters={"p": 1})
        self.assertEqual(fetched["credentials"].get("rotated_from"), new)
        # What the request names stands: its own parameters replace the predecessor's.
        own = new_id()
        r = self.bind(iid, own, {"predecessor_binding_id": old, "parameters": {"p": 2}})
        self.assertBinding(r, 201, ROTATABLE)
        self.assertEqual(json.loads(self.binding_record(iid, own)["parameters"]), {"p": 2})

    def test_rotation_refused_with_a_description_that_names_the_cause(self):
        """Binding Rotation: a plan without binding_rotatable "MUST NOT" be rotated, and the
        predecessor "MUST be the ID of non-expired Service Binding of the same Service
        Instance": 400 naming rotation or the predecessor (not missing ids), nothing
        written."""
        iid = self.provisioned(FAST)
        old, _ = self.bound(iid)
        bid = new_id()
        body = self.assertError(self.rotate(iid, bid, old), 400)
        self.assertIn("rotation", body["description"])
        other = self.provisioned(ROTATABLE)
        elsewhere, _ = self.bound(other, ROTATABLE)
        mine = self.provisioned(ROTATABLE)
        for incomplete in (None, True):
            body = self.assertError(self.rotate(mine, bid, elsewhere, incomplete), 400)
            self.assertIn("predecessor_binding_id", body["description"])
        self.assertError(self.rotate(new_id(), bid, elsewhere), 404)
        for iid_ in (iid, mine):
            self.assertError(self.last_operation(iid_, bid), 404)

    def test_rotation_of_a_requires_app_plan_takes_the_predecessors_app(self):
        """Binding Rotation with a plan that requires an app: the successor's app is the
        predecessor's bind_resource.app_guid (no 422 RequiresApp)."""
        iid = self.provisioned(ROTATABLE_APP)
        old, _ = self.bound(iid, ROTATABLE_APP)
        new = new_id()
        self.assertBinding(self.rotate(iid, new, old), 201, ROTATABLE_APP)
        resource = json.loads(self.binding_record(iid, new)["bind_resource"])
        self.assertEqual(resource.get("app_guid"), APP_GUID)


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
