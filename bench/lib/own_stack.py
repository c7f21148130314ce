"""What the bench's scripts that start a stack of their own share (bench/due.py,
bench/noisy_neighbor.py): that stack, started and stopped by PID with the integration tests'
launcher on loopback and the bench's settings, a keep-alive broker client, and quantiles."""

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


@contextmanager
def own_stack(build_dir, prefix, **settings):
    """A redis-server of its own, for the gateways and workers of build_dir the caller starts;
    yields (stack, broker password). The daemons get the bench catalog, the broker user "bench"
    and OSBQ_LOG_LEVEL=warn unless settings say otherwise. Everything is stopped by PID and the
    directory removed on the way out."""
    workdir = tempfile.mkdtemp(prefix=prefix)
    password = uuid.uuid4().hex
    password_file = os.path.join(workdir, "password")
    with open(password_file, "w") as f:
        f.write(password)
    base = {"OSBQ_CATALOG": os.path.join(BENCH_DIR, "catalog.json"),
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


def quantiles(values):
    """(p50, p99, max) of values, or None when there are none."""
    values = sorted(values)
    if not values:
        return None

    def at(q):
        return values[min(len(values) - 1, int(q * len(values)))]
    return at(0.5), at(0.99), values[-1]
