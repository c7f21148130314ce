"""Reading a service binding: GET .../service_bindings/:binding_id and its last_operation, end
to end (harness_bindings.py)."""

import unittest

from harness_bindings import (
    BindingTestCase, FAIL_BIND, FAST, HIDDEN, RETRY_AFTER_MAX_S, RETRY_AFTER_MIN_S, SHORT, SLOW,
    new_id)


class Fetching(BindingTestCase):
    """0004, Fetch (2.14+)."""

    def test_fetch_404_unknown_binding(self):
        """Fetching a Service Binding, 404: "MUST be returned if the Service Binding does not
        exist" (also the binding of another instance)."""
        iid = self.provisioned(FAST)
        other = self.provisioned(FAST)
        elsewhere, _ = self.bound(other)
        for target_iid, target_bid in ((iid, new_id()), (new_id(), new_id()), (iid, elsewhere)):
            for gw in (0, 1):
                self.assertRefused(target_iid, target_bid,
                                   lambda: self.fetch(target_iid, target_bid, gw), 404)

    def test_fetch_404_while_binding_in_progress(self):
        """Fetching a Service Binding, 404: "... or if a binding operation is still in
        progress"."""
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW)
        for version in ("2.14", "2.17"):
            for gw in (0, 1):
                self.assertError(self.fetch(iid, bid, gw, version), 404)
        self.wait_state(iid, bid, "succeeded", op)
        self.assertEqual(self.fetch(iid, bid).status, 200)

    def test_fetch_404_after_failed_bind(self):
        """0004 Fetch: 404 when the bind failed."""
        iid = self.provisioned(FAIL_BIND)
        bid, op = self.bind_async(iid, FAIL_BIND)
        self.wait_state(iid, bid, "failed", op)
        self.assertError(self.fetch(iid, bid), 404)

    def test_fetch_404_after_unbind(self):
        """0004 Fetch: 404 once unbound, sync or async."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        self.assertEqual(self.unbind(iid, bid).status, 200)
        self.assertError(self.fetch(iid, bid), 404)
        bid, _ = self.bound(iid)
        op = self.assertAccepted(self.unbind(iid, bid, FAST, True))
        self.wait_gone(iid, bid, op)
        self.assertError(self.fetch(iid, bid, 1), 404)

    def test_fetch_400_service_without_bindings_retrievable(self):
        """Fetching a Service Binding: brokers MUST support it when bindings_retrievable is
        declared; 0004: 400 when the service does not declare it."""
        iid = self.provisioned(HIDDEN)
        bid, _ = self.bound(iid, HIDDEN)
        for version in ("2.14", "2.17"):
            self.assertRefused(iid, bid, lambda: self.fetch(iid, bid, version=version), 400)

    def test_fetch_200_binding_with_parameters(self):
        """Fetching a Service Binding, Body: the binding's fields plus parameters; 0004: the
        binding as above plus parameters, credentials the same as in the 201."""
        iid = self.provisioned(FAST)
        bid, created = self.bound(iid, parameters={"billing": "abc", "n": [1, 2]})
        for gw in (0, 1):
            r = self.fetch(iid, bid, gw)
            self.assertEqual(r.status, 200, r.body)
            body = r.json()
            self.assertEqual(body.pop("parameters"), {"billing": "abc", "n": [1, 2]})
            self.assertEqual(body, created)

    def test_fetch_available_immediately_after_last_operation_succeeded(self):
        """Fetching a Service Binding: "this endpoint MUST be available immediately after the
        Polling Last Operation for Service Bindings endpoint returns succeeded"."""
        iid = self.provisioned(SHORT)
        for gw in (0, 1):
            bid, op = self.bind_async(iid, SHORT, gw=gw)
            self.wait_state(iid, bid, "succeeded", op, gw=gw)
            self.assertFetched(self.fetch(iid, bid, 1 - gw), SHORT)

    def test_fetch_404_for_api_2_13(self):
        """0004 Fetch: an endpoint of 2.14; older platforms lack it (404)."""
        self.assertEndpointSince214(self.fetch)


