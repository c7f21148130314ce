"""The audit trail (issue 44, docs/events.md, docs/decisions/0057): every accepted request and
every operation's end is appended to "<ns>:events" in the script call that records it, and each
operator action (fail, resend, purge, import, reencrypt) with the OS user that ran it;
osbq-ctl events reads them back, filtered by time, tenant and instance, as lines or JSON, and
follows new ones. A lifecycle through two gateways and a worker killed mid-step yields exactly
its events, in order, one end per operation; the size and age bounds drop the oldest. Real
redis-server, gateways and workers (sim backend); every wait bounded."""

import base64
import getpass
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import harness
from test_ctl import CtlTestCase

SERVICE = "6e1d2c3b-4a5f-4e6d-8c7b-9a0b1c2d3e00"
FAST = "6e1d2c3b-4a5f-4e6d-8c7b-9a0b1c2d3e01"      # every operation at once
BLOCKING = "6e1d2c3b-4a5f-4e6d-8c7b-9a0b1c2d3e02"  # a provision of one 3-s step in a runner
SLOW_UPDATE = "6e1d2c3b-4a5f-4e6d-8c7b-9a0b1c2d3e03"  # an update of 3 s
NAMESPACE = "events-test"
TIMEOUT_S = 15.0
IDENTITY = {"user_id": "alice-guid", "user_name": "alice"}


def catalog():
    plan = lambda pid, name, osbq: {"id": pid, "name": name, "description": name, "free": True,
                                    "osbq": osbq}
    return {"services": [{
        "name": "osbq-events-test", "id": SERVICE, "description": "events", "bindable": True,
        "instances_retrievable": True, "plan_updateable": True,
        "plans": [plan(FAST, "fast", {"backend": "sim"}),
                  plan(BLOCKING, "blocking", {"backend": "sim", "blocking": True,
                                              "provision_ms": 3000}),
                  plan(SLOW_UPDATE, "slow-update", {"backend": "sim", "update_ms": 3000})]}]}


def identity_header():
    return "cloudfoundry " + base64.b64encode(json.dumps(IDENTITY).encode()).decode()


class Events(CtlTestCase):
    ENV = {}

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="osbq-events-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        path = os.path.join(self.dir, "catalog.json")
        with open(path, "w") as f:
            json.dump(catalog(), f)
        env = {"OSBQ_NAMESPACE": NAMESPACE, "OSBQ_RECOVERY_INTERVAL_MS": "200"}
        env.update(self.ENV)
        self.stack = harness.Stack(catalog=path, extra_env=env)
        self.addCleanup(self.stack.stop)
        self.catalog_path = path

    def ctl_env(self, **overrides):
        return super().ctl_env(**dict({"OSBQ_NAMESPACE": NAMESPACE,
                                       "OSBQ_CATALOG": self.catalog_path}, **overrides))

    def request(self, gateway, method, path, body=None, headers=None):
        c = self.stack.client(gateway)
        try:
            return c.request(method, path, body, headers=headers)
        finally:
            c.close()

    def events(self, *args):
        out = self.ctl_ok("--json", "events", *args)
        return [json.loads(line) for line in out.splitlines()]

    def of(self, iid, *args):
        return [e for e in self.events("--instance", iid, *args)]


