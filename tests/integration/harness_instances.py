"""What the service-instance tests (test_instances_*.py, one file per endpoint) share: the plans
of tests/data/catalog-tests.json, request bodies, and InstanceTestCase, which runs each test
class against a stack of its own: redis-server, two gateways and two workers on loopback, the
sim backend.

Every row of docs/decisions/0003-instance-operations.md has a test named after it. Each test's
docstring names the spec section (../shared/spec/osb-latest-spec.md) it checks. Every response
with a status outside 2xx is checked to be a JSON object with a non-empty description
(Service Broker Errors), whatever the test."""

import os

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
SYNC_TIMEOUT = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f08"     # sync_timeout_ms 500, 3 s provision and update
SLOW_CHANGE = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f09"      # 0 ms provision, 1.5 s update/deprov.
TEMPLATED = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f10"        # dashboard_url_template
HIDDEN = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f21"           # plan of HIDDEN_SERVICE

PLAN_SERVICE = {HIDDEN: HIDDEN_SERVICE}

NAMESPACE = harness.ClusterTestCase.NAMESPACE
REGISTRY_KEY = NAMESPACE + ":gateways"

STATES = harness.OPERATION_STATES

RETRY_AFTER_MIN_S = harness.ClusterTestCase.RETRY_AFTER_MIN_S
RETRY_AFTER_MAX_S = harness.ClusterTestCase.RETRY_AFTER_MAX_S

# Bounds of every wait (seconds). Operations take at most 3 s in this catalog.
OP_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = harness.START_TIMEOUT_S


new_id = harness.new_id


def body_for(plan, **extra):
    """A provision body of plan (harness.provision_body)."""
    return harness.provision_body(PLAN_SERVICE.get(plan, SERVICE), plan, extra)


class InstanceTestCase(harness.ClusterTestCase):
    """One stack per class (harness.ClusterTestCase) on tests/data/catalog-tests.json."""

    CATALOG = CATALOG
    QUIET_TIMEOUT_S = OP_TIMEOUT_S

    @classmethod
    def warm_up_gateway(cls, c):
        """An async provision, polled until it succeeded."""
        iid = new_id()
        r = c.request("PUT", "/v2/service_instances/%s?accepts_incomplete=true" % iid,
                      body_for(FAST))
        if r.status != 202:
            raise AssertionError("warm-up provision: %d %r" % (r.status, r.body))

        def done():
            got = c.request("GET", "/v2/service_instances/%s/last_operation" % iid)
            return got.status == 200 and got.json().get("state") == "succeeded"

        harness.wait_until(done, CONNECT_TIMEOUT_S, "a warm-up provision to succeed")

    # ---- clients and requests ----

    def put(self, iid, body, accepts_incomplete=None, gw=0, version="2.17"):
        return self.client(gw, version).request(
            "PUT", self.ipath(iid, accepts_incomplete=self.incomplete(accepts_incomplete)), body)

    def delete(self, iid, plan=FAST, accepts_incomplete=None, gw=0, version="2.17",
               service_id=None, plan_id=None):
        return self.client(gw, version).request("DELETE", self.ipath(
            iid, accepts_incomplete=self.incomplete(accepts_incomplete),
            service_id=service_id or PLAN_SERVICE.get(plan, SERVICE), plan_id=plan_id or plan))

    def fetch(self, iid, gw=0, version="2.17"):
        return self.client(gw, version).request("GET", self.ipath(iid))

    def last_operation(self, iid, operation=None, gw=0, version="2.17"):
        """GET last_operation; a 200 body is checked against the spec's Body table."""
        return self.checkLastOperation(self.client(gw, version).request(
            "GET", self.ipath(iid, "/last_operation", operation=operation)))

    # ---- assertions ----

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
        return self.wait_ended(lambda: self.last_operation(iid, operation, gw, version),
                               "operation %s of %s" % (operation, iid), timeout_s)

    def wait_state(self, iid, state, operation=None, gw=0, version="2.17"):
        r = self.wait_done(iid, operation, gw, version)
        self.assertEqual(r.status, 200, r.body)
        body = r.json()
        self.assertEqual(body["state"], state, r.body)
        return body

    def wait_gone(self, iid, operation=None, gw=0):
        r = self.wait_done(iid, operation, gw)
        self.assertError(r, 410)

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
