"""Service instances end to end against real processes: redis-server, two gateways and two
workers on loopback, the sim backend, tests/data/catalog-tests.json.

Every row of docs/decisions/0003-instance-operations.md has a test named after it. Each test's
docstring names the spec section (../shared/spec/osb-latest-spec.md) it checks. Every response
with a status outside 2xx is checked to be a JSON object with a non-empty description
(Service Broker Errors), whatever the test."""

import json
import os
import signal
import threading
import time
import unittest
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor

import harness

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-tests.json")

SERVICE = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7e01"          # instances_retrievable
HIDDEN_SERVICE = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7e02"   # not instances_retrievable
FAST = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f01"             # 0 ms, plan_updateable
FAST_OTHER = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f02"       # 0 ms, plan_updateable
SLOW = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f03"             # 1.5 s each, plan_updateable
ASYNC_ONLY = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f04"       # async_required, 300 ms
MAINTAINED = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f05"       # maintenance_info 1.2.0
DASHBOARD = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f06"        # sim "dashboard": true
FIXED = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f07"            # plan_updateable false
SYNC_TIMEOUT = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f08"     # sync_timeout_ms 500, 3 s provision
SLOW_CHANGE = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f09"      # 0 ms provision, 1.5 s update/deprov.
TEMPLATED = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f10"        # dashboard_url_template
HIDDEN = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f21"           # plan of HIDDEN_SERVICE

PLAN_SERVICE = {HIDDEN: HIDDEN_SERVICE}

NAMESPACE = "osbq"
REGISTRY_KEY = NAMESPACE + ":gateways"

STATES = ("in progress", "succeeded", "failed")

# The exact texts Kubernetes' OSB client needs next to the codes (issue 3).
CODE_DESCRIPTIONS = {
    "AsyncRequired":
        "This service plan requires client support for asynchronous service operations.",
    "ConcurrencyError":
        "The Service Broker does not support concurrent requests that mutate the same resource.",
}

RETRY_AFTER_MIN_S = 1
RETRY_AFTER_MAX_S = 7

# Bounds of every wait (seconds). Operations take at most 3 s in this catalog.
OP_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0


def new_id():
    return str(uuid.uuid4())


def body_for(plan, **extra):
    """A provision body as current platforms send it: context plus the deprecated guids."""
    body = {"service_id": PLAN_SERVICE.get(plan, SERVICE), "plan_id": plan,
            "context": {"platform": "osbq-tests", "instance_name": "it"},
            "organization_guid": "org-guid-1", "space_guid": "space-guid-1"}
    for k, v in extra.items():
        if v is None:
            body.pop(k, None)
        else:
            body[k] = v
    return body


class CheckedClient(harness.Client):
    """A client that records every non-2xx answer whose body is not a JSON object with a
    non-empty description (Service Broker Errors); the test fails on any in tearDown."""

    def __init__(self, port, username, password, api_version, violations):
        super().__init__(port, username, password, api_version)
        self.violations = violations

    def request(self, method, path, body=None, headers=None, auth=True, version=True):
        r = super().request(method, path, body=body, headers=headers, auth=auth, version=version)
        if not 200 <= r.status < 300:
            what = "%s %s (API %s) -> %d %r" % (method, path, self.api_version, r.status, r.body)
            try:
                parsed = json.loads(r.body)
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                self.violations.append(what + ": body is not a JSON object")
            elif not isinstance(parsed.get("description"), str) or not parsed["description"]:
                self.violations.append(what + ": no non-empty description")
            if r.header("Content-Type") != "application/json":
                self.violations.append(what + ": Content-Type is not application/json")
        return r


class InstanceTestCase(unittest.TestCase):
    """One stack per class: redis-server, 2 gateways, 2 workers."""

    WORKER_ENV = {}
    GATEWAYS = 2
    WORKERS = 2

    @classmethod
    def setUpClass(cls):
        cls.stack = harness.Stack(catalog=CATALOG, extra_env={
            "OSBQ_RETRY_AFTER_MIN_S": str(RETRY_AFTER_MIN_S),
            "OSBQ_RETRY_AFTER_MAX_S": str(RETRY_AFTER_MAX_S),
        })
        try:
            cls.gateways, cls.workers = harness.start_cluster(
                cls.stack, cls.GATEWAYS, cls.WORKERS, **cls.WORKER_ENV)
            harness.wait_workers_connected(cls.gateways, cls.WORKERS, CONNECT_TIMEOUT_S)
            cls.warm_up()
        except BaseException:
            cls.stack.stop()
            raise

    @classmethod
    def warm_up(cls):
        """An async provision through each gateway, polled until it succeeded."""
        for gateway in cls.gateways:
            c = cls.stack.client(gateway)
            try:
                iid = new_id()
                r = c.request("PUT", "/v2/service_instances/%s?accepts_incomplete=true" % iid,
                              body_for(FAST))
                if r.status != 202:
                    raise AssertionError("warm-up provision: %d %r" % (r.status, r.body))

                def done():
                    got = c.request("GET", "/v2/service_instances/%s/last_operation" % iid)
                    return got.status == 200 and got.json().get("state") == "succeeded"

                harness.wait_until(done, CONNECT_TIMEOUT_S, "a warm-up provision to succeed")
            finally:
                c.close()

    @classmethod
    def tearDownClass(cls):
        # Let operations still running end, so workers stop without cancelling anything.
        deadline = time.monotonic() + OP_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                if not cls.stack.redis.command("ZCARD", NAMESPACE + ":queue"):
                    break
            except (OSError, RuntimeError):
                break
            time.sleep(0.05)
        cls.stack.stop()

    def setUp(self):
        self.violations = []
        self.clients = {}
        self.client_lock = threading.Lock()

    def tearDown(self):
        for c in self.clients.values():
            c.close()
        self.assertEqual(self.violations, [], "error bodies without a JSON description")

    # ---- clients and requests ----

    def client(self, gw=0, version="2.17"):
        """This thread's client for gateway gw speaking API version."""
        key = (gw, version, threading.get_ident())
        with self.client_lock:
            if key not in self.clients:
                self.clients[key] = CheckedClient(self.gateways[gw].port, self.stack.username,
                                                  self.stack.password, version, self.violations)
            return self.clients[key]

    @staticmethod
    def path(iid, suffix="", **query):
        p = "/v2/service_instances/" + urllib.parse.quote(iid, safe="") + suffix
        q = [(k, v) for k, v in query.items() if v is not None]
        return p + ("?" + urllib.parse.urlencode(q) if q else "")

    @staticmethod
    def incomplete(value):
        if value is None:
            return None
        return "true" if value is True else "false" if value is False else value

    def put(self, iid, body, accepts_incomplete=None, gw=0, version="2.17"):
        return self.client(gw, version).request(
            "PUT", self.path(iid, accepts_incomplete=self.incomplete(accepts_incomplete)), body)

    def patch(self, iid, body, accepts_incomplete=None, gw=0, version="2.17"):
        return self.client(gw, version).request(
            "PATCH", self.path(iid, accepts_incomplete=self.incomplete(accepts_incomplete)), body)

    def delete(self, iid, plan=FAST, accepts_incomplete=None, gw=0, version="2.17",
               service_id=None, plan_id=None):
        return self.client(gw, version).request("DELETE", self.path(
            iid, accepts_incomplete=self.incomplete(accepts_incomplete),
            service_id=service_id or PLAN_SERVICE.get(plan, SERVICE), plan_id=plan_id or plan))

    def fetch(self, iid, gw=0, version="2.17"):
        return self.client(gw, version).request("GET", self.path(iid))

    def last_operation(self, iid, operation=None, gw=0, version="2.17"):
        """GET last_operation; a 200 body is checked against the spec's Body table."""
        r = self.client(gw, version).request(
            "GET", self.path(iid, "/last_operation", operation=operation))
        if r.status == 200:
            body = r.json()
            self.assertIsInstance(body, dict)
            self.assertIn(body.get("state"), STATES, r.body)
            if "description" in body:
                self.assertIsInstance(body["description"], str)
                self.assertNotEqual(body["description"], "")
            if body["state"] != "in progress":
                self.assertIsNone(r.header("Retry-After"), "Retry-After on a finished operation")
        return r

    # ---- assertions ----

    def assertError(self, r, status, error=None):
        """A non-2xx answer: status, JSON object, non-empty description, the error code."""
        self.assertEqual(r.status, status, r.body)
        self.assertEqual(r.header("Content-Type"), "application/json")
        body = r.json()
        self.assertIsInstance(body, dict, r.body)
        self.assertIsInstance(body.get("description"), str, r.body)
        self.assertNotEqual(body["description"], "")
        if error is not None:
            self.assertEqual(body.get("error"), error, r.body)
            if error in CODE_DESCRIPTIONS:
                self.assertEqual(body["description"], CODE_DESCRIPTIONS[error])
        return body

    def assertAccepted(self, r, with_operation=True):
        """202 with a non-empty operation (2.9+); returns it."""
        self.assertEqual(r.status, 202, r.body)
        body = r.json()
        self.assertIsInstance(body, dict)
        if not with_operation:
            self.assertNotIn("operation", body)
            return None
        op = body.get("operation")
        self.assertIsInstance(op, str, r.body)
        self.assertNotEqual(op, "")
        self.assertLessEqual(len(op), 10000)
        return op

    # ---- waits ----

    def wait_done(self, iid, operation=None, gw=0, version="2.17", timeout_s=OP_TIMEOUT_S):
        """Polls last_operation until the operation ended; returns the last response (200 with
        succeeded/failed, or 410 for a finished deprovision)."""
        deadline = time.monotonic() + timeout_s
        while True:
            r = self.last_operation(iid, operation, gw, version)
            if r.status == 410 or (r.status == 200 and r.json()["state"] != "in progress"):
                return r
            self.assertEqual(r.status, 200, r.body)
            if time.monotonic() > deadline:
                self.fail("operation %s of %s still in progress after %ss"
                          % (operation, iid, timeout_s))
            time.sleep(0.02)

    def wait_state(self, iid, state, operation=None, gw=0, version="2.17"):
        r = self.wait_done(iid, operation, gw, version)
        self.assertEqual(r.status, 200, r.body)
        body = r.json()
        self.assertEqual(body["state"], state, r.body)
        return body

    def wait_gone(self, iid, operation=None, gw=0):
        r = self.wait_done(iid, operation, gw)
        self.assertError(r, 410)

    def wait_quiet(self):
        """Waits until no operation is queued or running."""
        harness.wait_until(lambda: not self.stack.redis.command("ZCARD", NAMESPACE + ":queue"),
                           OP_TIMEOUT_S, "every operation to end")

    # ---- shortcuts ----

    def provisioned(self, plan=FAST, iid=None, gw=0, **extra):
        """A synchronously provisioned instance; returns its id."""
        iid = iid or new_id()
        r = self.put(iid, body_for(plan, **extra), gw=gw)
        self.assertEqual(r.status, 201, r.body)
        return iid

    def provision_async(self, plan, iid=None, gw=0, **extra):
        """An accepted async provision; returns (id, operation)."""
        iid = iid or new_id()
        op = self.assertAccepted(self.put(iid, body_for(plan, **extra), True, gw))
        return iid, op

    def ops_of(self, iid):
        """The operation records of an instance in Redis (keys ns:op:<id>)."""
        ops = []
        for key in self.stack.redis.keys(NAMESPACE + ":op:*"):
            h = harness.redis_hash(self.stack.redis, key)
            if h.get("instance") == iid:
                ops.append(h)
        return ops

    def op_record(self, op):
        return harness.redis_hash(self.stack.redis, NAMESPACE + ":op:" + op)

    def assertNothingWritten(self, request):
        """Runs request() and checks Redis holds exactly what it held before (Service Broker
        Errors: a 4xx leaves the broker's resources unchanged; 0003: 400, nothing written)."""
        self.wait_quiet()
        before_keys = set(self.stack.redis.keys()) - {REGISTRY_KEY}
        before = harness.redis_snapshot(self.stack.redis, ignore={REGISTRY_KEY})
        r = request()
        after_keys = set(self.stack.redis.keys()) - {REGISTRY_KEY}
        self.assertEqual(after_keys, before_keys, "keys changed by a refused request")
        self.assertEqual(harness.redis_snapshot(self.stack.redis, ignore={REGISTRY_KEY}), before,
                         "Redis content changed by a refused request")
        return r


