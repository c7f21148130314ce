"""Operations that wait hold nothing (issue 19, docs/reliability.md "Operations that wait"): sim
plans whose provisions take seconds run as short steps with waits in Redis between them. Each
test starts its own redis-server, gateway and worker(s) on loopback with the fault tests' short
timings (test_faults.py), puts hundreds of operations in the waiting state, and checks that they
all end on time, that a short operation is not stuck behind them, and that a killed or stopped
worker or a stopped Redis loses none and runs no step twice at once. Only processes the harness
started are signalled, by PID; every wait is bounded."""

import calendar
import json
import re
import signal
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

import harness
from test_faults import (FAST, LEASE_S, NAMESPACE, QUEUE, SLACK_S, FaultTestCase, instance_body,
                         ipath, new_id)

LONG = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4f07"   # provision 20 s, no poll_ms: two steps
POLLED = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4f08"  # provision 6 s, polled every 2 s
SHORT = "9d2c4e6a-1b3f-4a5c-8e7d-0f1a2b3c4f09"   # provision 300 ms: two steps
LONG_S = 20.0
POLLED_S = 6.0
MANY = 500
SLOTS = 4  # OSBQ_WORKER_CONCURRENCY of the worker that holds the MANY
SENDERS = 4
# A synchronous 0-ms provision sent behind the waiting operations must answer within this.
SHORT_BOUND_S = 2.0

# Every operation's fields the checks read, in one round trip.
RECORDS_SCRIPT = """
local out = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  local r = redis.call('HMGET', key, 'state', 'claims', 'steps', 'plan_id')
  out[string.sub(key, #ARGV[1])] = {r[1] or '', r[2] or '', r[3] or '', r[4] or ''}
end
return cjson.encode(out)
"""

_JOB_LINE = re.compile(r"^ts=(\S+) .*msg=(job_start|job_end) op=(\S+) ")
_RESULT = re.compile(r" result=(\S+)")


def log_time(ts):
    """Seconds since the epoch of a log line's ts=2026-11-25T12:37:52.979Z."""
    return calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) + float(ts[19:-1] or 0)


class StepsTestCase(FaultTestCase):

    def accept_many(self, gw, plan, count):
        """count async provisions on plan, sent by SENDERS clients at once; their (instance,
        operation) pairs."""
        clients = [self.client(gw) for _ in range(SENDERS)]

        def send(sender):
            return [self.provision_async(clients[sender], plan)
                    for _ in range(sender, count, SENDERS)]

        with ThreadPoolExecutor(SENDERS) as pool:
            return [pair for pairs in pool.map(send, range(SENDERS)) for pair in pairs]

    def records(self, plan):
        """{operation id: (state, claims, steps)} of every operation on plan."""
        text = self.stack.redis.command("EVAL", RECORDS_SCRIPT, 0, "%s:op:" % NAMESPACE + "*")
        return {op: tuple(r[:3]) for op, r in json.loads(text).items() if r[3] == plan}

    def wait_all_ended(self, timeout_s, what):
        """Waits until nothing is left in the queue (every operation ended); returns when."""
        try:
            harness.wait_until(lambda: self.stack.redis.command("ZCARD", QUEUE) == 0,
                               timeout_s, what)
        except AssertionError as e:
            self.fail_with_logs("%s (%s left in the queue)"
                                % (e, self.stack.redis.command("ZCARD", QUEUE)))
        return time.monotonic()

    def assert_all_succeeded(self, accepted, plan):
        recs = self.records(plan)
        self.assertEqual(len(recs), len(accepted))
        bad = {op: r for op, r in recs.items() if r[0] != "succeeded"}
        self.assertEqual(bad, {}, "operations that did not succeed")
        return recs

    def sync_short_provision(self, gw):
        """Sends a synchronous 0-ms provision; returns how long its 201 took."""
        c = self.client(gw)
        started = time.monotonic()
        r = c.request("PUT", ipath(new_id()), instance_body(FAST))
        took = time.monotonic() - started
        self.assertEqual(r.status, 201, r.body)
        return took

    def steps_by_op(self, workers, ended_at):
        """The steps each worker logged, per operation: (start, end, result) in epoch seconds;
        a step a worker never ended (it was killed) ends at ended_at[worker]."""
        steps = {}
        for w in workers:
            open_steps = {}
            for line in w.log().splitlines():
                m = _JOB_LINE.match(line)
                if not m:
                    continue
                ts, event, op = m.groups()
                result = _RESULT.search(line)
                result = result.group(1) if result else None
                if event == "job_start":
                    open_steps[op] = log_time(ts)
                elif op in open_steps:
                    steps.setdefault(op, []).append((open_steps.pop(op), log_time(ts), result))
            for op, start in open_steps.items():
                steps.setdefault(op, []).append((start, ended_at[w], "cut"))
        return steps

    def assert_never_twice_at_once(self, steps):
        """No two steps of one operation overlap, and each ended exactly once."""
        for op, spans in steps.items():
            spans.sort()
            for before, after in zip(spans, spans[1:]):
                self.assertLessEqual(before[1], after[0] + 0.002,
                                     "operation %s: two steps at once: %r" % (op, spans))
            self.assertEqual(sum(1 for s in spans if s[2] == "succeeded"), 1,
                             "operation %s: %r" % (op, spans))


