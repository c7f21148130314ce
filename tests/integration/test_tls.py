"""HTTPS on the gateway (OSBQ_TLS_CERT / OSBQ_TLS_KEY): served with the configured certificate,
TLS 1.2 at least, no plain HTTP on the port, the certificate reread on SIGHUP without dropping
open connections (a bad file keeps the old one), start-up refusing bad files, and a whole
provision / last_operation / deprovision over HTTPS. Every certificate is made here with the
openssl command (scripts/install-deps.sh installs it), self-signed for 127.0.0.1 and localhost."""

import hashlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest
import uuid
import warnings

import harness

# The example catalog's "instant" plan (sim backend, 0 ms) of service osbq-sim.
SERVICE = "5f1c7a2e-3b8d-4c6a-9e41-0d2b7f9a1c11"
PLAN = "8a3e0c5d-6f27-4b19-a8d4-2c9e1f7b3a21"

RELOADED = "new connections use the reloaded TLS certificate"
KEPT = "keeping the current TLS certificate"


def make_identity(directory, name):
    """A self-signed certificate for 127.0.0.1 and localhost and its key, as PEM files;
    returns (cert path, key path)."""
    cert = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-noenc", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=osbq-test-" + name, "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=30)
    return cert, key


def fingerprint_of_file(cert):
    with open(cert) as f:
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(f.read())).hexdigest()


def context_trusting(*certs):
    """A client context that verifies the server against exactly these certificates."""
    pem = ""
    for cert in certs:
        with open(cert) as f:
            pem += f.read()
    ctx = ssl.create_default_context()
    ctx.load_verify_locations(cadata=pem)
    return ctx


def received(sock, limit, ends):
    """What sock receives until limit bytes are in, the peer closes it or an exception of ends
    (a tuple) is raised."""
    data = b""
    try:
        while len(data) < limit:
            chunk = sock.recv(limit)
            if not chunk:
                break
            data += chunk
    except ends:
        pass
    return data


def install(src, dst):
    """Replaces dst with a copy of src in one rename, as a certificate renewal would."""
    tmp = dst + ".new"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


class TlsFiles(unittest.TestCase):
    """Certificates made once per class in a directory of their own: a and b are two
    identities, the gateway's files (cert.pem, key.pem) start as a copy of a. Made before the
    set-up of a class that comes next (harness.StackTestCase), which may use them."""

    @classmethod
    def setUpClass(cls):
        cls.certs = tempfile.mkdtemp(prefix="osbq-tls-")
        cls.a = make_identity(cls.certs, "a")
        cls.b = make_identity(cls.certs, "b")
        cls.trust = context_trusting(cls.a[0], cls.b[0])
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.certs, ignore_errors=True)

    def gateway_files(self):
        """Fresh copies of a as the gateway's files, for a test that replaces them."""
        cert = os.path.join(self.certs, "cert-%s.pem" % uuid.uuid4().hex[:8])
        key = cert.replace("cert-", "key-")
        install(self.a[0], cert)
        install(self.a[1], key)
        return cert, key

    def start_tls_gateway(self, stack, cert, key, **overrides):
        return stack.start_gateway(ssl_context=self.trust, OSBQ_TLS_CERT=cert, OSBQ_TLS_KEY=key,
                                   **overrides)

    def peer_fingerprint(self, gateway):
        """The SHA-256 of the certificate a new connection to the gateway is shown."""
        with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as raw:
            with self.trust.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                return hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()


