"""The compose deployment (compose/), checked without a Docker engine: Debian's docker-compose
validates the file offline, and every variable it hands the binaries is one they know."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness

COMPOSE_DIR = os.path.join(harness.SOURCE_DIR, "compose")
COMPOSE_FILE = os.path.join(COMPOSE_DIR, "docker-compose.yml")
HAPROXY_CFG = os.path.join(COMPOSE_DIR, "haproxy.cfg")
DOCKERFILE = os.path.join(COMPOSE_DIR, "Dockerfile")
# The tracked files of compose/ the stack needs (not the git-ignored .env nor secrets/).
COMPOSE_FILES = ("docker-compose.yml", "haproxy.cfg", "Dockerfile", "healthcheck.sh",
                 ".env.example")

OSBQ_VAR = re.compile(r"^  (OSBQ_[A-Z0-9_]+)\s", re.M)
OSBQ_FILE_VAR = re.compile(r"\((OSBQ_[A-Z0-9_]+_FILE):")


def known_variables(binary):
    """The variables `binary --help` lists, with their *_FILE variants."""
    out = subprocess.run([binary, "--help"], check=True, capture_output=True, text=True,
                         timeout=10).stdout
    names = set(OSBQ_VAR.findall(out))
    files = set(OSBQ_FILE_VAR.findall(out))
    for f in files:
        assert f[:-len("_FILE")] in names, "%s without its variable in --help" % f
    return names | files


def backend_variables():
    """Variables the workers' backends read that --help cannot list: those the image's catalog
    names in `target_url_env`, and the redis backend's default one."""
    import json
    names = set()

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "target_url_env" and isinstance(v, str):
                    names.add(v)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    with open(harness.EXAMPLE_CATALOG) as f:
        walk(json.load(f))
    with open(os.path.join(harness.SOURCE_DIR, "worker", "backend_redis.c")) as f:
        m = re.search(r'#define REDIS_DEFAULT_URL_ENV "([A-Z0-9_]+)"', f.read())
    if m:
        names.add(m.group(1))
    return names


def duration_s(text):
    """A Compose duration (`30s`, `1m30s`, `1500ms`, or a number of seconds) in seconds."""
    text = str(text).strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError("not a Compose duration: %r" % text)
    return sum(float(n) * units[u] for n, u in parts)


def dockerfile_stages():
    """{stage name: [(instruction, arguments)]} of compose/Dockerfile, continuation lines joined."""
    with open(DOCKERFILE) as f:
        text = re.sub(r"\\\n", " ", f.read())
    stages, current = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instr, _, args = line.partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            m = re.search(r"\s+AS\s+(\S+)$", args, re.I)
            current = m.group(1) if m else args
            stages[current] = [("FROM", args)]
        elif current is not None:
            stages[current].append((instr, args.strip()))
    return stages


def dockerfile_env(stages, stage):
    """OSBQ_* names set by ENV in `stage` and the stages it is built FROM."""
    names = set()
    while stage in stages:
        for instr, args in stages[stage]:
            if instr == "ENV":
                names |= set(re.findall(r"(OSBQ_[A-Z0-9_]+)=", args))
        base = stages[stage][0][1].split()[0]
        stage = base if base != stage else None
    return names


class ComposeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import yaml  # python3-yaml, a dependency of docker-compose
        cls.yaml = yaml
        cls.compose_bin = shutil.which("docker-compose")
        if cls.compose_bin is None:
            raise AssertionError("docker-compose is not installed (scripts/install-deps.sh)")
        # A copy of compose/ with the git-ignored files it needs made up, so the test depends on
        # neither an operator's compose/.env nor compose/secrets/.
        cls.tmp = tempfile.mkdtemp(prefix="osbq-compose-")
        cls.copy = os.path.join(cls.tmp, "compose")
        os.makedirs(os.path.join(cls.copy, "secrets"))
        for name in COMPOSE_FILES:
            shutil.copy(os.path.join(COMPOSE_DIR, name), cls.copy)
        with open(os.path.join(cls.copy, "secrets", "broker_password"), "w") as f:
            f.write("test-password\n")
        with open(os.path.join(cls.copy, "secrets", "secret_keys"), "w") as f:
            f.write("00" * 32 + "\n")
        # Nothing from the caller's environment substitutes into the file.
        cls.env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("OSBQ_", "COMPOSE_", "DOCKER_"))}
        cls.env["COMPOSE_PROJECT_NAME"] = "osbqtest"
        with open(COMPOSE_FILE) as f:
            cls.raw = yaml.safe_load(f)
        cls.resolved = cls.config()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def config(cls):
        """`docker-compose config` of the copy, parsed; raises with its stderr on failure."""
        r = subprocess.run([cls.compose_bin, "-f", os.path.join(cls.copy, "docker-compose.yml"),
                            "config"], cwd=cls.tmp, env=cls.env, capture_output=True, text=True,
                           timeout=60)
        if r.returncode != 0:
            raise AssertionError("docker-compose config failed (%d):\n%s" % (r.returncode,
                                                                           r.stderr))
        return cls.yaml.safe_load(r.stdout)

    def service(self, name):
        services = self.resolved["services"]
        self.assertIn(name, services)
        return services[name]

    def env_of(self, name):
        return {k: str(v) for k, v in (self.service(name).get("environment") or {}).items()}

    # (1) the file is valid, with the defaults and with the checked-in .env example
    def test_config_is_valid(self):
        self.assertEqual(set(self.resolved["services"]), {"redis", "gateway", "worker", "lb"})
        env_path = os.path.join(self.copy, ".env")
        shutil.copy(os.path.join(self.copy, ".env.example"), env_path)
        try:
            with_env = self.config()
        finally:
            os.remove(env_path)
        self.assertEqual(with_env["services"]["gateway"]["environment"]["OSBQ_BROKER_USERNAME"],
                         "osbq")
        self.assertEqual(self.resolved["secrets"]["broker_password"]["file"],
                         os.path.join(self.copy, "secrets", "broker_password"))

    # (2) every OSBQ_* variable handed to a binary is one it knows
    def test_variables_are_known(self):
        stages = dockerfile_stages()
        backend = backend_variables()
        for svc, binary in (("gateway", harness.GATEWAY), ("worker", harness.WORKER)):
            known = known_variables(binary)
            if svc == "worker":
                known |= backend
            env = self.env_of(svc)
            self.assertTrue(env, svc + " sets no variable")
            for name in env:
                with self.subTest(service=svc, variable=name):
                    self.assertTrue(name.startswith("OSBQ_"), name)
                    self.assertIn(name, known, "%s: %s is not in %s --help"
                                  % (svc, name, os.path.basename(binary)))
            for name in env:
                if name.endswith("_FILE"):
                    self.assertNotIn(name[:-len("_FILE")], env,
                                     "%s sets both %s and its _FILE variant" % (svc, name))
            self.assertIn(svc, stages, "compose/Dockerfile has no stage " + svc)
            for name in dockerfile_env(stages, svc):
                with self.subTest(dockerfile_stage=svc, variable=name):
                    self.assertIn(name, known)

    def test_gateway_settings(self):
        env = self.env_of("gateway")
        self.assertEqual(env["OSBQ_REDIS_URL"], "redis://redis:6379/0")
        self.assertEqual(env["OSBQ_BUS_BIND"], "tcp://0.0.0.0:5555")
        self.assertNotIn("OSBQ_BUS_ADVERTISE", env)  # default: tcp://<container hostname>:5555
        self.assertEqual(env["OSBQ_BROKER_PASSWORD_FILE"], "/run/secrets/broker_password")
        self.assertIn("broker_password",
                      [s["source"] if isinstance(s, dict) else s
                       for s in self.service("gateway")["secrets"]])
        self.assertEqual(self.env_of("worker")["OSBQ_REDIS_URL"], "redis://redis:6379/0")
        # Binding credentials sealed at rest: workers encrypt, gateways decrypt, same keys.
        for svc in ("gateway", "worker"):
            with self.subTest(service=svc):
                self.assertEqual(self.env_of(svc)["OSBQ_SECRET_KEY_FILE"],
                                 "/run/secrets/secret_keys")
                self.assertIn("secret_keys", [s["source"] if isinstance(s, dict) else s
                                              for s in self.service(svc)["secrets"]])
        self.assertEqual(self.resolved["secrets"]["secret_keys"]["file"],
                         os.path.join(self.copy, "secrets", "secret_keys"))
        for svc in ("gateway", "worker"):
            with self.subTest(service=svc):
                s = self.service(svc)
                self.assertEqual(s["depends_on"]["redis"]["condition"], "service_healthy")
                self.assertEqual(s["build"]["target"], svc)
                self.assertEqual(s["build"]["dockerfile"], "compose/Dockerfile")
                self.assertEqual(os.path.realpath(s["build"]["context"]),
                                 os.path.realpath(self.tmp))
        self.assertIn("/readyz", " ".join(self.service("gateway")["healthcheck"]["test"]))
        healthchecks = [args for instr, args in dockerfile_stages()["gateway"]
                        if instr == "HEALTHCHECK"]
        self.assertEqual(len(healthchecks), 1)
        self.assertIn("/healthz", healthchecks[0])
        # Workers are checked on their metrics listener, which the compose file turns on.
        self.assertIn("/healthz", " ".join(self.service("worker")["healthcheck"]["test"]))
        self.assertEqual(self.env_of("worker")["OSBQ_METRICS_LISTEN"], "0.0.0.0:9100")
        self.assertIn("9100", [str(p) for p in self.service("worker")["expose"]])

    def test_redis_persistence(self):
        redis = self.service("redis")
        command = redis["command"]
        command = command if isinstance(command, list) else command.split()
        self.assertEqual(command[command.index("--appendonly") + 1], "yes")
        self.assertEqual(command[command.index("--appendfsync") + 1], "everysec")
        self.assertTrue(any(str(v).split(":")[0] in self.resolved["volumes"]
                            for v in redis["volumes"]), "redis data is not on a named volume")
        self.assertIn("ping", redis["healthcheck"]["test"])

    # (3) the load balancer balances over the gateway service's replicas, checking /healthz
    def test_haproxy_config(self):
        with open(HAPROXY_CFG) as f:
            cfg = re.sub(r"#.*", "", f.read())
        port = self.env_of("gateway")["OSBQ_LISTEN"].rsplit(":", 1)[1]
        self.assertRegex(cfg, r"(?m)^\s*server-template\s+\S+\s+\d+\s+gateway:%s\b" % port)
        self.assertRegex(cfg, r"(?m)^\s*resolvers\s+docker\b")
        self.assertRegex(cfg, r"(?m)^\s*nameserver\s+\S+\s+127\.0\.0\.11:53\b")
        self.assertRegex(cfg, r"(?m)^\s*default-server\b.*\bresolvers docker\b")
        self.assertRegex(cfg, r"(?m)^\s*balance\s+roundrobin\b")
        self.assertRegex(cfg, r"(?m)^\s*option\s+httpchk\s+GET\s+/healthz\b")
        lb = self.service("lb")
        self.assertTrue(lb["image"].startswith("haproxy:"))
        mounts = [v if isinstance(v, str) else "%s:%s" % (v["source"], v["target"])
                  for v in lb["volumes"]]
        self.assertTrue(any(m.startswith(os.path.join(self.copy, "haproxy.cfg") + ":")
                            for m in mounts), mounts)

    def test_haproxy_config_parses(self):
        # scripts/install-deps.sh installs haproxy, so this never skips.
        r = subprocess.run(["haproxy", "-c", "-f", HAPROXY_CFG], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    # (4) docker stops a container no sooner than its shutdown grace ends
    def test_stop_grace_period_covers_shutdown_grace(self):
        for svc in ("worker", "gateway"):
            with self.subTest(service=svc):
                grace_ms = int(self.env_of(svc).get("OSBQ_SHUTDOWN_GRACE_MS", "10000"))
                self.assertIn("stop_grace_period", self.service(svc))
                period_s = duration_s(self.service(svc)["stop_grace_period"])
                self.assertGreaterEqual(period_s, grace_ms / 1000.0 + 1,
                                        "%s: stop_grace_period %ss, shutdown grace %d ms"
                                        % (svc, period_s, grace_ms))
        self.assertIn("OSBQ_SHUTDOWN_GRACE_MS", self.env_of("worker"))

    # `docker compose up -d --scale gateway=2 --scale worker=4` works with no edit
    def test_services_scale(self):
        for svc in ("gateway", "worker"):
            with self.subTest(service=svc):
                s = self.raw["services"][svc]
                self.assertNotIn("container_name", s)
                self.assertNotIn("ports", s)
                self.assertNotIn("hostname", s)
        published = [svc for svc, s in self.raw["services"].items() if s.get("ports")]
        self.assertEqual(published, ["lb"])

    # The job bus runs with CurveZMQ (docs/deploy.md, "The job bus's keys").
    def test_bus_keys(self):
        def secrets_of(svc):
            return {x["source"] if isinstance(x, dict) else x
                    for x in self.service(svc).get("secrets", [])}

        gw, wk = self.env_of("gateway"), self.env_of("worker")
        self.assertEqual(gw["OSBQ_BUS_CURVE_SERVER_CERT"], "/run/secrets/bus_gateways_secret")
        self.assertIn("bus_gateways_secret", secrets_of("gateway"))
        self.assertEqual(wk["OSBQ_BUS_CURVE_SERVER_CERT"], "/run/secrets/bus_gateways")
        self.assertEqual(wk["OSBQ_BUS_CURVE_CLIENT_CERT"], "/run/secrets/bus_worker_secret")
        self.assertEqual(secrets_of("worker"), {"bus_gateways", "bus_worker_secret", "secret_keys"})
        # The workers never get the gateways' secret key.
        self.assertNotIn("bus_gateways_secret", secrets_of("worker"))
        mounts = " ".join(str(v) for v in self.service("gateway")["volumes"])
        self.assertIn(gw["OSBQ_BUS_CURVE_CLIENTS_DIR"], mounts)
        files = {name: os.path.relpath(self.resolved["secrets"][name]["file"], self.copy)
                 for name in ("bus_gateways_secret", "bus_gateways", "bus_worker_secret")}
        self.assertEqual(files, {"bus_gateways_secret": "secrets/bus/gateways_secret",
                                 "bus_gateways": "secrets/bus/gateways",
                                 "bus_worker_secret": "secrets/bus/worker_secret"})

    def test_duration_parser(self):
        self.assertEqual(duration_s("30s"), 30)
        self.assertEqual(duration_s("1m30s"), 90)
        self.assertEqual(duration_s("1500ms"), 1.5)
        self.assertRaises(ValueError, duration_s, "30 seconds")


if __name__ == "__main__":
    unittest.main()
