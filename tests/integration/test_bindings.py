"""Service bindings end to end against real processes: redis-server, two gateways and two
workers on loopback, the sim backend, tests/data/catalog-bindings.json.

Every row of docs/decisions/0004-binding-operations.md has a test named after it, run sync and
async and at API versions 2.12, 2.14 and 2.17 where the behaviour differs. Each test's
docstring names the spec section (../shared/spec/osb-latest-spec.md) it checks. Every response
with a status outside 2xx is checked to be a JSON object with a non-empty description
(Service Broker Errors), whatever the test."""

import datetime
import json
import os
import threading
import time
import unittest
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor

import harness

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-bindings.json")


def _service(n):
    return "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e%02d" % n


def _plan(n):
    return "5c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6f%02d" % n


SERVICE = _service(1)          # bindable, bindings_retrievable, no requires
SYSLOG_SERVICE = _service(2)   # requires syslog_drain
ROUTE_SERVICE = _service(3)    # requires route_forwarding
VOLUME_SERVICE = _service(4)   # requires volume_mount
HIDDEN_SERVICE = _service(5)   # bindable, bindings_retrievable false
NONE_SERVICE = _service(6)     # not bindable

FAST = _plan(1)                # every operation at once
SLOW = _plan(2)                # bind and unbind 1.5 s
SHORT = _plan(3)               # bind and unbind 0.3 s
NOT_BINDABLE = _plan(4)        # plan-level bindable false
REQUIRES_APP = _plan(5)        # requires_app
ASYNC_ONLY = _plan(6)          # bind_async_required, bind and unbind 0.3 s
ROTATABLE = _plan(7)           # binding_rotatable, binding_ttl_s 3600
FAIL_BIND = _plan(8)           # fail_on bind
FAIL_UNBIND = _plan(9)         # fail_on unbind
SLOW_CHANGE = _plan(10)        # update and deprovision 1.5 s, bind at once
SLOW_PROVISION = _plan(11)     # provision 1.5 s
SYNC_TIMEOUT = _plan(12)       # sync_timeout_ms 300, bind 1.5 s
FAST_OTHER = _plan(13)         # a second instant plan of SERVICE
UNBIND_SLOW = _plan(14)        # bind at once, unbind 1.5 s
SYSLOG = _plan(21)
ROUTE = _plan(31)
VOLUME = _plan(41)
HIDDEN = _plan(51)
UNBINDABLE = _plan(61)

PLAN_SERVICE = {SYSLOG: SYSLOG_SERVICE, ROUTE: ROUTE_SERVICE, VOLUME: VOLUME_SERVICE,
                HIDDEN: HIDDEN_SERVICE, UNBINDABLE: NONE_SERVICE}
SERVICE_REQUIRES = {SYSLOG_SERVICE: ("syslog_drain",), ROUTE_SERVICE: ("route_forwarding",),
                    VOLUME_SERVICE: ("volume_mount",)}
TTL_PLANS = {ROTATABLE: 3600}

NAMESPACE = "osbq"
REGISTRY_KEY = NAMESPACE + ":gateways"

VERSIONS = ("2.12", "2.14", "2.17")
STATES = ("in progress", "succeeded", "failed")
APP_GUID = "app-guid-1"
ROUTE_ADDRESS = "https://app-1.apps.example.test"

CODE_DESCRIPTIONS = {
    "AsyncRequired":
        "This service plan requires client support for asynchronous service operations.",
    "ConcurrencyError":
        "The Service Broker does not support concurrent requests that mutate the same resource.",
}

# The spec's Binding Metadata pattern, yyyy-mm-ddThh:mm:ss.sZ.
TIMESTAMP = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\dZ$"

RETRY_AFTER_MIN_S = 1
RETRY_AFTER_MAX_S = 7

# Bounds of every wait (seconds). Operations take at most 1.5 s in this catalog.
OP_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0

# Lists the operation records of one instance (and binding: ARGV[3], "*" for any) in one step.
OPS_SCRIPT = """
local found = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  local h = redis.call('HMGET', key, 'instance', 'binding')
  if h[1] == ARGV[2] and (ARGV[3] == '*' or (h[2] or '') == ARGV[3]) then
    found[#found + 1] = string.sub(key, #ARGV[1])
  end
end
return found
"""


def new_id():
    return str(uuid.uuid4())


def api(version):
    major, minor = version.split(".")
    return int(major) * 100 + int(minor)


def _with(body, extra):
    for k, v in extra.items():
        if v is None:
            body.pop(k, None)
        else:
            body[k] = v
    return body


def instance_body(plan, **extra):
    return _with({"service_id": PLAN_SERVICE.get(plan, SERVICE), "plan_id": plan,
                  "context": {"platform": "osbq-tests", "instance_name": "it"},
                  "organization_guid": "org-guid-1", "space_guid": "space-guid-1"}, extra)


def bind_body(plan, **extra):
    """A bind body as current platforms send it: context and bind_resource with app_guid and
    route (Request (Creating a Service Binding), Bind Resource Object)."""
    return _with({"service_id": PLAN_SERVICE.get(plan, SERVICE), "plan_id": plan,
                  "context": {"platform": "osbq-tests", "namespace": "it"},
                  "bind_resource": {"app_guid": APP_GUID, "route": ROUTE_ADDRESS}}, extra)


def expected_fields(plan, version, route=True):
    """The fields of a 200/201 binding body for plan at version (0004, after the table)."""
    requires = SERVICE_REQUIRES.get(PLAN_SERVICE.get(plan, SERVICE), ())
    v = api(version)
    fields = {"credentials"}
    if "syslog_drain" in requires:
        fields.add("syslog_drain_url")
    if "route_forwarding" in requires and route and v >= 208:
        fields.add("route_service_url")
    if "volume_mount" in requires and v >= 210:
        fields.add("volume_mounts")
    if v >= 215:
        fields.add("endpoints")
    if plan in TTL_PLANS and v >= 216:
        fields.add("metadata")
    return fields


def parse_timestamp(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc)


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


