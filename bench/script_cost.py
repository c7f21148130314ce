#!/usr/bin/env python3
"""What osbq's own Redis work costs per synchronous lifecycle, apart from the machine's cost of
waking Redis (issue 29, docs/capacity.md "Where Redis's time goes"). The lifecycles' Redis CPU
in the scale_out case mixes two things: the commands and scripts osbq sends, and the kernel's
work per wake-up of Redis (reads, writes, the receivers' wake-ups), which on a shared or
paravirtualised machine is most of it and moves by ±20% from run to run. This measures the
first alone, to about 2%:

1. capture: a stack of its own (a redis-server with the compose file's
   hash-max-listpack-value 1024, one gateway and one worker of BUILD_DIR, bench/catalog.json,
   started and stopped by PID on loopback), MONITOR, and --seconds of wrk with one connection
   running bench/lua/lifecycle.lua (synchronous provision, bind, unbind, deprovision, sim 0 ms);
   every command the broker sent (not those a script ran, nor MONITOR's own) is kept in order,
   and the live records' count's generation the gateway built at its start (the hash
   "<prefix>record_counts": 'gen', 'built'; lib/record_counts.lua).
2. replay: a fresh redis-server of its own (the same setting; pinned to the last core with
   taskset where there are two or more, this script on the others), the tree's scripts
   loaded, then --rounds rounds of FLUSHALL, the count's generation written again (without it
   the scripts would skip the count the stack kept), and the capture sent --batch commands per write
   (each batch answered before the next is sent), grouped by step: every lifecycle's first
   command, then every lifecycle's second, and so on (a lifecycle's commands keep their
   order; lifecycles share only the queue and the sampled averages), then the commands of no
   lifecycle. Redis's own CPU (INFO cpu, user + sys) is read around each step, so each
   script is measured per operation kind: the median and the spread of the rounds.

Printed per build: the commands sent per operation (by script name for EVALSHA), Redis CPU per
command, per operation and per lifecycle (four operations), and of it the time inside the
scripts' own commands (INFO commandstats, last round; by command in the JSON); then Redis CPU
per call of each step (begin_instance provision, finish (provision), begin_binding bind, ...).
With --reference, the same for another build side by side and the ratio. With --scripts TREE,
the capture of BUILD_DIR is replayed a second time with TREE's store/lua scripts in place of the
build's (matched by file name): a way to measure a script change before building it; the two
replays' final data are compared (every key's type, fields and values, and whether it expires)
and the output says whether they are the same.

usage: script_cost.py BUILD_DIR [--reference BUILD_DIR] [--scripts TREE] [--seconds S]
                      [--rounds N] [--batch B] [--json FILE]"""

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(BENCH_DIR, "lib"))
sys.path.insert(0, os.path.join(BENCH_DIR, "..", "tests", "lib"))

import osbq_stack  # noqa: E402 (found through the paths set above)
import redis_monitor  # noqa: E402
from monitor_call import unquote  # noqa: E402
from own_stack import own_stack  # noqa: E402

LISTPACK = ("hash-max-listpack-value", "1024")  # as compose/docker-compose.yml runs Redis
# Commands of the capture that are not the broker's work on the data: MONITOR's and the
# connections' own, and a subscription (replayed, it would block the replaying connection).
NOT_REPLAYED = {b"MONITOR", b"AUTH", b"HELLO", b"SELECT", b"CLIENT", b"SCRIPT", b"INFO",
                b"PING", b"SUBSCRIBE", b"PSUBSCRIBE", b"UNSUBSCRIBE", b"COMMAND", b"CONFIG"}
WORD = re.compile(rb'"((?:[^"\\]|\\.)*)"')
COUNTS_LINE = re.compile(r"^BENCH_COUNTS (.*)$", re.M)


def source_dir(build_dir):
    """The source tree a CMake build directory was configured from."""
    with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                return line.split("=", 1)[1].strip()
    sys.exit("script_cost: %s is not a CMake build directory" % build_dir)


def script_texts(tree):
    """{name: text} of tree's store/lua scripts as the store embeds them (the libraries of
    their "-- requires:" lines in front, as cmake/EmbedScripts.cmake puts them)."""
    lua_dir = os.path.join(tree, "store", "lua")
    texts = {}
    for entry in sorted(os.listdir(lua_dir)):
        if entry.endswith(".lua"):
            with open(os.path.join(lua_dir, entry), "rb") as f:
                text = f.read()
            for lib in re.findall(r"\n-- requires: ([a-z_]+)", text.decode()):
                with open(os.path.join(lua_dir, "lib", lib + ".lua"), "rb") as f:
                    text = f.read() + text
            texts[entry[:-len(".lua")]] = text
    return texts


