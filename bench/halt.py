#!/usr/bin/env python3
"""The halt case of bench/run.sh (issue 42, docs/decisions/0051): how soon a DELETE halts the
creation it meets. A stack of its own (a redis-server, one gateway and two workers of BUILD_DIR,
on loopback, started and stopped by PID with the integration tests' launcher) gets COUNT
asynchronous provisions on a plan whose one step works 30 s (VARIANT sim: sim's blocking step,
holding a runner thread; exec: bench/exec/provision_sleeps.sh, whose provision sleeps 30 s and
whose deprovision ends at once), each deleted (asynchronously)
between 1 and 10 s after its 202, the delays spread evenly. Printed as NAME=VALUE lines:

  halt_ms_p50/p99/max         per provision: from its DELETE's 202 to its halted end in Redis
                              (its finished_ms, written once its step stopped; the end may come
                              before the 202 is read: counted as 0)
  halt_from_request_ms_...    the same from the moment the DELETE was sent
  deprovision_ms_p50/p99/max  per deprovision: from its 202 to its end (finished_ms)
  halted, not_halted          provisions that ended halted, and those that did not
  slots_held_after            the workers' osbq_jobs_running once every operation ended (a
                              halted step that did not stop would hold one)

The clocks compared are this machine's (the bench's and the broker's wall clocks).
usage: halt.py BUILD_DIR [VARIANT [COUNT]]   (defaults sim 200)"""

import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from own_stack import (  # noqa: E402
    BENCH_DIR, INSTANT, SERVICE, Broker, osbq_stack, own_stack, plan_operations, quantiles,
    variant_args)

WORK_S = 30
NAMESPACE = "osbq"
END_TIMEOUT_S = 120
HALTING_PLAN = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f1a1"


def halting_plan(variant):
    """The 30-s plan of variant."""
    settings = {"backend": "sim", "blocking": True, "provision_ms": WORK_S * 1000}
    if variant == "exec":
        settings = {"backend": "exec", "env": {"SLEEP_S": str(WORK_S)},
                    "command": ["/bin/sh",
                                os.path.join(BENCH_DIR, "exec", "provision_sleeps.sh")]}
    return {"id": HALTING_PLAN, "name": "halting-%s" % variant,
            "description": "One step of %d s, deleted while it runs." % WORK_S, "osbq": settings}


def delete(broker, iid):
    """An asynchronous DELETE of iid; (status, operation, epoch ms it was sent, epoch ms of the
    answer)."""
    sent = time.time() * 1000
    broker.conn.request("DELETE", "/v2/service_instances/%s?accepts_incomplete=true&service_id=%s"
                        "&plan_id=%s" % (iid, SERVICE, HALTING_PLAN), headers=broker.headers)
    r = broker.conn.getresponse()
    body = r.read()
    at = time.time() * 1000
    return r.status, json.loads(body).get("operation") if r.status == 202 else None, sent, at


def running_jobs(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("osbq_jobs_running "):
                return float(line.split()[1])
    return 0.0


def main():
    build_dir, variant, count = variant_args(__doc__, 200)
    with own_stack(build_dir, "osbq-bench-halt-", plan=halting_plan(variant)) as (stack, password):
        gateway = stack.start_gateway(name="gateway-0", ready_path="/readyz")
        ports = [osbq_stack.free_port() for _ in range(2)]
        for i, port in enumerate(ports):
            stack.start_worker(name="worker-%d" % i, OSBQ_WORKER_CONCURRENCY=str(count),
                               OSBQ_METRICS_LISTEN="127.0.0.1:%d" % port)
        broker = Broker(gateway.port, password)
        osbq_stack.wait_until(lambda: broker.provision(INSTANT, "o", asynchronous=False)[0] == 201,
                              30, "the gateway to reach a worker")
        accepted = []
        for i in range(count):
            status, iid = broker.provision(HALTING_PLAN, "o")
            if status != 202:
                raise SystemExit("provision %d answered %d" % (i, status))
            accepted.append((time.monotonic(), iid))
        # Each deleted 1 to 10 s after its 202, the delays spread evenly.
        due = sorted((at + 1 + 9.0 * i / max(count - 1, 1), iid)
                     for i, (at, iid) in enumerate(accepted))
        deleted = {}
        for when, iid in due:
            pause = when - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            status, operation, sent, at = delete(broker, iid)
            if status != 202:
                raise SystemExit("the DELETE of %s answered %d" % (iid, status))
            deleted[operation] = (sent, at)
        osbq_stack.wait_until(lambda: stack.redis.command("ZCARD", NAMESPACE + ":queue") == 0,
                              END_TIMEOUT_S, "every operation to end")
        ops = plan_operations(stack.redis, NAMESPACE, HALTING_PLAN, "kind", "state", "halted_by",
                              "finished_ms")
        halts, halts_sent, deprovisions, not_halted = [], [], [], 0
        for _, kind, state, halted_by, finished in ops:
            if kind == "provision" and halted_by in deleted and state == "failed":
                halts.append(max(0, int(finished) - deleted[halted_by][1]))
                halts_sent.append(int(finished) - deleted[halted_by][0])
            elif kind == "provision":
                not_halted += 1
        for op_id, kind, state, _, finished in ops:
            if kind == "deprovision" and op_id in deleted and state == "succeeded":
                deprovisions.append(int(finished) - deleted[op_id][1])
        time.sleep(1)
        held = sum(running_jobs(port) for port in ports)
        print("variant=%s count=%d work_s=%d" % (variant, count, WORK_S))
        if halts:
            print("halt_ms_p50=%d halt_ms_p99=%d halt_ms_max=%d" % quantiles(halts))
            print("halt_from_request_ms_p50=%d halt_from_request_ms_p99=%d "
                  "halt_from_request_ms_max=%d" % quantiles(halts_sent))
        if deprovisions:
            print("deprovision_ms_p50=%d deprovision_ms_p99=%d deprovision_ms_max=%d"
                  % quantiles(deprovisions))
        print("halted=%d not_halted=%d deprovisions_succeeded=%d slots_held_after=%d"
              % (len(halts), not_halted, len(deprovisions), held))


if __name__ == "__main__":
    main()
