"""Provisioning a service instance (PUT /v2/service_instances/:id), and the 400s of every
instance endpoint, end to end (harness_instances.py)."""

import time
import unittest
import urllib.parse

from harness_instances import (
    ASYNC_ONLY, DASHBOARD, FAST, FAST_OTHER, HIDDEN, HIDDEN_SERVICE, InstanceTestCase, MAINTAINED,
    SERVICE, SLOW, SLOW_CHANGE, SYNC_TIMEOUT, TEMPLATED, body_for, new_id)


class RequestValidation(InstanceTestCase):
    """0003 "Validation (400, nothing written)": every refused request leaves Redis as it was."""

    def refused(self, request, status=400, error=None):
        r = self.assertNothingWritten(request)
        self.assertError(r, status, error)
        return r

    def test_provision_400_body_not_a_json_object(self):
        """Provisioning: 400 MUST be returned if the request is malformed. Content Type: an
        unprocessable body SHOULD get 400."""
        for raw in ("", "not json", "[]", "[1, 2]", '"text"', "42", "null", '{"service_id": '):
            iid = new_id()
            for incomplete in (None, True):
                self.refused(lambda: self.client().request(
                    "PUT", self.ipath(iid, accepts_incomplete=self.incomplete(incomplete)), raw,
                    headers={"Content-Type": "application/json"}))
            self.assertError(self.last_operation(iid), 404)

    def test_provision_400_service_id_or_plan_id_missing_or_invalid(self):
        """Provisioning, Body: service_id* and plan_id* are required; plan_id MUST be the ID of
        a plan of the requested service."""
        bodies = [
            body_for(FAST, service_id=None),
            body_for(FAST, plan_id=None),
            body_for(FAST, service_id=""),
            body_for(FAST, plan_id=""),
            body_for(FAST, service_id=7),
            body_for(FAST, plan_id=["x"]),
            body_for(FAST, plan_id="no-such-plan"),
            body_for(FAST, service_id="no-such-service"),
            body_for(HIDDEN, service_id=SERVICE),     # a plan of the other service
            body_for(FAST, service_id=HIDDEN_SERVICE),
        ]
        for body in bodies:
            iid = new_id()
            self.refused(lambda: self.put(iid, body, True))
            self.refused(lambda: self.put(iid, body))

    def test_provision_400_id_with_control_characters_nul_or_too_long(self):
        """Provisioning, Parameters: instance_id (the spec recommends URL-safe ids): an id
        holding a control character, an encoded NUL (which would otherwise cut it short) or
        more than 255 bytes is refused with 400, and nothing is written."""
        for iid in ("ab\x00cd", "\x00", "a\nb", "tab\tx", "x" * 256):
            self.refused(lambda: self.put(iid, body_for(FAST), True))

    def test_provision_400_parameters_or_context_not_objects(self):
        """Provisioning, Body: parameters and context are objects."""
        for field in ("parameters", "context"):
            for value in ([], "x", 3, True, ["a"]):
                iid = new_id()
                self.refused(lambda: self.put(iid, body_for(FAST, **{field: value}), True))

    def test_provision_400_organization_or_space_guid_missing_without_context_or_empty(self):
        """Provisioning, Body: organization_guid* and space_guid* MUST be non-empty strings;
        0003: required when context is absent."""
        for extra in ({"context": None, "organization_guid": None},
                      {"context": None, "space_guid": None},
                      {"context": None, "organization_guid": None, "space_guid": None},
                      {"organization_guid": ""}, {"space_guid": ""},
                      {"organization_guid": 5}, {"space_guid": {}}):
            iid = new_id()
            self.refused(lambda: self.put(iid, body_for(FAST, **extra), True))
        # Either alone is enough.
        self.provisioned(FAST, organization_guid=None, space_guid=None)
        self.provisioned(FAST, context=None)

    def test_provision_400_maintenance_info_malformed(self):
        """Provisioning, Body: maintenance_info is a Maintenance Info object with a string
        version."""
        for value in ("1.2.0", [], {"version": 1}, {"version": ""}, {"description": "x"}):
            iid = new_id()
            self.refused(lambda: self.put(iid, body_for(MAINTAINED, maintenance_info=value)))

    def test_provision_maintenance_info_empty_object_is_absent(self):
        """Provisioning, Body: maintenance_info MAY be provided; generated clients send an unset
        one as {}, which is taken as absent (issue 22), on a plan with and without one."""
        for plan in (MAINTAINED, FAST):
            r = self.put(new_id(), body_for(plan, maintenance_info={}))
            self.assertEqual(r.status, 201, r.body)

    def test_provision_maintenance_info_ignored_before_2_15(self):
        """Release notes 2.15 added maintenance_info: a 2.14 request's is not read, whatever it
        holds (a conflicting or malformed one included)."""
        for value in ({"version": "9.9.9"}, "junk", {"version": 1}):
            iid = new_id()
            r = self.put(iid, body_for(MAINTAINED, maintenance_info=value), version="2.14")
            self.assertEqual(r.status, 201, r.body)
            r = self.fetch(iid, version="2.15")
            self.assertEqual(r.status, 200, r.body)
            self.assertNotIn("maintenance_info", r.json())
        r = self.put(new_id(), body_for(MAINTAINED, maintenance_info={"version": "9.9.9"}),
                     version="2.15")
        self.assertError(r, 422, "MaintenanceInfoConflict")

    def test_update_400_malformed_body_or_missing_service_id(self):
        """Updating a Service Instance: 400 MUST be returned if the request is malformed or
        missing mandatory data (service_id*)."""
        iid = self.provisioned(FAST, parameters={"v": 1})
        for raw in ("", "junk", "[]", '"x"'):
            self.refused(lambda: self.client().request(
                "PATCH", self.ipath(iid, accepts_incomplete="true"), raw,
                headers={"Content-Type": "application/json"}))
        for body in ({"plan_id": FAST}, {"service_id": ""}, {"service_id": 1},
                     {"service_id": SERVICE, "parameters": []},
                     {"service_id": SERVICE, "context": "x"},
                     {"service_id": SERVICE, "previous_values": 3},
                     {"service_id": SERVICE, "maintenance_info": {"version": 2}}):
            self.refused(lambda: self.patch(iid, body, True))
            self.refused(lambda: self.patch(iid, body))
        self.assertEqual(self.fetch(iid).json()["parameters"], {"v": 1})

    def test_update_400_service_or_plan_not_of_the_instance(self):
        """Updating a Service Instance: service_id MUST be the ID of the instance's Service
        Offering, plan_id a plan of it (0003: 400)."""
        iid = self.provisioned(FAST, parameters={"v": 1})
        for body in ({"service_id": HIDDEN_SERVICE},
                     {"service_id": HIDDEN_SERVICE, "plan_id": HIDDEN},
                     {"service_id": SERVICE, "plan_id": HIDDEN},
                     {"service_id": SERVICE, "plan_id": "no-such-plan"},
                     {"service_id": "no-such-service"}):
            self.refused(lambda: self.patch(iid, body, True))
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["plan_id"], fetched["parameters"]), (FAST, {"v": 1}))

    def test_deprovision_400_without_service_id_or_plan_id(self):
        """Deprovisioning, Parameters: service_id* and plan_id* are REQUIRED; 400 when
        missing."""
        iid = self.provisioned(FAST)
        base = self.ipath(iid)
        for query in ("", "?service_id=%s" % SERVICE, "?plan_id=%s" % FAST,
                      "?service_id=&plan_id=%s" % FAST, "?service_id=%s&plan_id=" % SERVICE,
                      "?accepts_incomplete=true&plan_id=%s" % FAST):
            self.refused(lambda: self.client().request("DELETE", base + query))
        self.assertEqual(self.fetch(iid).status, 200)

    def test_deprovision_400_service_or_plan_not_the_instances(self):
        """Deprovisioning, Parameters: service_id and plan_id MUST be the ids of the instance's
        offering and plan; 0003: 400 when they are not (also after a plan change)."""
        iid = self.provisioned(FAST)
        for service_id, plan_id in ((SERVICE, FAST_OTHER), (SERVICE, SLOW),
                                    (HIDDEN_SERVICE, HIDDEN), (HIDDEN_SERVICE, FAST),
                                    (SERVICE, "no-such-plan")):
            for incomplete in (None, True):
                self.refused(lambda: self.delete(iid, accepts_incomplete=incomplete,
                                                 service_id=service_id, plan_id=plan_id))
        r = self.patch(iid, {"service_id": SERVICE, "plan_id": FAST_OTHER})
        self.assertEqual(r.status, 200, r.body)
        self.refused(lambda: self.delete(iid, FAST))
        r = self.delete(iid, FAST_OTHER)
        self.assertEqual(r.status, 200, r.body)

    def test_last_operation_400_operation_of_another_instance_writes_nothing(self):
        """Polling Last Operation: 400 for invalid data (0003: an operation that is not one of
        this instance's); operation, if present, MUST be a non-empty string."""
        a, op_a = self.provision_async(FAST)
        b, op_b = self.provision_async(FAST)
        self.wait_state(a, "succeeded", op_a)
        self.wait_state(b, "succeeded", op_b)
        self.refused(lambda: self.last_operation(a, op_b))
        self.refused(lambda: self.client().request("GET", self.ipath(a, "/last_operation") +
                                                   "?operation="))