# =====================================================================================
class RequestValidation(InstanceTestCase):
    """0003 "Validation (400, nothing written)": every refused request leaves Redis as it was."""

    def refused(self, request, status=400, error=None):
        r = self.assertNothingWritten(request)
        self.assertError(r, status, error)
        return r

    def test_provision_400_body_not_a_json_object(self):
        """Provisioning: 400 MUST be returned if the request is malformed. Content Type: an
        unprocessable body SHOULD get 400."""
        for raw in ("", "not json", "[]", "[1, 2]", '"text"', "42", "null", '{"service_id": '):
            iid = new_id()
            for incomplete in (None, True):
                self.refused(lambda: self.client().request(
                    "PUT", self.path(iid, accepts_incomplete=self.incomplete(incomplete)), raw,
                    headers={"Content-Type": "application/json"}))
            self.assertError(self.last_operation(iid), 404)

    def test_provision_400_service_id_or_plan_id_missing_or_invalid(self):
        """Provisioning, Body: service_id* and plan_id* are required; plan_id MUST be the ID of
        a plan of the requested service."""
        bodies = [
            body_for(FAST, service_id=None),
            body_for(FAST, plan_id=None),
            body_for(FAST, service_id=""),
            body_for(FAST, plan_id=""),
            body_for(FAST, service_id=7),
            body_for(FAST, plan_id=["x"]),
            body_for(FAST, plan_id="no-such-plan"),
            body_for(FAST, service_id="no-such-service"),
            body_for(HIDDEN, service_id=SERVICE),     # a plan of the other service
            body_for(FAST, service_id=HIDDEN_SERVICE),
        ]
        for body in bodies:
            iid = new_id()
            self.refused(lambda: self.put(iid, body, True))
            self.refused(lambda: self.put(iid, body))

    def test_provision_400_id_with_control_characters_nul_or_too_long(self):
        """Provisioning, Parameters: instance_id (the spec recommends URL-safe ids): an id
        holding a control character, an encoded NUL (which would otherwise cut it short) or
        more than 255 bytes is refused with 400, and nothing is written."""
        for iid in ("ab\x00cd", "\x00", "a\nb", "tab\tx", "x" * 256):
            self.refused(lambda: self.put(iid, body_for(FAST), True))

    def test_provision_400_parameters_or_context_not_objects(self):
        """Provisioning, Body: parameters and context are objects."""
        for field in ("parameters", "context"):
            for value in ([], "x", 3, True, ["a"]):
                iid = new_id()
                self.refused(lambda: self.put(iid, body_for(FAST, **{field: value}), True))

    def test_provision_400_organization_or_space_guid_missing_without_context_or_empty(self):
        """Provisioning, Body: organization_guid* and space_guid* MUST be non-empty strings;
        0003: required when context is absent."""
        for extra in ({"context": None, "organization_guid": None},
                      {"context": None, "space_guid": None},
                      {"context": None, "organization_guid": None, "space_guid": None},
                      {"organization_guid": ""}, {"space_guid": ""},
                      {"organization_guid": 5}, {"space_guid": {}}):
            iid = new_id()
            self.refused(lambda: self.put(iid, body_for(FAST, **extra), True))
        # Either alone is enough.
        self.provisioned(FAST, organization_guid=None, space_guid=None)
        self.provisioned(FAST, context=None)

    def test_provision_400_maintenance_info_malformed(self):
        """Provisioning, Body: maintenance_info is a Maintenance Info object with a string
        version."""
        for value in ("1.2.0", [], {}, {"version": 1}, {"version": ""}, {"description": "x"}):
            iid = new_id()
            self.refused(lambda: self.put(iid, body_for(MAINTAINED, maintenance_info=value)))

    def test_update_400_malformed_body_or_missing_service_id(self):
        """Updating a Service Instance: 400 MUST be returned if the request is malformed or
        missing mandatory data (service_id*)."""
        iid = self.provisioned(FAST, parameters={"v": 1})
        for raw in ("", "junk", "[]", '"x"'):
            self.refused(lambda: self.client().request(
                "PATCH", self.path(iid, accepts_incomplete="true"), raw,
                headers={"Content-Type": "application/json"}))
        for body in ({"plan_id": FAST}, {"service_id": ""}, {"service_id": 1},
                     {"service_id": SERVICE, "parameters": []},
                     {"service_id": SERVICE, "context": "x"},
                     {"service_id": SERVICE, "previous_values": 3},
                     {"service_id": SERVICE, "maintenance_info": {"version": 2}}):
            self.refused(lambda: self.patch(iid, body, True))
            self.refused(lambda: self.patch(iid, body))
        self.assertEqual(self.fetch(iid).json()["parameters"], {"v": 1})

    def test_update_400_service_or_plan_not_of_the_instance(self):
        """Updating a Service Instance: service_id MUST be the ID of the instance's Service
        Offering, plan_id a plan of it (0003: 400)."""
        iid = self.provisioned(FAST, parameters={"v": 1})
        for body in ({"service_id": HIDDEN_SERVICE},
                     {"service_id": HIDDEN_SERVICE, "plan_id": HIDDEN},
                     {"service_id": SERVICE, "plan_id": HIDDEN},
                     {"service_id": SERVICE, "plan_id": "no-such-plan"},
                     {"service_id": "no-such-service"}):
            self.refused(lambda: self.patch(iid, body, True))
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["plan_id"], fetched["parameters"]), (FAST, {"v": 1}))

    def test_deprovision_400_without_service_id_or_plan_id(self):
        """Deprovisioning, Parameters: service_id* and plan_id* are REQUIRED; 400 when
        missing."""
        iid = self.provisioned(FAST)
        base = self.path(iid)
        for query in ("", "?service_id=%s" % SERVICE, "?plan_id=%s" % FAST,
                      "?service_id=&plan_id=%s" % FAST, "?service_id=%s&plan_id=" % SERVICE,
                      "?accepts_incomplete=true&plan_id=%s" % FAST):
            self.refused(lambda: self.client().request("DELETE", base + query))
        self.assertEqual(self.fetch(iid).status, 200)

    def test_deprovision_400_service_or_plan_not_the_instances(self):
        """Deprovisioning, Parameters: service_id and plan_id MUST be the ids of the instance's
        offering and plan; 0003: 400 when they are not (also after a plan change)."""
        iid = self.provisioned(FAST)
        for service_id, plan_id in ((SERVICE, FAST_OTHER), (SERVICE, SLOW),
                                    (HIDDEN_SERVICE, HIDDEN), (HIDDEN_SERVICE, FAST),
                                    (SERVICE, "no-such-plan")):
            for incomplete in (None, True):
                self.refused(lambda: self.delete(iid, accepts_incomplete=incomplete,
                                                 service_id=service_id, plan_id=plan_id))
        r = self.patch(iid, {"service_id": SERVICE, "plan_id": FAST_OTHER})
        self.assertEqual(r.status, 200, r.body)
        self.refused(lambda: self.delete(iid, FAST))
        r = self.delete(iid, FAST_OTHER)
        self.assertEqual(r.status, 200, r.body)

    def test_last_operation_400_operation_of_another_instance_writes_nothing(self):
        """Polling Last Operation: 400 for invalid data (0003: an operation that is not one of
        this instance's); operation, if present, MUST be a non-empty string."""
        a, op_a = self.provision_async(FAST)
        b, op_b = self.provision_async(FAST)
        self.wait_state(a, "succeeded", op_a)
        self.wait_state(b, "succeeded", op_b)
        self.refused(lambda: self.last_operation(a, op_b))
        self.refused(lambda: self.client().request("GET", self.path(a, "/last_operation") +
                                                   "?operation="))


