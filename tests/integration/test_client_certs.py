"""Platforms that authenticate with a TLS client certificate (OSBQ_PLATFORMS "client_certificate",
docs/platforms.md) through a real HTTPS gateway and worker: the right certificate passes; none,
one of an unknown CA, an expired one or one of another subject gets 401 (JSON, the reason in the
gateway's log); a certificate beside a password needs both; SIGHUP swaps the trusted subject
without dropping an open connection; a client certificate without HTTPS stops the gateway.
Every certificate is made here with the openssl command."""

import base64
import http.client
import json
import os
import signal
import ssl
import subprocess
import tempfile
import unittest

import harness
from test_tls import context_trusting, make_identity

SERVICE = "9a7f0000-0000-4000-8000-0000000000c1"
PLAN = "9a7f0000-0000-4000-8000-0000000001c1"
CATALOG = {"services": [
    {"id": SERVICE, "name": "cert-db", "description": "d", "bindable": True,
     "plans": [{"id": PLAN, "name": "small", "description": "d", "osbq": {"backend": "sim"}}]},
]}
PASSWORD = "both-password-1"


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True, timeout=30)


def make_ca(directory, name):
    key, cert = (os.path.join(directory, name + ext) for ext in (".key", ".crt"))
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-noenc", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=" + name,
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign")
    return cert, key


def make_client(directory, name, ca, subject, san=None, days="2"):
    """A client certificate signed by ca (cert, key); days "-1" makes it expired."""
    key, csr, cert, ext = (os.path.join(directory, name + e)
                           for e in (".key", ".csr", ".crt", ".ext"))
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-noenc",
            "-keyout", key, "-out", csr, "-subj", subject)
    with open(ext, "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
        if san:
            f.write("subjectAltName=DNS:%s\n" % san)
    openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-out", cert,
            "-days", days, "-extfile", ext)
    return cert, key