# =====================================================================================
class ManyWaiting(StepsTestCase):

    def test_1_500_long_operations_on_4_slots_end_on_time_and_block_nothing(self):
        """500 provisions of 20 s in flight on one worker with OSBQ_WORKER_CONCURRENCY=4: all
        end within 20 s + a bound of their acceptance, each in two steps, none claimed twice; a
        synchronous 0-ms provision sent behind them, and another while their polls come due,
        answers within 2 s."""
        stack = self.make_stack()
        gw = stack.start_gateway()
        worker = stack.start_worker(OSBQ_WORKER_CONCURRENCY=str(SLOTS))
        harness.wait_workers_connected([gw], 1)

        first_at = time.monotonic()
        accepted = self.accept_many(gw, LONG, MANY)
        last_at = time.monotonic()
        behind = self.sync_short_provision(gw)
        self.assertLess(behind, SHORT_BOUND_S, "a 0-ms provision behind 500 waiting ones")

        # Their first steps are short: most soon wait, held by no worker, while never more
        # steps run than the worker's slots. (How soon depends on the machine's load: the
        # wait is bounded well before their second steps come due.)
        def most_wait():
            states = [r[0] for r in self.records(LONG).values()]
            self.assertLessEqual(states.count("running"), SLOTS, "steps beyond the slots")
            return states.count("waiting") > MANY // 2

        harness.wait_until(most_wait, LONG_S / 2, "most operations to wait, held by no worker")

        time.sleep(max(0.0, first_at + LONG_S - time.monotonic()))
        during = self.sync_short_provision(gw)
        self.assertLess(during, SHORT_BOUND_S, "a 0-ms provision while 500 polls are due")

        bound = LONG_S + SLACK_S + 6.0
        ended = self.wait_all_ended(last_at + bound - time.monotonic(), "500 operations to end")
        self.assertLess(ended - last_at, bound)
        recs = self.assert_all_succeeded(accepted, LONG)
        self.assertEqual({r[1] for r in recs.values()}, {"1"}, "a poll is not an attempt")
        self.assertEqual({r[2] for r in recs.values()}, {"1"}, "one wait each")
        self.assertAllAlive([gw, worker])


