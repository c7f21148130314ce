"""Tenants share the workers fairly (issue 28, docs/reliability.md "Fairness"): inside each of
the dispatcher's lanes the tenants with jobs waiting take turns, so one organization's backlog
is not another's wait. Each test starts its own redis-server, gateway and worker on loopback
(one worker with 2 slots), gives organization A a backlog of 2-s steps that each keep a runner
busy, then sends organization B's instant provision; test_3 weighs two platforms 3 to 1; test_4
SIGKILLs the worker while both organizations' steps wait for it; test_5 does test_1 with
synchronous requests, which wait for a slot before they begin (decision 0045). Every wait is
bounded."""

import json
import os
import re
import shutil
import signal
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

import harness
from test_faults import (FAST, LEASE_S, MEDIUM, MEDIUM_S, NAMESPACE, RECOVERY_INTERVAL_S, SERVICE,
                         SLACK_S, FaultTestCase, ipath, new_id)

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

    def test_5_sync_requests_wait_for_a_slot_in_their_tenant_s_turn(self):
        """Synchronous requests that find every slot taken wait for one before they begin
        (decision 0045), each in its tenant's turn: while A's 16 synchronous provisions of 2-s
        steps hold 16 s of work for the 2 slots, only those holding a slot are recorded in Redis,
        and B's synchronous instant provision, then its deprovision (whose tenant the gateway
        learned from the provision), each end within one of A's steps plus slack; all of A's
        end."""
        gw = self.start()
        metrics = harness.MetricsScraper(gw.port)
        self.addCleanup(metrics.close)
        a_ids = [new_id() for _ in range(BACKLOG)]

        def provision(iid, org, plan):
            # The last of A's waits for 14 s of the others' steps.
            c = self.stack.client(gw, timeout_s=BACKLOG * MEDIUM_S + SLACK_S * 3)
            try:
                return c.request("PUT", ipath(iid), body(plan, org)).status
            finally:
                c.close()

        with ThreadPoolExecutor(BACKLOG) as pool:
            a = [pool.submit(provision, iid, "org-a", MEDIUM) for iid in a_ids]
            harness.wait_until(
                lambda: harness.metric_value(metrics.samples(), "osbq_jobs_queued")
                >= BACKLOG - SLOTS, SLACK_S, "A's requests to wait for a slot")
            begun = len(self.stack.redis.keys("%s:instance:*" % NAMESPACE))
            # Two hold the slots; a step may have ended meanwhile on a slow machine.
            self.assertLessEqual(begun, 2 * SLOTS, "A's waiting requests were begun")
            b_id = new_id()
            c = self.client(gw)
            started = time.monotonic()
            self.assertEqual(provision(b_id, "org-b", FAST), 201)
            took_provision = time.monotonic() - started
            started = time.monotonic()
            r = c.request("DELETE", ipath(b_id) + "?service_id=%s&plan_id=%s" % (SERVICE, FAST))
            self.assertEqual(r.status, 200, r.body)
            took_deprovision = time.monotonic() - started
            for took in (took_provision, took_deprovision):
                self.assertLess(took, MEDIUM_S + SLACK_S,
                                "B waited %.1f s behind A's requests" % took)
            self.assertEqual([f.result(timeout=BACKLOG * MEDIUM_S + SLACK_S * 3) for f in a],
                             [201] * BACKLOG)


class WeightedPlatforms(FaultTestCase):

    PER_TENANT = 24

    def test_3_weights_share_the_slots_3_to_1(self):
        """Two platforms of weights 3 and 1 (OSBQ_PLATFORMS), each a tenant with 24 provisions
        waiting before any worker is there; one worker with one slot then takes them: of the
        first 24 it runs, the heavy tenant's are 18 (3 of every 4), within one round."""
        d = tempfile.mkdtemp(prefix="osbq-weights-")
        self.addCleanup(shutil.rmtree, d, True)
        platforms = []
        for name, weight in (("heavy", 3), ("light", 1)):
            with open(os.path.join(d, name + "-password"), "w") as f:
                f.write("pw-%s\n" % name)
            platforms.append({"name": name, "prefix": "/" + name, "weight": weight,
                              "basic": {"username": name, "password_file": name + "-password"}})
        with open(os.path.join(d, "platforms.json"), "w") as f:
            json.dump({"platforms": platforms}, f)
        stack = self.make_stack(OSBQ_CLAIM_TIMEOUT_MS="2000")
        gw = stack.start_gateway(OSBQ_PLATFORMS=os.path.join(d, "platforms.json"),
                                 OSBQ_BROKER_USERNAME=None, OSBQ_BROKER_PASSWORD=None)
        platform_of = {}
        for name in ("heavy", "light"):
            c = harness.Client(gw.port, name, "pw-" + name)
            try:
                for _ in range(self.PER_TENANT):
                    iid = new_id()
                    r = c.request("PUT", "/" + name + ipath(iid, incomplete=True),
                                  body(FAST, "org-" + name))
                    self.assertEqual(r.status, 202, r.body)
                    platform_of[iid] = name
            finally:
                c.close()
        worker = stack.start_worker(OSBQ_WORKER_CONCURRENCY="1")
        try:
            harness.wait_until(lambda: stack.redis.command("ZCARD", NAMESPACE + ":queue") == 0,
                               2 * self.PER_TENANT + SLACK_S * 3, "every provision to end")
        except AssertionError as e:
            self.fail_with_logs(str(e))
        started = re.findall(r"msg=job_start op=\S+ kind=provision instance=(\S+)", worker.log())
        self.assertEqual(len(started), 2 * self.PER_TENANT)
        heavy = sum(1 for iid in started[:self.PER_TENANT] if platform_of[iid] == "heavy")
        self.assertTrue(17 <= heavy <= 19, "heavy ran %d of the first %d: %r"
                        % (heavy, self.PER_TENANT, [platform_of[i][0] for i in started]))