# =====================================================================================
class LastOperation(BindingTestCase):
    """0004, last_operation of a binding (2.14+)."""

    def test_binding_last_operation_404_unknown_binding(self):
        """Polling Last Operation for Service Bindings, 404: "MUST be returned if the Service
        Binding being polled does not exist" (unknown binding, unknown instance, the binding
        of another instance)."""
        iid = self.provisioned(FAST)
        other = self.provisioned(FAST)
        elsewhere, _ = self.bound(other)
        for target_iid, target_bid in ((iid, new_id()), (new_id(), new_id()), (iid, elsewhere)):
            for version in ("2.14", "2.17"):
                self.assertRefused(target_iid, target_bid, lambda: self.last_operation(
                    target_iid, target_bid, version=version), 404)

    def test_binding_last_operation_410_after_async_unbind_finished(self):
        """Polling Last Operation for Service Bindings, 410: "Appropriate only for asynchronous
        delete operations. The Platform MUST consider this response a success"; 0004: 410 once
        an unbind has succeeded."""
        iid = self.provisioned(SHORT)
        bid, _ = self.bound(iid, SHORT)
        op = self.assertAccepted(self.unbind(iid, bid, SHORT, True))
        self.wait_gone(iid, bid, op)
        for gw in (0, 1):
            self.assertError(self.last_operation(iid, bid, op, gw), 410)
            self.assertError(self.last_operation(iid, bid, None, gw), 410)

    def test_binding_last_operation_400_operation_not_of_this_binding(self):
        """Polling Last Operation for Service Bindings, 400 for invalid data; 0004: an
        operation that is not one of this binding's (another binding's, the instance's)."""
        iid = self.provisioned(FAST)
        a, op_a = self.bind_async(iid, FAST)
        b, op_b = self.bind_async(iid, FAST)
        self.wait_state(iid, a, "succeeded", op_a)
        self.wait_state(iid, b, "succeeded", op_b)
        instance_ops = self.ops_for(iid) - {op_a, op_b}
        self.assertEqual(len(instance_ops), 1)
        for op in (op_b, instance_ops.pop(), "no-such-operation"):
            self.assertRefused(iid, a, lambda: self.last_operation(iid, a, op), 400)
            # The description names binding a's own last operation (issue 22).
            body = self.last_operation(iid, a, op).json()
            self.assertIn('its last operation is "%s"' % op_a, body["description"])

    def test_binding_last_operation_state_description_and_retry_after(self):
        """Polling Last Operation for Service Bindings, Body: state in progress / succeeded,
        a description, and Retry-After (integer seconds, 2.15+ as for instances) while in
        progress; the operation parameter is optional."""
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW)
        for operation in (op, None):
            r = self.last_operation(iid, bid, operation, version="2.17")
            self.assertEqual(r.json()["state"], "in progress")
            self.assertRegex(r.header("Retry-After") or "", r"^[0-9]+$")
            self.assertGreaterEqual(int(r.header("Retry-After")), RETRY_AFTER_MIN_S)
            self.assertLessEqual(int(r.header("Retry-After")), RETRY_AFTER_MAX_S)
            r = self.last_operation(iid, bid, operation, version="2.14")
            self.assertEqual(r.json()["state"], "in progress")
            self.assertIsNone(r.header("Retry-After"))
        body = self.wait_state(iid, bid, "succeeded", op, gw=1)
        self.assertIsInstance(body.get("description"), str)
        self.assertEqual(set(body), {"state", "description"})

    def test_binding_last_operation_failed_bind(self):
        """Polling Last Operation for Service Bindings: state failed with a description;
        Service Broker Errors: instance_usable and update_repeatable "MUST NOT be present for
        errors of other operations"."""
        iid = self.provisioned(FAIL_BIND)
        bid, op = self.bind_async(iid, FAIL_BIND)
        for version in ("2.14", "2.16", "2.17"):
            body = self.wait_state(iid, bid, "failed", op, version=version)
            self.assertIn("fail_on", body.get("description", ""))
            self.assertNotIn("instance_usable", body)
            self.assertNotIn("update_repeatable", body)

    def test_binding_last_operation_404_for_api_2_13(self):
        """0004 last_operation (2.14+): older platforms have no asynchronous bindings."""
        self.assertEndpointSince214(self.last_operation)


    def test_binding_last_operation_404_once_its_instance_was_deprovisioned(self):
        """Polling Last Operation for Service Bindings: 404 "MUST be returned if the Service
        Binding being polled does not exist": a binding that went with its instance's
        deprovision is polled 404, with or without its bind's operation, as its fetch is."""
        iid = self.provisioned(FAST)
        bid, op = self.bind_async(iid, FAST)
        self.wait_state(iid, bid, "succeeded", op)
        r = self.deprovision(iid, FAST)
        self.assertEqual(r.status, 200, r.body)
        for operation in (op, None):
            self.assertError(self.last_operation(iid, bid, operation), 404)
        self.assertError(self.fetch(iid, bid), 404)

if __name__ == "__main__":
    unittest.main()