class BindingTestCase(unittest.TestCase):
    """One stack per class: redis-server, 2 gateways, 2 workers."""

    GATEWAYS = 2
    WORKERS = 2

    @classmethod
    def setUpClass(cls):
        cls.stack = harness.Stack(catalog=CATALOG, extra_env={
            "OSBQ_RETRY_AFTER_MIN_S": str(RETRY_AFTER_MIN_S),
            "OSBQ_RETRY_AFTER_MAX_S": str(RETRY_AFTER_MAX_S),
        })
        try:
            cls.gateways, cls.workers = harness.start_cluster(cls.stack, cls.GATEWAYS,
                                                              cls.WORKERS)
            harness.wait_workers_connected(cls.gateways, cls.WORKERS, CONNECT_TIMEOUT_S)
            cls.warm_up()
        except BaseException:
            cls.stack.stop()
            raise

    @classmethod
    def warm_up(cls):
        """A synchronous provision and bind through each gateway."""
        for gateway in cls.gateways:
            c = cls.stack.client(gateway)
            try:
                iid, bid = new_id(), new_id()
                r = c.request("PUT", "/v2/service_instances/%s" % iid, instance_body(FAST))
                if r.status != 201:
                    raise AssertionError("warm-up provision: %d %r" % (r.status, r.body))
                r = c.request("PUT", "/v2/service_instances/%s/service_bindings/%s" % (iid, bid),
                              bind_body(FAST))
                if r.status != 201:
                    raise AssertionError("warm-up bind: %d %r" % (r.status, r.body))
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
    def ipath(iid, suffix="", **query):
        p = "/v2/service_instances/" + urllib.parse.quote(iid, safe="") + suffix
        q = [(k, v) for k, v in query.items() if v is not None]
        return p + ("?" + urllib.parse.urlencode(q) if q else "")

    def bpath(self, iid, bid, suffix="", **query):
        return self.ipath(iid, "/service_bindings/" + urllib.parse.quote(bid, safe="") + suffix,
                          **query)

    @staticmethod
    def incomplete(value):
        if value is None:
            return None
        return "true" if value is True else "false" if value is False else value

    def provision(self, iid, body, accepts_incomplete=None, gw=0, version="2.17"):
        return self.client(gw, version).request(
            "PUT", self.ipath(iid, accepts_incomplete=self.incomplete(accepts_incomplete)), body)

    def patch(self, iid, body, accepts_incomplete=None, gw=0, version="2.17"):
        return self.client(gw, version).request(
            "PATCH", self.ipath(iid, accepts_incomplete=self.incomplete(accepts_incomplete)), body)

    def deprovision(self, iid, plan, accepts_incomplete=None, gw=0, version="2.17"):
        return self.client(gw, version).request("DELETE", self.ipath(
            iid, accepts_incomplete=self.incomplete(accepts_incomplete),
            service_id=PLAN_SERVICE.get(plan, SERVICE), plan_id=plan))

    def instance_last_operation(self, iid, operation=None, gw=0):
        return self.client(gw).request("GET", self.ipath(iid, "/last_operation",
                                                         operation=operation))

    def bind(self, iid, bid, body, accepts_incomplete=None, gw=0, version="2.17"):
        return self.client(gw, version).request(
            "PUT", self.bpath(iid, bid, accepts_incomplete=self.incomplete(accepts_incomplete)),
            body)

    def unbind(self, iid, bid, plan=FAST, accepts_incomplete=None, gw=0, version="2.17",
               service_id=None, plan_id=None):
        return self.client(gw, version).request("DELETE", self.bpath(
            iid, bid, accepts_incomplete=self.incomplete(accepts_incomplete),
            service_id=service_id or PLAN_SERVICE.get(plan, SERVICE), plan_id=plan_id or plan))

    def fetch(self, iid, bid, gw=0, version="2.17"):
        return self.client(gw, version).request("GET", self.bpath(iid, bid))

    def last_operation(self, iid, bid, operation=None, gw=0, version="2.17"):
        """GET the binding's last_operation; a 200 body is checked against the spec's Body
        table (Polling Last Operation for Service Bindings)."""
        r = self.client(gw, version).request(
            "GET", self.bpath(iid, bid, "/last_operation", operation=operation))
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
        for flag in ("instance_usable", "update_repeatable"):
            self.assertNotIn(flag, body, "Service Broker Errors: %s MUST NOT be present for "
                                         "errors of binding operations" % flag)
        return body

    def assertAccepted(self, r):
        """202 with a non-empty operation and nothing else: Binding, 202 "Information regarding
        the Service Binding (i.e. credentials) MUST NOT be returned in this response"."""
        self.assertEqual(r.status, 202, r.body)
        body = r.json()
        self.assertIsInstance(body, dict)
        self.assertEqual(set(body), {"operation"}, r.body)
        op = body["operation"]
        self.assertIsInstance(op, str, r.body)
        self.assertNotEqual(op, "")
        self.assertLessEqual(len(op), 10000)
        return op

    def assertBinding(self, r, status, plan, version="2.17", route=True):
        """A 200/201 binding: exactly the fields 0004 gives plan's service at version, with
        credentials, and what they hold well formed (Binding, Response, Body)."""
        self.assertEqual(r.status, status, r.body)
        body = r.json()
        self.assertIsInstance(body, dict, r.body)
        return self.checkBinding(body, plan, version, route, r.body)

    def assertFetched(self, r, plan, version="2.17", parameters=None, route=True):
        """A fetched binding (Fetching a Service Binding, Body): the fields of the 201 plus
        parameters (equal to parameters when given). Returns the body without parameters."""
        self.assertEqual(r.status, 200, r.body)
        body = r.json()
        self.assertIsInstance(body, dict, r.body)
        got = body.pop("parameters", None)
        if parameters is not None:
            self.assertEqual(got, parameters, r.body)
        return self.checkBinding(body, plan, version, route, r.body)

    def checkBinding(self, body, plan, version, route, raw):
        self.assertEqual(set(body), expected_fields(plan, version, route), raw)
        creds = body["credentials"]
        self.assertIsInstance(creds, dict)
        for k in ("username", "password", "uri"):
            self.assertIsInstance(creds.get(k), str, raw)
            self.assertNotEqual(creds[k], "")
        if "syslog_drain_url" in body:
            self.assertIsInstance(body["syslog_drain_url"], str)
            self.assertNotEqual(body["syslog_drain_url"], "")
        if "route_service_url" in body:
            self.assertIsInstance(body["route_service_url"], str)
            self.assertNotEqual(body["route_service_url"], "")
        if "volume_mounts" in body:
            mounts = body["volume_mounts"]
            self.assertIsInstance(mounts, list)
            self.assertGreater(len(mounts), 0)
            for m in mounts:
                for k in ("driver", "container_dir", "mode", "device_type"):
                    self.assertIsInstance(m.get(k), str, m)
                self.assertIn(m["mode"], ("r", "rw"))
                self.assertEqual(m["device_type"], "shared")
                self.assertIsInstance(m.get("device"), dict)
                self.assertIsInstance(m["device"].get("volume_id"), str)
        if "endpoints" in body:
            self.assertIsInstance(body["endpoints"], list)
            for e in body["endpoints"]:
                self.assertIsInstance(e.get("host"), str, e)
                self.assertIsInstance(e.get("ports"), list, e)
                self.assertGreater(len(e["ports"]), 0)
                for p in e["ports"]:
                    self.assertRegex(p, r"^[0-9]+(-[0-9]+)?$")
                self.assertIn(e.get("protocol", "tcp"), ("tcp", "udp", "all"))
        if "metadata" in body:
            self.assertMetadata(body["metadata"], TTL_PLANS[plan])
        return body

    def assertMetadata(self, metadata, ttl_s, made_at=None):
        """Binding Metadata Object: expires_at and renew_before follow yyyy-mm-ddThh:mm:ss.sZ,
        renew_before <= expires_at; README: now + ttl and now + 80% of it."""
        self.assertIsInstance(metadata, dict)
        self.assertRegex(metadata.get("expires_at", ""), TIMESTAMP)
        self.assertRegex(metadata.get("renew_before", ""), TIMESTAMP)
        expires = parse_timestamp(metadata["expires_at"])
        renew = parse_timestamp(metadata["renew_before"])
        self.assertLessEqual(renew, expires)
        now = made_at or datetime.datetime.now(datetime.timezone.utc)
        self.assertLess(abs((expires - now).total_seconds() - ttl_s), 120, metadata)
        self.assertLess(abs((renew - now).total_seconds() - ttl_s * 0.8), 120, metadata)

    # ---- Redis ----

    def ops_for(self, iid, bid="*"):
        """Ids of the operation records of an instance's binding (or of all its operations)."""
        return set(self.stack.redis.command("EVAL", OPS_SCRIPT, 0, NAMESPACE + ":op:*", iid,
                                            bid) or [])

    def binding_key(self, iid, bid):
        return "%s:binding:%s:%s" % (NAMESPACE, iid, bid)

    def binding_record(self, iid, bid):
        return harness.redis_hash(self.stack.redis, self.binding_key(iid, bid))

    def op_record(self, op):
        return harness.redis_hash(self.stack.redis, NAMESPACE + ":op:" + op)

    def assertRefused(self, iid, bid, request, status, error=None):
        """Runs request(): the error answer, no new operation of the instance and the
        binding's record unchanged (Service Broker Errors: a 4xx leaves the broker's
        resources semantically unchanged)."""
        ops = self.ops_for(iid)
        record = self.binding_record(iid, bid)
        record.pop("result", None)
        r = request()
        body = self.assertError(r, status, error)
        self.assertEqual(self.ops_for(iid), ops, "a refused request made an operation")
        after = self.binding_record(iid, bid)
        after.pop("result", None)
        self.assertEqual(after, record, "a refused request changed the binding")
        return body

    def wait_quiet(self):
        harness.wait_until(lambda: not self.stack.redis.command("ZCARD", NAMESPACE + ":queue"),
                           OP_TIMEOUT_S, "every operation to end")

    # ---- waits ----

    def wait_done(self, iid, bid, operation=None, gw=0, version="2.17", timeout_s=OP_TIMEOUT_S):
        """Polls the binding's last_operation until the operation ended; returns the last
        response (200 succeeded/failed, or 410 for a finished unbind)."""
        deadline = time.monotonic() + timeout_s
        while True:
            r = self.last_operation(iid, bid, operation, gw, version)
            if r.status == 410 or (r.status == 200 and r.json()["state"] != "in progress"):
                return r
            self.assertEqual(r.status, 200, r.body)
            if time.monotonic() > deadline:
                self.fail("operation %s of binding %s still in progress after %ss"
                          % (operation, bid, timeout_s))
            time.sleep(0.02)

    def wait_state(self, iid, bid, state, operation=None, gw=0, version="2.17"):
        r = self.wait_done(iid, bid, operation, gw, version)
        self.assertEqual(r.status, 200, r.body)
        body = r.json()
        self.assertEqual(body["state"], state, r.body)
        return body

    def wait_gone(self, iid, bid, operation=None, gw=0):
        self.assertError(self.wait_done(iid, bid, operation, gw), 410)

    def wait_instance(self, iid, operation, want="succeeded"):
        """Polls an instance operation until it ended (410 for a finished deprovision)."""
        deadline = time.monotonic() + OP_TIMEOUT_S
        while True:
            r = self.instance_last_operation(iid, operation)
            if want == "gone" and r.status == 410:
                return
            self.assertEqual(r.status, 200, r.body)
            state = r.json()["state"]
            if state != "in progress":
                self.assertEqual(state, want, r.body)
                return
            if time.monotonic() > deadline:
                self.fail("instance operation %s still in progress" % operation)
            time.sleep(0.02)

    # ---- shortcuts ----

    def provisioned(self, plan=FAST, iid=None, **extra):
        """A synchronously provisioned instance; returns its id."""
        iid = iid or new_id()
        r = self.provision(iid, instance_body(plan, **extra))
        self.assertEqual(r.status, 201, r.body)
        return iid

    def bound(self, iid, plan=FAST, bid=None, gw=0, version="2.17", **extra):
        """A synchronous bind; returns (binding id, 201 body)."""
        bid = bid or new_id()
        r = self.bind(iid, bid, bind_body(plan, **extra), None, gw, version)
        return bid, self.assertBinding(r, 201, plan, version, route="bind_resource" not in extra)

    def bind_async(self, iid, plan, bid=None, gw=0, version="2.17", **extra):
        """An accepted asynchronous bind; returns (binding id, operation)."""
        bid = bid or new_id()
        return bid, self.assertAccepted(self.bind(iid, bid, bind_body(plan, **extra), True, gw,
                                                  version))

    def race(self, requests):
        """Sends requests (callables) at the same moment from threads; returns responses."""
        barrier = threading.Barrier(len(requests))

        def run(request):
            barrier.wait(5)
            return request()

        with ThreadPoolExecutor(len(requests)) as pool:
            return [f.result() for f in [pool.submit(run, q) for q in requests]]


