"""Binding credentials at rest (docs/decisions/0007-credentials-at-rest.md) against real
processes: redis-server, a gateway and a worker with OSBQ_SECRET_KEY_FILE, the sim backend.

Redis must hold no credential in any form; fetch and re-PUT still answer them; a new first key
seals new bindings while old ones still open; a key taken out of the file makes its bindings
answer 500 with a description; plaintext written before the keys stays readable; a bad key
file stops the process with one line."""

import base64
import hashlib
import json
import os
import re
import secrets
import subprocess
import time
import unittest
import uuid

import harness

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-bindings.json")
SERVICE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"
FAST = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"  # every operation at once
NAMESPACE = "osbq"
CTL = os.path.join(harness.BUILD_DIR, "bin", "osbq-ctl")
OP_TIMEOUT_S = 10.0
BINDINGS = 6


def new_key():
    return secrets.token_bytes(32)


def key_id(key):
    """What the broker names a key by: BLAKE2b-64 of a fixed label, keyed with the key."""
    return hashlib.blake2b(b"osbq secret key id", digest_size=8, key=key).hexdigest()


def encodings(text):
    """text and every base64 form of it an attacker could grep for: the three alignments of
    standard and URL-safe base64, padding dropped."""
    forms = {text}
    raw = text.encode()
    for shift in range(3):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            coded = enc(b"\0" * shift + raw).decode().rstrip("=")
            # The characters that depend only on text, not on the padding bytes or its end.
            start = (shift * 4 + 2) // 3
            forms.add(coded[start:len(coded) - 2])
    return forms


