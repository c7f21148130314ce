"""Starts real redis-server, osbq-gateway and osbq-worker processes on free loopback ports for
integration tests, and stops exactly the processes it started."""

import base64
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

BUILD_DIR = os.environ.get("OSBQ_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
GATEWAY = os.path.join(BUILD_DIR, "bin", "osbq-gateway")
WORKER = os.path.join(BUILD_DIR, "bin", "osbq-worker")
EXAMPLE_CATALOG = os.path.join(SOURCE_DIR, "examples", "catalog.json")

# Markers of a sanitizer report in a daemon's stderr: any of them fails the test that ran it.
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


class Process:
    """A child process with its stderr in a file; stop() sends SIGTERM and checks the logs."""

    def __init__(self, name, argv, env, workdir):
        self.name = name
        self.log_path = os.path.join(workdir, name + ".log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def log(self):
        with open(self.log_path, "r", errors="replace") as f:
            return f.read()

    def send_signal(self, signo):
        if self.alive():
            os.kill(self.proc.pid, signo)

    def stop(self, signo=signal.SIGTERM):
        """Stops the process; returns its exit status. Raises on a sanitizer report."""
        if self.alive():
            os.kill(self.proc.pid, signo)
        try:
            status = self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
            raise AssertionError("%s did not stop within %ss" % (self.name, STOP_TIMEOUT_S))
        finally:
            self._log.close()
        self.check_sanitizers()
        return status

    def check_sanitizers(self):
        text = self.log()
        for marker in SANITIZER_MARKERS:
            if marker in text:
                raise AssertionError("%s: sanitizer report in its log:\n%s" % (self.name, text))


class Redis(Process):
    """A throw-away redis-server on a free loopback port, without persistence."""

    def __init__(self, workdir):
        self.port = free_port()
        self.workdir = workdir
        super().__init__("redis", ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                   "--save", "", "--appendonly", "no", "--dir", workdir],
                         dict(os.environ), workdir)
        wait_until(self.ping, START_TIMEOUT_S, "redis-server to answer PING")

    @property
    def url(self):
        return "redis://127.0.0.1:%d/0" % self.port

    def command(self, *args):
        """Sends one command with a minimal RESP client; returns the decoded reply."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
            payload = b"*%d\r\n" % len(args)
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                payload += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(payload)
            return _read_resp(s.makefile("rb"))

    def ping(self):
        try:
            return self.command("PING") == "PONG"
        except OSError:
            return False
        except RuntimeError:  # an error reply: LOADING while a restarted server reads its AOF
            return False

    def keys(self, pattern="*"):
        return self.command("KEYS", pattern)


def _read_resp(f):
    line = f.readline()
    if not line:
        raise OSError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode(errors="replace")
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_resp(f) for _ in range(n)]
    raise OSError("bad RESP reply %r" % line)


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        return self.headers.get(name.lower())

    def json(self):
        return json.loads(self.body)


class Client:
    """An HTTP/1.1 client for one gateway; keeps one keep-alive connection. With ssl_context
    it speaks HTTPS, verifying the gateway's certificate with that context."""

    def __init__(self, port, username=None, password=None, api_version="2.17",
                 ssl_context=None):
        self.port = port
        self.username = username
        self.password = password
        self.api_version = api_version
        self.ssl_context = ssl_context
        self.conn = None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method, path, body=None, headers=None, auth=True, version=True):
        h = {}
        if auth and self.username is not None:
            token = base64.b64encode(("%s:%s" % (self.username, self.password)).encode()).decode()
            h["Authorization"] = "Basic " + token
        if version and self.api_version is not None:
            h["X-Broker-API-Version"] = self.api_version
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        if self.conn is None and self.ssl_context is not None:
            self.conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10,
                                                    context=self.ssl_context)
        elif self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            self.conn.request(method, path, body=body, headers=h)
            r = self.conn.getresponse()
            data = r.read()
        except (http.client.HTTPException, OSError):
            self.close()
            raise
        response = Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        if r.will_close:
            self.close()
        return response


