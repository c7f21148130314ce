#!/usr/bin/env python3
"""The platform side of scripts/compose-check.sh and scripts/swarm-check.sh: OSB requests
through the stack's load balancer, every answer checked (status and body).

  compose_check_client.py lifecycle URL USER PASSWORD_FILE
      catalog, async provision, poll, bind, fetch the binding, unbind, deprovision, poll to 410
  compose_check_client.py load URL USER PASSWORD_FILE STOP_FILE [READY_FILE]
      starts instance lifecycles (provision, poll, deprovision, poll to 410), four a second,
      until STOP_FILE exists (at most 10 minutes), and waits for every one; touches READY_FILE
      once the first has started; fails unless every operation succeeded. Like a platform it retries a request the load balancer could
      not hand to a gateway (connection refused, 502, 503) and polls again after one.
  compose_check_client.py metrics URL USER PASSWORD_FILE
      /metrics through the load balancer is refused (404), with and without credentials
Exit status 0 when every check passed; the reason of the first failure on stderr otherwise."""

import base64
import concurrent.futures
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

SERVICE = "osbq-sim"
# provision 3 s, deprovision 1 s, bind 200 ms (examples/catalog.json): long enough that scaling
# happens while operations run.
PLAN = "slow"
TRANSIENT = (502, 503, 504)
OPERATION_TIMEOUT_S = 90
# The prefix of every line: the check that runs this client.
NAME = os.environ.get("OSBQ_CHECK_NAME", "compose-check")


class CheckFailed(Exception):
    pass


