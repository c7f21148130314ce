"""Starts real redis-server, osbq-gateway and osbq-worker processes on free loopback ports for
integration tests, and stops exactly the processes it started. The processes are started by the
stack launcher the benchmark shares (tests/lib/osbq_stack.py); this module adds what tests need:
the test catalog and credentials, an HTTP client, and helpers to read Redis and logs."""

import base64
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import osb_conformance  # noqa: E402 (beside this file)
import osbq_stack  # noqa: E402 (found through the path set above)
from osbq_stack import (  # noqa: E402,F401 (the names tests use as harness.*)
    REDIS_COMMAND_TIMEOUT_S, REDIS_SERVER, SANITIZER_MARKERS, SOURCE_DIR, START_TIMEOUT_S,
    STOP_TIMEOUT_S, Process, Redis, free_port, wait_until)

BUILD_DIR = os.environ.get("OSBQ_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
GATEWAY, WORKER = osbq_stack.binaries(BUILD_DIR)
EXAMPLE_CATALOG = os.path.join(SOURCE_DIR, "examples", "catalog.json")

_read_resp = osbq_stack.read_resp


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
    it speaks HTTPS, verifying the gateway's certificate with that context. Every exchange is
    checked against the spec's OpenAPI document (osb_conformance.py): one it does not allow
    raises osb_conformance.ConformanceError in the test that made the request."""

    def __init__(self, port, username=None, password=None, api_version="2.17",
                 ssl_context=None, timeout_s=10):
        self.port = port
        self.timeout_s = timeout_s  # how long an answer may take
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
            self.conn = http.client.HTTPSConnection("127.0.0.1", self.port,
                                                    timeout=self.timeout_s,
                                                    context=self.ssl_context)
        elif self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                   timeout=self.timeout_s)
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
        osb_conformance.check(method, path, h, body, response.status, response.headers, data)
        return response


class CheckedClient(Client):
    """A client that records every non-2xx answer whose body is not a JSON object with a
    non-empty description (Service Broker Errors); the test fails on any in tearDown."""

    def __init__(self, port, username, password, api_version, violations):
        super().__init__(port, username, password, api_version)
        self.violations = violations

    def request(self, method, path, body=None, headers=None, auth=True, version=True):
        r = super().request(method, path, body=body, headers=headers, auth=auth, version=version)
        if not 200 <= r.status < 300:
            what = "%s %s (API %s) -> %d %r" % (method, path, self.api_version, r.status, r.body)
            try:
                parsed = json.loads(r.body)
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                self.violations.append(what + ": body is not a JSON object")
            elif not isinstance(parsed.get("description"), str) or not parsed["description"]:
                self.violations.append(what + ": no non-empty description")
            if r.header("Content-Type") != "application/json":
                self.violations.append(what + ": Content-Type is not application/json")
        return r


class Stack(osbq_stack.Stack):
    """A redis-server plus gateways and workers in a temporary directory, with the tests'
    settings: a catalog, broker credentials, access logs (info), two HTTP threads."""

    def __init__(self, catalog=EXAMPLE_CATALOG, username="broker", password="s3cret-pass",
                 extra_env=None):
        super().__init__(GATEWAY, WORKER)
        self.catalog = catalog
        self.username = username
        self.password = password
        self.extra_env = dict(extra_env or {})

    def env(self, **overrides):
        # Read at each start: a test may point the stack at another catalog before it starts a
        # daemon.
        settings = {
            "OSBQ_CATALOG": self.catalog,
            "OSBQ_LOG_LEVEL": "info",
            "OSBQ_BROKER_USERNAME": self.username,
            "OSBQ_BROKER_PASSWORD": self.password,
            "OSBQ_HTTP_THREADS": "2",
        }
        settings.update(self.extra_env)
        settings.update(overrides)
        return super().env(**settings)

    def client(self, gateway, **kwargs):
        kwargs.setdefault("username", self.username)
        kwargs.setdefault("ssl_context", getattr(gateway, "ssl_context", None))
        kwargs.setdefault("password", self.password)
        return Client(gateway.port, **kwargs)


# The states a last_operation answer may carry.
OPERATION_STATES = ("in progress", "succeeded", "failed")

# The exact texts Kubernetes' OSB client needs next to the codes (issue 3).
CODE_DESCRIPTIONS = {
    "AsyncRequired":
        "This service plan requires client support for asynchronous service operations.",
    "ConcurrencyError":
        "The Service Broker does not support concurrent requests that mutate the same resource.",
}


def request_once(stack, gateway, method, path, body=None):
    """One request to gateway on a connection of its own, closed after the answer."""
    c = stack.client(gateway)
    try:
        return c.request(method, path, body)
    finally:
        c.close()


def new_id():
    """A fresh id for an instance, a binding or an operation."""
    return str(uuid.uuid4())


def instance_path(iid, suffix="", **query):
    """The path of instance iid plus suffix, with the query's items that are not None."""
    p = "/v2/service_instances/" + urllib.parse.quote(iid, safe="") + suffix
    q = [(k, v) for k, v in query.items() if v is not None]
    return p + ("?" + urllib.parse.urlencode(q) if q else "")


def ipath(iid, suffix="", incomplete=False):
    """instance_path, with accepts_incomplete=true when incomplete."""
    return instance_path(iid, suffix, accepts_incomplete="true" if incomplete else None)


def with_fields(body, extra):
    """body (a request body, changed in place and returned) with extra's fields set, or
    removed where extra says None."""
    for k, v in extra.items():
        if v is None:
            body.pop(k, None)
        else:
            body[k] = v
    return body


def provision_body(service_id, plan_id, extra=None, instance_name="it"):
    """A provision body as current platforms send it: context plus the deprecated guids; then
    with_fields(body, extra)."""
    return with_fields({"service_id": service_id, "plan_id": plan_id,
                        "context": {"platform": "osbq-tests", "instance_name": instance_name},
                        "organization_guid": "org-guid-1", "space_guid": "space-guid-1"}, extra or {})


class StackTestCase(unittest.TestCase):
    """One stack per test class, made by make_stack() (on CATALOG with EXTRA_ENV): start_stack()
    starts on it what the class's tests share. The stack stops when start_stack() fails and
    after the last test."""

    CATALOG = EXAMPLE_CATALOG
    EXTRA_ENV = {}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.stack = cls.make_stack()
        try:
            cls.start_stack()
        except BaseException:
            cls.stack.stop()
            raise

    @classmethod
    def make_stack(cls):
        """The class's stack, not started yet (its redis-server alone runs)."""
        return Stack(catalog=cls.CATALOG, extra_env=cls.EXTRA_ENV)

    @classmethod
    def start_stack(cls):
        """Starts on cls.stack what the tests share (nothing here: redis-server alone)."""

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()
        super().tearDownClass()


class DirStackTestCase(StackTestCase):
    """StackTestCase with a temporary directory of the class's own, cls.dir (named after
    DIR_PREFIX), for the files the stack's settings name: make_stack() writes there its catalog,
    a policy, keys (write_json). The directory is made before make_stack() and removed after the
    stack stopped, or when setting up the class fails."""

    DIR_PREFIX = "osbq-it-"

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix=cls.DIR_PREFIX)
        try:
            super().setUpClass()
        except BaseException:
            shutil.rmtree(cls.dir, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def write_json(cls, name, doc):
        """doc written as JSON to cls.dir/name; its path."""
        path = os.path.join(cls.dir, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path


class GatewayStackTestCase(DirStackTestCase):
    """DirStackTestCase whose stack runs one gateway, cls.gateway, and one worker connected to
    it; each request goes on a connection of its own."""

    @classmethod
    def start_stack(cls):
        cls.gateway, _ = start_connected(cls.stack, 1)

    def request(self, method, path, body=None):
        return request_once(self.stack, self.gateway, method, path, body)

    def put_binding(self, iid, service_id, plan_id):
        """A new binding of iid, bound synchronously (201); its id."""
        bid = new_id()
        r = self.request("PUT", instance_path(iid, "/service_bindings/" + bid),
                         {"service_id": service_id, "plan_id": plan_id})
        self.assertEqual(r.status, 201, r.body)
        return bid


class ClusterTestCase(StackTestCase):
    """One stack per test class: redis-server, GATEWAYS gateways and WORKERS workers (with
    WORKER_ENV) on CATALOG with EXTRA_ENV, and warm_up() once every worker reached every
    gateway. Each test gets a keep-alive CheckedClient per gateway, API version and thread, and
    fails in tearDown on any error answer without a JSON description."""

    # The bounds of the Retry-After header the gateways send, which tests check answers against.
    RETRY_AFTER_MIN_S = 1
    RETRY_AFTER_MAX_S = 7
    EXTRA_ENV = {
        "OSBQ_RETRY_AFTER_MIN_S": str(RETRY_AFTER_MIN_S),
        "OSBQ_RETRY_AFTER_MAX_S": str(RETRY_AFTER_MAX_S),
    }
    GATEWAYS = 2
    WORKERS = 2
    WORKER_ENV = {}
    NAMESPACE = "osbq"
    CONNECT_TIMEOUT_S = START_TIMEOUT_S
    # The longest wait for the stack's operations to end.
    QUIET_TIMEOUT_S = 10.0

    @classmethod
    def start_stack(cls):
        cls.gateways, cls.workers = start_cluster(cls.stack, cls.GATEWAYS, cls.WORKERS,
                                                  **cls.WORKER_ENV)
        wait_workers_connected(cls.gateways, cls.WORKERS, cls.CONNECT_TIMEOUT_S)
        cls.warm_up()

    @classmethod
    def warm_up(cls):
        """warm_up_gateway() through each gateway, on a client of its own."""
        for gateway in cls.gateways:
            c = cls.stack.client(gateway)
            try:
                cls.warm_up_gateway(c)
            finally:
                c.close()

    @classmethod
    def warm_up_gateway(cls, client):
        """Requests through one gateway before the first test (none here)."""

    @classmethod
    def tearDownClass(cls):
        # Let operations still running end, so workers stop without cancelling anything.
        deadline = time.monotonic() + cls.QUIET_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                if not cls.stack.redis.command("ZCARD", cls.NAMESPACE + ":queue"):
                    break
            except (OSError, RuntimeError):
                break
            time.sleep(0.05)
        super().tearDownClass()

    def setUp(self):
        self.violations = []
        self.clients = {}
        self.client_lock = threading.Lock()

    def tearDown(self):
        for c in self.clients.values():
            c.close()
        self.assertEqual(self.violations, [], "error bodies without a JSON description")

    def client(self, gw=0, version="2.17"):
        """This thread's client for gateway gw speaking API version."""
        key = (gw, version, threading.get_ident())
        with self.client_lock:
            if key not in self.clients:
                self.clients[key] = CheckedClient(
                    self.gateways[gw].port, self.stack.username, self.stack.password, version,
                    self.violations)
            return self.clients[key]

    ipath = staticmethod(instance_path)

    def patch(self, iid, body, accepts_incomplete=None, gw=0, version="2.17"):
        return self.client(gw, version).request(
            "PATCH", self.ipath(iid, accepts_incomplete=self.incomplete(accepts_incomplete)), body)

    def wait_ended(self, last_operation, what, timeout_s):
        """Polls last_operation() until the operation it reads ended; returns the last response
        (200 with succeeded/failed, or 410 for a finished removal). what names the operation in
        the failure a timeout_s wait ends with."""
        deadline = time.monotonic() + timeout_s
        while True:
            r = last_operation()
            if r.status == 410 or (r.status == 200 and r.json()["state"] != "in progress"):
                return r
            self.assertEqual(r.status, 200, r.body)
            if time.monotonic() > deadline:
                self.fail("%s still in progress after %ss" % (what, timeout_s))
            time.sleep(0.02)

    @staticmethod
    def incomplete(value):
        """The accepts_incomplete query value for True, False or a raw string."""
        if value is None:
            return None
        return "true" if value is True else "false" if value is False else value

    def wait_quiet(self):
        """Waits until no operation is queued or running."""
        wait_until(lambda: not self.stack.redis.command("ZCARD", self.NAMESPACE + ":queue"),
                   self.QUIET_TIMEOUT_S, "every operation to end")

    def checkLastOperation(self, r):
        """A last_operation answer: a 200 body as the spec's Body table has it."""
        if r.status == 200:
            body = r.json()
            self.assertIsInstance(body, dict)
            self.assertIn(body.get("state"), OPERATION_STATES, r.body)
            if "description" in body:
                self.assertIsInstance(body["description"], str)
                self.assertNotEqual(body["description"], "")
            if body["state"] != "in progress":
                self.assertIsNone(r.header("Retry-After"), "Retry-After on a finished operation")
        return r

    def assertError(self, r, status, error=None):
        """A non-2xx answer: status, JSON object, non-empty description, the error code."""
        self.assertEqual(r.status, status, r.body)
        self.assertEqual(r.header("Content-Type"), "application/json")
        body = r.json()
        self.assertIsInstance(body, dict, r.body)
        self.assertIsInstance(body.get("description"), str, r.body)
        self.assertNotEqual(body["description"], "")
        if error is not None:
            self.assertEqual(body.get("error"), error, r.body)
            if error in CODE_DESCRIPTIONS:
                self.assertEqual(body["description"], CODE_DESCRIPTIONS[error])
        return body

    def race(self, requests):
        """Sends requests (callables) at the same moment from threads; returns responses."""
        barrier = threading.Barrier(len(requests))

        def run(request):
            barrier.wait(5)
            return request()

        with ThreadPoolExecutor(len(requests)) as pool:
            return [f.result() for f in [pool.submit(run, q) for q in requests]]


class GatewayTestCase(StackTestCase):
    """A test case against cls.stack's cls.gateway (by default the only process start_stack()
    starts): a keep-alive client per test, and the check every error answer must pass (a JSON
    object with a non-empty description)."""

    @classmethod
    def start_stack(cls):
        cls.gateway = cls.stack.start_gateway()

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


# ---- Helpers for the instance tests (harness_instances.py, test_instances_*.py) ----

import re as _re

# The gateway logs one line per worker that announces itself on its bus socket.
_WORKER_CONNECTED = _re.compile(r"worker (\S+) connected")


def connected_workers(gateway):
    """The ids of the workers a gateway's log says connected to it."""
    return set(_WORKER_CONNECTED.findall(gateway.log()))


def ready(port):
    """Whether the process on port answers /readyz with 200, on a connection of its own (one
    refused or cut: not ready)."""
    probe = Client(port)
    try:
        return probe.request("GET", "/readyz").status == 200
    except OSError:
        return False
    finally:
        probe.close()


def wait_workers_connected(gateways, count, timeout_s=START_TIMEOUT_S):
    """Waits until every gateway has seen at least count distinct workers connect."""
    wait_until(lambda: all(len(connected_workers(g)) >= count for g in gateways), timeout_s,
               "%d workers to connect to every gateway" % count)


def start_cluster(stack, gateways=2, workers=2, **worker_overrides):
    """Starts gateways, then workers; returns (gateway list, worker list)."""
    gws = [stack.start_gateway() for _ in range(gateways)]
    wks = [stack.start_worker(**worker_overrides) for _ in range(workers)]
    return gws, wks


def start_connected(stack, workers=1, **worker_overrides):
    """Starts a gateway, then workers, and waits until every worker reached the gateway;
    returns (gateway, worker list)."""
    gws, wks = start_cluster(stack, 1, workers, **worker_overrides)
    wait_workers_connected(gws, workers)
    return gws[0], wks


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


# ---- Helpers for the binding tests (harness_bindings.py, test_bindings_*.py) ----

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
        super().__init__(name, argv, env, workdir, preexec_fn=_no_core_dump)


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
        self.fsync = fsync
        super().__init__(workdir, port, name, ("--save", "", "--appendonly", "yes",
                                               "--appendfsync", fsync))


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


# The standard process metrics every osbq process serves beside its osbq_* ones.
PROCESS_METRICS = ("process_start_time_seconds", "process_resident_memory_bytes",
                   "process_cpu_seconds_total", "process_open_fds", "process_max_fds")


class MetricsScraper:
    """GETs a process's HTTP endpoints (/metrics above all) over a keep-alive connection of its
    own, with Basic credentials auth (user, password) or none."""

    def __init__(self, port, auth=None):
        self.client = Client(port)
        self.auth = auth

    def request(self, method, path, auth=None):
        headers = {}
        auth = auth or self.auth
        if auth:
            token = base64.b64encode(("%s:%s" % auth).encode()).decode()
            headers["Authorization"] = "Basic " + token
        return self.client.request(method, path, headers=headers, auth=False, version=False)

    def get(self):
        r = self.request("GET", "/metrics")
        if r.status != 200:
            raise AssertionError("GET /metrics: %d %s" % (r.status, r.body[:200]))
        return r

    def samples(self):
        return parse_metrics(self.get().body.decode())

    def close(self):
        self.client.close()


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
        # The process_* names are the standard ones of Prometheus's client libraries.
        if not name.startswith("osbq_") and name not in PROCESS_METRICS:
            raise AssertionError("metric name without the osbq_ prefix: %r" % line)
        key = (name, frozenset(_LABEL.findall(labels)))
        if key in samples:
            raise AssertionError("duplicate sample: %r" % line)
        samples[key] = float(value)
    return samples


def metric_value(samples, name, **labels):
    """The sample's value, 0 when absent (a counter not yet moved)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def metric_sum(samples, name, **labels):
    """The sum of the samples of name whose labels include these (what `sum` over the other
    labels gives), 0 when there are none."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)