def capture(build_dir, seconds):
    """The broker's commands (lists of bytes) during seconds of one-connection lifecycles, and
    the operations wrk counted."""
    wrk = shutil.which("wrk")
    if wrk is None:
        sys.exit("script_cost: wrk is not installed (bench/run.sh installs it)")
    with own_stack(build_dir, "osbq-bench-script-cost-") as (stack, password):
        stack.redis.command("CONFIG", "SET", *LISTPACK)
        gateway = stack.start_gateway(ready_path="/readyz")
        stack.start_worker()
        time.sleep(2)  # the worker connects and says READY; start-up calls stay out
        monitor = redis_monitor.Monitor(stack.redis.port)
        token = base64.b64encode(("bench:%s" % password).encode()).decode()
        out = subprocess.run(
            [wrk, "-t1", "-c1", "-d%ds" % seconds, "--timeout", "10s",
             "-H", "Authorization: Basic " + token, "-H", "X-Broker-API-Version: 2.17",
             "-H", "Content-Type: application/json",
             "-s", os.path.join(BENCH_DIR, "lua", "lifecycle.lua"),
             "http://127.0.0.1:%d" % gateway.port, "--", "tag=sc"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False).stdout
        time.sleep(0.5)  # the last replies' finishes
        monitor.stop()
        lines = monitor.lines()
        counts = counts_seed(stack.redis)
    m = COUNTS_LINE.search(out)
    if m is None:
        sys.exit("script_cost: wrk printed no BENCH_COUNTS line:\n" + out[-2000:])
    operations = sum(int(c.split(":")[1]) for c in m.group(1).split(", ") if " 20" in c)
    commands = []
    for line in lines:
        parsed = redis_monitor.LINE.match(line)
        if parsed is None or parsed.group(1) == "lua":
            continue
        words = [unquote(w) for w in WORD.findall(line.split("] ", 1)[1].encode("latin-1"))]
        if words and words[0].upper() not in NOT_REPLAYED:
            commands.append(words)
    return commands, operations, counts


def counts_seed(redis):
    """The commands that give a fresh Redis the live records' count the gateway built at its
    start (lib/record_counts.lua's 'gen' and 'built'; without them the scripts skip the count),
    so that each replay round pays for it as the stack did."""
    seed = []
    for key in redis.command("KEYS", "*record_counts"):
        gen, built = redis.command("HMGET", key, "gen", "built")
        if gen:
            seed.append([b"HSET", key.encode(), b"gen", gen.encode(), b"built",
                         (built or "").encode()])
    return seed


def resp(words):
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)


class Server:
    """A throw-away redis-server and one connection to it, pinned apart from this script where
    the machine has two cores or more."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="osbq-bench-script-cost-")
        self.port = osbq_stack.free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--" + LISTPACK[0], LISTPACK[1]],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cpus = sorted(os.sched_getaffinity(0))
        self.pinned = len(cpus) >= 2 and shutil.which("taskset") is not None
        if self.pinned:
            subprocess.run(["taskset", "-a", "-p", "-c", str(cpus[-1]), str(self.proc.pid)],
                           stdout=subprocess.DEVNULL, check=True)
            os.sched_setaffinity(0, cpus[:-1])
        for _ in range(100):
            try:
                self.sock = socket.create_connection(("127.0.0.1", self.port))
                break
            except OSError:
                time.sleep(0.05)
        else:
            self.stop()
            sys.exit("script_cost: redis-server did not start")
        self.file = self.sock.makefile("rb")

    def reply(self):
        line = self.file.readline()
        kind = line[:1]
        if kind in (b"+", b":"):
            return line[1:].strip()
        if kind == b"-":
            return RuntimeError(line[1:].strip().decode(errors="replace"))
        if kind == b"$":
            n = int(line[1:])
            return self.file.read(n + 2)[:-2] if n >= 0 else None
        if kind == b"*":
            n = int(line[1:])
            return [self.reply() for _ in range(n)] if n >= 0 else None
        raise RuntimeError("script_cost: unexpected reply %r" % line[:80])

    def command(self, *words):
        self.sock.sendall(resp([w if isinstance(w, bytes) else str(w).encode() for w in words]))
        return self.reply()

    def info(self, section):
        text = self.command("INFO", section).decode()
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)

    def cpu_s(self):
        info = self.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    def fingerprint(self):
        """A digest of every key's type, contents (created_ms aside) and whether it expires."""
        digest = hashlib.sha1()
        for key in sorted(self.command("KEYS", "*")):
            kind = self.command("TYPE", key)
            if kind == b"hash":
                flat = self.command("HGETALL", key)
                value = sorted(zip(flat[::2], flat[1::2]))
            elif kind == b"set":
                value = sorted(self.command("SMEMBERS", key))
            elif kind == b"zset":
                value = self.command("ZRANGE", key, 0, -1, "WITHSCORES")
            elif kind == b"string":
                value = self.command("GET", key)
            else:
                value = kind
            expires = int(self.command("TTL", key)) > 0
            digest.update(repr((key, kind, value, expires)).encode())
        return digest.hexdigest()[:16]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


