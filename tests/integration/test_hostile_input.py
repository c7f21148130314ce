"""Hostile input against a real gateway, worker and redis-server (issue 8): ids that look like
Redis glob patterns or key separators stay inside their own keys, malformed ids, bodies and
protocol bytes get a clear refusal, and after the whole barrage every process is alive, every
Redis key lies inside the namespace, and no lock is left held (spec: Service Broker Errors,
Content Type; RFC 3986 for ids)."""

import json
import os
import re
import socket
import time
import unittest

import harness

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-bindings.json")
SERVICE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"
PLAN = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"
NAMESPACE = "hostile-ns"
# Short, so the garbage test sees every unfinished connection closed within seconds.
IDLE_TIMEOUT_S = 2

# Every key osbq writes: "<ns>:<kind>" followed by ':'-separated parts in which an id's bytes
# outside RFC 3986's unreserved set are percent-encoded.
KEY_SHAPE = re.compile(r"^%s:[a-z_]+(:[A-Za-z0-9._~%%-]+)*$" % re.escape(NAMESPACE))

# Ids with characters that mean something to Redis (glob patterns, key separators, hash tags)
# or to HTTP, percent-encoded in the path as a platform would send them; each is accepted and
# must stay in its own keys.
ODD_IDS = ["a*b", "q?x", "[abc]", "x:y:z", "{tag}", "*", "?", "..", "~tilde", "white space",
           "\u2713check", "percent%41", "semi;colon", "back\\slash"]

# Ids the gateway refuses with 400: control characters (NUL included), '/', over 255 bytes,
# invalid UTF-8 (truncated sequence, overlong '/', lone continuation byte, surrogate).
BAD_IDS = ["%00", "a%00b", "%0A", "line%0D%0Abreak", "tab%09", "%7F", "a%2Fb",
           "x" * 256, "%FF", "%C0%AF", "%80", "%ED%A0%80", "%E2%9C"]

# Request bodies refused with 400 whatever the route.
BAD_BODIES = [
    b"{", b"[]", b"null", b"\"text\"", b"42", b"{} trailing",
    b'{"service_id": "a", "service_id": "b"}',           # duplicate key
    b'{"parameters": ' + b"[" * 2000 + b"]" * 2000 + b"}",  # deeper than any limit
    b'{"parameters": {"x": "\xff\xfe"}}',                # invalid UTF-8
    b'{"parameters": {"x": "a\\u0000b"}}',               # NUL inside a string
    b'{"parameters": {"n": 1e999}}',                     # number overflow
    b'{"parameters": {"n": 123456789012345678901234567890}}',
    b'{"parameters": {"n": NaN}}',
    b'{"service_id": "\x01"}',                           # raw control character
]


def quote_id(raw):
    """Percent-encodes every byte outside RFC 3986's unreserved set, as clients do."""
    out = []
    for b in raw.encode():
        c = chr(b)
        out.append(c if c.isascii() and (c.isalnum() or c in "-._~") else "%%%02X" % b)
    return "".join(out)


