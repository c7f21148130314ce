"""The gateway's GET /metrics (docs/metrics.md) against real processes: redis-server, a gateway
and a worker on loopback with the sim backend (tests/data/catalog-bindings.json). Counters must
move by exactly what a lifecycle did; the text must be valid Prometheus exposition format; the
pinned OSBQ_METRICS_USERNAME/PASSWORD protect it when set."""

import json
import os
import re
import shutil
import signal
import tempfile
import time
import unittest
import uuid

import harness

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-bindings.json")
SERVICE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"
with open(CATALOG) as _f:
    _services = json.load(_f)["services"]
CATALOG_SERVICES = {s["id"] for s in _services} | {"unknown"}
CATALOG_PLANS = {p["id"] for s in _services for p in s["plans"]} | {"unknown"}
FAST = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"            # every operation at once
SLOW_PROVISION = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f11"  # provision 1.5 s

INSTANCE_ROUTE = "/v2/service_instances/:instance_id"
LAST_OP_ROUTE = INSTANCE_ROUTE + "/last_operation"
BINDING_ROUTE = INSTANCE_ROUTE + "/service_bindings/:binding_id"

parse_metrics = harness.parse_metrics
value = harness.metric_value


class GatewayMetricsTest(unittest.TestCase):
    def setUp(self):
        self.stack = harness.Stack(catalog=CATALOG, extra_env={
            "OSBQ_RECOVERY_INTERVAL_MS": "200", "OSBQ_LEASE_MS": "1000",
            "OSBQ_WORKER_CONCURRENCY": "4"})
        self.gateway, [self.worker] = harness.start_connected(self.stack)
        self.osb = self.stack.client(self.gateway)
        self.scraper = harness.MetricsScraper(self.gateway.port)

    def tearDown(self):
        self.osb.close()
        self.scraper.close()
        self.stack.stop()

    def provision(self, instance, plan=FAST, parameters=None):
        body = {"service_id": SERVICE, "plan_id": plan, "organization_guid": "org",
                "space_guid": "space"}
        if parameters is not None:
            body["parameters"] = parameters
        return self.osb.request("PUT", "/v2/service_instances/%s?accepts_incomplete=true"
                                % instance, body)

    def wait_done(self, instance, operation):
        """Polls last_operation until the operation ends; returns (state, 200 answers). A
        finished deprovision answers 410 Gone (spec: Polling Last Operation): "gone"."""
        polls = 0
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            r = self.osb.request("GET", "/v2/service_instances/%s/last_operation?operation=%s"
                                 % (instance, operation))
            if r.status == 410:
                return "gone", polls
            polls += 1
            self.assertEqual(r.status, 200, r.body)
            if r.json()["state"] != "in progress":
                return r.json()["state"], polls
            time.sleep(0.05)
        raise AssertionError("operation %s did not end" % operation)

    def test_format_and_process_metrics(self):
        r = self.scraper.get()
        self.assertEqual(r.header("content-type"), "text/plain; version=0.0.4; charset=utf-8")
        text = r.body.decode()
        samples = parse_metrics(text)
        self.assertEqual(value(samples, "osbq_build_info", version=self.version(),
                               role="gateway"), 1)
        self.assertGreater(value(samples, "process_resident_memory_bytes"), 1e6)
        self.assertGreater(value(samples, "process_open_fds"), 3)
        self.assertGreaterEqual(value(samples, "process_max_fds"), value(samples,
                                                                         "process_open_fds"))
        self.assertGreater(value(samples, "process_cpu_seconds_total"), 0)
        start = value(samples, "process_start_time_seconds")
        self.assertLess(abs(start - time.time()), 120)
        # The scrape itself is the one request in flight.
        self.assertEqual(value(samples, "osbq_http_requests_in_flight"), 1)
        for name in ("osbq_http_requests_total", "osbq_http_request_duration_seconds",
                     "osbq_gateway_operations_total", "osbq_jobs_queued", "osbq_workers_live",
                     "osbq_worker_free_slots", "osbq_sync_waits_in_flight",
                     "osbq_job_retries_total", "osbq_lease_expiries_total",
                     "osbq_steps_revoked_total", "osbq_workers_gone_total",
                     "osbq_redis_errors_total", "osbq_dispatch_wait_seconds"):
            self.assertIn("# TYPE %s " % name, text)
            self.assertIn("# HELP %s " % name, text)
        harness.wait_until(
            lambda: value(self.scraper.samples(), "osbq_worker_free_slots") == 4, 10,
            "the worker's 4 free slots")
        samples = self.scraper.samples()
        self.assertEqual(value(samples, "osbq_workers_live"), 1)
        self.assertEqual(value(samples, "osbq_jobs_queued"), 0)
        # Not behind the broker credentials when OSBQ_METRICS_USERNAME is unset.
        self.assertEqual(self.osb.request("GET", "/metrics", auth=False).status, 200)

    def version(self):
        code, out = harness.run_once([harness.GATEWAY, "--version"], self.stack.env())
        self.assertEqual(code, 0, out)
        return out.split()[-1]

    def test_counters_follow_a_lifecycle(self):
        before = self.scraper.samples()
        ok, failed, slow, gone = (str(uuid.uuid4()) for _ in range(4))
        binding = str(uuid.uuid4())
        polls = 0

        r = self.provision(ok)
        self.assertEqual(r.status, 202, r.body)
        state, n = self.wait_done(ok, r.json()["operation"])
        self.assertEqual(state, "succeeded")
        polls += n

        r = self.provision(failed, parameters={"sim_fail": True})
        self.assertEqual(r.status, 202, r.body)
        state, n = self.wait_done(failed, r.json()["operation"])
        self.assertEqual(state, "failed")
        polls += n

        # An identical request while the first runs joins it: accepted once, joined once.
        first = self.provision(slow, plan=SLOW_PROVISION)
        again = self.provision(slow, plan=SLOW_PROVISION)
        self.assertEqual((first.status, again.status), (202, 202))
        self.assertEqual(first.json()["operation"], again.json()["operation"])
        state, n = self.wait_done(slow, first.json()["operation"])
        self.assertEqual(state, "succeeded")
        polls += n

        bind_body = {"service_id": SERVICE, "plan_id": FAST}
        r = self.osb.request("PUT", "/v2/service_instances/%s/service_bindings/%s"
                             % (ok, binding), bind_body)
        self.assertEqual(r.status, 201, r.body)
        query = "service_id=%s&plan_id=%s" % (SERVICE, FAST)
        r = self.osb.request("DELETE", "/v2/service_instances/%s/service_bindings/%s?%s"
                             % (ok, binding, query))
        self.assertEqual(r.status, 200, r.body)
        r = self.osb.request("DELETE", "/v2/service_instances/%s?accepts_incomplete=true&%s"
                             % (ok, query))
        self.assertEqual(r.status, 202, r.body)
        state, n = self.wait_done(ok, r.json()["operation"])
        self.assertIn(state, ("succeeded", "gone"))
        polls += n
        gone_polls = 1 if state == "gone" else 0
        # Refused requests are counted under their route and status.
        self.assertEqual(self.osb.request("GET", "/v2/service_instances/%s" % gone,
                                          auth=False).status, 401)
        self.assertEqual(self.osb.request("GET", "/nowhere").status, 404)
        # A request is counted when its response has gone out, which may be just after the
        # client read it; the 404 was the last one on this connection.
        harness.wait_until(
            lambda: value(self.scraper.samples(), "osbq_http_requests_total", route="unmatched",
                          method="GET", code="404")
            - value(before, "osbq_http_requests_total", route="unmatched", method="GET",
                    code="404") == 1, 5, "the last request to be counted")

        after = self.scraper.samples()

        def delta(name, **labels):
            return value(after, name, **labels) - value(before, name, **labels)

        ops = "osbq_gateway_operations_total"
        # Each sample carries the request's service and plan ids (the catalog's only).
        self.assertTrue(all(dict(ls).get("service") in CATALOG_SERVICES
                            and dict(ls).get("plan") in CATALOG_PLANS
                            for (n, ls) in after if n == ops), after)

        def delta_ops(**labels):
            return (harness.metric_sum(after, ops, **labels)
                    - harness.metric_sum(before, ops, **labels))
        self.assertEqual(delta_ops(kind="provision", state="accepted"), 3)
        self.assertEqual(delta_ops(kind="provision", state="joined"), 1)
        self.assertEqual(delta_ops(kind="bind", state="accepted"), 1)
        self.assertEqual(delta_ops(kind="unbind", state="accepted"), 1)
        self.assertEqual(delta_ops(kind="deprovision", state="accepted"), 1)

        req = "osbq_http_requests_total"
        self.assertEqual(delta(req, route=INSTANCE_ROUTE, method="PUT", code="202"), 4)
        self.assertEqual(delta(req, route=INSTANCE_ROUTE, method="DELETE", code="202"), 1)
        self.assertEqual(delta(req, route=LAST_OP_ROUTE, method="GET", code="200"), polls)
        self.assertEqual(delta(req, route=LAST_OP_ROUTE, method="GET", code="410"), gone_polls)
        self.assertEqual(delta(req, route=BINDING_ROUTE, method="PUT", code="201"), 1)
        self.assertEqual(delta(req, route=BINDING_ROUTE, method="DELETE", code="200"), 1)
        self.assertEqual(delta(req, route=INSTANCE_ROUTE, method="GET", code="401"), 1)
        self.assertEqual(delta(req, route="unmatched", method="GET", code="404"), 1)
        # The histogram counts the same requests, per route, and its buckets are cumulative.
        hist = "osbq_http_request_duration_seconds"
        self.assertEqual(delta(hist + "_count", route=LAST_OP_ROUTE), polls + gone_polls)
        self.assertEqual(delta(hist + "_count", route=INSTANCE_ROUTE), 6)
        self.assertEqual(delta(hist + "_bucket", route=LAST_OP_ROUTE, le="+Inf"),
                         polls + gone_polls)
        buckets = sorted(((float(dict(k[1])["le"]), v) for k, v in after.items()
                          if k[0] == hist + "_bucket" and dict(k[1])["route"] == BINDING_ROUTE))
        self.assertEqual([v for _, v in buckets], sorted(v for _, v in buckets))
        self.assertEqual(value(after, "osbq_sync_waits_in_flight"), 0)
        # Every poll named its operation: each read it alone (decision 0043); those of an
        # operation in progress whose plan's average the gateway did not hold read the record
        # too (test_round_trips counts those).
        reads = "osbq_last_operation_reads_total"
        self.assertEqual(delta(reads, read="operation"), polls + gone_polls)
        # A poll naming none reads the record (last_operation.lua), and only that.
        r = self.osb.request("GET", "/v2/service_instances/%s/last_operation" % failed)
        self.assertEqual(r.status, 200, r.body)
        harness.wait_until(lambda: value(self.scraper.samples(), reads, read="record")
                           - value(after, reads, read="record") == 1, 5,
                           "the poll's read to be counted")
        self.assertEqual(value(self.scraper.samples(), reads, read="operation"),
                         value(after, reads, read="operation"))
        # Every job sent went through the dispatcher's lanes: the sync bind and unbind through
        # "waiting", the three provisions and the async deprovision through "new" (the joined
        # request sends no job of its own), all of the one platform without OSBQ_PLATFORMS.
        wait = "osbq_dispatch_wait_seconds_count"
        self.assertEqual(delta(wait, lane="waiting", platform="default"), 2)
        self.assertEqual(delta(wait, lane="new", platform="default"), 4)
        self.assertEqual({dict(ls)["platform"] for (n, ls) in after if n == wait}, {"default"})
        # The access log names the operation and instance of the accepted provision.
        harness.wait_until(lambda: re.search(r"msg=request .*status=202 .*instance=%s .*op=%s"
                                             % (slow, first.json()["operation"]),
                                             self.gateway.log()) is not None,
                           5, "the access-log line of the provision")

    def test_a_killed_workers_step_taken_from_it_is_counted(self):
        """The worker dies mid-step: the gateway sees its connection end (a worker gone,
        disconnected) and takes the step from it (revoked, resent), no lease running out
        (decision 0052)."""
        before = self.scraper.samples()
        instance = str(uuid.uuid4())
        r = self.provision(instance, plan=SLOW_PROVISION)
        self.assertEqual(r.status, 202, r.body)
        operation = r.json()["operation"]
        harness.wait_until(lambda: "job_start" in self.worker.log(), 5, "the job to start")
        harness.kill(self.worker)
        self.worker = self.stack.start_worker()
        state, _ = self.wait_done(instance, operation)
        self.assertEqual(state, "succeeded")
        after = self.scraper.samples()

        def delta(name, **labels):
            return value(after, name, **labels) - value(before, name, **labels)
        self.assertEqual(delta("osbq_workers_gone_total", reason="disconnected"), 1)
        self.assertEqual(delta("osbq_steps_revoked_total"), 1)
        self.assertEqual(delta("osbq_lease_expiries_total"), 0)
        self.assertGreaterEqual(delta("osbq_job_retries_total"), 1)

    def test_redis_errors_are_counted(self):
        before = value(self.scraper.samples(), "osbq_redis_errors_total")
        self.stack.redis.send_signal(signal.SIGSTOP)
        try:
            r = self.osb.request("GET", "/v2/service_instances/%s/last_operation"
                                 % uuid.uuid4())
            self.assertEqual(r.status, 503, r.body)
        finally:
            self.stack.redis.send_signal(signal.SIGCONT)
        after = value(self.scraper.samples(), "osbq_redis_errors_total")
        self.assertGreaterEqual(after - before, 1)