# =====================================================================================
class Provisioning(InstanceTestCase):
    """0003, Provision: the status table in its order."""

    def test_provision_422_async_required(self):
        """Provisioning, Parameters / Asynchronous Operations: a plan that can only be
        provisioned asynchronously MUST reject a request without accepts_incomplete=true with
        422 AsyncRequired."""
        iid = new_id()
        for incomplete in (None, False, "False", "1", "yes"):
            self.assertError(self.put(iid, body_for(ASYNC_ONLY), incomplete), 422, "AsyncRequired")
        self.assertError(self.last_operation(iid), 404)
        op = self.assertAccepted(self.put(iid, body_for(ASYNC_ONLY), True))
        self.wait_state(iid, "succeeded", op)

    def test_provision_422_maintenance_info_conflict(self):
        """Provisioning, 422: MUST be returned if maintenance_info.version does not match the
        plan's, with error MaintenanceInfoConflict (0003: or the plan has none)."""
        iid = new_id()
        for plan, version in ((MAINTAINED, "1.1.0"), (MAINTAINED, "1.2.1"), (FAST, "1.2.0")):
            for incomplete in (None, True):
                r = self.put(iid, body_for(plan, maintenance_info={"version": version}),
                             incomplete)
                self.assertError(r, 422, "MaintenanceInfoConflict")
        self.assertError(self.last_operation(iid), 404)
        r = self.put(iid, body_for(MAINTAINED, maintenance_info={"version": "1.2.0",
                                                                 "description": "ignored"}))
        self.assertEqual(r.status, 201, r.body)

    def test_provision_422_async_required_checked_before_maintenance_info_conflict(self):
        """0003 Provision: the cases apply "in this order": AsyncRequired comes before
        MaintenanceInfoConflict."""
        r = self.put(new_id(), body_for(ASYNC_ONLY, maintenance_info={"version": "9.9.9"}))
        self.assertError(r, 422, "AsyncRequired")
        r = self.put(new_id(), body_for(ASYNC_ONLY, maintenance_info={"version": "9.9.9"}), True)
        self.assertError(r, 422, "MaintenanceInfoConflict")

    def test_provision_new_id_sync_201(self):
        """Synchronous Operations: 201 Created for provision; Provisioning: 201 MUST be
        returned if the instance was provisioned as a result of this request."""
        iid = new_id()
        r = self.put(iid, body_for(FAST, parameters={"size": 3}))
        self.assertEqual(r.status, 201, r.body)
        self.assertIsInstance(r.json(), dict)
        self.assertEqual(self.last_operation(iid).json()["state"], "succeeded")
        self.assertEqual(self.fetch(iid).status, 200)

    def test_provision_new_id_async_202_operation(self):
        """Asynchronous Operations: with accepts_incomplete=true the broker MUST return 202;
        Provisioning, Body: operation, at most 10,000 characters, given back to last_operation."""
        iid = new_id()
        op = self.assertAccepted(self.put(iid, body_for(SLOW), True))
        first = self.last_operation(iid, op)
        self.assertEqual(first.status, 200)
        self.assertEqual(first.json()["state"], "in progress")
        self.wait_state(iid, "succeeded", op)
        self.assertEqual(len(self.ops_of(iid)), 1)

    def test_provision_dashboard_url_in_201_and_202(self):
        """Provisioning, Body: a broker that returns dashboard_url MUST return it with the
        initial response, even if provisioned asynchronously."""
        iid = new_id()
        r = self.put(iid, body_for(DASHBOARD))
        self.assertEqual(r.status, 201, r.body)
        self.assertIsInstance(r.json().get("dashboard_url"), str, r.body)
        self.assertIn(iid, r.json()["dashboard_url"])
        iid2 = new_id()
        r = self.put(iid2, body_for(DASHBOARD), True)
        op = self.assertAccepted(r)
        self.assertIsInstance(r.json().get("dashboard_url"), str, r.body)
        self.assertIn(iid2, r.json()["dashboard_url"])
        self.wait_state(iid2, "succeeded", op)
        self.assertEqual(self.fetch(iid2).json().get("dashboard_url"), r.json()["dashboard_url"])

    def test_provision_dashboard_url_from_plan_template(self):
        """Provisioning, Body: dashboard_url MUST contain enough information to identify the
        resource; 0003: decided on acceptance from the plan's dashboard_url_template, with the
        id percent-encoded. Ids holding ':' or '*' stay distinct instances (URL Properties)."""
        base = new_id()
        for iid, n in ((base, 1), (base + ":*", 2), ("it has spaces & %25 " + base, 3)):
            expected = ("https://dash.example.test/instances/%s/home"
                        % urllib.parse.quote(iid, safe=""))
            r = self.put(iid, body_for(TEMPLATED, parameters={"n": n}), True)
            op = self.assertAccepted(r)
            self.assertEqual(r.json().get("dashboard_url"), expected)
            self.wait_state(iid, "succeeded", op)
            r = self.put(iid, body_for(TEMPLATED, parameters={"n": n}))
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json().get("dashboard_url"), expected)
            fetched = self.fetch(iid).json()
            self.assertEqual((fetched.get("dashboard_url"), fetched["parameters"]),
                             (expected, {"n": n}))

    def test_provision_new_after_failed_provision(self):
        """0003 Provision, "new id (or an id whose provision failed ...)": a failed provision
        does not block its id; Orphan Mitigation: the platform may retry."""
        iid, op1 = self.provision_async(FAST, parameters={"sim_fail": True})
        self.wait_state(iid, "failed", op1)
        op2 = self.assertAccepted(self.put(iid, body_for(FAST_OTHER, parameters={"a": 1}), True))
        self.assertNotEqual(op2, op1)
        self.wait_state(iid, "succeeded", op2)
        self.assertEqual(self.wait_state(iid, "failed", op1)["state"], "failed")
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["plan_id"], fetched["parameters"]), (FAST_OTHER, {"a": 1}))

    def test_provision_new_after_deprovision(self):
        """0003 Provision, "new id (or an id ... that was deprovisioned)": a deprovisioned id
        can be provisioned again."""
        iid = self.provisioned(FAST)
        self.assertEqual(self.delete(iid, FAST).status, 200)
        r = self.put(iid, body_for(FAST_OTHER))
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(self.fetch(iid).json()["plan_id"], FAST_OTHER)

    def test_provision_identical_in_progress_202_same_operation(self):
        """Provisioning, 202: the operation string MUST match that returned for the original
        request; a re-sent PUT MUST return 202, not 200, while not fully provisioned."""
        iid, op = self.provision_async(SLOW, parameters={"k": "v"})
        for gw in (0, 1, 0):
            r = self.put(iid, body_for(SLOW, parameters={"k": "v"}), True, gw)
            self.assertEqual(self.assertAccepted(r), op)
        self.assertEqual(self.last_operation(iid, op, gw=1).json()["state"], "in progress")
        self.assertEqual(len(self.ops_of(iid)), 1)
        self.wait_state(iid, "succeeded", op)

    def test_provision_identical_in_progress_sync_waits_for_same_operation(self):
        """0003 Provision: same id, identical request, provision in progress, sync: waits for
        the same operation (Synchronous Operations: the answer means completion)."""
        iid, op = self.provision_async(SLOW)
        started = time.monotonic()
        r = self.put(iid, body_for(SLOW), gw=1)
        self.assertIn(r.status, (200, 201), r.body)
        self.assertGreater(time.monotonic() - started, 0.5, "answered before the provision ended")
        self.assertEqual(self.last_operation(iid, op).json()["state"], "succeeded")
        self.assertEqual(len(self.ops_of(iid)), 1)

    def test_provision_identical_after_success_200(self):
        """Provisioning, 200: SHOULD be returned if the instance already exists, is fully
        provisioned, and the requested parameters are identical."""
        iid = self.provisioned(FAST, parameters={"n": 1})
        for gw in (0, 1):
            for incomplete in (None, True):
                r = self.put(iid, body_for(FAST, parameters={"n": 1}), incomplete, gw)
                self.assertEqual(r.status, 200, r.body)
                self.assertIsInstance(r.json(), dict)
        self.assertEqual(len(self.ops_of(iid)), 1)
        # The dashboard URL given on creation comes back on the 200 as well.
        did = new_id()
        url = self.put(did, body_for(DASHBOARD)).json()["dashboard_url"]
        r = self.put(did, body_for(DASHBOARD))
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json().get("dashboard_url"), url)

    def test_provision_identical_means_same_canonical_json(self):
        """0003 Idempotency digest: canonical JSON with sorted keys; key order does not make a
        request different (Provisioning, 200)."""
        iid = self.provisioned(FAST, parameters={"a": 1, "b": {"x": 1, "y": [1, 2]}},
                               context={"platform": "p", "z": 2})
        r = self.put(iid, body_for(FAST, parameters={"b": {"y": [1, 2], "x": 1}, "a": 1},
                                   context={"z": 2, "platform": "p"}))
        self.assertEqual(r.status, 200, r.body)
        raw = ('{"space_guid":"space-guid-1","organization_guid":"org-guid-1",'
               '"context":{"z":2,"platform":"p"},"plan_id":"%s",'
               '"parameters":{"b":{"x":1,"y":[1,2]},"a":1},"service_id":"%s"}' % (FAST, SERVICE))
        r = self.client().request("PUT", self.path(iid), raw,
                                  headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 200, r.body)

    def test_provision_different_attributes_409(self):
        """Provisioning, 409: MUST be returned if an instance with the same id already exists
        or is being provisioned but with different attributes (0003: service, plan,
        parameters, context, org/space, maintenance version)."""
        iid = self.provisioned(FAST, parameters={"size": 1})
        variants = [
            body_for(FAST_OTHER, parameters={"size": 1}),
            body_for(HIDDEN, parameters={"size": 1}),
            body_for(FAST, parameters={"size": 2}),
            body_for(FAST, parameters=None),
            body_for(FAST, parameters={"size": 1}, context={"platform": "other"}),
            body_for(FAST, parameters={"size": 1}, context=None),
            body_for(FAST, parameters={"size": 1}, organization_guid="org-guid-2"),
            body_for(FAST, parameters={"size": 1}, space_guid="space-guid-2"),
        ]
        for body in variants:
            for incomplete in (None, True):
                self.assertError(self.put(iid, body, incomplete), 409)
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["plan_id"], fetched["parameters"]), (FAST, {"size": 1}))
        # The maintenance version is an attribute too.
        mid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        self.assertError(self.put(mid, body_for(MAINTAINED)), 409)
        # While being provisioned.
        sid, op = self.provision_async(SLOW, parameters={"size": 1})
        self.assertError(self.put(sid, body_for(SLOW, parameters={"size": 9}), True, 1), 409)
        self.assertError(self.put(sid, body_for(SLOW, parameters={"size": 9})), 409)
        self.assertEqual(len(self.ops_of(sid)), 1)

    def test_provision_422_concurrency_error_while_another_operation_holds_instance(self):
        """Blocking Operations: a request the broker cannot process due to a concurrency issue
        MUST get 422 ConcurrencyError (0003: an update holds the instance). 409 still comes
        first for different attributes."""
        iid = self.provisioned(SLOW_CHANGE, parameters={"v": 1})
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"v": 2}}, True))
        for incomplete in (None, True):
            self.assertError(self.put(iid, body_for(SLOW_CHANGE, parameters={"v": 1}),
                                      incomplete, 1), 422, "ConcurrencyError")
        self.assertError(self.put(iid, body_for(SLOW_CHANGE, parameters={"v": 3}), True), 409)
        self.wait_state(iid, "succeeded", op)

    def test_provision_sync_backend_failure_502(self):
        """0003 Provision: sync and the worker fails -> 502 with the backend's description
        (Service Broker Errors: description is a user-facing message explaining why)."""
        iid = new_id()
        r = self.put(iid, body_for(FAST, parameters={"sim_fail": True}))
        body = self.assertError(r, 502)
        self.assertIn("sim_fail", body["description"])
        self.assertNotIn("instance_usable", body)
        self.assertNotIn("update_repeatable", body)
        last = self.last_operation(iid).json()
        self.assertEqual(last["state"], "failed")
        self.assertIn("sim_fail", last.get("description", ""))
        self.assertError(self.fetch(iid), 404)

    def test_provision_sync_timeout_504_operation_goes_on(self):
        """0003 Provision: sync and sync_timeout_ms passes -> 504; the operation goes on and
        last_operation tells its end (Orphan Mitigation: a timed-out provision)."""
        iid = new_id()
        started = time.monotonic()
        r = self.put(iid, body_for(SYNC_TIMEOUT))
        took = time.monotonic() - started
        self.assertError(r, 504)
        self.assertGreaterEqual(took, 0.45)
        self.assertLess(took, 2.5, "the 504 came long after sync_timeout_ms (500 ms)")
        self.assertEqual(self.last_operation(iid).json()["state"], "in progress")
        self.wait_state(iid, "succeeded")
        self.assertEqual(self.fetch(iid).status, 200)


