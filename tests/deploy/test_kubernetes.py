"""deploy/kubernetes checked without a cluster: every object against Kubernetes' own schemas
(tests/deploy/validate-manifests.mjs, the npm package kubernetes-models), then against osbq:
the variables are ones the binaries know, the files they name are mounted from Secrets that
secrets.example.yaml describes, the probes and ports are the ones the environment sets, the
images are the Dockerfile's, the grace periods cover OSBQ_SHUTDOWN_GRACE_MS, and the network
policies let only gateways and workers reach Redis and only workers reach the bus; the keda
component's ScaledObject scales the workers by a worker's slots."""

import glob
import json
import math
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from test_compose import backend_variables, dockerfile_stages, known_variables  # noqa: E402

KUBE_DIR = os.path.join(harness.SOURCE_DIR, "deploy", "kubernetes")
BASE_DIR = os.path.join(KUBE_DIR, "base")
SECRETS_EXAMPLE = os.path.join(KUBE_DIR, "secrets.example.yaml")
KEDA_DIR = os.path.join(KUBE_DIR, "components", "keda")
# The parameters of KEDA's prometheus trigger (keda.sh/docs/latest/scalers/prometheus): the
# schema takes any string map, so a misspelt one would pass it.
PROMETHEUS_TRIGGER_KEYS = {"serverAddress", "query", "queryParameters", "threshold",
                           "activationThreshold", "namespace", "customHeaders",
                           "ignoreNullValues", "unsafeSsl", "timeout", "authModes"}
NODE_DIR = os.environ.get("OSBQ_DEPLOY_NODE_DIR", os.path.join(harness.BUILD_DIR, "deploy-node"))
# What the gateway does after the grace before it exits, and what kubelet needs to see it exit.
STOP_MARGIN_S = 5
# Components: the Kubernetes kinds each osbq pod runs as, by its component label.
BINARIES = {"gateway": harness.GATEWAY, "worker": harness.WORKER}
# Environment variables that only feed $(NAME) expansion in other values.
EXPANSION_ONLY = {"POD_IP"}


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def manifest_files(directory):
    return sorted(p for p in glob.glob(os.path.join(directory, "**", "*.yaml"), recursive=True)
                  if os.path.basename(p) != "kustomization.yaml")


def project_version():
    with open(os.path.join(harness.SOURCE_DIR, "CMakeLists.txt")) as f:
        return re.search(r"project\(osbq VERSION ([0-9.]+)", f.read()).group(1)


def listen_port(value):
    """The port of host:port or tcp://host:port."""
    return int(value.rsplit(":", 1)[1])


