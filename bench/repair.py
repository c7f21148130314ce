#!/usr/bin/env python3
"""The repair case of bench/run.sh (issue 43): osbq-ctl at a large broker's size. A stack of its
own (a redis-server with the compose file's hash-max-listpack-value 1024, one gateway and one
worker of BUILD_DIR, on loopback, started and stopped by PID) makes two real instances with a
synchronous provision each, one of them bound too; bench/preload_clone.py then clones the bound
one COUNT / 5 times and the other the rest (so a fifth of the COUNT instances are bound), each
with its operation. Then each osbq-ctl command below runs against it, timed (wall clock) and its
peak resident memory read (GNU time's %M):

  count_build_s                      osbq-ctl recount --yes, then until the gateway's walk
                                     counted every clone (docs/decisions/0056)
  instance_s, instance_rss_kb        osbq-ctl instance ID of one clone (read by id)
  stats_s, stats_rss_kb              osbq-ctl --json stats (the count of live records; an
                                     older release walks every record)
  stats_walk_s, stats_walk_rss_kb    osbq-ctl --json stats --walk (walks every record)
  outdated_s, outdated_rss_kb        osbq-ctl --json instances --outdated --limit 0 (streamed)
  state_s, state_rss_kb              osbq-ctl --json instances --state failed --limit 0
  list_all_s, list_all_rss_kb        osbq-ctl --json instances --limit 0 (every instance)
  export_s, export_rss_kb, export_per_s, export_bytes
                                     osbq-ctl export --output FILE of the namespace
  import_s, import_rss_kb, import_per_s
                                     osbq-ctl import FILE --yes into another namespace
  purge_s_per_1000                   1,000 runs of osbq-ctl purge instance ID --yes, in all
  redis_bytes_per_instance           INFO memory used_memory over COUNT, before the import

The clocks are this machine's; each read (instance to list_all) runs three times, its median
printed, the others once. With "reads" after COUNT only the reads an
older release has too run (instance, stats, --state, every instance listed; not --outdated,
stats --walk nor the count):
the same figures for a reference build, side by side.
usage: repair.py BUILD_DIR [COUNT [reads]]   (default 100000)"""

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from own_stack import BENCH_DIR, INSTANT, SERVICE, Broker, osbq_stack, own_stack  # noqa: E402

NAMESPACE = "osbq"
PURGES = 1000
READ_RUNS = 3