# =====================================================================================
class Provisioning(InstanceTestCase):
    """0003, Provision: the status table in its order."""

    def test_provision_null_members_are_absent(self):
        """docs/conformance.md: a JSON null in an optional member is absent, as Korifi sends
        "parameters": null whenever the user gave none: the provision is made (sync and async),
        the identical request is the same one (200), and a null context needs the guids as an
        absent one does."""
        for incomplete in (None, True):
            iid = new_id()
            body = body_for(MAINTAINED)
            body.update(parameters=None, maintenance_info=None)
            r = self.put(iid, body, incomplete)
            self.assertEqual(r.status, 202 if incomplete else 201, r.body)
            if incomplete:
                self.wait_state(iid, "succeeded", r.json()["operation"])
            self.assertEqual(self.put(iid, body_for(MAINTAINED)).status, 200)
            self.assertNotIn("parameters", self.fetch(iid).json())
        body = body_for(FAST, context=None)
        body["context"] = None
        self.assertEqual(self.put(new_id(), body).status, 201)
        body.update(organization_guid=None)
        self.assertError(self.put(new_id(), body), 400)

    def test_provision_422_async_required(self):
        """Provisioning, Parameters / Asynchronous Operations: a plan that can only be
        provisioned asynchronously MUST reject a request without accepts_incomplete=true with
        422 AsyncRequired."""
        iid = new_id()
        for incomplete in (None, False, "False", "1", "yes"):
            self.assertError(self.put(iid, body_for(ASYNC_ONLY), incomplete), 422, "AsyncRequired")
        self.assertError(self.last_operation(iid), 404)
        op = self.assertAccepted(self.put(iid, body_for(ASYNC_ONLY), True))
        self.wait_state(iid, "succeeded", op)

    def test_provision_422_maintenance_info_conflict(self):
        """Provisioning, 422: MUST be returned if maintenance_info.version does not match the
        plan's, with error MaintenanceInfoConflict (0003: or the plan has none)."""
        iid = new_id()
        for plan, version in ((MAINTAINED, "1.1.0"), (MAINTAINED, "1.2.1"), (FAST, "1.2.0")):
            for incomplete in (None, True):
                r = self.put(iid, body_for(plan, maintenance_info={"version": version}),
                             incomplete)
                self.assertError(r, 422, "MaintenanceInfoConflict")
        self.assertError(self.last_operation(iid), 404)
        r = self.put(iid, body_for(MAINTAINED, maintenance_info={"version": "1.2.0",
                                                                 "description": "ignored"}))
        self.assertEqual(r.status, 201, r.body)

    def test_provision_422_async_required_checked_before_maintenance_info_conflict(self):
        """0003 Provision: the cases apply "in this order": AsyncRequired comes before
        MaintenanceInfoConflict."""
        r = self.put(new_id(), body_for(ASYNC_ONLY, maintenance_info={"version": "9.9.9"}))
        self.assertError(r, 422, "AsyncRequired")
        r = self.put(new_id(), body_for(ASYNC_ONLY, maintenance_info={"version": "9.9.9"}), True)
        self.assertError(r, 422, "MaintenanceInfoConflict")

    def test_provision_new_id_sync_201(self):
        """Synchronous Operations: 201 Created for provision; Provisioning: 201 MUST be
        returned if the instance was provisioned as a result of this request."""
        iid = new_id()
        r = self.put(iid, body_for(FAST, parameters={"size": 3}))
        self.assertEqual(r.status, 201, r.body)
        self.assertIsInstance(r.json(), dict)
        self.assertEqual(self.last_operation(iid).json()["state"], "succeeded")
        self.assertEqual(self.fetch(iid).status, 200)

    def test_provision_new_id_async_202_operation(self):
        """Asynchronous Operations: with accepts_incomplete=true the broker MUST return 202;
        Provisioning, Body: operation, at most 10,000 characters, given back to last_operation."""
        iid = new_id()
        op = self.assertAccepted(self.put(iid, body_for(SLOW), True))
        first = self.last_operation(iid, op)
        self.assertEqual(first.status, 200)
        self.assertEqual(first.json()["state"], "in progress")
        self.wait_state(iid, "succeeded", op)
        self.assertEqual(len(self.ops_of(iid)), 1)

    def test_provision_dashboard_url_in_201_and_202(self):
        """Provisioning, Body: a broker that returns dashboard_url MUST return it with the
        initial response, even if provisioned asynchronously."""
        iid = new_id()
        r = self.put(iid, body_for(DASHBOARD))
        self.assertEqual(r.status, 201, r.body)
        self.assertIsInstance(r.json().get("dashboard_url"), str, r.body)
        self.assertIn(iid, r.json()["dashboard_url"])
        iid2 = new_id()
        r = self.put(iid2, body_for(DASHBOARD), True)
        op = self.assertAccepted(r)
        self.assertIsInstance(r.json().get("dashboard_url"), str, r.body)
        self.assertIn(iid2, r.json()["dashboard_url"])
        self.wait_state(iid2, "succeeded", op)
        self.assertEqual(self.fetch(iid2).json().get("dashboard_url"), r.json()["dashboard_url"])

    def test_provision_dashboard_url_from_plan_template(self):
        """Provisioning, Body: dashboard_url MUST contain enough information to identify the
        resource; 0003: decided on acceptance from the plan's dashboard_url_template, with the
        id percent-encoded. Ids holding ':' or '*' stay distinct instances (URL Properties)."""
        base = new_id()
        for iid, n in ((base, 1), (base + ":*", 2), ("it has spaces & %25 " + base, 3)):
            expected = ("https://dash.example.test/instances/%s/home"
                        % urllib.parse.quote(iid, safe=""))
            r = self.put(iid, body_for(TEMPLATED, parameters={"n": n}), True)
            op = self.assertAccepted(r)
            self.assertEqual(r.json().get("dashboard_url"), expected)
            self.wait_state(iid, "succeeded", op)
            r = self.put(iid, body_for(TEMPLATED, parameters={"n": n}))
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json().get("dashboard_url"), expected)
            fetched = self.fetch(iid).json()
            self.assertEqual((fetched.get("dashboard_url"), fetched["parameters"]),
                             (expected, {"n": n}))

    def test_provision_new_after_failed_provision(self):
        """0003 Provision, "new id (or an id whose provision failed ...)": a failed provision
        does not block its id; Orphan Mitigation: the platform may retry."""
        iid, op1 = self.provision_async(FAST, parameters={"sim_fail": True})
        self.wait_state(iid, "failed", op1)
        op2 = self.assertAccepted(self.put(iid, body_for(FAST_OTHER, parameters={"a": 1}), True))
        self.assertNotEqual(op2, op1)
        self.wait_state(iid, "succeeded", op2)
        self.assertEqual(self.wait_state(iid, "failed", op1)["state"], "failed")
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["plan_id"], fetched["parameters"]), (FAST_OTHER, {"a": 1}))

    def test_provision_new_after_deprovision(self):
        """0003 Provision, "new id (or an id ... that was deprovisioned)": a deprovisioned id
        can be provisioned again."""
        iid = self.provisioned(FAST)
        self.assertEqual(self.delete(iid, FAST).status, 200)
        r = self.put(iid, body_for(FAST_OTHER))
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(self.fetch(iid).json()["plan_id"], FAST_OTHER)

    def test_provision_identical_in_progress_202_same_operation(self):
        """Provisioning, 202: the operation string MUST match that returned for the original
        request; a re-sent PUT MUST return 202, not 200, while not fully provisioned."""
        iid, op = self.provision_async(SLOW, parameters={"k": "v"})
        for gw in (0, 1, 0):
            r = self.put(iid, body_for(SLOW, parameters={"k": "v"}), True, gw)
            self.assertEqual(self.assertAccepted(r), op)
        self.assertEqual(self.last_operation(iid, op, gw=1).json()["state"], "in progress")
        self.assertEqual(len(self.ops_of(iid)), 1)
        self.wait_state(iid, "succeeded", op)

    def test_provision_identical_in_progress_sync_waits_for_same_operation(self):
        """0003 Provision: same id, identical request, provision in progress, sync: waits for
        the same operation (Synchronous Operations: the answer means completion)."""
        iid, op = self.provision_async(SLOW)
        started = time.monotonic()
        r = self.put(iid, body_for(SLOW), gw=1)
        self.assertIn(r.status, (200, 201), r.body)
        self.assertGreater(time.monotonic() - started, 0.5, "answered before the provision ended")
        self.assertEqual(self.last_operation(iid, op).json()["state"], "succeeded")
        self.assertEqual(len(self.ops_of(iid)), 1)

    def test_provision_identical_after_success_200(self):
        """Provisioning, 200: SHOULD be returned if the instance already exists, is fully
        provisioned, and the requested parameters are identical."""
        iid = self.provisioned(FAST, parameters={"n": 1})
        for gw in (0, 1):
            for incomplete in (None, True):
                r = self.put(iid, body_for(FAST, parameters={"n": 1}), incomplete, gw)
                self.assertEqual(r.status, 200, r.body)
                self.assertIsInstance(r.json(), dict)
        self.assertEqual(len(self.ops_of(iid)), 1)
        # The dashboard URL given on creation comes back on the 200 as well.
        did = new_id()
        url = self.put(did, body_for(DASHBOARD)).json()["dashboard_url"]
        r = self.put(did, body_for(DASHBOARD))
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json().get("dashboard_url"), url)

    def test_provision_identical_means_same_canonical_json(self):
        """0003 Idempotency digest: canonical JSON with sorted keys; key order does not make a
        request different (Provisioning, 200)."""
        iid = self.provisioned(FAST, parameters={"a": 1, "b": {"x": 1, "y": [1, 2]}},
                               context={"platform": "p", "z": 2})
        r = self.put(iid, body_for(FAST, parameters={"b": {"y": [1, 2], "x": 1}, "a": 1},
                                   context={"z": 2, "platform": "p"}))
        self.assertEqual(r.status, 200, r.body)
        raw = ('{"space_guid":"space-guid-1","organization_guid":"org-guid-1",'
               '"context":{"z":2,"platform":"p"},"plan_id":"%s",'
               '"parameters":{"b":{"x":1,"y":[1,2]},"a":1},"service_id":"%s"}' % (FAST, SERVICE))
        r = self.client().request("PUT", self.ipath(iid), raw,
                                  headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 200, r.body)

    def test_provision_different_attributes_409(self):
        """Provisioning, 409: MUST be returned if an instance with the same id already exists
        or is being provisioned but with different attributes (0003: service, plan,
        parameters, context, org/space, maintenance version)."""
        iid = self.provisioned(FAST, parameters={"size": 1})
        variants = [
            body_for(FAST_OTHER, parameters={"size": 1}),
            body_for(HIDDEN, parameters={"size": 1}),
            body_for(FAST, parameters={"size": 2}),
            body_for(FAST, parameters=None),
            body_for(FAST, parameters={"size": 1}, context={"platform": "other"}),
            body_for(FAST, parameters={"size": 1}, context=None),
            body_for(FAST, parameters={"size": 1}, organization_guid="org-guid-2"),
            body_for(FAST, parameters={"size": 1}, space_guid="space-guid-2"),
        ]
        for body in variants:
            for incomplete in (None, True):
                self.assertError(self.put(iid, body, incomplete), 409)
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["plan_id"], fetched["parameters"]), (FAST, {"size": 1}))
        # The maintenance version is an attribute too.
        mid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        self.assertError(self.put(mid, body_for(MAINTAINED)), 409)
        # While being provisioned.
        sid, op = self.provision_async(SLOW, parameters={"size": 1})
        self.assertError(self.put(sid, body_for(SLOW, parameters={"size": 9}), True, 1), 409)
        self.assertError(self.put(sid, body_for(SLOW, parameters={"size": 9})), 409)
        self.assertEqual(len(self.ops_of(sid)), 1)

    def test_provision_422_concurrency_error_while_another_operation_holds_instance(self):
        """Blocking Operations: a request the broker cannot process due to a concurrency issue
        MUST get 422 ConcurrencyError (0003: an update holds the instance). 409 still comes
        first for different attributes."""
        iid = self.provisioned(SLOW_CHANGE, parameters={"v": 1})
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"v": 2}}, True))
        for incomplete in (None, True):
            self.assertError(self.put(iid, body_for(SLOW_CHANGE, parameters={"v": 1}),
                                      incomplete, 1), 422, "ConcurrencyError")
        self.assertError(self.put(iid, body_for(SLOW_CHANGE, parameters={"v": 3}), True), 409)
        self.wait_state(iid, "succeeded", op)

    def test_provision_sync_backend_failure_502(self):
        """0003 Provision: sync and the worker fails -> 502 with the backend's description
        (Service Broker Errors: description is a user-facing message explaining why)."""
        iid = new_id()
        r = self.put(iid, body_for(FAST, parameters={"sim_fail": True}))
        body = self.assertError(r, 502)
        self.assertIn("sim_fail", body["description"])
        self.assertNotIn("instance_usable", body)
        self.assertNotIn("update_repeatable", body)
        last = self.last_operation(iid).json()
        self.assertEqual(last["state"], "failed")
        self.assertIn("sim_fail", last.get("description", ""))
        self.assertError(self.fetch(iid), 404)

    def test_provision_sync_timeout_504_operation_goes_on(self):
        """0003 Provision: sync and sync_timeout_ms passes -> 504; the operation goes on and
        last_operation tells its end (Orphan Mitigation: a timed-out provision)."""
        iid = new_id()
        started = time.monotonic()
        r = self.put(iid, body_for(SYNC_TIMEOUT))
        took = time.monotonic() - started
        self.assertError(r, 504)
        self.assertGreaterEqual(took, 0.45)
        self.assertLess(took, 2.5, "the 504 came long after sync_timeout_ms (500 ms)")
        self.assertEqual(self.last_operation(iid).json()["state"], "in progress")
        self.wait_state(iid, "succeeded")
        self.assertEqual(self.fetch(iid).status, 200)


if __name__ == "__main__":
    unittest.main()