# =====================================================================================
class Updating(InstanceTestCase):
    """0003, Update."""

    def test_update_404_unknown_instance(self):
        """0003 Update: 404 for an unknown instance, or one not provisioned (its provision
        failed, or it was deprovisioned)."""
        self.assertError(self.patch(new_id(), {"service_id": SERVICE}, True), 404)
        self.assertError(self.patch(new_id(), {"service_id": SERVICE}), 404)
        failed = new_id()
        self.assertError(self.put(failed, body_for(FAST, parameters={"sim_fail": True})), 502)
        self.assertError(self.patch(failed, {"service_id": SERVICE}, True), 404)
        gone = self.provisioned(FAST)
        self.assertEqual(self.delete(gone, FAST).status, 200)
        self.assertError(self.patch(gone, {"service_id": SERVICE}, True), 404)

    def test_update_422_plan_change_not_plan_updateable(self):
        """Updating a Service Instance: plan changes need plan_updateable; 422 MUST be returned
        if the requested change is not supported (0003: no error code). Parameters may still
        change."""
        iid = self.provisioned(FIXED, parameters={"v": 1})
        for incomplete in (None, True):
            r = self.patch(iid, {"service_id": SERVICE, "plan_id": FAST}, incomplete)
            body = self.assertError(r, 422)
            self.assertNotIn("error", body)
        self.assertEqual(self.fetch(iid).json()["plan_id"], FIXED)
        r = self.patch(iid, {"service_id": SERVICE, "plan_id": FIXED, "parameters": {"v": 2}})
        self.assertEqual(r.status, 200, r.body)
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 3}})
        self.assertEqual(r.status, 200, r.body)
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["plan_id"], fetched["parameters"]), (FIXED, {"v": 3}))

    def test_update_422_maintenance_info_conflict(self):
        """Updating a Service Instance, 422: MUST be returned with MaintenanceInfoConflict if
        maintenance_info.version does not match the plan's in the catalog."""
        iid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        for body in ({"service_id": SERVICE, "maintenance_info": {"version": "1.1.0"}},
                     {"service_id": SERVICE, "plan_id": FAST,
                      "maintenance_info": {"version": "1.2.0"}}):
            for incomplete in (None, True):
                self.assertError(self.patch(iid, body, incomplete), 422,
                                 "MaintenanceInfoConflict")
        self.assertEqual(self.fetch(iid).json()["plan_id"], MAINTAINED)
        r = self.patch(iid, {"service_id": SERVICE, "maintenance_info": {"version": "1.2.0"}})
        self.assertEqual(r.status, 200, r.body)

    def test_update_422_async_required(self):
        """Updating a Service Instance, 422: MUST be returned with AsyncRequired if the plan
        supports only asynchronous updates and accepts_incomplete=true is missing (0003: the
        target plan's async_required)."""
        iid = self.provisioned(FAST)
        for incomplete in (None, False):
            self.assertError(self.patch(iid, {"service_id": SERVICE, "plan_id": ASYNC_ONLY},
                                        incomplete), 422, "AsyncRequired")
        self.assertEqual(self.fetch(iid).json()["plan_id"], FAST)
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE, "plan_id": ASYNC_ONLY},
                                            True))
        self.wait_state(iid, "succeeded", op)
        self.assertEqual(self.fetch(iid).json()["plan_id"], ASYNC_ONLY)

    def test_update_422_concurrency_error_while_another_operation_holds_instance(self):
        """Blocking Operations: 422 ConcurrencyError for a request the broker cannot process
        due to a concurrency issue (0003: another operation holds the instance)."""
        iid = self.provisioned(SLOW_CHANGE, parameters={"v": 1})
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"v": 2}}, True))
        for gw in (0, 1):
            for incomplete in (None, True):
                self.assertError(self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 3}},
                                            incomplete, gw), 422, "ConcurrencyError")
        self.assertError(self.patch(iid, {"service_id": SERVICE, "plan_id": FAST}, True), 422,
                         "ConcurrencyError")
        self.wait_state(iid, "succeeded", op)
        self.assertEqual(self.fetch(iid).json()["parameters"], {"v": 2})

    def test_update_422_concurrency_error_while_provisioning(self):
        """Blocking Operations: the provision still running holds the instance; an update is a
        concurrent mutation -> 422 ConcurrencyError."""
        iid, op = self.provision_async(SLOW)
        self.assertError(self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 1}}, True),
                         422, "ConcurrencyError")
        self.wait_state(iid, "succeeded", op)

    def test_update_identical_in_progress_202_same_operation(self):
        """Updating a Service Instance, 202: the operation string MUST match that returned for
        the original request; a re-sent PATCH MUST return 202, not 200, until it completed."""
        iid = self.provisioned(SLOW_CHANGE, parameters={"v": 1})
        body = {"service_id": SERVICE, "parameters": {"v": 2}}
        op = self.assertAccepted(self.patch(iid, body, True))
        for gw in (1, 0):
            self.assertEqual(self.assertAccepted(self.patch(iid, body, True, gw)), op)
        self.wait_state(iid, "succeeded", op)

    def test_update_sync_200_empty_object(self):
        """Updating a Service Instance, 200: MUST be returned if the changes have been applied;
        the expected body is {} (0003: plus dashboard_url/metadata when the backend gives
        them, which sim does not on update)."""
        iid = self.provisioned(FAST, parameters={"v": 1})
        r = self.patch(iid, {"service_id": SERVICE, "plan_id": FAST_OTHER,
                             "parameters": {"v": 2}}, gw=1)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["plan_id"], fetched["parameters"]), (FAST_OTHER, {"v": 2}))

    def test_update_async_202_operation_applied_on_success(self):
        """Updating a Service Instance, 202 with operation; 0003: parameters and plan change
        are applied only when the update succeeds."""
        # The job runs with the target plan's settings: SLOW updates in 1.5 s.
        iid = self.provisioned(SLOW_CHANGE, parameters={"v": 1})
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE, "plan_id": SLOW,
                                                  "parameters": {"v": 2}}, True))
        self.assertEqual(self.last_operation(iid, op).json()["state"], "in progress")
        record = harness.redis_hash(self.stack.redis, NAMESPACE + ":instance:" + iid)
        self.assertEqual((record.get("plan_id"), json.loads(record.get("parameters", "null"))),
                         (SLOW_CHANGE, {"v": 1}), "applied before the update succeeded")
        self.wait_state(iid, "succeeded", op)
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["plan_id"], fetched["parameters"]), (SLOW, {"v": 2}))

    def test_update_failed_applies_nothing(self):
        """Updating a Service Instance: when the update fails (4xx/5xx or state failed) the
        broker MUST NOT apply the requested changes."""
        iid = self.provisioned(FAST, parameters={"v": 1})
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE, "plan_id": FAST_OTHER,
                                                  "parameters": {"sim_fail": True}}, True))
        self.wait_state(iid, "failed", op)
        fetched = self.fetch(iid).json()
        self.assertEqual((fetched["plan_id"], fetched["parameters"]), (FAST, {"v": 1}))
        # The instance is still usable: another update works.
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 5}})
        self.assertEqual(r.status, 200, r.body)

    def test_update_sync_backend_failure_502(self):
        """0003 (sync and the worker fails -> 502 with the backend's description); Service
        Broker Errors: instance_usable and update_repeatable for a failed update, 2.16+."""
        iid = self.provisioned(FAST, parameters={"v": 1})
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"sim_fail": True}},
                       version="2.16")
        body = self.assertError(r, 502)
        self.assertIn("sim_fail", body["description"])
        self.assertIs(body.get("instance_usable"), True, r.body)
        self.assertIs(body.get("update_repeatable"), False, r.body)
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"sim_fail": True}},
                       version="2.15")
        body = self.assertError(r, 502)
        self.assertNotIn("instance_usable", body)
        self.assertNotIn("update_repeatable", body)
        self.assertEqual(self.fetch(iid).json()["parameters"], {"v": 1})


