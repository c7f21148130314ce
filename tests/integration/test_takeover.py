"""A dead worker's steps move on at once (issue 42, docs/decisions/0052): the gateway sees the
worker's connection end (or its READYs stop) and takes the operations it sent it from it in
Redis, so they run on another worker in about a second instead of waiting out their lease.
Real redis-server, one gateway, workers of the sim and exec backends; the lease is set to a
minute so that nothing here can pass by waiting for it; every wait bounded."""

import json
import os
import shutil
import signal
import tempfile
import time
import unittest

import harness

SERVICE = "5d0c7e1a-2b3f-4c5d-8e9f-0a1b2c3d4e00"
BLOCKING = "5d0c7e1a-2b3f-4c5d-8e9f-0a1b2c3d4e01"  # sim: one 4-s step holding a runner thread
EXEC = "5d0c7e1a-2b3f-4c5d-8e9f-0a1b2c3d4e02"  # exec: a program that sleeps 4 s
EXEC_DIR = os.path.join(harness.SOURCE_DIR, "tests", "data", "exec")
NAMESPACE = "osbq"
STEP_S = 4
# Far beyond every wait below: a step that moves on did not wait for its lease.
LEASE_MS = 60000
# How soon a revoked step must be claimed again; the benchmark (bench/run.sh --cases takeover)
# measures the real figure.
MOVED_WITHIN_S = 5.0
# The READY silence after which a gateway forgets a worker (OSBQ_BUS_WORKER_EXPIRY_MS) and a
# margin for a loaded machine.
SILENCE_S = 3.5 + 2.0


def catalog(record_dir):
    plan = lambda pid, name, osbq: {"id": pid, "name": name, "description": name, "free": True,
                                    "osbq": osbq}
    return {"services": [{
        "name": "osbq-takeover-test", "id": SERVICE, "description": "takeover",
        "bindable": False, "instances_retrievable": True,
        "plans": [
            plan(BLOCKING, "blocking", {"backend": "sim", "blocking": True,
                                        "provision_ms": STEP_S * 1000}),
            plan(EXEC, "exec", {"backend": "exec",
                                "command": ["/bin/sh", os.path.join(EXEC_DIR, "sleep_record.sh")],
                                "env": {"SLEEP_S": str(STEP_S), "RECORD_DIR": record_dir}}),
        ]}]}