INSTANCE_WORD = re.compile(rb":(?:instance|bindings):([^:]+)$|:binding:([^:]+):")
OP_WORD = re.compile(rb":op:([0-9a-f]+)$")


def lifecycle_steps(words_list, names):
    """The capture in an order that groups each step of the lifecycles: every instance's first
    command, then every instance's second, and so on (an instance's commands keep their order,
    and lifecycles share nothing but the queue and the averages), then the commands of no
    lifecycle (the recovery loop's, the registry's). Returns the commands' indices in that
    order and, per index, a label: the script (and for a begin, the operation's kind; for a
    finish, the kind of the begin before it) or the command."""
    instance_of_op, step_count, last_kind = {}, {}, {}
    keyed, other = [], []
    for i, words in enumerate(words_list):
        instance = None
        for w in words[1:]:
            m = INSTANCE_WORD.search(w)
            if m:
                instance = m.group(1) or m.group(2)
                break
        ops = [m.group(1) for m in (OP_WORD.search(w) for w in words[1:]) if m]
        if instance is None and ops:
            instance = instance_of_op.get(ops[0])
        if instance is None:
            other.append(i)
            continue
        for op in ops:
            instance_of_op[op] = instance
        label = words[0].upper().decode()
        if label == "EVALSHA":
            name = names.get(words[1].decode(), "?")
            if name.startswith("begin_"):
                last_kind[instance] = words[3 + int(words[2])].decode()
                label = "%s %s" % (name, last_kind[instance])
            else:
                label = "%s (%s)" % (name, last_kind.get(instance, "?"))
        step = step_count.get(instance, 0)
        step_count[instance] = step + 1
        keyed.append((step, i, label))
    keyed.sort()
    order = [i for _, i, _ in keyed] + other
    labels = {i: label for _, i, label in keyed}
    labels.update({i: "other" for i in other})
    return order, labels


class Variant:
    """A capture replayed with a set of scripts: its commands, ready to send."""

    def __init__(self, label, capture, texts):
        self.label, self.operations = label, capture.operations
        self.texts = texts
        captured_names = redis_monitor.script_names(capture.tree)
        self.messages, self.per_name = [], {}
        order, labels = lifecycle_steps(capture.words, captured_names)
        # Stretches of consecutive commands with one label, each measured on its own.
        self.stretches = []
        for i in order:
            if not self.stretches or self.stretches[-1][0] != labels[i]:
                self.stretches.append([labels[i], len(self.messages), len(self.messages)])
            self.stretches[-1][2] += 1
            words = capture.words[i]
            name = None
            if words[0].upper() == b"EVALSHA":
                name = captured_names.get(words[1].decode(), "?")
                if name in texts:
                    words = [words[0], hashlib.sha1(texts[name]).hexdigest().encode()] + words[2:]
            command = "EVALSHA " + name if name else words[0].upper().decode()
            self.per_name[command] = self.per_name.get(command, 0) + 1
            self.messages.append(resp(words))
        self.seed = [resp(words) for words in capture.counts_seed]
        self.per_round, self.errors, self.usec = [], set(), {}
        self.per_label = {}  # label: [(Redis CPU s, commands) of each round]
        self.fingerprint = None

    def run(self, server, batch, last):
        server.command("FLUSHALL")
        for message in self.seed:
            server.sock.sendall(message)
            server.reply()
        if last:
            server.command("CONFIG", "RESETSTAT")
        total, by_label = 0.0, {}
        for label, start, end in self.stretches:
            before = server.cpu_s()
            for at in range(start, end, batch):
                chunk = self.messages[at:min(at + batch, end)]
                server.sock.sendall(b"".join(chunk))
                for _ in chunk:
                    answer = server.reply()
                    if isinstance(answer, Exception):
                        self.errors.add(str(answer)[:120])
            spent = server.cpu_s() - before
            total += spent
            cpu, count = by_label.get(label, (0.0, 0))
            by_label[label] = (cpu + spent, count + end - start)
        for label, figures in by_label.items():
            self.per_label.setdefault(label, []).append(figures)
        self.per_round.append(total / len(self.messages) * 1e6)
        if last:
            for key, value in server.info("commandstats").items():
                fields = dict(kv.split("=") for kv in value.split(","))
                self.usec[key[len("cmdstat_"):]] = int(fields["usec"])
            self.fingerprint = server.fingerprint()

    def result(self, pinned):
        ops, count = self.operations, len(self.messages)
        median = statistics.median(self.per_round)
        commands_us = sum(us for name, us in self.usec.items()
                          if name not in ("evalsha", "config|resetstat", "flushall", "info"))
        return {
            "commands": count,
            "operations": ops,
            "commands_per_op": round(count / ops, 2),
            "by_command_per_op": {k: round(v / ops, 2) for k, v in sorted(self.per_name.items())},
            "redis_cpu_us_per_command": round(median, 2),
            "redis_cpu_us_per_command_min_max": [round(min(self.per_round), 2),
                                                 round(max(self.per_round), 2)],
            "redis_cpu_us_per_op": round(median * count / ops, 1),
            "redis_cpu_us_per_lifecycle": round(4 * median * count / ops, 1),
            # commandstats (last round): time inside EVALSHA, and inside every other command
            # (those the scripts ran included); the difference is Lua and its calls' plumbing.
            "in_scripts_us_per_op": round(self.usec.get("evalsha", 0) / ops, 1),
            "in_commands_us_per_op": round(commands_us / ops, 1),
            "in_commands_us_per_op_by_name": {
                k: round(v / ops, 2) for k, v in sorted(self.usec.items())
                if k not in ("evalsha", "config|resetstat", "flushall", "info")},
            # Per step of the lifecycles: Redis CPU per call, the median of the rounds.
            "by_step_us_per_call": {
                label: round(statistics.median(cpu / count * 1e6 for cpu, count in rounds), 1)
                for label, rounds in self.per_label.items()},
            "by_step_calls": {label: rounds[0][1] for label, rounds in self.per_label.items()},
            "errors": sorted(self.errors),
            "pinned": pinned,
            "fingerprint": self.fingerprint,
        }


