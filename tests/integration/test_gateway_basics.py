"""The gateway's HTTP basics against a real redis-server: catalog, ETag, auth, API version,
routing, body limit, probes, access log, start-up checks (spec: Catalog Management, API Version
Header, Platform to Service Broker Authentication, Service Broker Errors, Content Type)."""

import base64
import copy
import json
import os
import re
import signal
import socket
import tempfile
import time
import unittest

import harness


# The credentials harness.Stack uses, as a basic-auth token.
AUTH = base64.b64encode(b"broker:s3cret-pass").decode()


def strip_osbq(catalog):
    catalog = copy.deepcopy(catalog)
    for service in catalog["services"]:
        for plan in service["plans"]:
            plan.pop("osbq", None)
    return catalog


def has_key(value, key):
    if isinstance(value, dict):
        return key in value or any(has_key(v, key) for v in value.values())
    if isinstance(value, list):
        return any(has_key(v, key) for v in value)
    return False


class GatewayBasics(harness.GatewayTestCase):
    # Catalog Management: 200 with the catalog; private "osbq" settings never leave the broker.
    def test_catalog_equals_file_without_osbq_settings(self):
        r = self.client.request("GET", "/v2/catalog")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("Content-Type"), "application/json")
        with open(harness.EXAMPLE_CATALOG) as f:
            expected = strip_osbq(json.load(f))
        self.assertEqual(r.json(), expected)
        self.assertFalse(has_key(r.json(), "osbq"))

    def test_catalog_etag_and_if_none_match(self):
        r = self.client.request("GET", "/v2/catalog")
        etag = r.header("ETag")
        self.assertRegex(etag, r'^"[0-9a-f]{32}"$')
        r2 = self.client.request("GET", "/v2/catalog", headers={"If-None-Match": etag})
        self.assertEqual(r2.status, 304)
        self.assertEqual(r2.body, b"")
        self.assertEqual(r2.header("ETag"), etag)
        r3 = self.client.request("GET", "/v2/catalog",
                                 headers={"If-None-Match": 'W/"other", ' + etag})
        self.assertEqual(r3.status, 304)
        r4 = self.client.request("GET", "/v2/catalog", headers={"If-None-Match": '"stale"'})
        self.assertEqual(r4.status, 200)
        self.assertEqual(r4.json()["services"][0]["id"], r.json()["services"][0]["id"])

    # Platform to Service Broker Authentication: MUST return 401 when authentication fails.
    def test_401_without_credentials(self):
        r = self.client.request("GET", "/v2/catalog", auth=False)
        self.assertJsonError(r, 401)
        self.assertIn("Basic", r.header("WWW-Authenticate"))

    def test_401_wrong_password_and_wrong_user(self):
        for user, password in (("broker", "wrong"), ("other", "s3cret-pass"),
                               ("broker", "s3cret-pass" + "x"), ("", "")):
            c = harness.Client(self.gateway.port, user, password)
            r = c.request("GET", "/v2/catalog")
            c.close()
            self.assertJsonError(r, 401)

    def test_401_before_412_and_on_unknown_v2_routes(self):
        r = self.client.request("GET", "/v2/nothing-here", auth=False, version=False)
        self.assertJsonError(r, 401)

    def test_401_malformed_authorization_headers(self):
        for value in ("Basic", "Basic !!!", "Bearer abc", "Basic " + "A" * 3000):
            r = self.client.request("GET", "/v2/catalog", auth=False,
                                    headers={"Authorization": value})
            self.assertJsonError(r, 401)

    # API Version Header: 412 (accepted by the spec and by the OSB checker) naming what works.
    def test_412_missing_malformed_or_unsupported_version(self):
        for value in (None, "1.0", "3.0", "junk", "", "2", "2.x", "2.17.1"):
            headers = {} if value is None else {"X-Broker-API-Version": value}
            r = self.client.request("GET", "/v2/catalog", version=False, headers=headers)
            body = self.assertJsonError(r, 412)
            self.assertIn("2.17", body["description"], value)

    def test_every_2x_version_is_accepted(self):
        for value in ("2.0", "2.11", "2.12", "2.13", "2.14", "2.15", "2.16", "2.17", "2.18",
                      "2.99"):
            r = self.client.request("GET", "/v2/catalog", headers={"X-Broker-API-Version": value},
                                    version=False)
            self.assertEqual(r.status, 200, value)

    def test_404_unknown_route(self):
        for path in ("/v2/nothing", "/v2/catalog/extra", "/", "/v3/catalog"):
            self.assertJsonError(self.client.request("GET", path), 404)

    def test_405_wrong_method_with_allow(self):
        for method in ("PUT", "DELETE", "POST", "PATCH"):
            r = self.client.request(method, "/v2/catalog", body="{}")
            self.assertJsonError(r, 405)
            self.assertEqual(r.header("Allow"), "GET, HEAD")
        r = self.client.request("POST", "/healthz", body="")
        self.assertJsonError(r, 405)

    def raw_exchange(self, head, body_chunks=()):
        """Sends a raw request head (and body chunks); returns the response head."""
        with socket.create_connection(("127.0.0.1", self.gateway.port), timeout=10) as s:
            s.sendall(head.encode())
            for chunk in body_chunks:
                s.sendall(chunk)
            reply = b""
            while b"\r\n\r\n" not in reply:
                data = s.recv(4096)
                if not data:
                    break
                reply += data
            return reply

    def test_413_body_over_limit_announced(self):
        # Only the head is sent: the answer must come before any byte of the body.
        reply = self.raw_exchange(
            "PUT /v2/catalog HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n"
            "X-Broker-API-Version: 2.17\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (AUTH, 1024 * 1024 + 1))
        self.assertTrue(reply.startswith(b"HTTP/1.1 413"), reply[:200])
        self.assertIn(b"Connection: close", reply)

    def test_413_chunked_body_over_limit(self):
        chunk = b"x" * 65536
        chunks = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 20 + [b"0\r\n\r\n"]
        reply = self.raw_exchange(
            "PUT /v2/catalog HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n"
            "X-Broker-API-Version: 2.17\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n" % AUTH, chunks)
        self.assertTrue(reply.startswith(b"HTTP/1.1 413"), reply[:200])

    # Content Type: every response is JSON, including probes and errors.
    def test_healthz_and_readyz(self):
        for path, status in (("/healthz", "ok"), ("/readyz", "ready")):
            r = self.client.request("GET", path, auth=False, version=False)
            self.assertEqual(r.status, 200)
            self.assertEqual(r.header("Content-Type"), "application/json")
            self.assertEqual(r.json()["status"], status)

    def test_request_identity_echoed(self):
        r = self.client.request("GET", "/v2/catalog",
                                headers={"X-Broker-API-Request-Identity": "req-42"})
        self.assertEqual(r.header("X-Broker-API-Request-Identity"), "req-42")

    def test_keep_alive_survives_successful_requests(self):
        c = self.stack.client(self.gateway)
        c.request("GET", "/v2/catalog")
        first = c.conn.sock
        self.assertIsNotNone(first, "the gateway closed a keep-alive connection")
        r = c.request("GET", "/v2/catalog")
        self.assertEqual(r.status, 200)
        self.assertIs(c.conn.sock, first)
        c.close()

    def test_head_catalog(self):
        r = self.client.request("HEAD", "/v2/catalog")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, b"")

    def test_access_log_line(self):
        self.client.request("GET", "/v2/catalog",
                            headers={"X-Broker-API-Request-Identity": "log-probe-7"})
        harness.wait_until(lambda: "log-probe-7" in self.gateway.log(), 5, "the access log")
        line = [l for l in self.gateway.log().splitlines() if "log-probe-7" in l][0]
        for field in ("msg=request", "method=GET", "path=/v2/catalog", "status=200",
                      "duration_us=", "request_id=log-probe-7"):
            self.assertIn(field, line)
        self.assertNotIn("s3cret-pass", self.gateway.log())