# =====================================================================================
class BindValidation(BindingTestCase):
    """0004 Bind "Validation (400, nothing written)" and the unbind and last_operation
    parameters: every refused request leaves Redis exactly as it was."""

    def refused(self, request, status=400, error=None):
        self.wait_quiet()
        before = harness.redis_snapshot(self.stack.redis, ignore={REGISTRY_KEY})
        r = request()
        self.assertEqual(harness.redis_snapshot(self.stack.redis, ignore={REGISTRY_KEY}), before,
                         "Redis content changed by a refused request")
        return self.assertError(r, status, error)

    def test_bind_400_body_not_a_json_object(self):
        """Binding, Response: 400 MUST be returned if the request is malformed; 0004: body a
        JSON object."""
        iid = self.provisioned(FAST)
        for raw in ("", "not json", "[]", '"text"', "42", "null", '{"service_id": '):
            bid = new_id()
            for incomplete in (None, True):
                for version in VERSIONS:
                    self.refused(lambda: self.client(0, version).request(
                        "PUT", self.bpath(iid, bid,
                                          accepts_incomplete=self.incomplete(incomplete)),
                        raw, headers={"Content-Type": "application/json"}))
            self.assertError(self.last_operation(iid, bid), 404)

    def test_bind_400_service_id_or_plan_id_missing_or_invalid(self):
        """Request (Creating a Service Binding), Body: service_id* and plan_id* are required;
        0004: non-empty strings naming a plan of that service, which must be the instance's."""
        iid = self.provisioned(FAST)
        bodies = [
            bind_body(FAST, service_id=None), bind_body(FAST, plan_id=None),
            bind_body(FAST, service_id=""), bind_body(FAST, plan_id=""),
            bind_body(FAST, service_id=7), bind_body(FAST, plan_id=["x"]),
            bind_body(FAST, plan_id="no-such-plan"),
            bind_body(FAST, service_id="no-such-service"),
            bind_body(SYSLOG, service_id=SERVICE),  # a plan of another service
            bind_body(FAST, service_id=SYSLOG_SERVICE),
            bind_body(FAST_OTHER),              # a plan of the service, not the instance's
            bind_body(SYSLOG),                  # another service and its plan
        ]
        for body in bodies:
            bid = new_id()
            for incomplete in (None, True):
                self.refused(lambda: self.bind(iid, bid, body, incomplete))
            self.refused(lambda: self.bind(iid, bid, body, True, version="2.12"))

    def test_bind_400_optional_fields_of_the_wrong_type(self):
        """Request (Creating a Service Binding), Body: app_guid "If present, MUST be a
        non-empty string"; 0004: app_guid, predecessor_binding_id non-empty strings and
        parameters, context, bind_resource objects when present."""
        iid = self.provisioned(ROTATABLE)
        _, _ = self.bound(iid, ROTATABLE)
        variants = [{"app_guid": ""}, {"app_guid": 5}, {"app_guid": {}},
                    {"predecessor_binding_id": ""}, {"predecessor_binding_id": 3},
                    {"parameters": []}, {"parameters": "x"}, {"parameters": 3},
                    {"context": "x"}, {"context": [1]},
                    {"bind_resource": "x"}, {"bind_resource": []}, {"bind_resource": 1}]
        for extra in variants:
            bid = new_id()
            for incomplete in (None, True):
                self.refused(lambda: self.bind(iid, bid, bind_body(ROTATABLE, **extra),
                                               incomplete))

    def test_unbind_400_without_service_id_or_plan_id(self):
        """Unbinding, Parameters: service_id* and plan_id* are REQUIRED; 400 "MUST be returned
        if the request is malformed or missing mandatory data"."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        base = self.bpath(iid, bid)
        for query in ("", "?service_id=%s" % SERVICE, "?plan_id=%s" % FAST,
                      "?service_id=&plan_id=%s" % FAST, "?service_id=%s&plan_id=" % SERVICE,
                      "?accepts_incomplete=true&plan_id=%s" % FAST):
            for version in VERSIONS:
                self.refused(lambda: self.client(0, version).request("DELETE", base + query))
        self.assertEqual(self.fetch(iid, bid).status, 200)

    def test_unbind_400_service_or_plan_not_the_bindings(self):
        """Unbinding, Parameters: service_id and plan_id MUST be the ids of the binding's
        offering and plan; 0004: 400 when they are not."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        for service_id, plan_id in ((SERVICE, FAST_OTHER), (SERVICE, SLOW),
                                    (SYSLOG_SERVICE, SYSLOG), (SYSLOG_SERVICE, FAST),
                                    (SERVICE, "no-such-plan")):
            for incomplete in (None, True):
                self.refused(lambda: self.unbind(iid, bid, accepts_incomplete=incomplete,
                                                 service_id=service_id, plan_id=plan_id))
        self.assertEqual(self.fetch(iid, bid).status, 200)
        r = self.unbind(iid, bid, FAST)
        self.assertEqual(r.status, 200, r.body)

    def test_binding_last_operation_400_empty_operation(self):
        """Polling Last Operation for Service Bindings, Parameters: operation "If present, MUST
        be a non-empty string"."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        self.refused(lambda: self.client().request(
            "GET", self.bpath(iid, bid, "/last_operation") + "?operation="))


# =====================================================================================
class Binding(BindingTestCase):
    """0004, Bind: the status table in its order."""

    def test_bind_400_plan_not_bindable(self):
        """Binding: unless bindable is declared, "Platforms MUST NOT make a binding request";
        0004: the plan is not bindable -> 400 (plan-level bindable false, or a service that is
        not bindable)."""
        for plan in (NOT_BINDABLE, UNBINDABLE):
            iid = self.provisioned(plan)
            bid = new_id()
            for version in VERSIONS:
                for incomplete in (None, True):
                    self.assertRefused(iid, bid, lambda: self.bind(
                        iid, bid, bind_body(plan), incomplete, version=version), 400)
            self.assertError(self.last_operation(iid, bid), 404)
            self.assertError(self.fetch(iid, bid), 404)

    def test_bind_422_async_required(self):
        """Binding, 422: "MUST also be returned if the Service Broker only supports
        asynchronous bindings ... and the request did not include ?accepts_incomplete=true",
        error AsyncRequired; 0004: also for API < 2.14, which has no asynchronous bindings."""
        iid = self.provisioned(ASYNC_ONLY)
        bid = new_id()
        for version in VERSIONS:
            for incomplete in (None, False, "1", "yes"):
                self.assertRefused(iid, bid, lambda: self.bind(
                    iid, bid, bind_body(ASYNC_ONLY), incomplete, version=version), 422,
                    "AsyncRequired")
        for version in ("2.12", "2.13"):
            self.assertRefused(iid, bid, lambda: self.bind(
                iid, bid, bind_body(ASYNC_ONLY), True, version=version), 422, "AsyncRequired")
        self.assertError(self.last_operation(iid, bid), 404)
        for version in ("2.14", "2.17"):
            bid, op = self.bind_async(iid, ASYNC_ONLY, version=version)
            self.wait_state(iid, bid, "succeeded", op, version=version)
            self.assertFetched(self.fetch(iid, bid, version=version), ASYNC_ONLY, version)

    def test_bind_422_requires_app(self):
        """Binding, 422: "MUST be returned if the Service Broker requires that app_guid be
        included in the request body", error RequiresApp; 0004: app_guid top level (the
        pre-2.8 form) or in bind_resource."""
        iid = self.provisioned(REQUIRES_APP)
        bid = new_id()
        for version in VERSIONS:
            for incomplete in (None, True):
                for resource in (None, {}, {"route": ROUTE_ADDRESS}):
                    self.assertRefused(iid, bid, lambda: self.bind(
                        iid, bid, bind_body(REQUIRES_APP, bind_resource=resource), incomplete,
                        version=version), 422, "RequiresApp")
        self.assertError(self.last_operation(iid, bid), 404)
        # The deprecated top-level app_guid, as platforms before 2.8 send it, and with 2.17.
        for version in ("2.7", "2.17"):
            self.bound(iid, REQUIRES_APP, version=version, bind_resource=None,
                       app_guid="app-guid-%s" % version)
        # bind_resource.app_guid, sync and async.
        self.bound(iid, REQUIRES_APP, bind_resource={"app_guid": "app-guid-3"})
        bid, op = self.bind_async(iid, REQUIRES_APP, bind_resource={"app_guid": "app-guid-4"})
        self.wait_state(iid, bid, "succeeded", op)
        # The job carries the top-level app_guid as bind_resource.app_guid (0004).
        bid, _ = self.bound(iid, REQUIRES_APP, bind_resource=None, app_guid="app-guid-5")
        resource = json.loads(self.binding_record(iid, bid).get("bind_resource", "null"))
        self.assertEqual(resource, {"app_guid": "app-guid-5"})

    def test_bind_404_unknown_instance_failed_provision_or_deprovisioned(self):
        """Request (Creating a Service Binding), Route: ":instance_id MUST be the ID of a
        previously provisioned Service Instance"; 0004: unknown instance, or its provision
        failed, or it was deprovisioned -> 404."""
        unknown = new_id()
        failed = new_id()
        r = self.provision(failed, instance_body(FAST, parameters={"sim_fail": True}))
        self.assertError(r, 502)
        gone = self.provisioned(FAST)
        self.assertEqual(self.deprovision(gone, FAST).status, 200)
        for iid in (unknown, failed, gone):
            bid = new_id()
            for version in VERSIONS:
                for incomplete in (None, True):
                    for gw in (0, 1):
                        self.assertRefused(iid, bid, lambda: self.bind(
                            iid, bid, bind_body(FAST), incomplete, gw, version), 404)
            self.assertError(self.last_operation(iid, bid), 404)

    def test_bind_422_concurrency_error_while_an_instance_operation_runs(self):
        """Blocking Operations: a request the broker cannot process due to a concurrency issue
        MUST get 422 ConcurrencyError; 0004: a provision, update or deprovision runs. Once it
        ended, the bind goes through."""
        provisioning = new_id()
        self.assertEqual(self.provision(provisioning, instance_body(SLOW_PROVISION), True).status,
                         202)
        updating = self.provisioned(SLOW_CHANGE)
        r = self.patch(updating, {"service_id": SERVICE, "parameters": {"v": 2}}, True)
        self.assertEqual(r.status, 202, r.body)
        update_op = r.json()["operation"]
        deprovisioning = self.provisioned(SLOW_CHANGE)
        r = self.deprovision(deprovisioning, SLOW_CHANGE, True)
        self.assertEqual(r.status, 202, r.body)
        for iid, plan in ((provisioning, SLOW_PROVISION), (updating, SLOW_CHANGE),
                          (deprovisioning, SLOW_CHANGE)):
            bid = new_id()
            for version in VERSIONS:
                for incomplete in (None, True):
                    self.assertRefused(iid, bid, lambda: self.bind(
                        iid, bid, bind_body(plan), incomplete, 1, version), 422,
                        "ConcurrencyError")
        self.wait_instance(updating, update_op)
        self.bound(updating, SLOW_CHANGE)
        self.wait_instance(provisioning, None)
        self.bound(provisioning, SLOW_PROVISION)

    def test_bind_new_id_sync_201_with_the_binding(self):
        """Synchronous Operations: 201 Created for bind; Binding, 201 "MUST be returned if the
        Service Binding was created as a result of this request", with credentials."""
        iid = self.provisioned(FAST)
        for version in VERSIONS:
            for incomplete in (None, False):
                bid, body = self.bound(iid, version=version, parameters={"n": 1})
                self.assertEqual(self.binding_record(iid, bid)["state"], "bound")
                self.assertEqual(self.last_operation(iid, bid).json()["state"], "succeeded")
                self.assertEqual(self.fetch(iid, bid).json()["credentials"],
                                 body["credentials"])
        # 2.12 has no asynchronous bindings: accepts_incomplete=true still gets the 201.
        self.bound(iid, version="2.12")
        r = self.bind(iid, new_id(), bind_body(FAST), True, version="2.12")
        self.assertBinding(r, 201, FAST, "2.12")

    def test_bind_new_id_async_202_operation_without_credentials(self):
        """Asynchronous Operations: with accepts_incomplete=true, 202; Binding, 202: the
        operation, and "Information regarding the Service Binding (i.e. credentials) MUST NOT
        be returned"; Fetching a Service Binding then gives it (2.14+)."""
        iid = self.provisioned(SLOW)
        started = []
        for version in ("2.14", "2.17"):
            for gw in (0, 1):
                bid, op = self.bind_async(iid, SLOW, gw=gw, version=version,
                                          parameters={"v": version})
                started.append((bid, op, version))
        for bid, op, version in started:
            r = self.last_operation(iid, bid, op, 1, version)
            self.assertEqual(r.json()["state"], "in progress", r.body)
            self.assertEqual(self.binding_record(iid, bid)["state"], "binding")
            self.assertNotIn("result", self.binding_record(iid, bid))
        for bid, op, version in started:
            self.wait_state(iid, bid, "succeeded", op, version=version)
            self.assertFetched(self.fetch(iid, bid, version=version), SLOW, version,
                               {"v": version})
            self.assertEqual(self.ops_for(iid, bid), {op})

    def test_bind_new_after_failed_bind(self):
        """0004 Bind, "new binding id (or one whose bind failed ...)": a failed bind does not
        block its id, whatever the new request; Orphan Mitigation: the platform may retry."""
        iid = self.provisioned(FAST)
        bid = new_id()
        r = self.bind(iid, bid, bind_body(FAST, parameters={"sim_fail": True}))
        self.assertError(r, 502)
        r = self.bind(iid, bid, bind_body(FAST, parameters={"a": 1}))
        self.assertBinding(r, 201, FAST)
        bid2, op1 = self.bind_async(iid, FAST, parameters={"sim_fail": True})
        self.wait_state(iid, bid2, "failed", op1)
        op2 = self.assertAccepted(self.bind(iid, bid2, bind_body(FAST, parameters={"sim_fail":
                                                                                     True}),
                                            True))
        self.assertNotEqual(op2, op1)
        self.wait_state(iid, bid2, "failed", op2)
        r = self.bind(iid, bid2, bind_body(FAST))
        self.assertBinding(r, 201, FAST)
        self.assertEqual(len(self.ops_for(iid, bid2)), 3)

    def test_bind_new_after_unbind(self):
        """0004 Bind, "new binding id (or ... that was unbound)": an unbound id binds again,
        with new credentials (Credentials: unique, so access can be revoked per binding)."""
        iid = self.provisioned(FAST)
        bid, first = self.bound(iid, parameters={"a": 1})
        self.assertEqual(self.unbind(iid, bid).status, 200)
        for version in VERSIONS:
            r = self.bind(iid, bid, bind_body(FAST, parameters={"a": 1}), version=version)
            again = self.assertBinding(r, 201, FAST, version)
            self.assertNotEqual(again["credentials"]["password"],
                                first["credentials"]["password"])
            self.assertEqual(self.unbind(iid, bid, version=version).status, 200)
        op = self.assertAccepted(self.bind(iid, bid, bind_body(FAST), True))
        self.wait_state(iid, bid, "succeeded", op)

    def test_bind_identical_in_progress_202_same_operation(self):
        """Binding, 202: "The operation string MUST match that returned for the original
        request" and "a re-sent PUT request MUST return a 202 Accepted, not a 200 OK, if the
        Service Binding is not yet fully created"."""
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW, parameters={"k": "v"})
        for version in ("2.14", "2.17"):
            for gw in (0, 1):
                r = self.bind(iid, bid, bind_body(SLOW, parameters={"k": "v"}), True, gw,
                              version)
                self.assertEqual(self.assertAccepted(r), op)
        self.assertEqual(self.last_operation(iid, bid, op, gw=1).json()["state"], "in progress")
        self.assertEqual(self.ops_for(iid, bid), {op})
        self.wait_state(iid, bid, "succeeded", op)

    def test_bind_identical_in_progress_sync_waits_for_same_operation(self):
        """0004 Bind: same id, identical request, bind in progress, sync: waits for it
        (Synchronous Operations: the answer means completion), at 2.12 and 2.17, with the
        credentials the binding keeps."""
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW)
        started = time.monotonic()
        answers = self.race([lambda: self.bind(iid, bid, bind_body(SLOW), None, 1, "2.17"),
                             lambda: self.bind(iid, bid, bind_body(SLOW), True, 0, "2.12")])
        self.assertGreater(time.monotonic() - started, 0.5, "answered before the bind ended")
        fetched = self.fetch(iid, bid).json()
        for r, version in zip(answers, ("2.17", "2.12")):
            self.assertIn(r.status, (200, 201), r.body)
            body = self.assertBinding(r, r.status, SLOW, version)
            self.assertEqual(body["credentials"], fetched["credentials"])
        self.assertEqual(self.last_operation(iid, bid, op).json()["state"], "succeeded")
        self.assertEqual(self.ops_for(iid, bid), {op})

    def test_bind_identical_bound_200_same_credentials(self):
        """Binding, 200: "SHOULD be returned if the Service Binding already exists and the
        requested parameters are identical"; 0004: with the same credentials, read from the
        one field that stores them, so the 201, every re-PUT 200 and a fetch agree."""
        iid = self.provisioned(FAST)
        bid, created = self.bound(iid, parameters={"n": 1})
        for version in VERSIONS:
            for gw in (0, 1):
                for incomplete in (None, True):
                    r = self.bind(iid, bid, bind_body(FAST, parameters={"n": 1}), incomplete,
                                  gw, version)
                    body = self.assertBinding(r, 200, FAST, version)
                    self.assertEqual(body["credentials"], created["credentials"])
                    if "endpoints" in body:
                        self.assertEqual(body["endpoints"], created["endpoints"])
            if api(version) >= 214:
                fetched = self.fetch(iid, bid, 1, version).json()
                self.assertEqual(fetched["credentials"], created["credentials"])
        # A binding made asynchronously: the first fetch and every re-PUT agree too.
        abid, op = self.bind_async(iid, FAST, parameters={"n": 2})
        self.wait_state(iid, abid, "succeeded", op)
        fetched = self.fetch(iid, abid).json()["credentials"]
        for gw in (0, 1):
            r = self.bind(iid, abid, bind_body(FAST, parameters={"n": 2}), None, gw)
            self.assertEqual(self.assertBinding(r, 200, FAST)["credentials"], fetched)
        self.assertNotEqual(fetched, created["credentials"])
        self.assertEqual(len(self.ops_for(iid, bid)), 1)

    def test_bind_identical_means_same_canonical_json(self):
        """0004 / 0003 Idempotency digest: key order does not make a request different
        (Binding, 200)."""
        iid = self.provisioned(FAST)
        bid, created = self.bound(iid, parameters={"a": 1, "b": {"x": 1, "y": [1, 2]}},
                                  context={"platform": "p", "z": 2})
        raw = ('{"bind_resource":{"route":"%s","app_guid":"%s"},"context":{"z":2,"platform":"p"},'
               '"plan_id":"%s","parameters":{"b":{"y":[1,2],"x":1},"a":1},"service_id":"%s"}'
               % (ROUTE_ADDRESS, APP_GUID, FAST, SERVICE))
        r = self.client().request("PUT", self.bpath(iid, bid), raw,
                                  headers={"Content-Type": "application/json"})
        self.assertEqual(self.assertBinding(r, 200, FAST)["credentials"], created["credentials"])

    def test_bind_different_request_409(self):
        """Binding, 409: "MUST be returned if a Service Binding with the same id, for the same
        Service Instance, already exists or is being created but with different parameters";
        0004: same id, different request."""
        iid = self.provisioned(FAST)
        bid, created = self.bound(iid, parameters={"size": 1})
        variants = [
            bind_body(FAST, parameters={"size": 2}),
            bind_body(FAST, parameters=None),
            bind_body(FAST, parameters={"size": 1}, context={"platform": "other"}),
            bind_body(FAST, parameters={"size": 1}, context=None),
            bind_body(FAST, parameters={"size": 1}, bind_resource={"app_guid": "app-guid-2"}),
            bind_body(FAST, parameters={"size": 1}, bind_resource=None),
            bind_body(FAST, parameters={"size": 1}, app_guid=APP_GUID),
        ]
        for body in variants:
            for version in VERSIONS:
                for incomplete in (None, True):
                    self.assertRefused(iid, bid, lambda: self.bind(iid, bid, body, incomplete,
                                                                   version=version), 409)
        self.assertEqual(self.fetch(iid, bid).json()["credentials"], created["credentials"])
        # While it is being created.
        sid = self.provisioned(SLOW)
        sbid, op = self.bind_async(sid, SLOW, parameters={"size": 1})
        for incomplete in (None, True):
            self.assertRefused(sid, sbid, lambda: self.bind(
                sid, sbid, bind_body(SLOW, parameters={"size": 9}), incomplete, 1), 409)
        self.assertEqual(self.ops_for(sid, sbid), {op})
        self.wait_state(sid, sbid, "succeeded", op)

    def test_bind_422_concurrency_error_while_an_unbind_of_it_runs(self):
        """Binding, 422 / Blocking Operations: ConcurrencyError when the binding is being
        processed by another operation; 0004: an unbind of this binding runs."""
        iid = self.provisioned(UNBIND_SLOW)
        bid, _ = self.bound(iid, UNBIND_SLOW)
        uop = self.assertAccepted(self.unbind(iid, bid, UNBIND_SLOW, True))
        for version in VERSIONS:
            for incomplete in (None, True):
                self.assertRefused(iid, bid, lambda: self.bind(
                    iid, bid, bind_body(UNBIND_SLOW), incomplete, 1, version), 422,
                    "ConcurrencyError")
        self.wait_gone(iid, bid, uop)
        self.bound(iid, UNBIND_SLOW, bid)

    def test_bind_ids_with_key_separators_stay_distinct(self):
        """Request (Creating a Service Binding), Route: binding_id is any non-empty string;
        URL Properties: ids are percent-encoded in URLs; architecture: ids are encoded in
        Redis keys, so instance "a" binding "b:c" and instance "a:b" binding "c" are two
        bindings, and "*" matches nothing else."""
        base = new_id()
        first = self.provisioned(FAST, iid=base)
        second = self.provisioned(FAST, iid=base + ":x")
        _, one = self.bound(first, bid="x:y")
        _, two = self.bound(second, bid="y")
        _, three = self.bound(first, bid="*")
        passwords = {b["credentials"]["password"] for b in (one, two, three)}
        self.assertEqual(len(passwords), 3)
        for iid, bid, body in ((first, "x:y", one), (second, "y", two), (first, "*", three)):
            self.assertEqual(self.fetch(iid, bid).json()["credentials"], body["credentials"])
        self.assertEqual(self.unbind(first, "*").status, 200)
        self.assertEqual(self.fetch(first, "x:y").status, 200)
        self.assertEqual(self.unbind(first, "x:y").status, 200)
        self.assertEqual(self.fetch(second, "y").json()["credentials"], two["credentials"])

    def test_bind_sync_backend_failure_502(self):
        """0004 Bind: sync and the backend fails -> 502 with its description (Service Broker
        Errors: a user-facing message explaining why); the binding does not exist."""
        iid = self.provisioned(FAIL_BIND)
        for version in VERSIONS:
            bid = new_id()
            body = self.assertError(self.bind(iid, bid, bind_body(FAIL_BIND), version=version),
                                    502)
            self.assertIn("fail_on", body["description"])
            self.assertNotIn("credentials", body)
            self.assertEqual(self.binding_record(iid, bid)["state"], "failed")
            self.assertNotIn("result", self.binding_record(iid, bid))
            last = self.last_operation(iid, bid).json()
            self.assertEqual(last["state"], "failed")
            self.assertIn("fail_on", last.get("description", ""))
            self.assertError(self.fetch(iid, bid), 404)
        fid = self.provisioned(FAST)
        body = self.assertError(self.bind(fid, new_id(), bind_body(FAST, parameters={
            "sim_fail": True})), 502)
        self.assertIn("sim_fail", body["description"])

    def test_bind_sync_timeout_504_bind_goes_on(self):
        """0004 Bind: sync and sync_timeout_ms passes -> 504; the bind goes on, its
        last_operation tells its end and the binding is then fetched (Orphan Mitigation)."""
        iid = self.provisioned(SYNC_TIMEOUT)
        bid = new_id()
        started = time.monotonic()
        r = self.bind(iid, bid, bind_body(SYNC_TIMEOUT))
        took = time.monotonic() - started
        self.assertError(r, 504)
        self.assertGreaterEqual(took, 0.25)
        self.assertLess(took, 1.2, "the 504 came long after sync_timeout_ms (300 ms)")
        self.assertEqual(self.last_operation(iid, bid).json()["state"], "in progress")
        self.wait_state(iid, bid, "succeeded")
        fetched = self.assertFetched(self.fetch(iid, bid), SYNC_TIMEOUT)
        r = self.bind(iid, bid, bind_body(SYNC_TIMEOUT))
        self.assertEqual(self.assertBinding(r, 200, SYNC_TIMEOUT)["credentials"],
                         fetched["credentials"])


