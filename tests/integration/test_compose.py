"""The compose deployment (compose/), checked without a Docker engine: Debian's docker-compose
validates the file offline, every variable it hands the binaries is one they know, the
Dockerfile's build stage has every -dev package and source folder the build needs, and
compose/init-secrets.sh writes every secret the file names. scripts/compose-check.sh builds and
runs the stack for real (scripts/test.sh runs it where a Docker engine can start)."""

import fnmatch
import os
import re
import shutil
import stat
import subprocess
import tempfile
import unittest

import harness

COMPOSE_DIR = os.path.join(harness.SOURCE_DIR, "compose")
COMPOSE_FILE = os.path.join(COMPOSE_DIR, "docker-compose.yml")
HA_FILE = os.path.join(COMPOSE_DIR, "docker-compose.ha.yml")
HAPROXY_CFG = os.path.join(COMPOSE_DIR, "haproxy.cfg")
DOCKERFILE = os.path.join(COMPOSE_DIR, "Dockerfile")
DOCKERIGNORE = os.path.join(harness.SOURCE_DIR, ".dockerignore")
DEPENDENCIES_CMAKE = os.path.join(harness.SOURCE_DIR, "cmake", "Dependencies.cmake")
TOP_CMAKELISTS = os.path.join(harness.SOURCE_DIR, "CMakeLists.txt")
INIT_SECRETS = os.path.join(COMPOSE_DIR, "init-secrets.sh")
SECRETS_README = os.path.join(COMPOSE_DIR, "secrets", "README.md")
CTL = os.path.join(harness.BUILD_DIR, "bin", "osbq-ctl")
# The uid the images run as (compose/Dockerfile), which must read the secret files.
CONTAINER_UID = 10001
# The tracked files of compose/ the stack needs (not the git-ignored .env nor secrets/).
COMPOSE_FILES = ("docker-compose.yml", "docker-compose.ha.yml", "docker-compose.swarm.yml",
                 "haproxy.cfg", "Dockerfile", "healthcheck.sh", ".env.example", "init-secrets.sh")

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


def cmake_outside_tests(path):
    """The text of a CMake file without its if(OSBQ_BUILD_TESTS) ... endif() blocks (the image
    builds with the tests off) and without comments."""
    with open(path) as f:
        text = re.sub(r"#[^\n]*", "", f.read())
    return re.sub(r"if\(OSBQ_BUILD_TESTS\).*?endif\(\)", "", text, flags=re.S)


def pkg_modules():
    """The pkg-config modules cmake/Dependencies.cmake requires for a build without tests."""
    found = re.findall(r"pkg_check_modules\(\s*\w+\s+((?:[A-Z_]+\s+)*)([^)]*)\)",
                       cmake_outside_tests(DEPENDENCIES_CMAKE))
    modules = []
    for _, specs in found:
        for spec in specs.split():
            modules.append(re.split(r"[<>=]", spec)[0])
    return modules


def debian_packages_of(paths):
    """{path: the Debian package that installed it}, in one dpkg query (each one reads the whole
    package database)."""
    out = subprocess.run(["dpkg", "-S"] + list(paths), check=True, capture_output=True,
                         text=True).stdout
    owners = {}
    for line in out.splitlines():
        package, _, path = line.partition(": ")
        owners[path.strip()] = package.split(":")[0].strip()
    return owners


def apt_installed(stage):
    """Package names the stage's RUN lines give to `apt-get install`."""
    names = set()
    for instr, args in stage:
        if instr != "RUN":
            continue
        for cmd in re.split(r"&&|;", args):
            words = cmd.split()
            if "apt-get" in words and "install" in words:
                names |= {w for w in words[words.index("install") + 1:]
                          if not w.startswith("-")}
    return names


def dockerignored(path):
    """Whether .dockerignore leaves `path` (relative to the repository root) out of the build
    context: its last matching pattern decides, `!` ones bring a path back; a pattern matches a
    path or any folder above it."""
    with open(DOCKERIGNORE) as f:
        patterns = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    ignored = False
    for pattern in patterns:
        keep = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        options = [pattern]
        if pattern.startswith("**/"):
            options.append(pattern[3:])
        if any(fnmatch.fnmatchcase(p, o) for p in prefixes for o in options):
            ignored = not keep
    return ignored


