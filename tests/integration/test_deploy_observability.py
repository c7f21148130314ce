"""The files of deploy/ against real processes: a gateway and a worker started with the
environment deploy/kubernetes gives them, its Secrets laid out as kubelet mounts them (mode
0440, each key a link into `..data`, the key file too), answering the probes the
manifests name; a worker key added to the bus's clients Secret is admitted; after a
provision/bind lifecycle, every metric named by the Grafana dashboard (deploy/grafana), the
alert rules (deploy/prometheus) and the autoscaler's query (deploy/kubernetes/components/keda)
is one their /metrics serve, with the labels the queries use."""

import json
import os
import re
import shutil
import subprocess
import unittest
import uuid

import yaml

import harness

DEPLOY_DIR = os.path.join(harness.SOURCE_DIR, "deploy")
DASHBOARD = os.path.join(DEPLOY_DIR, "grafana", "osbq.json")
ALERTS = os.path.join(DEPLOY_DIR, "prometheus", "alerts.yml")
KUBE_BASE = os.path.join(DEPLOY_DIR, "kubernetes", "base")
SCALED_OBJECT = os.path.join(DEPLOY_DIR, "kubernetes", "components", "keda", "scaledobject.yaml")
CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-bindings.json")
CTL = os.path.join(harness.BUILD_DIR, "bin", "osbq-ctl")
SERVICE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"  # osbq-bind-test
FAST = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"  # bind-fast: every operation at once
FAIL_BIND = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f08"  # fail-bind: the backend refuses binds
# The manifests' mount points, recreated under the test's directory.
MOUNTED = ("/run/secrets/", "/etc/osbq/bus-clients")
# Series Prometheus makes itself (alerts only): one per scrape target.
PROMETHEUS_OWN = {"up"}
# Labels Prometheus adds to every scraped series.
TARGET_LABELS = {"job", "instance"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
                "unless", "bool", "offset", "inf", "nan"}
# The harness's own credentials and Redis URL: the manifests' *_FILE variables replace them.
HARNESS_CREDENTIALS = {"OSBQ_REDIS_URL": None, "OSBQ_BROKER_USERNAME": None,
                       "OSBQ_BROKER_PASSWORD": None}
# The addresses and ports the harness chooses on loopback instead of the manifests' own.
HARNESS_SET = {"OSBQ_LISTEN", "OSBQ_BUS_BIND", "OSBQ_BUS_ADVERTISE", "OSBQ_METRICS_LISTEN",
               "POD_IP"}


def dashboard_queries():
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    queries = []

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            queries.extend(t["expr"] for t in p.get("targets", []))
    walk(dashboard["panels"])
    return dashboard, queries


def alert_queries():
    with open(ALERTS) as f:
        groups = yaml.safe_load(f)["groups"]
    return [rule["expr"] for g in groups for rule in g["rules"]]


def scaler_queries():
    """The queries of the ScaledObject's prometheus triggers."""
    with open(SCALED_OBJECT) as f:
        scaled = yaml.safe_load(f)
    return [t["metadata"]["query"] for t in scaled["spec"]["triggers"]
            if t["type"] == "prometheus"]