class Stack:
    """A redis-server plus gateways and workers in a temporary directory."""

    def __init__(self, catalog=EXAMPLE_CATALOG, username="broker", password="s3cret-pass",
                 extra_env=None):
        self.workdir = tempfile.mkdtemp(prefix="osbq-it-")
        self.catalog = catalog
        self.username = username
        self.password = password
        self.extra_env = dict(extra_env or {})
        self.processes = []
        self.redis = Redis(self.workdir)
        self.processes.append(self.redis)

    def env(self, **overrides):
        env = {k: v for k, v in os.environ.items() if not k.startswith("OSBQ_")}
        env.update({
            "OSBQ_REDIS_URL": self.redis.url,
            "OSBQ_CATALOG": self.catalog,
            "OSBQ_LOG_LEVEL": "info",
            "OSBQ_BROKER_USERNAME": self.username,
            "OSBQ_BROKER_PASSWORD": self.password,
            "OSBQ_HTTP_THREADS": "2",
        })
        env.update(self.extra_env)
        for k, v in overrides.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = str(v)
        return env

    def start_gateway(self, ssl_context=None, **overrides):
        """Starts a gateway and waits for its /healthz; ssl_context: it serves HTTPS (with
        OSBQ_TLS_CERT/KEY among the overrides), probed and later reached with that context."""
        port = free_port()
        env = self.env(OSBQ_LISTEN="127.0.0.1:%d" % port,
                       OSBQ_BUS_BIND="tcp://127.0.0.1:%d" % free_port(), **overrides)
        p = Process("gateway-%d" % port, [GATEWAY], env, self.workdir)
        p.port = port
        p.ssl_context = ssl_context
        self.processes.append(p)

        def healthy():
            if not p.alive():
                raise AssertionError("gateway exited:\n" + p.log())
            c = Client(port, ssl_context=ssl_context)
            try:
                return c.request("GET", "/healthz").status == 200
            except OSError:
                return False
            finally:
                c.close()

        wait_until(healthy, START_TIMEOUT_S, "the gateway to answer /healthz")
        return p

    def start_worker(self, **overrides):
        p = Process("worker-%d" % len(self.processes), [WORKER], self.env(**overrides),
                    self.workdir)
        self.processes.append(p)
        return p

    def client(self, gateway, **kwargs):
        kwargs.setdefault("username", self.username)
        kwargs.setdefault("ssl_context", getattr(gateway, "ssl_context", None))
        kwargs.setdefault("password", self.password)
        return Client(gateway.port, **kwargs)

    def stop(self):
        """Stops every process it started (daemons first), then removes the directory."""
        errors = []
        for p in reversed(self.processes):
            try:
                if not p.alive() and p.proc.returncode is None:
                    p.proc.wait()
                was_running = p.alive()
                status = p.stop()
                if was_running and status != 0:
                    errors.append("%s exited with status %s on SIGTERM:\n%s"
                                  % (p.name, status, p.log()))
            except AssertionError as e:
                errors.append(str(e))
        shutil.rmtree(self.workdir, ignore_errors=True)
        if errors:
            raise AssertionError("\n".join(errors))


class GatewayTestCase(unittest.TestCase):
    """A test case against cls.stack's cls.gateway: a keep-alive client per test, and the check
    every error answer must pass (a JSON object with a non-empty description)."""

    def setUp(self):
        self.client = self.stack.client(self.gateway)

    def tearDown(self):
        self.client.close()

    def assertJsonError(self, r, status, what=None):
        what = what or ""
        self.assertEqual(r.status, status, "%s %s" % (what, r.body[:300]))
        self.assertEqual(r.header("Content-Type"), "application/json", what)
        body = r.json()
        self.assertIsInstance(body, dict, what)
        self.assertIsInstance(body.get("description"), str, what)
        self.assertNotEqual(body["description"], "", what)
        return body


def run_once(argv, env, timeout_s=10):
    """Runs a binary to completion; returns (exit status, combined output)."""
    r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, timeout=timeout_s)
    return r.returncode, r.stdout.decode(errors="replace")


# ---- Helpers for the instance tests (test_instances.py) ----

import re as _re

# The gateway logs one line per worker that announces itself on its bus socket.
_WORKER_CONNECTED = _re.compile(r"worker (\S+) connected")