class Takeover(unittest.TestCase):
    """Each test on a stack of its own: one gateway, the workers it starts."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="osbq-takeover-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.record_dir = os.path.join(self.dir, "runs")
        os.mkdir(self.record_dir)
        path = os.path.join(self.dir, "catalog.json")
        with open(path, "w") as f:
            json.dump(catalog(self.record_dir), f)
        self.stack = harness.Stack(catalog=path, extra_env={
            "OSBQ_LEASE_MS": str(LEASE_MS), "OSBQ_RECOVERY_INTERVAL_MS": "200"})
        self.addCleanup(self.stack.stop)

    def request(self, method, path, body=None):
        return harness.request_once(self.stack, self.gateway, method, path, body)

    def provision(self, iid, plan):
        r = self.request("PUT", harness.ipath(iid, incomplete=True),
                         harness.provision_body(SERVICE, plan))
        self.assertEqual(r.status, 202, r.body)
        return r.json()["operation"]

    def op(self, operation):
        return harness.redis_hash(self.stack.redis, "%s:op:%s" % (NAMESPACE, operation))

    def history(self, operation):
        return [json.loads(line) for line in self.op(operation).get("history", "").splitlines()]

    def running_on(self, operation, worker_id=None, timeout_s=10):
        """Waits until a worker (worker_id, when given) runs the operation; returns its id."""
        def runs():
            op = self.op(operation)
            return op.get("state") == "running" and op.get("worker") and (
                worker_id is None or op["worker"] == worker_id)
        harness.wait_until(runs, timeout_s, "operation %s running on %s"
                           % (operation, worker_id or "a worker"))
        return self.op(operation)["worker"]

    def succeeded(self, operation, timeout_s):
        harness.wait_until(lambda: self.op(operation).get("state") in ("succeeded", "failed"),
                           timeout_s, "operation %s to end" % operation)
        self.assertEqual(self.op(operation)["state"], "succeeded", self.op(operation))

    def metric(self, name, **labels):
        scraper = harness.MetricsScraper(self.gateway.port)
        try:
            return harness.metric_value(scraper.samples(), name, **labels)
        finally:
            scraper.close()

    def start(self, workers):
        self.gateway, started = harness.start_connected(self.stack, workers)
        return {harness.worker_id(w): w for w in started}

    def assertMovedOnKill(self, plan):
        by_id = self.start(2)
        operation = self.provision(harness.new_id(), plan)
        victim_id = self.running_on(operation)
        survivor_id = [w for w in by_id if w != victim_id][0]
        killed_at = time.monotonic()
        self.assertEqual(harness.kill(by_id[victim_id]), -signal.SIGKILL)
        self.running_on(operation, survivor_id, MOVED_WITHIN_S)
        self.assertLess(time.monotonic() - killed_at, MOVED_WITHIN_S)
        # Taken from the dead worker, not expired: its history says so, and whom from.
        events = [(e.get("event"), e.get("worker")) for e in self.history(operation)]
        self.assertIn(("revoked", victim_id), events)
        self.assertNotIn("lease_expired", [e for e, _ in events])
        self.succeeded(operation, STEP_S + 10)
        self.assertEqual(self.op(operation)["worker"], survivor_id)
        self.assertEqual(self.metric("osbq_steps_revoked_total"), 1)
        self.assertEqual(self.metric("osbq_workers_gone_total", reason="disconnected"), 1)
        self.assertEqual(self.metric("osbq_lease_expiries_total"), 0)

    def test_killed_workers_blocking_step_runs_elsewhere_at_once(self):
        """A worker SIGKILLed in a step that holds its runner thread: its connection ends, and
        the other worker runs the step within seconds, not the minute of its lease."""
        self.assertMovedOnKill(BLOCKING)

    def test_killed_workers_exec_program_runs_elsewhere_at_once(self):
        """The same for a step that an exec program runs (detached from the runner threads):
        the other worker starts the program again, which runs to its end there."""
        self.assertMovedOnKill(EXEC)
        harness.wait_until(lambda: len(os.listdir(self.record_dir)) >= 1, STEP_S + 5,
                           "a run of the program to be recorded")

    def test_job_sent_to_a_worker_that_died_before_claiming_it_is_sent_again(self):
        """A job on its way to a worker (stopped: it cannot claim it) when the worker dies:
        taken back at once and claimed by another worker, not after the claim timeout or the
        hand-over's lease."""
        by_id = self.start(1)
        (stopped_id, stopped), = by_id.items()
        stopped.send_signal(signal.SIGSTOP)
        try:
            operation = self.provision(harness.new_id(), BLOCKING)
            other = self.stack.start_worker()
            other_id = harness.worker_id(other)
            harness.wait_workers_connected([self.gateway], 2)
        finally:
            self.assertEqual(harness.kill(stopped), -signal.SIGKILL)
        self.running_on(operation, other_id, MOVED_WITHIN_S)
        self.succeeded(operation, STEP_S + 10)
        # Handed to the stopped worker at begin (revoked) or sent to it unclaimed (resent):
        # either way the stopped worker never ran it.
        events = [e.get("event") for e in self.history(operation)]
        self.assertTrue("revoked" in events or "resent" in events, events)
        self.assertEqual(self.op(operation)["worker"], other_id)

    def test_paused_worker_past_its_silence_does_not_record_the_revoked_step(self):
        """A worker paused (SIGSTOP) in a step until the gateway forgets it: the step is taken
        from it and runs on the other worker; resumed, the paused worker finds the operation no
        longer its own and records nothing, and the outcome is the other worker's."""
        by_id = self.start(2)
        operation = self.provision(harness.new_id(), BLOCKING)
        paused_id = self.running_on(operation)
        other_id = [w for w in by_id if w != paused_id][0]
        paused = by_id[paused_id]
        paused.send_signal(signal.SIGSTOP)
        try:
            self.running_on(operation, other_id, SILENCE_S + MOVED_WITHIN_S)
        finally:
            paused.send_signal(signal.SIGCONT)
        self.assertEqual(self.metric("osbq_workers_gone_total", reason="silent"), 1)
        # The paused worker's step ended during its pause: resumed, it tries to record it.
        harness.wait_until(lambda: "no longer this worker's" in paused.log()
                           or "lease lost" in paused.log(), 10,
                           "the resumed worker to find its step taken")
        self.succeeded(operation, STEP_S + 10)
        record = self.op(operation)
        self.assertEqual(record["worker"], other_id)
        events = [(e.get("event"), e.get("worker")) for e in self.history(operation)]
        self.assertIn(("revoked", paused_id), events)
        self.assertIn(("claimed", other_id), events)


if __name__ == "__main__":
    unittest.main()
