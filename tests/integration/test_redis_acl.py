"""osbq through least-privilege Redis users (issue 8, docs/security.md "Redis"): the ACL rules
are read from the doc itself, so the doc cannot drift from what osbq needs. Every operation
runs through a gateway, a worker and osbq-ctl that log in as those users; the users cannot
reach a key outside the namespace nor run admin commands."""

import json
import os
import re
import secrets
import socket
import unittest
import urllib.parse

import harness
import osbq_stack

SECURITY_DOC = os.path.join(harness.SOURCE_DIR, "docs", "security.md")
CTL = os.path.join(harness.BUILD_DIR, "bin", "osbq-ctl")
CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-bindings.json")
SERVICE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"
PLAN = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"
SLOW_PLAN = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f11"  # provision takes 1.5 s


def documented_users():
    """{user name: [rules]} from the ACL block between the doc's acl-users markers."""
    with open(SECURITY_DOC) as f:
        text = f.read()
    block = re.search(r"<!-- acl-users: begin -->\s*```\n(.*?)```\s*<!-- acl-users: end -->",
                      text, re.S)
    if block is None:
        raise AssertionError("docs/security.md has no acl-users block")
    users = {}
    for line in block.group(1).splitlines():
        words = line.split()
        if words and words[0] == "user":
            users[words[1]] = words[2:]
    return users