def connected_workers(gateway):
    """The ids of the workers a gateway's log says connected to it."""
    return set(_WORKER_CONNECTED.findall(gateway.log()))


def wait_workers_connected(gateways, count, timeout_s=START_TIMEOUT_S):
    """Waits until every gateway has seen at least count distinct workers connect."""
    wait_until(lambda: all(len(connected_workers(g)) >= count for g in gateways), timeout_s,
               "%d workers to connect to every gateway" % count)


def start_cluster(stack, gateways=2, workers=2, **worker_overrides):
    """Starts gateways, then workers; returns (gateway list, worker list)."""
    gws = [stack.start_gateway() for _ in range(gateways)]
    wks = [stack.start_worker(**worker_overrides) for _ in range(workers)]
    return gws, wks


def redis_hash(redis, key):
    """A hash as a dict (HGETALL)."""
    flat = redis.command("HGETALL", key) or []
    return dict(zip(flat[0::2], flat[1::2]))


# Keys the processes renew on their own every 2 s (the gateway registry and the processes'
# status for osbq-ctl): liveness, not data a request could have written.
_LIVENESS_KEY = _re.compile(r"^[^:]+:(gateways|status:.*)$")


def redis_snapshot(redis, pattern="*", ignore=()):
    """Every key matching pattern, but those in ignore and the liveness keys, with its type and
    content: two equal snapshots mean no request wrote anything in between."""
    snapshot = {}
    for key in redis.keys(pattern):
        if key in ignore or _LIVENESS_KEY.match(key):
            continue
        kind = redis.command("TYPE", key)
        if kind == "string":
            value = redis.command("GET", key)
        elif kind == "hash":
            value = sorted(redis_hash(redis, key).items())
        elif kind == "set":
            value = sorted(redis.command("SMEMBERS", key) or [])
        elif kind == "zset":
            value = redis.command("ZRANGE", key, 0, -1, "WITHSCORES")
        elif kind == "list":
            value = redis.command("LRANGE", key, 0, -1)
        else:
            value = None
        snapshot[key] = (kind, value)
    return snapshot


# ---- Helpers for the binding tests (test_bindings.py) ----

def redis_fields(redis, key):
    """Every stored piece of one key as (field, value) pairs: a string is ("", value), a hash
    its fields, a set, list or sorted set its members ("member", value). Empty when gone."""
    kind = redis.command("TYPE", key)
    if kind == "string":
        return [("", redis.command("GET", key))]
    if kind == "hash":
        return sorted(redis_hash(redis, key).items())
    if kind == "set":
        return [("member", m) for m in sorted(redis.command("SMEMBERS", key) or [])]
    if kind == "list":
        return [("member", m) for m in redis.command("LRANGE", key, 0, -1) or []]
    if kind == "zset":
        return [("member", m) for m in redis.command("ZRANGE", key, 0, -1) or []]
    return []


def redis_find(redis, needle, pattern="*"):
    """Where needle occurs in Redis: (key, field) for each key name, hash field name or value
    that contains it, over every key matching pattern."""
    found = []
    for key in redis.keys(pattern):
        if needle in key:
            found.append((key, None))
        for field, value in redis_fields(redis, key):
            if needle in (field or "") or needle in (value or ""):
                found.append((key, field))
    return found


# ---- Helpers for the fault tests (test_faults.py) ----

import resource as _resource

_WORKER_STARTED = _re.compile(r"started: id (\S+),")


def worker_id(worker, timeout_s=START_TIMEOUT_S):
    """The id a worker logs when it starts (waits for that line)."""
    found = []

    def logged():
        m = _WORKER_STARTED.search(worker.log())
        if m:
            found.append(m.group(1))
            return True
        if not worker.alive():
            raise AssertionError("%s exited before logging its id:\n%s"
                                 % (worker.name, worker.log()))
        return False

    wait_until(logged, timeout_s, "%s to log its id" % worker.name)
    return found[0]


def kill(process, signo=signal.SIGKILL, timeout_s=STOP_TIMEOUT_S):
    """Sends signo to one process the harness started (by its PID) and waits until it ended;
    returns its exit status (negative: the signal that ended it)."""
    process.send_signal(signo)
    return process.proc.wait(timeout=timeout_s)