def selectors(expr):
    """[(metric name, {label names its matcher uses})] of a PromQL expression: the identifiers
    that are neither functions, keywords, nor label names of by/without/on/ignoring lists."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\[[^\]]*\]", "", text)  # range and subquery selectors
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", text)
    found = []
    # An aggregation's name may stand before its by/without list: `sum by (kind) (...)`.
    for m in re.finditer(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(?:(?:by|without)\s*)?(\()?",
                         text):
        name, matcher, call = m.group(1), m.group(2), m.group(3)
        if call or name.lower() in PROMQL_WORDS:
            continue
        labels = set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", matcher or ""))
        found.append((name, labels))
    return found


def kube_container(name):
    with open(os.path.join(KUBE_BASE, name + ".yaml")) as f:
        deployment = next(d for d in yaml.safe_load_all(f) if d["kind"] == "Deployment")
    return deployment["spec"]["template"]["spec"]["containers"][0]


def read(path):
    with open(path) as f:
        return f.read()


def update_secret_volume(directory, contents):
    """Lays out `contents` ({key: text}) as kubelet writes a Secret volume: the files (mode 0440)
    in a new timestamped directory, `..data` switched to it by a rename, a link per key through
    `..data`; a previous timestamped directory is removed."""
    os.makedirs(directory, exist_ok=True)
    stamp = "..%s" % uuid.uuid4().hex
    os.mkdir(os.path.join(directory, stamp))
    for key, text in contents.items():
        path = os.path.join(directory, stamp, key)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o440)
    data = os.path.join(directory, "..data")
    old = os.readlink(data) if os.path.islink(data) else None
    os.symlink(stamp, data + "_tmp")
    os.rename(data + "_tmp", data)
    for key in contents:
        if not os.path.islink(os.path.join(directory, key)):
            os.symlink(os.path.join("..data", key), os.path.join(directory, key))
    if old is not None:
        shutil.rmtree(os.path.join(directory, old))


class DeployObservabilityTest(harness.StackTestCase):
    CATALOG = CATALOG

    @classmethod
    def kube_env(cls, container, root):
        """The container's environment with its mounted paths moved under `root`, less what
        the harness sets and what comes from an optional Secret that is not there."""
        env = {}
        for entry in container["env"]:
            name = entry["name"]
            if name in HARNESS_SET or "value" not in entry:
                continue
            value = entry["value"]
            if value.startswith(MOUNTED):
                value = root + value
            env[name] = value
        return env

    @classmethod
    def start_stack(cls):
        stack = cls.stack
        root = os.path.join(stack.workdir, "mounts")
        bus = os.path.join(stack.workdir, "bus")
        os.makedirs(bus)
        for pair in ("gateways", "worker"):
            subprocess.run([CTL, "bus-cert", os.path.join(bus, pair)], check=True,
                           capture_output=True, timeout=10)
        contents = {
            "redis_url": stack.redis.url + "\n",
            "broker_username": stack.username + "\n",
            "broker_password": stack.password + "\n",
        }
        for name in ("gateways_secret", "gateways", "worker_secret"):
            contents["bus_" + name] = read(os.path.join(bus, name))
        # The projected volume: every key a link into `..data`.
        update_secret_volume(root + "/run/secrets/osbq", contents)
        # The key file's Secret volume: a link into `..data`, as the other files.
        update_secret_volume(root + "/run/secrets/osbq-secret-keys",
                             {"secret_keys": "ab" * 32 + "\n"})
        cls.clients = root + "/etc/osbq/bus-clients"
        update_secret_volume(cls.clients, {"worker": read(os.path.join(bus, "worker"))})
        cls.bus = bus

        gateway_env = cls.kube_env(kube_container("gateway"), root)
        worker_env = cls.kube_env(kube_container("worker"), root)
        cls.gateway_env, cls.worker_env = gateway_env, worker_env
        cls.gateway = stack.start_gateway(**dict(HARNESS_CREDENTIALS, **gateway_env))
        cls.metrics_port = harness.free_port()
        cls.worker = stack.start_worker(**dict(HARNESS_CREDENTIALS, OSBQ_CATALOG=CATALOG,
                                               OSBQ_METRICS_LISTEN="127.0.0.1:%d"
                                               % cls.metrics_port, **worker_env))
        harness.wait_workers_connected([cls.gateway], 1)
        cls.lifecycle(stack)
        cls.gateway_samples = cls.scrape(cls.gateway.port)
        cls.worker_samples = cls.scrape(cls.metrics_port)

    @classmethod
    def lifecycle(cls, stack):
        """Provision, bind, unbind, deprovision (synchronous), a bind the backend refuses, and
        an asynchronous provision polled to its end: every counter the files name moves."""
        client = stack.client(cls.gateway)
        try:
            instance = "/v2/service_instances/dobs-" + uuid.uuid4().hex[:12]
            body = {"service_id": SERVICE, "plan_id": FAST, "organization_guid": "org",
                    "space_guid": "space"}
            query = "?service_id=%s&plan_id=%s" % (SERVICE, FAST)
            steps = [("PUT", instance, body, 201),
                     ("PUT", instance + "/service_bindings/b1", {"service_id": SERVICE,
                                                                 "plan_id": FAST}, 201),
                     ("DELETE", instance + "/service_bindings/b1" + query, None, 200),
                     ("DELETE", instance + query, None, 200)]
            for method, path, payload, status in steps:
                r = client.request(method, path, payload)
                assert r.status == status, "%s %s: %d %s" % (method, path, r.status, r.body)
            failing = "/v2/service_instances/dobs-f-" + uuid.uuid4().hex[:12]
            r = client.request("PUT", failing, dict(body, plan_id=FAIL_BIND))
            assert r.status == 201, r.body
            r = client.request("PUT", failing + "/service_bindings/b2",
                               {"service_id": SERVICE, "plan_id": FAIL_BIND})
            assert r.status >= 400, r.body
            later = "/v2/service_instances/dobs-a-" + uuid.uuid4().hex[:12]
            r = client.request("PUT", later + "?accepts_incomplete=true", body)
            assert r.status == 202, r.body
            operation = r.json().get("operation")

            def done():
                q = "/last_operation?service_id=%s&plan_id=%s" % (SERVICE, FAST)
                if operation:
                    q += "&operation=" + operation
                answer = client.request("GET", later + q)
                return answer.status == 200 and answer.json()["state"] == "succeeded"
            harness.wait_until(done, 10, "the asynchronous provision to succeed")
        finally:
            client.close()

    @classmethod
    def scrape(cls, port):
        client = harness.Client(port)
        try:
            r = client.request("GET", "/metrics", auth=False, version=False)
            assert r.status == 200, r.body
            return harness.parse_metrics(r.body.decode())
        finally:
            client.close()

    def served(self):
        """{sample name: set of label names} over the gateway's and the worker's /metrics."""
        names = {}
        for samples in (self.gateway_samples, self.worker_samples):
            for name, labels in samples:
                names.setdefault(name, set()).update(k for k, _ in labels)
        return names

    def assert_served(self, queries, allowed_extra=frozenset()):
        served = self.served()
        self.assertTrue(queries)
        for expr in queries:
            found = selectors(expr)
            with self.subTest(expr=expr):
                self.assertTrue(found, "names no metric")
                for name, labels in found:
                    if name in allowed_extra:
                        continue
                    self.assertIn(name, served, "not served by a gateway or worker")
                    self.assertLessEqual(labels - TARGET_LABELS, served[name],
                                         "%s has no such label" % name)

    def test_the_manifests_environment_starts_both(self):
        for name in ("OSBQ_REDIS_URL_FILE", "OSBQ_BROKER_PASSWORD_FILE", "OSBQ_SECRET_KEY_FILE",
                     "OSBQ_BUS_CURVE_SERVER_CERT", "OSBQ_BUS_CURVE_CLIENTS_DIR"):
            self.assertIn(name, self.gateway_env)
        for name in ("OSBQ_REDIS_URL_FILE", "OSBQ_BUS_CURVE_CLIENT_CERT"):
            self.assertIn(name, self.worker_env)
        log = self.gateway.log()
        self.assertIn("job bus: CurveZMQ", log)
        self.assertNotIn("OSBQ_SECRET_KEY_FILE is not set", log)
        # Mode 0440 is all a Secret volume allows for the image's user (docs/deploy.md).
        self.assertIn("readable by group or others (mode 440)", log)

    def test_a_worker_added_to_the_clients_secret_is_admitted_without_a_restart(self):
        """As kubelet updates a Secret volume: the new files in a new timestamped directory,
        `..data` switched to it by a rename, then a link for the new key."""
        subprocess.run([CTL, "bus-cert", os.path.join(self.bus, "worker2")], check=True,
                       capture_output=True, timeout=10)
        secret = os.path.join(self.stack.workdir, "worker2-secrets")
        update_secret_volume(secret, {"worker_secret":
                                      read(os.path.join(self.bus, "worker2_secret"))})
        env = dict(self.worker_env, OSBQ_BUS_CURVE_CLIENT_CERT=os.path.join(secret,
                                                                            "worker_secret"))
        worker2 = self.stack.start_worker(**dict(HARNESS_CREDENTIALS, OSBQ_CATALOG=CATALOG,
                                                 **env))
        harness.wait_until(lambda: re.search(r"handshake with \S+ failed", worker2.log()),
                           harness.START_TIMEOUT_S, "the gateway to refuse the unknown worker")
        self.assertEqual(len(harness.connected_workers(self.gateway)), 1)
        update_secret_volume(self.clients,
                             {name: read(os.path.join(self.bus, name))
                              for name in ("worker", "worker2")})
        harness.wait_workers_connected([self.gateway], 2, timeout_s=15)

    def test_probes_the_manifests_name_answer(self):
        for name, port in (("gateway", self.gateway.port), ("worker", self.metrics_port)):
            container = kube_container(name)
            for probe in ("livenessProbe", "readinessProbe"):
                if probe not in container:
                    continue
                path = container[probe]["httpGet"]["path"]
                client = harness.Client(port)
                try:
                    r = client.request("GET", path, auth=False, version=False)
                finally:
                    client.close()
                with self.subTest(container=name, probe=probe, path=path):
                    self.assertEqual(r.status, 200, r.body)

    def test_dashboard_queries_name_served_metrics(self):
        dashboard, queries = dashboard_queries()
        self.assert_served(queries)
        ids = []

        def walk(panels):
            for p in panels:
                ids.append(p["id"])
                walk(p.get("panels", []))
                for t in p.get("targets", []):
                    self.assertEqual(t["datasource"]["uid"], "${datasource}")
        walk(dashboard["panels"])
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        self.assertEqual([v["name"] for v in dashboard["templating"]["list"]], ["datasource"])

    def test_alert_queries_name_served_metrics(self):
        self.assert_served(alert_queries(), allowed_extra=PROMETHEUS_OWN)

    def test_scaler_query_names_served_metrics(self):
        self.assert_served(scaler_queries())

    def test_counters_the_files_watch_moved(self):
        def value(samples, name, **labels):
            return harness.metric_value(samples, name, **labels)
        self.assertGreaterEqual(harness.metric_sum(self.gateway_samples,
                                                   "osbq_gateway_operations_total",
                                                   kind="provision", state="accepted"), 3)
        self.assertEqual(harness.metric_sum(self.worker_samples, "osbq_worker_operations_total",
                                            kind="bind", state="failed"), 1)
        self.assertGreaterEqual(harness.metric_sum(self.worker_samples,
                                                   "osbq_worker_operations_total",
                                                   kind="provision", state="succeeded"), 3)
        self.assertEqual(value(self.gateway_samples, "osbq_workers_live"), 1)
        self.assertEqual(value(self.worker_samples, "osbq_gateways_connected"), 1)

    def test_the_query_reader_finds_names_and_labels(self):
        self.assertEqual(
            selectors('sum by (kind) (rate(osbq_operations_total{state=~"a|b"}[5m])) / '
                      'ignoring(x) histogram_quantile(0.9, rate(osbq_d_bucket[$__rate_interval]))'
                      ' and on (job) up == 0'),
            [("osbq_operations_total", {"state"}), ("osbq_d_bucket", set()), ("up", set())])


if __name__ == "__main__":
    unittest.main()