# =====================================================================================
class Deprovisioning(InstanceTestCase):
    """0003, Deprovision, and Orphan Mitigation."""

    def test_deprovision_410_unknown_instance(self):
        """Deprovisioning, 410 Gone: MUST be returned if the instance does not exist."""
        for incomplete in (None, True):
            for gw in (0, 1):
                self.assertError(self.delete(new_id(), FAST, incomplete, gw), 410)

    def test_deprovision_410_already_deprovisioned(self):
        """Deprovisioning, 410 Gone: an instance already deprovisioned does not exist."""
        iid = self.provisioned(FAST)
        r = self.delete(iid, FAST)
        self.assertEqual(r.status, 200, r.body)
        self.assertError(self.delete(iid, FAST), 410)
        self.assertError(self.delete(iid, FAST, True, 1), 410)

    def test_deprovision_422_async_required(self):
        """Deprovisioning, 422: MUST be returned with AsyncRequired if the plan can only be
        deprovisioned asynchronously and accepts_incomplete=true is missing."""
        iid, op = self.provision_async(ASYNC_ONLY)
        self.wait_state(iid, "succeeded", op)
        for incomplete in (None, False):
            self.assertError(self.delete(iid, ASYNC_ONLY, incomplete), 422, "AsyncRequired")
        self.assertEqual(self.fetch(iid).status, 200)
        dop = self.assertAccepted(self.delete(iid, ASYNC_ONLY, True))
        self.wait_gone(iid, dop)

    def test_deprovision_422_concurrency_error_while_another_operation_runs(self):
        """Deprovisioning, 422: MUST be returned with ConcurrencyError if the instance is being
        processed by some other operation (here an update)."""
        iid = self.provisioned(SLOW_CHANGE)
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"v": 1}}, True))
        for incomplete in (None, True):
            for gw in (0, 1):
                self.assertError(self.delete(iid, SLOW_CHANGE, incomplete, gw), 422,
                                 "ConcurrencyError")
        self.wait_state(iid, "succeeded", op)
        self.assertEqual(self.fetch(iid).status, 200)

    def test_deprovision_resent_during_deprovision_202_same_operation(self):
        """Deprovisioning, 202: the operation string MUST match the original request's; a
        re-sent DELETE MUST return 202, not 200, if it has not completed yet."""
        iid = self.provisioned(SLOW_CHANGE)
        op = self.assertAccepted(self.delete(iid, SLOW_CHANGE, True))
        for gw in (1, 0):
            self.assertEqual(self.assertAccepted(self.delete(iid, SLOW_CHANGE, True, gw)), op)
        self.assertEqual(self.last_operation(iid, op).json()["state"], "in progress")
        self.wait_gone(iid, op)
        self.assertError(self.delete(iid, SLOW_CHANGE, True), 410)

    def test_deprovision_sync_200_empty_object(self):
        """Deprovisioning, 200: MUST be returned if the instance was deleted as a result of
        this request; the expected body is {}."""
        iid = self.provisioned(FAST)
        r = self.delete(iid, FAST, gw=1)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})
        self.assertError(self.fetch(iid), 404)
        self.assertError(self.last_operation(iid), 410)

    def test_deprovision_async_202_operation(self):
        """Deprovisioning, 202 with operation; Polling Last Operation: in progress while it
        runs, then 410 Gone (a success for a delete)."""
        iid = self.provisioned(SLOW_CHANGE)
        op = self.assertAccepted(self.delete(iid, SLOW_CHANGE, True))
        self.assertEqual(self.last_operation(iid, op, gw=1).json()["state"], "in progress")
        self.wait_gone(iid, op, gw=1)
        self.assertError(self.fetch(iid), 404)

    def test_orphan_mitigation_delete_while_provisioning_422_concurrency_error(self):
        """Deprovisioning / Orphan Mitigation; 0003: halting the current creation is not
        offered, a DELETE while the provision runs gets 422 ConcurrencyError, and works once
        it has ended."""
        iid, op = self.provision_async(SLOW)
        for incomplete in (None, True):
            self.assertError(self.delete(iid, SLOW, incomplete), 422, "ConcurrencyError")
        self.assertEqual(self.last_operation(iid, op).json()["state"], "in progress")
        self.wait_state(iid, "succeeded", op)
        dop = self.assertAccepted(self.delete(iid, SLOW, True, 1))
        self.wait_gone(iid, dop)

    def test_orphan_mitigation_delete_after_failed_provision_succeeds(self):
        """Orphan Mitigation: a failed synchronous provision or a last_operation "failed" for a
        provision makes the platform delete the instance; 0003: that DELETE is allowed and
        runs the backend's cleanup."""
        iid = new_id()
        self.assertError(self.put(iid, body_for(FAST, parameters={"sim_fail": True})), 502)
        r = self.delete(iid, FAST)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})
        self.assertError(self.last_operation(iid), 410)
        self.assertError(self.delete(iid, FAST), 410)
        # Asynchronous provision that failed, asynchronous delete.
        aid, op = self.provision_async(SLOW, parameters={"sim_fail": True})
        self.wait_state(aid, "failed", op)
        dop = self.assertAccepted(self.delete(aid, SLOW, True, 1))
        self.assertNotEqual(dop, op)
        self.wait_gone(aid, dop)
        kinds = sorted(o.get("kind") for o in self.ops_of(aid))
        self.assertEqual(kinds, ["deprovision", "provision"])

    def test_orphan_mitigation_delete_after_sync_timeout(self):
        """Orphan Mitigation (the broker does not answer in time; platforms delete); 0003: the
        DELETE gets 422 ConcurrencyError while the provision still runs, and works after."""
        iid = new_id()
        self.assertError(self.put(iid, body_for(SYNC_TIMEOUT)), 504)
        self.assertError(self.delete(iid, SYNC_TIMEOUT), 422, "ConcurrencyError")
        self.wait_state(iid, "succeeded")
        r = self.delete(iid, SYNC_TIMEOUT, gw=1)
        self.assertEqual(r.status, 200, r.body)


