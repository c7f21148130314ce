"""A Redis that answers but refuses osbq's configuration (a wrong or missing password, a
database it does not have) stops the gateway and the worker at start with one line that says
what to fix; once running, the same refusal makes /readyz fail with those words and the
process stays up. A Redis that does not answer is "not reachable yet", in words rather than
errno texts (docs/troubleshooting.md)."""

import json
import os
import secrets
import socket
import unittest

import harness
import osbq_stack


class MisconfiguredRedis(harness.StackTestCase):
    @classmethod
    def start_stack(cls):
        cls.password = "right-" + secrets.token_hex(8)
        cls.redis = cls.stack.redis
        cls.redis.command("CONFIG", "SET", "requirepass", cls.password)

    def redis_command(self, *args, password=None):
        """One command after AUTH (the server now wants a password)."""
        with socket.create_connection(("127.0.0.1", self.redis.port),
                                      timeout=osbq_stack.REDIS_COMMAND_TIMEOUT_S) as s:
            f = s.makefile("rb")
            s.sendall(osbq_stack.encode_command(("AUTH", password or self.password)))
            self.assertEqual(osbq_stack.read_resp(f), "OK")
            s.sendall(osbq_stack.encode_command(args))
            return osbq_stack.read_resp(f)

    def url(self, password, db=0):
        auth = ":%s@" % password if password is not None else ""
        return "redis://%s127.0.0.1:%d/%d" % (auth, self.redis.port, db)

    def start_once(self, binary, redis_url):
        """Runs a daemon that is expected to stop by itself: (exit status, output)."""
        env = self.stack.env(OSBQ_REDIS_URL=redis_url,
                             OSBQ_LISTEN="127.0.0.1:%d" % harness.free_port(),
                             OSBQ_BUS_BIND="tcp://127.0.0.1:%d" % harness.free_port())
        return harness.run_once([binary], env)

    def assertStopsWith(self, redis_url, *words):
        for binary in (harness.GATEWAY, harness.WORKER):
            status, out = self.start_once(binary, redis_url)
            name = os.path.basename(binary)
            self.assertEqual(status, 1, "%s: %s" % (name, out))
            line = out.strip().splitlines()[-1]
            self.assertTrue(line.startswith(name + ": OSBQ_REDIS_URL: "), line)
            self.assertIn("misconfigured", line)
            for w in words:
                self.assertIn(w, line)
            self.assertNotIn("not reachable", out)
            self.assertNotIn(self.password, out)

    def test_wrong_password_stops_at_start(self):
        self.assertStopsWith(self.url("wrong-password"), "redis AUTH",
                             "refuses the user name or password of OSBQ_REDIS_URL", "WRONGPASS")

    def test_missing_password_stops_at_start(self):
        self.assertStopsWith(self.url(None), "requires a password and OSBQ_REDIS_URL gives none",
                             "NOAUTH")

    def test_unknown_database_stops_at_start(self):
        self.assertStopsWith(self.url(self.password, db=999), "redis SELECT 999",
                             "Redis has no such database", "DB index is out of range")

    def test_refusal_after_start_fails_readyz(self):
        gateway = self.stack.start_gateway(OSBQ_REDIS_URL=self.url(self.password),
                                           ready_path="/readyz")
        try:
            new_password = "new-" + secrets.token_hex(8)
            self.redis_command("CONFIG", "SET", "requirepass", new_password)
            # Connections already open stay logged in: drop them, so the gateway logs in again.
            self.redis_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes",
                               password=new_password)

            def refused():
                r = self.stack.client(gateway).request("GET", "/readyz", auth=False,
                                                       version=False)
                return r.status == 503 and "misconfigured" in r.body.decode()

            harness.wait_until(refused, 10, "/readyz to report the refused password")
            r = self.stack.client(gateway).request("GET", "/readyz", auth=False, version=False)
            description = json.loads(r.body)["description"]
            self.assertIn("refuses the user name or password of OSBQ_REDIS_URL", description)
            self.assertTrue(gateway.alive())
            self.redis_command("CONFIG", "SET", "requirepass", self.password,
                               password=new_password)
            harness.wait_until(lambda: osbq_stack.http_status(gateway.port, "/readyz") == 200, 10,
                               "/readyz to recover with the password back")
            self.assertIn("misconfigured", gateway.log())
        finally:
            gateway.stop()


class UnreachableRedis(unittest.TestCase):
    def test_connection_refused_in_words(self):
        stack = harness.Stack()
        closed = harness.free_port()
        try:
            gateway = stack.start_gateway(OSBQ_REDIS_URL="redis://127.0.0.1:%d/0" % closed)
            expected = "connection refused by 127.0.0.1:%d" % closed
            self.assertIn("Redis is not reachable yet (redis: %s" % expected, gateway.log())
            r = stack.client(gateway).request("GET", "/readyz", auth=False, version=False)
            self.assertEqual(r.status, 503)
            self.assertIn(expected, json.loads(r.body)["description"])
            worker = stack.start_worker(OSBQ_REDIS_URL="redis://127.0.0.1:%d/0" % closed)
            harness.wait_until(lambda: expected in worker.log(), 10,
                               "the worker to log the refused connection")
            self.assertNotIn("Connection refused", gateway.log() + worker.log())
        finally:
            stack.stop()


if __name__ == "__main__":
    unittest.main()
