"""The job bus with CurveZMQ (docs/security.md, bus): gateways are CURVE servers that admit only
the workers whose public certificates are in OSBQ_BUS_CURVE_CLIENTS_DIR; workers are CURVE
clients that talk only to a gateway holding the server secret key. Certificates come from
osbq-ctl bus-cert.

A job that must not run is made by an async provision: the gateway answers 202 and keeps the
operation queued until an admitted worker claims it. "Never claimed" is read from Redis through
osbq-ctl operation (state queued, no claims) after a wait of NO_JOB_WAIT_S, and from the worker
logs (the operation id never appears)."""

import json
import os
import re
import shutil
import subprocess
import time
import unittest

import harness

CTL = os.path.join(harness.BUILD_DIR, "bin", "osbq-ctl")
PEER = os.path.join(harness.BUILD_DIR, "bin", "osbq-test-bus-peer")
CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-faults.json")

SERVICE = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4e01"
FAST = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4f01"  # every operation at once

ENV = {
    "OSBQ_RECOVERY_INTERVAL_MS": "200",
    # Long enough that no gateway resends an unclaimed job while a test watches it stay queued.
    "OSBQ_CLAIM_TIMEOUT_MS": "60000",
}

RUN_TIMEOUT_S = 10.0
OP_TIMEOUT_S = 15.0
# How long a job that must not be taken is watched (workers announce themselves every second).
NO_JOB_WAIT_S = 4.0
POLL_S = 0.05


new_id = harness.new_id


def instance_body():
    return harness.provision_body(SERVICE, FAST, instance_name="bus-auth")


ipath = harness.ipath


class BusAuthTestCase(unittest.TestCase):
    """A stack with certificates in <workdir>/certs: the gateways' pair, two admitted workers'
    (alice, bob) whose public halves are in clients/, an intruder's and another server's."""

    def setUp(self):
        self.stack = harness.Stack(catalog=CATALOG, extra_env=ENV)
        self.addCleanup(self.stack.stop)
        self.certs = os.path.join(self.stack.workdir, "certs")
        self.clients_dir = os.path.join(self.certs, "clients")
        os.makedirs(self.clients_dir)
        for name in ("server", "alice", "bob", "intruder", "other-server"):
            self.bus_cert(name)
        for name in ("alice", "bob"):
            shutil.copy(self.cert(name), self.clients_dir)

    def ctl(self, *args):
        r = subprocess.run([CTL] + list(args), env=self.stack.env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT_S)
        err = r.stderr.decode()
        for marker in harness.SANITIZER_MARKERS:
            self.assertNotIn(marker, err, "osbq-ctl %s: sanitizer report:\n%s" % (args, err))
        self.assertEqual(r.returncode, 0, "osbq-ctl %s exited %d:\n%s" % (args, r.returncode, err))
        return r.stdout.decode()

    def bus_cert(self, name):
        return json.loads(self.ctl("--json", "bus-cert", self.cert(name)))

    def cert(self, name, secret=False):
        return os.path.join(self.certs, name + ("_secret" if secret else ""))

    def start_gateway(self, server="server", clients_dir=None, **overrides):
        if server is not None:
            overrides.setdefault("OSBQ_BUS_CURVE_SERVER_CERT", self.cert(server, secret=True))
            overrides.setdefault("OSBQ_BUS_CURVE_CLIENTS_DIR", clients_dir or self.clients_dir)
        gw = self.stack.start_gateway(**overrides)
        # Logged once the bus is up, which may be just after /healthz first answers.
        advertised = re.compile(r"advertised as (tcp://[^) ]+)")
        harness.wait_until(lambda: advertised.search(gw.log()), harness.START_TIMEOUT_S,
                           "the gateway to log its bus endpoint")
        gw.bus = advertised.search(gw.log()).group(1)
        return gw

    def start_worker(self, client="alice", server="server", server_secret=False, **overrides):
        if client is not None:
            overrides.setdefault("OSBQ_BUS_CURVE_SERVER_CERT",
                                 self.cert(server, secret=server_secret))
            overrides.setdefault("OSBQ_BUS_CURVE_CLIENT_CERT", self.cert(client, secret=True))
        return self.stack.start_worker(**overrides)

    def provision_async(self, gateway):
        """An accepted async provision; returns (instance id, operation id)."""
        client = self.stack.client(gateway)
        self.addCleanup(client.close)
        iid = new_id()
        r = client.request("PUT", ipath(iid, incomplete=True), instance_body())
        self.assertEqual(r.status, 202, r.body)
        return iid, r.json()["operation"]

    def operation(self, op):
        return json.loads(self.ctl("--json", "operation", op))

    def wait_succeeded(self, op):
        deadline = time.monotonic() + OP_TIMEOUT_S
        while True:
            state = self.operation(op)["state"]
            if state == "succeeded":
                return
            self.assertIn(state, ("queued", "running"))
            if time.monotonic() > deadline:
                self.fail("operation %s still %s after %.0f s" % (op, state, OP_TIMEOUT_S))
            time.sleep(0.2)

    def assert_never_claimed(self, op, workers):
        """After NO_JOB_WAIT_S the operation is still queued, never claimed, and unknown to the
        workers' logs."""
        time.sleep(NO_JOB_WAIT_S)
        detail = self.operation(op)
        self.assertEqual(detail["state"], "queued", detail)
        self.assertIn(str(detail.get("claims") or "0"), ("0", "None"), detail)
        for w in workers:
            self.assertNotIn(op, w.log(), "%s saw the operation" % w.name)

    def wait_logged(self, process, text, timeout_s=harness.START_TIMEOUT_S):
        harness.wait_until(lambda: text in process.log(), timeout_s,
                           "%s to log %r" % (process.name, text))