# =====================================================================================
class LastOperation(InstanceTestCase):
    """0003, last_operation."""

    def test_last_operation_404_unknown_instance(self):
        """Polling Last Operation, 404: MUST be returned if the instance being polled does not
        exist."""
        iid = new_id()
        for gw in (0, 1):
            self.assertError(self.last_operation(iid, gw=gw), 404)
            self.assertError(self.last_operation(iid, "0" * 32, gw=gw), 404)

    def test_last_operation_410_after_async_deprovision_finished(self):
        """Polling Last Operation, 410 Gone: appropriate for asynchronous delete operations,
        the platform considers it a success."""
        iid, op = self.provision_async(FAST)
        self.wait_state(iid, "succeeded", op)
        dop = self.assertAccepted(self.delete(iid, FAST, True))
        self.wait_gone(iid, dop)
        for gw in (0, 1):
            self.assertError(self.last_operation(iid, dop, gw), 410)
            self.assertError(self.last_operation(iid, gw=gw), 410)

    def test_last_operation_400_operation_of_another_instance(self):
        """Polling Last Operation, operation: a broker-provided identifier of this instance's
        operation; 0003: 400 when it names no operation of this instance."""
        a, op_a = self.provision_async(FAST)
        b, op_b = self.provision_async(FAST)
        self.wait_state(a, "succeeded", op_a)
        self.wait_state(b, "succeeded", op_b)
        self.assertError(self.last_operation(a, op_b), 400)
        self.assertError(self.last_operation(b, op_a, gw=1), 400)
        self.assertError(self.last_operation(a, "not-an-operation"), 400)
        self.assertEqual(self.last_operation(a, op_a).status, 200)

    def test_last_operation_operation_names_an_older_operation_of_the_instance(self):
        """Polling Last Operation: operation selects the operation; without it the last one is
        reported (Service Brokers SHOULD NOT forget an operation's state)."""
        iid, op = self.provision_async(FAST)
        self.wait_state(iid, "succeeded", op)
        uop = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                   "parameters": {"sim_fail": True}}, True))
        self.wait_state(iid, "failed", uop)
        self.assertEqual(self.last_operation(iid).json()["state"], "failed")
        self.assertEqual(self.last_operation(iid, op, gw=1).json()["state"], "succeeded")

    def test_last_operation_state_in_progress_succeeded_or_failed(self):
        """Polling Last Operation, Body: state* is one of "in progress", "succeeded", "failed"
        (checked on every answer); description, if present, a non-empty string."""
        iid, op = self.provision_async(SLOW)
        seen = []
        deadline = time.monotonic() + OP_TIMEOUT_S
        while time.monotonic() < deadline:
            state = self.last_operation(iid, op).json()["state"]
            seen.append(state)
            if state != "in progress":
                break
            time.sleep(0.05)
        self.assertEqual(seen[0], "in progress")
        self.assertEqual(seen[-1], "succeeded")
        self.assertTrue(set(seen) <= set(STATES), seen)
        fid, fop = self.provision_async(FAST, parameters={"sim_fail": True})
        self.assertEqual(self.wait_state(fid, "failed", fop)["state"], "failed")

    def test_last_operation_retry_after_integer_seconds_2_15_plus(self):
        """Polling Last Operation: the response MAY include Retry-After, RECOMMENDED a
        duration; 0003: integer seconds, 2.15+, while in progress, within
        OSBQ_RETRY_AFTER_MIN_S..MAX_S."""
        iid, op = self.provision_async(SLOW)
        for version in ("2.15", "2.16", "2.17"):
            r = self.last_operation(iid, op, version=version)
            self.assertEqual(r.json()["state"], "in progress")
            value = r.header("Retry-After")
            self.assertIsNotNone(value, "no Retry-After for " + version)
            self.assertRegex(value, r"^[0-9]+$")
            self.assertGreaterEqual(int(value), RETRY_AFTER_MIN_S)
            self.assertLessEqual(int(value), RETRY_AFTER_MAX_S)
        for version in ("2.14", "2.13", "2.7"):
            r = self.last_operation(iid, op, version=version)
            self.assertEqual(r.json()["state"], "in progress")
            self.assertIsNone(r.header("Retry-After"), "Retry-After for " + version)
        self.wait_state(iid, "succeeded", op)
        self.assertIsNone(self.last_operation(iid, op).header("Retry-After"))

    def test_last_operation_retry_after_follows_the_plan_average(self):
        """0003: Retry-After is the plan's average duration for that kind minus the time
        spent: for a 1.5 s plan just accepted, at most 2 s (not the 7 s maximum)."""
        iid, op = self.provision_async(SLOW)
        self.wait_state(iid, "succeeded", op)
        iid, op = self.provision_async(SLOW)
        r = self.last_operation(iid, op)
        self.assertEqual(r.json()["state"], "in progress")
        self.assertIn(r.header("Retry-After"), ("1", "2"))
        self.wait_state(iid, "succeeded", op)

    def test_last_operation_failed_update_instance_usable_update_repeatable_2_16_plus(self):
        """Polling Last Operation, Body: instance_usable and update_repeatable for a failed
        update; 0003: 2.16+, left out for 2.15 and older."""
        iid = self.provisioned(FAST)
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"sim_fail": True}}, True))
        self.wait_state(iid, "failed", op)
        for version in ("2.16", "2.17"):
            body = self.last_operation(iid, op, version=version).json()
            self.assertEqual(body["state"], "failed")
            self.assertIs(body.get("instance_usable"), True, body)
            self.assertIs(body.get("update_repeatable"), False, body)
        for version in ("2.15", "2.14"):
            body = self.last_operation(iid, op, version=version).json()
            self.assertEqual(body["state"], "failed")
            self.assertNotIn("instance_usable", body)
            self.assertNotIn("update_repeatable", body)

    def test_last_operation_failed_provision_has_no_instance_usable(self):
        """Polling Last Operation, Body: instance_usable and update_repeatable MUST NOT be
        present for other operations (a provision)."""
        iid, op = self.provision_async(FAST, parameters={"sim_fail": True})
        self.wait_state(iid, "failed", op)
        for version in ("2.16", "2.17"):
            body = self.last_operation(iid, op, version=version).json()
            self.assertNotIn("instance_usable", body)
            self.assertNotIn("update_repeatable", body)