class Broker:
    def __init__(self, url, user, password_file):
        self.url = url.rstrip("/")
        with open(password_file) as f:
            password = f.read().rstrip("\n")
        token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        self.headers = {"Authorization": "Basic " + token, "X-Broker-API-Version": "2.17"}
        self.transient_answers = 0
        self.lock = threading.Lock()

    def request(self, method, path, body=None, auth=True):
        """(status, parsed JSON body or raw text) of one request."""
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self.headers) if auth else {"X-Broker-API-Version": "2.17"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        text = raw.decode("utf-8", "replace")
        try:
            return status, json.loads(text) if text else {}
        except ValueError:
            return status, text

    def retried(self, method, path, body=None, deadline_s=60):
        """request(), again after a connection error or a 502/503/504, until deadline_s."""
        end = time.monotonic() + deadline_s
        while True:
            try:
                status, doc = self.request(method, path, body)
                if status not in TRANSIENT:
                    return status, doc
                why = "%d %s" % (status, doc)
            except OSError as e:
                why = str(e)
            with self.lock:
                self.transient_answers += 1
            if time.monotonic() > end:
                raise CheckFailed("%s %s: still failing after %d s: %s"
                                  % (method, path, deadline_s, why))
            time.sleep(0.5)


def expect(cond, what, status, doc):
    if not cond:
        raise CheckFailed("%s: got %s %s" % (what, status, json.dumps(doc)[:400]))


def plan_ids(broker):
    status, doc = broker.retried("GET", "/v2/catalog")
    expect(status == 200 and isinstance(doc, dict) and doc.get("services"), "GET /v2/catalog",
           status, doc)
    for svc in doc["services"]:
        if svc.get("name") == SERVICE:
            for plan in svc.get("plans", []):
                if plan.get("name") == PLAN:
                    return svc["id"], plan["id"]
    raise CheckFailed("the catalog has no %s/%s plan" % (SERVICE, PLAN))


def instance_path(iid, suffix="", **query):
    path = "/v2/service_instances/" + iid + suffix
    return path + ("?" + urllib.parse.urlencode(query) if query else "")


def poll(broker, path, want_gone=False):
    """Polls a last_operation endpoint until the operation ended: its final state, or "gone"
    when want_gone and the answer is 410."""
    end = time.monotonic() + OPERATION_TIMEOUT_S
    while time.monotonic() < end:
        status, doc = broker.retried("GET", path)
        if want_gone and status == 410:
            return "gone"
        expect(status == 200 and isinstance(doc, dict), "GET " + path, status, doc)
        state = doc.get("state")
        expect(state in ("in progress", "succeeded", "failed"), "GET " + path, status, doc)
        if state != "in progress":
            return state
        time.sleep(0.3)
    raise CheckFailed("GET %s: still in progress after %d s" % (path, OPERATION_TIMEOUT_S))


def provision(broker, ids, iid):
    service_id, plan_id = ids
    body = {"service_id": service_id, "plan_id": plan_id, "organization_guid": "org-check",
            "space_guid": "space-check"}
    status, doc = broker.retried("PUT", instance_path(iid, accepts_incomplete="true"), body)
    expect(status == 202 and isinstance(doc, dict) and doc.get("operation"),
           "PUT instance " + iid, status, doc)
    state = poll(broker, instance_path(iid, "/last_operation", operation=doc["operation"]))
    if state != "succeeded":
        raise CheckFailed("provision of %s ended %s" % (iid, state))


def deprovision(broker, ids, iid):
    service_id, plan_id = ids
    status, doc = broker.retried("DELETE", instance_path(
        iid, accepts_incomplete="true", service_id=service_id, plan_id=plan_id))
    expect(status == 202 and isinstance(doc, dict) and doc.get("operation"),
           "DELETE instance " + iid, status, doc)
    state = poll(broker, instance_path(iid, "/last_operation", operation=doc["operation"]),
                 want_gone=True)
    if state != "gone":
        raise CheckFailed("deprovision of %s ended %s, not 410" % (iid, state))


def lifecycle(broker):
    ids = plan_ids(broker)
    service_id, plan_id = ids
    iid, bid = "check-" + uuid.uuid4().hex, "bind-" + uuid.uuid4().hex
    provision(broker, ids, iid)
    print(NAME + ": provisioned %s (async, polled to succeeded)" % iid)
    bpath = instance_path(iid, "/service_bindings/" + bid)
    status, doc = broker.retried("PUT", bpath + "?accepts_incomplete=true",
                                 {"service_id": service_id, "plan_id": plan_id})
    expect(status in (201, 202), "PUT binding", status, doc)
    if status == 202:
        state = poll(broker, instance_path(iid, "/service_bindings/%s/last_operation" % bid,
                                           operation=doc.get("operation", "")))
        if state != "succeeded":
            raise CheckFailed("bind ended " + state)
    else:
        expect(isinstance(doc.get("credentials"), dict), "PUT binding (201)", status, doc)
    status, doc = broker.retried("GET", bpath)
    expect(status == 200 and isinstance(doc, dict) and isinstance(doc.get("credentials"), dict)
           and doc["credentials"], "GET binding", status, doc)
    print(NAME + ": bound %s, fetched its credentials (%s)"
          % (bid, ", ".join(sorted(doc["credentials"]))))
    status, doc = broker.retried("DELETE", bpath + "?" + urllib.parse.urlencode(
        {"accepts_incomplete": "true", "service_id": service_id, "plan_id": plan_id}))
    expect(status in (200, 202), "DELETE binding", status, doc)
    if status == 202:
        state = poll(broker, instance_path(iid, "/service_bindings/%s/last_operation" % bid,
                                           operation=doc.get("operation", "")), want_gone=True)
        if state not in ("gone", "succeeded"):
            raise CheckFailed("unbind ended " + state)
    status, doc = broker.retried("GET", bpath)
    expect(status == 404, "GET binding after unbind", status, doc)
    deprovision(broker, ids, iid)
    print(NAME + ": unbound, deprovisioned, polled to 410: lifecycle passed")


def load(broker, stop_file, ready_file):
    ids = plan_ids(broker)
    outcomes = {"ok": 0, "failed": []}
    lock = threading.Lock()

    def one(n):
        iid = "load-%d-%s" % (n, uuid.uuid4().hex[:12])
        try:
            provision(broker, ids, iid)
            deprovision(broker, ids, iid)
            with lock:
                outcomes["ok"] += 1
        except (CheckFailed, OSError) as e:
            with lock:
                outcomes["failed"].append("%s: %s" % (iid, e))

    end = time.monotonic() + 600
    started = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        futures = []
        while time.monotonic() < end and not os.path.exists(stop_file):
            futures.append(pool.submit(one, started))
            started += 1
            if started == 1 and ready_file:
                open(ready_file, "w").close()
            time.sleep(0.25)
        concurrent.futures.wait(futures)
    print(NAME + ": load: %d instance lifecycles, %d succeeded, %d failed, %d answers "
          "retried (502/503/refused)" % (started, outcomes["ok"], len(outcomes["failed"]),
                                         broker.transient_answers))
    if outcomes["failed"] or outcomes["ok"] != started:
        raise CheckFailed("operations lost or failed during scaling:\n  "
                          + "\n  ".join(outcomes["failed"][:20]))


def metrics(broker):
    for path in ("/metrics", "/metrics/", "/%6detrics", "//metrics"):
        for auth in (True, False):
            status, doc = broker.request("GET", path, auth=auth)
            expect(status == 404, "GET %s through the load balancer (auth %s)" % (path, auth),
                   status, doc)
    status, doc = broker.request("GET", "/v2/catalog")
    expect(status == 200, "GET /v2/catalog next to the refused /metrics", status, doc)
    print(NAME + ": /metrics is not served on the public port (404)")


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, url, user, password_file = argv[1:5]
    broker = Broker(url, user, password_file)
    try:
        if cmd == "lifecycle":
            lifecycle(broker)
        elif cmd == "load":
            load(broker, argv[5], argv[6] if len(argv) > 6 else None)
        elif cmd == "metrics":
            metrics(broker)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except CheckFailed as e:
        print(NAME + ": %s: %s" % (cmd, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
