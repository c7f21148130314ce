"""The worker's metrics endpoint (OSBQ_METRICS_LISTEN, docs/metrics.md), its status for
osbq-ctl and its log context, against real processes: redis-server, a gateway and a worker on
loopback with the sim backend (tests/data/catalog-bindings.json, plus one exec plan whose
program fails). Counters must move by exactly what a lifecycle did; the text must be valid
Prometheus exposition format; the pinned OSBQ_METRICS_USERNAME/PASSWORD protect /metrics (not
/healthz); a port already taken stops the worker at start-up; every log line about a job names
its operation, instance and request identity."""

import http.client
import json
import os
import re
import socket
import time
import unittest
import uuid

import harness

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-bindings.json")
SERVICE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"
FAST = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"  # every operation at once
EXEC_FAIL = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f99"  # added below: its program exits 3
FAIL_PROGRAM = os.path.join(harness.SOURCE_DIR, "tests", "data", "exec", "fail.sh")
CONCURRENCY = 3
NAMESPACE = "osbq"
KINDS = ("provision", "update", "deprovision", "bind", "unbind")
STATES = ("succeeded", "failed", "released", "lost")

parse_metrics = harness.parse_metrics
value = harness.metric_value

# One logfmt field: key=bare or key="quoted with \" escapes".
_FIELD = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)')


def logfmt(line):
    """The (key, value) pairs of one logfmt line, in order; values unquoted."""
    pairs = []
    for key, raw in _FIELD.findall(line):
        if raw.startswith('"'):
            raw = re.sub(r'\\(.)', r'\1', raw[1:-1])
        pairs.append((key, raw))
    return pairs


def write_catalog(workdir):
    """catalog-bindings.json plus an exec plan whose program fails (tests/data/exec/fail.sh):
    the exec backend logs its exit status, a line of the job's that is not job_start/job_end."""
    with open(CATALOG) as f:
        catalog = json.load(f)
    service = next(s for s in catalog["services"] if s["id"] == SERVICE)
    service["plans"].append({
        "id": EXEC_FAIL, "name": "exec-fail", "description": "Its program always fails.",
        "osbq": {"backend": "exec", "command": ["/bin/sh", FAIL_PROGRAM], "timeout_ms": 10000}})
    path = os.path.join(workdir, "catalog.json")
    with open(path, "w") as f:
        json.dump(catalog, f)
    return path


def start_worker_with_metrics(stack, **overrides):
    """A worker serving its metrics on a free loopback port; waits until /healthz answers."""
    port = harness.free_port()
    worker = stack.start_worker(OSBQ_METRICS_LISTEN="127.0.0.1:%d" % port, **overrides)
    worker.metrics_port = port

    def healthy():
        if not worker.alive():
            raise AssertionError("worker exited:\n" + worker.log())
        c = harness.Client(port)
        try:
            return c.request("GET", "/healthz", auth=False, version=False).status == 200
        except OSError:
            return False
        finally:
            c.close()

    harness.wait_until(healthy, harness.START_TIMEOUT_S, "the worker to answer /healthz")
    return worker