# =====================================================================================
class Fetching(InstanceTestCase):
    """0003, Fetch."""

    def test_fetch_404_unknown_instance(self):
        """Fetching a Service Instance, 404: MUST be returned if the instance does not
        exist."""
        for gw in (0, 1):
            self.assertError(self.fetch(new_id(), gw), 404)

    def test_fetch_404_while_provisioning(self):
        """Fetching a Service Instance, 404: MUST be returned if a provisioning operation is
        still in progress."""
        iid, op = self.provision_async(SLOW)
        self.assertError(self.fetch(iid), 404)
        self.assertError(self.fetch(iid, 1), 404)
        self.wait_state(iid, "succeeded", op)

    def test_fetch_404_after_failed_provision(self):
        """Fetching a Service Instance, 404 (0003: its provision failed)."""
        iid, op = self.provision_async(FAST, parameters={"sim_fail": True})
        self.wait_state(iid, "failed", op)
        self.assertError(self.fetch(iid), 404)

    def test_fetch_404_after_deprovision(self):
        """Fetching a Service Instance, 404 (0003: it is deprovisioned)."""
        iid = self.provisioned(FAST)
        self.assertEqual(self.delete(iid, FAST).status, 200)
        self.assertError(self.fetch(iid), 404)

    def test_fetch_422_concurrency_error_while_updating(self):
        """Fetching a Service Instance, 422: MUST be returned if the instance is being updated,
        with error ConcurrencyError."""
        iid, op = self.provision_async(SLOW, parameters={"v": 1})
        self.wait_state(iid, "succeeded", op)
        uop = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                   "parameters": {"v": 2}}, True))
        for gw in (0, 1):
            self.assertError(self.fetch(iid, gw), 422, "ConcurrencyError")
        self.wait_state(iid, "succeeded", uop)
        self.assertEqual(self.fetch(iid).json()["parameters"], {"v": 2})

    def test_fetch_422_concurrency_error_while_deprovisioning(self):
        """0003 Fetch: 422 ConcurrencyError while a deprovision runs."""
        iid = self.provisioned(SLOW_CHANGE)
        op = self.assertAccepted(self.delete(iid, SLOW_CHANGE, True))
        self.assertError(self.fetch(iid), 422, "ConcurrencyError")
        self.wait_gone(iid, op)
        self.assertError(self.fetch(iid), 404)

    def test_fetch_400_service_without_instances_retrievable(self):
        """Fetching a Service Instance: only for offerings with instances_retrievable true;
        0003: 400 otherwise."""
        iid = self.provisioned(HIDDEN)
        self.assertError(self.fetch(iid), 400)

    def test_fetch_200_service_id_plan_id_parameters(self):
        """Fetching a Service Instance, Body: service_id, plan_id, dashboard_url, parameters."""
        iid = self.provisioned(DASHBOARD, parameters={"size": 4, "tier": {"x": "y"}})
        url = self.put(iid, body_for(DASHBOARD, parameters={"size": 4, "tier": {"x": "y"}}))
        url = url.json()["dashboard_url"]
        for gw in (0, 1):
            r = self.fetch(iid, gw)
            self.assertEqual(r.status, 200, r.body)
            body = r.json()
            self.assertEqual(body["service_id"], SERVICE)
            self.assertEqual(body["plan_id"], DASHBOARD)
            self.assertEqual(body["parameters"], {"size": 4, "tier": {"x": "y"}})
            self.assertEqual(body.get("dashboard_url"), url)

    def test_fetch_available_immediately_after_last_operation_succeeded(self):
        """Fetching a Service Instance: the endpoint MUST be available immediately after
        last_operation returns "succeeded" for a provision."""
        for plan in (SLOW, ASYNC_ONLY):
            iid, op = self.provision_async(plan, parameters={"p": plan})
            self.wait_state(iid, "succeeded", op, gw=1)
            r = self.fetch(iid)
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json()["parameters"], {"p": plan})

    def test_fetch_maintenance_info_2_15_plus(self):
        """Fetching a Service Instance, Body: maintenance_info; 0003: 2.15+ only."""
        iid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        for version in ("2.15", "2.16", "2.17"):
            body = self.fetch(iid, version=version).json()
            self.assertEqual(body.get("maintenance_info", {}).get("version"), "1.2.0", body)
        body = self.fetch(iid, version="2.14").json()
        self.assertNotIn("maintenance_info", body)
        self.assertEqual(body["plan_id"], MAINTAINED)

    def test_fetch_404_for_api_2_13(self):
        """0003 Versions: fetch is 2.14+; older platforms get 404 (the endpoint is not theirs).
        """
        iid = self.provisioned(FAST)
        for version in ("2.13", "2.12", "2.0"):
            self.assertError(self.fetch(iid, version=version), 404)
        self.assertEqual(self.fetch(iid, version="2.14").status, 200)

    def test_fetch_metadata_only_2_16_plus(self):
        """0003 Versions: metadata is 2.16+; a 2.15 body carries none."""
        iid = self.provisioned(DASHBOARD)
        self.assertNotIn("metadata", self.fetch(iid, version="2.15").json())
        body = self.fetch(iid, version="2.16").json()
        if "metadata" in body:
            self.assertIsInstance(body["metadata"], dict)
            self.assertNotIn("attributes", body["metadata"])


# =====================================================================================
class ApiVersions(InstanceTestCase):
    """0003, Versions: fields a version lacks are left out for its platforms."""

    def test_version_2_0_accepts_incomplete_ignored(self):
        """Synchronous Operations: brokers answering synchronously can ignore
        accepts_incomplete=true; 0003: before 2.7 it is ignored, and there is no operation."""
        iid = new_id()
        r = self.put(iid, body_for(FAST), True, version="2.0")
        self.assertEqual(r.status, 201, r.body)
        self.assertNotIn("operation", r.json())
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 1}}, True, version="2.0")
        self.assertEqual(r.status, 200, r.body)
        self.assertNotIn("operation", r.json())
        r = self.delete(iid, FAST, True, version="2.0")
        self.assertEqual(r.status, 200, r.body)
        self.assertNotIn("operation", r.json())
        # A 1.5 s plan is provisioned synchronously too: the answer comes at completion.
        sid = new_id()
        started = time.monotonic()
        r = self.put(sid, body_for(SLOW), True, version="2.0")
        self.assertEqual(r.status, 201, r.body)
        self.assertGreaterEqual(time.monotonic() - started, 1.4)
        self.assertEqual(self.last_operation(sid).json()["state"], "succeeded")

    def test_version_2_0_async_only_plan_422_async_required(self):
        """0003 Versions: before 2.7 async-only plans answer 422 AsyncRequired, even with
        accepts_incomplete=true; the 422 carries error and description for every version."""
        iid = new_id()
        for incomplete in (None, True):
            self.assertError(self.put(iid, body_for(ASYNC_ONLY), incomplete, version="2.0"), 422,
                             "AsyncRequired")
        self.assertError(self.last_operation(iid), 404)
        iid, op = self.provision_async(ASYNC_ONLY)
        self.wait_state(iid, "succeeded", op)
        self.assertError(self.delete(iid, ASYNC_ONLY, True, version="2.0"), 422, "AsyncRequired")
        self.assertEqual(self.fetch(iid).status, 200)

    def test_version_2_8_202_without_operation(self):
        """0003 Versions: async from 2.7, the operation field from 2.9."""
        iid = new_id()
        r = self.put(iid, body_for(SLOW), True, version="2.8")
        self.assertAccepted(r, with_operation=False)
        r = self.last_operation(iid, version="2.8")
        self.assertEqual(r.json()["state"], "in progress")
        self.assertIsNone(r.header("Retry-After"))
        self.wait_state(iid, "succeeded", version="2.8")
        r = self.put(new_id(), body_for(SLOW), True, version="2.9")
        self.assertAccepted(r)

    def check_before_2_14(self, version):
        iid = new_id()
        op = self.assertAccepted(self.put(iid, body_for(DASHBOARD), True, version=version))
        self.wait_state(iid, "succeeded", op, version=version)
        self.assertError(self.fetch(iid, version=version), 404)
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 1}}, version=version)
        self.assertEqual(r.status, 200, r.body)
        self.assertNotIn("dashboard_url", r.json())
        sid, sop = self.provision_async(SLOW)
        r = self.last_operation(sid, sop, version=version)
        self.assertEqual(r.json()["state"], "in progress")
        self.assertIsNone(r.header("Retry-After"))

    def test_version_2_12_async_with_operation_no_fetch_no_retry_after(self):
        """0003 Versions: 2.12 has async operations and operation, but no fetch (2.14), no
        dashboard_url on update (2.14), no Retry-After (2.15)."""
        self.check_before_2_14("2.12")

    def test_version_2_13_no_fetch_no_dashboard_url_on_update(self):
        """0003 Versions: 2.13 is the last version without fetch and without dashboard_url on
        update."""
        self.check_before_2_14("2.13")

    def test_version_2_14_fetch_without_maintenance_info_or_metadata(self):
        """0003 Versions: fetch from 2.14; maintenance_info and Retry-After from 2.15,
        metadata from 2.16."""
        iid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        r = self.fetch(iid, version="2.14")
        self.assertEqual(r.status, 200, r.body)
        self.assertNotIn("maintenance_info", r.json())
        self.assertNotIn("metadata", r.json())
        did = self.provisioned(DASHBOARD)
        url = self.fetch(did).json()["dashboard_url"]
        r = self.patch(did, {"service_id": SERVICE, "parameters": {"v": 1}}, version="2.14")
        self.assertEqual(r.status, 200, r.body)
        self.assertIn(r.json().get("dashboard_url", url), (url,))

    def test_version_2_16_failure_flags(self):
        """0003 Versions: instance_usable and update_repeatable from 2.16, on a failed update
        polled through last_operation."""
        iid = self.provisioned(FAST)
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"sim_fail": True}}, True,
                                            version="2.16"))
        body = self.wait_state(iid, "failed", op, version="2.16")
        self.assertIn("instance_usable", body)
        self.assertIn("update_repeatable", body)
        body = self.wait_state(iid, "failed", op, version="2.15")
        self.assertNotIn("instance_usable", body)

    def test_version_2_17_and_newer_minors(self):
        """API Version Header: 2.17 is the latest; 0003: newer minors are served as 2.17."""
        iid = self.provisioned(MAINTAINED, maintenance_info={"version": "1.2.0"})
        for version in ("2.17", "2.18", "2.99"):
            r = self.fetch(iid, version=version)
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json().get("maintenance_info", {}).get("version"), "1.2.0")
        sid, sop = self.provision_async(SLOW)
        r = self.last_operation(sid, sop, version="2.18")
        self.assertRegex(r.header("Retry-After") or "", r"^[0-9]+$")

    def test_422_bodies_carry_error_for_every_version(self):
        """Service Broker Errors / Error Codes: AsyncRequired and ConcurrencyError MUST be in
        error; 0003: both error and description for every version."""
        iid = self.provisioned(SLOW_CHANGE)
        op = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                  "parameters": {"v": 1}}, True))
        for version in ("2.0", "2.7", "2.11", "2.12", "2.13", "2.14", "2.15", "2.16", "2.17"):
            self.assertError(self.put(new_id(), body_for(ASYNC_ONLY), version=version), 422,
                             "AsyncRequired")
            self.assertError(self.delete(iid, SLOW_CHANGE, version=version), 422,
                             "ConcurrencyError")
            self.assertError(self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 9}},
                                        version=version), 422, "ConcurrencyError")
        for version in ("2.15", "2.16", "2.17"):
            self.assertError(self.put(new_id(), body_for(MAINTAINED, maintenance_info={
                "version": "0.0.1"}), version=version), 422, "MaintenanceInfoConflict")
        self.wait_state(iid, "succeeded", op)


