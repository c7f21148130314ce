"""What the bench's scripts that start a stack of their own share (bench/due.py,
bench/noisy_neighbor.py and the like): that stack, started and stopped by PID with the
integration tests' launcher on loopback and the bench's settings (the bench catalog, plus a plan
of the script's own), a keep-alive broker client, the records of a plan's operations, and
quantiles."""

import base64
import http.client
import json
import os
import shutil
import sys
import tempfile
import uuid
from contextlib import contextmanager

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(BENCH_DIR, "..", "tests", "lib"))

import osbq_stack  # noqa: E402 (found through the path set above)

SERVICE = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f001"  # bench/catalog.json's service
INSTANT = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f101"  # every operation in 0 ms


# For EVAL 0 <namespace>:op:* <plan> <field>...: the operations on plan, in one round trip, each
# as [its id, then each field's value ('' where the record has none)].
PLAN_OPERATIONS_SCRIPT = """
local out = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  local r = redis.call('HMGET', key, 'plan_id', unpack(ARGV, 3))
  if r[1] == ARGV[2] then
    local row = {string.sub(key, #ARGV[1])}
    for i = 2, #r do row[i] = r[i] or '' end
    out[#out + 1] = row
  end
end
return cjson.encode(out)
"""


@contextmanager
def own_stack(build_dir, prefix, plan=None, **settings):
    """A redis-server of its own, for the gateways and workers of build_dir the caller starts;
    yields (stack, broker password). The daemons get the bench catalog (with plan, a plan's
    object, added to its service when given), the broker user "bench" and OSBQ_LOG_LEVEL=warn
    unless settings say otherwise. Everything is stopped by PID and the directory removed on
    the way out."""
    workdir = tempfile.mkdtemp(prefix=prefix)
    password = uuid.uuid4().hex
    password_file = os.path.join(workdir, "password")
    with open(password_file, "w") as f:
        f.write(password)
    catalog = os.path.join(BENCH_DIR, "catalog.json")
    if plan is not None:
        with open(catalog) as f:
            doc = json.load(f)
        doc["services"][0]["plans"].append(plan)
        catalog = os.path.join(workdir, "catalog.json")
        with open(catalog, "w") as f:
            json.dump(doc, f)
    base = {"OSBQ_CATALOG": catalog,
            "OSBQ_BROKER_USERNAME": "bench", "OSBQ_BROKER_PASSWORD_FILE": password_file,
            "OSBQ_LOG_LEVEL": "warn"}
    base.update(settings)
    stack = osbq_stack.Stack(*osbq_stack.binaries(build_dir), base, workdir=workdir)
    try:
        yield stack, password
    finally:
        stack.stop(timeout_s=30)
        shutil.rmtree(workdir, ignore_errors=True)


class Broker:
    """One keep-alive connection to a gateway, as the bench's broker user (or a platform's
    username, with its URL prefix, OSBQ_PLATFORMS)."""

    def __init__(self, port, password, username="bench", prefix=""):
        token = base64.b64encode(("%s:%s" % (username, password)).encode()).decode()
        self.prefix = prefix
        self.headers = {"Authorization": "Basic " + token, "X-Broker-API-Version": "2.17",
                        "Content-Type": "application/json"}
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def provision(self, plan, org, asynchronous=True):
        """Provisions a new instance of plan for organization org; (status, instance id)."""
        iid = uuid.uuid4().hex
        body = {"service_id": SERVICE, "plan_id": plan,
                "context": {"platform": "cloudfoundry", "organization_guid": org,
                            "space_guid": "s"}}
        self.conn.request("PUT", "%s/v2/service_instances/%s%s"
                          % (self.prefix, iid, "?accepts_incomplete=true" if asynchronous else ""),
                          body=json.dumps(body), headers=self.headers)
        r = self.conn.getresponse()
        r.read()
        return r.status, iid


def plan_operations(redis, namespace, plan, *fields):
    """The operations on plan in namespace, each as [its id, then fields' values ('' where the
    record has none)], read in one round trip."""
    return json.loads(redis.command("EVAL", PLAN_OPERATIONS_SCRIPT, 0, namespace + ":op:*", plan,
                                    *fields))


def variant_args(usage, default_n):
    """(BUILD_DIR, VARIANT, N) of a case whose usage is `BUILD_DIR [VARIANT [N]]`: VARIANT sim
    and N default_n unless given; without BUILD_DIR, exits with usage."""
    if len(sys.argv) < 2:
        sys.exit(usage)
    return (sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "sim",
            int(sys.argv[3]) if len(sys.argv) > 3 else default_n)


def quantiles(values):
    """(p50, p99, max) of values, or None when there are none."""
    values = sorted(values)
    if not values:
        return None

    def at(q):
        return values[min(len(values) - 1, int(q * len(values)))]
    return at(0.5), at(0.99), values[-1]
