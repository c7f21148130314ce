"""The run command, scripts/run-local.sh, scaled out: `--gateways 2 --workers 3` runs the compose
topology (Redis, N gateways, M workers) as plain processes on loopback. Run against the build
under test (--no-install, OSBQ_BUILD_DIR) in a temporary --var directory, on a free pair of ports:
instances are provisioned through both gateways and polled through the other one, bound and
unbound, deprovisioned; jobs spread over several workers; SIGINT to the script stops every
process it started and it exits 0."""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import uuid

import harness

SCRIPT = os.path.join(harness.SOURCE_DIR, "scripts", "run-local.sh")

# examples/catalog.json: service osbq-sim-logs (bindable), plan standard (sim: provision 500 ms,
# bind 100 ms, the rest 0 ms). Long enough that a gateway has several jobs running at once, so
# it spreads them over its workers.
SERVICE = "e91b4d07-2a6c-4f8e-8b3d-6c0a5f2e7d54"
PLAN = "f3a7c95e-4b1d-4e62-a0f9-8d2b6e1c0f65"

NAMESPACE = "osbq"
GATEWAYS = 2
WORKERS = 3
INSTANCES = 6            # 4 operations each: 24 jobs

START_TIMEOUT_S = 20.0   # the script up, both gateways answering /readyz
CONNECT_TIMEOUT_S = 10.0  # every worker connected to every gateway (workers poll every ~2 s)
OP_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 15.0
PORT_ATTEMPTS = 3

SUMMARY_REDIS = re.compile(r"^  redis +127\.0\.0\.1:(\d+) ", re.M)
WORKER_STARTED = re.compile(r"^\[(worker-\d+)\] .*started: id (\S+),", re.M)
WORKER_CONNECTED = re.compile(r"^\[(gateway-\d+)\] .*worker (\S+) connected", re.M)


def free_port_pair():
    """A port P on 127.0.0.1 such that nothing listens on P nor P + 1 right now."""
    for _ in range(50):
        p = harness.free_port()
        if p >= 65535:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", p + 1))
            except OSError:
                continue
        return p
    raise AssertionError("no free pair of ports found")


def start_time(pid):
    """The start time of a process (field 22 of /proc/<pid>/stat), or None once it is gone:
    with the PID it names one process, even if the PID is reused later."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] == "Z":
        return None
    return fields[19]


def session_pids(sid):
    """The PIDs of the processes in session sid (the script started its own)."""
    out = subprocess.run(["ps", "-o", "pid=", "-s", str(sid)], capture_output=True, text=True,
                         timeout=5).stdout
    return [int(x) for x in out.split()]


def redis_command(port, *args):
    """One command to the script's redis-server (a minimal RESP client); the decoded reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        payload = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            payload += b"$%d\r\n%s\r\n" % (len(a), a)
        s.sendall(payload)
        return harness._read_resp(s.makefile("rb"))


class RunLocalTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="osbq-run-local-")
        self.var = os.path.join(self.tmp, "var")
        self.script = None
        self.started = {}   # pid -> start time: every process seen under the script
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OSBQ_")}
        self.env["OSBQ_BUILD_DIR"] = os.path.abspath(harness.BUILD_DIR)
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()
        if self.script is not None and self.script.poll() is None:
            self.script.kill()
            self.script.wait(timeout=5)
        if self.script is not None:
            self.note_processes()
        # Nothing the script started may outlive the test: kill by PID what is left.
        for pid, started in self.started.items():
            if start_time(pid) == started:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.script is not None:
            self.script_out.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- the script ----

    def output(self):
        with open(self.out_path, "r", errors="replace") as f:
            return f.read()

    def note_processes(self):
        """Records every process in the script's session (its children and theirs)."""
        for pid in session_pids(self.script.pid):
            t = start_time(pid)
            if t is not None:
                self.started.setdefault(pid, t)

    def start_script(self):
        """Starts the script on a free pair of ports (a new pair if another process took one
        meanwhile) and waits until it printed its summary and both gateways are ready."""
        for attempt in range(PORT_ATTEMPTS):
            self.port = free_port_pair()
            self.out_path = os.path.join(self.tmp, "run-local-%d.out" % attempt)
            self.script_out = open(self.out_path, "wb")
            # Its own session: no stray signal reaches the test runner, and its processes are
            # easy to list. SIGINT as default: a shell that starts with SIGINT ignored (as
            # under a background job) cannot trap it.
            self.script = subprocess.Popen(
                [SCRIPT, "--no-install", "--gateways", str(GATEWAYS), "--workers", str(WORKERS),
                 "--port", str(self.port), "--var", self.var],
                env=self.env, stdout=self.script_out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline:
                if self.script.poll() is not None:
                    break
                self.note_processes()
                m = SUMMARY_REDIS.search(self.output())
                if m and all(harness.ready(self.port + i) for i in range(GATEWAYS)):
                    self.redis_port = int(m.group(1))
                    self.note_processes()
                    return
                time.sleep(0.1)
            if self.script.poll() is None:
                self.fail("run-local.sh not ready within %ss:\n%s" % (START_TIMEOUT_S,
                                                                     self.output()))
            text = self.output()
            if self.script.returncode == 1 and "in use" in text:
                self.script_out.close()
                self.script = None
                continue  # a port was taken between the check and the start
            self.fail("run-local.sh exited with %s:\n%s" % (self.script.returncode, text))
        self.fail("run-local.sh found a port in use %d times; the last time:\n%s"
                  % (PORT_ATTEMPTS, text))

    def wait_workers_connected(self):
        """Waits until each gateway logged every worker connecting; returns {worker id: name}."""
        ids = {}

        def connected():
            text = self.output()
            ids.update({wid: name for name, wid in WORKER_STARTED.findall(text)})
            seen = {}
            for gateway, wid in WORKER_CONNECTED.findall(text):
                seen.setdefault(gateway, set()).add(wid)
            return (len(ids) == WORKERS
                    and all(seen.get("gateway-%d" % (i + 1), set()) >= set(ids)
                            for i in range(GATEWAYS)))

        try:
            harness.wait_until(connected, CONNECT_TIMEOUT_S,
                               "%d workers to connect to every gateway" % WORKERS)
        except AssertionError:
            raise AssertionError("workers not connected:\n" + self.output())
        return ids

    # ---- the broker ----

    def client(self, gateway):
        c = harness.Client(self.port + gateway, username="osbq", password=self.password)
        self.clients.append(c)
        return c

    def last_operation(self, c, iid, op):
        return c.request("GET", "/v2/service_instances/%s/last_operation?" % iid +
                         urllib.parse.urlencode({"operation": op, "service_id": SERVICE,
                                                 "plan_id": PLAN}))

    def wait_op(self, c, iid, op, gone_ok=False):
        """Polls last_operation until the operation ended; asserts it succeeded (or, for a
        deprovision, that the instance is gone: 410)."""
        deadline = time.monotonic() + OP_TIMEOUT_S
        while True:
            r = self.last_operation(c, iid, op)
            if gone_ok and r.status == 410:
                return
            self.assertEqual(r.status, 200, r.body)
            state = r.json()["state"]
            if state != "in progress":
                self.assertEqual(state, "succeeded", r.body)
                return
            self.assertLess(time.monotonic(), deadline,
                            "operation %s of %s still in progress" % (op, iid))
            time.sleep(0.05)

    # ---- the test ----

    def test_catalog_option(self):
        missing = os.path.join(self.tmp, "no-such-catalog.json")
        r = subprocess.run([SCRIPT, "--no-install", "--catalog", missing, "--var", self.var],
                           env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=10)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--catalog: cannot read the file %s" % missing, r.stderr.decode())
        r = subprocess.run([SCRIPT, "--help"], stdout=subprocess.PIPE, timeout=10)
        self.assertIn("--catalog FILE", r.stdout.decode())

    def test_gateways_and_workers_end_to_end_then_sigint_stops_all(self):
        t0 = time.monotonic()
        self.start_script()
        text = self.output()
        for i in range(GATEWAYS):
            self.assertRegex(text, r"gateway-%d +http://127\.0\.0\.1:%d " % (i + 1, self.port + i))
        with open(os.path.join(self.var, "broker-password")) as f:
            self.password = f.read().strip()
        keys = os.path.join(self.var, "secret-keys")
        self.assertEqual(os.stat(keys).st_mode & 0o777, 0o600)
        with open(keys) as f:
            self.assertRegex(f.read(), r"^[0-9a-f]{64}\n$")
        worker_names = self.wait_workers_connected()
        # The bus runs with the keys the script made in --var (docs/security.md, "The job bus").
        self.assertIn("job bus: CurveZMQ", self.output())
        self.assertNotIn("job bus is not authenticated", self.output())
        self.assertTrue(os.path.exists(os.path.join(self.var, "bus", "clients", "worker")))

        gw = [self.client(i) for i in range(GATEWAYS)]
        body = {"service_id": SERVICE, "plan_id": PLAN,
                "context": {"platform": "osbq-tests"},
                "organization_guid": "org-guid-1", "space_guid": "space-guid-1"}
        query = urllib.parse.urlencode({"service_id": SERVICE, "plan_id": PLAN})

        # Provision through each gateway in turn (all running at once), poll through the other.
        instances = []
        for n in range(INSTANCES):
            iid = str(uuid.uuid4())
            a = n % GATEWAYS
            r = gw[a].request("PUT", "/v2/service_instances/%s?accepts_incomplete=true" % iid,
                              body)
            self.assertEqual(r.status, 202, r.body)
            instances.append((iid, a, r.json()["operation"]))
        for iid, a, op in instances:
            self.wait_op(gw[1 - a], iid, op)

        # The summary's osbq-ctl line works as printed, names beside the ids.
        m = re.search(r"^  (OSBQ_REDIS_URL=\S+ OSBQ_CATALOG=\S+ \S+/osbq-ctl instances)$",
                      self.output(), re.M)
        self.assertIsNotNone(m, self.output())
        env = {k: v for k, v in self.env.items() if k != "OSBQ_BUILD_DIR"}
        r = subprocess.run(["bash", "-c", m.group(1)], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        listed = r.stdout.decode()
        for iid, _, _ in instances:
            self.assertIn(iid, listed)
        self.assertIn("osbq-sim-logs/standard", listed)

        # Bind synchronously through one gateway, unbind and deprovision through the other;
        # the deprovision is polled through the first.
        for iid, a, _ in instances:
            bid = str(uuid.uuid4())
            path = "/v2/service_instances/%s/service_bindings/%s" % (iid, bid)
            r = gw[a].request("PUT", path, {"service_id": SERVICE, "plan_id": PLAN})
            self.assertEqual(r.status, 201, r.body)
            self.assertIsInstance(r.json(), dict)
            # Sealed at rest under the key the script made (docs/security.md).
            stored = redis_command(self.redis_port, "HGET",
                                   "%s:binding:%s:%s" % (NAMESPACE, iid, bid), "result")
            self.assertTrue(stored.startswith("osbq:v1:"), stored[:20])
            r = gw[1 - a].request("DELETE", path + "?" + query)
            self.assertEqual(r.status, 200, r.body)
        deprovisions = []
        for iid, a, _ in instances:
            r = gw[1 - a].request("DELETE", "/v2/service_instances/%s?accepts_incomplete=true&%s"
                                  % (iid, query))
            self.assertEqual(r.status, 202, r.body)
            deprovisions.append((iid, a, r.json()["operation"]))
        for iid, a, op in deprovisions:
            self.wait_op(gw[a], iid, op, gone_ok=True)
            r = gw[1 - a].request("GET", "/v2/service_instances/%s" % iid)
            self.assertEqual(r.status, 404, r.body)

        # Every operation succeeded, and the jobs ran on more than one worker.
        keys = redis_command(self.redis_port, "KEYS", NAMESPACE + ":op:*")
        self.assertEqual(len(keys), 4 * INSTANCES, keys)
        workers = set()
        for key in keys:
            state, worker = redis_command(self.redis_port, "HMGET", key, "state", "worker")
            self.assertEqual(state, "succeeded", key)
            self.assertIn(worker, worker_names, key)
            workers.add(worker_names[worker])
        self.assertGreaterEqual(len(workers), 2, "every job ran on %s" % workers)

        # SIGINT to the script alone: it stops what it started, waits for it, exits 0.
        self.note_processes()
        daemons = {pid for pid in self.started if pid != self.script.pid}
        self.assertGreaterEqual(len(daemons), 2 + GATEWAYS + WORKERS, self.started)
        os.kill(self.script.pid, signal.SIGINT)
        try:
            status = self.script.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.fail("run-local.sh still running %ss after SIGINT:\n%s"
                      % (STOP_TIMEOUT_S, self.output()))
        text = self.output()
        self.assertEqual(status, 0, text)
        self.assertIn("run-local: stopped", text)
        left = [pid for pid in daemons if start_time(pid) == self.started[pid]]
        self.assertEqual(left, [], "still running after the script exited")
        self.assertEqual(session_pids(self.script.pid), [], "its session still has processes")
        for marker in harness.SANITIZER_MARKERS:
            self.assertNotIn(marker, text)
        for name in ("gateway-1", "gateway-2", "worker-1", "worker-2", "worker-3"):
            self.assertRegex(text, r"\[%s\] .*stopped" % name)
        self.assertLess(time.monotonic() - t0, 40.0)


if __name__ == "__main__":
    unittest.main()