class Lifecycle(Events):
    def test_lifecycle_through_two_gateways_and_a_worker_crash(self):
        """Provision (its worker killed mid-step: the step runs again elsewhere), bind, unbind,
        deprovision through two gateways: an accepted and one ended event per operation, in
        order, naming the platform's user and request id."""
        gateways, workers = harness.start_cluster(self.stack, gateways=2, workers=2)
        harness.wait_workers_connected(gateways, 2)
        iid, bid = harness.new_id(), harness.new_id()
        headers = {"X-Broker-API-Originating-Identity": identity_header(),
                   "X-Broker-API-Request-Identity": "req-1"}
        r = self.request(gateways[0], "PUT", harness.ipath(iid, incomplete=True),
                         harness.provision_body(SERVICE, BLOCKING), headers=headers)
        self.assertEqual(r.status, 202, r.body)
        provision = r.json()["operation"]
        key = "%s:op:%s" % (NAMESPACE, provision)
        harness.wait_until(lambda: harness.redis_hash(self.stack.redis, key).get("worker"),
                           TIMEOUT_S, "the provision running")
        running = harness.redis_hash(self.stack.redis, key)["worker"]
        victim = next(w for w in workers if harness.worker_id(w) == running)
        harness.kill(victim)
        harness.wait_until(
            lambda: harness.redis_hash(self.stack.redis, key).get("state") == "succeeded",
            TIMEOUT_S + 5, "the provision ended on the other worker")
        r = self.request(gateways[1], "PUT", harness.instance_path(iid, "/service_bindings/" + bid),
                         {"service_id": SERVICE, "plan_id": BLOCKING})
        self.assertEqual(r.status, 201, r.body)
        r = self.request(gateways[0], "DELETE", harness.instance_path(
            iid, "/service_bindings/" + bid, service_id=SERVICE, plan_id=BLOCKING))
        self.assertEqual(r.status, 200, r.body)
        r = self.request(gateways[1], "DELETE", harness.instance_path(
            iid, service_id=SERVICE, plan_id=BLOCKING))
        self.assertEqual(r.status, 200, r.body)

        events = self.of(iid)
        self.assertEqual([(e["event"], e["kind"]) for e in events], [
            ("accepted", "provision"), ("ended", "provision"),
            ("accepted", "bind"), ("ended", "bind"),
            ("accepted", "unbind"), ("ended", "unbind"),
            ("accepted", "deprovision"), ("ended", "deprovision")])
        first, ended = events[0], events[1]
        self.assertEqual((first["operation"], first["plan"], first["platform"], first["request"]),
                         (provision, BLOCKING, "default", "req-1"))
        self.assertEqual(first["user"], "cloudfoundry " + json.dumps(IDENTITY, sort_keys=True,
                                                                     separators=(",", ":")))
        self.assertEqual((ended["operation"], ended["outcome"], ended["claims"]),
                         (provision, "succeeded", "2"))
        self.assertNotEqual(ended["worker"], running)
        self.assertGreaterEqual(int(ended["duration_ms"]), 3000)
        self.assertEqual([e["binding"] for e in events[2:6]], [bid] * 4)
        self.assertTrue(all(e["outcome"] == "succeeded" for e in events[1::2]))
        ids = [e["id"] for e in events]
        self.assertEqual(ids, sorted(ids, key=lambda i: tuple(int(p) for p in i.split("-"))))
        self.assertEqual(len({e["operation"] for e in events}), 4)

        # The text form: a line each, time first.
        out = self.ctl_ok("events", "--instance", iid)
        lines = out.splitlines()
        self.assertEqual(len(lines), 8)
        self.assertRegex(lines[0], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z accepted "
                                   r"kind=provision operation=%s " % provision)
        self.assertRegex(lines[1], r" outcome=succeeded description=\S+ duration_ms=\d+ ")