# =====================================================================================
class BindingFields(BindingTestCase):
    """0004, after the table: which fields a binding carries, by service and version."""

    def test_bind_fields_gated_by_requires(self):
        """Binding, Body / Types of Binding: syslog_drain_url, route_service_url and
        volume_mounts need "requires" to list syslog_drain, route_forwarding, volume_mount
        ("or the Platform can consider the response invalid"); Log Drain and Volume Services
        responses MUST include them; so each is present exactly when the service requires it,
        in the 201, the re-PUT 200 and the fetch."""
        for plan in (FAST, SYSLOG, ROUTE, VOLUME, HIDDEN):
            iid = self.provisioned(plan)
            for version in VERSIONS:
                bid, created = self.bound(iid, plan, version=version)
                r = self.bind(iid, bid, bind_body(plan), None, 1, version)
                self.assertEqual(self.assertBinding(r, 200, plan, version), created)
                if plan != HIDDEN and api(version) >= 214:
                    fetched = self.assertFetched(self.fetch(iid, bid, 0, version), plan,
                                                 version)
                    self.assertEqual(fetched, created)
            # Asynchronous: nothing but the operation in the 202, every field in the fetch.
            bid, op = self.bind_async(iid, plan)
            self.wait_state(iid, bid, "succeeded", op)
            if plan != HIDDEN:
                self.assertFetched(self.fetch(iid, bid), plan)

    def test_bind_route_service_url_from_2_8_volume_mounts_from_2_10(self):
        """0004: route_service_url (2.8+) and volume_mounts (2.10+) only for platforms that
        know them; the stored binding keeps them for newer requests."""
        rid = self.provisioned(ROUTE)
        for version, present in (("2.7", False), ("2.8", True)):
            bid, body = self.bound(rid, ROUTE, version=version)
            self.assertEqual("route_service_url" in body, present, body)
            self.assertIn("route_service_url", self.fetch(rid, bid).json())
        # Route Services: the address comes in bind_resource.route; sim gives a
        # route_service_url only for one (the job carries bind_resource to the backend).
        bid, body = self.bound(rid, ROUTE, bind_resource={"app_guid": APP_GUID})
        self.assertNotIn("route_service_url", self.fetch(rid, bid).json())
        vid = self.provisioned(VOLUME)
        for version, present in (("2.9", False), ("2.10", True)):
            bid, body = self.bound(vid, VOLUME, version=version)
            self.assertEqual("volume_mounts" in body, present, body)
            self.assertIn("volume_mounts", self.fetch(vid, bid).json())

    def test_bind_credentials_never_in_202(self):
        """Binding, 202: "Information regarding the Service Binding (i.e. credentials) MUST NOT
        be returned in this response", for the first 202 and every re-sent PUT, for every
        kind of binding."""
        for plan in (FAST, SYSLOG, ROUTE, VOLUME, HIDDEN, ROTATABLE):
            iid = self.provisioned(plan)
            bid, op = self.bind_async(iid, plan)      # assertAccepted: {"operation"} only
            self.wait_state(iid, bid, "succeeded", op)
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW)
        for _ in range(3):
            self.assertEqual(self.assertAccepted(self.bind(iid, bid, bind_body(SLOW), True)), op)

    def test_bind_endpoints_from_2_15(self):
        """Binding, Body: endpoints; 0004: from 2.15, in the 201, 200 and fetch alike (Endpoint
        Object: host, non-empty ports, protocol tcp/udp/all)."""
        iid = self.provisioned(FAST)
        bid, body = self.bound(iid, version="2.14")
        self.assertNotIn("endpoints", body)
        self.assertNotIn("endpoints", self.fetch(iid, bid, version="2.14").json())
        fetched = self.assertFetched(self.fetch(iid, bid, version="2.15"), FAST, "2.15")
        self.assertIn("endpoints", fetched)
        bid2, body2 = self.bound(iid, version="2.15")
        self.assertIn("endpoints", body2)
        r = self.bind(iid, bid2, bind_body(FAST), version="2.14")
        self.assertNotIn("endpoints", self.assertBinding(r, 200, FAST, "2.14"))

    def test_bind_metadata_from_binding_ttl_s_2_16_plus(self):
        """Binding Metadata Object: expires_at and renew_before follow yyyy-mm-ddThh:mm:ss.sZ
        and renew_before <= expires_at; 0004: metadata from 2.16; README binding_ttl_s: now +
        ttl and now + 80%."""
        iid = self.provisioned(ROTATABLE)
        for version in ("2.16", "2.17"):
            made = datetime.datetime.now(datetime.timezone.utc)
            bid, body = self.bound(iid, ROTATABLE, version=version)
            self.assertMetadata(body["metadata"], 3600, made)
            fetched = self.fetch(iid, bid, version=version).json()
            self.assertEqual(fetched["metadata"], body["metadata"])
            r = self.bind(iid, bid, bind_body(ROTATABLE), True, 1, version)
            self.assertEqual(self.assertBinding(r, 200, ROTATABLE, version)["metadata"],
                             body["metadata"])
            self.assertNotIn("metadata", self.fetch(iid, bid, version="2.15").json())
        for version in ("2.12", "2.14", "2.15"):
            bid, body = self.bound(iid, ROTATABLE, version=version)   # exact fields: none
            self.assertIn("metadata", self.fetch(iid, bid, version="2.16").json())
        bid, op = self.bind_async(iid, ROTATABLE, version="2.16")
        self.wait_state(iid, bid, "succeeded", op)
        self.assertMetadata(self.fetch(iid, bid, version="2.16").json()["metadata"], 3600)
        # A plan without binding_ttl_s gives no metadata (assertBinding: exact fields).
        self.bound(self.provisioned(FAST), FAST, version="2.17")


