"""Hand-overs (docs/decisions/0042-handover.md) against real processes: a gateway that knows a
worker with a free slot when it begins an operation has the begin script claim the operation for
that worker, and sends it the job as a handed one, which the worker runs with no claim call.

- A handed job its worker has no slot for (two gateways handed it its one slot at once: made
  certain by stopping the worker with SIGSTOP while both begin) is given back in Redis and
  REJECTed, and its gateway sends it on as a plain job, which the worker claims: both
  operations end long before the hand-over's lease (60 s) would have let the recovery loop
  find the lost one.
- A handed operation whose worker is SIGKILLed mid-step is finished by another worker once the
  hand-over's lease ran out; the killed worker never called the claim script.
- A synchronous provision on an idle stack is handed: its record says claimed once, by the
  worker, and no claim script ran (Redis MONITOR).
- Synchronous requests beyond the worker's slots wait for one before they begin (decision 0045):
  every operation is handed; one still waiting when its gateway is told to stop gets 503 at once
  and leaves nothing in Redis.

Only processes the harness started are signalled, by PID; every wait is bounded."""

import json
import os
import signal
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

import harness
import redis_monitor  # noqa: E402 (tests/lib, on the path harness set)

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-faults.json")
SERVICE = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4e01"
FAST = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4f01"    # every operation at once
SLOW = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4f02"    # provision 4 s
MEDIUM = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4f03"  # provision 2 s
SLOW_S = 4.0

NAMESPACE = "osbq"

# A gateway forgets a worker silent for 3.5 s (OSBQ_BUS_WORKER_EXPIRY_MS), and a worker's last
# READY may be 1 s old when it is stopped: it must run again well within that.
STOPPED_BOUND_S = 2.0
# Both operations of the give-back end within this after the worker runs again: two MEDIUM
# steps, one after the other, and the give-back; far less than the hand-over's lease (60 s), which
# the job given back would otherwise wait for.
GIVE_BACK_BOUND_S = 20.0
# Slack added to computed bounds: sanitized processes on a loaded machine, polling, READYs (1 s).
SLACK_S = 4.0
POLL_S = 0.05
# Synchronous lifecycles (provision, deprovision) sent at once by more clients than the worker
# has slots (1): most requests find the slot taken.
SATURATING_LIFECYCLES = 24
SATURATING_CLIENTS = 6


def instance_body(plan):
    return harness.provision_body(SERVICE, plan, instance_name="handover")


def history_events(record):
    """The events of an operation's history field, oldest first ([] when it has none)."""
    return [json.loads(line)["event"] for line in record.get("history", "").splitlines()]