class HostileInput(harness.GatewayTestCase):
    CATALOG = CATALOG
    EXTRA_ENV = {"OSBQ_NAMESPACE": NAMESPACE}

    @classmethod
    def start_stack(cls):
        cls.gateway = cls.stack.start_gateway(OSBQ_HTTP_IDLE_TIMEOUT_S=IDLE_TIMEOUT_S)
        cls.worker = cls.stack.start_worker()
        harness.wait_workers_connected([cls.gateway], 1)

    def provision_body(self):
        return {"service_id": SERVICE, "plan_id": PLAN, "organization_guid": "o",
                "space_guid": "s", "context": {"platform": "test"}}

    def assertNamespaceClean(self):
        keys = [k.decode() if isinstance(k, bytes) else k for k in self.stack.redis.keys("*")]
        outside = [k for k in keys if not KEY_SHAPE.match(k)]
        self.assertEqual(outside, [], "keys outside the namespace or of an unexpected shape")
        return keys

    def assertNoLockHeld(self):
        for key in self.stack.redis.keys(NAMESPACE + ":instance:*"):
            fields = harness.redis_hash(self.stack.redis, key)
            self.assertNotIn("lock_x", fields, key)
            self.assertIn(fields.get("lock_s", "0"), ("0", None), key)

    def test_1_odd_ids_live_in_their_own_keys(self):
        """Ids with glob and separator characters provision, bind, fetch and go away, and each
        one's records are its own: no id reads or overwrites another's keys."""
        for raw in ODD_IDS:
            iid = quote_id(raw)
            r = self.client.request("PUT", "/v2/service_instances/" + iid,
                                    self.provision_body())
            self.assertEqual(r.status, 201, "%r: %s" % (raw, r.body))
            r = self.client.request("PUT", "/v2/service_instances/%s/service_bindings/%s"
                                    % (iid, iid), {"service_id": SERVICE, "plan_id": PLAN})
            self.assertEqual(r.status, 201, "%r: %s" % (raw, r.body))
        # "*" and "?" as ids must not be read as patterns matching the others.
        for raw in ODD_IDS:
            iid = quote_id(raw)
            r = self.client.request("GET", "/v2/service_instances/" + iid)
            self.assertEqual(r.status, 200, "%r: %s" % (raw, r.body))
            r = self.client.request("GET", "/v2/service_instances/%s/service_bindings/%s"
                                    % (iid, iid))
            self.assertEqual(r.status, 200, "%r: %s" % (raw, r.body))
        keys = self.assertNamespaceClean()
        instance_keys = [k for k in keys if k.startswith(NAMESPACE + ":instance:")
                         and k.count(":") == 2]
        self.assertGreaterEqual(len(instance_keys), len(ODD_IDS))
        for raw in ODD_IDS:
            iid = quote_id(raw)
            r = self.client.request("DELETE", "/v2/service_instances/%s/service_bindings/%s"
                                    "?service_id=%s&plan_id=%s" % (iid, iid, SERVICE, PLAN))
            self.assertEqual(r.status, 200, "%r: %s" % (raw, r.body))
            r = self.client.request("DELETE", "/v2/service_instances/%s?service_id=%s&plan_id=%s"
                                    % (iid, SERVICE, PLAN))
            self.assertEqual(r.status, 200, "%r: %s" % (raw, r.body))
            r = self.client.request("GET", "/v2/service_instances/" + iid)
            self.assertEqual(r.status, 404, "%r: %s" % (raw, r.body))

    def test_2_bad_ids_are_refused_without_writing(self):
        before = sorted(self.stack.redis.keys("*"))
        for iid in BAD_IDS:
            for method, path, body in (
                    ("PUT", "/v2/service_instances/%s" % iid, self.provision_body()),
                    ("PATCH", "/v2/service_instances/%s" % iid, {"service_id": SERVICE}),
                    ("GET", "/v2/service_instances/%s/last_operation" % iid, None),
                    ("PUT", "/v2/service_instances/ok/service_bindings/%s" % iid,
                     {"service_id": SERVICE, "plan_id": PLAN}),
                    ("DELETE", "/v2/service_instances/%s?service_id=%s&plan_id=%s"
                     % (iid, SERVICE, PLAN), None)):
                r = self.client.request(method, path, body)
                self.assertJsonError(r, 400, "%s %s" % (method, path[:80]))
        self.assertEqual(sorted(self.stack.redis.keys("*")), before)

    def test_3_bad_bodies_are_refused_without_writing(self):
        before = sorted(self.stack.redis.keys("*"))
        paths = [("PUT", "/v2/service_instances/body-check"),
                 ("PATCH", "/v2/service_instances/body-check"),
                 ("PUT", "/v2/service_instances/body-check/service_bindings/b")]
        for body in BAD_BODIES:
            for method, path in paths:
                r = self.client.request(method, path, body,
                                        headers={"Content-Type": "application/json"})
                self.assertJsonError(r, 400, "%s %s %r" % (method, path, body[:40]))
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                      "application/jsonx"):
            r = self.client.request("PUT", "/v2/service_instances/body-check",
                                    json.dumps(self.provision_body()),
                                    headers={"Content-Type": ctype})
            self.assertJsonError(r, 400, ctype)
        self.assertEqual(sorted(self.stack.redis.keys("*")), before)

    def test_4_protocol_garbage_leaves_the_gateway_serving(self):
        """Bytes that are not a valid HTTP request, all sent at once on their own connections:
        each is answered with an error or left unanswered, every connection is closed within
        the idle timeout, and the gateway keeps serving others. (Requests libmicrohttpd cannot
        parse get its own short HTML error page: they never reach osbq's handler.)"""
        garbage = [
            b"\x00\x01\x02\x03\r\n\r\n",
            b"GET\r\n\r\n",
            b"GET / HTTP/9.9\r\n\r\n",
            b"FOO /v2/catalog HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /v2/catalog HTTP/1.1\r\nNoColonHeader\r\n\r\n",
            b"PUT /v2/service_instances/x HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
            b"PUT /v2/service_instances/x HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
            b"PUT /v2/service_instances/x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"PUT /v2/service_instances/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            b"\r\nnot-hex\r\n",
            b"GET /v2/catalog HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
            b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /v2/catalog HTTP/1.1\r\n" + b"X-Many: 1\r\n" * 5000 + b"\r\n",
            b"\r\n" * 1000,
            b"PUT /v2/service_instances/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{",
        ]
        sockets = []
        try:
            for payload in garbage:
                s = socket.create_connection(("127.0.0.1", self.gateway.port), timeout=10)
                sockets.append(s)
                try:
                    s.sendall(payload)
                except (ConnectionResetError, BrokenPipeError):
                    pass
            deadline = time.monotonic() + IDLE_TIMEOUT_S + 6
            for payload, s in zip(garbage, sockets):
                what = repr(payload[:40])
                answer, closed = b"", False
                while time.monotonic() < deadline and len(answer) < 1 << 20:
                    s.settimeout(max(0.1, deadline - time.monotonic()))
                    try:
                        chunk = s.recv(65536)
                    except (ConnectionResetError, OSError):
                        chunk = b""
                    if not chunk:
                        closed = True
                        break
                    answer += chunk
                self.assertTrue(closed, what + ": still open after the idle timeout")
                if answer:
                    self.assertTrue(answer.startswith(b"HTTP/1."), what)
                    self.assertGreaterEqual(int(answer.split(b" ", 2)[1]), 400, what)
        finally:
            for s in sockets:
                s.close()
        self.assertTrue(self.gateway.alive())
        r = self.client.request("GET", "/v2/catalog")
        self.assertEqual(r.status, 200)

    def test_5_unauthenticated_barrage_writes_nothing(self):
        before = sorted(self.stack.redis.keys("*"))
        anonymous = self.stack.client(self.gateway, username="broker", password="wrong")
        try:
            for i in range(200):
                r = anonymous.request("PUT", "/v2/service_instances/anon-%d" % i,
                                      self.provision_body())
                self.assertJsonError(r, 401, "anonymous PUT")
        finally:
            anonymous.close()
        self.assertEqual(sorted(self.stack.redis.keys("*")), before)

    def test_9_after_the_barrage(self):
        """Runs last (unittest orders by name): every process alive, every key inside the
        namespace, no lock held, and a normal lifecycle still works."""
        self.assertTrue(self.gateway.alive())
        self.assertTrue(self.worker.alive())
        iid = "after-barrage"
        r = self.client.request("PUT", "/v2/service_instances/" + iid, self.provision_body())
        self.assertEqual(r.status, 201, r.body)
        r = self.client.request("DELETE", "/v2/service_instances/%s?service_id=%s&plan_id=%s"
                                % (iid, SERVICE, PLAN))
        self.assertEqual(r.status, 200, r.body)
        self.assertNamespaceClean()
        self.assertNoLockHeld()
        self.gateway.check_sanitizers()
        self.worker.check_sanitizers()


if __name__ == "__main__":
    unittest.main()