# =====================================================================================
class Unbinding(BindingTestCase):
    """0004, Unbind."""

    def test_unbind_410_unknown_or_already_unbound_binding(self):
        """Unbinding, 410: "MUST be returned if the Service Binding does not exist"; 0004:
        unknown or already unbound."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        self.assertEqual(self.unbind(iid, bid).status, 200)
        other = self.provisioned(FAST)
        elsewhere, _ = self.bound(other)
        for target_iid, target_bid in ((iid, new_id()), (new_id(), new_id()), (iid, bid),
                                       (iid, elsewhere)):
            for version in VERSIONS:
                for incomplete in (None, True):
                    self.assertRefused(target_iid, target_bid, lambda: self.unbind(
                        target_iid, target_bid, FAST, incomplete, 1, version), 410)
        self.assertEqual(self.fetch(other, elsewhere).status, 200)

    def test_unbind_422_async_required(self):
        """Unbinding, 422: "MUST also be returned if the Service Broker only supports
        asynchronous unbinding ... and the request did not include ?accepts_incomplete=true",
        error AsyncRequired; 0004: bind_async_required, also below 2.14."""
        iid = self.provisioned(ASYNC_ONLY)
        bid, op = self.bind_async(iid, ASYNC_ONLY)
        self.wait_state(iid, bid, "succeeded", op)
        for version in VERSIONS:
            for incomplete in (None, False):
                self.assertRefused(iid, bid, lambda: self.unbind(
                    iid, bid, ASYNC_ONLY, incomplete, version=version), 422, "AsyncRequired")
        for version in ("2.12", "2.13"):
            self.assertRefused(iid, bid, lambda: self.unbind(
                iid, bid, ASYNC_ONLY, True, version=version), 422, "AsyncRequired")
        self.assertEqual(self.fetch(iid, bid).status, 200)
        uop = self.assertAccepted(self.unbind(iid, bid, ASYNC_ONLY, True, version="2.14"))
        self.wait_gone(iid, bid, uop)

    def test_unbind_422_concurrency_error_while_a_bind_of_it_runs(self):
        """Unbinding, 422: "this MUST be returned if the Service Binding is being processed by
        some other operation", error ConcurrencyError; 0004: a bind of it runs."""
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW)
        refused = 0
        for version in VERSIONS:
            for incomplete in (None, True):
                # On a loaded machine the 1.5 s bind may end before every case was tried.
                if self.binding_record(iid, bid).get("state") != "binding":
                    break
                self.assertRefused(iid, bid, lambda: self.unbind(
                    iid, bid, SLOW, incomplete, 1, version), 422, "ConcurrencyError")
                refused += 1
        self.assertGreater(refused, 0)
        self.wait_state(iid, bid, "succeeded", op)
        uop = self.assertAccepted(self.unbind(iid, bid, SLOW, True))
        self.wait_gone(iid, bid, uop)

    def test_unbind_422_concurrency_error_while_an_instance_operation_runs(self):
        """Blocking Operations, ConcurrencyError; 0004: an instance operation (update,
        deprovision) runs."""
        updating = self.provisioned(SLOW_CHANGE)
        ubid, _ = self.bound(updating, SLOW_CHANGE)
        r = self.patch(updating, {"service_id": SERVICE, "parameters": {"v": 2}}, True)
        self.assertEqual(r.status, 202, r.body)
        update_op = r.json()["operation"]
        deprovisioning = self.provisioned(SLOW_CHANGE)
        dbid, _ = self.bound(deprovisioning, SLOW_CHANGE)
        r = self.deprovision(deprovisioning, SLOW_CHANGE, True)
        self.assertEqual(r.status, 202, r.body)
        for iid, bid in ((updating, ubid), (deprovisioning, dbid)):
            refused = 0
            for version in VERSIONS:
                for incomplete in (None, True):
                    # On a loaded machine the 1.5 s operation may end before every case ran.
                    if "lock_x" not in harness.redis_hash(self.stack.redis,
                                                          NAMESPACE + ":instance:" + iid):
                        break
                    self.assertRefused(iid, bid, lambda: self.unbind(
                        iid, bid, SLOW_CHANGE, incomplete, 0, version), 422, "ConcurrencyError")
                    refused += 1
            self.assertGreater(refused, 0)
        self.wait_instance(updating, update_op)
        r = self.unbind(updating, ubid, SLOW_CHANGE)
        self.assertEqual(r.status, 200, r.body)

    def test_unbind_resent_during_unbind_202_same_operation(self):
        """Unbinding, 202: "The operation string MUST match that returned for the original
        request" and "a re-sent DELETE request MUST return a 202 Accepted, not a 200 OK, if
        the unbinding request has not completed yet"; 0004: a sync re-send waits for it."""
        iid = self.provisioned(UNBIND_SLOW)
        bid, _ = self.bound(iid, UNBIND_SLOW)
        op = self.assertAccepted(self.unbind(iid, bid, UNBIND_SLOW, True))
        for version in ("2.14", "2.17"):
            for gw in (0, 1):
                r = self.unbind(iid, bid, UNBIND_SLOW, True, gw, version)
                self.assertEqual(self.assertAccepted(r), op)
        self.assertEqual(self.last_operation(iid, bid, op).json()["state"], "in progress")
        started = time.monotonic()
        r = self.unbind(iid, bid, UNBIND_SLOW, None, 1)
        self.assertGreater(time.monotonic() - started, 0.3, "answered before the unbind ended")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})
        self.assertEqual(len(self.ops_for(iid, bid)), 2)
        self.wait_gone(iid, bid, op)

    def test_unbind_of_a_binding_whose_bind_failed_is_allowed(self):
        """Orphan Mitigation: a failed bind may leave resources the platform cleans up with an
        unbind; 0004: allowed, sync and async."""
        iid = self.provisioned(FAIL_BIND)
        bid = new_id()
        self.assertError(self.bind(iid, bid, bind_body(FAIL_BIND)), 502)
        r = self.unbind(iid, bid, FAIL_BIND)
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})
        self.assertError(self.unbind(iid, bid, FAIL_BIND), 410)
        bid2, op = self.bind_async(iid, FAIL_BIND)
        self.wait_state(iid, bid2, "failed", op)
        uop = self.assertAccepted(self.unbind(iid, bid2, FAIL_BIND, True))
        self.wait_gone(iid, bid2, uop)

    def test_unbind_sync_200_empty_object(self):
        """Unbinding, 200: "MUST be returned if the Service Binding was deleted as a result of
        this request. The expected response body is {}"; the credentials are deleted."""
        iid = self.provisioned(FAST)
        for version in VERSIONS:
            for incomplete in (None, False):
                bid, body = self.bound(iid)
                password = body["credentials"]["password"]
                r = self.unbind(iid, bid, FAST, incomplete, 1, version)
                self.assertEqual(r.status, 200, r.body)
                self.assertEqual(r.json(), {})
                self.assertError(self.fetch(iid, bid), 404)
                self.assertEqual(self.binding_record(iid, bid)["state"], "gone")
                self.assertEqual(harness.redis_find(self.stack.redis, password), [])
        # 2.12 has no asynchronous unbinds: accepts_incomplete=true still gets the 200.
        bid, _ = self.bound(iid)
        r = self.unbind(iid, bid, FAST, True, version="2.12")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json(), {})

    def test_unbind_async_202_operation(self):
        """Asynchronous Operations / Unbinding, 202 with operation (2.14+); the platform polls
        last_operation until 410 Gone (Polling Last Operation for Service Bindings)."""
        iid = self.provisioned(UNBIND_SLOW)
        for version in ("2.14", "2.17"):
            bid, _ = self.bound(iid, UNBIND_SLOW)
            op = self.assertAccepted(self.unbind(iid, bid, UNBIND_SLOW, True, version=version))
            r = self.last_operation(iid, bid, op, 1, version)
            self.assertEqual(r.json()["state"], "in progress", r.body)
            self.assertEqual(self.fetch(iid, bid).status, 200)
            self.wait_gone(iid, bid, op)
            self.assertError(self.fetch(iid, bid), 404)

    def test_unbind_backend_failure_502_binding_stays(self):
        """0004 Bind/Unbind: a synchronous failure of the backend -> 502 with its description;
        Unbinding: "the Platform MUST continue to remember the Service Binding", which stays
        bound with its credentials (async: last_operation failed)."""
        iid = self.provisioned(FAIL_UNBIND)
        bid, body = self.bound(iid, FAIL_UNBIND)
        failed = self.assertError(self.unbind(iid, bid, FAIL_UNBIND), 502)
        self.assertIn("fail_on", failed["description"])
        self.assertEqual(self.fetch(iid, bid).json()["credentials"], body["credentials"])
        op = self.assertAccepted(self.unbind(iid, bid, FAIL_UNBIND, True))
        self.wait_state(iid, bid, "failed", op)
        self.assertEqual(self.fetch(iid, bid).json()["credentials"], body["credentials"])
        r = self.bind(iid, bid, bind_body(FAIL_UNBIND))
        self.assertEqual(self.assertBinding(r, 200, FAIL_UNBIND)["credentials"],
                         body["credentials"])