class WorkerMetricsTest(unittest.TestCase):
    def setUp(self):
        self.stack = harness.Stack(catalog=CATALOG, extra_env={
            "OSBQ_WORKER_CONCURRENCY": str(CONCURRENCY)})
        self.scraper = None
        self.osb = None

    def tearDown(self):
        if self.osb is not None:
            self.osb.close()
        if self.scraper is not None:
            self.scraper.close()
        self.stack.stop()

    # ---- the lifecycle ----

    def test_lifecycle_counters_status_and_log_context(self):
        self.stack.catalog = write_catalog(self.stack.workdir)
        gateway = self.stack.start_gateway()
        worker = start_worker_with_metrics(self.stack, OSBQ_LOG_LEVEL="debug")
        harness.wait_workers_connected([gateway], 1)
        self.scraper = harness.MetricsScraper(worker.metrics_port)
        self.osb = self.stack.client(gateway)
        harness.wait_until(
            lambda: value(self.scraper.samples(), "osbq_gateways_connected") == 1, 10,
            "the worker to count its one gateway")

        r = self.scraper.get()
        self.assertEqual(r.header("content-type"), "text/plain; version=0.0.4; charset=utf-8")
        text = r.body.decode()
        before = parse_metrics(text)
        for name, kind in (("osbq_worker_operations_total", "counter"),
                           ("osbq_operation_duration_seconds", "histogram"),
                           ("osbq_jobs_running", "gauge"), ("osbq_worker_slots", "gauge"),
                           ("osbq_jobs_rejected_total", "counter"),
                           ("osbq_jobs_handed_total", "counter"),
                           ("osbq_claims_total", "counter"),
                           ("osbq_finish_retries_total", "counter"),
                           ("osbq_gateways_connected", "gauge"),
                           ("osbq_build_info", "gauge"), ("osbq_redis_errors_total", "counter"),
                           ("process_start_time_seconds", "gauge"),
                           ("process_resident_memory_bytes", "gauge"),
                           ("process_cpu_seconds_total", "counter"),
                           ("process_open_fds", "gauge"), ("process_max_fds", "gauge")):
            self.assertIn("# TYPE %s %s\n" % (name, kind), text)
            self.assertIn("# HELP %s " % name, text)
        self.assertEqual(value(before, "osbq_build_info", version=self.version(), role="worker"),
                         1)
        self.assertEqual(value(before, "osbq_worker_slots"), CONCURRENCY)
        self.assertEqual(value(before, "osbq_gateways_connected"), 1)
        self.assertEqual(value(before, "osbq_jobs_running"), 0)
        self.assertLess(abs(value(before, "process_start_time_seconds") - time.time()), 120)
        # Every series exists from the start, at 0: rate() works from the first scrape.
        # The service and plan labels take the catalog's ids, and "unknown" for anything else.
        for kind in KINDS:
            for state in STATES:
                for service, plan in ((SERVICE, FAST), (SERVICE, EXEC_FAIL),
                                      ("unknown", "unknown")):
                    labels = {"kind": kind, "state": state, "service": service, "plan": plan}
                    self.assertIn(("osbq_worker_operations_total",
                                   frozenset(labels.items())), before)
        # HEAD answers like GET, without a body.
        conn = http.client.HTTPConnection("127.0.0.1", worker.metrics_port, timeout=10)
        conn.request("HEAD", "/metrics")
        head = conn.getresponse()
        self.assertEqual(head.status, 200)
        self.assertEqual(head.read(), b"")
        conn.close()

        # provision, bind, unbind, deprovision, and a provision whose program fails: all
        # synchronous, so each has ended when its answer arrives.
        instance = "wm-" + uuid.uuid4().hex[:12]
        failing = "wm-fail-" + uuid.uuid4().hex[:12]
        request_id = "req-" + uuid.uuid4().hex
        failing_request_id = "req-fail-" + uuid.uuid4().hex
        path = "/v2/service_instances/" + instance
        body = {"service_id": SERVICE, "plan_id": FAST, "organization_guid": "org",
                "space_guid": "space"}
        r = self.osb.request("PUT", path, body,
                             headers={"X-Broker-API-Request-Identity": request_id})
        self.assertEqual(r.status, 201, r.body)
        bind_body = {"service_id": SERVICE, "plan_id": FAST}
        r = self.osb.request("PUT", path + "/service_bindings/b-ok", bind_body)
        self.assertEqual(r.status, 201, r.body)
        query = "?service_id=%s&plan_id=%s" % (SERVICE, FAST)
        r = self.osb.request("DELETE", path + "/service_bindings/b-ok" + query)
        self.assertEqual(r.status, 200, r.body)
        r = self.osb.request("DELETE", path + query)
        self.assertEqual(r.status, 200, r.body)
        r = self.osb.request("PUT", "/v2/service_instances/" + failing,
                             dict(body, plan_id=EXEC_FAIL),
                             headers={"X-Broker-API-Request-Identity": failing_request_id})
        self.assertNotIn(r.status, (200, 201, 202), r.body)

        expected = {("provision", "succeeded"): 1, ("provision", "failed"): 1,
                    ("bind", "succeeded"): 1, ("unbind", "succeeded"): 1,
                    ("deprovision", "succeeded"): 1}

        def deltas(after):
            d = {}
            for kind in KINDS:
                for state in STATES:
                    n = (harness.metric_sum(after, "osbq_worker_operations_total", kind=kind,
                                            state=state)
                         - harness.metric_sum(before, "osbq_worker_operations_total", kind=kind,
                                              state=state))
                    if n:
                        d[(kind, state)] = n
            return d

        # The gateway answers once the outcome is recorded; the worker counts it right after.
        found = []

        def counted():
            samples = self.scraper.samples()
            found[:] = [samples]
            return deltas(samples) == expected and value(samples, "osbq_jobs_running") == 0

        try:
            harness.wait_until(counted, 10, "the five operations to be counted")
        except AssertionError:
            self.fail("operation deltas %r, expected %r" % (deltas(found[0]), expected))
        after = found[0]
        # The failing provision is counted under its own plan.
        failed = {"kind": "provision", "state": "failed", "service": SERVICE, "plan": EXEC_FAIL}
        self.assertEqual(value(after, "osbq_worker_operations_total", **failed)
                         - value(before, "osbq_worker_operations_total", **failed), 1)

        def delta(name, **labels):
            return value(after, name, **labels) - value(before, name, **labels)

        self.assertEqual(delta("osbq_claims_total", result="claimed"), 5)
        self.assertEqual(delta("osbq_claims_total", result="error"), 0)
        # Both provisions ended with a recorded outcome.
        self.assertEqual(delta("osbq_operation_duration_seconds_count", kind="provision"), 2)
        self.assertEqual(delta("osbq_operation_duration_seconds_count", kind="bind"), 1)
        self.assertEqual(delta("osbq_operation_duration_seconds_count", kind="unbind"), 1)
        self.assertEqual(delta("osbq_operation_duration_seconds_count", kind="deprovision"), 1)
        self.assertEqual(delta("osbq_operation_duration_seconds_bucket", kind="provision",
                               le="+Inf"), 2)
        self.assertGreaterEqual(delta("osbq_operation_duration_seconds_sum", kind="provision"), 0)
        self.assertEqual(delta("osbq_finish_retries_total"), 0)
        self.assertEqual(delta("osbq_jobs_rejected_total"), 0)
        self.assertEqual(value(after, "osbq_worker_slots"), CONCURRENCY)
        self.assertEqual(value(after, "osbq_gateways_connected"), 1)

        self.check_status(worker)
        self.check_log_context(worker, instance, request_id, failing, failing_request_id)

        # A clean stop removes the status at once.
        worker_id = harness.worker_id(worker)
        self.assertEqual(worker.stop(), 0)
        self.assertIsNone(self.stack.redis.command(
            "GET", "%s:status:worker:%s" % (NAMESPACE, worker_id)))

    def version(self):
        out = harness.run_once([harness.WORKER, "--version"], self.stack.env())[1]
        return re.search(r"(\d+\.\d+\.\d+)", out).group(1)

    def check_status(self, worker):
        """ns:status:worker:<id>: what osbq-ctl workers shows."""
        worker_id = harness.worker_id(worker)
        self.assertIn(worker_id, self.stack.redis.command(
            "ZRANGE", "%s:status:worker" % NAMESPACE, 0, -1))
        text = self.stack.redis.command("GET", "%s:status:worker:%s" % (NAMESPACE, worker_id))
        self.assertIsNotNone(text, "no status published")
        status = json.loads(text)
        self.assertEqual(status["id"], worker_id)
        self.assertEqual(status["pid"], worker.pid)
        self.assertEqual(status["host"], socket.gethostname())
        self.assertEqual(status["version"], self.version())
        self.assertLess(abs(status["started_ms"] / 1000 - time.time()), 120)
        self.assertEqual(status["slots"], CONCURRENCY)
        self.assertEqual(status["gateways"], 1)
        self.assertIn(status["running"], range(0, CONCURRENCY + 1))
        self.assertEqual(status["metrics"], "127.0.0.1:%d" % worker.metrics_port)
        ttl = self.stack.redis.command("PTTL", "%s:status:worker:%s" % (NAMESPACE, worker_id))
        self.assertTrue(0 < ttl <= 10000, ttl)

    def check_log_context(self, worker, instance, request_id, failing, failing_request_id):
        """Every worker line about a provision names its operation once, its instance and its
        request identity: job_start and job_end, and for the failing one the exec backend's
        line about its program's exit status."""
        lines = [logfmt(l) for l in worker.log().splitlines()]
        for pairs in lines:
            keys = [k for k, _ in pairs]
            self.assertEqual(len(keys), len(set(keys)), "a key twice: %r" % pairs)

        def lines_about(iid, rid):
            starts = [dict(p) for p in lines if ("msg", "job_start") in p
                      and ("instance", iid) in p and ("kind", "provision") in p]
            self.assertEqual(len(starts), 1, worker.log())
            op = starts[0]["op"]
            about = [p for p in lines
                     if any(v == op or (k == "msg" and op in v) for k, v in p)]
            for pairs in about:
                fields = dict(pairs)
                self.assertEqual(fields.get("op"), op, pairs)
                self.assertEqual(fields.get("instance"), iid, pairs)
                self.assertEqual(fields.get("request_id"), rid, pairs)
            return op, [dict(p) for p in about]

        op, about = lines_about(instance, request_id)
        events = [f["msg"] for f in about]
        self.assertEqual(events.count("job_start"), 1, events)
        self.assertEqual(events.count("job_end"), 1, events)
        self.assertEqual([f["result"] for f in about if f["msg"] == "job_end"], ["succeeded"])

        failing_op, about = lines_about(failing, failing_request_id)
        self.assertNotEqual(failing_op, op)
        self.assertEqual([f["result"] for f in about if f["msg"] == "job_end"], ["failed"])
        other = [f for f in about if f["msg"] not in ("job_start", "job_end")]
        self.assertTrue(any("exited with status 3" in f["msg"] for f in other), about)
        for f in other:
            self.assertIn("func", f)

        # The bind lines name the binding too.
        binds = [dict(p) for p in lines if ("msg", "job_end") in p and ("kind", "bind") in p
                 and ("instance", instance) in p]
        self.assertEqual([b["binding"] for b in binds], ["b-ok"])

    # ---- auth and routes ----

    def test_basic_auth_and_routes(self):
        worker = start_worker_with_metrics(self.stack, OSBQ_METRICS_USERNAME="scraper",
                                           OSBQ_METRICS_PASSWORD="metrics-pass")
        self.scraper = harness.MetricsScraper(worker.metrics_port)
        r = self.scraper.request("GET", "/metrics")
        self.assertEqual(r.status, 401)
        self.assertIn("basic", (r.header("www-authenticate") or "").lower())
        self.assertEqual(r.header("content-type"), "application/json")
        self.assertIn("description", r.json())
        r = self.scraper.request("GET", "/metrics", auth=("scraper", "wrong"))
        self.assertEqual(r.status, 401)
        r = self.scraper.request("GET", "/metrics", auth=("scraper", "metrics-pass"))
        self.assertEqual(r.status, 200)
        samples = parse_metrics(r.body.decode())
        self.assertEqual(value(samples, "osbq_worker_slots"), CONCURRENCY)
        self.assertEqual(value(samples, "osbq_gateways_connected"), 0)
        # Probes stay open.
        r = self.scraper.request("GET", "/healthz")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json(), {"status": "ok"})
        r = self.scraper.request("GET", "/nothing-here")
        self.assertEqual(r.status, 404)
        self.assertIn("description", r.json())
        r = self.scraper.request("POST", "/metrics", auth=("scraper", "metrics-pass"))
        self.assertEqual(r.status, 405)
        self.assertIn("GET", r.header("allow"))
        self.assertIn("description", r.json())

    # ---- start-up ----

    def test_port_in_use_stops_the_worker(self):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            port = taken.getsockname()[1]
            started = time.monotonic()
            status, out = harness.run_once(
                [harness.WORKER], self.stack.env(OSBQ_METRICS_LISTEN="127.0.0.1:%d" % port))
            took = time.monotonic() - started
        self.assertNotEqual(status, 0, out)
        self.assertIn("OSBQ_METRICS_LISTEN", out)
        self.assertIn("127.0.0.1:%d" % port, out)
        self.assertLess(took, 5, out)
        for marker in harness.SANITIZER_MARKERS:
            self.assertNotIn(marker, out)

    def test_no_listener_when_unset(self):
        """Without OSBQ_METRICS_LISTEN the status says so and the worker serves nothing."""
        worker = self.stack.start_worker()
        worker_id = harness.worker_id(worker)
        key = "%s:status:worker:%s" % (NAMESPACE, worker_id)
        harness.wait_until(lambda: self.stack.redis.command("GET", key) is not None, 5,
                           "the worker's status")
        status = json.loads(self.stack.redis.command("GET", key))
        self.assertIsNone(status["metrics"])
        self.assertEqual(status["gateways"], 0)
        self.assertNotIn("OSBQ_METRICS_LISTEN", worker.log())
        self.assertIn("metrics off", worker.log())


if __name__ == "__main__":
    unittest.main()
