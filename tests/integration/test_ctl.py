"""osbq-ctl against a live stack (docs/ctl.md): every subcommand in text and --json form, bad
command lines, an unknown operation, fail and resend of stuck operations, and Redis down.

A stuck operation is made by provisioning while no worker runs: the gateway accepts it (202)
and it stays queued, since recovery resends only while a worker has room. Every osbq-ctl run
is bounded (RUN_TIMEOUT_S) and its stderr checked for sanitizer reports."""

import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
import unittest

import harness

CTL = os.path.join(harness.BUILD_DIR, "bin", "osbq-ctl")
CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-faults.json")

SERVICE = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4e01"
FAST = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4f01"  # every operation at once
STEPS_LONG = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4f07"  # waits 20 s in Redis between two steps

# Not the default "osbq", so the test shows OSBQ_NAMESPACE is honoured.
NAMESPACE = "ctl-test"
ENV = {
    "OSBQ_NAMESPACE": NAMESPACE,
    "OSBQ_RECOVERY_INTERVAL_MS": "200",
    "OSBQ_CLAIM_TIMEOUT_MS": "1000",
}

# The harness's patience with one osbq-ctl run, not a speed target: it catches a command that
# hangs. A sanitized osbq-ctl on a machine loaded far past its cores (the whole suite beside
# busy loops) once took over 10 s to list the instances.
RUN_TIMEOUT_S = 60.0
OP_TIMEOUT_S = 10.0
# How long a process may take to publish its first status.
STATUS_TIMEOUT_S = 5.0
POLL_S = 0.05


new_id = harness.new_id


def instance_body(plan=FAST):
    return harness.provision_body(SERVICE, plan, instance_name="ctl")


ipath = harness.ipath


class CtlTestCase(unittest.TestCase):
    """Runs osbq-ctl against self.stack (or a given environment)."""

    stack = None

    def ctl_env(self, **overrides):
        env = {k: v for k, v in os.environ.items() if not k.startswith("OSBQ_")}
        if self.stack is not None:
            env["OSBQ_REDIS_URL"] = self.stack.redis.url
            env["OSBQ_NAMESPACE"] = NAMESPACE
        env.update({k: str(v) for k, v in overrides.items()})
        return env

    def ctl(self, *args, env=None):
        """Runs osbq-ctl; returns (status, stdout, stderr)."""
        r = subprocess.run([CTL] + list(args), env=env or self.ctl_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT_S)
        out, err = r.stdout.decode(), r.stderr.decode()
        for marker in harness.SANITIZER_MARKERS:
            self.assertNotIn(marker, err, "osbq-ctl %s: sanitizer report:\n%s" % (args, err))
        return r.returncode, out, err

    def ctl_ok(self, *args):
        status, out, err = self.ctl(*args)
        self.assertEqual(status, 0, "osbq-ctl %s exited %d:\n%s%s" % (args, status, out, err))
        return out

    def ctl_json(self, *args):
        return json.loads(self.ctl_ok("--json", *args))

    def start_gateway_alone(self):
        """A stack of this test's own with a gateway and no worker, so that what it accepts
        stays queued; self.client speaks to the gateway."""
        self.stack = harness.Stack(catalog=CATALOG, extra_env=ENV)
        self.addCleanup(self.stack.stop)
        self.gateway = self.stack.start_gateway()
        self.client = self.stack.client(self.gateway)
        self.addCleanup(self.client.close)

    def records_snapshot(self):
        """Every record osbq-ctl could change (not the processes' heartbeats)."""
        snapshot = {}
        for kind in ("instance", "binding", "bindings", "op", "history", "waiters"):
            snapshot.update(harness.redis_snapshot(self.stack.redis,
                                                   "%s:%s:*" % (NAMESPACE, kind)))
        snapshot.update(harness.redis_snapshot(self.stack.redis, NAMESPACE + ":queue"))
        return snapshot

    def wait_ended(self, client, iid):
        """Polls the instance's last_operation until it is no longer in progress."""
        deadline = time.monotonic() + OP_TIMEOUT_S
        while True:
            r = client.request("GET", ipath(iid, "/last_operation"))
            self.assertEqual(r.status, 200, r.body)
            if r.json()["state"] != "in progress":
                return r.json()
            if time.monotonic() > deadline:
                self.fail("operation of %s still in progress after %.0f s" % (iid, OP_TIMEOUT_S))
            time.sleep(POLL_S)