# =====================================================================================
class Fetching(BindingTestCase):
    """0004, Fetch (2.14+)."""

    def test_fetch_404_unknown_binding(self):
        """Fetching a Service Binding, 404: "MUST be returned if the Service Binding does not
        exist" (also the binding of another instance)."""
        iid = self.provisioned(FAST)
        other = self.provisioned(FAST)
        elsewhere, _ = self.bound(other)
        for target_iid, target_bid in ((iid, new_id()), (new_id(), new_id()), (iid, elsewhere)):
            for gw in (0, 1):
                self.assertRefused(target_iid, target_bid,
                                   lambda: self.fetch(target_iid, target_bid, gw), 404)

    def test_fetch_404_while_binding_in_progress(self):
        """Fetching a Service Binding, 404: "... or if a binding operation is still in
        progress"."""
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW)
        for version in ("2.14", "2.17"):
            for gw in (0, 1):
                self.assertError(self.fetch(iid, bid, gw, version), 404)
        self.wait_state(iid, bid, "succeeded", op)
        self.assertEqual(self.fetch(iid, bid).status, 200)

    def test_fetch_404_after_failed_bind(self):
        """0004 Fetch: 404 when the bind failed."""
        iid = self.provisioned(FAIL_BIND)
        bid, op = self.bind_async(iid, FAIL_BIND)
        self.wait_state(iid, bid, "failed", op)
        self.assertError(self.fetch(iid, bid), 404)

    def test_fetch_404_after_unbind(self):
        """0004 Fetch: 404 once unbound, sync or async."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        self.assertEqual(self.unbind(iid, bid).status, 200)
        self.assertError(self.fetch(iid, bid), 404)
        bid, _ = self.bound(iid)
        op = self.assertAccepted(self.unbind(iid, bid, FAST, True))
        self.wait_gone(iid, bid, op)
        self.assertError(self.fetch(iid, bid, 1), 404)

    def test_fetch_400_service_without_bindings_retrievable(self):
        """Fetching a Service Binding: brokers MUST support it when bindings_retrievable is
        declared; 0004: 400 when the service does not declare it."""
        iid = self.provisioned(HIDDEN)
        bid, _ = self.bound(iid, HIDDEN)
        for version in ("2.14", "2.17"):
            self.assertRefused(iid, bid, lambda: self.fetch(iid, bid, version=version), 400)

    def test_fetch_200_binding_with_parameters(self):
        """Fetching a Service Binding, Body: the binding's fields plus parameters; 0004: the
        binding as above plus parameters, credentials the same as in the 201."""
        iid = self.provisioned(FAST)
        bid, created = self.bound(iid, parameters={"billing": "abc", "n": [1, 2]})
        for gw in (0, 1):
            r = self.fetch(iid, bid, gw)
            self.assertEqual(r.status, 200, r.body)
            body = r.json()
            self.assertEqual(body.pop("parameters"), {"billing": "abc", "n": [1, 2]})
            self.assertEqual(body, created)

    def test_fetch_available_immediately_after_last_operation_succeeded(self):
        """Fetching a Service Binding: "this endpoint MUST be available immediately after the
        Polling Last Operation for Service Bindings endpoint returns succeeded"."""
        iid = self.provisioned(SHORT)
        for gw in (0, 1):
            bid, op = self.bind_async(iid, SHORT, gw=gw)
            self.wait_state(iid, bid, "succeeded", op, gw=gw)
            self.assertFetched(self.fetch(iid, bid, 1 - gw), SHORT)

    def test_fetch_404_for_api_2_13(self):
        """0004 Fetch: an endpoint of 2.14; older platforms lack it (404)."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        for version in ("2.12", "2.13"):
            self.assertError(self.fetch(iid, bid, version=version), 404)
        self.assertEqual(self.fetch(iid, bid, version="2.14").status, 200)


# =====================================================================================
class LastOperation(BindingTestCase):
    """0004, last_operation of a binding (2.14+)."""

    def test_binding_last_operation_404_unknown_binding(self):
        """Polling Last Operation for Service Bindings, 404: "MUST be returned if the Service
        Binding being polled does not exist" (unknown binding, unknown instance, the binding
        of another instance)."""
        iid = self.provisioned(FAST)
        other = self.provisioned(FAST)
        elsewhere, _ = self.bound(other)
        for target_iid, target_bid in ((iid, new_id()), (new_id(), new_id()), (iid, elsewhere)):
            for version in ("2.14", "2.17"):
                self.assertRefused(target_iid, target_bid, lambda: self.last_operation(
                    target_iid, target_bid, version=version), 404)

    def test_binding_last_operation_410_after_async_unbind_finished(self):
        """Polling Last Operation for Service Bindings, 410: "Appropriate only for asynchronous
        delete operations. The Platform MUST consider this response a success"; 0004: 410 once
        an unbind has succeeded."""
        iid = self.provisioned(SHORT)
        bid, _ = self.bound(iid, SHORT)
        op = self.assertAccepted(self.unbind(iid, bid, SHORT, True))
        self.wait_gone(iid, bid, op)
        for gw in (0, 1):
            self.assertError(self.last_operation(iid, bid, op, gw), 410)
            self.assertError(self.last_operation(iid, bid, None, gw), 410)

    def test_binding_last_operation_400_operation_not_of_this_binding(self):
        """Polling Last Operation for Service Bindings, 400 for invalid data; 0004: an
        operation that is not one of this binding's (another binding's, the instance's)."""
        iid = self.provisioned(FAST)
        a, op_a = self.bind_async(iid, FAST)
        b, op_b = self.bind_async(iid, FAST)
        self.wait_state(iid, a, "succeeded", op_a)
        self.wait_state(iid, b, "succeeded", op_b)
        instance_ops = self.ops_for(iid) - {op_a, op_b}
        self.assertEqual(len(instance_ops), 1)
        for op in (op_b, instance_ops.pop(), "no-such-operation"):
            self.assertRefused(iid, a, lambda: self.last_operation(iid, a, op), 400)

    def test_binding_last_operation_state_description_and_retry_after(self):
        """Polling Last Operation for Service Bindings, Body: state in progress / succeeded,
        a description, and Retry-After (integer seconds, 2.15+ as for instances) while in
        progress; the operation parameter is optional."""
        iid = self.provisioned(SLOW)
        bid, op = self.bind_async(iid, SLOW)
        for operation in (op, None):
            r = self.last_operation(iid, bid, operation, version="2.17")
            self.assertEqual(r.json()["state"], "in progress")
            self.assertRegex(r.header("Retry-After") or "", r"^[0-9]+$")
            self.assertGreaterEqual(int(r.header("Retry-After")), RETRY_AFTER_MIN_S)
            self.assertLessEqual(int(r.header("Retry-After")), RETRY_AFTER_MAX_S)
            r = self.last_operation(iid, bid, operation, version="2.14")
            self.assertEqual(r.json()["state"], "in progress")
            self.assertIsNone(r.header("Retry-After"))
        body = self.wait_state(iid, bid, "succeeded", op, gw=1)
        self.assertIsInstance(body.get("description"), str)
        self.assertEqual(set(body), {"state", "description"})

    def test_binding_last_operation_failed_bind(self):
        """Polling Last Operation for Service Bindings: state failed with a description;
        Service Broker Errors: instance_usable and update_repeatable "MUST NOT be present for
        errors of other operations"."""
        iid = self.provisioned(FAIL_BIND)
        bid, op = self.bind_async(iid, FAIL_BIND)
        for version in ("2.14", "2.16", "2.17"):
            body = self.wait_state(iid, bid, "failed", op, version=version)
            self.assertIn("fail_on", body.get("description", ""))
            self.assertNotIn("instance_usable", body)
            self.assertNotIn("update_repeatable", body)

    def test_binding_last_operation_404_for_api_2_13(self):
        """0004 last_operation (2.14+): older platforms have no asynchronous bindings."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        for version in ("2.12", "2.13"):
            self.assertError(self.last_operation(iid, bid, version=version), 404)
        self.assertEqual(self.last_operation(iid, bid, version="2.14").status, 200)


# =====================================================================================
class Rotation(BindingTestCase):
    """0004 rows on predecessor_binding_id; Binding Rotation (2.17)."""

    def test_bind_rotation_predecessor_of_the_same_instance_accepted_both_valid(self):
        """Binding Rotation: predecessor_binding_id of a non-expired binding of the same
        instance creates a new binding; "Both Service Bindings ... MUST both be valid in
        parallel until they expired or are deleted". The backend receives the predecessor
        (sim: credentials.rotated_from)."""
        iid = self.provisioned(ROTATABLE)
        old, old_body = self.bound(iid, ROTATABLE, parameters={"p": 1})
        new, new_body = self.bound(iid, ROTATABLE, predecessor_binding_id=old)
        self.assertNotEqual(new_body["credentials"]["password"],
                            old_body["credentials"]["password"])
        self.assertEqual(new_body["credentials"].get("rotated_from"), old)
        self.assertEqual(self.binding_record(iid, new).get("predecessor"), old)
        for bid, body in ((old, old_body), (new, new_body)):
            fetched = self.fetch(iid, bid)
            self.assertEqual(fetched.status, 200, fetched.body)
            self.assertEqual(fetched.json()["credentials"], body["credentials"])
        # The identical rotation again: 200, same credentials; another predecessor: 409.
        r = self.bind(iid, new, bind_body(ROTATABLE, predecessor_binding_id=old))
        self.assertEqual(self.assertBinding(r, 200, ROTATABLE)["credentials"],
                         new_body["credentials"])
        third, _ = self.bound(iid, ROTATABLE)
        self.assertRefused(iid, new, lambda: self.bind(
            iid, new, bind_body(ROTATABLE, predecessor_binding_id=third)), 409)
        # Asynchronously, from the successor; then the oldest is deleted, the others stay.
        newest, op = self.bind_async(iid, ROTATABLE, predecessor_binding_id=new)
        self.wait_state(iid, newest, "succeeded", op)
        self.assertEqual(self.fetch(iid, newest).json()["credentials"].get("rotated_from"), new)
        self.assertEqual(self.unbind(iid, old, ROTATABLE).status, 200)
        for bid in (new, newest):
            self.assertEqual(self.fetch(iid, bid).status, 200)

    def test_bind_400_predecessor_not_a_bound_binding_of_this_instance(self):
        """Request (Rotating a Service Binding): predecessor_binding_id "MUST be the ID of
        non-expired Service Binding of the same Service Instance"; 0004: otherwise 400 (unknown,
        another instance's, unbound, failed, itself)."""
        iid = self.provisioned(ROTATABLE)
        other = self.provisioned(ROTATABLE)
        elsewhere, _ = self.bound(other, ROTATABLE)
        unbound, _ = self.bound(iid, ROTATABLE)
        self.assertEqual(self.unbind(iid, unbound, ROTATABLE).status, 200)
        failed = new_id()
        self.assertError(self.bind(iid, failed, bind_body(ROTATABLE, parameters={
            "sim_fail": True})), 502)
        for predecessor in (new_id(), elsewhere, unbound, failed, "self"):
            bid = new_id()
            pred = bid if predecessor == "self" else predecessor
            for incomplete in (None, True):
                self.assertRefused(iid, bid, lambda: self.bind(
                    iid, bid, bind_body(ROTATABLE, predecessor_binding_id=pred), incomplete),
                    400)
            self.assertError(self.last_operation(iid, bid), 404)

    def test_bind_400_predecessor_on_a_plan_not_binding_rotatable(self):
        """Binding Rotation: "If the field is set to false or not present, the Platform MUST
        NOT attempt to rotate a Service Binding of this plan"; 0004: 400."""
        iid = self.provisioned(FAST)
        old, _ = self.bound(iid)
        bid = new_id()
        for incomplete in (None, True):
            self.assertRefused(iid, bid, lambda: self.bind(
                iid, bid, bind_body(FAST, predecessor_binding_id=old), incomplete), 400)
        self.assertError(self.last_operation(iid, bid), 404)

    def test_bind_predecessor_ignored_before_2_17(self):
        """0004: predecessor_binding_id is a 2.17 field, ignored from older platforms: a plain
        new binding, even on a plan that is not rotatable or with an unknown predecessor."""
        iid = self.provisioned(FAST)
        old, _ = self.bound(iid)
        for version in ("2.14", "2.16"):
            _, body = self.bound(iid, version=version, predecessor_binding_id=old)
            self.assertNotIn("rotated_from", body["credentials"])
        rid = self.provisioned(ROTATABLE)
        bid, body = self.bound(rid, ROTATABLE, version="2.16", predecessor_binding_id=new_id())
        self.assertNotIn("rotated_from", body["credentials"])
        self.assertNotIn("predecessor", self.binding_record(rid, bid))