# =====================================================================================
class DueOnTime(StepsTestCase):

    # Far longer than any of these operations takes: only the due times the worker tells the
    # gateways can make them end on time (docs/reliability.md, "Due means due").
    INTERVAL_MS = 30000
    COUNT = 6

    def test_a_step_runs_when_due_not_at_the_next_scan(self):
        """300-ms provisions through two gateways whose full scans come every 30 s: each ends
        long before a scan could have found its poll (under 10 s from its acceptance, where an
        operation found by the scans would end 0.3 to 30 s after it), and each worker logs how
        late it claimed the poll. Sequential, so each wait is recorded after the last scan."""
        stack = self.make_stack(OSBQ_RECOVERY_INTERVAL_MS=str(self.INTERVAL_MS))
        gateways = [stack.start_gateway(), stack.start_gateway()]
        worker = stack.start_worker()
        harness.wait_workers_connected(gateways, 1)
        for i in range(self.COUNT):
            iid, _ = self.provision_async(self.client(gateways[i % 2]), SHORT)
            done = self.wait_ended(self.client(gateways[i % 2]), iid, 35)
            self.assertEqual(done["state"], "succeeded", done)
        text = self.stack.redis.command(
            "EVAL", "local out = {} for _, k in ipairs(redis.call('KEYS', ARGV[1])) do "
            "out[#out + 1] = redis.call('HMGET', k, 'plan_id', 'created_ms', 'finished_ms', "
            "'steps') end return cjson.encode(out)", 0, NAMESPACE + ":op:*")
        took = [(int(r[2]) - int(r[1]), r[3]) for r in json.loads(text) if r[0] == SHORT]
        self.assertEqual(len(took), self.COUNT)
        for ms, steps in took:
            self.assertEqual(steps, "1", "one step waited, then the poll ended it")
            self.assertLess(ms, 10000, "ended %d ms after its acceptance: found by a scan, "
                            "not told (all: %r)" % (ms, took))
        late = [int(m) for m in re.findall(r"msg=job_start .* late_ms=(\d+)", worker.log())]
        self.assertEqual(len(late), self.COUNT, "one poll per operation, with its lateness")


# =====================================================================================
class WorkerGoneWhileWaiting(StepsTestCase):

    def stop_worker_while_waiting(self, signo):
        """500 polled operations wait on the only worker, which gets signo; a new worker
        starts: all end, none lost, no step ran twice at once, each outcome recorded once."""
        stack = self.make_stack()
        gw, [first] = harness.start_connected(stack)
        accepted = self.accept_many(gw, POLLED, MANY)
        last_at = time.monotonic()
        time.sleep(1.0)
        waiting = sum(1 for r in self.records(POLLED).values() if r[0] == "waiting")
        self.assertGreater(waiting, MANY // 2)
        if signo == signal.SIGKILL:
            self.assertEqual(harness.kill(first), -signal.SIGKILL)
        else:
            first.stop(signal.SIGTERM)
        stopped_at = time.time()
        second = stack.start_worker()

        bound = POLLED_S + LEASE_S + SLACK_S + 6.0
        self.wait_all_ended(last_at + bound - time.monotonic(), "500 operations to end")
        recs = self.assert_all_succeeded(accepted, POLLED)
        # Only a step running at the stop may have used a second attempt.
        self.assertLessEqual({r[1] for r in recs.values()}, {"1", "2"})
        steps = self.steps_by_op([first, second], {first: stopped_at, second: time.time()})
        self.assertEqual(len(steps), MANY)
        self.assert_never_twice_at_once(steps)
        self.assertTrue(any(s[0] > stopped_at for spans in steps.values() for s in spans),
                        "the new worker ran the next steps")
        self.assertAllAlive([gw, second])

    def test_2_sigkill_the_only_worker_while_500_operations_wait(self):
        self.stop_worker_while_waiting(signal.SIGKILL)

    def test_3_sigterm_the_only_worker_while_500_operations_wait(self):
        self.stop_worker_while_waiting(signal.SIGTERM)


# =====================================================================================
class RedisStoppedWhileWaiting(StepsTestCase):

    def test_4_sigstop_redis_5s_while_operations_wait(self):
        """redis-server SIGSTOPped for 5 s while 100 polled operations wait: nothing is lost,
        the polls resume after SIGCONT and every operation succeeds."""
        stack = self.make_stack()
        gw, [worker] = harness.start_connected(stack)
        accepted = self.accept_many(gw, POLLED, 100)
        last_at = time.monotonic()
        stack.redis.send_signal(signal.SIGSTOP)
        try:
            time.sleep(5.0)
        finally:
            stack.redis.send_signal(signal.SIGCONT)
        resumed_at = time.time()
        bound = POLLED_S + 5.0 + SLACK_S + 6.0
        self.wait_all_ended(last_at + bound - time.monotonic(), "100 operations to end")
        self.assert_all_succeeded(accepted, POLLED)
        steps = self.steps_by_op([worker], {worker: time.time()})
        self.assertTrue(all(any(s[0] >= resumed_at - 0.5 for s in spans)
                            for spans in steps.values()), "polls resumed after the outage")
        self.assert_never_twice_at_once(steps)
        self.assertAllAlive([gw, worker])


if __name__ == "__main__":
    unittest.main()