def env_values(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


class KubernetesManifestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.base = [obj for path in manifest_files(BASE_DIR) for obj in load_all(path)]
        cls.secrets = {s["metadata"]["name"]: s for s in load_all(SECRETS_EXAMPLE)}
        cls.components = [obj for path in manifest_files(os.path.join(KUBE_DIR, "components"))
                          for obj in load_all(path)]

    def objects(self, kind, pool=None):
        return [o for o in (pool or self.base) if o["kind"] == kind]

    def workload(self, component):
        """The Deployment or StatefulSet whose pods have this component label."""
        found = [o for o in self.base if o["kind"] in ("Deployment", "StatefulSet")
                 and self.pod_labels(o).get("app.kubernetes.io/component") == component]
        self.assertEqual(len(found), 1, "one workload for " + component)
        return found[0]

    @staticmethod
    def pod_labels(workload):
        return workload["spec"]["template"]["metadata"]["labels"]

    @staticmethod
    def container(workload):
        containers = workload["spec"]["template"]["spec"]["containers"]
        assert len(containers) == 1, "one container per osbq pod"
        return containers[0]

    # (1) Kubernetes' schemas, fields unknown to them included
    def test_objects_match_the_kubernetes_schemas(self):
        validator = os.path.join(NODE_DIR, "validate-manifests.mjs")
        self.assertTrue(os.path.exists(validator), "%s is missing: the deploy.node_modules "
                        "test installs it (tests/deploy/npm-install.sh)" % validator)
        files = manifest_files(KUBE_DIR)
        r = subprocess.run(["node", validator] + files, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, "invalid objects:\n" + r.stderr)
        results = [json.loads(line) for line in r.stdout.splitlines()]
        no_schema = {(x["apiVersion"], x["kind"]) for x in results if x["status"] != "valid"}
        # The retired Service Catalog has no published model: checked by test_registration.
        self.assertEqual(no_schema, {("servicecatalog.k8s.io/v1beta1", "ClusterServiceBroker")})
        expected = sum(len(load_all(p)) for p in files)
        self.assertEqual(len(results), expected, "every object was checked")

    # (2) the base's files are exactly what kustomize renders
    def test_kustomizations_list_every_file_and_nothing_else(self):
        for path in glob.glob(os.path.join(KUBE_DIR, "*", "**", "kustomization.yaml"),
                              recursive=True):
            directory = os.path.dirname(path)
            if directory == os.path.join(KUBE_DIR, "example"):
                continue
            with self.subTest(kustomization=os.path.relpath(path, KUBE_DIR)):
                k = load_all(path)[0]
                # The keda component alone patches: it takes the worker Deployment's replicas
                # from the base (test_scaledobject_scales_the_workers).
                allowed = {"apiVersion", "kind", "resources"}
                if directory == KEDA_DIR:
                    allowed.add("patches")
                self.assertEqual(set(k) - allowed, set(),
                                 "only plain resources: the files are the rendered objects")
                listed = sorted(k["resources"])
                present = sorted(os.path.basename(p) for p in manifest_files(directory))
                self.assertEqual(listed, present)

    def test_kustomize_renders_the_files_as_they_are(self):
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            self.skipTest("no kubectl here: the base is checked file by file")
        r = subprocess.run([kubectl, "kustomize", BASE_DIR], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)

        def key(o):
            return (o["kind"], o["metadata"]["name"])
        rendered = sorted(yaml.safe_load_all(r.stdout), key=key)
        self.assertEqual(rendered, sorted(self.base, key=key))
        r = subprocess.run([kubectl, "kustomize", os.path.join(KUBE_DIR, "example")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        images = re.findall(r"image: (\S+)", r.stdout)
        self.assertIn("registry.example.net/osbq/osbq-gateway:" + project_version(), images)
        # The keda component on the base: the worker Deployment without replicas (the
        # autoscaler's), everything else as the files are, and the ScaledObject.
        with tempfile.TemporaryDirectory() as overlay:
            with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
                yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1",
                                "kind": "Kustomization",
                                "resources": [os.path.relpath(BASE_DIR, overlay)],
                                "components": [os.path.relpath(KEDA_DIR, overlay)]}, f)
            r = subprocess.run([kubectl, "kustomize", overlay], capture_output=True, text=True,
                               timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        rendered = {key(o): o for o in yaml.safe_load_all(r.stdout)}
        worker = rendered.pop(("Deployment", "osbq-worker"))
        self.assertNotIn("replicas", worker["spec"])
        self.assertEqual(worker["spec"]["template"], self.workload("worker")["spec"]["template"])
        scaled = rendered.pop(("ScaledObject", "osbq-worker"))
        self.assertEqual(scaled, load_all(os.path.join(KEDA_DIR, "scaledobject.yaml"))[0])
        self.assertEqual(rendered, {key(o): o for o in self.base
                                    if key(o) != ("Deployment", "osbq-worker")})

    # (3) what the binaries read
    def test_variables_are_ones_the_binaries_list(self):
        backend = backend_variables()
        for component, binary in BINARIES.items():
            known = known_variables(binary) | (backend if component == "worker" else set())
            container = self.container(self.workload(component))
            names = [e["name"] for e in container["env"]]
            self.assertEqual(len(names), len(set(names)), component + ": a variable set twice")
            for i, entry in enumerate(container["env"]):
                name = entry["name"]
                with self.subTest(component=component, variable=name):
                    if name in EXPANSION_ONLY:
                        continue
                    self.assertIn(name, known, "not in %s --help" % os.path.basename(binary))
                    if name.endswith("_FILE"):
                        self.assertNotIn(name[:-len("_FILE")], names)
                    # $(NAME) expands only names defined before it in the list.
                    for ref in re.findall(r"\$\(([A-Z0-9_]+)\)", entry.get("value", "")):
                        self.assertIn(ref, names[:i])

    def test_files_named_by_the_environment_are_mounted_secrets(self):
        path_variables = re.compile(r"_FILE$|^OSBQ_BUS_CURVE_(SERVER|CLIENT)_CERT$|_DIR$")
        for component in BINARIES:
            pod = self.workload(component)["spec"]["template"]["spec"]
            container = self.container(self.workload(component))
            volumes = {v["name"]: v for v in pod["volumes"]}
            mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
            for name, value in env_values(container).items():
                if not path_variables.search(name):
                    continue
                with self.subTest(component=component, variable=name):
                    if value in mounts and not name.endswith("_DIR"):
                        # One key mounted as a file of its own (subPath).
                        mount = mounts[value]
                        self.assertTrue(mount.get("readOnly"))
                        volume = volumes[mount["name"]]
                        secret = self.secrets[volume["secret"]["secretName"]]
                        self.assertIn(mount["subPath"], secret["stringData"])
                        continue
                    mount_path = value if name.endswith("_DIR") else posixpath.dirname(value)
                    self.assertIn(mount_path, mounts, value + " is not on a mounted volume")
                    self.assertTrue(mounts[mount_path].get("readOnly"))
                    self.assertNotIn("subPath", mounts[mount_path])
                    volume = volumes[mounts[mount_path]["name"]]
                    if name.endswith("_DIR"):
                        self.assertIn(volume["secret"]["secretName"], self.secrets)
                        continue
                    if "secret" in volume:
                        # A whole Secret as a directory: the file is one of its keys.
                        secret = self.secrets[volume["secret"]["secretName"]]
                        self.assertIn(posixpath.basename(value), secret["stringData"])
                        continue
                    items = {i["path"]: (src["secret"]["name"], i["key"])
                             for src in volume["projected"]["sources"]
                             for i in src["secret"]["items"]}
                    self.assertIn(posixpath.basename(value), items)
            # The key file is a Secret volume's link like the others (docs/decisions/0027): no
            # subPath, whose file kubelet never updates.
            key_file = env_values(container)["OSBQ_SECRET_KEY_FILE"]
            self.assertNotIn(key_file, mounts)

    def test_every_secret_referenced_is_described(self):
        refs = []
        for o in self.base:
            if o["kind"] not in ("Deployment", "StatefulSet"):
                continue
            pod = o["spec"]["template"]["spec"]
            for c in pod["containers"]:
                for e in c.get("env", []):
                    ref = e.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        refs.append((ref["name"], ref["key"]))
            for v in pod.get("volumes", []):
                if "secret" in v:
                    refs.append((v["secret"]["secretName"], None))
                    # 0440 with fsGroup: the image's user reads it, others do not.
                    self.assertEqual(v["secret"]["defaultMode"], 0o440, v["name"])
                for src in v.get("projected", {}).get("sources", []):
                    self.assertEqual(v["projected"]["defaultMode"], 0o440, v["name"])
                    refs += [(src["secret"]["name"], i["key"]) for i in src["secret"]["items"]]
        self.assertTrue(refs)
        for name, key in refs:
            with self.subTest(secret=name, key=key):
                self.assertIn(name, self.secrets, "secrets.example.yaml lacks it")
                if key is not None:
                    self.assertIn(key, self.secrets[name]["stringData"])
        # Placeholders only, never a real secret (a user name is not one).
        for name, secret in self.secrets.items():
            for key, value in secret["stringData"].items():
                if (name, key) != ("osbq-broker", "username"):
                    self.assertIn("REPLACE", value, "%s: %s" % (name, key))

    # (4) probes, ports, images, grace periods
    def test_probes_and_ports_follow_the_environment(self):
        expected = {
            "gateway": {"http": ("OSBQ_LISTEN", 8080), "bus": ("OSBQ_BUS_BIND", 5555)},
            "worker": {"metrics": ("OSBQ_METRICS_LISTEN", 9100)},
        }
        for component, ports in expected.items():
            container = self.container(self.workload(component))
            env = env_values(container)
            declared = {p["name"]: p["containerPort"] for p in container["ports"]}
            for port_name, (variable, number) in ports.items():
                with self.subTest(component=component, port=port_name):
                    self.assertEqual(declared[port_name], number)
                    self.assertEqual(listen_port(env[variable]), number)
            probes = {k: container[k]["httpGet"] for k in ("livenessProbe", "readinessProbe")
                      if k in container}
            for kind, probe in probes.items():
                with self.subTest(component=component, probe=kind):
                    self.assertIn(probe["port"], declared)
            self.assertEqual(probes["livenessProbe"]["path"], "/healthz")
            if component == "gateway":
                self.assertEqual(probes["readinessProbe"]["path"], "/readyz")
                self.assertEqual(probes["readinessProbe"]["port"], "http")
                self.assertEqual(env["OSBQ_BUS_ADVERTISE"], "tcp://$(POD_IP):5555")
            else:
                self.assertEqual(probes["livenessProbe"]["port"], "metrics")

    def test_images_are_the_dockerfile_targets(self):
        stages = dockerfile_stages()
        with open(os.path.join(harness.SOURCE_DIR, "compose", "Dockerfile")) as f:
            self.assertIn("--uid 10001", f.read())
        for component in BINARIES:
            workload = self.workload(component)
            image = self.container(workload)["image"]
            with self.subTest(component=component):
                self.assertEqual(image, "osbq-%s:%s" % (component, project_version()))
                self.assertIn(component, stages, "compose/Dockerfile has no such target")
                entry = [a for i, a in stages[component] if i == "ENTRYPOINT"]
                self.assertEqual(entry, ['["/usr/local/bin/osbq-%s"]' % component])
                security = workload["spec"]["template"]["spec"]["securityContext"]
                self.assertEqual((security["runAsUser"], security["fsGroup"]), (10001, 10001))
                self.assertTrue(security["runAsNonRoot"])

    def test_grace_periods_cover_the_shutdown_grace(self):
        for component in BINARIES:
            pod = self.workload(component)["spec"]["template"]["spec"]
            container = self.container(self.workload(component))
            grace_s = math.ceil(int(env_values(container)["OSBQ_SHUTDOWN_GRACE_MS"]) / 1000)
            pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("exec", {})
            pre_stop_s = int(pre_stop["command"][1]) if pre_stop else 0
            if pre_stop:
                self.assertEqual(pre_stop["command"][0], "sleep")
            with self.subTest(component=component):
                self.assertEqual(pod["terminationGracePeriodSeconds"],
                                 pre_stop_s + grace_s + STOP_MARGIN_S)
        gateway = self.container(self.workload("gateway"))
        self.assertIn("preStop", gateway["lifecycle"], "the gateway stops accepting at once")

    def test_pods_are_bounded_and_confined(self):
        for o in self.base:
            if o["kind"] not in ("Deployment", "StatefulSet"):
                continue
            pod = o["spec"]["template"]["spec"]
            with self.subTest(workload=o["metadata"]["name"]):
                # Service links would add OSBQ_*_SERVICE_HOST-like variables.
                self.assertIs(pod["enableServiceLinks"], False)
                self.assertIs(pod["automountServiceAccountToken"], False)
                for c in pod["containers"]:
                    for side in ("requests", "limits"):
                        self.assertEqual(set(c["resources"][side]), {"cpu", "memory"}, side)
                    self.assertIs(c["securityContext"]["allowPrivilegeEscalation"], False)
                    self.assertIs(c["securityContext"]["readOnlyRootFilesystem"], True)

    # (5) who finds whom: Services, budgets, policies
    def test_services_and_budgets_select_their_pods(self):
        pods = {self.pod_labels(o)["app.kubernetes.io/component"]: o
                for o in self.base if o["kind"] in ("Deployment", "StatefulSet")}
        for kind in ("Service", "PodDisruptionBudget"):
            for o in self.objects(kind):
                selector = o["spec"]["selector"]
                selector = selector.get("matchLabels", selector)
                matched = [c for c, w in pods.items()
                           if selector.items() <= self.pod_labels(w).items()]
                with self.subTest(kind=kind, name=o["metadata"]["name"]):
                    self.assertEqual(len(matched), 1)
                    if kind == "Service":
                        names = {p["name"] for p in self.container(pods[matched[0]])["ports"]}
                        for port in o["spec"]["ports"]:
                            self.assertIn(port["targetPort"], names)
        budgets = {o["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"]
                   for o in self.objects("PodDisruptionBudget")}
        self.assertEqual(budgets, {"gateway", "worker"})

    def test_network_policies(self):
        pods = {self.pod_labels(o)["app.kubernetes.io/component"]: o
                for o in self.base if o["kind"] in ("Deployment", "StatefulSet")}
        policies = self.objects("NetworkPolicy")

        def selects(selector, labels):
            self.assertEqual(set(selector) - {"matchLabels", "matchExpressions"}, set())
            for k, v in selector.get("matchLabels", {}).items():
                if labels.get(k) != v:
                    return False
            for e in selector.get("matchExpressions", []):
                self.assertEqual(e["operator"], "In")
                if labels.get(e["key"]) not in e["values"]:
                    return False
            return True

        def port_number(container, port):
            if isinstance(port, int):
                return port
            return {p["name"]: p["containerPort"] for p in container["ports"]}[port]

        def who_reaches(target, number):
            """The osbq components (and "outside") allowed to connect to target's port."""
            labels = self.pod_labels(pods[target])
            container = self.container(pods[target])
            mine = [p for p in policies if selects(p["spec"]["podSelector"], labels)]
            self.assertTrue(mine, target + " is selected by no policy: open to all")
            allowed = set()
            for policy in mine:
                self.assertEqual(policy["spec"]["policyTypes"], ["Ingress"])
                for rule in policy["spec"].get("ingress", []):
                    ports = [port_number(container, p["port"]) for p in rule.get("ports", [])]
                    if ports and number not in ports:
                        continue
                    if "from" not in rule:
                        return {"gateway", "worker", "redis", "outside"}
                    for peer in rule["from"]:
                        self.assertEqual(set(peer), {"podSelector"}, "peers in this namespace")
                        allowed |= {c for c in pods
                                    if selects(peer["podSelector"], self.pod_labels(pods[c]))}
            return allowed

        everyone = {"gateway", "worker", "redis", "outside"}
        self.assertEqual(who_reaches("redis", 6379), {"gateway", "worker"})
        self.assertEqual(who_reaches("gateway", 5555), {"worker"})
        self.assertEqual(who_reaches("gateway", 8080), everyone)
        self.assertEqual(who_reaches("worker", 9100), everyone)
        self.assertEqual(who_reaches("worker", 5555), set())

    def test_redis_keeps_an_append_only_file_on_a_volume(self):
        redis = self.workload("redis")
        command = " ".join(self.container(redis)["command"])
        for flag in ("--appendonly yes", "--appendfsync everysec", "--maxmemory-policy noeviction",
                     "--hash-max-listpack-value 1024", "--dir /data"):
            self.assertIn(flag, command)
        self.assertEqual(redis["spec"]["volumeClaimTemplates"][0]["metadata"]["name"],
                         self.container(redis)["volumeMounts"][0]["name"])
        url = self.secrets["osbq-redis"]["stringData"]["url"]
        service = [s for s in self.objects("Service") if s["metadata"]["name"] == "osbq-redis"]
        self.assertRegex(url, r"^redis://:[^@]+@osbq-redis:%d/0$"
                         % service[0]["spec"]["ports"][0]["port"])

    # (6) the optional components
    def test_servicemonitors_scrape_the_metrics_ports(self):
        services = {s["metadata"]["name"]: s for s in self.objects("Service")}
        monitors = self.objects("ServiceMonitor", self.components)
        self.assertEqual({m["metadata"]["name"] for m in monitors}, {"osbq-gateway", "osbq-worker"})
        for m in monitors:
            service = services[m["metadata"]["name"]]
            with self.subTest(monitor=m["metadata"]["name"]):
                self.assertEqual(m["spec"]["selector"]["matchLabels"],
                                 service["metadata"]["labels"])
                self.assertEqual([e["port"] for e in m["spec"]["endpoints"]],
                                 [p["name"] for p in service["spec"]["ports"]])
                self.assertEqual({e["path"] for e in m["spec"]["endpoints"]}, {"/metrics"})

    def test_scaledobject_scales_the_workers(self):
        """KEDA's ScaledObject: it scales the worker Deployment, one worker per `threshold` jobs
        queued or running, the threshold being a worker's slots; its query asks the scrape jobs
        the ServiceMonitors name (that /metrics serves the metrics it names:
        tests/integration/test_deploy_observability.py)."""
        [scaled] = self.objects("ScaledObject", self.components)
        spec = scaled["spec"]
        target = spec["scaleTargetRef"]
        self.assertEqual(target.get("kind", "Deployment"), "Deployment")
        self.assertEqual(target.get("apiVersion", "apps/v1"), "apps/v1")
        worker = self.workload("worker")
        self.assertEqual(worker["kind"], "Deployment")
        self.assertEqual(target["name"], worker["metadata"]["name"])
        # The base's two workers are the floor, and the fallback while the query fails.
        self.assertEqual(spec["minReplicaCount"], worker["spec"]["replicas"])
        self.assertLessEqual(spec["minReplicaCount"], spec["maxReplicaCount"])
        self.assertGreaterEqual(spec["minReplicaCount"], 1, "no scaling to zero: nobody would "
                                "run the jobs that wait in Redis")
        self.assertTrue(spec["minReplicaCount"] <= spec["fallback"]["replicas"]
                        <= spec["maxReplicaCount"])
        [trigger] = spec["triggers"]
        self.assertEqual(trigger["type"], "prometheus")
        self.assertEqual(trigger["metricType"], "AverageValue")
        metadata = trigger["metadata"]
        self.assertLessEqual(set(metadata), PROMETHEUS_TRIGGER_KEYS)
        self.assertEqual(metadata["ignoreNullValues"], "false", "an empty answer is an error")
        slots = env_values(self.container(worker))["OSBQ_WORKER_CONCURRENCY"]
        self.assertEqual(metadata["threshold"], slots, "threshold = a worker's slots")
        monitors = {m["metadata"]["name"] for m in self.objects("ServiceMonitor", self.components)}
        jobs = set(re.findall(r'job="([^"]+)"', metadata["query"]))
        self.assertEqual(jobs, monitors)
        # The metrics each side counts once: never the gateways' view of the workers.
        names = set(re.findall(r"\b(osbq_[a-z_]+)", metadata["query"]))
        self.assertEqual(names, {"osbq_jobs_queued", "osbq_jobs_running"})
        # The component's one patch: the Deployment's replicas, now the autoscaler's.
        [patch] = load_all(os.path.join(KEDA_DIR, "kustomization.yaml"))[0]["patches"]
        self.assertEqual(patch["target"]["name"], target["name"])
        self.assertEqual(yaml.safe_load(patch["patch"]),
                         [{"op": "remove", "path": "/spec/replicas"}])
        # A removed worker drains: its running jobs get the grace, so scale down gently.
        down = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
        self.assertGreaterEqual(down["stabilizationWindowSeconds"], 60)

    def test_registration(self):
        """ClusterServiceBroker has no published schema: its fields as the Service Catalog's
        v1beta1 types define them."""
        [broker] = self.objects("ClusterServiceBroker", self.components)
        self.assertEqual(broker["apiVersion"], "servicecatalog.k8s.io/v1beta1")
        self.assertNotIn("namespace", broker["metadata"], "cluster-scoped")
        spec = broker["spec"]
        self.assertEqual(set(spec) - {"url", "authInfo", "insecureSkipTLSVerify", "caBundle",
                                      "relistBehavior", "relistDuration", "relistRequests"},
                         set())
        self.assertIn(spec["relistBehavior"], ("Duration", "Manual"))
        self.assertRegex(spec["relistDuration"], r"^([0-9]+h)?([0-9]+m)?([0-9]+s)?$")
        gateway = [s for s in self.objects("Service") if s["metadata"]["name"] == "osbq-gateway"]
        self.assertEqual(spec["url"], "http://osbq-gateway.osbq.svc:%d"
                         % gateway[0]["spec"]["ports"][0]["port"])
        ref = spec["authInfo"]["basic"]["secretRef"]
        self.assertEqual(set(ref), {"namespace", "name"})
        self.assertEqual(set(self.secrets[ref["name"]]["stringData"]), {"username", "password"})


if __name__ == "__main__":
    unittest.main()
