#!/usr/bin/env python3
"""The noisy_neighbor case of bench/run.sh (issue 28, docs/reliability.md "Fairness"): one
organization's burst of slow steps against another's instant operations. A stack of its own (a
redis-server, one gateway and one worker of BUILD_DIR, on loopback, started and stopped by PID
with the integration tests' launcher), bench/catalog.json:

  alone   tenant B (organization org-b) sends an asynchronous 0-ms provision every 200 ms for
          B_SECONDS; each one's accept-to-succeeded time from Redis (created_ms, finished_ms)
  burst   tenant A (org-a) sends COUNT asynchronous provisions whose steps each keep a runner
          busy for 6 s (six-seconds-blocking) on 8 connections, while B goes on as above until
          A's last operation ended (at most the time A's work takes alone plus a minute); B's
          times, and A's throughput (operations per second, from its first acceptance to its
          last end)
  a_alone A's COUNT provisions alone, for its throughput without B

Printed as NAME=VALUE lines: b_alone_p50/p99_ms, b_burst_p50/p99/max_ms, a_ops_per_s_beside_b,
a_ops_per_s_alone (with a_alone), and their ratio.

usage: noisy_neighbor.py BUILD_DIR [COUNT [a_alone]]   (COUNT default 10000: the issue's)"""

import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from own_stack import INSTANT, Broker, osbq_stack, own_stack, quantiles  # noqa: E402

SIX_BLOCKING = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f106"
STEP_S = 6.0
SLOTS = 16  # the worker's default OSBQ_WORKER_CONCURRENCY
B_EVERY_S = 0.2
B_SECONDS = 10.0
SENDERS = 8
NAMESPACE = "osbq"
TIMES_SCRIPT = """
local out = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  local r = redis.call('HMGET', key, 'instance', 'state', 'created_ms', 'finished_ms')
  out[#out + 1] = {r[1] or '', r[2] or '', r[3] or '0', r[4] or '0'}
end
return cjson.encode(out)
"""


def provision(broker, plan, org):
    """An asynchronous provision that must be accepted; its instance id."""
    status, iid = broker.provision(plan, org)
    if status != 202:
        raise SystemExit("provision answered %d" % status)
    return iid


def times(redis):
    """{instance id: (state, created_ms, finished_ms)} of every operation."""
    rows = json.loads(redis.command("EVAL", TIMES_SCRIPT, 0, NAMESPACE + ":op:*"))
    return {r[0]: (r[1], int(r[2]), int(r[3])) for r in rows}


def wait_ended(redis, ids, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        t = times(redis)
        if all(t.get(i, ("",))[0] in ("succeeded", "failed") for i in ids):
            return t
        time.sleep(0.5)
    raise SystemExit("operations still running after %d s" % timeout_s)


def b_stream(gw, stop, out):
    """B's 0-ms provisions every B_EVERY_S until stop is set; their ids in out."""
    next_at = time.monotonic()
    while not stop.is_set():
        out.append(provision(gw, INSTANT, "org-b"))
        next_at += B_EVERY_S
        stop.wait(max(0.0, next_at - time.monotonic()))


def a_burst(port, password, count):
    """A's count provisions on SENDERS connections; their ids."""
    def send(sender):
        gw = Broker(port, password)
        return [provision(gw, SIX_BLOCKING, "org-a") for _ in range(sender, count, SENDERS)]
    with ThreadPoolExecutor(SENDERS) as pool:
        return [i for ids in pool.map(send, range(SENDERS)) for i in ids]


def a_rate(t, ids):
    first = min(t[i][1] for i in ids)
    last = max(t[i][2] for i in ids)
    return len(ids) / ((last - first) / 1000.0)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build_dir = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    a_alone = len(sys.argv) > 3 and sys.argv[3] == "a_alone"
    work_s = count / SLOTS * STEP_S
    with own_stack(build_dir, "osbq-bench-noisy-",
                   OSBQ_MAX_QUEUED_JOBS=str(count + 10000)) as (stack, password):
        gw = stack.start_gateway(ready_path="/readyz")
        stack.start_worker()
        b = Broker(gw.port, password)
        provision(b, INSTANT, "org-warm")
        osbq_stack.wait_until(lambda: stack.redis.command("ZCARD", NAMESPACE + ":queue") == 0, 30,
                              "a worker to take a job")
        stop, b_ids = threading.Event(), []
        sender = threading.Thread(target=b_stream, args=(b, stop, b_ids))
        sender.start()
        time.sleep(B_SECONDS)
        stop.set()
        sender.join()
        t = wait_ended(stack.redis, b_ids, 60)
        alone = quantiles([t[i][2] - t[i][1] for i in b_ids])
        print("b_alone_p50_ms=%d b_alone_p99_ms=%d" % alone[:2], flush=True)

        stop, b_ids = threading.Event(), []
        b = Broker(gw.port, password)
        sender = threading.Thread(target=b_stream, args=(b, stop, b_ids))
        sender.start()
        a_ids = a_burst(gw.port, password, count)
        t = wait_ended(stack.redis, a_ids, work_s * 1.5 + 60)
        stop.set()
        sender.join()
        t = wait_ended(stack.redis, b_ids + a_ids, work_s + 60)
        burst = quantiles([t[i][2] - t[i][1] for i in b_ids])
        beside = a_rate(t, a_ids)
        print("b_burst_p50_ms=%d b_burst_p99_ms=%d b_burst_max_ms=%d b_count=%d"
              % (burst + (len(b_ids),)), flush=True)
        print("a_count=%d a_ops_per_s_beside_b=%.2f" % (count, beside), flush=True)
        if a_alone:
            a_ids = a_burst(gw.port, password, count)
            t = wait_ended(stack.redis, a_ids, work_s * 1.5 + 60)
            alone_rate = a_rate(t, a_ids)
            print("a_ops_per_s_alone=%.2f a_beside_over_alone=%.3f"
                  % (alone_rate, beside / alone_rate), flush=True)


if __name__ == "__main__":
    main()
