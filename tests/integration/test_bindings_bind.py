"""Creating a service binding (PUT /v2/service_instances/:id/service_bindings/:binding_id), the
fields of its answer, and the 400s of every binding endpoint, end to end (harness_bindings.py)."""

import datetime
import json
import time
import unittest

import harness
from harness_bindings import (
    APP_GUID, ASYNC_ONLY, BindingTestCase, FAIL_BIND, FAST, FAST_OTHER, HIDDEN, NOT_BINDABLE,
    REGISTRY_KEY, REQUIRES_APP, ROTATABLE, ROUTE, ROUTE_ADDRESS, SERVICE, SLOW, SLOW_CHANGE,
    SLOW_PROVISION, SYNC_TIMEOUT, SYSLOG, SYSLOG_SERVICE, UNBINDABLE, UNBIND_SLOW, VERSIONS,
    VOLUME, api, bind_body, instance_body, new_id)


class BindValidation(BindingTestCase):
    """0004 Bind "Validation (400, nothing written)" and the unbind and last_operation
    parameters: every refused request leaves Redis exactly as it was."""

    def refused(self, request, status=400, error=None):
        self.wait_quiet()
        before = harness.redis_snapshot(self.stack.redis, ignore={REGISTRY_KEY})
        r = request()
        self.assertEqual(harness.redis_snapshot(self.stack.redis, ignore={REGISTRY_KEY}), before,
                         "Redis content changed by a refused request")
        return self.assertError(r, status, error)

    def test_bind_400_body_not_a_json_object(self):
        """Binding, Response: 400 MUST be returned if the request is malformed; 0004: body a
        JSON object."""
        iid = self.provisioned(FAST)
        for raw in ("", "not json", "[]", '"text"', "42", "null", '{"service_id": '):
            bid = new_id()
            for incomplete in (None, True):
                for version in VERSIONS:
                    self.refused(lambda: self.client(0, version).request(
                        "PUT", self.bpath(iid, bid,
                                          accepts_incomplete=self.incomplete(incomplete)),
                        raw, headers={"Content-Type": "application/json"}))
            self.assertError(self.last_operation(iid, bid), 404)

    def test_bind_400_service_id_or_plan_id_missing_or_invalid(self):
        """Request (Creating a Service Binding), Body: service_id* and plan_id* are required;
        0004: non-empty strings naming a plan of that service, which must be the instance's."""
        iid = self.provisioned(FAST)
        bodies = [
            bind_body(FAST, service_id=None), bind_body(FAST, plan_id=None),
            bind_body(FAST, service_id=""), bind_body(FAST, plan_id=""),
            bind_body(FAST, service_id=7), bind_body(FAST, plan_id=["x"]),
            bind_body(FAST, plan_id="no-such-plan"),
            bind_body(FAST, service_id="no-such-service"),
            bind_body(SYSLOG, service_id=SERVICE),  # a plan of another service
            bind_body(FAST, service_id=SYSLOG_SERVICE),
            bind_body(FAST_OTHER),              # a plan of the service, not the instance's
            bind_body(SYSLOG),                  # another service and its plan
        ]
        for body in bodies:
            bid = new_id()
            for incomplete in (None, True):
                self.refused(lambda: self.bind(iid, bid, body, incomplete))
            self.refused(lambda: self.bind(iid, bid, body, True, version="2.12"))

    def test_bind_400_optional_fields_of_the_wrong_type(self):
        """Request (Creating a Service Binding), Body: app_guid "If present, MUST be a
        non-empty string"; 0004: app_guid, predecessor_binding_id non-empty strings and
        parameters, context, bind_resource objects when present."""
        iid = self.provisioned(ROTATABLE)
        _, _ = self.bound(iid, ROTATABLE)
        variants = [{"app_guid": ""}, {"app_guid": 5}, {"app_guid": {}},
                    {"predecessor_binding_id": ""}, {"predecessor_binding_id": 3},
                    {"parameters": []}, {"parameters": "x"}, {"parameters": 3},
                    {"context": "x"}, {"context": [1]},
                    {"bind_resource": "x"}, {"bind_resource": []}, {"bind_resource": 1}]
        for extra in variants:
            bid = new_id()
            for incomplete in (None, True):
                self.refused(lambda: self.bind(iid, bid, bind_body(ROTATABLE, **extra),
                                               incomplete))

    def test_unbind_400_without_service_id_or_plan_id(self):
        """Unbinding, Parameters: service_id* and plan_id* are REQUIRED; 400 "MUST be returned
        if the request is malformed or missing mandatory data"."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        base = self.bpath(iid, bid)
        for query in ("", "?service_id=%s" % SERVICE, "?plan_id=%s" % FAST,
                      "?service_id=&plan_id=%s" % FAST, "?service_id=%s&plan_id=" % SERVICE,
                      "?accepts_incomplete=true&plan_id=%s" % FAST):
            for version in VERSIONS:
                self.refused(lambda: self.client(0, version).request("DELETE", base + query))
        self.assertEqual(self.fetch(iid, bid).status, 200)

    def test_unbind_400_service_or_plan_not_the_bindings(self):
        """Unbinding, Parameters: service_id and plan_id MUST be the ids of the binding's
        offering and plan; 0004: 400 when they are not."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        for service_id, plan_id in ((SERVICE, FAST_OTHER), (SERVICE, SLOW),
                                    (SYSLOG_SERVICE, SYSLOG), (SYSLOG_SERVICE, FAST),
                                    (SERVICE, "no-such-plan")):
            for incomplete in (None, True):
                self.refused(lambda: self.unbind(iid, bid, accepts_incomplete=incomplete,
                                                 service_id=service_id, plan_id=plan_id))
        self.assertEqual(self.fetch(iid, bid).status, 200)
        r = self.unbind(iid, bid, FAST)
        self.assertEqual(r.status, 200, r.body)

    def test_binding_last_operation_400_empty_operation(self):
        """Polling Last Operation for Service Bindings, Parameters: operation "If present, MUST
        be a non-empty string"."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        self.refused(lambda: self.client().request(
            "GET", self.bpath(iid, bid, "/last_operation") + "?operation="))


# =====================================================================================
class Binding(BindingTestCase):
    """0004, Bind: the status table in its order."""

    def test_bind_400_plan_not_bindable(self):
        """Binding: unless bindable is declared, "Platforms MUST NOT make a binding request";
        0004: the plan is not bindable -> 400 (plan-level bindable false, or a service that is
        not bindable)."""
        for plan in (NOT_BINDABLE, UNBINDABLE):
            iid = self.provisioned(plan)
            bid = new_id()
            for version in VERSIONS:
                for incomplete in (None, True):
                    self.assertRefused(iid, bid, lambda: self.bind(
                        iid, bid, bind_body(plan), incomplete, version=version), 400)
            self.assertError(self.last_operation(iid, bid), 404)
            self.assertError(self.fetch(iid, bid), 404)

    def test_bind_422_async_required(self):
        """Binding, 422: "MUST also be returned if the Service Broker only supports
        asynchronous bindings ... and the request did not include ?accepts_incomplete=true",
        error AsyncRequired; 0004: also for API < 2.14, which has no asynchronous bindings."""
        iid = self.provisioned(ASYNC_ONLY)
        bid = new_id()
        for version in VERSIONS:
            for incomplete in (None, False, "1", "yes"):
                self.assertRefused(iid, bid, lambda: self.bind(
                    iid, bid, bind_body(ASYNC_ONLY), incomplete, version=version), 422,
                    "AsyncRequired")
        for version in ("2.12", "2.13"):
            self.assertRefused(iid, bid, lambda: self.bind(
                iid, bid, bind_body(ASYNC_ONLY), True, version=version), 422, "AsyncRequired")
        self.assertError(self.last_operation(iid, bid), 404)
        for version in ("2.14", "2.17"):
            bid, op = self.bind_async(iid, ASYNC_ONLY, version=version)
            self.wait_state(iid, bid, "succeeded", op, version=version)
            self.assertFetched(self.fetch(iid, bid, version=version), ASYNC_ONLY, version)

    def test_bind_422_requires_app(self):
        """Binding, 422: "MUST be returned if the Service Broker requires that app_guid be
        included in the request body", error RequiresApp; 0004: app_guid top level (the
        pre-2.8 form) or in bind_resource."""
        iid = self.provisioned(REQUIRES_APP)
        bid = new_id()
        for version in VERSIONS:
            for incomplete in (None, True):
                for resource in (None, {}, {"route": ROUTE_ADDRESS}):
                    self.assertRefused(iid, bid, lambda: self.bind(
                        iid, bid, bind_body(REQUIRES_APP, bind_resource=resource), incomplete,
                        version=version), 422, "RequiresApp")
        self.assertError(self.last_operation(iid, bid), 404)
        # The deprecated top-level app_guid, as platforms before 2.8 send it, and with 2.17.
        for version in ("2.7", "2.17"):
            self.bound(iid, REQUIRES_APP, version=version, bind_resource=None,
                       app_guid="app-guid-%s" % version)
        # bind_resource.app_guid, sync and async.
        self.bound(iid, REQUIRES_APP, bind_resource={"app_guid": "app-guid-3"})
        bid, op = self.bind_async(iid, REQUIRES_APP, bind_resource={"app_guid": "app-guid-4"})
        self.wait_state(iid, bid, "succeeded", op)
        # The job carries the top-level app_guid as bind_resource.app_guid (0004).
        bid, _ = self.bound(iid, REQUIRES_APP, bind_resource=None, app_guid="app-guid-5")
        resource = json.loads(self.binding_record(iid, bid).get("bind_resource", "null"))
        self.assertEqual(resource, {"app_guid": "app-guid-5"})

    def test_bind_404_unknown_instance_failed_provision_or_deprovisioned(self):
        """Request (Creating a Service Binding), Route: ":instance_id MUST be the ID of a
        previously provisioned Service Instance"; 0004: unknown instance, or its provision
        failed, or it was deprovisioned -> 404."""
        unknown = new_id()
        failed = new_id()
        r = self.provision(failed, instance_body(FAST, parameters={"sim_fail": True}))
        self.assertError(r, 502)
        gone = self.provisioned(FAST)
        self.assertEqual(self.deprovision(gone, FAST).status, 200)
        for iid in (unknown, failed, gone):
            bid = new_id()
            for version in VERSIONS:
                for incomplete in (None, True):
                    for gw in (0, 1):
                        self.assertRefused(iid, bid, lambda: self.bind(
                            iid, bid, bind_body(FAST), incomplete, gw, version), 404)
            self.assertError(self.last_operation(iid, bid), 404)

    def test_bind_422_concurrency_error_while_an_instance_operation_runs(self):
        """Blocking Operations: a request the broker cannot process due to a concurrency issue
        MUST get 422 ConcurrencyError; 0004: a provision, update or deprovision runs. Once it
        ended, the bind goes through."""
        provisioning = new_id()
        self.assertEqual(self.provision(provisioning, instance_body(SLOW_PROVISION), True).status,
                         202)
        updating = self.provisioned(SLOW_CHANGE)
        r = self.patch(updating, {"service_id": SERVICE, "parameters": {"v": 2}}, True)
        self.assertEqual(r.status, 202, r.body)
        update_op = r.json()["operation"]
        deprovisioning = self.provisioned(SLOW_CHANGE)
        r = self.deprovision(deprovisioning, SLOW_CHANGE, True)
        self.assertEqual(r.status, 202, r.body)
        for iid, plan in ((provisioning, SLOW_PROVISION), (updating, SLOW_CHANGE),
                          (deprovisioning, SLOW_CHANGE)):
            bid = new_id()
            for version in VERSIONS:
                for incomplete in (None, True):
                    self.assertRefused(iid, bid, lambda: self.bind(
                        iid, bid, bind_body(plan), incomplete, 1, version), 422,
                        "ConcurrencyError")
        self.wait_instance(updating, update_op)
        self.bound(updating, SLOW_CHANGE)
        self.wait_instance(provisioning, None)
        self.bound(provisioning, SLOW_PROVISION)

    def test_bind_new_id_sync_201_with_the_binding(self):
        """Synchronous Operations: 201 Created for bind; Binding, 201 "MUST be returned if the
        Service Binding was created as a result of this request", with credentials."""
        iid = self.provisioned(FAST)
        for version in VERSIONS:
            for incomplete in (None, False):
                bid, body = self.bound(iid, version=version, parameters={"n": 1})
                self.assertEqual(self.binding_record(iid, bid)["state"], "bound")
                self.assertEqual(self.last_operation(iid, bid).json()["state"], "succeeded")
                self.assertEqual(self.fetch(iid, bid).json()["credentials"],
                                 body["credentials"])
        # 2.12 has no asynchronous bindings: accepts_incomplete=true still gets the 201.
        self.bound(iid, version="2.12")
        r = self.bind(iid, new_id(), bind_body(FAST), True, version="2.12")
        self.assertBinding(r, 201, FAST, "2.12")

    def test_bind_new_id_async_202_operation_without_credentials(self):
        """Asynchronous Operations: with accepts_incomplete=true, 202; Binding, 202: the
        operation, and "Information regarding the Service Binding (i.e. credentials) MUST NOT
        be returned"; Fetching a Service Binding then gives it (2.14+)."""
        iid = self.provisioned(SLOW)
        started = []
        for version in ("2.14", "2.17"):
            for gw in (0, 1):
                bid, op = self.bind_async(iid, SLOW, gw=gw, version=version,
                                          parameters={"v": version})
                started.append((bid, op, version))
        for bid, op, version in started:
            r = self.last_operation(iid, bid, op, 1, version)
            self.assertEqual(r.json()["state"], "in progress", r.body)
            self.assertEqual(self.binding_record(iid, bid)["state"], "binding")
            self.assertNotIn("result", self.binding_record(iid, bid))
        for bid, op, version in started:
            self.wait_state(iid, bid, "succeeded", op, version=version)
            self.assertFetched(self.fetch(iid, bid, version=version), SLOW, version,
                               {"v": version})
            self.assertEqual(self.ops_for(iid, bid), {op})

    def test_bind_new_after_failed_bind(self):
        """0004 Bind, "new binding id (or one whose bind failed ...)": a failed bind does not
        block its id, whatever the new request; Orphan Mitigation: the platform may retry."""
        iid = self.provisioned(FAST)
        bid = new_id()
        r = self.bind(iid, bid, bind_body(FAST, parameters={"sim_fail": True}))
        self.assertError(r, 502)
        r = self.bind(iid, bid, bind_body(FAST, parameters={"a": 1}))
        self.assertBinding(r, 201, FAST)
        bid2, op1 = self.bind_async(iid, FAST, parameters={"sim_fail": True})
        self.wait_state(iid, bid2, "failed", op1)
        op2 = self.assertAccepted(self.bind(iid, bid2, bind_body(FAST, parameters={"sim_fail":
                                                                                     True}),
                                            True))
        self.assertNotEqual(op2, op1)
        self.wait_state(iid, bid2, "failed", op2)
        r = self.bind(iid, bid2, bind_body(FAST))
        self.assertBinding(r, 201, FAST)
        self.assertEqual(len(self.ops_for(iid, bid2)), 3)

    def test_bind_new_after_unbind(self):
        """0004 Bind, "new binding id (or ... that was unbound)": an unbound id binds again,
        with new credentials (Credentials: unique, so access can be revoked per binding)."""
        iid = self.provisioned(FAST)
        bid, first = self.bound(iid, parameters={"a": 1})
        self.assertEqual(self.unbind(iid, bid).status, 200)
        for version in VERSIONS:
            r = self.bind(iid, bid, bind_body(FAST, parameters={"a": 1}), version=version)
            again = self.assertBinding(r, 201, FAST, version)
            self.assertNotEqual(again["credentials"]["password"],
                                first["credentials"]["password"])
            self.assertEqual(self.unbind(iid, bid, version=version).status, 200)
        op = self.assertAccepted(self.bind(iid, bid, bind_body(FAST), True))
        self.wait_state(iid, bid, "succeeded", op)

    def test_bind_identical_in_progress_202_same_operation(self):
        """Binding, 202: "The operation string MUST match that returned for the original
        request" and "a re-sent PUT request MUST return a 202 Accepted, not a 200 OK, if the
        Service Binding is not yet fully created"."""
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW, parameters={"k": "v"})
        for version in ("2.14", "2.17"):
            for gw in (0, 1):
                r = self.bind(iid, bid, bind_body(SLOW, parameters={"k": "v"}), True, gw,
                              version)
                self.assertEqual(self.assertAccepted(r), op)
        self.assertEqual(self.last_operation(iid, bid, op, gw=1).json()["state"], "in progress")
        self.assertEqual(self.ops_for(iid, bid), {op})
        self.wait_state(iid, bid, "succeeded", op)

    def test_bind_identical_in_progress_sync_waits_for_same_operation(self):
        """0004 Bind: same id, identical request, bind in progress, sync: waits for it
        (Synchronous Operations: the answer means completion), at 2.12 and 2.17, with the
        credentials the binding keeps."""
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW)
        started = time.monotonic()
        answers = self.race([lambda: self.bind(iid, bid, bind_body(SLOW), None, 1, "2.17"),
                             lambda: self.bind(iid, bid, bind_body(SLOW), True, 0, "2.12")])
        self.assertGreater(time.monotonic() - started, 0.5, "answered before the bind ended")
        fetched = self.fetch(iid, bid).json()
        for r, version in zip(answers, ("2.17", "2.12")):
            self.assertIn(r.status, (200, 201), r.body)
            body = self.assertBinding(r, r.status, SLOW, version)
            self.assertEqual(body["credentials"], fetched["credentials"])
        self.assertEqual(self.last_operation(iid, bid, op).json()["state"], "succeeded")
        self.assertEqual(self.ops_for(iid, bid), {op})

    def test_bind_identical_bound_200_same_credentials(self):
        """Binding, 200: "SHOULD be returned if the Service Binding already exists and the
        requested parameters are identical"; 0004: with the same credentials, read from the
        one field that stores them, so the 201, every re-PUT 200 and a fetch agree."""
        iid = self.provisioned(FAST)
        bid, created = self.bound(iid, parameters={"n": 1})
        for version in VERSIONS:
            for gw in (0, 1):
                for incomplete in (None, True):
                    r = self.bind(iid, bid, bind_body(FAST, parameters={"n": 1}), incomplete,
                                  gw, version)
                    body = self.assertBinding(r, 200, FAST, version)
                    self.assertEqual(body["credentials"], created["credentials"])
                    if "endpoints" in body:
                        self.assertEqual(body["endpoints"], created["endpoints"])
            if api(version) >= 214:
                fetched = self.fetch(iid, bid, 1, version).json()
                self.assertEqual(fetched["credentials"], created["credentials"])
        # A binding made asynchronously: the first fetch and every re-PUT agree too.
        abid, op = self.bind_async(iid, FAST, parameters={"n": 2})
        self.wait_state(iid, abid, "succeeded", op)
        fetched = self.fetch(iid, abid).json()["credentials"]
        for gw in (0, 1):
            r = self.bind(iid, abid, bind_body(FAST, parameters={"n": 2}), None, gw)
            self.assertEqual(self.assertBinding(r, 200, FAST)["credentials"], fetched)
        self.assertNotEqual(fetched, created["credentials"])
        self.assertEqual(len(self.ops_for(iid, bid)), 1)

    def test_bind_identical_means_same_canonical_json(self):
        """0004 / 0003 Idempotency digest: key order does not make a request different
        (Binding, 200)."""
        iid = self.provisioned(FAST)
        bid, created = self.bound(iid, parameters={"a": 1, "b": {"x": 1, "y": [1, 2]}},
                                  context={"platform": "p", "z": 2})
        raw = ('{"bind_resource":{"route":"%s","app_guid":"%s"},"context":{"z":2,"platform":"p"},'
               '"plan_id":"%s","parameters":{"b":{"y":[1,2],"x":1},"a":1},"service_id":"%s"}'
               % (ROUTE_ADDRESS, APP_GUID, FAST, SERVICE))
        r = self.client().request("PUT", self.bpath(iid, bid), raw,
                                  headers={"Content-Type": "application/json"})
        self.assertEqual(self.assertBinding(r, 200, FAST)["credentials"], created["credentials"])

    def test_bind_different_request_409(self):
        """Binding, 409: "MUST be returned if a Service Binding with the same id, for the same
        Service Instance, already exists or is being created but with different parameters";
        0004: same id, different request."""
        iid = self.provisioned(FAST)
        bid, created = self.bound(iid, parameters={"size": 1})
        variants = [
            bind_body(FAST, parameters={"size": 2}),
            bind_body(FAST, parameters=None),
            bind_body(FAST, parameters={"size": 1}, context={"platform": "other"}),
            bind_body(FAST, parameters={"size": 1}, context=None),
            bind_body(FAST, parameters={"size": 1}, bind_resource={"app_guid": "app-guid-2"}),
            bind_body(FAST, parameters={"size": 1}, bind_resource=None),
            bind_body(FAST, parameters={"size": 1}, app_guid=APP_GUID),
        ]
        for body in variants:
            for version in VERSIONS:
                for incomplete in (None, True):
                    self.assertRefused(iid, bid, lambda: self.bind(iid, bid, body, incomplete,
                                                                   version=version), 409)
        self.assertEqual(self.fetch(iid, bid).json()["credentials"], created["credentials"])
        # While it is being created.
        sid = self.provisioned(SLOW)
        sbid, op = self.bind_async(sid, SLOW, parameters={"size": 1})
        for incomplete in (None, True):
            self.assertRefused(sid, sbid, lambda: self.bind(
                sid, sbid, bind_body(SLOW, parameters={"size": 9}), incomplete, 1), 409)
        self.assertEqual(self.ops_for(sid, sbid), {op})
        self.wait_state(sid, sbid, "succeeded", op)

    def test_bind_422_concurrency_error_while_an_unbind_of_it_runs(self):
        """Binding, 422 / Blocking Operations: ConcurrencyError when the binding is being
        processed by another operation; 0004: an unbind of this binding runs."""
        iid = self.provisioned(UNBIND_SLOW)
        bid, _ = self.bound(iid, UNBIND_SLOW)
        uop = self.assertAccepted(self.unbind(iid, bid, UNBIND_SLOW, True))
        for version in VERSIONS:
            for incomplete in (None, True):
                self.assertRefused(iid, bid, lambda: self.bind(
                    iid, bid, bind_body(UNBIND_SLOW), incomplete, 1, version), 422,
                    "ConcurrencyError")
        self.wait_gone(iid, bid, uop)
        self.bound(iid, UNBIND_SLOW, bid)

    def test_bind_ids_with_key_separators_stay_distinct(self):
        """Request (Creating a Service Binding), Route: binding_id is any non-empty string;
        URL Properties: ids are percent-encoded in URLs; architecture: ids are encoded in
        Redis keys, so instance "a" binding "b:c" and instance "a:b" binding "c" are two
        bindings, and "*" matches nothing else."""
        base = new_id()
        first = self.provisioned(FAST, iid=base)
        second = self.provisioned(FAST, iid=base + ":x")
        _, one = self.bound(first, bid="x:y")
        _, two = self.bound(second, bid="y")
        _, three = self.bound(first, bid="*")
        passwords = {b["credentials"]["password"] for b in (one, two, three)}
        self.assertEqual(len(passwords), 3)
        for iid, bid, body in ((first, "x:y", one), (second, "y", two), (first, "*", three)):
            self.assertEqual(self.fetch(iid, bid).json()["credentials"], body["credentials"])
        self.assertEqual(self.unbind(first, "*").status, 200)
        self.assertEqual(self.fetch(first, "x:y").status, 200)
        self.assertEqual(self.unbind(first, "x:y").status, 200)
        self.assertEqual(self.fetch(second, "y").json()["credentials"], two["credentials"])

    def test_bind_sync_backend_failure_502(self):
        """0004 Bind: sync and the backend fails -> 502 with its description (Service Broker
        Errors: a user-facing message explaining why); the binding does not exist."""
        iid = self.provisioned(FAIL_BIND)
        for version in VERSIONS:
            bid = new_id()
            body = self.assertError(self.bind(iid, bid, bind_body(FAIL_BIND), version=version),
                                    502)
            self.assertIn("fail_on", body["description"])
            self.assertNotIn("credentials", body)
            self.assertEqual(self.binding_record(iid, bid)["state"], "failed")
            self.assertNotIn("result", self.binding_record(iid, bid))
            last = self.last_operation(iid, bid).json()
            self.assertEqual(last["state"], "failed")
            self.assertIn("fail_on", last.get("description", ""))
            self.assertError(self.fetch(iid, bid), 404)
        fid = self.provisioned(FAST)
        body = self.assertError(self.bind(fid, new_id(), bind_body(FAST, parameters={
            "sim_fail": True})), 502)
        self.assertIn("sim_fail", body["description"])

    def test_bind_sync_timeout_504_bind_goes_on(self):
        """0004 Bind: sync and sync_timeout_ms passes -> 504; the bind goes on, its
        last_operation tells its end and the binding is then fetched (Orphan Mitigation)."""
        iid = self.provisioned(SYNC_TIMEOUT)
        bid = new_id()
        started = time.monotonic()
        r = self.bind(iid, bid, bind_body(SYNC_TIMEOUT))
        took = time.monotonic() - started
        self.assertError(r, 504)
        self.assertGreaterEqual(took, 0.25)
        self.assertLess(took, 1.2, "the 504 came long after sync_timeout_ms (300 ms)")
        self.assertEqual(self.last_operation(iid, bid).json()["state"], "in progress")
        self.wait_state(iid, bid, "succeeded")
        fetched = self.assertFetched(self.fetch(iid, bid), SYNC_TIMEOUT)
        r = self.bind(iid, bid, bind_body(SYNC_TIMEOUT))
        self.assertEqual(self.assertBinding(r, 200, SYNC_TIMEOUT)["credentials"],
                         fetched["credentials"])


    def test_bind_null_members_are_absent(self):
        """docs/conformance.md: a JSON null in an optional member is absent: Korifi sends
        "parameters": null (and null context, bind_resource, app_guid) whenever the user gave
        none, and the bind is made, sync and async; the identical request again is the same one."""
        iid = self.provisioned(FAST)
        for incomplete in (None, True):
            bid = new_id()
            body = bind_body(FAST)
            body.update(parameters=None, context=None, app_guid=None)
            r = self.bind(iid, bid, body, incomplete)
            if incomplete:
                self.wait_state(iid, bid, "succeeded", self.assertAccepted(r))
            else:
                self.assertBinding(r, 201, FAST)
            self.assertBinding(self.bind(iid, bid, bind_body(FAST, context=None)), 200, FAST)
        body = bind_body(FAST)
        body["bind_resource"] = None
        self.assertBinding(self.bind(iid, new_id(), body), 201, FAST, route=False)

    def test_bind_async_on_a_service_without_bindings_retrievable_answers_synchronously(self):
        """Binding: the credentials "MUST be returned at least once"; an asynchronous binding is
        read only by fetching it (Polling Last Operation for Service Bindings: "it can then
        immediately be fetched"), which such a service does not allow: its binds answer 201 with
        the credentials even when the platform accepts 202 (and its bind_async_required plans are
        refused by the catalog check)."""
        iid = self.provisioned(HIDDEN)
        bid = new_id()
        body = self.assertBinding(self.bind(iid, bid, bind_body(HIDDEN), True), 201, HIDDEN)
        self.assertIn("password", body["credentials"])
        r = self.unbind(iid, bid, HIDDEN, True)
        self.assertEqual(r.status, 202, r.body)


