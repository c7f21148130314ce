"""osbq-ctl export and import (issue 43, docs/decisions/0055): a namespace, a tenant or one
instance written as JSON Lines and written again into another namespace of the same Redis or into
another redis-server, binding results sealed at rest opened with the target's keys (after a key
rotation) and resealed for the target; a gateway and a worker on the target then serve every
instance and binding as the source did (GET, last_operation, bind, unbind, deprovision). Bad
files (a corrupt line, no trailer, an unknown version, keys that do not open them) are refused
before anything is written; an id the target holds already is refused alone; an instance an
operation runs on is skipped and named. Real redis-servers, gateways, workers (sim backend)."""

import json
import os
import secrets
import shutil
import unittest
import uuid

import jsonschema

import harness
import osbq_stack
from test_ctl import CtlTestCase

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-bindings.json")
SERVICE = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e01"
FAST = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f01"  # every operation at once
SLOW = "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f02"  # binds and unbinds take 1.5 s
SCHEMA = os.path.join(harness.SOURCE_DIR, "docs", "export-line.schema.json")
SOURCE = "src"
OP_TIMEOUT_S = 10.0


def key_id(key):
    """What the broker names a key by (test_secrets_at_rest.key_id)."""
    import hashlib
    return hashlib.blake2b(b"osbq secret key id", digest_size=8, key=key).hexdigest()


