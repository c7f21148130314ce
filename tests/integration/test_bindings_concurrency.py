"""Many bindings at once on one instance, and instance operations during binds in flight, end
to end (harness_bindings.py)."""

import time
import unittest

import harness
from harness_bindings import (
    BindingTestCase, FAST, NAMESPACE, SERVICE, SHORT, SLOW, VERSIONS, bind_body, new_id)


class Concurrency(BindingTestCase):
    """0004 Locks: bindings hold their instance shared and themselves exclusively."""

    def test_50_concurrent_binds_of_different_bindings_on_one_instance_all_succeed(self):
        """Blocking Operations: "Brokers MAY choose to treat the creation of a Service Binding
        as a mutation of the corresponding Service Instance"; 0004 chooses not to: 50
        simultaneous binds of different bindings of one instance (threads, both gateways) all
        get 201, each with its own credentials, and run in parallel."""
        iid = self.provisioned(SHORT)
        bids = [new_id() for _ in range(50)]
        started = time.monotonic()
        answers = self.race([lambda n=n, bid=bid: self.bind(iid, bid, bind_body(
            SHORT, parameters={"n": n}), None, n % 2) for n, bid in enumerate(bids)])
        took = time.monotonic() - started
        passwords = set()
        for r in answers:
            passwords.add(self.assertBinding(r, 201, SHORT)["credentials"]["password"])
        self.assertEqual(len(passwords), 50, "credentials shared between bindings")
        # 50 binds of 0.3 s one after another would take 15 s.
        self.assertLess(took, 7.5, "the binds did not run in parallel")
        for n, bid in enumerate(bids[:10]):
            self.assertEqual(self.fetch(iid, bid).json()["parameters"], {"n": n})
        self.assertNotIn("lock_s", harness.redis_hash(self.stack.redis,
                                                       "%s:instance:%s" % (NAMESPACE, iid)))

    def test_two_concurrent_puts_of_the_same_binding_one_runs(self):
        """Blocking Operations and Binding, 202: two simultaneous identical PUTs of one
        binding through both gateways make one operation; the other answer is the idempotent
        one (the same operation, or the same credentials) or 422 ConcurrencyError."""
        iid = self.provisioned(SHORT)
        for _ in range(4):
            bid = new_id()
            answers = self.race([lambda gw=gw: self.bind(iid, bid, bind_body(SHORT), True, gw)
                                 for gw in (0, 1)])
            statuses = sorted(r.status for r in answers)
            self.assertIn(statuses, ([202, 202], [202, 422]), [r.body for r in answers])
            ops = {self.assertAccepted(r) for r in answers if r.status == 202}
            self.assertEqual(len(ops), 1)
            for r in answers:
                if r.status == 422:
                    self.assertError(r, 422, "ConcurrencyError")
            self.assertEqual(self.ops_for(iid, bid), ops)
            # Synchronous: one 201, the other 201/200 with the same credentials, or 422.
            bid = new_id()
            answers = self.race([lambda gw=gw: self.bind(iid, bid, bind_body(SHORT), None, gw)
                                 for gw in (0, 1)])
            statuses = sorted(r.status for r in answers)
            self.assertIn(201, statuses, [r.body for r in answers])
            credentials = []
            for r in answers:
                self.assertIn(r.status, (200, 201, 422), r.body)
                if r.status == 422:
                    self.assertError(r, 422, "ConcurrencyError")
                else:
                    credentials.append(self.assertBinding(r, r.status, SHORT)["credentials"])
            self.assertTrue(all(c == credentials[0] for c in credentials), credentials)
            self.assertEqual(len(self.ops_for(iid, bid)), 1)
            self.assertEqual(self.fetch(iid, bid).json()["credentials"], credentials[0])

    def test_update_or_deprovision_during_binds_in_flight_422_concurrency_error(self):
        """Blocking Operations, 422 ConcurrencyError; 0004: "a provision, update or deprovision
        cannot start while a binding operation runs"; once the binds ended the update goes
        through."""
        iid = self.provisioned(SLOW)
        started = [self.bind_async(iid, SLOW, gw=n % 2) for n in range(3)]
        for version in VERSIONS:
            for incomplete in (None, True):
                r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 2}}, incomplete,
                               1, version)
                self.assertError(r, 422, "ConcurrencyError")
                self.assertError(self.deprovision(iid, SLOW, incomplete, 0, version), 422,
                                 "ConcurrencyError")
        self.assertEqual(len(self.ops_for(iid, "")), 1, "a refused update left an operation")
        for bid, op in started:
            self.wait_state(iid, bid, "succeeded", op)
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 2}})
        self.assertEqual(r.status, 200, r.body)
        # An unbind in flight holds the instance too.
        bid = started[0][0]
        uop = self.assertAccepted(self.unbind(iid, bid, SLOW, True))
        self.assertError(self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 3}}), 422,
                         "ConcurrencyError")
        self.wait_gone(iid, bid, uop)

    def test_100_bindings_on_one_instance_created_fetched_and_deleted_in_sequence(self):
        """Binding, Fetching a Service Binding, Unbinding: 100 bindings of one instance made
        one after another (both gateways), each fetched with its own credentials, each deleted;
        afterwards none is left."""
        iid = self.provisioned(FAST)
        made = {}
        for n in range(100):
            bid = "b-%03d-%s" % (n, new_id())
            r = self.bind(iid, bid, bind_body(FAST, parameters={"n": n}), None, n % 2)
            self.assertEqual(r.status, 201, r.body)
            made[bid] = r.json()["credentials"]
        self.assertEqual(len({c["password"] for c in made.values()}), 100)
        members = self.stack.redis.command("SMEMBERS", "%s:bindings:%s" % (NAMESPACE, iid))
        self.assertEqual(len(members), 100)
        for n, (bid, creds) in enumerate(made.items()):
            r = self.fetch(iid, bid, (n + 1) % 2)
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json()["credentials"], creds)
            self.assertEqual(r.json()["parameters"], {"n": n})
        for n, bid in enumerate(made):
            r = self.unbind(iid, bid, FAST, None, n % 2)
            self.assertEqual((r.status, r.json()), (200, {}))
        for bid in list(made)[::10]:
            self.assertError(self.fetch(iid, bid), 404)
        self.assertEqual(self.stack.redis.command("SCARD", "%s:bindings:%s" % (NAMESPACE, iid)), 0)
        r = self.deprovision(iid, FAST)
        self.assertEqual(r.status, 200, r.body)


if __name__ == "__main__":
    unittest.main()