class HandOver(unittest.TestCase):

    def make_stack(self, **env):
        stack = harness.Stack(catalog=CATALOG, extra_env={k: str(v) for k, v in env.items()})
        self.addCleanup(stack.stop)
        self.stack = stack
        return stack

    def client(self, gateway):
        c = self.stack.client(gateway)
        self.addCleanup(c.close)
        return c

    def scraper(self, port):
        s = harness.MetricsScraper(port)
        self.addCleanup(s.close)
        return s

    def start_worker_with_metrics(self, **overrides):
        """A worker serving its metrics on a free loopback port, once /healthz answers there."""
        port = harness.free_port()
        worker = self.stack.start_worker(OSBQ_METRICS_LISTEN="127.0.0.1:%d" % port, **overrides)
        harness.wait_until(
            lambda: harness.osbq_stack.http_status(port, "/healthz") == 200 or not worker.alive(),
            harness.START_TIMEOUT_S, "the worker to answer /healthz")
        self.assertTrue(worker.alive(), worker.log())
        return worker, self.scraper(port)

    def logs(self):
        return "\n".join("---- %s ----\n%s" % (p.name, "\n".join(p.log().splitlines()[-30:]))
                         for p in self.stack.processes)

    def provision_async(self, c, plan):
        iid = harness.new_id()
        r = c.request("PUT", harness.ipath(iid, incomplete=True), instance_body(plan))
        self.assertEqual(r.status, 202, r.body)
        return iid, r.json()["operation"]

    def wait_succeeded(self, c, iid, deadline):
        """Polls last_operation until it is no longer in progress, at the latest until deadline
        (time.monotonic); it must have succeeded."""
        while True:
            r = c.request("GET", harness.ipath(iid, "/last_operation"))
            self.assertEqual(r.status, 200, r.body)
            state = r.json()["state"]
            if state != "in progress":
                self.assertEqual(state, "succeeded", r.body)
                return
            if time.monotonic() > deadline:
                self.fail("operation of %s still in progress\n%s" % (iid, self.logs()))
            time.sleep(POLL_S)

    def op_record(self, op):
        return harness.redis_hash(self.stack.redis, "%s:op:%s" % (NAMESPACE, op))

    def assertNoWarningsSince(self, process, start_line):
        """No warning nor error in process's log from line start_line on (those before: the
        start-up's, about the test's settings)."""
        bad = [line for line in process.log().splitlines()[start_line:]
               if "level=warn" in line or "level=error" in line]
        self.assertEqual(bad, [], "%s logged:\n%s" % (process.name, "\n".join(bad)))

    def test_handed_job_without_a_slot_is_given_back_and_claimed(self):
        # The recovery loop waits a minute, as long as the hand-over's lease: within the test's
        # bounds only the give-back (release, REJECT, the gateway sending it on) can run the job
        # the worker had no slot for.
        self.make_stack(OSBQ_LEASE_MS=60000, OSBQ_RECOVERY_INTERVAL_MS=60000)
        gateways = [self.stack.start_gateway() for _ in range(2)]
        worker, worker_metrics = self.start_worker_with_metrics(OSBQ_WORKER_CONCURRENCY=1)
        wid = harness.worker_id(worker)
        gateway_metrics = [self.scraper(g.port) for g in gateways]

        def knows_the_free_worker(scraper):
            samples = scraper.samples()
            return (harness.metric_value(samples, "osbq_workers_live"),
                    harness.metric_value(samples, "osbq_worker_free_slots")) == (1, 1)

        harness.wait_until(lambda: all(knows_the_free_worker(s) for s in gateway_metrics),
                           harness.START_TIMEOUT_S, "both gateways to know the worker's slot")
        clients = [self.client(g) for g in gateways]

        logged = {p: len(p.log().splitlines()) for p in gateways + [worker]}

        # Stopped, the worker cannot take its slot back from either gateway: each hands it the
        # same slot.
        worker.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            with ThreadPoolExecutor(2) as pool:
                begun = list(pool.map(lambda c: self.provision_async(c, MEDIUM), clients))
            # Claimed for the worker by the begin scripts: it could not have claimed them.
            for _, op in begun:
                rec = self.op_record(op)
                self.assertEqual((rec.get("state"), rec.get("worker"), rec.get("claims")),
                                 ("running", wid, "1"), rec)
        finally:
            worker.send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        self.assertLess(resumed - stopped, STOPPED_BOUND_S,
                        "the worker was stopped so long that the gateways may have forgotten it")

        for (iid, _), c in zip(begun, clients):
            self.wait_succeeded(c, iid, resumed + GIVE_BACK_BOUND_S)
        records = sorted((self.op_record(op) for _, op in begun), key=lambda r: r["claims"])
        run_at_once, given_back = records
        self.assertEqual((run_at_once["claims"], history_events(run_at_once)), ("1", []),
                         run_at_once)
        self.assertEqual(given_back["claims"], "2", given_back)
        self.assertEqual(history_events(given_back), ["claimed", "released", "claimed"],
                         given_back)
        for rec in records:
            self.assertEqual((rec["state"], rec["worker"]), ("succeeded", wid), rec)

        samples = worker_metrics.samples()
        self.assertEqual(harness.metric_value(samples, "osbq_jobs_rejected_total"), 1)
        self.assertEqual(harness.metric_value(samples, "osbq_claims_total", result="claimed"), 2)
        # The first was handed and ran; the second, given back, was claimed when sent on.
        self.assertEqual(harness.metric_value(samples, "osbq_jobs_handed_total"), 1)
        for p, start_line in logged.items():
            self.assertNoWarningsSince(p, start_line)

    def test_handed_job_of_a_killed_worker_runs_again_after_its_lease(self):
        lease_s = 3.0
        recovery_s = 0.2
        stack = self.make_stack(OSBQ_LEASE_MS=int(lease_s * 1000),
                                OSBQ_RECOVERY_INTERVAL_MS=int(recovery_s * 1000),
                                OSBQ_CLAIM_TIMEOUT_MS=2000)
        gateway, workers = harness.start_connected(stack, 2)
        by_id = {harness.worker_id(w): w for w in workers}
        monitor = redis_monitor.Monitor(stack.redis.port)
        self.addCleanup(monitor.stop)
        c = self.client(gateway)

        iid, op = self.provision_async(c, SLOW)
        harness.wait_until(lambda: self.op_record(op).get("state") == "running",
                           harness.START_TIMEOUT_S, "the operation to run")
        victim = by_id[self.op_record(op)["worker"]]
        survivor = next(w for w in workers if w is not victim)
        harness.wait_until(
            lambda: any("msg=job_start " in line and ("op=%s " % op) in line
                        for line in victim.log().splitlines()),
            harness.START_TIMEOUT_S, "the handed worker to start the step")
        time.sleep(0.5)
        names = redis_monitor.script_names()

        def claim_calls():
            return [call.text for call in redis_monitor.calls(monitor.lines(), names)
                    if call.script == "claim" and call.names(op)]

        self.assertEqual(claim_calls(), [], "the handed worker claimed its job")
        self.assertEqual(harness.kill(victim), -signal.SIGKILL)
        killed = time.monotonic()

        self.wait_succeeded(c, iid, killed + lease_s + recovery_s + SLOW_S + SLACK_S)
        rec = self.op_record(op)
        self.assertEqual((rec["worker"], rec["claims"]), (harness.worker_id(survivor), "2"), rec)
        self.assertGreaterEqual(len(claim_calls()), 1)

    def test_sync_provision_on_an_idle_stack_is_handed(self):
        stack = self.make_stack()
        gateway = stack.start_gateway()
        worker, worker_metrics = self.start_worker_with_metrics()
        wid = harness.worker_id(worker)
        harness.wait_workers_connected([gateway], 1)
        claimed = harness.metric_value(worker_metrics.samples(), "osbq_claims_total",
                                       result="claimed")
        handed = harness.metric_value(worker_metrics.samples(), "osbq_jobs_handed_total")
        monitor = redis_monitor.Monitor(stack.redis.port)
        self.addCleanup(monitor.stop)
        names = redis_monitor.script_names()

        r = self.client(gateway).request("PUT", harness.ipath(harness.new_id()),
                                         instance_body(FAST))
        self.assertEqual(r.status, 201, r.body)
        calls = []

        def finished():
            calls[:] = redis_monitor.calls(monitor.lines(), names)
            return any(call.script == "finish" for call in calls)

        harness.wait_until(finished, 5, "the finish call in MONITOR's lines")
        scripts = [call.script for call in calls if call.script is not None]
        self.assertEqual(scripts.count("begin_instance"), 1, scripts)
        self.assertNotIn("claim", scripts)
        begin = next(call for call in calls if call.script == "begin_instance")
        self.assertIn(wid, begin.text)

        [key] = stack.redis.keys("%s:op:*" % NAMESPACE)
        rec = harness.redis_hash(stack.redis, key)
        self.assertEqual((rec["state"], rec["worker"], rec["claims"]), ("succeeded", wid, "1"),
                         rec)
        self.assertIn("started_ms", rec)
        self.assertNotIn("history", rec)
        self.assertEqual(harness.metric_value(worker_metrics.samples(), "osbq_claims_total",
                                              result="claimed"), claimed + 1)
        self.assertEqual(harness.metric_value(worker_metrics.samples(), "osbq_jobs_handed_total"),
                         handed + 1)

    def test_sync_requests_beyond_the_slots_wait_for_one_and_are_all_handed(self):
        """More synchronous requests at once than the worker has slots: each that finds none
        waits for one in the waiting lane before its begin (decision 0045), so every operation
        is handed and none is claimed. Before, those begun while the slot was taken were
        claimed once it freed."""
        stack = self.make_stack()
        gateway = stack.start_gateway()
        worker, worker_metrics = self.start_worker_with_metrics(OSBQ_WORKER_CONCURRENCY=1)
        harness.wait_workers_connected([gateway], 1)
        gateway_metrics = self.scraper(gateway.port)
        handed = harness.metric_value(worker_metrics.samples(), "osbq_jobs_handed_total")
        query = "service_id=%s&plan_id=%s" % (SERVICE, FAST)

        def lifecycle(iid):
            c = self.stack.client(gateway)
            try:
                return [c.request("PUT", harness.ipath(iid), instance_body(FAST)).status,
                        c.request("DELETE", harness.ipath(iid) + "?" + query).status]
            finally:
                c.close()

        ids = [harness.new_id() for _ in range(SATURATING_LIFECYCLES)]
        with ThreadPoolExecutor(SATURATING_CLIENTS) as pool:
            statuses = list(pool.map(lifecycle, ids))
        self.assertEqual(statuses, [[201, 200]] * len(ids))
        self.assertEqual(
            harness.metric_value(worker_metrics.samples(), "osbq_jobs_handed_total") - handed,
            2 * len(ids), "every operation handed: none claimed")
        self.assertEqual(harness.metric_value(worker_metrics.samples(), "osbq_claims_total",
                                              result="claimed"), 2 * len(ids))
        # Some waited for the slot in the lane (the others found it free at once).
        waited = harness.metric_sum(gateway_metrics.samples(),
                                    "osbq_dispatch_wait_seconds_count", lane="waiting")
        self.assertGreater(waited, 0)

    def test_request_waiting_for_a_slot_gets_503_when_its_gateway_stops(self):
        """A synchronous request waiting for a slot began nothing: a gateway told to stop answers
        it 503 at once (its retry goes to another gateway) instead of holding it through the
        grace, and Redis holds nothing of it."""
        stack = self.make_stack(OSBQ_SHUTDOWN_GRACE_MS=int(SLOW_S * 4 * 1000))
        gateway = stack.start_gateway()
        stack.start_worker(OSBQ_WORKER_CONCURRENCY=1)
        harness.wait_workers_connected([gateway], 1)
        gateway_metrics = self.scraper(gateway.port)
        holding, waiting = harness.new_id(), harness.new_id()
        clients = [self.client(gateway) for _ in range(2)]
        with ThreadPoolExecutor(2) as pool:
            held = pool.submit(clients[0].request, "PUT", harness.ipath(holding),
                               instance_body(SLOW))
            harness.wait_until(
                lambda: harness.redis_hash(stack.redis, "%s:instance:%s"
                                           % (NAMESPACE, holding)).get("last_op"),
                harness.START_TIMEOUT_S, "the slow provision to begin")
            answer = pool.submit(clients[1].request, "PUT", harness.ipath(waiting),
                                 instance_body(FAST))
            harness.wait_until(
                lambda: harness.metric_value(gateway_metrics.samples(), "osbq_jobs_queued") == 1,
                harness.START_TIMEOUT_S, "the second request to wait for the slot")
            gateway.send_signal(signal.SIGTERM)
            stopping = time.monotonic()
            r = answer.result(timeout=harness.START_TIMEOUT_S)
            self.assertLess(time.monotonic() - stopping, SLOW_S,
                            "answered only once the slow step ended")
            self.assertEqual(r.status, 503, r.body)
            self.assertIn("not started", r.json()["description"])
            self.assertEqual(stack.redis.keys("%s:*%s*" % (NAMESPACE, waiting)), [])
            self.assertEqual(held.result(timeout=SLOW_S + SLACK_S + 30).status, 201)


if __name__ == "__main__":
    unittest.main()