class ClientCertificates(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="osbq-client-certs-")
        d = cls.dir
        cls.server = make_identity(d, "server")
        cls.trust = context_trusting(cls.server[0])
        ca, other_ca = make_ca(d, "platform-ca"), make_ca(d, "unknown-ca")
        cls.cf = make_client(d, "cf", ca, "/O=Example/CN=cf-prod")
        cls.k8s = make_client(d, "k8s", ca, "/O=Example/CN=k8s-east")
        cls.both = make_client(d, "both", ca, "/O=Example/CN=both", san="both.example")
        cls.stranger = make_client(d, "stranger", other_ca, "/O=Example/CN=cf-prod")
        cls.expired = make_client(d, "expired", ca, "/O=Example/CN=cf-prod", days="-1")
        with open(os.path.join(d, "catalog.json"), "w") as f:
            json.dump(CATALOG, f)
        with open(os.path.join(d, "both-password"), "w") as f:
            f.write(PASSWORD + "\n")
        cls.write_platforms("CN=cf-prod,O=Example")
        cls.stack = harness.Stack(catalog=os.path.join(d, "catalog.json"))
        cls.gateway = cls.stack.start_gateway(
            ssl_context=cls.trust, OSBQ_TLS_CERT=cls.server[0], OSBQ_TLS_KEY=cls.server[1],
            OSBQ_PLATFORMS=os.path.join(d, "platforms.json"), OSBQ_BROKER_USERNAME=None,
            OSBQ_BROKER_PASSWORD=None)

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()
        for name in os.listdir(cls.dir):
            os.unlink(os.path.join(cls.dir, name))
        os.rmdir(cls.dir)

    @classmethod
    def write_platforms(cls, cf_subject):
        platforms = [
            {"name": "cf", "prefix": "/cf-prod",
             "client_certificate": {"ca_file": "platform-ca.crt", "subject": cf_subject}},
            {"name": "both", "prefix": "/both",
             "basic": {"username": "both", "password_file": "both-password"},
             "client_certificate": {"ca_file": "platform-ca.crt", "san": "both.example"}},
        ]
        path = os.path.join(cls.dir, "platforms.json")
        with open(path + ".new", "w") as f:
            json.dump({"platforms": platforms}, f)
        os.replace(path + ".new", path)

    def connect(self, identity=None):
        ctx = context_trusting(self.server[0])
        ctx.check_hostname = False
        if identity is not None:
            ctx.load_cert_chain(identity[0], identity[1])
        return http.client.HTTPSConnection("127.0.0.1", self.gateway.port, timeout=10,
                                           context=ctx)

    def get(self, conn, path, basic=None):
        headers = {"X-Broker-API-Version": "2.17"}
        if basic is not None:
            headers["Authorization"] = "Basic " + base64.b64encode(basic.encode()).decode()
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        body = r.read()
        return r.status, body

    def status(self, identity, path="/cf-prod/v2/catalog", basic=None):
        conn = self.connect(identity)
        try:
            return self.get(conn, path, basic)
        finally:
            conn.close()

    def assertRefused(self, identity, logged, path="/cf-prod/v2/catalog", basic=None):
        status, body = self.status(identity, path, basic)
        self.assertEqual(status, 401, body)
        self.assertIn("client certificate", json.loads(body)["description"])
        if logged is not None:
            harness.wait_until(lambda: logged in self.gateway.log(), 5,
                               "the gateway to log: " + logged)

    def test_the_platforms_certificate_passes(self):
        status, body = self.status(self.cf)
        self.assertEqual(status, 200, body)
        self.assertEqual([s["id"] for s in json.loads(body)["services"]], [SERVICE])

    def test_wrong_certificates_get_401(self):
        self.assertRefused(None, "no client certificate was presented")
        self.assertRefused(self.stranger, "is not signed by the platform's CA")
        self.assertRefused(self.expired, "has expired")
        self.assertRefused(self.k8s, "CN=k8s-east,O=Example")
        self.assertIn("is not the platform's", self.gateway.log())
        # Nothing secret in the log: the keys' PEM bodies are not there.
        with open(self.cf[1]) as f:
            key_body = f.read().splitlines()[1]
        self.assertNotIn(key_body, self.gateway.log())

    def test_certificate_beside_a_password_needs_both(self):
        path = "/both/v2/catalog"
        self.assertRefused(None, None, path, basic="both:" + PASSWORD)
        self.assertRefused(self.cf, "lacks the platform's name (san)", path,
                           basic="both:" + PASSWORD)
        status, _ = self.status(self.both, path)
        self.assertEqual(status, 401)
        status, body = self.status(self.both, path, basic="both:" + PASSWORD)
        self.assertEqual(status, 200, body)

    def test_sighup_swaps_the_subject_without_dropping_connections(self):
        keep = self.connect(self.k8s)
        try:
            status, _ = self.get(keep, "/cf-prod/v2/catalog")
            self.assertEqual(status, 401)
            type(self).write_platforms("CN=k8s-east,O=Example")
            reloads = self.gateway.log().count("received SIGHUP: now serving")
            self.gateway.send_signal(signal.SIGHUP)
            harness.wait_until(
                lambda: self.gateway.log().count("received SIGHUP: now serving") > reloads, 10,
                "the gateway to reload its platforms")
            # The same connection, not dropped, now admitted; the old subject no longer is.
            status, body = self.get(keep, "/cf-prod/v2/catalog")
            self.assertEqual(status, 200, body)
            self.assertEqual(self.status(self.cf)[0], 401)
        finally:
            keep.close()
            type(self).write_platforms("CN=cf-prod,O=Example")
            self.gateway.send_signal(signal.SIGHUP)

    def test_a_client_certificate_needs_https(self):
        env = self.stack.env(OSBQ_PLATFORMS=os.path.join(self.dir, "platforms.json"),
                             OSBQ_BROKER_USERNAME=None, OSBQ_BROKER_PASSWORD=None,
                             OSBQ_TLS_CERT=None, OSBQ_TLS_KEY=None)
        status, output = harness.run_once([harness.GATEWAY], env)
        self.assertNotEqual(status, 0, output)
        self.assertIn("needs HTTPS (OSBQ_TLS_CERT)", output)


if __name__ == "__main__":
    unittest.main()