class DockerfileTest(unittest.TestCase):
    """The image builds: checks that need neither docker-compose nor an engine."""

    def test_build_stage_installs_every_dev_package(self):
        build = dockerfile_stages()["build"]
        installed = apt_installed(build)
        modules = pkg_modules()
        self.assertIn("libpcre2-8", modules)
        pc_files = {module: subprocess.run(["pkg-config", "--path", module], check=True,
                                           capture_output=True, text=True).stdout.strip()
                    for module in modules}
        owners = debian_packages_of(pc_files.values())
        for module in modules:
            with self.subTest(module=module):
                package = owners.get(pc_files[module])
                self.assertIn(package, installed, "compose/Dockerfile's build stage does not "
                              "install %s (for %s.pc, cmake/Dependencies.cmake)" % (package,
                                                                                  module))

    def test_runtime_stage_installs_every_library(self):
        """Each library a module links is in the runtime stage: installed there, or a dependency
        of a package installed there."""
        installed = apt_installed(dockerfile_stages()["runtime"])
        out = subprocess.run(["apt-cache", "depends", "--no-recommends", "--no-suggests"]
                             + sorted(installed), capture_output=True, text=True).stdout
        depends = set(installed) | set(re.findall(r"Depends: (\S+)", out))
        libraries = {}  # (module, -lname): the shared library's real path
        for module in pkg_modules():
            libs = subprocess.run(["pkg-config", "--libs-only-l", module], check=True,
                                  capture_output=True, text=True).stdout.split()
            pcdir = subprocess.run(["pkg-config", "--variable=libdir", module], check=True,
                                   capture_output=True, text=True).stdout.strip()
            for lib in libs:
                so = os.path.join(pcdir, "lib%s.so" % lib[2:])
                if os.path.exists(so):  # else a system library (-lm): in every Debian image
                    libraries[(module, lib)] = os.path.realpath(so)
        owners = debian_packages_of(set(libraries.values()))
        for (module, lib), path in libraries.items():
            with self.subTest(module=module, library=lib):
                self.assertIn(owners.get(path), depends,
                              "compose/Dockerfile's runtime stage lacks %s" % owners.get(path))

    def test_images_carry_the_version(self):
        """The images' version label is project(VERSION): docker-compose.yml passes it to both
        osbq images, and the Dockerfile labels the runtime stage with it after the build stage
        compared it with the binaries' --version."""
        with open(TOP_CMAKELISTS) as f:
            version = re.search(r"project\(osbq VERSION ([0-9.]+)", f.read()).group(1)
        stages = dockerfile_stages()
        self.assertIn(("ARG", "OSBQ_VERSION"), stages["build"])
        self.assertTrue(any(i == "RUN" and "--version" in a and "OSBQ_VERSION" in a
                            for i, a in stages["build"]))
        self.assertIn(("ARG", "OSBQ_VERSION"), stages["runtime"])
        self.assertTrue(any(i == "LABEL" and
                            'org.opencontainers.image.version="${OSBQ_VERSION}"' in a
                            for i, a in stages["runtime"]))
        import yaml  # python3-yaml, a dependency of docker-compose
        with open(COMPOSE_FILE) as f:
            raw = yaml.safe_load(f)
        for service in ("gateway", "worker"):
            with self.subTest(service=service):
                self.assertEqual(raw["services"][service]["build"]["args"]["OSBQ_VERSION"],
                                 version)

    def test_build_stage_copies_every_component(self):
        folders = re.findall(r"add_subdirectory\(\s*([\w./-]+)", cmake_outside_tests(TOP_CMAKELISTS))
        self.assertIn("gateway", folders)
        copies = [args.split() for instr, args in dockerfile_stages()["build"]
                  if instr == "COPY" and not args.startswith("--from")]
        sources = {os.path.normpath(src) for words in copies for src in words[:-1]}
        whole_context = "." in sources
        for folder in folders + ["cmake", "CMakeLists.txt"]:
            with self.subTest(folder=folder):
                self.assertTrue(whole_context or os.path.normpath(folder) in sources,
                                "compose/Dockerfile's build stage does not copy " + folder)
                self.assertFalse(dockerignored(folder), ".dockerignore leaves out " + folder)
                self.assertFalse(dockerignored(folder + "/CMakeLists.txt"))
        # What the runtime stage copies from the context is in it too.
        for instr, args in dockerfile_stages()["runtime"]:
            if instr == "COPY" and not args.startswith("--from"):
                with self.subTest(copy=args):
                    self.assertFalse(dockerignored(args.split()[0]), args)

    def test_dockerignore_matcher(self):
        self.assertTrue(dockerignored("docs/deploy.md"))
        self.assertTrue(dockerignored("compose/docker-compose.yml"))
        self.assertFalse(dockerignored("compose/healthcheck.sh"))
        self.assertTrue(dockerignored("build/bin/osbq-gateway"))
        self.assertFalse(dockerignored("a-new-folder/CMakeLists.txt"))


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
    def config(cls, *overrides, env=None):
        """`docker-compose config` of the copy (with the override files named, in compose/, and
        the variables of env set), parsed; raises with its stderr on failure."""
        files = []
        for name in ("docker-compose.yml",) + overrides:
            files += ["-f", os.path.join(cls.copy, name)]
        r = subprocess.run([cls.compose_bin] + files + ["config"], cwd=cls.tmp,
                           env=dict(cls.env, **(env or {})), capture_output=True, text=True,
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
                # After Redis starts, not once healthy: the binaries wait for it themselves, and
                # `docker stack deploy` (docker-compose.swarm.yml) refuses conditions.
                self.assertEqual(s["depends_on"]["redis"]["condition"], "service_started")
                self.assertIsInstance(self.raw["services"][svc]["depends_on"], list)
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
        self.assertIn("ping", " ".join(redis["healthcheck"]["test"]))
        # Options alone: the image's entrypoint runs its own server with them.
        self.assertTrue(command[0].startswith("--"), command)
        self.assertEqual(redis["image"], "redis:7-bookworm")

    def test_valkey_by_one_setting(self):
        """OSBQ_REDIS_IMAGE runs Valkey instead of Redis (docs/deploy.md, "Redis or Valkey"): in
        the main file and in every node of the high-availability one, nothing else changed."""
        valkey = {"OSBQ_REDIS_IMAGE": "valkey/valkey:8-bookworm"}
        resolved = self.config(env=valkey)
        self.assertEqual(resolved["services"]["redis"]["image"], "valkey/valkey:8-bookworm")
        self.assertEqual(resolved["services"]["redis"]["command"],
                         self.service("redis")["command"])
        ha = self.config("docker-compose.ha.yml", env=valkey)["services"]
        nodes = [n for n in ha if n.startswith(("redis", "sentinel"))]
        self.assertEqual(len(nodes), 5, nodes)
        for node in nodes:
            with self.subTest(node=node):
                self.assertEqual(ha[node]["image"], "valkey/valkey:8-bookworm")
                self.assertIn("command -v valkey-server", " ".join(ha[node]["command"]))
                self.assertIn("valkey-cli", " ".join(ha[node]["healthcheck"]["test"]))

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

    def test_lb_open_files_cover_maxconn(self):
        """haproxy raises its open-files limit to about 2 x maxconn + 44 at start and exits
        when the hard limit is lower ("Cannot raise FD limit"): the compose file sets it."""
        with open(HAPROXY_CFG) as f:
            cfg = re.sub(r"#.*", "", f.read())
        maxconn = int(re.search(r"(?ms)^global\b.*?^\s*maxconn\s+(\d+)", cfg).group(1))
        nofile = self.service("lb").get("ulimits", {}).get("nofile")
        self.assertIsNotNone(nofile, "lb has no nofile ulimit")
        limits = (nofile, nofile) if isinstance(nofile, int) else (nofile["soft"],
                                                                   nofile["hard"])
        for limit in limits:
            # 44 for its listeners, checks and resolvers with maxconn 20000; a margin for more.
            self.assertGreaterEqual(int(limit), 2 * maxconn + 200)
            # No container gets more than the engine's hard limit: 20000 on the host that saw
            # the restart loop ("Cannot raise FD limit to 40044, limit is 20000").
            self.assertLessEqual(int(limit), 20000)

    def test_metrics_not_on_the_public_port(self):
        with open(HAPROXY_CFG) as f:
            cfg = re.sub(r"(?m)^\s*#.*$", "", f.read())
        frontend = re.search(r"(?ms)^frontend\s+osb\b(.*?)(?=^\S)", cfg + "\nend")
        self.assertIsNotNone(frontend)
        rule = re.search(r"(?m)^\s*http-request\s+(deny|return)\b.*\bif\b.*metrics.*$",
                         frontend.group(1))
        self.assertIsNotNone(rule, "haproxy's public frontend serves /metrics")
        # The path is decoded first: the gateways route /%6detrics to /metrics.
        self.assertIn("url_dec", rule.group(0))

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

    def test_secrets_readme_lists_every_secret(self):
        with open(SECRETS_README) as f:
            readme = f.read()
        secrets_dir = os.path.join(self.copy, "secrets")
        for name, spec in self.resolved["secrets"].items():
            with self.subTest(secret=name):
                rel = os.path.relpath(spec["file"], secrets_dir)
                self.assertIn("`%s`" % rel, readme)
        self.assertIn("`bus/clients/`", readme)

    def test_init_secrets_writes_every_secret(self):
        """compose/init-secrets.sh makes every file the compose file names, readable by the
        containers' user, and keeps what exists unless --force."""
        if not os.path.exists(CTL):
            self.fail("%s is not built" % CTL)
        out = os.path.join(self.tmp, "init-secrets")
        env = dict(self.env, OSBQ_CTL=CTL)

        def run(*args):
            return subprocess.run([INIT_SECRETS, "--dir", out] + list(args), env=env,
                                  capture_output=True, text=True, timeout=60)

        r = run()
        self.assertEqual(r.returncode, 0, r.stderr)
        secrets_dir = os.path.join(self.copy, "secrets")
        files = [os.path.relpath(spec["file"], secrets_dir)
                 for spec in self.resolved["secrets"].values()]
        mounts = [str(v).split(":")[0] for v in self.raw["services"]["gateway"]["volumes"]]
        self.assertIn("./secrets/bus/clients", mounts)
        files += ["bus/worker", "bus/clients/worker"]
        contents = {}
        for rel in files:
            path = os.path.join(out, rel)
            with self.subTest(file=rel):
                self.assertTrue(os.path.isfile(path), rel + " not written")
                st = os.stat(path)
                mode = stat.S_IMODE(st.st_mode)
                self.assertEqual(mode & 0o022, 0, "%s is writable by others: %o" % (rel, mode))
                readable = (mode & 0o004) or (st.st_uid == CONTAINER_UID and mode & 0o400)
                self.assertTrue(readable, "uid %d cannot read %s" % (CONTAINER_UID, rel))
                if os.getuid() == 0 and rel in ("secret_keys", "bus/gateways_secret",
                                                "bus/worker_secret"):
                    self.assertEqual((st.st_uid, mode), (CONTAINER_UID, 0o600), rel)
                with open(path, "rb") as f:
                    contents[rel] = f.read()
        self.assertEqual(stat.S_IMODE(os.stat(out).st_mode), 0o700)
        self.assertEqual(contents["bus/clients/worker"], contents["bus/worker"])
        self.assertRegex(contents["secret_keys"].decode(), r"^[0-9a-f]{64}\n$")
        self.assertGreaterEqual(len(contents["broker_password"].strip()), 20)
        # The gateway accepts the key pair it gets (a wrong file stops it with a message).
        self.assertIn(b"secret-key", contents["bus/gateways_secret"])

        r = run()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("exists: kept", r.stderr)
        for rel in files:
            with open(os.path.join(out, rel), "rb") as f:
                self.assertEqual(f.read(), contents[rel], rel + " was overwritten")

        os.remove(os.path.join(out, "broker_password"))
        r = run()
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "broker_password"), "rb") as f:
            self.assertNotEqual(f.read(), contents["broker_password"])
        with open(os.path.join(out, "secret_keys"), "rb") as f:
            self.assertEqual(f.read(), contents["secret_keys"])

        r = run("--force")
        self.assertEqual(r.returncode, 0, r.stderr)
        for rel in ("secret_keys", "bus/gateways_secret", "bus/worker"):
            with open(os.path.join(out, rel), "rb") as f:
                self.assertNotEqual(f.read(), contents[rel], rel + " kept despite --force")
        with open(os.path.join(out, "bus/worker"), "rb") as a, \
                open(os.path.join(out, "bus/clients/worker"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    # The production shape of Redis (docker-compose.ha.yml on top of the main file).
    def test_high_availability_file(self):
        ha = self.config("docker-compose.ha.yml")
        services = ha["services"]
        sentinels = ["sentinel-1", "sentinel-2", "sentinel-3"]
        self.assertEqual(set(services), set(self.resolved["services"]) |
                         {"redis-replica"} | set(sentinels))

        def command(svc):
            c = services[svc]["command"]
            return " ".join(c) if isinstance(c, list) else c

        # Every node: AOF, its own named volume, and min-replicas-to-write (any may be promoted).
        for node in ("redis", "redis-replica"):
            with self.subTest(node=node):
                text = command(node)
                self.assertIn("--appendonly yes", text)
                self.assertIn("--appendfsync everysec", text)
                self.assertIn("--min-replicas-to-write 1", text)
                self.assertIn("--hash-max-listpack-value 1024", text)
        self.assertIn("--replicaof redis 6379", command("redis-replica"))
        self.assertNotIn("--replicaof", command("redis"))
        data_volumes = {}
        for svc in ["redis", "redis-replica"] + sentinels:
            mounts = [str(v) if isinstance(v, str) else "%s:%s" % (v["source"], v["target"])
                      for v in services[svc]["volumes"]]
            volume = [m.split(":")[0] for m in mounts if m.split(":")[1] == "/data"]
            self.assertEqual(len(volume), 1, (svc, mounts))
            self.assertIn(volume[0], ha["volumes"])
            data_volumes[svc] = volume[0]
        self.assertEqual(len(set(data_volumes.values())), len(data_volumes), data_volumes)
        # The Sentinels watch the primary by name, quorum 2 of 3, under the name osbq is given.
        monitors = set()
        for svc in sentinels:
            m = re.search(r"sentinel monitor (\S+) redis 6379 (\d+)", command(svc))
            self.assertIsNotNone(m, svc)
            monitors.add((m.group(1), int(m.group(2))))
            self.assertIn("resolve-hostnames yes", command(svc))
            self.assertIn("--sentinel", command(svc))
        self.assertEqual(len(monitors), 1)
        master, quorum = monitors.pop()
        self.assertEqual(quorum, 2)
        backend = backend_variables()
        for svc, binary in (("gateway", harness.GATEWAY), ("worker", harness.WORKER)):
            with self.subTest(service=svc):
                env = {k: str(v) for k, v in services[svc]["environment"].items()}
                self.assertEqual(env["OSBQ_REDIS_MIN_ACKS"], "1")
                self.assertEqual(env["OSBQ_REDIS_MASTER_NAME"], master)
                self.assertEqual(env["OSBQ_REDIS_SENTINELS"].split(","),
                                 ["%s:26379" % s for s in sentinels])
                known = known_variables(binary) | (backend if svc == "worker" else set())
                for name in env:
                    self.assertIn(name, known)
                for s in sentinels:
                    self.assertEqual(services[svc]["depends_on"][s]["condition"],
                                     "service_healthy")
                # Everything else of the main file is kept.
                main_env = self.env_of(svc)
                self.assertEqual({k: v for k, v in env.items() if k in main_env}, main_env)
        # The main file stays the default: one Redis, today's acknowledgement.
        for svc in ("gateway", "worker"):
            self.assertNotIn("OSBQ_REDIS_MIN_ACKS", self.env_of(svc))
            self.assertNotIn("OSBQ_REDIS_SENTINELS", self.env_of(svc))

    # The swarm stack: the same file with docker-compose.swarm.yml (docs/deploy.md, "Several
    # hosts"), as `docker stack config` (the docker client, no engine) resolves it.
    def test_swarm_stack(self):
        docker = shutil.which("docker")
        if docker is None:
            self.skipTest("no docker client")
        os.makedirs(os.path.join(self.copy, "secrets", "bus"), exist_ok=True)
        for name in ("bus/gateways", "bus/gateways_secret", "bus/worker", "bus/worker_secret"):
            open(os.path.join(self.copy, "secrets", name), "a").close()
        r = subprocess.run([docker, "stack", "config", "-c", "docker-compose.yml", "-c",
                            "docker-compose.swarm.yml"], cwd=self.copy, env=self.env,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0 and "unknown command" in r.stderr + r.stdout:
            self.skipTest("this docker client has no `stack config`")
        self.assertEqual(r.returncode, 0, r.stderr)
        stack = self.yaml.safe_load(r.stdout)
        services = stack["services"]
        self.assertEqual(set(services), set(self.resolved["services"]))
        for name, s in services.items():
            with self.subTest(service=name):
                deploy = s["deploy"]
                # Found by DNS: haproxy needs each gateway's address; no IPVS virtual IPs.
                self.assertEqual(deploy["endpoint_mode"], "dnsrr")
                # Nothing from one host's disk: named volumes and tmpfs only.
                for v in s.get("volumes", []):
                    self.assertIn(v["type"], ("volume", "tmpfs"), v)
                # The compose file's settings, unchanged.
                main = self.service(name)
                self.assertEqual({k: str(v) for k, v in (s.get("environment") or {}).items()},
                                 {k: str(v) for k, v in (main.get("environment") or {}).items()})
                for key in ("healthcheck", "stop_grace_period", "command", "init"):
                    self.assertEqual(s.get(key), main.get(key), key)
                self.assertEqual({x["source"] for x in s.get("secrets", [])},
                                 {x["source"] if isinstance(x, dict) else x
                                  for x in main.get("secrets", [])})
                # The key files readable by the containers' user alone.
                for x in s.get("secrets", []):
                    if x["source"].endswith("_secret") or x["source"] == "secret_keys":
                        self.assertEqual((x.get("uid"), x.get("mode")),
                                         (str(CONTAINER_UID), 0o400), x)
        for name in ("gateway", "worker"):
            with self.subTest(service=name):
                s = services[name]
                self.assertEqual(s["image"], "osbq-%s:latest" % name)
                self.assertGreaterEqual(s["deploy"]["replicas"], 2)
                update = s["deploy"]["update_config"]
                self.assertEqual((update["order"], update["parallelism"]), ("start-first", 1))
                self.assertEqual(s["deploy"]["rollback_config"]["order"], "start-first")
        # The gateways admit the worker key, a swarm config in their clients directory.
        clients = self.env_of("gateway")["OSBQ_BUS_CURVE_CLIENTS_DIR"]
        self.assertIn(clients + "/worker", [c["target"] for c in services["gateway"]["configs"]])
        self.assertEqual(stack["configs"]["bus_worker"]["file"],
                         os.path.join(self.copy, "secrets", "bus", "worker"))
        # Redis: one task, on the labelled node holding its volume, never two on one AOF.
        redis = services["redis"]["deploy"]
        self.assertEqual(redis["replicas"], 1)
        self.assertEqual(redis["placement"]["constraints"], ["node.labels.osbq.redis == true"])
        self.assertEqual(redis["update_config"]["order"], "stop-first")
        # haproxy on every node, its configuration a swarm config, the port on each node.
        lb = services["lb"]
        self.assertEqual(lb["deploy"]["mode"], "global")
        self.assertEqual([(p["published"], p["target"], p["mode"]) for p in lb["ports"]],
                         [(8080, 8080, "host")])
        self.assertEqual(stack["configs"]["haproxy_cfg"]["file"],
                         os.path.join(self.copy, "haproxy.cfg"))
        self.assertTrue(any(c["target"].startswith("/usr/local/etc/haproxy/haproxy.cfg/")
                            for c in lb["configs"]))

    def test_duration_parser(self):
        self.assertEqual(duration_s("30s"), 30)
        self.assertEqual(duration_s("1m30s"), 90)
        self.assertEqual(duration_s("1500ms"), 1.5)
        self.assertRaises(ValueError, duration_s, "30 seconds")


if __name__ == "__main__":
    unittest.main()
