"""Deleting a service binding (DELETE .../service_bindings/:binding_id), and deprovisioning an
instance that still has bindings, end to end (harness_bindings.py)."""

import time
import unittest

import harness
from harness_bindings import (
    ASYNC_ONLY, BindingTestCase, FAIL_BIND, FAIL_UNBIND, FAST, FAST_OTHER, NAMESPACE, ROTATABLE,
    SERVICE, SLOW, SLOW_CHANGE, UNBIND_SLOW, VERSIONS, bind_body, new_id)


class Unbinding(BindingTestCase):
    """0004, Unbind."""

    def test_unbind_410_unknown_or_already_unbound_binding(self):
        """Unbinding, 410: "MUST be returned if the Service Binding does not exist"; 0004:
        unknown or already unbound."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        self.assertEqual(self.unbind(iid, bid).status, 200)
        other = self.provisioned(FAST)
        elsewhere, _ = self.bound(other)
        for target_iid, target_bid in ((iid, new_id()), (new_id(), new_id()), (iid, bid),
                                       (iid, elsewhere)):
            for version in VERSIONS:
                for incomplete in (None, True):
                    self.assertRefused(target_iid, target_bid, lambda: self.unbind(
                        target_iid, target_bid, FAST, incomplete, 1, version), 410)
        self.assertEqual(self.fetch(other, elsewhere).status, 200)

    def test_unbind_422_async_required(self):
        """Unbinding, 422: "MUST also be returned if the Service Broker only supports
        asynchronous unbinding ... and the request did not include ?accepts_incomplete=true",
        error AsyncRequired; 0004: bind_async_required, also below 2.14."""
        iid = self.provisioned(ASYNC_ONLY)
        bid, op = self.bind_async(iid, ASYNC_ONLY)
        self.wait_state(iid, bid, "succeeded", op)
        for version in VERSIONS:
            for incomplete in (None, False):
                self.assertRefused(iid, bid, lambda: self.unbind(
                    iid, bid, ASYNC_ONLY, incomplete, version=version), 422, "AsyncRequired")
        for version in ("2.12", "2.13"):
            self.assertRefused(iid, bid, lambda: self.unbind(
                iid, bid, ASYNC_ONLY, True, version=version), 422, "AsyncRequired")
        self.assertEqual(self.fetch(iid, bid).status, 200)
        uop = self.assertAccepted(self.unbind(iid, bid, ASYNC_ONLY, True, version="2.14"))
        self.wait_gone(iid, bid, uop)

    def test_unbind_while_a_bind_of_it_runs_halts_the_bind(self):
        """Unbinding during the bind (decision 0051, as Deprovisioning's "halting the current
        creation process"): 202, the bind ends failed (halted) unless it ended first, the unbind
        succeeds, and the binding is gone either way; a re-sent unbind is the same one."""
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW)
        uop = self.assertAccepted(self.unbind(iid, bid, SLOW, True))
        self.assertEqual(self.assertAccepted(self.unbind(iid, bid, SLOW, True, 1)), uop)
        ended = self.wait_done(iid, bid, op).json()
        if ended["state"] == "failed":
            self.assertIn("Halted", ended.get("description", ""))
        else:  # the bind ended before the unbind reached Redis
            self.assertEqual(ended["state"], "succeeded", ended)
        self.wait_gone(iid, bid, uop)
        self.assertError(self.fetch(iid, bid), 404)
        self.assertNotIn("result", self.binding_record(iid, bid))

    def test_unbind_422_concurrency_error_while_an_instance_operation_runs(self):
        """Blocking Operations, ConcurrencyError; 0004: an instance operation (update,
        deprovision) runs."""
        updating = self.provisioned(SLOW_CHANGE)
        ubid, _ = self.bound(updating, SLOW_CHANGE)
        r = self.patch(updating, {"service_id": SERVICE, "parameters": {"v": 2}}, True)
        self.assertEqual(r.status, 202, r.body)
        update_op = r.json()["operation"]
        deprovisioning = self.provisioned(SLOW_CHANGE)
        dbid, _ = self.bound(deprovisioning, SLOW_CHANGE)
        r = self.deprovision(deprovisioning, SLOW_CHANGE, True)
        self.assertEqual(r.status, 202, r.body)
        for iid, bid in ((updating, ubid), (deprovisioning, dbid)):
            refused = 0
            for version in VERSIONS:
                for incomplete in (None, True):
                    # On a loaded machine the 1.5 s operation may end before every case ran.
                    if "lock_x" not in harness.redis_hash(self.stack.redis,
                                                          NAMESPACE + ":instance:" + iid):
                        break
                    self.assertRefused(iid, bid, lambda: self.unbind(
                        iid, bid, SLOW_CHANGE, incomplete, 0, version), 422, "ConcurrencyError")
                    refused += 1
            self.assertGreater(refused, 0)
        self.wait_instance(updating, update_op)
        r = self.unbind(updating, ubid, SLOW_CHANGE)
        self.assertEqual(r.status, 200, r.body)

    def test_unbind_resent_during_unbind_202_same_operation(self):
        """Unbinding, 202: "The operation string MUST match that returned for the original
        request" and "a re-sent DELETE request MUST return a 202 Accepted, not a 200 OK, if
        the unbinding request has not completed yet"; 0004: a sync re-send waits for it."""
        iid = self.provisioned(UNBIND_SLOW)
        bid, _ = self.bound(iid, UNBIND_SLOW)
        op = self.assertAccepted(self.unbind(iid, bid, UNBIND_SLOW, True))
        for version in ("2.14", "2.17"):
            for gw in (0, 1):
                r = self.unbind(iid, bid, UNBIND_SLOW, True, gw, version)
                self.assertEqual(self.assertAccepted(r), op)
        self.assertEqual(self.last_operation(iid, bid, op).json()["state"], "in progress")
        started = time.monotonic()
        r = self.unbind(iid, bid, UNBIND_SLOW, None, 1)
        self.assertGreater(time.monotonic() - started, 0.3, "answered before the unbind ended")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})
        self.assertEqual(len(self.ops_for(iid, bid)), 2)
        self.wait_gone(iid, bid, op)

    def test_unbind_of_a_binding_whose_bind_failed_is_allowed(self):
        """Orphan Mitigation: a failed bind may leave resources the platform cleans up with an
        unbind; 0004: allowed, sync and async."""
        iid = self.provisioned(FAIL_BIND)
        bid = new_id()
        self.assertError(self.bind(iid, bid, bind_body(FAIL_BIND)), 502)
        r = self.unbind(iid, bid, FAIL_BIND)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})
        self.assertError(self.unbind(iid, bid, FAIL_BIND), 410)
        bid2, op = self.bind_async(iid, FAIL_BIND)
        self.wait_state(iid, bid2, "failed", op)
        uop = self.assertAccepted(self.unbind(iid, bid2, FAIL_BIND, True))
        self.wait_gone(iid, bid2, uop)

    def test_unbind_sync_200_empty_object(self):
        """Unbinding, 200: "MUST be returned if the Service Binding was deleted as a result of
        this request. The expected response body is {}"; the credentials are deleted."""
        iid = self.provisioned(FAST)
        for version in VERSIONS:
            for incomplete in (None, False):
                bid, body = self.bound(iid)
                password = body["credentials"]["password"]
                r = self.unbind(iid, bid, FAST, incomplete, 1, version)
                self.assertEqual(r.status, 200, r.body)
                self.assertEqual(r.json(), {})
                self.assertError(self.fetch(iid, bid), 404)
                self.assertEqual(self.binding_record(iid, bid)["state"], "gone")
                self.assertEqual(harness.redis_find(self.stack.redis, password), [])
        # 2.12 has no asynchronous unbinds: accepts_incomplete=true still gets the 200.
        bid, _ = self.bound(iid)
        r = self.unbind(iid, bid, FAST, True, version="2.12")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})

    def test_unbind_async_202_operation(self):
        """Asynchronous Operations / Unbinding, 202 with operation (2.14+); the platform polls
        last_operation until 410 Gone (Polling Last Operation for Service Bindings)."""
        iid = self.provisioned(UNBIND_SLOW)
        for version in ("2.14", "2.17"):
            bid, _ = self.bound(iid, UNBIND_SLOW)
            op = self.assertAccepted(self.unbind(iid, bid, UNBIND_SLOW, True, version=version))
            r = self.last_operation(iid, bid, op, 1, version)
            self.assertEqual(r.json()["state"], "in progress", r.body)
            self.assertEqual(self.fetch(iid, bid).status, 200)
            self.wait_gone(iid, bid, op)
            self.assertError(self.fetch(iid, bid), 404)

    def test_unbind_backend_failure_502_binding_stays(self):
        """0004 Bind/Unbind: a synchronous failure of the backend -> 502 with its description;
        Unbinding: "the Platform MUST continue to remember the Service Binding", which stays
        bound with its credentials (async: last_operation failed)."""
        iid = self.provisioned(FAIL_UNBIND)
        bid, body = self.bound(iid, FAIL_UNBIND)
        failed = self.assertError(self.unbind(iid, bid, FAIL_UNBIND), 502)
        self.assertIn("fail_on", failed["description"])
        self.assertEqual(self.fetch(iid, bid).json()["credentials"], body["credentials"])
        op = self.assertAccepted(self.unbind(iid, bid, FAIL_UNBIND, True))
        self.wait_state(iid, bid, "failed", op)
        self.assertEqual(self.fetch(iid, bid).json()["credentials"], body["credentials"])
        r = self.bind(iid, bid, bind_body(FAIL_UNBIND))
        self.assertEqual(self.assertBinding(r, 200, FAIL_UNBIND)["credentials"],
                         body["credentials"])


    def test_unbind_after_a_plan_change_takes_either_plan(self):
        """Unbinding, Parameters: plan_id is "ID of the Service Plan from the catalog"; after the
        instance changed plans, platforms differ (Kubernetes' service catalog sends the current
        plan): either the plan the binding was made with or the instance's plan now is
        accepted; another plan gets 400 that says which are."""
        iid = self.provisioned(FAST)
        old_plan, now_plan = new_id(), new_id()
        for bid in (old_plan, now_plan):
            self.bound(iid, FAST, bid=bid)
        r = self.patch(iid, {"service_id": SERVICE, "plan_id": FAST_OTHER})
        self.assertEqual(r.status, 200, r.body)
        body = self.assertError(self.unbind(iid, old_plan, SLOW), 400)
        self.assertIn("plan it was made with", body["description"])
        self.assertEqual(self.unbind(iid, old_plan, FAST).status, 200)
        self.assertEqual(self.unbind(iid, now_plan, FAST_OTHER).status, 200)