def replay(variants, rounds, batch):
    """Replays every variant rounds times on one fresh redis-server, the variants' rounds in
    turn, so that the machine's noise falls on all of them alike; returns {label: figures}."""
    server = Server()
    try:
        for variant in variants:
            for name, text in variant.texts.items():
                loaded = server.command("SCRIPT", "LOAD", text)
                if isinstance(loaded, Exception):
                    sys.exit("script_cost: %s (%s) does not load: %s" % (name, variant.label,
                                                                         loaded))
        for r in range(rounds):
            for variant in variants:
                variant.run(server, batch, r == rounds - 1)
        return {v.label: v.result(server.pinned) for v in variants}
    finally:
        server.stop()


class Capture:
    def __init__(self, build_dir, seconds):
        self.tree = source_dir(build_dir)
        self.words, self.operations, self.counts_seed = capture(build_dir, seconds)
        if self.operations == 0:
            sys.exit("script_cost: no operation completed in the capture of %s" % build_dir)


def show(label, result):
    print("%-10s %5d ops  %5.2f commands/op  %6.2f us/command (%.2f-%.2f)  %6.1f us/op  "
          "%6.1f us/lifecycle  in scripts %5.1f us/op, in their commands %5.1f us/op%s" % (
              label, result["operations"], result["commands_per_op"],
              result["redis_cpu_us_per_command"], *result["redis_cpu_us_per_command_min_max"],
              result["redis_cpu_us_per_op"], result["redis_cpu_us_per_lifecycle"],
              result["in_scripts_us_per_op"], result["in_commands_us_per_op"],
              "  ERRORS: %s" % "; ".join(result["errors"]) if result["errors"] else ""))
    print("%-10s %s" % ("", ", ".join("%s %.2f" % kv
                                      for kv in result["by_command_per_op"].items())))
    steps = result["by_step_us_per_call"]
    print("%-10s per call: %s" % ("", ", ".join(
        "%s %.1f us" % (label, steps[label]) for label in sorted(steps)
        if result["by_step_calls"][label] * 20 >= result["operations"])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--reference")
    ap.add_argument("--scripts", help="a source tree whose store/lua scripts to replay instead")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--json")
    a = ap.parse_args()
    this = Capture(a.build_dir, a.seconds)
    variants = [Variant("current", this, script_texts(this.tree))]
    if a.scripts:
        variants.append(Variant("scripts", this, script_texts(a.scripts)))
    if a.reference:
        ref = Capture(a.reference, a.seconds)
        variants.append(Variant("reference", ref, script_texts(ref.tree)))
    results = replay(variants, a.rounds, a.batch)
    current = results["current"]
    for label, result in results.items():
        show(label, result)
    if "scripts" in results:
        print("%-10s scripts / current per lifecycle: %.3fx; final data %s" % (
            "", results["scripts"]["redis_cpu_us_per_lifecycle"] /
            current["redis_cpu_us_per_lifecycle"],
            "the same" if results["scripts"]["fingerprint"] == current["fingerprint"]
            else "DIFFERENT"))
    if "reference" in results:
        print("%-10s reference / current per lifecycle: %.2fx" % (
            "", results["reference"]["redis_cpu_us_per_lifecycle"] /
            current["redis_cpu_us_per_lifecycle"]))
    if not current["pinned"]:
        print("script_cost: one core: Redis and this script share it (figures less steady)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
