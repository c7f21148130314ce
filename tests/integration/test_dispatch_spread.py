"""Jobs spread across workers with equal free slots (gateway/dispatch.c): with sequential
traffic every worker is idle again before the next job, so the one first in the gateway's list
would take them all unless ties go to the worker sent a job longest ago. Each operation's
worker is read from its Redis hash (`worker`). Before each job the test waits until the gateway
counts every slot free again (osbq_worker_free_slots): a worker's READY after its job may reach
the gateway after the client's next request, and on a loaded machine one worker's late READYs
would send that request to the other every time (17 to 3 seen in CI)."""

import collections
import os
import unittest

import harness

SERVICE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"
PLAN = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"  # every operation at once
CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-bindings.json")
JOBS = 20


class DispatchSpread(unittest.TestCase):
    def setUp(self):
        self.stack = harness.Stack(catalog=CATALOG)
        self.addCleanup(self.stack.stop)

    def test_sequential_jobs_take_turns(self):
        gateway = self.stack.start_gateway()
        workers = [self.stack.start_worker(OSBQ_WORKER_CONCURRENCY=4) for _ in range(2)]
        harness.wait_workers_connected([gateway], 2)
        ids = {harness.worker_id(w) for w in workers}
        client = self.stack.client(gateway)
        scraper = harness.MetricsScraper(gateway.port)
        self.addCleanup(scraper.close)
        for i in range(JOBS):
            harness.wait_until(
                lambda: harness.metric_value(scraper.samples(), "osbq_worker_free_slots") == 8,
                10, "every worker's 4 slots free again")
            r = client.request("PUT", "/v2/service_instances/spread-%d" % i,
                               {"service_id": SERVICE, "plan_id": PLAN,
                                "organization_guid": "o", "space_guid": "s"})
            self.assertEqual(r.status, 201, r.body)
        redis = self.stack.redis
        by_worker = collections.Counter(
            harness.redis_hash(redis, key).get("worker") for key in redis.keys("osbq:op:*"))
        self.assertEqual(sum(by_worker.values()), JOBS, by_worker)
        self.assertEqual(set(by_worker), ids, by_worker)
        # Turns: each worker takes a fair share, not one nearly all (111 to 5 before; 20 to 0
        # here on the old dispatch).
        for worker in ids:
            self.assertGreaterEqual(by_worker[worker], JOBS // 4, by_worker)


if __name__ == "__main__":
    unittest.main()