# =====================================================================================
class ApiVersions(BindingTestCase):
    """0004 by version: async bindings and fetch 2.14, endpoints 2.15, metadata 2.16,
    rotation 2.17."""

    def test_version_2_12_binds_and_unbinds_synchronously_without_fetch(self):
        """0004: asynchronous bindings (2.14+): a 2.12 platform with accepts_incomplete=true
        gets the synchronous answer after the operation; fetch and last_operation need 2.14."""
        iid = self.provisioned(SHORT)
        bid = new_id()
        started = time.monotonic()
        r = self.bind(iid, bid, bind_body(SHORT), True, version="2.12")
        self.assertGreaterEqual(time.monotonic() - started, 0.25)
        created = self.assertBinding(r, 201, SHORT, "2.12")
        self.assertError(self.fetch(iid, bid, version="2.12"), 404)
        self.assertError(self.last_operation(iid, bid, version="2.12"), 404)
        self.assertEqual(self.fetch(iid, bid, version="2.14").json()["credentials"],
                         created["credentials"])
        started = time.monotonic()
        r = self.unbind(iid, bid, SHORT, True, version="2.12")
        self.assertGreaterEqual(time.monotonic() - started, 0.25)
        self.assertEqual((r.status, r.json()), (200, {}))
        self.assertError(self.unbind(iid, bid, SHORT, True, version="2.12"), 410)

    def test_version_2_14_async_bindings_and_fetch_without_endpoints_or_metadata(self):
        """0004: 2.14 has asynchronous bindings, fetch and binding last_operation, but no
        endpoints (2.15), metadata (2.16) or rotation (2.17)."""
        iid = self.provisioned(ROTATABLE)
        bid, op = self.bind_async(iid, ROTATABLE, version="2.14")
        self.wait_state(iid, bid, "succeeded", op, version="2.14")
        body = self.assertFetched(self.fetch(iid, bid, version="2.14"), ROTATABLE, "2.14")
        self.assertNotIn("endpoints", body)
        self.assertNotIn("metadata", body)
        uop = self.assertAccepted(self.unbind(iid, bid, ROTATABLE, True, version="2.14"))
        self.wait_gone(iid, bid, uop)

    def test_version_2_17_rotation_endpoints_metadata(self):
        """0004: 2.17 has every field: endpoints, metadata and rotation; newer minors are
        served as 2.17 (API Version Header)."""
        iid = self.provisioned(ROTATABLE)
        for version in ("2.17", "2.18"):
            old, _ = self.bound(iid, ROTATABLE, version="2.17")
            r = self.bind(iid, new_id(), bind_body(ROTATABLE, predecessor_binding_id=old),
                          version=version)
            body = self.assertBinding(r, 201, ROTATABLE, "2.17")
            self.assertEqual(body["credentials"].get("rotated_from"), old)