# =====================================================================================
class InstancesWithBindings(BindingTestCase):
    """0004, "Deprovisioning an instance that still has bindings", and where credentials
    live."""

    def test_deprovision_with_live_bindings_succeeds_and_its_bindings_are_gone(self):
        """Deprovisioning: the spec says platforms delete bindings first and leaves the
        broker's answer open; 0004: the deprovision is accepted and, when it succeeds, its
        bindings are gone (fetch 404, unbind 410) and their credentials deleted."""
        for plan, incomplete in ((FAST, None), (SLOW_CHANGE, True)):
            iid = self.provisioned(plan)
            bindings = [self.bound(iid, plan) for _ in range(3)]
            r = self.deprovision(iid, plan, incomplete)
            if incomplete:
                self.assertEqual(r.status, 202, r.body)
                op = r.json()["operation"]
                bid = bindings[0][0]
                # While it runs, no binding operation starts.
                self.assertError(self.bind(iid, new_id(), bind_body(plan)), 422,
                                 "ConcurrencyError")
                self.assertError(self.unbind(iid, bid, plan), 422, "ConcurrencyError")
                self.wait_instance(iid, op, "gone")
            else:
                self.assertEqual((r.status, r.json()), (200, {}))
            for bid, body in bindings:
                self.assertError(self.fetch(iid, bid), 404)
                self.assertError(self.unbind(iid, bid, plan), 410)
                record = self.binding_record(iid, bid)
                self.assertEqual(record.get("state"), "gone")
                self.assertNotIn("result", record)
                self.assertEqual(harness.redis_find(self.stack.redis,
                                                    body["credentials"]["password"]), [])
            self.assertEqual(self.stack.redis.command("EXISTS", "%s:bindings:%s"
                                                      % (NAMESPACE, iid)), 0)
            self.assertError(self.bind(iid, bindings[0][0], bind_body(plan)), 404)

    def test_credentials_stored_only_in_the_bindings_result_field(self):
        """0004: "Credentials are stored once per binding, in the result field of its hash":
        after a sync bind, an async bind, re-PUTs and fetches, each password occurs in exactly
        one field of one key (ns:binding:<instance>:<binding> -> result), and in no log."""
        iid = self.provisioned(ROTATABLE)
        sync_bid, sync_body = self.bound(iid, ROTATABLE)
        async_bid, op = self.bind_async(iid, ROTATABLE)
        self.wait_state(iid, async_bid, "succeeded", op)
        rotated, rotated_body = self.bound(iid, ROTATABLE, predecessor_binding_id=sync_bid)
        async_body = self.fetch(iid, async_bid).json()
        for bid in (sync_bid, async_bid, rotated):
            for gw in (0, 1):
                self.assertEqual(self.bind(iid, bid, bind_body(
                    ROTATABLE, predecessor_binding_id=sync_bid if bid == rotated else None),
                    None, gw).status, 200)
                self.assertEqual(self.fetch(iid, bid, gw).status, 200)
        self.wait_quiet()
        for bid, body in ((sync_bid, sync_body), (async_bid, async_body),
                          (rotated, rotated_body)):
            password = body["credentials"]["password"]
            self.assertEqual(harness.redis_find(self.stack.redis, password),
                             [(self.binding_key(iid, bid), "result")])
            for p in self.gateways + self.workers:
                self.assertNotIn(password, p.log(), "%s logged a password" % p.name)
        self.assertEqual(self.unbind(iid, sync_bid, ROTATABLE).status, 200)
        self.assertEqual(harness.redis_find(self.stack.redis,
                                            sync_body["credentials"]["password"]), [])


if __name__ == "__main__":
    unittest.main()
