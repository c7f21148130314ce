"""The Debian package of osbq, as an operator gets it: built by scripts/package.sh (a Release
build of its own, reused between runs), its control data and file list as dpkg sees them,
lintian's errors, the unpacked files (units, environment files, man page, completion, maintainer
scripts), and the binaries run from their installed paths with the packaged environment files,
the packaged catalog and a throw-away Redis through one lifecycle.

The package is unpacked (dpkg -x) into a temporary root, not installed: installing it would
change the machine the tests run on (a system user, files in /etc and /usr). The maintainer
scripts run against stub commands instead; the units are checked by systemd-analyze verify with
their binaries at the unpacked paths (no systemd runs here to start them)."""

import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402

PACKAGE_SCRIPT = os.path.join(harness.SOURCE_DIR, "scripts", "package.sh")
BINARIES = ("osbq-gateway", "osbq-worker", "osbq-ctl", "osbq-exec-kit")
UNITS = {"gateway": "osbq-gateway.service", "worker": "osbq-worker.service"}
# What a unit's stop timeout leaves the process after OSBQ_SHUTDOWN_GRACE_MS (as in Kubernetes).
STOP_MARGIN_S = 5
SHUTDOWN_GRACE_DEFAULT_MS = 10000
SIM_SERVICE = "5f1c7a2e-3b8d-4c6a-9e41-0d2b7f9a1c11"
SIM_INSTANT_PLAN = "8a3e0c5d-6f27-4b19-a8d4-2c9e1f7b3a21"

EXPECTED_FILES = {
    "etc/osbq/catalog.json", "etc/osbq/gateway.env", "etc/osbq/worker.env",
    "lib/systemd/system/osbq-gateway.service", "lib/systemd/system/osbq-worker.service",
    "usr/bin/osbq-gateway", "usr/bin/osbq-worker", "usr/bin/osbq-ctl", "usr/bin/osbq-exec-kit",
    "usr/share/man/man1/osbq-ctl.1.gz", "usr/share/bash-completion/completions/osbq-ctl",
    "usr/share/doc/osbq/copyright", "usr/share/doc/osbq/changelog.gz",
    "usr/share/doc/osbq/changelog.Debian.gz", "usr/share/lintian/overrides/osbq",
}
RUNTIME_LIBRARIES = ("libmicrohttpd12", "libjansson4", "libhiredis0.14", "libczmq4",
                     "libmsgpackc2", "libsodium23", "libcurl3-gnutls", "libgnutls30",
                     "libpcre2-8-0")


def project_version():
    with open(os.path.join(harness.SOURCE_DIR, "CMakeLists.txt")) as f:
        return re.search(r"project\(osbq VERSION ([0-9.]+)", f.read()).group(1)


def run(argv, **kwargs):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          check=True, **kwargs).stdout


def environment_file(path):
    """The variables a systemd EnvironmentFile sets (its NAME=value lines), and every OSBQ_*
    name it mentions, set or commented out."""
    values = {}
    with open(path) as f:
        text = f.read()
    for line in text.splitlines():
        m = re.match(r"^([A-Z][A-Z0-9_]*)=(.*)$", line)
        if m:
            values[m.group(1)] = m.group(2)
    return values, set(re.findall(r"\b(OSBQ_[A-Z0-9_]+)=", text))


def help_variables(binary):
    out = run([binary, "--help"])
    names = set(re.findall(r"^  (OSBQ_[A-Z0-9_]+) ", out, re.M))
    names |= {n + "_FILE" for n in re.findall(r"\((OSBQ_[A-Z0-9_]+)_FILE: ", out)}
    return names


def ctl_commands(ctl):
    """The commands `osbq-ctl --help` lists."""
    out = run([ctl, "--help"])
    block = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines()]


class DebianPackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.version = project_version()
        out = run([PACKAGE_SCRIPT], cwd=harness.SOURCE_DIR, timeout=800)
        debs = out.split()
        assert len(debs) == 1, "scripts/package.sh printed %r" % out
        cls.deb = debs[0]
        cls.root = tempfile.mkdtemp(prefix="osbq-package-")
        run(["dpkg-deb", "-x", cls.deb, cls.root])
        cls.control_dir = os.path.join(cls.root, "DEBIAN")
        run(["dpkg-deb", "-e", cls.deb, cls.control_dir])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def path(self, relative):
        return os.path.join(self.root, relative)

    def field(self, name):
        return run(["dpkg-deb", "-f", self.deb, name]).strip()

    def test_control(self):
        self.assertEqual(self.field("Package"), "osbq")
        self.assertEqual(self.field("Version"), self.version + "-1")
        depends = self.field("Depends")
        for library in RUNTIME_LIBRARIES + ("adduser",):
            self.assertRegex(depends, r"(^|, )%s( |,|$)" % re.escape(library))

    def test_files(self):
        listed = run(["dpkg-deb", "--contents", self.deb])
        files = {line.split()[-1].lstrip("./") for line in listed.splitlines()
                 if not line.startswith("d")}
        self.assertEqual(EXPECTED_FILES - files, set(), "missing from the package")
        with open(os.path.join(self.control_dir, "conffiles")) as f:
            conffiles = set(f.read().split())
        self.assertEqual(conffiles, {"/" + p for p in files if p.startswith("etc/")},
                         "every file under /etc is a conffile")
        for name in ("gateway.env", "worker.env"):
            mode = os.stat(self.path("etc/osbq/" + name)).st_mode & 0o777
            self.assertEqual(mode, 0o600, name + " may hold secrets")

    def test_lintian(self):
        if shutil.which("lintian") is None:
            self.skipTest("lintian is not installed (scripts/install-deps.sh installs it)")
        r = subprocess.run(["lintian", "--tag-display-limit", "0", self.deb],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        errors = [line for line in r.stdout.splitlines() if line.startswith("E:")]
        self.assertEqual(errors, [], r.stdout)

    def test_versions(self):
        for name in BINARIES:
            out = run([self.path("usr/bin/" + name), "--version"])
            self.assertEqual(out, "%s %s\n" % (name, self.version))
        with gzip.open(self.path("usr/share/doc/osbq/changelog.gz"), "rt") as f:
            self.assertIn("## [%s]" % self.version, f.read())

    def test_default_catalog_is_the_packaged_one(self):
        out = run([self.path("usr/bin/osbq-gateway"), "--help"])
        self.assertRegex(out, r"OSBQ_CATALOG .*\n +default: /etc/osbq/catalog.json\n")

    def test_units(self):
        for component, unit in UNITS.items():
            with open(self.path("lib/systemd/system/" + unit)) as f:
                text = f.read()
            self.assertIn("\nExecStart=/usr/bin/osbq-%s\n" % component, text)
            self.assertIn("\nEnvironmentFile=/etc/osbq/%s.env\n" % component, text)
            self.assertIn("\nUser=osbq\n", text)
            self.assertIn("\nRestart=on-failure\n", text)
            values, _ = environment_file(self.path("etc/osbq/%s.env" % component))
            grace_ms = int(values.get("OSBQ_SHUTDOWN_GRACE_MS", SHUTDOWN_GRACE_DEFAULT_MS))
            stop_s = int(re.search(r"\nTimeoutStopSec=(\d+)\n", text).group(1))
            self.assertGreaterEqual(stop_s, grace_ms / 1000 + STOP_MARGIN_S, unit)
        if shutil.which("systemd-analyze") is None:
            self.skipTest("systemd-analyze is not installed: units not verified")
        # The units as installed but with their binaries at the unpacked paths: verify checks
        # that ExecStart is executable.
        units_dir = self.path("verify")
        os.makedirs(units_dir)
        for unit in UNITS.values():
            with open(self.path("lib/systemd/system/" + unit)) as f:
                text = f.read().replace("=/usr/bin/", "=%s/usr/bin/" % self.root)
            with open(os.path.join(units_dir, unit), "w") as f:
                f.write(text)
        r = subprocess.run(["systemd-analyze", "verify", "--man=no"]
                           + [os.path.join(units_dir, u) for u in UNITS.values()],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual((r.returncode, r.stdout), (0, ""))

    def test_environment_files_name_known_variables(self):
        for component in UNITS:
            known = help_variables(self.path("usr/bin/osbq-" + component))
            _, named = environment_file(self.path("etc/osbq/%s.env" % component))
            self.assertEqual(named - known, set(), "%s.env names variables that osbq-%s "
                             "--help does not list" % (component, component))

    def test_man_page(self):
        page = self.path("usr/share/man/man1/osbq-ctl.1.gz")
        r = subprocess.run(["man", "--warnings", "-l", page], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=dict(os.environ, MANWIDTH="80"))
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertIn("osbq %s" % self.version, r.stdout)
        section = "\n" + r.stdout.split("\nCOMMANDS\n", 1)[1].split("\nOPTIONS\n", 1)[0]
        for command in ctl_commands(self.path("usr/bin/osbq-ctl")):
            self.assertRegex(section, r"\n {7}%s\b" % re.escape(command))
        named = set(re.findall(r"\bOSBQ_[A-Z0-9_]*[A-Z0-9]", r.stdout))
        self.assertEqual(named - help_variables(self.path("usr/bin/osbq-ctl"))
                         - {"OSBQ_CATALOG"}, set(), "variables osbq-ctl --help does not list")

    def test_bash_completion(self):
        script = self.path("usr/share/bash-completion/completions/osbq-ctl")
        commands = ctl_commands(self.path("usr/bin/osbq-ctl"))

        def complete(*words):
            line = ". %s; COMP_WORDS=(%s); COMP_CWORD=%d; _osbq_ctl; printf '%%s\\n' " \
                   "\"${COMPREPLY[@]}\"" % (script, " ".join("'%s'" % w for w in words),
                                            len(words) - 1)
            return run(["bash", "-c", line]).split()

        self.assertEqual(sorted(complete("osbq-ctl", "")), sorted(commands))
        self.assertEqual(complete("osbq-ctl", "instances", "--state", "provision"),
                         ["provisioning", "provisioned"])
        self.assertIn("--yes", complete("osbq-ctl", "resend", "abc", "--"))

    def test_maintainer_scripts(self):
        """postinst creates the system user and enables nothing; the scripts call what they
        call through stubs that record their arguments."""
        stubs = self.path("stubs")
        os.makedirs(stubs)
        calls = os.path.join(stubs, "calls")
        for command, status in (("adduser", 0), ("systemctl", 0), ("getent", 2),
                                ("deb-systemd-helper", 0), ("useradd", 0)):
            with open(os.path.join(stubs, command), "w") as f:
                f.write("#!/bin/sh\necho \"%s $*\" >> %s\nexit %d\n" % (command, calls, status))
            os.chmod(os.path.join(stubs, command), 0o755)
        env = dict(os.environ, PATH=stubs + ":/usr/bin:/bin")
        for script, args in (("postinst", ["configure", ""]), ("prerm", ["remove"]),
                             ("postrm", ["remove"])):
            run(["sh", "-e", os.path.join(self.control_dir, script)] + args, env=env)
        with open(calls) as f:
            recorded = f.read().splitlines()
        adduser = [c for c in recorded if c.startswith("adduser ")]
        self.assertEqual(len(adduser), 1, recorded)
        for flag in ("--system", "--group", "--no-create-home"):
            self.assertIn(flag, adduser[0].split())
        self.assertEqual(adduser[0].split()[-1], "osbq")
        self.assertFalse([c for c in recorded if re.search(r"\b(enable|start)\b", c)],
                         "the package enables or starts nothing: %r" % recorded)

    def test_lifecycle_from_installed_paths(self):
        """Gateway and worker from /usr/bin of the package with their packaged environment
        files (ports, Redis and credentials overridden) and the packaged catalog: provision,
        bind, unbind, deprovision; osbq-ctl sees the instance."""
        settings = {}
        for component in UNITS:
            values, _ = environment_file(self.path("etc/osbq/%s.env" % component))
            # The stack's own Redis and free ports instead of the packaged ones.
            for name in ("OSBQ_REDIS_URL", "OSBQ_LISTEN", "OSBQ_BUS_BIND"):
                values.pop(name, None)
            settings[component] = values
        catalog = self.path("etc/osbq/catalog.json")
        credentials = {"OSBQ_BROKER_USERNAME": "broker", "OSBQ_BROKER_PASSWORD": "s3cret-pass"}
        stack = harness.osbq_stack.Stack(self.path("usr/bin/osbq-gateway"),
                                         self.path("usr/bin/osbq-worker"))
        try:
            gw = stack.start_gateway(**dict(settings["gateway"], OSBQ_CATALOG=catalog,
                                            **credentials))
            stack.start_worker(**dict(settings["worker"], OSBQ_CATALOG=catalog))
            harness.wait_workers_connected([gw], 1)
            client = harness.Client(gw.port, credentials["OSBQ_BROKER_USERNAME"],
                                    credentials["OSBQ_BROKER_PASSWORD"])
            instance, binding = str(uuid.uuid4()), str(uuid.uuid4())
            ids = {"service_id": SIM_SERVICE, "plan_id": SIM_INSTANT_PLAN}
            base = "/v2/service_instances/" + instance
            r = client.request("PUT", base,
                               dict(ids, organization_guid="org", space_guid="space"))
            self.assertEqual(r.status, 201, r.body)
            r = client.request("PUT", base + "/service_bindings/" + binding, ids)
            self.assertEqual(r.status, 201, r.body)
            self.assertIn("credentials", r.json())
            query = "?service_id=%s&plan_id=%s" % (SIM_SERVICE, SIM_INSTANT_PLAN)
            r = client.request("DELETE", base + "/service_bindings/" + binding + query)
            self.assertEqual(r.status, 200, r.body)
            out = run([self.path("usr/bin/osbq-ctl"), "--json", "instances"],
                      env=harness.osbq_stack.daemon_environment(
                          {"OSBQ_REDIS_URL": stack.redis.url}))
            self.assertIn(instance, out)
            r = client.request("DELETE", base + query)
            self.assertEqual(r.status, 200, r.body)
            client.close()
        finally:
            stack.stop()


if __name__ == "__main__":
    unittest.main()