# =====================================================================================
class GatewaysAndLoad(InstanceTestCase):
    """Several gateways share Redis; concurrent requests on one instance."""

    def test_provision_through_gateway_a_poll_through_gateway_b(self):
        """Polling Last Operation: the operation is known to every gateway (state in Redis),
        whichever accepted it."""
        iid = new_id()
        op = self.assertAccepted(self.put(iid, body_for(SLOW, parameters={"v": 1}), True, gw=0))
        self.assertEqual(self.last_operation(iid, op, gw=1).json()["state"], "in progress")
        self.wait_state(iid, "succeeded", op, gw=1)
        self.assertEqual(self.fetch(iid, gw=1).json()["parameters"], {"v": 1})
        uop = self.assertAccepted(self.patch(iid, {"service_id": SERVICE,
                                                   "parameters": {"v": 2}}, True, gw=1))
        self.wait_state(iid, "succeeded", uop, gw=0)
        dop = self.assertAccepted(self.delete(iid, SLOW, True, gw=0))
        self.wait_gone(iid, dop, gw=1)

    def test_request_identity_and_b3_trace_reach_the_worker_log(self):
        """Request Identity: the header is echoed, and travels with the job (and Cloud Foundry's
        B3 tracing headers with it) into the worker's log lines."""
        iid = new_id()
        trace = "463ac35c9f6413ad48485a3953bb6124"
        c = self.client(0)
        r = c.request("PUT", self.path(iid, accepts_incomplete="true"), body_for(FAST),
                      headers={"X-Broker-API-Request-Identity": "req-" + iid,
                               "X-B3-TraceId": trace, "X-B3-SpanId": "a2fb4a1d1a96d312"})
        self.assertEqual(r.status, 202, r.body)
        self.assertEqual(r.header("X-Broker-API-Request-Identity"), "req-" + iid)
        self.wait_state(iid, "succeeded", r.json()["operation"])

        def logged():
            return any(("request_id=req-" + iid) in w.log() and trace in w.log()
                       for w in self.workers)

        harness.wait_until(logged, 5, "the worker to log the request identity and trace")

    def test_200_async_provisions_across_both_gateways_all_succeed(self):
        """Asynchronous Operations: every accepted (202) provision reaches "succeeded"; 200 of
        them spread over both gateways from 8 client threads."""
        ids = [new_id() for _ in range(200)]
        ops = {}

        def submit(chunk):
            for n, iid in chunk:
                r = self.put(iid, body_for(FAST, parameters={"n": n}), True, gw=n % 2)
                self.assertEqual(r.status, 202, r.body)
                ops[iid] = r.json()["operation"]

        chunks = [[(n, ids[n]) for n in range(k, len(ids), 8)] for k in range(8)]
        with ThreadPoolExecutor(8) as pool:
            for f in [pool.submit(submit, c) for c in chunks]:
                f.result()
        self.assertEqual(len(ops), 200)
        self.assertEqual(len(set(ops.values())), 200)
        pending = dict(ops)
        deadline = time.monotonic() + 30
        n = 0
        while pending and time.monotonic() < deadline:
            for iid, op in list(pending.items()):
                n += 1
                r = self.last_operation(iid, op, gw=n % 2)
                self.assertEqual(r.status, 200, r.body)
                state = r.json()["state"]
                self.assertNotEqual(state, "failed", r.body)
                if state == "succeeded":
                    del pending[iid]
            if pending:
                time.sleep(0.05)
        self.assertEqual(pending, {}, "%d provisions did not succeed in 30 s" % len(pending))
        for n, iid in enumerate(ids[:10]):
            self.assertEqual(self.fetch(iid).json()["parameters"], {"n": n})

    def race(self, requests):
        """Sends requests (callables) at the same moment from threads; returns responses."""
        barrier = threading.Barrier(len(requests))

        def run(request):
            barrier.wait(5)
            return request()

        with ThreadPoolExecutor(len(requests)) as pool:
            return [f.result() for f in [pool.submit(run, q) for q in requests]]

    def test_simultaneous_identical_puts_exactly_one_accepted(self):
        """Provisioning, 202 (a re-sent PUT gets the same operation) and Blocking Operations
        (422 ConcurrencyError): two simultaneous identical PUTs of one instance through both
        gateways make exactly one operation; the other answer is the idempotent 202 with the
        same operation, or 422."""
        for _ in range(8):
            iid = new_id()
            answers = self.race([lambda gw=gw: self.put(iid, body_for(SLOW), True, gw)
                                 for gw in (0, 1)])
            statuses = sorted(r.status for r in answers)
            self.assertIn(statuses, ([202, 202], [202, 422]), [r.body for r in answers])
            accepted = {r.json()["operation"] for r in answers if r.status == 202}
            self.assertEqual(len(accepted), 1)
            for r in answers:
                if r.status == 422:
                    self.assertError(r, 422, "ConcurrencyError")
            records = self.ops_of(iid)
            self.assertEqual(len(records), 1)
            self.assertEqual(self.last_operation(iid).json()["state"], "in progress")
            self.assertEqual(self.op_record(accepted.pop()).get("kind"), "provision")

    def test_simultaneous_different_puts_one_accepted_other_409(self):
        """Provisioning, 409: an instance being provisioned with different attributes; of two
        simultaneous different PUTs exactly one is accepted."""
        for _ in range(5):
            iid = new_id()
            answers = self.race([
                lambda: self.put(iid, body_for(SLOW, parameters={"a": 1}), True, 0),
                lambda: self.put(iid, body_for(SLOW, parameters={"a": 2}), True, 1)])
            statuses = sorted(r.status for r in answers)
            self.assertIn(statuses, ([202, 409], [202, 422]), [r.body for r in answers])
            self.assertEqual(len(self.ops_of(iid)), 1)

    def test_simultaneous_sync_puts_one_operation(self):
        """Synchronous Operations and 0003 (sync waits for the same operation): two identical
        synchronous PUTs at once make one operation and both end with success or 422."""
        iid = new_id()
        answers = self.race([lambda gw=gw: self.put(iid, body_for(SLOW), None, gw)
                             for gw in (0, 1)])
        statuses = sorted(r.status for r in answers)
        self.assertIn(201, statuses, [r.body for r in answers])
        for s in statuses:
            self.assertIn(s, (200, 201, 422))
        self.assertEqual(len(self.ops_of(iid)), 1)


# =====================================================================================
class Scheduling(InstanceTestCase):
    """Workers running one job at a time: a job goes to a worker with a free slot."""

    WORKER_ENV = {"OSBQ_WORKER_CONCURRENCY": "1"}

    def test_long_job_does_not_delay_short_ones_while_a_worker_is_free(self):
        """Issue 3, ZeroMQ topology: no job waits behind a long one while another worker has
        room (Synchronous and Asynchronous Operations: respond promptly)."""
        # The long job takes 3 s: the short ones must all be done well before it, with room for
        # a loaded 2-core machine.
        slow, sop = self.provision_async(SYNC_TIMEOUT)
        harness.wait_until(lambda: self.op_record(sop).get("state") == "running", OP_TIMEOUT_S,
                           "the slow provision to be claimed")
        started = time.monotonic()
        for n in range(6):
            iid, op = self.provision_async(FAST, gw=n % 2)
            self.wait_state(iid, "succeeded", op)
            self.assertLess(time.monotonic() - started, 2.0,
                            "short provision %d waited behind the long one" % n)
        # A burst of short ones as well.
        burst = [self.provision_async(FAST, gw=n % 2) for n in range(4)]
        for iid, op in burst:
            self.wait_state(iid, "succeeded", op)
        self.assertLess(time.monotonic() - started, 2.4)
        self.assertEqual(self.last_operation(slow, sop).json()["state"], "in progress",
                         "the short provisions should have finished well before the long one")
        self.wait_state(slow, "succeeded", sop)


# =====================================================================================
class WorkerTurnover(InstanceTestCase):
    """Workers come and go; gateways need no configuration change."""

    def test_worker_started_mid_run_takes_work(self):
        """Issue 3, ZeroMQ topology: workers connect to every live gateway, so a worker
        started mid-run takes work once the others stopped (SIGTERM)."""
        before = []
        for n in range(4):
            iid, op = self.provision_async(FAST, gw=n % 2)
            self.wait_state(iid, "succeeded", op)
            before.append(self.op_record(op).get("worker"))
        old_workers = set(before)
        third = self.stack.start_worker()
        for w in self.workers:
            self.assertEqual(w.stop(signal.SIGTERM), 0, w.log())
        ops = []
        for n in range(10):
            ops.append(self.provision_async(FAST, gw=n % 2))
        ops.append(self.provision_async(SLOW, gw=1))
        for iid, op in ops:
            self.wait_state(iid, "succeeded", op)
        ran_by = {self.op_record(op).get("worker") for _, op in ops}
        self.assertEqual(len(ran_by), 1, ran_by)
        self.assertFalse(ran_by & old_workers, "stopped workers ran jobs after SIGTERM")
        self.assertTrue(third.alive())
        sync = self.put(new_id(), body_for(FAST), gw=1)
        self.assertEqual(sync.status, 201, sync.body)


if __name__ == "__main__":
    unittest.main()
