"""The workers the load needs (docs/deploy.md, "Autoscaling"; docs/decisions/0034): two
gateways and one worker of 2 slots take 9 provisions that each hold a slot for 60 s. osbq-ctl
stats says 5 workers (2 running + 7 queued, 2 a worker), in text and JSON; the gateways' and the
worker's /metrics serve the figures the Kubernetes ScaledObject's query sums, and they give the
same answer; a stopping worker still counts its running jobs and its size. Bounded: about 5 s
(the provisions are cancelled when the worker stops)."""

import json
import math
import os
import re
import signal
import subprocess
import unittest
import uuid

import yaml

import harness

CTL = os.path.join(harness.BUILD_DIR, "bin", "osbq-ctl")
CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-load.json")
SCALED_OBJECT = os.path.join(harness.SOURCE_DIR, "deploy", "kubernetes", "components", "keda",
                             "scaledobject.yaml")
SERVICE = "4e7a1c2b-3d5f-4a6e-9b8c-7d1e2f3a4b01"
HELD = "4e7a1c2b-3d5f-4a6e-9b8c-7d1e2f3a4c01"  # a provision holds its slot for 60 s
SLOTS = 2
JOBS = 9
NEEDED = 5  # ceil(9 / 2)
# Longer than the stopping worker's status is read for, however loaded the machine (with 5 s a
# run beside busy loops found the worker gone); the test's last SIGTERM cuts the grace short.
GRACE_MS = 60000
# The harness's patience with one osbq-ctl run and with the load showing: not speed targets.
RUN_TIMEOUT_S = 60.0
LOAD_TIMEOUT_S = 30.0


class AutoscalingTest(harness.StackTestCase):
    CATALOG = CATALOG

    @classmethod
    def start_stack(cls):
        cls.gateways = [cls.stack.start_gateway() for _ in range(2)]
        cls.metrics_port = harness.free_port()
        cls.worker = cls.stack.start_worker(
            OSBQ_WORKER_CONCURRENCY=str(SLOTS), OSBQ_SHUTDOWN_GRACE_MS=str(GRACE_MS),
            OSBQ_METRICS_LISTEN="127.0.0.1:%d" % cls.metrics_port)
        harness.wait_workers_connected(cls.gateways, 1)

    def ctl(self, *args):
        env = {k: v for k, v in os.environ.items() if not k.startswith("OSBQ_")}
        env["OSBQ_REDIS_URL"] = self.stack.redis.url
        r = subprocess.run([CTL] + list(args), env=env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT_S)
        self.assertEqual(r.returncode, 0, r.stderr)
        for marker in harness.SANITIZER_MARKERS:
            self.assertNotIn(marker, r.stderr)
        return r.stdout

    def stats(self):
        return json.loads(self.ctl("--json", "stats"))

    def scrape(self, port):
        client = harness.Client(port)
        try:
            r = client.request("GET", "/metrics", auth=False, version=False)
            self.assertEqual(r.status, 200, r.body)
            return harness.parse_metrics(r.body.decode())
        finally:
            client.close()

    def scraped_load(self):
        """The ScaledObject's query on the scrapes: the jobs queued summed over the gateways
        plus the jobs running summed over the workers (here one)."""
        queued = sum(harness.metric_value(self.scrape(g.port), "osbq_jobs_queued")
                     for g in self.gateways)
        return queued + harness.metric_value(self.scrape(self.metrics_port), "osbq_jobs_running")

    def test_the_need_follows_the_load(self):
        # Idle: nothing needed.
        harness.wait_until(lambda: self.stats()["workers"]["live"] == 1, harness.START_TIMEOUT_S,
                           "the worker to publish its status")
        stats = self.stats()
        self.assertEqual(stats["gateways"], {"live": 2, "queued": 0})
        self.assertEqual(stats["workers"], {"live": 1, "stopping": 0, "slots": SLOTS,
                                            "running": 0, "needed": 0, "needed_exact": True})

        # Loaded: 9 provisions through both gateways, 2 hold the slots, 7 wait in the gateways.
        for i in range(JOBS):
            client = self.stack.client(self.gateways[i % 2])
            try:
                r = client.request("PUT", "/v2/service_instances/load-%s?accepts_incomplete=true"
                                   % uuid.uuid4().hex[:12],
                                   {"service_id": SERVICE, "plan_id": HELD,
                                    "organization_guid": "org", "space_guid": "space"})
            finally:
                client.close()
            self.assertEqual(r.status, 202, r.body)

        def loaded():
            s = self.stats()
            return s["workers"]["running"] == SLOTS and s["gateways"]["queued"] == JOBS - SLOTS
        harness.wait_until(loaded, LOAD_TIMEOUT_S, "osbq-ctl stats to show the load")
        stats = self.stats()
        self.assertEqual((stats["workers"]["needed"], stats["workers"]["needed_exact"]),
                         (NEEDED, True))
        out = self.ctl("stats")
        self.assertRegex(out, r"(?m)^gateways +2 live, %d jobs queued$" % (JOBS - SLOTS))
        self.assertRegex(out, r"(?m)^workers +1 live, 0 stopping, %d slots, %d running, %d needed$"
                         % (SLOTS, SLOTS, NEEDED))

        # /metrics: the query's sum is the same load, and over the slots the same need.
        harness.wait_until(lambda: self.scraped_load() == JOBS, LOAD_TIMEOUT_S,
                           "the scraped queued + running to reach %d" % JOBS)
        worker = self.scrape(self.metrics_port)
        self.assertEqual(harness.metric_value(worker, "osbq_worker_slots"), SLOTS)
        self.assertEqual(math.ceil(self.scraped_load() / SLOTS), NEEDED)
        with open(SCALED_OBJECT) as f:
            query = yaml.safe_load(f)["spec"]["triggers"][0]["metadata"]["query"]
        self.assertEqual(set(re.findall(r"\b(osbq_[a-z_]+)", query)),
                         {"osbq_jobs_queued", "osbq_jobs_running"})
        # Why the query reads no gateway's view of the workers: each gateway counts the one
        # worker, so their sum says two.
        self.assertEqual(sum(harness.metric_value(self.scrape(g.port), "osbq_workers_live")
                             for g in self.gateways), 2)

        # Stopping: its running jobs are still load (they finish there or move on after the
        # grace) and its slots still size a worker.
        self.worker.send_signal(signal.SIGTERM)
        harness.wait_until(lambda: self.stats()["workers"]["stopping"] == 1, RUN_TIMEOUT_S,
                           "the worker to publish that it stops")
        stats = self.stats()
        self.assertEqual(stats["workers"]["running"], SLOTS)
        self.assertEqual((stats["workers"]["needed"], stats["workers"]["needed_exact"]),
                         (NEEDED, True))
        self.assertRegex(self.ctl("stats"), r"(?m)^workers +1 live, 1 stopping, ")
        # A second SIGTERM cancels the held provisions at once.
        self.assertEqual(self.worker.stop(), 0)


if __name__ == "__main__":
    unittest.main()
