"""What the service-binding tests (test_bindings_*.py, one file per endpoint) share: the plans of
tests/data/catalog-bindings.json, request bodies, the fields a binding carries at each API
version, and BindingTestCase, which runs each test class against a stack of its own:
redis-server, two gateways and two workers on loopback, the sim backend.

Every row of docs/decisions/0004-binding-operations.md has a test named after it, run sync and
async and at API versions 2.12, 2.14 and 2.17 where the behaviour differs. Each test's
docstring names the spec section (../shared/spec/osb-latest-spec.md) it checks. Every response
with a status outside 2xx is checked to be a JSON object with a non-empty description
(Service Broker Errors), whatever the test."""

import datetime
import os
import time
import urllib.parse

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
ROTATABLE_APP = _plan(15)      # binding_rotatable and requires_app
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

NAMESPACE = harness.ClusterTestCase.NAMESPACE
REGISTRY_KEY = NAMESPACE + ":gateways"

VERSIONS = ("2.12", "2.14", "2.17")
APP_GUID = "app-guid-1"
ROUTE_ADDRESS = "https://app-1.apps.example.test"

# The spec's Binding Metadata pattern, yyyy-mm-ddThh:mm:ss.sZ.
TIMESTAMP = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\dZ$"

RETRY_AFTER_MIN_S = harness.ClusterTestCase.RETRY_AFTER_MIN_S
RETRY_AFTER_MAX_S = harness.ClusterTestCase.RETRY_AFTER_MAX_S

# Bounds of every wait (seconds). Operations take at most 1.5 s in this catalog.
OP_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = harness.START_TIMEOUT_S

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


new_id = harness.new_id


def api(version):
    major, minor = version.split(".")
    return int(major) * 100 + int(minor)


def instance_body(plan, **extra):
    """A provision body of plan (harness.provision_body)."""
    return harness.provision_body(PLAN_SERVICE.get(plan, SERVICE), plan, extra)


def bind_body(plan, **extra):
    """A bind body as current platforms send it: context and bind_resource with app_guid and
    route (Request (Creating a Service Binding), Bind Resource Object)."""
    return harness.with_fields({"service_id": PLAN_SERVICE.get(plan, SERVICE), "plan_id": plan,
                                "context": {"platform": "osbq-tests", "namespace": "it"},
                                "bind_resource": {"app_guid": APP_GUID, "route": ROUTE_ADDRESS}},
                               extra)


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


class BindingTestCase(harness.ClusterTestCase):
    """One stack per class (harness.ClusterTestCase) on tests/data/catalog-bindings.json."""

    CATALOG = CATALOG
    QUIET_TIMEOUT_S = OP_TIMEOUT_S

    @classmethod
    def warm_up_gateway(cls, c):
        """A synchronous provision and bind."""
        iid, bid = new_id(), new_id()
        r = c.request("PUT", "/v2/service_instances/%s" % iid, instance_body(FAST))
        if r.status != 201:
            raise AssertionError("warm-up provision: %d %r" % (r.status, r.body))
        r = c.request("PUT", "/v2/service_instances/%s/service_bindings/%s" % (iid, bid),
                      bind_body(FAST))
        if r.status != 201:
            raise AssertionError("warm-up bind: %d %r" % (r.status, r.body))

    # ---- clients and requests ----

    def bpath(self, iid, bid, suffix="", **query):
        return self.ipath(iid, "/service_bindings/" + urllib.parse.quote(bid, safe="") + suffix,
                          **query)

    def provision(self, iid, body, accepts_incomplete=None, gw=0, version="2.17"):
        return self.client(gw, version).request(
            "PUT", self.ipath(iid, accepts_incomplete=self.incomplete(accepts_incomplete)), body)

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
        return self.checkLastOperation(self.client(gw, version).request(
            "GET", self.bpath(iid, bid, "/last_operation", operation=operation)))

    # ---- assertions ----

    def assertError(self, r, status, error=None):
        """A non-2xx answer (harness.ClusterTestCase.assertError) without the flags only
        instance errors carry."""
        body = super().assertError(r, status, error)
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

    def assertEndpointSince214(self, request):
        """request(iid, bid, version=...) on a new binding: 404 at API versions 2.12 and 2.13,
        which lack the endpoint (0004: 2.14+), 200 at 2.14."""
        iid = self.provisioned(FAST)
        bid, _ = self.bound(iid)
        for version in ("2.12", "2.13"):
            self.assertError(request(iid, bid, version=version), 404)
        self.assertEqual(request(iid, bid, version="2.14").status, 200)

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

    # ---- waits ----

    def wait_done(self, iid, bid, operation=None, gw=0, version="2.17", timeout_s=OP_TIMEOUT_S):
        """Polls the binding's last_operation until the operation ended; returns the last
        response (200 succeeded/failed, or 410 for a finished unbind)."""
        return self.wait_ended(lambda: self.last_operation(iid, bid, operation, gw, version),
                               "operation %s of binding %s" % (operation, bid), timeout_s)

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