class DispatchByPlatformTest(unittest.TestCase):
    """The dispatcher's figures with two platforms (OSBQ_PLATFORMS): each job's wait counted
    under its lane and its tenant's platform, never its tenant; the tenants waiting and the
    longest wait while no worker takes the jobs, and once they all left."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="osbq-metrics-platforms-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        platforms = []
        for name in ("cf", "k8s"):
            with open(os.path.join(self.dir, name + "-password"), "w") as f:
                f.write("pw-%s\n" % name)
            platforms.append({"name": name, "prefix": "/" + name,
                              "basic": {"username": name, "password_file": name + "-password"}})
        with open(os.path.join(self.dir, "platforms.json"), "w") as f:
            json.dump({"platforms": platforms}, f)
        # Recovery never resends here: every job goes through the "new" lane once.
        self.stack = harness.Stack(catalog=CATALOG, extra_env={"OSBQ_CLAIM_TIMEOUT_MS": "60000"})
        self.addCleanup(self.stack.stop)
        self.gateway = self.stack.start_gateway(
            OSBQ_PLATFORMS=os.path.join(self.dir, "platforms.json"), OSBQ_BROKER_USERNAME=None,
            OSBQ_BROKER_PASSWORD=None)
        self.scraper = harness.MetricsScraper(self.gateway.port)
        self.addCleanup(self.scraper.close)

    def provision(self, platform, context):
        c = harness.Client(self.gateway.port, platform, "pw-" + platform)
        try:
            instance = str(uuid.uuid4())
            r = c.request("PUT", "/%s/v2/service_instances/%s?accepts_incomplete=true"
                          % (platform, instance),
                          {"service_id": SERVICE, "plan_id": FAST, "context": context,
                           "organization_guid": "org", "space_guid": "space"})
            self.assertEqual(r.status, 202, r.body)
            return instance
        finally:
            c.close()

    def test_waits_by_lane_and_platform(self):
        wait = "osbq_dispatch_wait_seconds_count"
        samples = self.scraper.samples()
        # The platforms' series exist from the start, at 0, in every lane.
        for platform in ("cf", "k8s"):
            for lane in ("waiting", "due", "new"):
                key = (wait, frozenset({"lane": lane, "platform": platform}.items()))
                self.assertEqual(samples.get(key), 0, key)
        self.assertEqual(value(samples, "osbq_dispatch_tenants_waiting"), 0)

        # No worker yet: the jobs of three tenants (two organizations of cf, a namespace of
        # k8s) wait in the dispatcher's "new" lane.
        cf = {"platform": "cloudfoundry", "organization_guid": "org-a", "space_guid": "s"}
        for context in (cf, cf, dict(cf, organization_guid="org-b")):
            self.provision("cf", context)
        self.provision("k8s", {"platform": "kubernetes", "namespace": "ns-1"})
        harness.wait_until(
            lambda: value(self.scraper.samples(), "osbq_dispatch_tenants_waiting") == 3, 5,
            "three tenants waiting")
        time.sleep(0.2)
        samples = self.scraper.samples()
        self.assertGreater(value(samples, "osbq_dispatch_longest_wait_seconds", lane="new"), 0.1)
        self.assertEqual(value(samples, "osbq_dispatch_longest_wait_seconds", lane="waiting"), 0)
        self.assertEqual(value(samples, "osbq_jobs_queued"), 4)

        self.stack.start_worker()
        harness.wait_until(
            lambda: harness.metric_sum(self.scraper.samples(), wait, lane="new") == 4, 15,
            "the four jobs to leave")
        samples = self.scraper.samples()
        self.assertEqual(value(samples, wait, lane="new", platform="cf"), 3)
        self.assertEqual(value(samples, wait, lane="new", platform="k8s"), 1)
        # Bounded labels: the platforms of OSBQ_PLATFORMS, never a tenant.
        self.assertEqual({dict(ls)["platform"] for (n, ls) in samples if n == wait},
                         {"cf", "k8s"})
        self.assertEqual(value(samples, "osbq_dispatch_tenants_waiting"), 0)
        self.assertEqual(value(samples, "osbq_dispatch_longest_wait_seconds", lane="new"), 0)


class MetricsAuthTest(unittest.TestCase):
    def setUp(self):
        self.stack = harness.Stack(catalog=CATALOG)

    def tearDown(self):
        self.stack.stop()

    def test_credentials_protect_metrics_only(self):
        gateway = self.stack.start_gateway(OSBQ_METRICS_USERNAME="prom",
                                           OSBQ_METRICS_PASSWORD="scrape-pw")
        osb = self.stack.client(gateway)
        try:
            r = osb.request("GET", "/metrics", auth=False)
            self.assertEqual(r.status, 401)
            self.assertIn("description", r.json())
            self.assertIn("basic", r.header("www-authenticate").lower())
            # The broker's credentials are not the metrics credentials.
            self.assertEqual(osb.request("GET", "/metrics").status, 401)
            scraper = harness.MetricsScraper(gateway.port, auth=("prom", "scrape-pw"))
            self.assertIn("osbq_http_requests_total", scraper.get().body.decode())
            scraper.close()
            # Probes stay open; the broker API keeps its own credentials.
            self.assertEqual(osb.request("GET", "/healthz", auth=False).status, 200)
            self.assertEqual(osb.request("GET", "/v2/catalog").status, 200)
        finally:
            osb.close()

    def test_half_set_credentials_stop_start_up(self):
        for only in ({"OSBQ_METRICS_USERNAME": "prom"}, {"OSBQ_METRICS_PASSWORD": "pw"}):
            code, out = harness.run_once([harness.GATEWAY], self.stack.env(**only))
            self.assertNotEqual(code, 0)
            self.assertIn("OSBQ_METRICS_USERNAME and OSBQ_METRICS_PASSWORD", out)


if __name__ == "__main__":
    unittest.main()
