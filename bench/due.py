#!/usr/bin/env python3
"""The due case of bench/run.sh (issue 27, docs/reliability.md "Due means due"): how late the
steps of waiting operations run. A stack of its own (a redis-server, GATEWAYS gateways and
WORKERS workers of BUILD_DIR, on loopback, started and stopped by PID with the integration
tests' launcher) gets COUNT asynchronous provisions of 300 ms (bench/catalog.json's
three-hundred-ms plan: a first step, a wait in Redis, a poll when due), sent at RATE per second
to the gateways in turn, so the workers are never the bottleneck. Printed as NAME=VALUE lines:

  e2e_late_ms_p50/p99/max   per operation: from its acceptance to its end (Redis' created_ms
                            and finished_ms), less its 300 ms: the poll's lateness plus two short
                            steps. Measures any build.
  step_late_ms_p50/p99/max  per poll: how long after its due time a worker claimed it (the
                            worker's job_start late_ms; builds from issue 27 on)
  redis_calls_per_op        Redis commands (scripts' own commands included) per operation over
                            the run, the stack's background work (recovery scans, registry
                            renewals) included; evalsha_per_op the script calls alone

usage: due.py BUILD_DIR [GATEWAYS [WORKERS [COUNT [RATE]]]]   (defaults 4 2 300 20)"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from own_stack import (  # noqa: E402
    INSTANT, Broker, osbq_stack, own_stack, plan_operations, quantiles)

THREE_HUNDRED = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f107"
DURATION_MS = 300
END_TIMEOUT_S = 120
NAMESPACE = "osbq"


def commandstats(redis):
    """{command: calls} from INFO commandstats."""
    text = redis.command("INFO", "commandstats")
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^cmdstat_([a-z|]+):calls=(\d+)", text, re.M)}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build_dir = sys.argv[1]
    gateways, workers, count, rate = (list(map(int, sys.argv[2:6])) + [4, 2, 300, 20][
        len(sys.argv[2:6]):])
    with own_stack(build_dir, "osbq-bench-due-") as (stack, password):
        gws = [stack.start_gateway(name="gateway-%d" % i, ready_path="/readyz")
               for i in range(gateways)]
        # The workers log each step's start (late_ms); the gateways stay at warn.
        wks = [stack.start_worker(name="worker-%d" % i, OSBQ_LOG_LEVEL="info")
               for i in range(workers)]
        clients = [Broker(g.port, password) for g in gws]

        def instant_through_each():
            return all(c.provision(INSTANT, "o", asynchronous=False)[0] == 201 for c in clients)
        osbq_stack.wait_until(instant_through_each, 30, "every gateway to reach a worker")
        stack.redis.command("CONFIG", "RESETSTAT")
        started = time.monotonic()
        for i in range(count):
            due = started + i / float(rate)
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            status, _ = clients[i % gateways].provision(THREE_HUNDRED, "o")
            if status != 202:
                raise SystemExit("provision %d answered %d" % (i, status))
        osbq_stack.wait_until(lambda: stack.redis.command("ZCARD", NAMESPACE + ":queue") == 0,
                              END_TIMEOUT_S, "every operation to end")
        stats = commandstats(stack.redis)
        # The polls of the wait above and this read are the bench's, not the broker's.
        calls = sum(v for k, v in stats.items() if k not in ("zcard", "info", "config|resetstat"))
        times = plan_operations(stack.redis, NAMESPACE, THREE_HUNDRED, "state", "created_ms",
                                "finished_ms")
        bad = [t for t in times if t[1] != "succeeded"]
        if len(times) != count or bad:
            raise SystemExit("%d operations, %d not succeeded" % (len(times), len(bad)))
        e2e = quantiles([int(t[3]) - int(t[2]) - DURATION_MS for t in times])
        steps = quantiles([int(m) for w in wks
                           for m in re.findall(r"msg=job_start .* late_ms=(\d+)", w.log())])
        print("gateways=%d workers=%d count=%d rate=%d" % (gateways, workers, count, rate))
        print("e2e_late_ms_p50=%d e2e_late_ms_p99=%d e2e_late_ms_max=%d" % e2e)
        if steps is not None:
            print("step_late_ms_p50=%d step_late_ms_p99=%d step_late_ms_max=%d" % steps)
        print("redis_calls_per_op=%.1f evalsha_per_op=%.2f"
              % (calls / float(count), stats.get("evalsha", 0) / float(count)))


if __name__ == "__main__":
    main()