def ctl(build_dir, stack, args, namespace=NAMESPACE):
    """Runs osbq-ctl under GNU time; (seconds, peak RSS in kB, stdout)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSBQ_")}
    env.update({"OSBQ_REDIS_URL": stack.redis.url, "OSBQ_NAMESPACE": namespace,
                "OSBQ_CATALOG": os.path.join(BENCH_DIR, "catalog.json")})
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        started = time.monotonic()
        r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name,
                            os.path.join(build_dir, "bin", "osbq-ctl")] + args,
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=3600)
        took = time.monotonic() - started
        rss = int(t.read().strip().splitlines()[-1] or 0)
    if r.returncode not in (0, 4):
        raise SystemExit("osbq-ctl %s: exit %d: %s" % (" ".join(args), r.returncode,
                                                      r.stderr.decode()[-500:]))
    return took, rss, r.stdout


def clone(stack, template, count, prefix, first=0):
    gen = subprocess.Popen([sys.executable, os.path.join(BENCH_DIR, "preload_clone.py"),
                            str(stack.redis.port), template, str(count), prefix, str(first)],
                           stdout=subprocess.PIPE)
    pipe = subprocess.run(["redis-cli", "-p", str(stack.redis.port), "--pipe"], stdin=gen.stdout,
                          stdout=subprocess.DEVNULL, timeout=3600)
    gen.stdout.close()
    if gen.wait() != 0 or pipe.returncode != 0:
        raise SystemExit("cloning %s failed" % template)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build_dir = os.path.abspath(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    reads_only = len(sys.argv) > 3 and sys.argv[3] == "reads"
    with own_stack(build_dir, "osbq-bench-repair-") as (stack, password):
        stack.redis.command("CONFIG", "SET", "hash-max-listpack-value", "1024")
        gateway = stack.start_gateway(name="gateway-0", ready_path="/readyz")
        stack.start_worker(name="worker-0")
        broker = Broker(gateway.port, password)
        osbq_stack.wait_until(lambda: broker.provision(INSTANT, "o", asynchronous=False)[0] == 201,
                              30, "the gateway to reach a worker")
        _, bound = broker.provision(INSTANT, "o", asynchronous=False)
        _, plain = broker.provision(INSTANT, "o", asynchronous=False)
        broker.conn.request("PUT", "/v2/service_instances/%s/service_bindings/b-template" % bound,
                            body=json.dumps({"service_id": SERVICE, "plan_id": INSTANT}),
                            headers=broker.headers)
        r = broker.conn.getresponse()
        r.read()
        if r.status != 201:
            raise SystemExit("the template's bind answered %d" % r.status)
        clone(stack, bound, count // 5, "rb-")
        clone(stack, plain, count - count // 5, "rp-")
        memory = stack.redis.command("INFO", "memory")
        used = int(next(line.split(":")[1] for line in memory.splitlines()
                        if line.startswith("used_memory:")))
        print("count=%d bound=%d redis_bytes_per_instance=%d" % (count, count // 5, used // count))
        if not reads_only:
            # The clones are not in the count of live records: the gateway counts them by its
            # walk (docs/decisions/0056), timed here.
            started = time.monotonic()
            ctl(build_dir, stack, ["recount", "--yes"])
            def built():
                gen, done = stack.redis.command("HMGET", NAMESPACE + ":record_counts", "gen",
                                                "built")
                return gen is not None and gen == done
            osbq_stack.wait_until(built, 3600, "the count of live records built")
            print("count_build_s=%.1f" % (time.monotonic() - started))
        figures = [
            ("instance", ["instance", "rp-%d" % (count // 2)]),
            ("stats", ["--json", "stats"]),
            ("stats_walk", ["--json", "stats", "--walk"]),
            ("outdated", ["--json", "instances", "--outdated", "--limit", "0"]),
            ("state", ["--json", "instances", "--state", "failed", "--limit", "0"]),
            ("list_all", ["--json", "instances", "--limit", "0"]),
        ]
        for name, args in figures:
            if reads_only and name in ("outdated", "stats_walk"):
                continue
            # Each read READ_RUNS times, the median printed (and the largest memory): one run
            # on a 2-core machine strays by a third.
            runs = [ctl(build_dir, stack, args) for _ in range(READ_RUNS)]
            took = sorted(r[0] for r in runs)[READ_RUNS // 2]
            print("%s_s=%.3f %s_rss_kb=%d" % (name, took, name, max(r[1] for r in runs)))
        if reads_only:
            return
        with tempfile.TemporaryDirectory(prefix="osbq-bench-repair-") as tmp:
            path = os.path.join(tmp, "export.jsonl")
            took, rss, _ = ctl(build_dir, stack, ["export", "--output", path])
            print("export_s=%.2f export_rss_kb=%d export_per_s=%d export_bytes=%d"
                  % (took, rss, (count + 2) / took, os.path.getsize(path)))
            took, rss, _ = ctl(build_dir, stack, ["import", path, "--yes"], namespace="moved")
            print("import_s=%.2f import_rss_kb=%d import_per_s=%d"
                  % (took, rss, (count + 2) / took))
        started = time.monotonic()
        for n in range(PURGES):
            ctl(build_dir, stack, ["purge", "instance", "rp-%d" % n, "--yes"])
        print("purge_s_per_1000=%.2f" % ((time.monotonic() - started) * 1000 / PURGES))


if __name__ == "__main__":
    main()