class Serving(TlsFiles, harness.StackTestCase):
    """One HTTPS gateway that no test reconfigures."""

    @classmethod
    def start_stack(cls):
        cls.gateway = cls.stack.start_gateway(ssl_context=cls.trust, OSBQ_TLS_CERT=cls.a[0],
                                              OSBQ_TLS_KEY=cls.a[1])

    def test_catalog_and_probes_over_https_with_the_configured_certificate(self):
        c = self.stack.client(self.gateway, ssl_context=context_trusting(self.a[0]))
        try:
            r = c.request("GET", "/v2/catalog")
            self.assertEqual(r.status, 200)
            self.assertIn("services", r.json())
            for path in ("/healthz", "/readyz", "/metrics"):
                self.assertEqual(c.request("GET", path, auth=False).status, 200, path)
            self.assertEqual(c.request("GET", "/v2/catalog", auth=False).status, 401)
        finally:
            c.close()
        self.assertEqual(self.peer_fingerprint(self.gateway), fingerprint_of_file(self.a[0]))

    def test_untrusted_certificate_fails_verification(self):
        # A client that trusts only b refuses the gateway (which shows a): verification is real.
        c = self.stack.client(self.gateway, ssl_context=context_trusting(self.b[0]))
        with self.assertRaises(ssl.SSLCertVerificationError):
            c.request("GET", "/healthz", auth=False)
        c.close()

    def test_plain_http_on_the_tls_port_gets_no_http_answer(self):
        with socket.create_connection(("127.0.0.1", self.gateway.port), timeout=10) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = received(s, 4096, (ConnectionResetError, socket.timeout))
        self.assertFalse(answer.startswith(b"HTTP/"), answer[:100])
        self.assertNotIn(b'"status"', answer)
        # The gateway goes on serving HTTPS.
        self.assertEqual(self.peer_fingerprint(self.gateway), fingerprint_of_file(self.a[0]))

    def test_image_healthcheck_checks_the_port_of_a_tls_gateway(self):
        script = os.path.join(harness.SOURCE_DIR, "compose", "healthcheck.sh")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "OSBQ_LISTEN": "0.0.0.0:%d" % self.gateway.port}

        def run(**extra):
            return subprocess.run(["bash", script, "/healthz"], env=dict(env, **extra),
                                  capture_output=True, timeout=30).returncode

        self.assertEqual(run(OSBQ_TLS_CERT=self.a[0]), 0)
        # Plain HTTP to the HTTPS port gets no status line: unhealthy, as it should be.
        self.assertNotEqual(run(), 0)
        closed = harness.free_port()
        self.assertNotEqual(run(OSBQ_TLS_CERT=self.a[0], OSBQ_LISTEN="127.0.0.1:%d" % closed), 0)

    def test_silent_connection_closed_after_the_idle_timeout(self):
        # A client that connects and never starts its handshake holds a slot only as long as
        # OSBQ_HTTP_IDLE_TIMEOUT_S, as on plain HTTP.
        gateway = self.stack.start_gateway(ssl_context=self.trust, OSBQ_TLS_CERT=self.a[0],
                                           OSBQ_TLS_KEY=self.a[1], OSBQ_HTTP_IDLE_TIMEOUT_S=2)
        with socket.create_connection(("127.0.0.1", gateway.port), timeout=15) as s:
            started = time.monotonic()
            data = received(s, 64, (ConnectionResetError,))
            self.assertLess(time.monotonic() - started, 8)
            # Closed, at most after a TLS alert record (GnuTLS says close_notify).
            self.assertTrue(data == b"" or data.startswith(b"\x15\x03"), data)

    def handshake(self, version):
        """Negotiates exactly version with the gateway; returns the version agreed."""
        ctx = context_trusting(self.a[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # TLS 1.1, on purpose
            ctx.minimum_version = version
            ctx.maximum_version = version
        if version < ssl.TLSVersion.TLSv1_2:
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        with socket.create_connection(("127.0.0.1", self.gateway.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                return s.version()

    def test_tls_1_2_and_1_3_accepted(self):
        self.assertEqual(self.handshake(ssl.TLSVersion.TLSv1_2), "TLSv1.2")
        self.assertEqual(self.handshake(ssl.TLSVersion.TLSv1_3), "TLSv1.3")

    def test_tls_1_1_refused(self):
        reason = local_tls_1_1_unavailable(self.a)
        if reason is not None:
            self.skipTest("this Python/OpenSSL cannot speak TLS 1.1 even to itself: " + reason)
        with self.assertRaises(ssl.SSLError):
            self.handshake(ssl.TLSVersion.TLSv1_1)
        self.assertEqual(self.handshake(ssl.TLSVersion.TLSv1_2), "TLSv1.2")


def local_tls_1_1_unavailable(identity):
    """None when this Python can complete a TLS 1.1 handshake with itself on loopback (so a
    refusal by the gateway is the gateway's), else why not."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        for ctx in (server_ctx, client_ctx):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                ctx.minimum_version = ssl.TLSVersion.TLSv1_1
                ctx.maximum_version = ssl.TLSVersion.TLSv1_1
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        server_ctx.load_cert_chain(identity[0], identity[1])
        client_ctx.check_hostname = False
        client_ctx.verify_mode = ssl.CERT_NONE
    except (ssl.SSLError, ValueError) as e:
        return str(e)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.settimeout(10)
    result = {}

    def serve():
        try:
            conn, _ = listener.accept()
            with server_ctx.wrap_socket(conn, server_side=True) as s:
                result["server"] = s.version()
        except (OSError, ssl.SSLError) as e:
            result["server_error"] = str(e)

    t = threading.Thread(target=serve)
    t.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with client_ctx.wrap_socket(raw) as s:
                version = s.version()
    except (OSError, ssl.SSLError) as e:
        return str(e)
    finally:
        t.join(timeout=10)
        listener.close()
    if version != "TLSv1.1":
        return "negotiated %s instead" % version
    return None


class Reload(TlsFiles):
    """SIGHUP rereads the files; one gateway per test, as each one changes them."""

    def setUp(self):
        self.stack = harness.Stack()
        self.cert, self.key = self.gateway_files()
        self.gateway = self.start_tls_gateway(self.stack, self.cert, self.key)

    def tearDown(self):
        self.stack.stop()

    def hup_and_wait(self, marker):
        before = self.gateway.log().count(marker)
        self.gateway.send_signal(signal.SIGHUP)
        harness.wait_until(lambda: self.gateway.log().count(marker) > before, 10,
                           "the gateway to log %r" % marker)
        self.assertTrue(self.gateway.alive())
        return [l for l in self.gateway.log().splitlines() if marker in l][-1]

    def test_new_certificate_for_new_connections_open_ones_keep_working(self):
        kept = self.stack.client(self.gateway)
        self.assertEqual(kept.request("GET", "/v2/catalog").status, 200)
        sock = kept.conn.sock
        self.assertEqual(hashlib.sha256(sock.getpeercert(binary_form=True)).hexdigest(),
                         fingerprint_of_file(self.a[0]))
        install(self.b[0], self.cert)
        install(self.b[1], self.key)
        self.hup_and_wait(RELOADED)
        self.assertEqual(self.peer_fingerprint(self.gateway), fingerprint_of_file(self.b[0]))
        # The connection opened before the reload goes on, on the same socket.
        self.assertEqual(kept.request("GET", "/v2/catalog").status, 200)
        self.assertIs(kept.conn.sock, sock)
        kept.close()
        fresh = self.stack.client(self.gateway, ssl_context=context_trusting(self.b[0]))
        self.assertEqual(fresh.request("GET", "/v2/catalog").status, 200)
        fresh.close()
        # And back: every reload takes effect, the retired identities are freed (the
        # sanitizers check that at stop).
        install(self.a[0], self.cert)
        install(self.a[1], self.key)
        self.hup_and_wait(RELOADED)
        self.assertEqual(self.peer_fingerprint(self.gateway), fingerprint_of_file(self.a[0]))

    def test_reloads_while_handshakes_run(self):
        """Identities retired while connections hold them are freed only after those close:
        under ASan a use after free would show in the gateway's log (checked at stop)."""
        fingerprints = {fingerprint_of_file(self.a[0]), fingerprint_of_file(self.b[0])}
        seen = set()
        errors = []
        stop = threading.Event()

        def connect_repeatedly():
            for _ in range(400):
                if stop.is_set():
                    return
                try:
                    c = self.stack.client(self.gateway)
                    r = c.request("GET", "/healthz", auth=False)
                    seen.add(hashlib.sha256(c.conn.sock.getpeercert(binary_form=True))
                             .hexdigest())
                    c.close()
                    if r.status != 200:
                        errors.append(r.status)
                except (OSError, ssl.SSLError) as e:
                    errors.append(repr(e))

        threads = [threading.Thread(target=connect_repeatedly) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            for i in range(10):
                which = self.b if i % 2 == 0 else self.a
                install(which[0], self.cert)
                install(which[1], self.key)
                self.hup_and_wait(RELOADED)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        self.assertEqual(errors, [])
        self.assertEqual(seen, fingerprints)
        self.assertEqual(self.peer_fingerprint(self.gateway), fingerprint_of_file(self.a[0]))

    def test_broken_certificate_keeps_the_old_one(self):
        with open(self.cert, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
        line = self.hup_and_wait(KEPT)
        self.assertIn("OSBQ_TLS_CERT", line)
        self.assertEqual(self.peer_fingerprint(self.gateway), fingerprint_of_file(self.a[0]))

    def test_key_of_another_certificate_keeps_the_old_one(self):
        install(self.b[0], self.cert)  # b's certificate with a's key
        line = self.hup_and_wait(KEPT)
        self.assertIn("OSBQ_TLS_KEY", line)
        self.assertEqual(self.peer_fingerprint(self.gateway), fingerprint_of_file(self.a[0]))

    def test_missing_files_keep_the_old_one(self):
        os.unlink(self.key)
        line = self.hup_and_wait(KEPT)
        self.assertIn("OSBQ_TLS_KEY", line)
        self.assertEqual(self.peer_fingerprint(self.gateway), fingerprint_of_file(self.a[0]))
        self.assertNotIn("BEGIN", self.gateway.log())


class StartupChecks(TlsFiles, harness.StackTestCase):
    """A bad certificate or key stops the gateway with one line naming the variable (on a stack
    of redis-server alone)."""

    def assertFailsNaming(self, variable, cert, key):
        env = self.stack.env(OSBQ_LISTEN="127.0.0.1:%d" % harness.free_port(),
                             OSBQ_BUS_BIND="tcp://127.0.0.1:%d" % harness.free_port(),
                             OSBQ_TLS_CERT=cert, OSBQ_TLS_KEY=key)
        status, out = harness.run_once([harness.GATEWAY], env)
        self.assertNotEqual(status, 0, out)
        lines = [l for l in out.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, out)
        self.assertIn(variable, lines[0])
        self.assertNotIn("BEGIN", out)
        return lines[0]

    def garbage(self, name):
        path = os.path.join(self.certs, name)
        with open(path, "w") as f:
            f.write("this is not PEM\n")
        return path

    def test_missing_certificate(self):
        self.assertFailsNaming("OSBQ_TLS_CERT", os.path.join(self.certs, "absent.crt"), self.a[1])

    def test_garbage_certificate(self):
        self.assertFailsNaming("OSBQ_TLS_CERT", self.garbage("garbage.crt"), self.a[1])

    def test_garbage_key(self):
        self.assertFailsNaming("OSBQ_TLS_KEY", self.a[0], self.garbage("garbage.key"))

    def test_key_of_another_certificate(self):
        self.assertFailsNaming("OSBQ_TLS_KEY", self.a[0], self.b[1])

    def test_certificate_without_key(self):
        self.assertFailsNaming("OSBQ_TLS_KEY", self.a[0], None)


class EndToEnd(TlsFiles):
    def test_provision_last_operation_deprovision_over_https(self):
        """Asynchronous provision and deprovision polled with last_operation, then synchronous
        ones, all over one HTTPS keep-alive connection, with a worker."""
        stack = harness.Stack()
        try:
            gateway = self.start_tls_gateway(stack, self.a[0], self.a[1])
            worker = stack.start_worker()
            harness.wait_workers_connected([gateway], 1)
            # SIGHUP means nothing to a worker: it must not end it.
            worker.send_signal(signal.SIGHUP)
            c = stack.client(gateway)
            instance = str(uuid.uuid4())
            body = {"service_id": SERVICE, "plan_id": PLAN, "context": {"platform": "tls"}}
            r = c.request("PUT", "/v2/service_instances/%s?accepts_incomplete=true" % instance,
                          body=body)
            self.assertIn(r.status, (201, 202), r.body)
            self.wait_ended(c, instance, r, b'"state":"succeeded"')
            q = "service_id=%s&plan_id=%s&accepts_incomplete=true" % (SERVICE, PLAN)
            r = c.request("DELETE", "/v2/service_instances/%s?%s" % (instance, q))
            self.assertIn(r.status, (200, 202), r.body)
            # last_operation of a deleted instance: 410 Gone (or succeeded, when still known).
            self.wait_ended(c, instance, r, b"deleted", b'"state":"succeeded"')
            r = c.request("DELETE", "/v2/service_instances/%s?%s" % (instance, q))
            self.assertEqual(r.status, 410, r.body)
            # Synchronous: the connection is suspended while the worker runs, then resumed.
            sync = str(uuid.uuid4())
            r = c.request("PUT", "/v2/service_instances/%s" % sync, body=body)
            self.assertEqual(r.status, 201, r.body)
            r = c.request("DELETE", "/v2/service_instances/%s?service_id=%s&plan_id=%s"
                          % (sync, SERVICE, PLAN))
            self.assertEqual(r.status, 200, r.body)
            c.close()
            self.assertTrue(worker.alive(), worker.log())
        finally:
            stack.stop()

    def wait_ended(self, c, instance, accepted, *expected):
        """Polls last_operation over HTTPS until the operation accepted ended; its last answer
        must contain one of expected."""
        if accepted.status != 202:
            return
        operation = accepted.json().get("operation")
        path = "/v2/service_instances/%s/last_operation" % instance
        if operation:
            path += "?operation=" + operation
        state = {}

        def done():
            r = c.request("GET", path)
            state["last"] = (r.status, r.body)
            return r.status in (200, 410) and r.json().get("state") != "in progress"

        harness.wait_until(done, 10, "the operation to end over HTTPS")
        status, body = state["last"]
        self.assertTrue(any(e in body for e in expected), (status, body))


class PlainGatewaySighup(unittest.TestCase):
    def test_sighup_without_tls_is_logged_and_harmless(self):
        stack = harness.Stack()
        try:
            gateway = stack.start_gateway()
            gateway.send_signal(signal.SIGHUP)
            harness.wait_until(lambda: "nothing to reload" in gateway.log(), 10,
                               "the gateway to log the SIGHUP")
            c = stack.client(gateway)
            self.assertEqual(c.request("GET", "/v2/catalog").status, 200)
            c.close()
        finally:
            stack.stop()


if __name__ == "__main__":
    unittest.main()
