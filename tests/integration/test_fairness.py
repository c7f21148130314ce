"""Tenants share the workers fairly (issue 28, docs/reliability.md "Fairness"): inside each of
the dispatcher's lanes the tenants with jobs waiting take turns, so one organization's backlog
is not another's wait. Each test starts its own redis-server, gateway and worker on loopback
(one worker with 2 slots), gives organization A a backlog of 2-s steps that each keep a runner
busy, then sends organization B's instant provision. Every wait is bounded."""

import json
import time
import unittest

import harness
from test_faults import (FAST, MEDIUM, MEDIUM_S, NAMESPACE, SERVICE, SLACK_S, FaultTestCase,
                         ipath, new_id)

SLOTS = 2
BACKLOG = 16  # A's provisions: BACKLOG / SLOTS * MEDIUM_S = 16 s of work


def body(plan, org):
    return {"service_id": SERVICE, "plan_id": plan,
            "context": {"platform": "cloudfoundry", "organization_guid": org,
                        "space_guid": "space-1"},
            "organization_guid": org, "space_guid": "space-1"}


class TwoOrganizations(FaultTestCase):

    def start(self, **env):
        stack = self.make_stack(**env)
        gw = stack.start_gateway()
        stack.start_worker(OSBQ_WORKER_CONCURRENCY=str(SLOTS))
        harness.wait_workers_connected([gw], 1)
        self.gw = gw
        return gw

    def backlog_then_newcomer(self, gw):
        """A's BACKLOG provisions, then B's instant one; returns (A's instance ids, B's instance
        id, seconds from B's acceptance to its end)."""
        c = self.client(gw)
        a_ids = []
        for _ in range(BACKLOG):
            iid = new_id()
            r = c.request("PUT", ipath(iid, incomplete=True), body(MEDIUM, "org-a"))
            self.assertEqual(r.status, 202, r.body)
            a_ids.append(iid)
        b_id = new_id()
        started = time.monotonic()
        r = c.request("PUT", ipath(b_id, incomplete=True), body(FAST, "org-b"))
        self.assertEqual(r.status, 202, r.body)
        done = self.wait_ended(c, b_id, BACKLOG * MEDIUM_S + SLACK_S * 3)
        self.assertEqual(done["state"], "succeeded", done)
        return a_ids, b_id, time.monotonic() - started

    def wait_all(self, ids):
        c = self.client(self.gw)
        for iid in ids:
            done = self.wait_ended(c, iid, BACKLOG * MEDIUM_S / SLOTS + SLACK_S * 3)
            self.assertEqual(done["state"], "succeeded", done)

    def tenants(self):
        """{operation's tenant: count} of the operations still carrying one (running or
        waiting: a finished operation drops it with its job)."""
        text = self.stack.redis.command(
            "EVAL", "local out = {} for _, k in ipairs(redis.call('KEYS', ARGV[1])) do "
            "local t = redis.call('HGET', k, 'tenant') if t then out[t] = (out[t] or 0) + 1 end "
            "end return cjson.encode(out)", 0, NAMESPACE + ":op:*")
        return json.loads(text)

    def test_1_b_does_not_wait_for_a_backlog(self):
        """Organizations are tenants (the default OSBQ_TENANT_KEY): B's instant provision ends
        within one of A's steps (2 s) plus slack, while A's backlog holds 16 s of work; A's
        provisions all end; A's waiting operations are recorded as A's."""
        gw = self.start()
        a_ids, b_id, took = self.backlog_then_newcomer(gw)
        self.assertLess(took, MEDIUM_S + SLACK_S,
                        "B waited %.1f s behind A's backlog of %d s"
                        % (took, BACKLOG * MEDIUM_S / SLOTS))
        self.assertEqual(set(self.tenants()), {"default/org-a"})
        self.wait_all(a_ids)
        inst = self.stack.redis.command("HGET", "%s:instance:%s" % (NAMESPACE, b_id), "tenant")
        self.assertEqual(inst, "default/org-b")

    def test_2_one_tenant_per_platform_keeps_first_come_first_served(self):
        """OSBQ_TENANT_KEY=platform: A and B are one tenant, whose jobs keep their order: B's
        provision waits for A's backlog (what every tenant did before tenants were)."""
        gw = self.start(OSBQ_TENANT_KEY="platform")
        a_ids, _, took = self.backlog_then_newcomer(gw)
        self.assertGreater(took, BACKLOG * MEDIUM_S / SLOTS - 2 * MEDIUM_S,
                           "B did not wait for the backlog of its own tenant")
        self.wait_all(a_ids)


if __name__ == "__main__":
    unittest.main()