class TestBusAuth(BusAuthTestCase):

    def test_admitted_workers_run_jobs(self):
        """Own certificates, a shared one, and a worker given the server's secret file (it uses
        only the public key): all three are admitted and provisions succeed."""
        gw = self.start_gateway()
        self.assertIn("job bus: CurveZMQ", gw.log())
        self.assertNotIn("not authenticated", gw.log())
        workers = [self.start_worker("alice"), self.start_worker("alice"),
                   self.start_worker("bob", server_secret=True)]
        harness.wait_workers_connected([gw], 3)
        ops = [self.provision_async(gw)[1] for _ in range(3)]
        for op in ops:
            self.wait_succeeded(op)
        for w in workers:
            self.assertIn("job bus: CurveZMQ", w.log())
            self.assertNotIn("handshake with", w.log())

    def test_unknown_worker_gets_nothing_until_an_admitted_one_comes(self):
        gw = self.start_gateway()
        intruder = self.start_worker("intruder")
        # The refusal is in the intruder's own log, at warn level, saying why.
        self.wait_logged(intruder, "handshake with %s failed: the gateway refused this worker's "
                         "key" % gw.bus)
        iid, op = self.provision_async(gw)
        self.assert_never_claimed(op, [intruder])
        self.assertEqual(harness.connected_workers(gw), set())
        alice = self.start_worker("alice")
        self.wait_succeeded(op)
        self.assertIn(op, alice.log())
        self.assertNotIn(op, intruder.log())

    def test_adding_a_client_certificate_admits_the_worker_without_a_restart(self):
        """zauth reads the clients directory again when its files change."""
        gw = self.start_gateway()
        intruder = self.start_worker("intruder")
        self.wait_logged(intruder, "handshake with %s failed" % gw.bus)
        shutil.copy(self.cert("intruder"), self.clients_dir)
        harness.wait_workers_connected([gw], 1)
        self.wait_logged(intruder, "handshake with %s succeeded" % gw.bus)
        self.wait_succeeded(self.provision_async(gw)[1])

    def test_misconfigured_workers_say_why_and_get_nothing(self):
        gw = self.start_gateway()
        plain = self.start_worker(client=None)
        wrong_server = self.start_worker("alice", server="other-server")
        self.wait_logged(plain, "handshake with %s failed: security mechanism mismatch" % gw.bus)
        self.wait_logged(wrong_server, "handshake with %s failed" % gw.bus)
        self.assertIn("not authenticated", plain.log())
        iid, op = self.provision_async(gw)
        self.assert_never_claimed(op, [plain, wrong_server])
        self.assertEqual(harness.connected_workers(gw), set())
        # Rate-limited: the worker tries again every 2 s, the log says it once in 30 s.
        self.assertEqual(plain.log().count("security mechanism mismatch"), 1, plain.log())

    def test_keyless_peer_receives_no_job(self):
        """A plain DEALER announcing free slots on a CURVE gateway's bus gets no job; the same
        peer on a plain gateway does (so the peer would see one)."""
        for curve in (True, False):
            with self.subTest(curve=curve):
                gw = self.start_gateway(server="server" if curve else None)
                iid, op = self.provision_async(gw)
                r = subprocess.run([PEER, gw.bus, "%d" % NO_JOB_WAIT_S],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, timeout=NO_JOB_WAIT_S + 10)
                out = r.stdout.decode()
                self.assertEqual(r.returncode, 0, out)
                if curve:
                    self.assertIn("done, 0 jobs", out)
                    self.assertNotIn("JOB", out)
                    self.assertEqual(self.operation(op)["state"], "queued")
                else:
                    self.assertIn("JOB ", out)
                    self.assertIn("not authenticated", gw.log())
                gw.stop()

    def test_rogue_gateways_send_no_job_to_workers(self):
        """Gateways registered in the same Redis without the server secret key (another key
        pair, or plain) queue jobs and would send them, but the worker's handshake with them
        fails, so it never receives one; the real gateway keeps working."""
        gw = self.start_gateway()
        alice = self.start_worker("alice")
        harness.wait_workers_connected([gw], 1)
        # The rogue knows the worker's public key (it is public): it would admit it.
        rogue_clients = os.path.join(self.certs, "rogue-clients")
        os.makedirs(rogue_clients)
        shutil.copy(self.cert("alice"), rogue_clients)
        rogue_curve = self.start_gateway(server="other-server", clients_dir=rogue_clients)
        rogue_plain = self.start_gateway(server=None)
        self.wait_logged(alice, "handshake with %s failed" % rogue_curve.bus)
        self.wait_logged(alice, "handshake with %s failed: security mechanism mismatch"
                         % rogue_plain.bus)
        rogue_ops = [self.provision_async(rogue_curve)[1], self.provision_async(rogue_plain)[1]]
        self.wait_succeeded(self.provision_async(gw)[1])
        time.sleep(NO_JOB_WAIT_S)
        for op in rogue_ops:
            detail = self.operation(op)
            self.assertEqual(detail["state"], "queued", detail)
            self.assertNotIn(op, alice.log())
        self.assertEqual(harness.connected_workers(rogue_curve), set())
        self.assertEqual(harness.connected_workers(rogue_plain), set())


