"""A request's values sealed at rest (docs/decisions/0058-sealed-request-values.md) against real
processes: redis-server, a gateway and a worker with OSBQ_SECRET_KEY_FILE, the sim backend.

Redis must hold no parameter value, context or bind_resource a platform sent, nor a step's
resume state, in any form (records, operations, queued jobs); GET still answers the parameters;
the worker's backend still reads them (sim_fail, sim_poll_ms); a previous release's plaintext
record still reads and updates; osbq-ctl reencrypt moves them to a new key; a value copied onto
another instance does not open there."""

import json
import unittest
import uuid

import harness
from test_secrets_at_rest import KeyedStack, encodings, key_id, new_key

SERVICE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"
FAST = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"
SLOW_CHANGE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f10"  # updates take 1.5 s, in steps
NAMESPACE = "osbq"
OP_TIMEOUT_S = 15.0


class SealedValues(KeyedStack):
    # ---- requests ----

    def ipath(self, iid, suffix=""):
        return "/v2/service_instances/" + iid + suffix

    def bpath(self, iid, bid):
        return self.ipath(iid, "/service_bindings/" + bid)

    def provision(self, parameters, context, plan=FAST):
        iid = str(uuid.uuid4())
        r = self.client.request("PUT", self.ipath(iid),
                                {"service_id": SERVICE, "plan_id": plan,
                                 "parameters": parameters, "context": context})
        self.assertEqual(r.status, 201, r.body)
        return iid

    def wait_done(self, path, operation):
        state = []

        def ended():
            r = self.client.request("GET", path + "/last_operation?operation=" + operation)
            self.assertEqual(r.status, 200, r.body)
            state[:] = [r.json()["state"]]
            return state[0] != "in progress"

        harness.wait_until(ended, OP_TIMEOUT_S, "the operation to end")
        return state[0]

    def namespace_values(self):
        """Every key of the namespace, with each field and value, as one list of texts."""
        values = []
        for k in self.stack.redis.keys(NAMESPACE + ":*"):
            values.append(k)
            for field, value in harness.redis_fields(self.stack.redis, k):
                values.extend((field or "", value or ""))
        return values

    def assertNoLeak(self, secrets_sent):
        needles = set()
        for s in secrets_sent:
            needles |= encodings(s)
        values = self.namespace_values()
        leaks = [(n, v[:60]) for n in needles for v in values if n in v]
        self.assertEqual(leaks, [])

    def record(self, key):
        return harness.redis_hash(self.stack.redis, key)

    # ---- tests ----

    def test_nothing_sent_in_clear(self):
        """Parameters, context, bind_resource and resume states: sealed in every record and
        job, opened for GET and for the backend."""
        key = new_key()
        self.write_keys(key)
        self.start()
        sent = ["pw-" + uuid.uuid4().hex for _ in range(6)]
        iid = self.provision({"password": sent[0], "sim_poll_ms": 100},
                             {"platform": "cloudfoundry", "organization_guid": "org-1",
                              "space_guid": "space-1", "note": sent[1]})
        inst = self.record("%s:instance:%s" % (NAMESPACE, iid))
        for field in ("parameters", "context"):
            self.assertTrue(inst[field].startswith("osbq:v1:%s:" % key_id(key)), inst[field])
        bid = str(uuid.uuid4())
        r = self.client.request("PUT", self.bpath(iid, bid),
                                {"service_id": SERVICE, "plan_id": FAST,
                                 "parameters": {"token": sent[2]},
                                 "bind_resource": {"app_guid": "app-1", "secret": sent[3]}})
        self.assertEqual(r.status, 201, r.body)
        binding = self.record("%s:binding:%s:%s" % (NAMESPACE, iid, bid))
        for field in ("parameters", "bind_resource", "result"):
            self.assertTrue(binding[field].startswith("osbq:v1:"), field)
        # An update in steps (the slow plan, polled every 100 ms): while it runs, its job, its
        # parameters and the state each step saves for the next are in Redis, all sealed.
        r = self.client.request("PATCH", self.ipath(iid, "?accepts_incomplete=true"),
                                {"service_id": SERVICE, "plan_id": SLOW_CHANGE,
                                 "parameters": {"password": sent[4], "sim_poll_ms": 100}})
        self.assertEqual(r.status, 202, r.body)
        operation = r.json()["operation"]
        op_key = "%s:op:%s" % (NAMESPACE, operation)
        harness.wait_until(lambda: "resume" in self.record(op_key), OP_TIMEOUT_S,
                           "a step to save its state")
        self.assertTrue(self.record(op_key)["resume"].startswith("osbq:v1:"))
        self.assertTrue(self.record(op_key)["parameters"].startswith("osbq:v1:"))
        self.assertNoLeak(sent[:5])
        self.assertEqual(self.wait_done(self.ipath(iid), operation), "succeeded")
        self.assertNoLeak(sent[:5])
        # The platform reads them back (through a fresh gateway: nothing cached).
        self.start()
        r = self.client.request("GET", self.ipath(iid))
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["parameters"], {"password": sent[4], "sim_poll_ms": 100})
        r = self.client.request("GET", self.bpath(iid, bid))
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["parameters"], {"token": sent[2]})
        # The backend reads them: a sealed sim_fail fails the provision.
        r = self.client.request("PUT", self.ipath(str(uuid.uuid4())),
                                {"service_id": SERVICE, "plan_id": FAST,
                                 "organization_guid": "o", "space_guid": "s",
                                 "parameters": {"sim_fail": True, "password": sent[5]}})
        self.assertEqual(r.status, 502, r.body)
        self.assertIn("sim_fail", r.json()["description"])
        self.assertNoLeak(sent)
        for p in (self.gateway, self.worker):
            for s in sent:
                self.assertNotIn(s, p.log())

    def test_previous_release_plaintext(self):
        """A record as the previous release wrote it (clear parameters and context) reads, and
        an update of it (which compares against them) works; new values are sealed."""
        key = new_key()
        self.write_keys(key)
        self.start()
        iid = self.provision({"size": 1}, {"platform": "cloudfoundry",
                                           "organization_guid": "org-1", "space_guid": "s-1"})
        inst_key = "%s:instance:%s" % (NAMESPACE, iid)
        self.stack.redis.command("HSET", inst_key, "parameters", '{"size":1,"old":"clear"}',
                                 "context", '{"platform":"cloudfoundry",'
                                 '"organization_guid":"org-1","space_guid":"s-1"}')
        r = self.client.request("GET", self.ipath(iid))
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["parameters"], {"size": 1, "old": "clear"})
        # The same parameters again: nothing changes (compared with the clear ones), 200.
        r = self.client.request("PATCH", self.ipath(iid),
                                {"service_id": SERVICE, "parameters": {"size": 1, "old": "clear"}})
        self.assertEqual(r.status, 200, r.body)
        r = self.client.request("PATCH", self.ipath(iid),
                                {"service_id": SERVICE, "parameters": {"size": 2}})
        self.assertEqual(r.status, 200, r.body)
        self.assertTrue(self.record(inst_key)["parameters"].startswith("osbq:v1:"))
        r = self.client.request("GET", self.ipath(iid))
        self.assertEqual(r.json()["parameters"], {"size": 2})

    def test_copied_value_does_not_open(self):
        """A sealed value is bound to its record and field: copied onto another instance, or
        into another field, it does not open; the gateway answers 500 and says why."""
        self.write_keys(new_key())
        self.start()
        context = {"platform": "cloudfoundry", "organization_guid": "org-1", "space_guid": "s"}
        a = self.provision({"password": "a-secret"}, context)
        b = self.provision({"password": "b-secret"}, context)
        a_key, b_key = ("%s:instance:%s" % (NAMESPACE, i) for i in (a, b))
        sealed_a = self.record(a_key)["parameters"]
        self.stack.redis.command("HSET", b_key, "parameters", sealed_a)
        r = self.client.request("GET", self.ipath(b))
        self.assertEqual(r.status, 500, r.body)
        self.assertIn("parameters", r.json()["description"])
        self.assertIn("does not open", r.json()["description"])
        self.assertNotIn("a-secret", r.body.decode(errors="replace"))
        # Into the context of its own record: the same.
        self.stack.redis.command("HSET", a_key, "context", sealed_a)
        r = self.client.request("GET", self.ipath(a))
        self.assertEqual(r.status, 500, r.body)
        self.assertIn("context", r.json()["description"])
        self.assertTrue(self.gateway.alive())

    def test_reencrypt_moves_them(self):
        """osbq-ctl reencrypt reseals parameters, context and bind_resource under the new first
        key, clear ones too; the old key can go."""
        self.start(keys=False)
        context = {"platform": "cloudfoundry", "organization_guid": "org-1", "space_guid": "s"}
        plain = self.provision({"password": "clear-1"}, context)
        old, new = new_key(), new_key()
        self.write_keys(old)
        self.start()
        sealed = self.provision({"password": "sealed-1"}, context)
        bid = str(uuid.uuid4())
        r = self.client.request("PUT", self.bpath(sealed, bid),
                                {"service_id": SERVICE, "plan_id": FAST,
                                 "parameters": {"token": "sealed-2"},
                                 "bind_resource": {"app_guid": "app-1"}})
        self.assertEqual(r.status, 201, r.body)
        self.write_keys(new, old)
        status, out, err = self.ctl("--json", "reencrypt", "--yes")
        self.assertEqual(status, 0, err)
        report = json.loads(out)
        # Two instances' parameters and context, the binding's parameters, bind_resource and
        # result; of those, the first instance's two were clear.
        self.assertEqual(report["resealed"], 7, report)
        self.assertEqual(report["from_plaintext"], 2, report)
        self.assertEqual(report["unreadable"], 0, report)
        prefix = "osbq:v1:%s:" % key_id(new)
        for iid in (plain, sealed):
            inst = self.record("%s:instance:%s" % (NAMESPACE, iid))
            self.assertTrue(inst["parameters"].startswith(prefix))
            self.assertTrue(inst["context"].startswith(prefix))
        binding = self.record("%s:binding:%s:%s" % (NAMESPACE, sealed, bid))
        for field in ("parameters", "bind_resource", "result"):
            self.assertTrue(binding[field].startswith(prefix), field)
        self.write_keys(new)
        self.start()
        for iid, password in ((plain, "clear-1"), (sealed, "sealed-1")):
            r = self.client.request("GET", self.ipath(iid))
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json()["parameters"], {"password": password})
        r = self.client.request("GET", self.bpath(sealed, bid))
        self.assertEqual(r.json()["parameters"], {"token": "sealed-2"})


if __name__ == "__main__":
    unittest.main()