class ConnectionLimits(unittest.TestCase):
    """OSBQ_MAX_CONNECTIONS_PER_IP and OSBQ_HTTP_IDLE_TIMEOUT_S: a client holding connections
    open (slowloris) cannot take more than its share, and idle connections close."""

    def setUp(self):
        self.stack = harness.Stack()
        self.gateway = None
        self.sockets = []

    def tearDown(self):
        for s in self.sockets:
            s.close()
        self.stack.stop()

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.gateway.port), timeout=15)
        self.sockets.append(s)
        return s

    def served(self, s):
        """True when s gets an HTTP answer to GET /healthz, False when the gateway closed it."""
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = s.recv(4096)
            # Read the whole answer (body included), so the next request on s starts clean.
            while answer and b"\r\n\r\n" in answer and not answer.endswith(b"}"):
                more = s.recv(4096)
                if not more:
                    break
                answer += more
            return answer.startswith(b"HTTP/1.1 200")
        except OSError:
            return False

    def test_per_ip_limit_refuses_extra_connections(self):
        self.gateway = self.stack.start_gateway(OSBQ_MAX_CONNECTIONS_PER_IP=2)
        held = []

        def two_served():
            # The start-up probe's connection may still count until the gateway sees it close.
            for s in held:
                s.close()
            held[:] = [self.connect(), self.connect()]
            return all(self.served(s) for s in held)

        harness.wait_until(two_served, 10, "two connections from one address to be served")
        # Both stay open (keep-alive): a third from the same address is closed unserved.
        self.assertFalse(self.served(self.connect()))
        self.assertTrue(self.served(held[1]))
        held[0].close()
        harness.wait_until(lambda: self.served(self.connect()), 10,
                           "a connection to be served once one was released")

    def test_idle_connections_close(self):
        self.gateway = self.stack.start_gateway(OSBQ_HTTP_IDLE_TIMEOUT_S=2)
        s = self.connect()
        s.sendall(b"GET /heal")  # a request never finished
        started = time.monotonic()
        s.settimeout(10)
        try:
            data = s.recv(64)
        except ConnectionResetError:
            data = b""
        self.assertEqual(data, b"")
        self.assertLess(time.monotonic() - started, 6)
        # The gateway still serves others.
        self.assertTrue(self.served(self.connect()))