class TestCtlReads(CtlTestCase, harness.StackTestCase):
    """One gateway and one worker; three instances, two bindings on the first."""

    CATALOG = CATALOG
    EXTRA_ENV = ENV

    @classmethod
    def start_stack(cls):
        cls.gateway, [cls.worker] = harness.start_connected(cls.stack)
        cls.client = cls.stack.client(cls.gateway)
        cls.instances = [new_id() for _ in range(3)]
        for iid in cls.instances:
            r = cls.client.request("PUT", ipath(iid), instance_body())
            assert r.status == 201, (r.status, r.body)
        cls.bindings = ["binding-a", "binding-b"]
        for bid in cls.bindings:
            r = cls.client.request("PUT", ipath(cls.instances[0], "/service_bindings/" + bid),
                                   {"service_id": SERVICE, "plan_id": FAST})
            assert r.status == 201, (r.status, r.body)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        super().tearDownClass()

    def test_instances(self):
        out = self.ctl_ok("instances")
        lines = out.splitlines()
        self.assertEqual(lines[0].split(),
                         ["ID", "STATE", "SERVICE", "PLAN", "NAMES", "LOCK", "LAST_OP", "CREATED"])
        self.assertEqual(len(lines), 4, out)
        for iid in self.instances:
            row = [line for line in lines if line.startswith(iid)]
            self.assertEqual(len(row), 1, out)
            cells = row[0].split()
            self.assertEqual(cells[1:4], ["provisioned", SERVICE, FAST])
            self.assertEqual(cells[4], "-")  # the default catalog does not know these ids
            self.assertEqual(cells[5], "-")  # no lock
            self.assertRegex(cells[7], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

        records = self.ctl_json("instances")
        self.assertEqual(sorted(r["instance_id"] for r in records), sorted(self.instances))
        for r in records:
            self.assertEqual(r["state"], "provisioned")
            self.assertIsInstance(r["created_ms"], int)
            self.assertNotIn("digest", r)

    def test_instances_filters_and_limit(self):
        self.assertEqual(len(self.ctl_json("instances", "--state", "provisioned")), 3)
        self.assertEqual(self.ctl_json("instances", "--state=failed"), [])
        status, out, err = self.ctl("instances", "--json", "--limit", "1")
        self.assertEqual(status, 0, err)
        self.assertEqual(len(json.loads(out)), 1)
        self.assertIn("--limit 0", err)
        self.assertEqual(len(self.ctl_json("instances", "--limit", "0")), 3)
        out = self.ctl_ok("instances", "--state", "gone")
        self.assertEqual(len(out.splitlines()), 1, out)  # the header only

    def test_bindings(self):
        out = self.ctl_ok("bindings", "--instance", self.instances[0])
        lines = out.splitlines()
        self.assertEqual(lines[0].split(),
                         ["ID", "INSTANCE", "STATE", "PLAN", "NAMES", "LOCK", "LAST_OP",
                          "CREATED"])
        self.assertEqual(sorted(line.split()[0] for line in lines[1:]), self.bindings)
        for line in lines[1:]:
            self.assertEqual(line.split()[1:4], [self.instances[0], "bound", FAST])

        records = self.ctl_json("bindings")
        self.assertEqual(sorted(r["binding_id"] for r in records), self.bindings)
        for r in records:
            self.assertEqual(r["instance_id"], self.instances[0])
            self.assertEqual(r["state"], "bound")
            # The credentials (the record's result) never leave Redis through osbq-ctl.
            self.assertNotIn("result", r)
            self.assertNotIn("password", json.dumps(r))
        self.assertEqual(self.ctl_json("bindings", "--instance", self.instances[1]), [])
        self.assertEqual(self.ctl_json("bindings", "--state", "failed"), [])

    def catalog_names(self):
        with open(CATALOG) as f:
            service = [s for s in json.load(f)["services"] if s["id"] == SERVICE][0]
        return service["name"], [p["name"] for p in service["plans"] if p["id"] == FAST][0]

    def test_names_beside_ids(self):
        service, plan = self.catalog_names()
        status, out, err = self.ctl("instances", env=self.ctl_env(OSBQ_CATALOG=CATALOG))
        self.assertEqual(status, 0, err)
        for line in out.splitlines()[1:]:
            self.assertEqual(line.split()[4], "%s/%s" % (service, plan), out)
        status, out, err = self.ctl("--json", "bindings", env=self.ctl_env(OSBQ_CATALOG=CATALOG))
        self.assertEqual(status, 0, err)
        for r in json.loads(out):
            self.assertEqual((r["service_name"], r["plan_name"]), (service, plan))
        # A catalog that cannot be read: ids only, and a word why.
        missing = os.path.join(self.stack.workdir, "no-such-catalog.json")
        status, out, err = self.ctl("instances", env=self.ctl_env(OSBQ_CATALOG=missing))
        self.assertEqual(status, 0, err)
        self.assertIn("OSBQ_CATALOG: %s" % missing, err)
        self.assertIn("showing ids without names", err)

    def test_instance(self):
        service, plan = self.catalog_names()
        iid = self.instances[0]
        status, out, err = self.ctl("instance", iid, env=self.ctl_env(OSBQ_CATALOG=CATALOG))
        self.assertEqual(status, 0, err)
        rows = dict(line.split(None, 1) for line in out.split("\n\n")[0].splitlines())
        self.assertEqual(rows["instance"], iid)
        self.assertEqual(rows["state"], "provisioned")
        self.assertEqual(rows["service"], "%s (%s)" % (service, SERVICE))
        self.assertEqual(rows["plan"], "%s (%s)" % (plan, FAST))
        self.assertIn("Bindings (2):", out)
        self.assertIn("Operations (3,", out)
        for bid in self.bindings:
            self.assertIn(bid, out)

        # Read by id: no SCAN, whatever the number of records (issue 43).
        scans = self.scan_calls()
        record = self.ctl_json("instance", iid)
        self.assertEqual(self.scan_calls(), scans)
        self.assertEqual(record["instance"]["instance_id"], iid)
        self.assertNotIn("digest", record["instance"])
        self.assertEqual(sorted(b["binding_id"] for b in record["bindings"]), self.bindings)
        ops = record["operations"]
        self.assertEqual(sorted(o["kind"] for o in ops), ["bind", "bind", "provision"])
        for o in ops:
            self.assertEqual(o["instance"], iid)
            self.assertEqual(o["state"], "succeeded")
            self.assertNotIn("job", o)
            self.assertNotIn("history", o)
            # Each id is one `osbq-ctl operation` reads.
            self.assertEqual(self.ctl_json("operation", o["operation_id"])["kind"], o["kind"])
        # Another instance's operations are not listed.
        other = self.ctl_json("instance", self.instances[1])
        self.assertEqual(other["bindings"], [])
        self.assertEqual([o["kind"] for o in other["operations"]], ["provision"])

    def scan_calls(self):
        """How many SCANs Redis has run (INFO commandstats)."""
        info = self.stack.redis.command("INFO", "commandstats")
        for line in info.splitlines():
            if line.startswith("cmdstat_scan:"):
                return int(line.split("calls=")[1].split(",")[0])
        return 0

    def test_instance_unknown(self):
        status, out, err = self.ctl("instance", "no-such-instance")
        self.assertEqual(status, 3, out + err)
        self.assertIn("no instance no-such-instance in namespace %s" % NAMESPACE, err)
        status, out, err = self.ctl("instance")
        self.assertEqual(status, 2)
        self.assertIn("instance needs an INSTANCE_ID", err)

    def test_operation(self):
        record = [r for r in self.ctl_json("instances") if r["instance_id"] == self.instances[1]]
        op = record[0]["last_op"]

        out = self.ctl_ok("operation", op)
        self.assertRegex(out, r"(?m)^operation +%s$" % op)
        self.assertRegex(out, r"(?m)^kind +provision$")
        self.assertRegex(out, r"(?m)^state +succeeded$")
        self.assertRegex(out, r"(?m)^instance +%s$" % self.instances[1])
        self.assertIn("history (2 events", out)
        history = out.split("history", 1)[1].splitlines()
        self.assertEqual(history[1].split(),
                         ["TIME", "EVENT", "WORKER", "ATTEMPT", "DESCRIPTION"])
        self.assertEqual([line.split()[1] for line in history[2:]], ["claimed", "succeeded"])

        doc = self.ctl_json("operation", op)
        self.assertEqual(doc["operation_id"], op)
        self.assertEqual(doc["kind"], "provision")
        self.assertEqual(doc["state"], "succeeded")
        self.assertEqual(doc["instance"], self.instances[1])
        self.assertLessEqual(doc["created_ms"], doc["started_ms"])
        self.assertLessEqual(doc["started_ms"], doc["finished_ms"])
        self.assertNotIn("job", doc)
        self.assertNotIn("digest", doc)
        events = [e["event"] for e in doc["history"]]
        self.assertEqual(events, ["claimed", "succeeded"])
        self.assertEqual(doc["history"][0]["worker"], doc["worker"])

    def test_operation_of_a_binding(self):
        record = [r for r in self.ctl_json("bindings") if r["binding_id"] == "binding-a"][0]
        doc = self.ctl_json("operation", record["last_op"])
        self.assertEqual((doc["kind"], doc["binding"], doc["state"]),
                         ("bind", "binding-a", "succeeded"))
        self.assertRegex(self.ctl_ok("operation", record["last_op"]), r"(?m)^binding +binding-a$")

    def test_unknown_operation(self):
        for args in (("operation", "no-such-op"), ("--json", "operation", "no-such-op")):
            status, out, err = self.ctl(*args)
            self.assertEqual(status, 3, err)
            self.assertEqual(out, "")
            self.assertIn("no operation no-such-op", err)
        for command in ("fail", "resend"):
            status, out, err = self.ctl("--json", command, "no-such-op", "--yes")
            self.assertEqual(status, 3, err)
            self.assertEqual(json.loads(out)["result"], "not_found")

    def test_repair_of_a_finished_operation(self):
        op = self.ctl_json("instances")[0]["last_op"]
        for command in ("fail", "resend"):
            status, out, err = self.ctl(command, op, "--yes")
            self.assertEqual(status, 3, out + err)
            self.assertIn("nothing to do", err)
            self.assertIn("already finished (succeeded)", err)
            status, out, err = self.ctl("--json", command, op, "--yes")
            self.assertEqual(status, 3, out + err)
            self.assertEqual(json.loads(out),
                             {"result": "already_finished", "operation_id": op,
                              "state": "succeeded"})
        self.assertEqual(self.ctl_json("operation", op)["state"], "succeeded")

    def wait_statuses(self, role, count):
        """The --json list of role ("gateways", "workers") once it has count entries."""
        deadline = time.monotonic() + STATUS_TIMEOUT_S
        while True:
            statuses = self.ctl_json(role)
            if len(statuses) == count or time.monotonic() > deadline:
                return statuses
            time.sleep(0.2)

    def assertListsAlone(self, role, process, columns, more_columns=False):
        """osbq-ctl <role>s lists process alone, in --json and in a table whose columns are
        columns (the first of them where more_columns)."""
        statuses = self.wait_statuses(role + "s", 1)
        self.assertEqual(len(statuses), 1,
                         "the live %s publishes no status (osbq_store_status_publish "
                         "with role \"%s\"): %r" % (role, role, statuses))
        self.assertEqual(statuses[0].get("pid"), process.pid, statuses)
        out = self.ctl_ok(role + "s")
        lines = out.splitlines()
        header = lines[0].split()
        self.assertEqual(header[:len(columns)] if more_columns else header, columns)
        self.assertEqual(len(lines), 2, out)
        self.assertEqual(lines[1].split()[1], str(process.pid))

    def test_gateways(self):
        self.assertListsAlone("gateway", self.gateway, ["ID", "PID", "HOST", "VERSION", "UPTIME"],
                              more_columns=True)

    def test_workers(self):
        self.assertListsAlone("worker", self.worker, ["ID", "PID", "HOST", "VERSION", "UPTIME",
                                                      "SLOTS", "RUNNING", "GATEWAYS"])

    def test_stats(self):
        stats = self.ctl_json("stats")
        self.assertEqual(stats["instances"], {"total": 3, "by_state": {"provisioned": 3},
                                              "outdated": 0})
        self.assertEqual(stats["bindings"], {"total": 2, "by_state": {"bound": 2}})
        self.assertEqual(stats["operations"], {"unfinished": 0, "overdue": 0})
        # Every operation ended: no tenant has work in progress.
        self.assertEqual(stats["tenants"], {"with_work": 0, "complete": True, "read": 0,
                                            "top": []})
        self.assertEqual(stats["gateways"]["live"], len(self.ctl_json("gateways")))
        self.assertEqual(stats["workers"]["live"], len(self.ctl_json("workers")))
        self.assertGreater(stats["redis"]["used_memory"], 0)
        # It says how long its walks took (they grow with the records).
        self.assertIsInstance(stats["took_ms"], int)
        self.assertGreaterEqual(stats["took_ms"], 0)
        self.assertRegex(self.ctl_ok("stats"), r"(?m)^read in +[0-9]+\.[0-9]{2} s ")

        out = self.ctl_ok("stats")
        self.assertRegex(out, r"(?m)^instances +3 \(provisioned 3\)$")
        self.assertRegex(out, r"(?m)^bindings +2 \(bound 2\)$")
        self.assertRegex(out, r"(?m)^operations +0 unfinished, 0 overdue$")
        # The test's Redis has no replica.
        self.assertEqual((stats["redis"]["role"], stats["redis"]["replicas"]), ("master", []))
        self.assertRegex(out, r"(?m)^replicas +role master, 0 of 0 online$")
        self.assertRegex(out, r"(?m)^tenants +0 with operations in progress$")
        self.assertNotIn("TENANT", out)

    def test_server_named(self):
        """stats and the daemons' start-up lines name the server the stack runs and its own
        version, as the program itself prints them ("Valkey server v=8.0.1": valkey 8.0.1, not
        the redis_version 7.2.4 Valkey answers for)."""
        printed = subprocess.run([harness.REDIS_SERVER, "--version"], stdout=subprocess.PIPE,
                                 check=True, timeout=RUN_TIMEOUT_S).stdout.decode()
        words = printed.split()
        name = words[0].lower()
        version = next(w[2:] for w in words if w.startswith("v="))
        stats = self.ctl_json("stats")
        self.assertEqual((stats["redis"]["server"], stats["redis"]["version"]), (name, version))
        self.assertRegex(self.ctl_ok("stats"),
                         r"(?m)^redis +%s %s, " % (name, version.replace(".", r"\.")))
        line = "Redis: %s %s, role master, 0 replica(s) online" % (name, version)
        self.assertIn(line, self.gateway.log())
        harness.wait_until(lambda: line in self.worker.log(), STATUS_TIMEOUT_S,
                           "the worker's start-up line of Redis")

    def test_namespace(self):
        """--namespace overrides OSBQ_NAMESPACE; another namespace holds nothing."""
        env = self.ctl_env(OSBQ_NAMESPACE="elsewhere")
        status, out, err = self.ctl("--json", "instances", env=env)
        self.assertEqual((status, json.loads(out)), (0, []), err)
        status, out, err = self.ctl("--json", "--namespace", NAMESPACE, "instances", env=env)
        self.assertEqual(status, 0, err)
        self.assertEqual(len(json.loads(out)), 3)
        status, out, err = self.ctl("instances", "--namespace", "bad:ns")
        self.assertEqual(status, 1)
        self.assertIn("OSBQ_NAMESPACE", err)

    def test_bad_arguments(self):
        op = self.ctl_json("instances")[0]["last_op"]
        before = self.records_snapshot()
        cases = [
            ((), "usage:"),
            (("bogus",), "unknown command"),
            (("--json",), "usage:"),
            (("instances", "--bogus"), "unknown option --bogus"),
            (("instances", "--limit"), "needs a value"),
            (("instances", "--limit", "x"), "--limit"),
            (("instances", "--limit", "-1"), "--limit"),
            (("instances", "--limit", "12abc"), "--limit"),
            (("instances", "--state", "nope"), "not a state of instances"),
            (("bindings", "--state", "provisioned"), "not a state of bindings"),
            (("instances", "--instance", "x"), "does not apply to instances"),
            (("instances", "extra"), "unexpected argument"),
            (("operation",), "needs an OPERATION_ID"),
            (("operation", op, "more"), "unexpected argument"),
            (("stats", "--yes"), "does not apply to stats"),
            (("stats", "--top", "x"), "--top"),
            (("stats", "--top", "-3"), "--top"),
            (("instances", "--top", "3"), "does not apply to instances"),
            (("resend", op, "--description", "x", "--yes"), "does not apply to resend"),
            (("instances", "--state", "failed", "--state", "gone"), "given twice"),
            (("fail", op), "Add --yes"),
            (("resend", op), "Add --yes"),
            (("--json", "fail", op, "--description", "why"), "Add --yes"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                status, out, err = self.ctl(*args)
                self.assertEqual(status, 2, out + err)
                self.assertEqual(out, "")
                self.assertIn(message, err)
        # Refused commands wrote nothing.
        self.assertEqual(self.records_snapshot(), before)

    def test_help_and_version(self):
        for args in (("--help",), ("-h",), ("help",), ("instances", "--help")):
            status, out, _ = self.ctl(*args)
            self.assertEqual(status, 0)
            self.assertIn("usage: osbq-ctl", out)
            for command in ("instances", "bindings", "operation", "gateways", "workers", "stats",
                            "fail", "resend"):
                self.assertIn(command, out)
        status, out, _ = self.ctl("--version")
        self.assertEqual(status, 0)
        self.assertRegex(out, r"^osbq-ctl \d+\.\d+\.\d+\n$")


class TestCtlRepairs(CtlTestCase):
    """fail and resend of an operation stuck in the queue: a gateway and no worker."""

    def setUp(self):
        self.start_gateway_alone()

    def provision_stuck(self):
        iid = new_id()
        r = self.client.request("PUT", ipath(iid, incomplete=True), instance_body())
        self.assertEqual(r.status, 202, r.body)
        op = r.json()["operation"]
        self.assertEqual(self.ctl_json("operation", op)["state"], "queued")
        return iid, op

    def test_fail(self):
        iid, op = self.provision_stuck()
        # Without --yes: refused, nothing written.
        before = self.records_snapshot()
        status, out, err = self.ctl("fail", op, "--description", "Stuck; failed by ops.")
        self.assertEqual(status, 2, out + err)
        self.assertIn("--yes", err)
        self.assertEqual(self.records_snapshot(), before)
        self.assertEqual(self.ctl_json("operation", op)["state"], "queued")
        # The instance is locked by the operation.
        row = self.ctl_json("instances")[0]
        self.assertEqual((row["instance_id"], row["lock_x"]), (iid, op))

        status, out, err = self.ctl("--json", "fail", op, "--description",
                                    "Stuck; failed by ops.", "--yes")
        self.assertEqual(status, 0, out + err)
        self.assertEqual(json.loads(out), {"result": "failed", "operation_id": op,
                                           "previous_state": "queued",
                                           "description": "Stuck; failed by ops."})

        body = self.wait_ended(self.client, iid)
        self.assertEqual((body["state"], body["description"]), ("failed", "Stuck; failed by ops."))
        doc = self.ctl_json("operation", op)
        self.assertEqual(doc["state"], "failed")
        self.assertEqual([e["event"] for e in doc["history"]], ["failed_by_operator"])
        row = self.ctl_json("instances")[0]
        self.assertEqual(row["state"], "failed")
        self.assertNotIn("lock_x", row)
        self.assertEqual(self.ctl_json("stats")["operations"]["unfinished"], 0)

        # The lock is free: a new operation on the instance is accepted.
        r = self.client.request("PUT", ipath(iid, incomplete=True), instance_body())
        self.assertEqual(r.status, 202, r.body)
        self.assertNotEqual(r.json()["operation"], op)

        # Failing it again: nothing to do.
        status, out, err = self.ctl("fail", op, "--yes")
        self.assertEqual(status, 3, out + err)
        self.assertIn("already finished (failed)", err)

    def test_fail_text_and_default_description(self):
        iid, op = self.provision_stuck()
        status, out, err = self.ctl("fail", op, "--yes")
        self.assertEqual(status, 0, out + err)
        self.assertIn("operation %s (provision of instance %s) was queued" % (op, iid), out)
        body = self.wait_ended(self.client, iid)
        self.assertEqual((body["state"], body["description"]), ("failed", "Failed by an operator."))

    def test_resend(self):
        iid, op = self.provision_stuck()
        status, out, err = self.ctl("resend", op)
        self.assertEqual(status, 2, out + err)
        self.assertIn("--yes", err)
        self.assertNotIn("resent_by_operator",
                         [e["event"] for e in self.ctl_json("operation", op)["history"]])

        status, out, err = self.ctl("resend", op, "--yes")
        self.assertEqual(status, 0, out + err)
        self.assertIn("operation %s (provision of instance %s) was queued" % (op, iid), out)
        doc = self.ctl_json("operation", op)
        self.assertEqual(doc["state"], "queued")
        self.assertEqual(doc["claims"], 0)
        self.assertEqual([e["event"] for e in doc["history"]], ["resent_by_operator"])
        self.assertEqual(self.ctl_json("stats")["operations"]["overdue"], 1)

        # A worker arrives: the operation runs and succeeds.
        self.stack.start_worker()
        self.assertEqual(self.wait_ended(self.client, iid)["state"], "succeeded")
        doc = self.ctl_json("operation", op)
        events = [e["event"] for e in doc["history"]]
        self.assertEqual(events[0], "resent_by_operator")
        self.assertIn("claimed", events)
        self.assertEqual(events[-1], "succeeded")
        self.assertEqual(self.ctl_json("instances")[0]["state"], "provisioned")

        status, out, err = self.ctl("--json", "resend", op, "--yes")
        self.assertEqual(status, 3, out + err)
        self.assertEqual(json.loads(out)["result"], "already_finished")


class TestCtlTenants(CtlTestCase):
    """stats' busiest tenants: a gateway without workers holds its organizations' provisions
    queued; beside them, operations written as workers and the recovery loop leave them
    (running, waiting in the queue as before polls were per tenant, and waiting in a tenant's
    polls: "<ns>:polls:<tenant>", indexed by "<ns>:poll_tenants"), all due an hour from now so
    that the gateway's recovery loop leaves them alone."""

    def setUp(self):
        self.start_gateway_alone()

    def provision(self, org):
        body = instance_body()
        body["organization_guid"] = org
        r = self.client.request("PUT", ipath(new_id(), incomplete=True), body)
        self.assertEqual(r.status, 202, r.body)

    def write_op(self, state, tenant, queue=True, polls=False):
        """An operation in state, of tenant (None: none recorded): in the queue and/or in its
        tenant's polls."""
        redis, op = self.stack.redis, new_id().replace("-", "")
        later = int(time.time() * 1000) + 3600 * 1000
        fields = ["state", state, "kind", "provision"] + (["tenant", tenant] if tenant else [])
        redis.command("HSET", "%s:op:%s" % (NAMESPACE, op), *fields)
        if queue:
            redis.command("ZADD", NAMESPACE + ":queue", later, op)
        if polls:
            redis.command("ZADD", "%s:polls:%s" % (NAMESPACE, tenant), later, op)
            redis.command("ZADD", NAMESPACE + ":poll_tenants", later, tenant)
        return op

    def test_busiest_tenants(self):
        for org in ("org-a", "org-a", "org-a", "org-b"):
            self.provision(org)
        for _ in range(2):
            self.write_op("running", "cf/org-run")
        self.write_op("waiting", "cf/org-wait")  # in the queue alone: before polls per tenant
        self.write_op("waiting", "cf/org-wait", polls=True)  # both: counted once
        self.write_op("waiting", "cf/org-wait", queue=False, polls=True)
        for _ in range(4):
            self.write_op("waiting", "k8s/ns-1", queue=False, polls=True)
        self.write_op("queued", None)  # begun before operations recorded their tenant
        self.write_op("succeeded", "cf/org-done")  # ended: not in progress
        self.stack.redis.command("ZADD", NAMESPACE + ":queue", int(time.time() * 1000) + 3600000,
                                 "no-such-operation")

        tenants = self.ctl_json("stats", "--top", "3")["tenants"]
        # Read: the polls' 2 tenants, then the queue's 11 members.
        self.assertEqual((tenants["with_work"], tenants["complete"], tenants["read"]),
                         (6, True, 13))

        def row(tenant, queued, running, waiting):
            return {"tenant": tenant, "queued": queued, "running": running, "waiting": waiting,
                    "total": queued + running + waiting}
        busiest = [row("k8s/ns-1", 0, 0, 4), row("cf/org-wait", 0, 0, 3),
                   row("default/org-a", 3, 0, 0)]
        self.assertEqual(tenants["top"], busiest)
        everyone = busiest + [row("cf/org-run", 0, 2, 0), row(None, 1, 0, 0),
                              row("default/org-b", 1, 0, 0)]
        self.assertEqual(self.ctl_json("stats", "--top", "0")["tenants"]["top"], everyone)

        out = self.ctl_ok("stats")
        self.assertRegex(out, r"(?m)^tenants +6 with operations in progress$")
        table = out.split("\n\n", 1)[1].splitlines()
        self.assertEqual(table[0].split(), ["TENANT", "QUEUED", "RUNNING", "WAITING", "TOTAL"])
        self.assertEqual([line.split() for line in table[1:]],
                         [["k8s/ns-1", "0", "0", "4", "4"], ["cf/org-wait", "0", "0", "3", "3"],
                          ["default/org-a", "3", "0", "0", "3"], ["cf/org-run", "0", "2", "0", "2"],
                          ["-", "1", "0", "0", "1"], ["default/org-b", "1", "0", "0", "1"]])
        self.assertEqual(len(self.ctl_ok("stats", "--top=1").split("\n\n", 1)[1].splitlines()), 2)

    def test_a_waiting_operation_counts_once(self):
        """A worker's real wait: the operation waits in its tenant's polls and, for gateways of
        the previous release, in the queue too; stats counts it once, as waiting."""
        self.stack.start_worker()
        body = instance_body(plan=STEPS_LONG)
        body["organization_guid"] = "org-w"
        r = self.client.request("PUT", ipath(new_id(), incomplete=True), body)
        self.assertEqual(r.status, 202, r.body)
        op = r.json()["operation"]
        harness.wait_until(lambda: self.ctl_json("operation", op)["state"] == "waiting",
                           OP_TIMEOUT_S, "the operation to wait for its next step")
        redis = self.stack.redis
        self.assertIsNotNone(redis.command("ZSCORE", NAMESPACE + ":polls:default/org-w", op))
        self.assertIsNotNone(redis.command("ZSCORE", NAMESPACE + ":queue", op))
        tenants = self.ctl_json("stats")["tenants"]
        self.assertEqual((tenants["with_work"], tenants["top"]),
                         (1, [{"tenant": "default/org-w", "queued": 0, "running": 0,
                               "waiting": 1, "total": 1}]))

    def test_stops_after_100000_entries(self):
        """A queue of 100,001 members: the count stops at 100,000 and says it is partial."""
        # Ten calls of 10,000 and one more: each short, even on a busy machine.
        for first in range(1, 100002, 10000):
            self.stack.redis.command(
                "EVAL", "for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do "
                "redis.call('ZADD', KEYS[1], i, 'op-' .. i) end", 1, "ctl-many:queue", first,
                min(first + 9999, 100001))
        tenants = self.ctl_json("--namespace", "ctl-many", "stats")["tenants"]
        self.assertEqual(tenants, {"with_work": 0, "complete": False, "read": 100000, "top": []})
        out = self.ctl_ok("--namespace", "ctl-many", "stats")
        self.assertRegex(out, r"(?m)^tenants +0 with operations in progress \(partial: counting "
                         r"stopped after 100000 entries\)$")


class TestCtlOutdated(CtlTestCase):
    """instances --outdated and stats' count (issue 43): once a plan's maintenance_info moved on
    in the catalog, exactly the instances behind it are listed (and one made without a version);
    those upgraded, gone, or of a plan without maintenance_info are not."""

    PLAN_V1 = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f05"  # catalog-tests.json's "maintained", 1.2.0
    SERVICE = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7e01"
    PLAIN = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f01"  # "fast": no maintenance_info

    def setUp(self):
        tests_catalog = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-tests.json")
        self.dir = tempfile.mkdtemp(prefix="osbq-outdated-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        with open(tests_catalog) as f:
            doc = json.load(f)
        for plan in doc["services"][0]["plans"]:
            if plan["id"] == self.PLAN_V1:
                plan["maintenance_info"] = {"version": "2.0.0", "description": "moved on"}
        self.moved_on = os.path.join(self.dir, "catalog.json")
        with open(self.moved_on, "w") as f:
            json.dump(doc, f)
        self.stack = harness.Stack(catalog=tests_catalog, extra_env=ENV)
        self.addCleanup(self.stack.stop)
        self.gateway, _ = harness.start_connected(self.stack, 1)

    def provision(self, plan, version=None):
        iid = new_id()
        body = harness.provision_body(self.SERVICE, plan)
        if version:
            body["maintenance_info"] = {"version": version}
        c = self.stack.client(self.gateway)
        self.addCleanup(c.close)
        r = c.request("PUT", ipath(iid), body)
        self.assertEqual(r.status, 201, r.body)
        return iid

    def test_outdated_instances_once_the_plan_moved_on(self):
        behind = [self.provision(self.PLAN_V1, "1.2.0"), self.provision(self.PLAN_V1)]
        upgraded = self.provision(self.PLAN_V1, "1.2.0")
        plain = self.provision(self.PLAIN)
        gone = self.provision(self.PLAN_V1, "1.2.0")
        self.assertEqual(self.ctl_ok("purge", "instance", gone, "--yes").count("purged"), 1)
        # As if upgraded under the moved-on catalog (the version its update would record),
        # written by hand: the count of live records does not see it (decision 0056), so stats
        # walks here (--walk); test_record_counts checks the count's outdated figures.
        self.stack.redis.command("HSET", "%s:instance:%s" % (NAMESPACE, upgraded),
                                 "maintenance_version", "2.0.0")
        # Against the catalog the gateway serves, only the instance made without a version is
        # behind (as platforms' upgrade tools count one).
        env = self.ctl_env(OSBQ_CATALOG=self.stack.catalog)
        status, out, err = self.ctl("--json", "instances", "--outdated", env=env)
        self.assertEqual((status, [r["instance_id"] for r in json.loads(out)]), (0, behind[1:]),
                         err)
        status, out, err = self.ctl("--json", "stats", "--walk", env=env)
        self.assertEqual((status, json.loads(out)["instances"]["outdated"]), (0, 1), err)
        env = self.ctl_env(OSBQ_CATALOG=self.moved_on)
        status, out, err = self.ctl("--json", "instances", "--outdated", env=env)
        self.assertEqual(status, 0, err)
        self.assertEqual(sorted(r["instance_id"] for r in json.loads(out)), sorted(behind))
        status, out, err = self.ctl("--json", "stats", "--walk", env=env)
        self.assertEqual((status, json.loads(out)["instances"]["outdated"]), (0, 2), err)
        status, out, err = self.ctl("stats", "--walk", env=env)
        self.assertIn("2 outdated", out)
        self.assertNotIn(plain, json.dumps(behind))
        # Without a catalog to compare with, --outdated says so.
        status, _, err = self.ctl("instances", "--outdated",
                                  env=self.ctl_env(OSBQ_CATALOG=os.path.join(self.dir, "none")))
        self.assertEqual(status, 1, err)
        self.assertIn("OSBQ_CATALOG", err)


class TestCtlStreaming(CtlTestCase):
    """instances --limit 0 streams (issue 43): every record, as the walk finds it, in memory a
    chunk of rows at a time whatever the count; a valid JSON array, a table with one header."""

    COUNT = 2500

    def setUp(self):
        self.start_gateway_alone()
        # Records as a provision leaves them, written in one script call.
        self.stack.redis.command(
            "EVAL", "for i = 1, tonumber(ARGV[1]) do "
            "redis.call('HSET', KEYS[1] .. i, 'instance_id', 'i-' .. i, 'state', "
            "i % 5 == 0 and 'failed' or 'provisioned', 'service_id', 's', 'plan_id', 'p', "
            "'created_ms', tostring(1700000000000 + i)) end", 1, NAMESPACE + ":instance:i-",
            self.COUNT)

    def test_every_record_streamed(self):
        ids = [r["instance_id"] for r in self.ctl_json("instances", "--limit", "0")]
        self.assertEqual(sorted(ids), sorted("i-%d" % i for i in range(1, self.COUNT + 1)))
        failed = self.ctl_json("instances", "--limit", "0", "--state", "failed")
        self.assertEqual(len(failed), self.COUNT // 5)
        self.assertEqual(self.ctl_json("instances", "--limit", "0", "--state", "gone"), [])
        lines = self.ctl_ok("instances", "--limit", "0").splitlines()
        self.assertEqual(len(lines), self.COUNT + 1)
        self.assertTrue(lines[0].startswith("ID "))
        self.assertEqual(sum(1 for line in lines if line.startswith("ID ")), 1)


class TestCtlRedisDown(CtlTestCase):
    """No Redis: exit 1 at once, naming the cause."""

    def test_redis_unreachable(self):
        env = self.ctl_env(OSBQ_REDIS_URL="redis://127.0.0.1:%d/0" % harness.free_port(),
                           OSBQ_REDIS_TIMEOUT_MS="500")
        for args in (("instances",), ("--json", "stats"), ("operation", "x"),
                     ("fail", "x", "--yes"), ("gateways",)):
            with self.subTest(args=args):
                started = time.monotonic()
                status, out, err = self.ctl(*args, env=env)
                # Generous for a loaded machine: it must not wait for retries or long timeouts.
                self.assertLess(time.monotonic() - started, 8.0)
                self.assertEqual(status, 1, out + err)
                self.assertEqual(out, "")
                self.assertIn("cannot reach Redis at 127.0.0.1:", err)
                self.assertIn("OSBQ_REDIS_URL", err)

    def test_bad_configuration(self):
        env = self.ctl_env(OSBQ_REDIS_URL="http://127.0.0.1:1/")
        status, out, err = self.ctl("instances", env=env)
        self.assertEqual(status, 1, out + err)
        self.assertIn("OSBQ_REDIS_URL", err)


class TestCtlBusCert(CtlTestCase):
    """bus-cert writes a new key pair as czmq certificates, without Redis, and never
    overwrites one."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="osbq-ctl-cert-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_new_pair(self):
        path = os.path.join(self.dir, "worker-1")
        # No OSBQ_REDIS_URL reachable: bus-cert does not need Redis.
        env = self.ctl_env(OSBQ_REDIS_URL="redis://127.0.0.1:%d/0" % harness.free_port())
        status, out, err = self.ctl("--json", "bus-cert", path, env=env)
        self.assertEqual(status, 0, out + err)
        doc = json.loads(out)
        self.assertEqual(doc["public_file"], path)
        self.assertEqual(doc["secret_file"], path + "_secret")
        self.assertEqual(len(doc["public_key"]), 40)
        self.assertEqual(stat.S_IMODE(os.stat(path + "_secret").st_mode), 0o600)
        with open(path) as f:
            public = f.read()
        with open(path + "_secret") as f:
            secret = f.read()
        self.assertIn('public-key = "%s"' % doc["public_key"], public)
        self.assertNotIn("secret-key", public)
        self.assertIn('public-key = "%s"' % doc["public_key"], secret)
        self.assertRegex(secret, r'secret-key = ".{40}"')
        # Text form; another pair has another key.
        status, out, err = self.ctl("bus-cert", os.path.join(self.dir, "worker-2"), env=env)
        self.assertEqual(status, 0, out + err)
        self.assertRegex(out, r"public key  \S{40}\n")
        self.assertNotIn(doc["public_key"], out)

    def test_refuses_to_overwrite_and_bad_command_lines(self):
        path = os.path.join(self.dir, "gateways")
        self.ctl_ok("bus-cert", path)
        with open(path + "_secret") as f:
            before = f.read()
        status, out, err = self.ctl("bus-cert", path)
        self.assertEqual(status, 1, out + err)
        self.assertIn("exists already", err)
        with open(path + "_secret") as f:
            self.assertEqual(f.read(), before)
        status, out, err = self.ctl("bus-cert")
        self.assertEqual(status, 2, out + err)
        self.assertIn("bus-cert needs a PATH", err)
        status, out, err = self.ctl("bus-cert", path + "-a", path + "-b")
        self.assertEqual(status, 2, out + err)
        status, out, err = self.ctl("bus-cert", os.path.join(self.dir, "missing", "dir", "x"))
        self.assertEqual(status, 1, out + err)
        self.assertIn("cannot write", err)


if __name__ == "__main__":
    unittest.main()