# =====================================================================================
class BindingFields(BindingTestCase):
    """0004, after the table: which fields a binding carries, by service and version."""

    def test_bind_fields_gated_by_requires(self):
        """Binding, Body / Types of Binding: syslog_drain_url, route_service_url and
        volume_mounts need "requires" to list syslog_drain, route_forwarding, volume_mount
        ("or the Platform can consider the response invalid"); Log Drain and Volume Services
        responses MUST include them; so each is present exactly when the service requires it,
        in the 201, the re-PUT 200 and the fetch."""
        for plan in (FAST, SYSLOG, ROUTE, VOLUME, HIDDEN):
            iid = self.provisioned(plan)
            for version in VERSIONS:
                bid, created = self.bound(iid, plan, version=version)
                r = self.bind(iid, bid, bind_body(plan), None, 1, version)
                self.assertEqual(self.assertBinding(r, 200, plan, version), created)
                if plan != HIDDEN and api(version) >= 214:
                    fetched = self.assertFetched(self.fetch(iid, bid, 0, version), plan,
                                                 version)
                    self.assertEqual(fetched, created)
            # Asynchronous: nothing but the operation in the 202, every field in the fetch;
            # a binding that cannot be fetched is answered synchronously instead.
            if plan == HIDDEN:
                self.assertBinding(self.bind(iid, new_id(), bind_body(plan), True), 201, plan)
                continue
            bid, op = self.bind_async(iid, plan)
            self.wait_state(iid, bid, "succeeded", op)
            self.assertFetched(self.fetch(iid, bid), plan)

    def test_bind_route_service_url_from_2_8_volume_mounts_from_2_10(self):
        """0004: route_service_url (2.8+) and volume_mounts (2.10+) only for platforms that
        know them; the stored binding keeps them for newer requests."""
        rid = self.provisioned(ROUTE)
        for version, present in (("2.7", False), ("2.8", True)):
            bid, body = self.bound(rid, ROUTE, version=version)
            self.assertEqual("route_service_url" in body, present, body)
            self.assertIn("route_service_url", self.fetch(rid, bid).json())
        # Route Services: the address comes in bind_resource.route; sim gives a
        # route_service_url only for one (the job carries bind_resource to the backend).
        bid, body = self.bound(rid, ROUTE, bind_resource={"app_guid": APP_GUID})
        self.assertNotIn("route_service_url", self.fetch(rid, bid).json())
        vid = self.provisioned(VOLUME)
        for version, present in (("2.9", False), ("2.10", True)):
            bid, body = self.bound(vid, VOLUME, version=version)
            self.assertEqual("volume_mounts" in body, present, body)
            self.assertIn("volume_mounts", self.fetch(vid, bid).json())

    def test_bind_credentials_never_in_202(self):
        """Binding, 202: "Information regarding the Service Binding (i.e. credentials) MUST NOT
        be returned in this response", for the first 202 and every re-sent PUT, for every
        kind of binding that can be fetched (the others are bound synchronously)."""
        for plan in (FAST, SYSLOG, ROUTE, VOLUME, ROTATABLE):
            iid = self.provisioned(plan)
            bid, op = self.bind_async(iid, plan)      # assertAccepted: {"operation"} only
            self.wait_state(iid, bid, "succeeded", op)
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW)
        for _ in range(3):
            self.assertEqual(self.assertAccepted(self.bind(iid, bid, bind_body(SLOW), True)), op)

    def test_bind_endpoints_from_2_15(self):
        """Binding, Body: endpoints; 0004: from 2.15, in the 201, 200 and fetch alike (Endpoint
        Object: host, non-empty ports, protocol tcp/udp/all)."""
        iid = self.provisioned(FAST)
        bid, body = self.bound(iid, version="2.14")
        self.assertNotIn("endpoints", body)
        self.assertNotIn("endpoints", self.fetch(iid, bid, version="2.14").json())
        fetched = self.assertFetched(self.fetch(iid, bid, version="2.15"), FAST, "2.15")
        self.assertIn("endpoints", fetched)
        bid2, body2 = self.bound(iid, version="2.15")
        self.assertIn("endpoints", body2)
        r = self.bind(iid, bid2, bind_body(FAST), version="2.14")
        self.assertNotIn("endpoints", self.assertBinding(r, 200, FAST, "2.14"))

    def test_bind_metadata_from_binding_ttl_s_2_16_plus(self):
        """Binding Metadata Object: expires_at and renew_before follow yyyy-mm-ddThh:mm:ss.sZ
        and renew_before <= expires_at; 0004: metadata from 2.16; README binding_ttl_s: now +
        ttl and now + 80%."""
        iid = self.provisioned(ROTATABLE)
        for version in ("2.16", "2.17"):
            made = datetime.datetime.now(datetime.timezone.utc)
            bid, body = self.bound(iid, ROTATABLE, version=version)
            self.assertMetadata(body["metadata"], 3600, made)
            fetched = self.fetch(iid, bid, version=version).json()
            self.assertEqual(fetched["metadata"], body["metadata"])
            r = self.bind(iid, bid, bind_body(ROTATABLE), True, 1, version)
            self.assertEqual(self.assertBinding(r, 200, ROTATABLE, version)["metadata"],
                             body["metadata"])
            self.assertNotIn("metadata", self.fetch(iid, bid, version="2.15").json())
        for version in ("2.12", "2.14", "2.15"):
            bid, body = self.bound(iid, ROTATABLE, version=version)   # exact fields: none
            self.assertIn("metadata", self.fetch(iid, bid, version="2.16").json())
        bid, op = self.bind_async(iid, ROTATABLE, version="2.16")
        self.wait_state(iid, bid, "succeeded", op)
        self.assertMetadata(self.fetch(iid, bid, version="2.16").json()["metadata"], 3600)
        # A plan without binding_ttl_s gives no metadata (assertBinding: exact fields).
        self.bound(self.provisioned(FAST), FAST, version="2.17")


if __name__ == "__main__":
    unittest.main()
