"""Writes the previous release's Redis records into tests/data/previous-release/<version>/, for the
component test that keeps this tree able to finish them (tests/component/test_previous_release.c):
a stack of that release (previous_release.py) with one gateway accepts each kind of operation
while no worker runs (<kind>-accepted.json: the records its gateway writes, the encoded job
among them), then a worker of that release finishes it (<kind>-done.json: what its worker
leaves). Run it once per release, when RELEASES gains a line:

    python3 tests/integration/previous_release_fixtures.py [BUILD_DIR]

Each file is one JSON object: {key: {"type": "hash"|"set"|"zset"|"string", "value": ...}},
values as text, or {"hex": ...} for bytes that are not printable UTF-8 (the encoded job)."""

import json
import os
import sys

import harness
import previous_release
from osbq_stack import REDIS_COMMAND_TIMEOUT_S, encode_command, read_resp

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-upgrade.json")
SERVICE = "7e0a1b2c-3d4e-4f50-8a61-72b3c4d5e601"
PLAN = "7e0a1b2c-3d4e-4f50-8a61-72b3c4d5f601"  # every operation at once, plan_updateable
INSTANCE = "inst-1"
BINDING = "bind-1"
# Liveness keys the processes renew on their own: not records.
SKIP = ("osbq:gateways", "osbq:workers")


def raw(redis, *args):
    """One command's reply with bytes left undecoded."""
    import socket
    with socket.create_connection(("127.0.0.1", redis.port),
                                  timeout=REDIS_COMMAND_TIMEOUT_S) as s:
        s.sendall(encode_command(args))
        with s.makefile("rb") as f:
            return read_resp(f, decode=False)


def text(value):
    try:
        s = value.decode()
        if all(c.isprintable() or c == "\n" for c in s):
            return s
    except UnicodeDecodeError:
        pass
    return {"hex": value.hex()}


def snapshot(redis):
    out = {}
    for key in sorted(k.decode() for k in raw(redis, "KEYS", "*")):
        if key in SKIP or key.startswith("osbq:status:"):
            continue
        kind = raw(redis, "TYPE", key).decode()
        if kind == "hash":
            flat = raw(redis, "HGETALL", key)
            value = {k.decode(): text(v) for k, v in zip(flat[0::2], flat[1::2])}
        elif kind == "set":
            value = sorted(m.decode() for m in raw(redis, "SMEMBERS", key))
        elif kind == "zset":
            flat = raw(redis, "ZRANGE", key, 0, -1, "WITHSCORES")
            value = [[m.decode(), s.decode()] for m, s in zip(flat[0::2], flat[1::2])]
        elif kind == "string":
            value = text(raw(redis, "GET", key))
        else:
            raise AssertionError("%s: a %s, not written by the fixtures" % (key, kind))
        out[key] = {"type": kind, "value": value}
    return out


def main(build_dir):
    version, gateway_bin, worker_bin = previous_release.build(build_dir)
    out_dir = os.path.join(harness.SOURCE_DIR, "tests", "data", "previous-release", version)
    os.makedirs(out_dir, exist_ok=True)
    stack = harness.Stack(catalog=CATALOG)
    try:
        gateway = stack.start_gateway(binary=gateway_bin)
        client = stack.client(gateway)
        ipath = "/v2/service_instances/" + INSTANCE
        bpath = ipath + "/service_bindings/" + BINDING
        ids = "service_id=%s&plan_id=%s&accepts_incomplete=true" % (SERVICE, PLAN)
        steps = (
            ("provision", "PUT", ipath, {"service_id": SERVICE, "plan_id": PLAN,
                                         "organization_guid": "org", "space_guid": "space",
                                         "parameters": {"size": 1}}),
            ("update", "PATCH", ipath, {"service_id": SERVICE, "plan_id": PLAN,
                                        "parameters": {"size": 2}}),
            ("bind", "PUT", bpath, {"service_id": SERVICE, "plan_id": PLAN,
                                    "bind_resource": {"app_guid": "app-1"}}),
            ("unbind", "DELETE", bpath, None),
            ("deprovision", "DELETE", ipath, None),
        )
        for kind, method, path, body in steps:
            query = ids if method == "DELETE" else "accepts_incomplete=true"
            r = client.request(method, path + "?" + query, body)
            if r.status != 202:
                raise AssertionError("%s: %d %r" % (kind, r.status, r.body))
            operation = r.json()["operation"]
            write(out_dir, kind + "-accepted", snapshot(stack.redis))
            worker = stack.start_worker(binary=worker_bin)
            harness.wait_until(
                lambda: stack.redis.command("HGET", "osbq:op:" + operation, "state")
                == "succeeded", 10, kind + " to succeed")
            worker.stop()
            stack.processes.remove(worker)
            write(out_dir, kind + "-done", snapshot(stack.redis))
        client.close()
    finally:
        stack.stop()


def write(out_dir, name, data):
    path = os.path.join(out_dir, name + ".json")
    with open(path, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    print(path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(harness.SOURCE_DIR, "build"))