# =====================================================================================
class Concurrency(BindingTestCase):
    """0004 Locks: bindings hold their instance shared and themselves exclusively."""

    def test_50_concurrent_binds_of_different_bindings_on_one_instance_all_succeed(self):
        """Blocking Operations: "Brokers MAY choose to treat the creation of a Service Binding
        as a mutation of the corresponding Service Instance"; 0004 chooses not to: 50
        simultaneous binds of different bindings of one instance (threads, both gateways) all
        get 201, each with its own credentials, and run in parallel."""
        iid = self.provisioned(SHORT)
        bids = [new_id() for _ in range(50)]
        started = time.monotonic()
        answers = self.race([lambda n=n, bid=bid: self.bind(iid, bid, bind_body(
            SHORT, parameters={"n": n}), None, n % 2) for n, bid in enumerate(bids)])
        took = time.monotonic() - started
        passwords = set()
        for r in answers:
            passwords.add(self.assertBinding(r, 201, SHORT)["credentials"]["password"])
        self.assertEqual(len(passwords), 50, "credentials shared between bindings")
        # 50 binds of 0.3 s one after another would take 15 s.
        self.assertLess(took, 7.5, "the binds did not run in parallel")
        for n, bid in enumerate(bids[:10]):
            self.assertEqual(self.fetch(iid, bid).json()["parameters"], {"n": n})
        self.assertNotIn("lock_s", harness.redis_hash(self.stack.redis,
                                                       "%s:instance:%s" % (NAMESPACE, iid)))

    def test_two_concurrent_puts_of_the_same_binding_one_runs(self):
        """Blocking Operations and Binding, 202: two simultaneous identical PUTs of one
        binding through both gateways make one operation; the other answer is the idempotent
        one (the same operation, or the same credentials) or 422 ConcurrencyError."""
        iid = self.provisioned(SHORT)
        for _ in range(4):
            bid = new_id()
            answers = self.race([lambda gw=gw: self.bind(iid, bid, bind_body(SHORT), True, gw)
                                 for gw in (0, 1)])
            statuses = sorted(r.status for r in answers)
            self.assertIn(statuses, ([202, 202], [202, 422]), [r.body for r in answers])
            ops = {self.assertAccepted(r) for r in answers if r.status == 202}
            self.assertEqual(len(ops), 1)
            for r in answers:
                if r.status == 422:
                    self.assertError(r, 422, "ConcurrencyError")
            self.assertEqual(self.ops_for(iid, bid), ops)
            # Synchronous: one 201, the other 201/200 with the same credentials, or 422.
            bid = new_id()
            answers = self.race([lambda gw=gw: self.bind(iid, bid, bind_body(SHORT), None, gw)
                                 for gw in (0, 1)])
            statuses = sorted(r.status for r in answers)
            self.assertIn(201, statuses, [r.body for r in answers])
            credentials = []
            for r in answers:
                self.assertIn(r.status, (200, 201, 422), r.body)
                if r.status == 422:
                    self.assertError(r, 422, "ConcurrencyError")
                else:
                    credentials.append(self.assertBinding(r, r.status, SHORT)["credentials"])
            self.assertTrue(all(c == credentials[0] for c in credentials), credentials)
            self.assertEqual(len(self.ops_for(iid, bid)), 1)
            self.assertEqual(self.fetch(iid, bid).json()["credentials"], credentials[0])

    def test_update_or_deprovision_during_binds_in_flight_422_concurrency_error(self):
        """Blocking Operations, 422 ConcurrencyError; 0004: "a provision, update or deprovision
        cannot start while a binding operation runs"; once the binds ended the update goes
        through."""
        iid = self.provisioned(SLOW)
        started = [self.bind_async(iid, SLOW, gw=n % 2) for n in range(3)]
        for version in VERSIONS:
            for incomplete in (None, True):
                r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 2}}, incomplete,
                               1, version)
                self.assertError(r, 422, "ConcurrencyError")
                self.assertError(self.deprovision(iid, SLOW, incomplete, 0, version), 422,
                                 "ConcurrencyError")
        self.assertEqual(len(self.ops_for(iid, "")), 1, "a refused update left an operation")
        for bid, op in started:
            self.wait_state(iid, bid, "succeeded", op)
        r = self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 2}})
        self.assertEqual(r.status, 200, r.body)
        # An unbind in flight holds the instance too.
        bid = started[0][0]
        uop = self.assertAccepted(self.unbind(iid, bid, SLOW, True))
        self.assertError(self.patch(iid, {"service_id": SERVICE, "parameters": {"v": 3}}), 422,
                         "ConcurrencyError")
        self.wait_gone(iid, bid, uop)

    def test_100_bindings_on_one_instance_created_fetched_and_deleted_in_sequence(self):
        """Binding, Fetching a Service Binding, Unbinding: 100 bindings of one instance made
        one after another (both gateways), each fetched with its own credentials, each deleted;
        afterwards none is left."""
        iid = self.provisioned(FAST)
        made = {}
        for n in range(100):
            bid = "b-%03d-%s" % (n, new_id())
            r = self.bind(iid, bid, bind_body(FAST, parameters={"n": n}), None, n % 2)
            self.assertEqual(r.status, 201, r.body)
            made[bid] = r.json()["credentials"]
        self.assertEqual(len({c["password"] for c in made.values()}), 100)
        members = self.stack.redis.command("SMEMBERS", "%s:bindings:%s" % (NAMESPACE, iid))
        self.assertEqual(len(members), 100)
        for n, (bid, creds) in enumerate(made.items()):
            r = self.fetch(iid, bid, (n + 1) % 2)
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json()["credentials"], creds)
            self.assertEqual(r.json()["parameters"], {"n": n})
        for n, bid in enumerate(made):
            r = self.unbind(iid, bid, FAST, None, n % 2)
            self.assertEqual((r.status, r.json()), (200, {}))
        for bid in list(made)[::10]:
            self.assertError(self.fetch(iid, bid), 404)
        self.assertEqual(self.stack.redis.command("SCARD", "%s:bindings:%s" % (NAMESPACE, iid)), 0)
        r = self.deprovision(iid, FAST)
        self.assertEqual(r.status, 200, r.body)


# =====================================================================================
class InstancesWithBindings(BindingTestCase):
    """0004, "Deprovisioning an instance that still has bindings", and where credentials
    live."""

    def test_deprovision_with_live_bindings_succeeds_and_its_bindings_are_gone(self):
        """Deprovisioning: the spec says platforms delete bindings first and leaves the
        broker's answer open; 0004: the deprovision is accepted and, when it succeeds, its
        bindings are gone (fetch 404, unbind 410) and their credentials deleted."""
        for plan, incomplete in ((FAST, None), (SLOW_CHANGE, True)):
            iid = self.provisioned(plan)
            bindings = [self.bound(iid, plan) for _ in range(3)]
            r = self.deprovision(iid, plan, incomplete)
            if incomplete:
                self.assertEqual(r.status, 202, r.body)
                op = r.json()["operation"]
                bid = bindings[0][0]
                # While it runs, no binding operation starts.
                self.assertError(self.bind(iid, new_id(), bind_body(plan)), 422,
                                 "ConcurrencyError")
                self.assertError(self.unbind(iid, bid, plan), 422, "ConcurrencyError")
                self.wait_instance(iid, op, "gone")
            else:
                self.assertEqual((r.status, r.json()), (200, {}))
            for bid, body in bindings:
                self.assertError(self.fetch(iid, bid), 404)
                self.assertError(self.unbind(iid, bid, plan), 410)
                record = self.binding_record(iid, bid)
                self.assertEqual(record.get("state"), "gone")
                self.assertNotIn("result", record)
                self.assertEqual(harness.redis_find(self.stack.redis,
                                                    body["credentials"]["password"]), [])
            self.assertEqual(self.stack.redis.command("EXISTS", "%s:bindings:%s"
                                                      % (NAMESPACE, iid)), 0)
            self.assertError(self.bind(iid, bindings[0][0], bind_body(plan)), 404)

    def test_credentials_stored_only_in_the_bindings_result_field(self):
        """0004: "Credentials are stored once per binding, in the result field of its hash":
        after a sync bind, an async bind, re-PUTs and fetches, each password occurs in exactly
        one field of one key (ns:binding:<instance>:<binding> -> result), and in no log."""
        iid = self.provisioned(ROTATABLE)
        sync_bid, sync_body = self.bound(iid, ROTATABLE)
        async_bid, op = self.bind_async(iid, ROTATABLE)
        self.wait_state(iid, async_bid, "succeeded", op)
        rotated, rotated_body = self.bound(iid, ROTATABLE, predecessor_binding_id=sync_bid)
        async_body = self.fetch(iid, async_bid).json()
        for bid in (sync_bid, async_bid, rotated):
            for gw in (0, 1):
                self.assertEqual(self.bind(iid, bid, bind_body(
                    ROTATABLE, predecessor_binding_id=sync_bid if bid == rotated else None),
                    None, gw).status, 200)
                self.assertEqual(self.fetch(iid, bid, gw).status, 200)
        self.wait_quiet()
        for bid, body in ((sync_bid, sync_body), (async_bid, async_body),
                          (rotated, rotated_body)):
            password = body["credentials"]["password"]
            self.assertEqual(harness.redis_find(self.stack.redis, password),
                             [(self.binding_key(iid, bid), "result")])
            for p in self.gateways + self.workers:
                self.assertNotIn(password, p.log(), "%s logged a password" % p.name)
        self.assertEqual(self.unbind(iid, sync_bid, ROTATABLE).status, 200)
        self.assertEqual(harness.redis_find(self.stack.redis,
                                            sync_body["credentials"]["password"]), [])


if __name__ == "__main__":
    unittest.main()