class WorkerKilledWhileTenantsWait(FaultTestCase):

    PER_TENANT = 6

    def test_4_worker_killed_nothing_lost_order_kept(self):
        """Organizations A and B each have 6 provisions of 2-s steps waiting (A's sent first)
        when a worker with 2 slots starts; once 2 have ended and 2 more run, that worker is
        SIGKILLed, and a replacement starts. Nothing is lost: all 12 end succeeded, the 2 that
        ran on the killed worker run again (taken from it at once: 2 claims), no other runs
        twice. Order is kept: within each tenant the operations first started (started_ms,
        and the workers' job_start lines) in the order they were sent, although the jobs
        waiting past the claim timeout (2 s here) are also sent again by recovery, as copies in
        the due lane. Both tenants go on taking turns after the kill: neither ran all its
        remaining steps before the other's."""
        stack = self.make_stack()
        gw = stack.start_gateway()
        c = self.client(gw)
        sent = {"org-a": [], "org-b": []}  # (instance id, operation id), in the order sent
        for org in ("org-a", "org-b"):
            for _ in range(self.PER_TENANT):
                iid = new_id()
                r = c.request("PUT", ipath(iid, incomplete=True), body(MEDIUM, org))
                self.assertEqual(r.status, 202, r.body)
                sent[org].append((iid, r.json()["operation"]))
        ops = [op for pairs in sent.values() for _, op in pairs]

        def states():
            out = {}
            for op in ops:
                st = self.op_record(op).get("state")
                out[st] = out.get(st, 0) + 1
            return out

        first = stack.start_worker(OSBQ_WORKER_CONCURRENCY=str(SLOTS))
        try:
            harness.wait_until(lambda: states().get("succeeded", 0) == SLOTS and
                               states().get("running", 0) == SLOTS,
                               2 * MEDIUM_S + SLACK_S * 3, "a second round of steps to run")
        except AssertionError as e:
            self.fail_with_logs(str(e))
        running = [op for op in ops if self.op_record(op).get("state") == "running"]
        self.assertEqual(harness.kill(first), -signal.SIGKILL)
        # The gateway sees the worker's connection end and takes its 2 steps from it at once
        # (decision 0052): queued again beside the 8 that never ran.
        harness.wait_until(lambda: states().get("queued", 0) == 2 * self.PER_TENANT - SLOTS,
                           SLACK_S, "the killed worker's steps taken from it")
        for op in running:
            self.assertIn('"event":"revoked"', self.op_record(op).get("history", ""))
        second = stack.start_worker(OSBQ_WORKER_CONCURRENCY=str(SLOTS))
        left = 2 * self.PER_TENANT - SLOTS  # the killed steps run again
        bound = LEASE_S + RECOVERY_INTERVAL_S + left / SLOTS * MEDIUM_S + SLACK_S * 3
        try:
            harness.wait_until(lambda: states().get("succeeded", 0) == len(ops), bound,
                               "every operation to succeed after the kill")
        except AssertionError as e:
            self.fail_with_logs("%s: %r" % (e, states()))

        for op in ops:
            rec = self.op_record(op)
            self.assertEqual(rec["claims"], "2" if op in running else "1", rec)
        tenant_of = {iid: org for org, pairs in sent.items() for iid, _ in pairs}
        started = []  # instance ids by first job_start line, the killed worker's first
        for w in (first, second):
            for iid in re.findall(r"msg=job_start op=\S+ kind=provision instance=(\S+)",
                                  w.log()):
                if iid not in started:
                    started.append(iid)
        self.assertEqual(sorted(started), sorted(tenant_of))
        for org, pairs in sent.items():
            in_order = [iid for iid, _ in pairs]
            self.assertEqual([iid for iid in started if tenant_of[iid] == org], in_order,
                             "%s's operations started out of order" % org)
            started_ms = [int(self.op_record(op)["started_ms"]) for _, op in pairs]
            self.assertEqual(started_ms, sorted(started_ms), "%s: %r" % (org, started_ms))
        after = [tenant_of[iid] for iid in started[2 * SLOTS:]]
        self.assertEqual(len(after), len(ops) - 2 * SLOTS)
        half = after[:len(after) // 2]
        self.assertTrue("org-a" in half and "org-b" in half,
                        "after the kill one tenant ran all its steps first: %r" % after)
        self.assertAllAlive([gw, second])


if __name__ == "__main__":
    unittest.main()