class TestBusAuthStartup(BusAuthTestCase):
    """Certificates that cannot serve stop the process at start-up with a line naming the
    variable."""

    def run_binary(self, binary, **overrides):
        status, out = harness.run_once([binary], self.stack.env(**overrides))
        for marker in harness.SANITIZER_MARKERS:
            self.assertNotIn(marker, out)
        return status, out

    def test_public_certificate_where_a_secret_one_is_needed(self):
        # zcert_load reads alice_secret when it sits beside alice: move it away first.
        os.rename(self.cert("alice", secret=True), self.cert("alice-moved", secret=True))
        status, out = self.run_binary(harness.WORKER,
                                      OSBQ_BUS_CURVE_SERVER_CERT=self.cert("server"),
                                      OSBQ_BUS_CURVE_CLIENT_CERT=self.cert("alice"))
        self.assertEqual(status, 1, out)
        self.assertIn("osbq-worker: OSBQ_BUS_CURVE_CLIENT_CERT: %s holds no secret key"
                      % self.cert("alice"), out)
        os.rename(self.cert("server", secret=True), self.cert("server-moved", secret=True))
        status, out = self.run_binary(harness.GATEWAY,
                                      OSBQ_BUS_CURVE_SERVER_CERT=self.cert("server"),
                                      OSBQ_BUS_CURVE_CLIENTS_DIR=self.clients_dir)
        self.assertEqual(status, 1, out)
        self.assertIn("osbq-gateway: OSBQ_BUS_CURVE_SERVER_CERT: %s holds no secret key"
                      % self.cert("server"), out)

    def test_the_same_public_key_twice_in_the_clients_directory(self):
        """czmq's certificate store aborts on it: the gateway refuses to start instead."""
        shutil.copy(self.cert("alice"), os.path.join(self.clients_dir, "alice-again"))
        status, out = self.run_binary(harness.GATEWAY,
                                      OSBQ_BUS_CURVE_SERVER_CERT=self.cert("server", secret=True),
                                      OSBQ_BUS_CURVE_CLIENTS_DIR=self.clients_dir)
        self.assertEqual(status, 1, out)
        self.assertIn("osbq-gateway: OSBQ_BUS_CURVE_CLIENTS_DIR: ", out)
        self.assertIn("hold the same public key", out)

    def test_not_a_certificate(self):
        junk = os.path.join(self.certs, "junk")
        with open(junk, "w") as f:
            f.write("not a certificate\n")
        status, out = self.run_binary(harness.WORKER, OSBQ_BUS_CURVE_SERVER_CERT=junk,
                                      OSBQ_BUS_CURVE_CLIENT_CERT=self.cert("alice", secret=True))
        self.assertEqual(status, 1, out)
        self.assertIn("osbq-worker: OSBQ_BUS_CURVE_SERVER_CERT: %s holds no CurveZMQ certificate"
                      % junk, out)


if __name__ == "__main__":
    unittest.main()