class KeyedStack(unittest.TestCase):
    """A stack whose gateway and worker read a key file of the test's (test_sealed_values too):
    written with write_keys, (re)started with start, osbq-ctl run with it by ctl."""

    def setUp(self):
        self.stack = harness.Stack(catalog=CATALOG)
        self.gateway = None
        self.worker = None
        self.client = None
        self.key_path = os.path.join(self.stack.workdir, "secret-keys")

    def tearDown(self):
        if self.client is not None:
            self.client.close()
        self.stack.stop()

    # ---- processes ----

    def write_keys(self, *keys):
        fd = os.open(self.key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("".join(k.hex() + "\n" for k in keys))

    def start(self, keys=True):
        """A gateway and a worker, with the key file or without it; stops the previous ones."""
        if self.client is not None:
            self.client.close()
        for p in (self.worker, self.gateway):
            if p is not None:
                self.assertEqual(p.stop(), 0, p.log())
        env = {"OSBQ_SECRET_KEY_FILE": self.key_path if keys else None}
        self.gateway = self.stack.start_gateway(**env)
        self.worker = self.stack.start_worker(**env)
        harness.wait_workers_connected([self.gateway], 1)
        self.client = self.stack.client(self.gateway)

    def ctl(self, *args):
        env = self.stack.env(OSBQ_SECRET_KEY_FILE=self.key_path)
        r = subprocess.run([CTL] + list(args), env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        err = r.stderr.decode(errors="replace")
        for marker in harness.SANITIZER_MARKERS:
            self.assertNotIn(marker, err)
        return r.returncode, r.stdout.decode(errors="replace"), err


class SecretsAtRest(KeyedStack):
    # ---- requests ----

    def bpath(self, iid, bid):
        return "/v2/service_instances/%s/service_bindings/%s" % (iid, bid)

    def provision(self):
        iid = str(uuid.uuid4())
        r = self.client.request("PUT", "/v2/service_instances/" + iid,
                                {"service_id": SERVICE, "plan_id": FAST,
                                 "organization_guid": "org-1", "space_guid": "space-1"})
        self.assertEqual(r.status, 201, r.body)
        return iid

    def bind_body(self):
        return {"service_id": SERVICE, "plan_id": FAST}

    def bind(self, iid, accepts_incomplete=False):
        """A new binding of iid; returns (binding id, credentials)."""
        bid = str(uuid.uuid4())
        path = self.bpath(iid, bid) + ("?accepts_incomplete=true" if accepts_incomplete else "")
        r = self.client.request("PUT", path, self.bind_body())
        if not accepts_incomplete:
            self.assertEqual(r.status, 201, r.body)
            return bid, r.json()["credentials"]
        self.assertEqual(r.status, 202, r.body)
        operation = r.json()["operation"]

        def done():
            lo = self.client.request("GET", self.bpath(iid, bid) + "/last_operation?operation="
                                     + operation)
            self.assertEqual(lo.status, 200, lo.body)
            return lo.json()["state"] == "succeeded"

        harness.wait_until(done, OP_TIMEOUT_S, "the async bind to succeed")
        return bid, self.fetch(iid, bid)

    def fetch(self, iid, bid):
        r = self.client.request("GET", self.bpath(iid, bid))
        self.assertEqual(r.status, 200, r.body)
        return r.json()["credentials"]

    def assertUnreadable(self, r, *words):
        """A 500 with a JSON description containing each of words."""
        self.assertEqual(r.status, 500, r.body)
        self.assertEqual(r.header("Content-Type"), "application/json")
        description = r.json()["description"]
        for w in words:
            self.assertIn(w, description)

    def stored(self, iid, bid):
        return harness.redis_hash(self.stack.redis,
                                  "%s:binding:%s:%s" % (NAMESPACE, iid, bid))["result"]

    # ---- tests ----

    def test_no_credential_in_redis(self):
        key = new_key()
        self.write_keys(key)
        self.start()
        iid = self.provision()
        bound = [self.bind(iid, accepts_incomplete=(n % 2 == 1)) for n in range(BINDINGS)]
        needles = set()
        for bid, creds in bound:
            self.assertTrue(creds["password"] and creds["username"].startswith("b-"), creds)
            for secret in (creds["username"], creds["password"]):
                needles |= encodings(secret)
            self.assertTrue(self.stored(iid, bid).startswith("osbq:v1:%s:" % key_id(key)))
        # Every key of the namespace, every field and value (SCAN, not KEYS: all of them).
        cursor, keys = "0", set()
        for _ in range(10000):
            cursor, batch = self.stack.redis.command("SCAN", cursor, "MATCH", NAMESPACE + ":*",
                                                     "COUNT", 100)
            keys.update(batch)
            if cursor == "0":
                break
        self.assertGreater(len(keys), BINDINGS)
        values = []
        for k in keys:
            values.append(k)
            for field, value in harness.redis_fields(self.stack.redis, k):
                values.extend((field or "", value or ""))
        leaks = [(n, v[:40]) for n in needles for v in values if n in v]
        self.assertEqual(leaks, [])
        # The platform still gets them: fetch and a repeated PUT (200), through a fresh gateway.
        self.start()
        for bid, creds in bound:
            self.assertEqual(self.fetch(iid, bid), creds)
            r = self.client.request("PUT", self.bpath(iid, bid), self.bind_body())
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json()["credentials"], creds)
        # Nor did the processes log them.
        for p in (self.gateway, self.worker):
            log = p.log()
            for bid, creds in bound:
                self.assertNotIn(creds["password"], log)
        self.assertIn("sealed with key %s" % key_id(key), self.worker.log())

    def test_rotation_and_missing_key(self):
        old, new = new_key(), new_key()
        self.write_keys(old)
        self.start()
        iid = self.provision()
        bid_old, creds_old = self.bind(iid)
        # A new first key; the old one kept below it.
        self.write_keys(new, old)
        self.start()
        self.assertEqual(self.fetch(iid, bid_old), creds_old)
        self.assertTrue(self.stored(iid, bid_old).startswith("osbq:v1:%s:" % key_id(old)))
        bid_new, creds_new = self.bind(iid)
        self.assertTrue(self.stored(iid, bid_new).startswith("osbq:v1:%s:" % key_id(new)))
        # The old key taken out too early: its bindings answer 500, the others still work.
        self.write_keys(new)
        self.start()
        self.assertEqual(self.fetch(iid, bid_new), creds_new)
        r = self.client.request("GET", self.bpath(iid, bid_old))
        self.assertUnreadable(r, key_id(old), "OSBQ_SECRET_KEY_FILE")
        r = self.client.request("PUT", self.bpath(iid, bid_old), self.bind_body())
        self.assertUnreadable(r, key_id(old))
        harness.wait_until(lambda: key_id(old) in self.gateway.log(), 5,
                           "the gateway to log the missing key id")
        self.assertTrue(self.gateway.alive())
        # A gateway without any key file: the same clear answer for sealed bindings.
        self.start(keys=False)
        r = self.client.request("GET", self.bpath(iid, bid_new))
        self.assertUnreadable(r, key_id(new), "not set")
        self.assertTrue(self.gateway.alive())

    def test_plaintext_from_before_the_keys(self):
        self.start(keys=False)
        self.assertIn("OSBQ_SECRET_KEY_FILE is not set", self.gateway.log())
        self.assertIn("OSBQ_SECRET_KEY_FILE is not set", self.worker.log())
        iid = self.provision()
        bid_plain, creds_plain = self.bind(iid)
        self.assertIn(creds_plain["password"], self.stored(iid, bid_plain))
        key = new_key()
        self.write_keys(key)
        self.start()
        self.assertEqual(self.fetch(iid, bid_plain), creds_plain)
        r = self.client.request("PUT", self.bpath(iid, bid_plain), self.bind_body())
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["credentials"], creds_plain)
        bid_sealed, creds_sealed = self.bind(iid)
        self.assertTrue(self.stored(iid, bid_sealed).startswith("osbq:v1:%s:" % key_id(key)))
        self.assertNotIn(creds_sealed["password"], self.stored(iid, bid_sealed))
        self.assertEqual(self.fetch(iid, bid_sealed), creds_sealed)

    def test_reencrypt(self):
        """osbq-ctl reencrypt moves every result under the first key, plaintext ones too, so
        the old key can go; what it cannot open it leaves alone and says so."""
        self.start(keys=False)
        iid = self.provision()
        bound = [self.bind(iid)]
        old, new = new_key(), new_key()
        self.write_keys(old)
        self.start()
        bound.append(self.bind(iid))
        self.write_keys(new, old)
        self.start()
        bound.append(self.bind(iid))
        before = {bid: self.stored(iid, bid) for bid, _ in bound}
        status, out, err = self.ctl("reencrypt")
        self.assertEqual(status, 2, err)
        self.assertIn("--yes", err)
        self.assertEqual({bid: self.stored(iid, bid) for bid, _ in bound}, before)
        status, out, err = self.ctl("--json", "reencrypt", "--yes")
        self.assertEqual(status, 0, err)
        self.assertEqual(json.loads(out), {"key_id": key_id(new), "resealed": 2,
                                           "from_plaintext": 1, "already_current": 1,
                                           "changed_meanwhile": 0, "unreadable": 0,
                                           "operations_in_flight": 0})
        for bid, creds in bound:
            self.assertTrue(self.stored(iid, bid).startswith("osbq:v1:%s:" % key_id(new)))
            self.assertNotIn(creds["password"], self.stored(iid, bid))
        # The third binding was already under the new key: untouched.
        self.assertEqual(self.stored(iid, bound[2][0]), before[bound[2][0]])
        # The old key can go now.
        self.write_keys(new)
        self.start()
        for bid, creds in bound:
            self.assertEqual(self.fetch(iid, bid), creds)
        # A result under a key nobody has: reported, left alone, exit 1; the rest is current.
        key = "%s:binding:%s:%s" % (NAMESPACE, iid, bound[0][0])
        alien = "osbq:v1:0011223344556677:" + base64.b64encode(b"\0" * 60).decode()
        self.stack.redis.command("HSET", key, "result", alien)
        status, out, err = self.ctl("reencrypt", "--yes")
        self.assertEqual(status, 1, out + err)
        self.assertIn("0011223344556677", err)
        self.assertIn("already under key %s: 2" % key_id(new), out)
        self.assertIn("cannot be opened, left alone: 1", out)
        self.assertEqual(self.stored(iid, bound[0][0]), alien)

    def test_ctl_secret_key(self):
        """osbq-ctl secret-key needs no configuration; its keys make a working key file."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OSBQ_")}
        keys = []
        for _ in range(2):
            r = subprocess.run([CTL, "--json", "secret-key"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=10, check=True)
            doc = json.loads(r.stdout)
            self.assertRegex(doc["key"], r"^[0-9a-f]{64}$")
            self.assertEqual(doc["key_id"], key_id(bytes.fromhex(doc["key"])))
            keys.append(bytes.fromhex(doc["key"]))
        self.assertNotEqual(keys[0], keys[1])
        r = subprocess.run([CTL, "secret-key"], env=env, stdout=subprocess.PIPE, timeout=10,
                           check=True)
        self.assertTrue(re.fullmatch(rb"[0-9a-f]{64}\n", r.stdout), r.stdout)
        self.write_keys(*keys)
        self.start()
        iid = self.provision()
        bid, creds = self.bind(iid)
        self.assertTrue(self.stored(iid, bid).startswith("osbq:v1:%s:" % key_id(keys[0])))
        self.assertEqual(self.fetch(iid, bid), creds)

    def test_bad_key_file_stops_the_process(self):
        good = new_key().hex()
        cases = [
            ("", "line 1"),
            (good + "\n\n", "line 2"),
            (good + "\n# comment\n", "line 2"),
            (good + "\n" + good[:-1] + "\n", "line 2"),
            (good + "\n" + good[:-1] + "x\n", "line 2"),
            ("".join(new_key().hex() + "\n" for _ in range(17)), "line 17"),
        ]
        for binary, port_env in ((harness.GATEWAY, True), (harness.WORKER, False)):
            for text, line in cases:
                self.write_keys()
                with open(self.key_path, "w") as f:
                    f.write(text)
                env = self.stack.env(OSBQ_SECRET_KEY_FILE=self.key_path)
                if port_env:
                    env["OSBQ_LISTEN"] = "127.0.0.1:%d" % harness.free_port()
                    env["OSBQ_BUS_BIND"] = "tcp://127.0.0.1:%d" % harness.free_port()
                status, out = harness.run_once([binary], env)
                self.assertEqual(status, 1, out)
                last = out.strip().splitlines()[-1]
                self.assertIn("OSBQ_SECRET_KEY_FILE", last)
                self.assertIn(line + ":", last)
                self.assertNotIn(good[:16], out)
        # Writable by others: refused; readable by others: a warning only.
        self.write_keys(new_key())
        os.chmod(self.key_path, 0o666)
        status, out = harness.run_once([harness.WORKER], self.stack.env(
            OSBQ_SECRET_KEY_FILE=self.key_path))
        self.assertEqual(status, 1, out)
        self.assertIn("writable by group or others", out)
        os.chmod(self.key_path, 0o644)
        self.start()
        self.assertIn("readable by group or others", self.gateway.log())


if __name__ == "__main__":
    unittest.main()