class ExportImport(harness.DirStackTestCase, CtlTestCase):
    DIR_PREFIX = "osbq-export-"

    @classmethod
    def make_stack(cls):
        cls.policy = cls.write_json("policy.json", {
            "quotas": [{"name": "total", "max_instances": 100},
                       {"name": "per-org", "per": "organization_guid", "max_instances": 50}]})
        cls.old_key, cls.new_key = secrets.token_bytes(32), secrets.token_bytes(32)
        cls.source_keys = cls.write_keys("source-keys", cls.old_key)
        # The target's file after a rotation: a new first key, the old one below it.
        cls.target_keys = cls.write_keys("target-keys", cls.new_key, cls.old_key)
        return harness.Stack(catalog=CATALOG, extra_env={
            "OSBQ_POLICY": cls.policy, "OSBQ_NAMESPACE": SOURCE,
            "OSBQ_SECRET_KEY_FILE": cls.source_keys, "OSBQ_TENANT_KEY": "organization",
            "OSBQ_RECOVERY_INTERVAL_MS": "200"})

    @classmethod
    def start_stack(cls):
        cls.gateway, _ = harness.start_connected(cls.stack, 1)
        cls.credentials = {}

    @classmethod
    def write_keys(cls, name, *keys):
        path = os.path.join(cls.dir, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("".join(k.hex() + "\n" for k in keys))
        return path

    # ---- osbq-ctl on either side ----

    def ctl_env(self, **overrides):
        settings = {"OSBQ_NAMESPACE": SOURCE, "OSBQ_SECRET_KEY_FILE": self.source_keys,
                    "OSBQ_POLICY": self.policy}
        settings.update(overrides)
        return super().ctl_env(**{k: v for k, v in settings.items() if v is not None})

    def run_ctl(self, *args, **env):
        return self.ctl(*args, env=self.ctl_env(**env))

    def export(self, *args, expect=0, **env):
        path = os.path.join(self.dir, "export-%s.jsonl" % uuid.uuid4().hex[:8])
        status, out, err = self.run_ctl("export", "--output", path, *args, **env)
        self.assertEqual(status, expect, out + err)
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        return path, err

    def import_into(self, path, namespace, redis=None, keys="target", expect=0, yes=True):
        env = {"OSBQ_NAMESPACE": namespace,
               "OSBQ_SECRET_KEY_FILE": {"target": self.target_keys, "source": self.source_keys,
                                        None: None}[keys]}
        if redis is not None:
            env["OSBQ_REDIS_URL"] = redis.url
        status, out, err = self.run_ctl("--json", "import", path, *(["--yes"] if yes else []),
                                        **env)
        self.assertEqual(status, expect, out + err)
        return (json.loads(out) if out.strip() else None), err

    @staticmethod
    def read_lines(path):
        with open(path) as f:
            return [json.loads(line) for line in f]

    def namespace_keys(self, namespace, redis=None):
        """Every key of namespace but the processes' heartbeats."""
        snapshot = harness.redis_snapshot(redis or self.stack.redis, namespace + ":*")
        return {k: v for k, v in snapshot.items() if ":events:" not in k}

    # ---- platform calls on the source ----

    def request(self, method, path, body=None, gateway=None):
        return harness.request_once(self.stack, gateway or self.gateway, method, path, body)

    def provision(self, org, plan=FAST):
        iid = harness.new_id()
        body = harness.provision_body(SERVICE, plan, extra={"organization_guid": org})
        body["context"]["organization_guid"] = org
        r = self.request("PUT", harness.instance_path(iid), body)
        self.assertEqual(r.status, 201, r.body)
        return iid

    def bind(self, iid, plan=FAST, gateway=None):
        bid = harness.new_id()
        r = self.request("PUT", harness.instance_path(iid, "/service_bindings/" + bid),
                         {"service_id": SERVICE, "plan_id": plan}, gateway=gateway)
        self.assertEqual(r.status, 201, r.body)
        self.credentials[(iid, bid)] = r.json()["credentials"]
        return bid

    def tenant_of(self, iid):
        return harness.redis_hash(self.stack.redis, "%s:instance:%s" % (SOURCE, iid))["tenant"]

    # ---- the target served by its own gateway and worker ----

    def check_served(self, lines, namespace, redis):
        """A gateway and a worker on the target answer every instance and binding of lines as
        the source did, then bind, unbind and deprovision there."""
        env = {"OSBQ_NAMESPACE": namespace, "OSBQ_REDIS_URL": redis.url,
               "OSBQ_SECRET_KEY_FILE": self.target_keys}
        gateway = self.stack.start_gateway(**env)
        worker = self.stack.start_worker(**env)
        try:
            harness.wait_workers_connected([gateway], 1)
            for line in lines:
                iid = line["instance_id"]
                r = self.request("GET", harness.instance_path(iid), gateway=gateway)
                self.assertEqual(r.status, 200, r.body)
                self.assertEqual(r.json()["plan_id"], line["record"]["plan_id"])
                r = self.request("GET", harness.instance_path(iid, "/last_operation"),
                                 gateway=gateway)
                self.assertEqual((r.status, r.json().get("state")), (200, "succeeded"), r.body)
                for b in line["bindings"]:
                    bpath = harness.instance_path(iid, "/service_bindings/" + b["binding_id"])
                    r = self.request("GET", bpath, gateway=gateway)
                    self.assertEqual(r.status, 200, r.body)
                    self.assertEqual(r.json()["credentials"],
                                     self.credentials[(iid, b["binding_id"])])
                    r = self.request("GET", harness.instance_path(
                        iid, "/service_bindings/" + b["binding_id"] + "/last_operation"),
                        gateway=gateway)
                    self.assertEqual((r.status, r.json().get("state")), (200, "succeeded"),
                                     r.body)
            for line in lines:
                iid, plan = line["instance_id"], line["record"]["plan_id"]
                # Binds and unbinds of the slow plan take 1.5 s each: its deprovision is enough.
                if plan == FAST:
                    self.bind(iid, gateway=gateway)
                    for b in line["bindings"]:
                        r = self.request("DELETE", harness.instance_path(
                            iid, "/service_bindings/" + b["binding_id"], service_id=SERVICE,
                            plan_id=plan), gateway=gateway)
                        self.assertEqual(r.status, 200, r.body)
                r = self.request("DELETE", harness.instance_path(
                    iid, service_id=SERVICE, plan_id=plan), gateway=gateway)
                self.assertEqual(r.status, 200, r.body)
            # Every instance deprovisioned: its quota counters given back to nothing.
            self.assertEqual(redis.keys(namespace + ":quota:*"), [])
        finally:
            self.assertEqual(worker.stop(), 0, worker.log())
            self.assertEqual(gateway.stop(), 0, gateway.log())

    # ---- tests ----

    def test_round_trip_between_namespaces_and_servers(self):
        org_a, org_b = "org-a-" + uuid.uuid4().hex[:6], "org-b-" + uuid.uuid4().hex[:6]
        first, second, third = self.provision(org_a), self.provision(org_a), self.provision(org_b)
        bound = {first: [self.bind(first), self.bind(first)], second: [self.bind(second)],
                 third: []}
        stored = harness.redis_hash(self.stack.redis, "%s:binding:%s:%s"
                                    % (SOURCE, first, bound[first][0]))["result"]
        self.assertTrue(stored.startswith("osbq:v1:%s:" % key_id(self.old_key)), stored)

        # The whole namespace.
        path, _ = self.export()
        lines = self.read_lines(path)
        header, body, trailer = lines[0], lines[1:-1], lines[-1]
        self.assertEqual((header["osbq_export"], header["namespace"], header["scope"]),
                         (1, SOURCE, {"kind": "namespace"}))
        self.assertEqual(trailer, {"end": True, "instances": len(body),
                                   "bindings": sum(len(x["bindings"]) for x in body),
                                   "skipped": []})
        # Every instance line is what the documented schema says.
        with open(SCHEMA) as f:
            validator = jsonschema.Draft202012Validator(json.load(f))
        for line in body:
            validator.validate(line)
        by_id = {x["instance_id"]: x for x in body}
        for iid, bids in bound.items():
            line = by_id[iid]
            self.assertEqual(sorted(b["binding_id"] for b in line["bindings"]), sorted(bids))
            self.assertNotIn("lock_x", line["record"])
            # Quota counters without the namespace; the provision and the binds' operations.
            self.assertEqual(sorted(line["record"]["quota_keys"].split("\n")),
                             sorted(["quota:total", "quota:per-org:" + line["record"]["tenant"]
                                     .split("/")[-1]]))
            kinds = sorted(op["record"]["kind"] for op in line["operations"])
            self.assertEqual(kinds, sorted(["provision"] + ["bind"] * len(bids)))
            for b in line["bindings"]:
                self.assertTrue(b["record"]["result"].startswith("osbq:v1:"), b)

        # Into another namespace of the same Redis, with the target's keys rotated: a check
        # first (without --yes) writes nothing.
        target = "dst-" + uuid.uuid4().hex[:6]
        _, err = self.import_into(path, target, expect=2, yes=False)
        self.assertIn("add --yes", err)
        self.assertEqual(self.namespace_keys(target), {})
        source_before = self.namespace_keys(SOURCE)
        out, _ = self.import_into(path, target)
        self.assertEqual((out["result"], out["written"], out["already_present"], out["refused"]),
                         ("imported", len(body), 0, []), out)
        self.assertEqual(out["bindings"], trailer["bindings"])
        self.assertEqual(self.namespace_keys(SOURCE), source_before)
        self.assertEqual(self.stack.redis.command("GET", target + ":quota:total"), str(len(body)))
        for iid, bids in bound.items():
            for bid in bids:
                result = harness.redis_hash(self.stack.redis, "%s:binding:%s:%s"
                                            % (target, iid, bid))["result"]
                self.assertTrue(result.startswith("osbq:v1:%s:" % key_id(self.new_key)), result)
        # The same file again: every instance is there already, the same; nothing changes.
        after = self.namespace_keys(target)
        out, _ = self.import_into(path, target)
        self.assertEqual((out["written"], out["already_present"]), (0, len(body)), out)
        self.assertEqual(self.namespace_keys(target), after)
        self.check_served(body, target, self.stack.redis)

        # One tenant into a second redis-server, under the source's namespace name.
        other = osbq_stack.Redis(self.stack.workdir, name="redis-target")
        self.stack.processes.append(other)
        tenant = self.tenant_of(first)
        path, _ = self.export("--tenant", tenant)
        lines = self.read_lines(path)
        self.assertEqual(lines[0]["scope"], {"kind": "tenant", "tenant": tenant})
        self.assertEqual(sorted(x["instance_id"] for x in lines[1:-1]), sorted([first, second]))
        out, _ = self.import_into(path, SOURCE, redis=other)
        self.assertEqual((out["written"], out["bindings"]), (2, 3), out)
        self.check_served(lines[1:-1], SOURCE, other)

    def test_bad_files_write_nothing(self):
        org = "org-bad-" + uuid.uuid4().hex[:6]
        first, second = self.provision(org), self.provision(org)
        self.bind(first)
        self.bind(second)
        path, _ = self.export("--tenant", self.tenant_of(first))
        with open(path) as f:
            good = f.read().splitlines(keepends=True)
        self.assertEqual(len(good), 4)
        target = "bad-" + uuid.uuid4().hex[:6]

        def refused(lines, *words, keys="target"):
            bad = os.path.join(self.dir, "bad-%s.jsonl" % uuid.uuid4().hex[:8])
            with open(bad, "w") as f:
                f.write("".join(lines))
            _, err = self.import_into(bad, target, keys=keys, expect=1)
            for w in words:
                self.assertIn(w, err)
            self.assertIn("nothing was written", err)
            self.assertEqual(self.namespace_keys(target), {})

        refused(good[:2] + ['{"instance_id": "x", "record": \n'] + good[2:],
                "truncated or corrupt file: line 3:")
        refused(good[:-1], "truncated or corrupt file", "no trailer")
        refused(good[:2] + [good[2][:len(good[2]) // 2]], "truncated or corrupt file: line 3")
        refused(good + ['{"instance_id": "late"}\n'], "line 5: a line after the trailer")
        header = json.loads(good[0])
        header["osbq_export"] = 2
        refused([json.dumps(header) + "\n"] + good[1:], "version 2 is not known")
        trailer = json.loads(good[-1])
        trailer["instances"] = 3
        refused(good[:-1] + [json.dumps(trailer) + "\n"], "counts 3 instance(s)")
        locked = json.loads(good[2])
        locked["record"]["lock_x"] = "0123"
        refused(good[:2] + [json.dumps(locked) + "\n", good[3]], "line 3:", "lock_x")
        # Sealed results: no key file, or one without the key that sealed them.
        refused(good, "line 2:", "OSBQ_SECRET_KEY_FILE is not set", keys=None)
        stranger = self.write_keys("stranger-keys", secrets.token_bytes(32))
        bad = os.path.join(self.dir, "stranger.jsonl")
        shutil.copy(path, bad)
        status, _, err = self.run_ctl("import", bad, "--yes", OSBQ_NAMESPACE=target,
                                      OSBQ_SECRET_KEY_FILE=stranger)
        self.assertEqual(status, 1, err)
        self.assertIn("does not open", err)
        self.assertEqual(self.namespace_keys(target), {})
        # A pipe cannot be read twice.
        status, _, err = self.run_ctl("import", "/dev/stdin", "--yes", OSBQ_NAMESPACE=target)
        self.assertEqual(status, 1, err)
        self.assertIn("not a regular file", err)

    def test_id_clash_is_refused_alone(self):
        org = "org-clash-" + uuid.uuid4().hex[:6]
        changed, kept = self.provision(org), self.provision(org)
        self.bind(changed)
        path, _ = self.export("--tenant", self.tenant_of(changed))
        target = "clash-" + uuid.uuid4().hex[:6]
        self.import_into(path, target)
        # The source's instance changes (an update), then moves again: the target's is another.
        r = self.request("PATCH", harness.instance_path(changed),
                         {"service_id": SERVICE, "parameters": {"size": 2}})
        self.assertEqual(r.status, 200, r.body)
        path, _ = self.export("--tenant", self.tenant_of(changed))
        before = self.namespace_keys(target)
        out, err = self.import_into(path, target, expect=4)
        self.assertEqual((out["result"], out["written"], out["already_present"]),
                         ("partial", 0, 1), out)
        self.assertEqual(out["refused"], [{"instance_id": changed, "state": "provisioned"}])
        self.assertIn("instance %s refused" % changed, err)
        self.assertEqual(self.namespace_keys(target), before)

    def test_operation_in_progress_is_skipped(self):
        org = "org-busy-" + uuid.uuid4().hex[:6]
        busy, idle = self.provision(org, plan=SLOW), self.provision(org, plan=SLOW)
        bid = harness.new_id()
        r = self.request("PUT", harness.instance_path(
            busy, "/service_bindings/" + bid, accepts_incomplete="true"),
            {"service_id": SERVICE, "plan_id": SLOW})
        self.assertEqual(r.status, 202, r.body)
        operation = r.json()["operation"]
        path, err = self.export("--tenant", self.tenant_of(busy), expect=4)
        self.assertIn("instance %s skipped: operation %s" % (busy, operation), err)
        lines = self.read_lines(path)
        self.assertEqual([x["instance_id"] for x in lines[1:-1]], [idle])
        self.assertEqual(lines[-1]["skipped"], [{"instance_id": busy, "operation_id": operation,
                                                 "reason": "operation_in_progress"}])
        # The partial file imports what it holds.
        target = "busy-" + uuid.uuid4().hex[:6]
        out, _ = self.import_into(path, target)
        self.assertEqual(out["written"], 1, out)
        # Once the bind ended, the instance alone, as the warning says.
        harness.wait_until(lambda: self.request("GET", harness.instance_path(
            busy, "/service_bindings/%s/last_operation" % bid, operation=operation))
            .json().get("state") == "succeeded", OP_TIMEOUT_S, "the bind to end")
        self.credentials[(busy, bid)] = self.request("GET", harness.instance_path(
            busy, "/service_bindings/" + bid)).json()["credentials"]
        path, _ = self.export("--instance", busy)
        lines = self.read_lines(path)
        self.assertEqual(lines[0]["scope"], {"kind": "instance", "instance_id": busy})
        self.assertEqual([x["instance_id"] for x in lines[1:-1]], [busy])
        self.assertEqual(lines[-1]["bindings"], 1)
        out, _ = self.import_into(path, target)
        self.assertEqual(out["written"], 1, out)
        # No such instance: exit 3, a whole (empty) file.
        path, err = self.export("--instance", harness.new_id(), expect=3)
        self.assertEqual(self.read_lines(path)[-1]["instances"], 0)

    def test_hand_written_records(self):
        """Plaintext results (from before the keys) pass as they are, without a key file; a
        record import would refuse is skipped at the export."""
        odd, target = "odd-" + uuid.uuid4().hex[:6], "odd-to-" + uuid.uuid4().hex[:6]
        redis = self.stack.redis
        plain = '{"credentials": {"user": "u", "password": "p"}}'
        redis.command("HSET", odd + ":instance:plain", "instance_id", "plain", "state",
                      "provisioned", "service_id", SERVICE, "plan_id", FAST)
        redis.command("HSET", odd + ":binding:plain:b1", "instance_id", "plain", "binding_id",
                      "b1", "state", "bound", "result", plain)
        redis.command("SADD", odd + ":bindings:plain", odd + ":binding:plain:b1")
        redis.command("HSET", odd + ":instance:stuck", "instance_id", "stuck", "state",
                      "provisioning", "service_id", SERVICE, "plan_id", FAST)
        path, err = self.export(expect=4, OSBQ_NAMESPACE=odd)
        self.assertIn("instance stuck skipped", err)
        lines = self.read_lines(path)
        self.assertEqual([x["instance_id"] for x in lines[1:-1]], ["plain"])
        self.assertEqual([(x["instance_id"], x["reason"]) for x in lines[-1]["skipped"]],
                         [("stuck", "unusable")])
        out, _ = self.import_into(path, target, keys=None)
        self.assertEqual(out["written"], 1, out)
        self.assertEqual(harness.redis_hash(redis, target + ":binding:plain:b1")["result"], plain)
        self.assertEqual(redis.command("SMEMBERS", target + ":bindings:plain"),
                         [target + ":binding:plain:b1"])

    def test_command_line(self):
        status, _, err = self.run_ctl("export", "--tenant", "t", "--instance", "i")
        self.assertEqual(status, 2, err)
        status, _, err = self.run_ctl("--json", "export")
        self.assertEqual(status, 2, err)
        self.assertIn("--output", err)
        status, _, err = self.run_ctl("import")
        self.assertEqual(status, 2, err)
        self.assertIn("import needs a FILE", err)
        status, _, err = self.run_ctl("import", "f", "--force")
        self.assertEqual(status, 2, err)


if __name__ == "__main__":
    unittest.main()