class Filters(Events):
    def setUp(self):
        super().setUp()
        self.gateway, _ = harness.start_connected(self.stack, 1)

    def provision(self, org):
        iid = harness.new_id()
        body = harness.provision_body(SERVICE, FAST, extra={"organization_guid": org})
        body["context"]["organization_guid"] = org
        r = self.request(self.gateway, "PUT", harness.instance_path(iid), body)
        self.assertEqual(r.status, 201, r.body)
        return iid

    def test_time_tenant_and_instance_filters(self):
        a = self.provision("org-a")
        time.sleep(0.05)
        middle_ms = int(time.time() * 1000)
        time.sleep(0.05)
        b = self.provision("org-b")
        everything = self.events()
        self.assertEqual([e["instance"] for e in everything], [a, a, b, b])
        tenant_b = everything[2]["tenant"]
        self.assertEqual([e["instance"] for e in self.events("--tenant", tenant_b)], [b, b])
        self.assertEqual([e["instance"] for e in self.events("--since", str(middle_ms))], [b, b])
        self.assertEqual([e["instance"] for e in self.events("--until", str(middle_ms))], [a, a])
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(middle_ms // 1000)) + \
            ".%03dZ" % (middle_ms % 1000)
        self.assertEqual([e["instance"] for e in self.events("--since", iso)], [b, b])
        self.assertEqual(len(self.events("--since", "1h")), 4)
        self.assertEqual(self.events("--since", "1h", "--until", "30m"), [])
        status, _, err = self.ctl("events", "--since", "yesterday")
        self.assertEqual(status, 2, err)
        self.assertIn("--since", err)
        status, _, err = self.ctl("events", "--follow", "--until", "1h")
        self.assertEqual(status, 2, err)

    def test_follow_prints_new_events(self):
        self.provision("org-a")
        p = subprocess.Popen([os.path.join(harness.BUILD_DIR, "bin", "osbq-ctl"), "--json",
                              "events", "--follow", "--since", "1h"], env=self.ctl_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            seen = [json.loads(p.stdout.readline()) for _ in range(2)]
            later = self.provision("org-b")
            seen += [json.loads(p.stdout.readline()) for _ in range(2)]
            self.assertEqual([e["instance"] for e in seen[2:]], [later, later])
        finally:
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=TIMEOUT_S)
        self.assertEqual(p.returncode, 0, err)
        for marker in harness.SANITIZER_MARKERS:
            self.assertNotIn(marker, err)


class Operator(Events):
    def test_operator_actions_name_their_user(self):
        """resend and fail of an operation no worker takes, then purge of its instance: each in
        the trail with the OS user that ran osbq-ctl."""
        gateway = self.stack.start_gateway()
        stuck = harness.new_id()
        r = self.request(gateway, "PUT", harness.ipath(stuck, incomplete=True),
                         harness.provision_body(SERVICE, FAST))
        self.assertEqual(r.status, 202, r.body)
        operation = r.json()["operation"]
        self.assertIn("queued again", self.ctl_ok("resend", operation, "--yes"))
        self.ctl_ok("fail", operation, "--yes")
        self.ctl_ok("purge", "instance", stuck, "--yes")
        user = getpass.getuser()
        trail = self.of(stuck)
        self.assertEqual([(e["event"], e.get("action") or e.get("kind")) for e in trail], [
            ("accepted", "provision"), ("operator", "resend"), ("ended", "provision"),
            ("operator", "purge")])
        self.assertEqual((trail[1]["by"], trail[2]["by"], trail[2]["outcome"], trail[3]["by"]),
                         (user, user, "failed_by_operator", user))

    def events_of_namespace(self, namespace):
        status, out, err = self.ctl("--json", "events", env=self.ctl_env(OSBQ_NAMESPACE=namespace))
        self.assertEqual(status, 0, err)
        return [json.loads(line) for line in out.splitlines()]

    def test_import_and_reencrypt_are_in_the_trail(self):
        gateway, _ = harness.start_connected(self.stack, 1)
        iid = harness.new_id()
        r = self.request(gateway, "PUT", harness.instance_path(iid),
                         harness.provision_body(SERVICE, FAST))
        self.assertEqual(r.status, 201, r.body)
        path = os.path.join(self.dir, "export.jsonl")
        self.ctl_ok("export", "--output", path)
        status, out, err = self.ctl("import", path, "--yes", env=self.ctl_env(
            OSBQ_NAMESPACE="events-target"))
        self.assertEqual(status, 0, out + err)
        imported = [e for e in self.events_of_namespace("events-target")]
        self.assertEqual([(e["event"], e["action"], e["instance"], e["by"]) for e in imported],
                         [("operator", "import", iid, getpass.getuser())])
        keys = os.path.join(self.dir, "keys")
        with open(keys, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        os.chmod(keys, 0o600)
        status, out, err = self.ctl("reencrypt", "--yes", env=self.ctl_env(
            OSBQ_SECRET_KEY_FILE=keys))
        self.assertEqual(status, 0, out + err)
        # What it resealed: the instance's context, stored in clear without keys (0058).
        last = self.events()[-1]
        self.assertEqual((last["event"], last["action"], last["by"], last["resealed"]),
                         ("operator", "reencrypt", getpass.getuser(), "1"))


class Refusals(Events):
    """The refusals an auditor asks about: bad credentials (401) and a deny rule (403), written
    by the gateway; a full quota, the deletion guard and a delete's ConcurrencyError (422),
    written by the begin script that refuses."""

    def setUp(self):
        super().setUp()
        policy = os.path.join(self.dir, "policy.json")
        with open(policy, "w") as f:
            json.dump({"quotas": [{"name": "fast", "plans": [FAST], "max_instances": 2}],
                       "deny": [{"name": "no-blocking-in-dev", "plans": [BLOCKING],
                                 "operations": ["provision"], "organization_guids": ["dev"]}]},
                      f)
        self.gateway = self.stack.start_gateway(OSBQ_POLICY=policy)
        self.stack.start_worker()
        harness.wait_workers_connected([self.gateway], 1)

    def provision(self, plan, org="org-1", expect=201, incomplete=False):
        iid = harness.new_id()
        body = harness.provision_body(SERVICE, plan, extra={"organization_guid": org})
        body["context"]["organization_guid"] = org
        r = self.request(self.gateway, "PUT", harness.ipath(iid, incomplete=incomplete), body,
                         headers={"X-Broker-API-Originating-Identity": identity_header()})
        self.assertEqual(r.status, expect, r.body)
        return iid, r

    def refused(self):
        return [e for e in self.events() if e["event"] == "refused"]

    def test_refusals_are_in_the_trail(self):
        # 401: credentials that are not the platform's.
        c = harness.Client(self.gateway.port, username="broker", password="wrong")
        try:
            r = c.request("GET", "/v2/catalog")
        finally:
            c.close()
        self.assertEqual(r.status, 401)
        # 403: the deny rule.
        denied, _ = self.provision(BLOCKING, org="dev", expect=403)
        # 403: the quota of two FAST instances is full at the third (the begin script).
        self.provision(FAST)
        self.provision(FAST)
        full, _ = self.provision(FAST, expect=403)
        # 422 ConcurrencyError: a delete while an update runs (a provision would be halted).
        updating, _ = self.provision(SLOW_UPDATE)
        r = self.request(self.gateway, "PATCH", harness.ipath(updating, incomplete=True),
                         {"service_id": SERVICE, "parameters": {"size": 2}})
        self.assertEqual(r.status, 202, r.body)
        r = self.request(self.gateway, "DELETE", harness.instance_path(
            updating, service_id=SERVICE, plan_id=SLOW_UPDATE))
        self.assertEqual(r.status, 422, r.body)
        events = self.refused()
        reasons = [(e["reason"], e.get("status")) for e in events]
        self.assertEqual(reasons, [("unauthenticated", "401"), ("denied", "403"),
                                   ("quota", None), ("busy", None)])
        first = events[0]
        self.assertEqual((first["path"], first["method"], first["platform"]),
                         ("/v2/catalog", "GET", "default"))
        self.assertIn("client", first)
        self.assertEqual((events[1]["instance"], events[1]["kind"]), (denied, "provision"))
        self.assertEqual(events[1]["user"], "cloudfoundry " + json.dumps(
            IDENTITY, sort_keys=True, separators=(",", ":")))
        self.assertIn("no-blocking-in-dev", events[1]["description"])
        self.assertEqual((events[2]["instance"], events[2]["kind"]), (full, "provision"))
        self.assertEqual((events[3]["instance"], events[3]["kind"]), (updating, "deprovision"))

    def test_a_flood_of_bad_credentials_is_bounded(self):
        """More than AUDIT_REFUSALS_PER_S (50) refusals in a second: the rest are counted, and
        the next one written says how many were left out."""
        c = harness.Client(self.gateway.port, username="broker", password="wrong")
        try:
            started = time.monotonic()
            sent = 0
            while sent < 120 and time.monotonic() - started < 0.9:
                self.assertEqual(c.request("GET", "/v2/catalog").status, 401)
                sent += 1
            time.sleep(1.1)
            self.assertEqual(c.request("GET", "/v2/catalog").status, 401)
        finally:
            c.close()
        events = self.refused()
        if sent <= 50:
            self.skipTest("only %d requests in the second on this machine" % sent)
        self.assertLessEqual(len(events), 50 * 3)
        self.assertEqual(sum(int(e.get("unrecorded", "0")) for e in events) + len(events),
                         sent + 1)


class Usage(Events):
    """osbq-ctl usage sums instance-hours per platform, tenant and plan from the trail: a
    lifecycle with a plan change and a deletion, one still live, one made before the trail
    (its events dropped: its record says since when), clipped to --from and --to."""

    def test_usage_sums_known_lifecycles(self):
        gateway, _ = harness.start_connected(self.stack, 1)
        body = lambda plan: harness.provision_body(SERVICE, plan)
        old = harness.new_id()
        self.assertEqual(self.request(gateway, "PUT", harness.instance_path(old),
                                      body(FAST)).status, 201)
        # As if made before the trail: its events dropped.
        self.stack.redis.command("DEL", NAMESPACE + ":events")
        time.sleep(0.2)
        a, b = harness.new_id(), harness.new_id()
        for iid in (a, b):
            self.assertEqual(self.request(gateway, "PUT", harness.instance_path(iid),
                                          body(FAST)).status, 201)
        time.sleep(0.2)
        r = self.request(gateway, "PATCH", harness.instance_path(a),
                         {"service_id": SERVICE, "plan_id": SLOW_UPDATE})
        self.assertEqual(r.status, 200, r.body)
        bid = harness.new_id()
        r = self.request(gateway, "PUT", harness.instance_path(b, "/service_bindings/" + bid),
                         {"service_id": SERVICE, "plan_id": FAST})
        self.assertEqual(r.status, 201, r.body)
        time.sleep(0.2)
        r = self.request(gateway, "DELETE", harness.instance_path(
            a, service_id=SERVICE, plan_id=SLOW_UPDATE))
        self.assertEqual(r.status, 200, r.body)
        time.sleep(0.2)
        trail = self.events()
        ms = lambda e: int(e["id"].split("-")[0])
        ended = {(e["instance"], e["kind"]): ms(e) for e in trail
                 if e["event"] == "ended" and "binding" not in e}
        created_old = int(harness.redis_hash(self.stack.redis, "%s:instance:%s" % (
            NAMESPACE, old))["created_ms"])
        start, end = created_old - 1000, ms(trail[-1]) + 100
        status, out, err = self.ctl("--json", "usage", "--from", str(start), "--to", str(end))
        self.assertEqual(status, 0, err)
        self.assertIn("audit trail begins", err)  # the trail lost old's beginning
        rows = {r["plan"]: r for r in json.loads(out)["rows"]}
        hour = 3600000.0
        fast = (end - created_old) + (end - ended[(b, "provision")]) + \
            (ended[(a, "update")] - ended[(a, "provision")])
        slow = ended[(a, "deprovision")] - ended[(a, "update")]
        self.assertAlmostEqual(rows[FAST]["instance_hours"], fast / hour, places=9)
        self.assertAlmostEqual(rows[SLOW_UPDATE]["instance_hours"], slow / hour, places=9)
        self.assertEqual((rows[FAST]["instances"], rows[SLOW_UPDATE]["instances"]), (3, 1))
        self.assertEqual((rows[FAST]["bindings_created"], rows[FAST]["bindings_deleted"]), (1, 0))
        self.assertEqual(rows[FAST]["platform"], "default")
        # Clipped: a window after a's deletion counts b and old only, whole.
        later = ended[(a, "deprovision")] + 1
        status, out, err = self.ctl("--json", "usage", "--from", str(later), "--to", str(end))
        self.assertEqual(status, 0, err)
        rows = {r["plan"]: r for r in json.loads(out)["rows"]}
        self.assertEqual(list(rows), [FAST])
        self.assertAlmostEqual(rows[FAST]["instance_hours"], 2 * (end - later) / hour, places=9)
        self.assertEqual(rows[FAST]["bindings_created"], 0)
        # The table, with the plan's name.
        out = self.ctl_ok("usage", "--from", str(start), "--to", str(end))
        self.assertRegex(out, r"(?m)^PLATFORM +TENANT +PLAN +INSTANCE-HOURS")
        self.assertRegex(out, r"(?m)^default .* fast +\d+\.\d\d +3 +1 +0$")
        status, _, err = self.ctl("usage", "--to", "1h")
        self.assertEqual(status, 2, err)


class SizeBound(Events):
    ENV = {"OSBQ_EVENTS_MAX": "20", "OSBQ_EVENTS_MAX_AGE_S": "0"}

    def test_size_bound_drops_the_oldest(self):
        """Past OSBQ_EVENTS_MAX, a gateway's trim (every minute without an age bound; at its
        start too) drops the oldest, in whole stream nodes (5 entries here)."""
        self.stack.redis.command("CONFIG", "SET", "stream-node-max-entries", "5")
        gateway, _ = harness.start_connected(self.stack, 1)
        made = []
        for _ in range(30):
            iid = harness.new_id()
            r = self.request(gateway, "PUT", harness.instance_path(iid),
                             harness.provision_body(SERVICE, FAST))
            self.assertEqual(r.status, 201, r.body)
            made.append(iid)
        self.assertEqual(self.stack.redis.command("XLEN", NAMESPACE + ":events"), 60)
        # A second gateway's start trims at once.
        self.stack.start_gateway()
        harness.wait_until(
            lambda: self.stack.redis.command("XLEN", NAMESPACE + ":events") <= 20 + 5,
            TIMEOUT_S, "the events past 20 trimmed")
        kept = [e["instance"] for e in self.events()]
        self.assertGreaterEqual(len(kept), 20)
        self.assertNotIn(made[0], kept)
        self.assertEqual(kept[-1], made[-1])


class AgeBound(Events):
    ENV = {"OSBQ_EVENTS_MAX_AGE_S": "2"}

    def test_age_bound_drops_the_old(self):
        self.stack.redis.command("CONFIG", "SET", "stream-node-max-entries", "1")
        gateway, _ = harness.start_connected(self.stack, 1)
        r = self.request(gateway, "PUT", harness.instance_path(harness.new_id()),
                         harness.provision_body(SERVICE, FAST))
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(self.stack.redis.command("XLEN", NAMESPACE + ":events"), 2)
        # Past OSBQ_EVENTS_MAX_AGE_S, the gateway's trim (every second here) drops them.
        harness.wait_until(lambda: self.stack.redis.command("XLEN", NAMESPACE + ":events") == 0,
                           TIMEOUT_S, "the events older than 2 s trimmed")


class Off(Events):
    ENV = {"OSBQ_EVENTS_MAX": "0"}

    def test_no_events_when_off(self):
        gateway, _ = harness.start_connected(self.stack, 1)
        r = self.request(gateway, "PUT", harness.instance_path(harness.new_id()),
                         harness.provision_body(SERVICE, FAST))
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(self.stack.redis.command("EXISTS", NAMESPACE + ":events"), 0)
        self.assertEqual(self.events(), [])