class Readiness(unittest.TestCase):
    def test_readyz_fails_once_redis_stops_and_recovers(self):
        stack = harness.Stack()
        try:
            gw = stack.start_gateway()
            c = stack.client(gw)
            self.assertEqual(c.request("GET", "/readyz").status, 200)
            stack.redis.send_signal(signal.SIGSTOP)
            started = time.monotonic()
            r = c.request("GET", "/readyz")
            self.assertEqual(r.status, 503)
            self.assertLess(time.monotonic() - started, 5.0)
            self.assertIn("description", r.json())
            stack.redis.send_signal(signal.SIGCONT)
            # After a failure the gateway fails fast for a moment, then probes Redis again.
            harness.wait_until(lambda: c.request("GET", "/readyz").status == 200, 5,
                               "/readyz to pass again")
            # The catalog needs no Redis.
            stack.redis.stop()
            self.assertEqual(c.request("GET", "/readyz").status, 503)
            self.assertEqual(c.request("GET", "/v2/catalog").status, 200)
            c.close()
        finally:
            stack.stop()


class StartupChecks(harness.StackTestCase):
    """Every bad value stops the process with one line naming the variable (on a stack of
    redis-server alone)."""

    def run_gateway(self, **overrides):
        env = self.stack.env(OSBQ_LISTEN="127.0.0.1:%d" % harness.free_port(),
                             OSBQ_BUS_BIND="tcp://127.0.0.1:%d" % harness.free_port())
        for k, v in overrides.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return harness.run_once([harness.GATEWAY], env)

    def assertFailsNaming(self, variable, **overrides):
        status, out = self.run_gateway(**overrides)
        self.assertNotEqual(status, 0, out)
        lines = [l for l in out.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, out)
        self.assertIn(variable, lines[0])
        return lines[0]

    def test_missing_password(self):
        self.assertFailsNaming("OSBQ_BROKER_PASSWORD", OSBQ_BROKER_PASSWORD=None)

    def test_missing_username(self):
        self.assertFailsNaming("OSBQ_BROKER_USERNAME", OSBQ_BROKER_USERNAME=None)

    def test_unparsable_redis_url(self):
        self.assertFailsNaming("OSBQ_REDIS_URL", OSBQ_REDIS_URL="http://127.0.0.1:6379")

    def test_unreadable_catalog(self):
        self.assertFailsNaming("OSBQ_CATALOG", OSBQ_CATALOG="/nonexistent/catalog.json")

    def test_invalid_catalog(self):
        path = os.path.join(harness.SOURCE_DIR, "tests/data/catalog/invalid/id-duplicate-service")
        line = self.assertFailsNaming("OSBQ_CATALOG", OSBQ_CATALOG=os.path.join(path, "catalog.json"))
        with open(os.path.join(path, "error")) as f:
            self.assertIn(f.read().strip(), line)

    def test_listen_port_in_use(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            line = self.assertFailsNaming("OSBQ_LISTEN", OSBQ_LISTEN="127.0.0.1:%d" % port)
            self.assertIn("in use", line)

    def test_bus_port_in_use(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            self.assertFailsNaming("OSBQ_BUS_BIND", OSBQ_BUS_BIND="tcp://127.0.0.1:%d" % port)

    def test_bad_numbers_and_levels(self):
        self.assertFailsNaming("OSBQ_LOG_LEVEL", OSBQ_LOG_LEVEL="loud")
        self.assertFailsNaming("OSBQ_HTTP_THREADS", OSBQ_HTTP_THREADS="many")
        self.assertFailsNaming("OSBQ_MAX_BODY_BYTES", OSBQ_MAX_BODY_BYTES="-1")
        self.assertFailsNaming("OSBQ_NAMESPACE", OSBQ_NAMESPACE="a:b")

    def test_password_file(self):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("from-a-file\n")
        try:
            self.assertFailsNaming("OSBQ_BROKER_PASSWORD", OSBQ_BROKER_PASSWORD_FILE=f.name)
            gw = self.stack.start_gateway(OSBQ_BROKER_PASSWORD=None,
                                          OSBQ_BROKER_PASSWORD_FILE=f.name)
            c = harness.Client(gw.port, self.stack.username, "from-a-file")
            self.assertEqual(c.request("GET", "/v2/catalog").status, 200)
            c.close()
        finally:
            os.unlink(f.name)
        self.assertFailsNaming("OSBQ_BROKER_PASSWORD_FILE", OSBQ_BROKER_PASSWORD=None,
                               OSBQ_BROKER_PASSWORD_FILE="/nonexistent/secret")

    def test_help_lists_every_variable(self):
        status, out = harness.run_once([harness.GATEWAY, "--help"], {})
        self.assertEqual(status, 0)
        for name in ("OSBQ_REDIS_URL", "OSBQ_NAMESPACE", "OSBQ_CATALOG", "OSBQ_LOG_LEVEL",
                     "OSBQ_LISTEN", "OSBQ_BROKER_USERNAME", "OSBQ_BROKER_PASSWORD",
                     "OSBQ_BUS_BIND", "OSBQ_BUS_ADVERTISE", "OSBQ_HTTP_THREADS",
                     "OSBQ_MAX_BODY_BYTES", "OSBQ_REDIS_TIMEOUT_MS"):
            self.assertIn(name, out)
        self.assertNotIn("OSBQ_WORKER_CONCURRENCY", out)
        status, out = harness.run_once([harness.WORKER, "--help"], {})
        self.assertEqual(status, 0)
        self.assertIn("OSBQ_WORKER_CONCURRENCY", out)
        self.assertNotIn("OSBQ_BROKER_PASSWORD", out)


class Worker(unittest.TestCase):
    def test_worker_starts_and_stops_cleanly(self):
        stack = harness.Stack()
        try:
            w = stack.start_worker()
            harness.wait_until(lambda: "Redis reachable" in w.log(), 10, "the worker to connect")
            self.assertEqual(w.stop(), 0)
            self.assertIn("stopped", w.log())
        finally:
            stack.stop()

    def test_worker_waits_for_redis(self):
        stack = harness.Stack()
        try:
            port = harness.free_port()
            w = stack.start_worker(OSBQ_REDIS_URL="redis://127.0.0.1:%d/0" % port)
            harness.wait_until(lambda: "cannot read the gateway registry" in w.log(), 10, "a warning")
            self.assertTrue(w.alive())
        finally:
            stack.stop()

    def test_worker_refuses_bad_configuration(self):
        stack = harness.Stack()
        try:
            status, out = harness.run_once([harness.WORKER], stack.env(OSBQ_WORKER_CONCURRENCY="0"))
            self.assertNotEqual(status, 0)
            self.assertIn("OSBQ_WORKER_CONCURRENCY", out)
        finally:
            stack.stop()


class HeaderLimits(harness.StackTestCase):
    """OSBQ_MAX_HEADER_BYTES (default 16384): a longer request line plus headers gets a JSON 431
    before authentication; one too large even for libmicrohttpd's per-connection memory (2x
    the limit + 16 KB) gets its own HTML 431 and the connection closed, and the gateway goes on
    serving others."""

    @classmethod
    def start_stack(cls):
        cls.gateway = cls.stack.start_gateway()

    def exchange(self, head, port=None):
        """Sends a raw request head; returns (status line, headers text, body) of the answer,
        or None when the gateway closed the connection without one."""
        with socket.create_connection(("127.0.0.1", port or self.gateway.port), timeout=10) as s:
            try:
                s.sendall(head)
            except (BrokenPipeError, ConnectionResetError):
                pass  # it may answer and close before reading everything
            data = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                    if b"\r\n\r\n" in data:
                        top, body = data.split(b"\r\n\r\n", 1)
                        m = re.search(rb"(?im)^content-length: *(\d+)", top)
                        if m and len(body) >= int(m.group(1)):
                            break
            except ConnectionResetError:
                pass
        if b"\r\n\r\n" not in data:
            return None
        top, body = data.split(b"\r\n\r\n", 1)
        status, _, headers = top.partition(b"\r\n")
        return status.decode(), headers.decode(), body

    @staticmethod
    def head(pad, path="/v2/catalog", auth=True, count=1):
        """A GET with count X-Pad headers of pad bytes each."""
        lines = ["GET %s HTTP/1.1" % path, "Host: x", "X-Broker-API-Version: 2.17"]
        if auth:
            lines.append("Authorization: Basic " + AUTH)
        lines += ["X-Pad-%d: %s" % (i, "a" * pad) for i in range(count)]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def assertJson431(self, answer):
        self.assertIsNotNone(answer, "the gateway closed the connection without an answer")
        status, headers, body = answer
        self.assertTrue(status.startswith("HTTP/1.1 431 "), status)
        self.assertIn("Content-Type: application/json", headers)
        self.assertIn("OSBQ_MAX_HEADER_BYTES", json.loads(body)["description"])

    def test_15_kb_of_headers_served(self):
        head = self.head(15 * 1024)
        self.assertGreater(len(head), 15 * 1024)
        status, _, body = self.exchange(head)
        self.assertTrue(status.startswith("HTTP/1.1 200 "), status)
        self.assertIn("services", json.loads(body))

    def test_many_ordinary_headers_under_the_limit_served(self):
        # 300 headers of about 45 bytes: the parsed headers' own overhead fits the pool too.
        head = self.head(32, count=300)
        self.assertLess(len(head), 16384)
        status, _, _ = self.exchange(head)
        self.assertTrue(status.startswith("HTTP/1.1 200 "), status)

    def test_20_kb_of_headers_get_json_431_before_authentication(self):
        self.assertJson431(self.exchange(self.head(20 * 1024)))
        self.assertJson431(self.exchange(self.head(20 * 1024, auth=False)))
        self.assertJson431(self.exchange(self.head(20 * 1024, path="/healthz", auth=False)))
        # Counted over all headers, not per header.
        self.assertJson431(self.exchange(self.head(6 * 1024, count=3)))
        # The limit is on the request line too.
        self.assertJson431(self.exchange(self.head(0, path="/v2/catalog?x=" + "y" * 17000)))
        harness.wait_until(lambda: "status=431" in self.gateway.log(), 5, "the access log")

    def test_beyond_the_memory_pool_closed_or_refused_then_others_served(self):
        for size in (64 * 1024, 1024 * 1024):
            answer = self.exchange(self.head(size))
            if answer is not None:
                # libmicrohttpd's own answer: not JSON, the one exception (docs/security.md).
                self.assertTrue(answer[0].startswith("HTTP/1.1 431 "), answer[0])
                self.assertNotIn("services", answer[2].decode(errors="replace"))
            status, _, _ = self.exchange(self.head(100))
            self.assertTrue(status.startswith("HTTP/1.1 200 "), status)

    def test_configured_limit(self):
        gateway = self.stack.start_gateway(OSBQ_MAX_HEADER_BYTES=4096)
        status, _, _ = self.exchange(self.head(3 * 1024), port=gateway.port)
        self.assertTrue(status.startswith("HTTP/1.1 200 "), status)
        self.assertJson431(self.exchange(self.head(5 * 1024), port=gateway.port))
        # Its pool is 2 x 4 KB + 16 KB: a 30 KB head passes it and gets libmicrohttpd's answer.
        answer = self.exchange(self.head(30 * 1024), port=gateway.port)
        if answer is not None:
            self.assertTrue(answer[0].startswith("HTTP/1.1 431 "), answer[0])
            self.assertNotIn("application/json", answer[1])


if __name__ == "__main__":
    unittest.main()