class RedisAcl(harness.GatewayTestCase):
    @classmethod
    def setUpClass(cls):
        cls.users = documented_users()
        # Characters that must be percent-encoded in the URL, to test that path too.
        cls.password = "p@ss:w/rd%" + secrets.token_hex(8)
        cls.stack = harness.Stack(catalog=CATALOG)
        redis = cls.stack.redis
        for name, rules in cls.users.items():
            rules = [">" + cls.password if r == ">CHANGE-ME" else r for r in rules]
            reply = redis.command("ACL", "SETUSER", name, *rules)
            if reply != "OK":
                raise AssertionError("ACL SETUSER %s: %r" % (name, reply))
        cls.url = {name: "redis://%s:%s@127.0.0.1:%d/0" % (
            name, urllib.parse.quote(cls.password, safe=""), redis.port) for name in cls.users}
        app = cls.url["osbq-app"]
        # A quota and an in-progress cap, so the counters' commands (docs/policies.md) go
        # through the ACL too.
        cls.policy = os.path.join(cls.stack.workdir, "policy.json")
        with open(cls.policy, "w") as f:
            json.dump({"quotas": [{"name": "total", "max_instances": 100},
                                  {"name": "per-space", "per": "space_guid",
                                   "max_instances": 10}],
                       "in_progress_per_tenant": 100}, f)
        cls.gateway = cls.stack.start_gateway(OSBQ_REDIS_URL=app, OSBQ_RECOVERY_INTERVAL_MS=200,
                                              OSBQ_POLICY=cls.policy)
        cls.worker = cls.stack.start_worker(OSBQ_REDIS_URL=app)
        harness.wait_workers_connected([cls.gateway], 1)

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def ctl(self, *args):
        env = self.stack.env(OSBQ_REDIS_URL=self.url["osbq-ctl"], OSBQ_POLICY=self.policy)
        return harness.run_once([CTL] + list(args), env)

    def test_documented_users_exist(self):
        self.assertEqual(sorted(self.users), ["osbq-app", "osbq-ctl"])

    def test_lifecycle_through_the_restricted_users(self):
        body = {"service_id": SERVICE, "plan_id": PLAN,
                "context": {"platform": "cloudfoundry", "organization_guid": "o",
                            "space_guid": "s"}}
        r = self.client.request("PUT", "/v2/service_instances/acl-sync", body)
        self.assertEqual(r.status, 201, r.body)
        r = self.client.request("PUT", "/v2/service_instances/acl-sync/service_bindings/b1",
                                {"service_id": SERVICE, "plan_id": PLAN})
        self.assertEqual(r.status, 201, r.body)
        self.assertIn("credentials", r.json())
        r = self.client.request("GET", "/v2/service_instances/acl-sync/service_bindings/b1")
        self.assertEqual(r.status, 200, r.body)
        # Asynchronous: accepted, then polled to success.
        slow = dict(body, plan_id=SLOW_PLAN)
        r = self.client.request("PUT", "/v2/service_instances/acl-async?accepts_incomplete=true",
                                slow)
        self.assertEqual(r.status, 202, r.body)

        def done():
            r = self.client.request("GET", "/v2/service_instances/acl-async/last_operation")
            self.assertEqual(r.status, 200, r.body)
            return r.json()["state"] == "succeeded"

        harness.wait_until(done, 15, "the asynchronous provision to succeed")
        # The operators' command, as its own user.
        status, out = self.ctl("instances", "--json")
        self.assertEqual(status, 0, out)
        ids = {i["instance_id"] for i in json.loads(out)}
        self.assertTrue({"acl-sync", "acl-async"} <= ids, out)
        status, out = self.ctl("stats")
        self.assertEqual(status, 0, out)
        # Nothing the daemons sent in the background (registry, status, scans) was refused
        # either: a refusal there is only logged.
        for process in (self.gateway, self.worker):
            self.assertNotIn("NOPERM", process.log())
        status, out = self.ctl("workers")
        self.assertEqual(status, 0, out)
        status, out = self.ctl("quotas", "--json")
        self.assertEqual(status, 0, out)
        used = {(q["quota"], q["value"]): q["used"] for q in json.loads(out)}
        self.assertEqual(used, {("total", None): 2, ("per-space", "s"): 2})
        for path in ("/v2/service_instances/acl-sync/service_bindings/b1",
                     "/v2/service_instances/acl-sync", "/v2/service_instances/acl-async"):
            r = self.client.request("DELETE", "%s?service_id=%s&plan_id=%s" % (
                path, SERVICE, SLOW_PLAN if "async" in path else PLAN))
            self.assertEqual(r.status, 200, r.body)
        self.assertIsNone(self.stack.redis.command("GET", "osbq:quota:total"))
        self.assertEqual(self.stack.redis.keys("osbq:inprogress:*"), [])
        for p in (self.gateway, self.worker):
            self.assertTrue(p.alive())
            self.assertNotIn("NOPERM", p.log())
            self.assertNotIn(self.password, p.log())

    def test_users_stay_inside_the_namespace(self):
        """The same rules refuse keys outside osbq:* and admin commands."""
        redis = self.stack.redis
        redis.command("SET", "other:secret", "x")
        for name in self.users:
            # One connection per user: AUTH, then commands osbq never needs.
            with socket.create_connection(("127.0.0.1", redis.port),
                                          timeout=osbq_stack.REDIS_COMMAND_TIMEOUT_S) as s:
                f = s.makefile("rb")

                def call(*args):
                    payload = b"*%d\r\n" % len(args)
                    for a in args:
                        a = a.encode() if isinstance(a, str) else a
                        payload += b"$%d\r\n%s\r\n" % (len(a), a)
                    s.sendall(payload)
                    try:
                        return harness._read_resp(f)
                    except RuntimeError as e:  # an error reply
                        return e

                self.assertEqual(call("AUTH", name, self.password), "OK")
                for args in (("GET", "other:secret"), ("FLUSHALL",), ("CONFIG", "GET", "*"),
                             ("KEYS", "*"), ("EVAL", "return 1", "0"), ("MODULE", "LIST"),
                             ("ACL", "LIST"), ("SUBSCRIBE", "other-channel")):
                    reply = call(*args)
                    self.assertIsInstance(reply, Exception, "%s %s: %r" % (name, args, reply))
                    self.assertIn("NOPERM", str(reply), "%s %s" % (name, args))


if __name__ == "__main__":
    unittest.main()
