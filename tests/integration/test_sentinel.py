"""Redis failover without a restart (issue 11, docs/deploy.md "Redis high availability"): a
primary, a replica and three Sentinels on loopback; a gateway and a worker find the primary
through OSBQ_REDIS_SENTINELS. The primary is SIGKILLed: requests get a quick 503 during the
switch, then go on against the promoted replica, and every operation accepted before (and
replicated) or after the failover reaches a final state, with no osbq process restarted."""

import os
import signal
import time
import unittest

import harness

CATALOG = os.path.join(harness.SOURCE_DIR, "tests", "data", "catalog-tests.json")
SERVICE = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7e01"
FAST = "0b5e3f1a-7c2d-4e8f-9a10-3d4c5b6a7f01"
MASTER = "osbq-primary"


class RedisNode(harness.Process):
    """A harness.REDIS_SERVER (replica or Sentinel) on a free loopback port, with a config
    file."""

    def __init__(self, workdir, name, lines, sentinel=False):
        self.port = harness.free_port()
        conf = os.path.join(workdir, name + ".conf")
        with open(conf, "w") as f:
            f.write("port %d\nbind 127.0.0.1\ndir %s\nsave \"\"\nappendonly no\n"
                    % (self.port, workdir))
            f.write("".join(line + "\n" for line in lines))
        argv = [harness.REDIS_SERVER, conf] + (["--sentinel"] if sentinel else [])
        super().__init__(name, argv, dict(os.environ), workdir)
        harness.wait_until(self.ping, harness.START_TIMEOUT_S, name + " to answer PING")

    def command(self, *args, timeout_s=harness.REDIS_COMMAND_TIMEOUT_S):
        return harness.Redis.command(self, *args, timeout_s=timeout_s)

    def ping(self):
        return harness.Redis.ping(self)


def info(node, section):
    text = node.command("INFO", section)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def start_sentinels(stack, primary):
    """Three Sentinels (quorum 2, down after 1 s) watching primary, added to stack's processes;
    returns them once each sees the replica and the two others."""
    sentinels = []
    for i in range(3):
        s = RedisNode(stack.workdir, "sentinel-%d" % i, [
            "sentinel monitor %s 127.0.0.1 %d 2" % (MASTER, primary.port),
            "sentinel down-after-milliseconds %s 1000" % MASTER,
            "sentinel failover-timeout %s 10000" % MASTER,
            "sentinel parallel-syncs %s 1" % MASTER], sentinel=True)
        stack.processes.append(s)
        sentinels.append(s)

    def sentinels_ready():
        return all(len(s.command("SENTINEL", "replicas", MASTER)) >= 1 and
                   len(s.command("SENTINEL", "sentinels", MASTER)) >= 2 for s in sentinels)

    harness.wait_until(sentinels_ready, 20, "the Sentinels to see the replica and each other")
    return sentinels


class SentinelFailover(unittest.TestCase):
    def setUp(self):
        self.stack = harness.Stack(catalog=CATALOG)
        primary = self.stack.redis
        workdir = self.stack.workdir
        self.replica = RedisNode(workdir, "replica", ["replicaof 127.0.0.1 %d" % primary.port])
        self.stack.processes.append(self.replica)
        harness.wait_until(lambda: info(self.replica, "replication").get(
            "master_link_status") == "up", 10, "the replica to sync")
        self.sentinels = start_sentinels(self.stack, primary)
        sentinel_list = ",".join("127.0.0.1:%d" % s.port for s in self.sentinels)
        # OSBQ_REDIS_URL names a port nothing listens on: only the Sentinels can lead to Redis.
        env = dict(OSBQ_REDIS_SENTINELS=sentinel_list, OSBQ_REDIS_MASTER_NAME=MASTER,
                   OSBQ_REDIS_URL="redis://127.0.0.1:%d/0" % harness.free_port(),
                   OSBQ_REDIS_TIMEOUT_MS=1000, OSBQ_RECOVERY_INTERVAL_MS=200,
                   OSBQ_CLAIM_TIMEOUT_MS=1000)
        self.gateway = self.stack.start_gateway(**env)
        self.worker = self.stack.start_worker(OSBQ_LEASE_MS=2000, **env)
        harness.wait_workers_connected([self.gateway], 1)
        self.client = self.stack.client(self.gateway)

    def tearDown(self):
        self.client.close()
        self.stack.stop()

    def provision(self, iid):
        return self.client.request("PUT", "/v2/service_instances/%s?accepts_incomplete=true" % iid,
                                   {"service_id": SERVICE, "plan_id": FAST,
                                    "organization_guid": "o", "space_guid": "s"})

    def state(self, iid):
        r = self.client.request("GET", "/v2/service_instances/%s/last_operation" % iid)
        return r.json().get("state") if r.status == 200 else None

    def test_primary_killed_operations_go_on(self):
        pids = (self.gateway.pid, self.worker.pid)
        before = []
        for i in range(10):
            r = self.provision("before-%d" % i)
            self.assertEqual(r.status, 202, r.body)
            before.append("before-%d" % i)
        primary = self.stack.redis
        # Asynchronous replication: wait until the replica has everything accepted so far
        # (what a real failover can lose is the last moment's writes: docs/deploy.md).
        harness.wait_until(lambda: info(self.replica, "replication").get(
            "master_repl_offset") == info(primary, "replication").get("master_repl_offset"),
            10, "the replica to catch up")
        os.kill(primary.pid, signal.SIGKILL)
        killed = time.monotonic()

        # During the switch: quick 503s (never a hang), then acceptance again.
        after, statuses = [], []
        deadline = killed + 40
        while time.monotonic() < deadline and len(after) < 5:
            iid = "after-%d" % len(statuses)
            started = time.monotonic()
            r = self.provision(iid)
            self.assertLess(time.monotonic() - started, 3.5, "a request waited past the bound")
            statuses.append(r.status)
            if r.status == 202:
                after.append(iid)
            else:
                self.assertEqual(r.status, 503, r.body)
                self.assertIn("description", r.json())
                time.sleep(0.1)
        self.assertEqual(len(after), 5, "statuses after the kill: %s" % statuses)

        pending = set(before + after)

        def all_done():
            for iid in list(pending):
                if self.state(iid) == "succeeded":
                    pending.discard(iid)
            return not pending

        harness.wait_until(all_done, 40, "every accepted operation to succeed")
        self.assertEqual((self.gateway.pid, self.worker.pid), pids)
        self.assertTrue(self.gateway.alive() and self.worker.alive())
        promoted = "127.0.0.1:%d" % self.replica.port
        for p in (self.gateway, self.worker):
            self.assertIn("redis primary is now %s (from Sentinel)" % promoted, p.log())


class SentinelConfiguration(unittest.TestCase):
    def test_sentinels_need_a_master_name_and_the_reverse(self):
        stack = harness.Stack(catalog=CATALOG)
        try:
            for env, want in (({"OSBQ_REDIS_SENTINELS": "127.0.0.1:1"}, "OSBQ_REDIS_MASTER_NAME"),
                              ({"OSBQ_REDIS_MASTER_NAME": "m"}, "OSBQ_REDIS_SENTINELS"),
                              ({"OSBQ_REDIS_SENTINELS": "nohost", "OSBQ_REDIS_MASTER_NAME": "m"},
                               "OSBQ_REDIS_SENTINELS")):
                status, out = harness.run_once([harness.WORKER], stack.env(**env))
                self.assertEqual(status, 1, out)
                self.assertIn(want, out)
        finally:
            stack.stop()


if __name__ == "__main__":
    unittest.main()