def _no_core_dump():
    _resource.setrlimit(_resource.RLIMIT_CORE, (0, 0))


class NoCoreProcess(Process):
    """A Process that leaves no core file when it aborts (RLIMIT_CORE 0), for daemons a test
    expects to crash."""

    def __init__(self, name, argv, env, workdir):
        self.name = name
        self.log_path = os.path.join(workdir, name + ".log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=_no_core_dump)


def start_worker_no_core(stack, **overrides):
    """Stack.start_worker for a worker expected to crash: no core file. Stack.stop() does not
    count a worker that already died against the test (only a non-zero status on SIGTERM)."""
    p = NoCoreProcess("worker-%d" % len(stack.processes), [WORKER], stack.env(**overrides),
                      stack.workdir)
    stack.processes.append(p)
    return p


class PersistentRedis(Redis):
    """A redis-server with AOF on (appendfsync fsync), on a given port and directory, so a
    new one started on the same port and directory finds the data of the last."""

    def __init__(self, workdir, port=None, fsync="always", name="redis-aof-0"):
        self.port = port or free_port()
        self.workdir = workdir
        self.fsync = fsync
        Process.__init__(self, name, ["redis-server", "--port", str(self.port), "--bind",
                                      "127.0.0.1", "--save", "", "--appendonly", "yes",
                                      "--appendfsync", fsync, "--dir", workdir],
                         dict(os.environ), workdir)
        wait_until(self.ping, START_TIMEOUT_S, "redis-server (AOF) to answer PING")


def use_persistent_redis(stack, fsync="always"):
    """Replaces the redis-server of a stack that has no daemon yet with one with AOF on."""
    old = stack.redis
    old.stop()
    new = PersistentRedis(stack.workdir, fsync=fsync)
    stack.processes[stack.processes.index(old)] = new
    stack.redis = new
    return new


def restart_redis(stack, signo=signal.SIGKILL, down_s=1.0):
    """Ends the stack's PersistentRedis with signo (SIGKILL: a crash), keeps Redis away for
    down_s, then starts a new redis-server on the same port and directory; returns it."""
    old = stack.redis
    kill(old, signo)
    old.stop()  # closes its log, checks it
    time.sleep(down_s)
    generation = int(old.name.rsplit("-", 1)[1]) + 1
    new = PersistentRedis(old.workdir, old.port, old.fsync, "redis-aof-%d" % generation)
    stack.processes[stack.processes.index(old)] = new
    stack.redis = new
    return new


# ---- Prometheus text (test_gateway_metrics.py, test_worker_metrics.py) ----

_SAMPLE = _re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = _re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """{(name, frozenset(labels)): value}, checking the format basics: every sample follows its
    family's # TYPE (and # HELP), no sample is listed twice, every line ends."""
    if not text.endswith("\n"):
        raise AssertionError("exposition text does not end with a newline")
    samples = {}
    types = {}
    helps = set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            helps.add(line.split(" ", 3)[2])
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            if name not in helps:
                raise AssertionError("# TYPE without # HELP before it: %r" % line)
            if kind not in ("counter", "gauge", "histogram"):
                raise AssertionError("unexpected type: %r" % line)
            types[name] = kind
            continue
        if line.startswith("#") or not line:
            continue
        m = _SAMPLE.match(line)
        if m is None:
            raise AssertionError("not a sample line: %r" % line)
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        family = _re.sub(r"_(bucket|sum|count)$", "", name)
        if name in types:
            kind = types[name]
        elif family in types and types[family] == "histogram":
            kind = "histogram"
        else:
            raise AssertionError("sample before its # TYPE: %r" % line)
        if kind == "counter" and not name.endswith("_total"):
            raise AssertionError("counter not named *_total: %r" % line)
        if not name.startswith("osbq_"):
            raise AssertionError("metric name without the osbq_ prefix: %r" % line)
        key = (name, frozenset(_LABEL.findall(labels)))
        if key in samples:
            raise AssertionError("duplicate sample: %r" % line)
        samples[key] = float(value)
    return samples


def metric_value(samples, name, **labels):
    """The sample's value, 0 when absent (a counter not yet moved)."""
    return samples.get((name, frozenset(labels.items())), 0.0)
