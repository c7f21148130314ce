"""Starts throw-away osbq stacks on loopback and stops exactly the processes it started, by PID:
a redis-server without persistence on a free port, gateways (each waited for until it answers
over HTTP) and workers, each with its output in a log file of the stack's directory.

The integration tests (tests/integration/harness.py) and the benchmark (bench/lib/bench_stack.py)
both start their stacks with it, so the two agree on how a daemon is started, found ready and
stopped. It depends on the Python standard library only."""

import http.client
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))

# Markers of a sanitizer report in a daemon's stderr: any of them fails the stop that finds it.
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")

# How long a daemon may take to answer after its start: the harness's patience, not a speed
# target (a sanitized gateway took over 10 s to answer /healthz with the whole suite beside busy
# loops); a daemon that fails to start exits and is reported at once.
START_TIMEOUT_S = 30.0
# What a daemon may take to stop on SIGTERM beyond its own bounds (stop_timeout_s): the exit of a
# sanitized process on a loaded machine.
STOP_MARGIN_S = 5.0
# The daemons' defaults of OSBQ_SHUTDOWN_GRACE_MS and OSBQ_REDIS_TIMEOUT_MS (README).
DEFAULT_GRACE_MS = 10000
DEFAULT_REDIS_TIMEOUT_MS = 2000
# The bound of a process started without osbq settings (redis-server), and of harness.kill.
STOP_TIMEOUT_S = DEFAULT_GRACE_MS / 1000.0 + STOP_MARGIN_S


def stop_timeout_s(env):
    """How long a daemon started with env may take to stop on SIGTERM: its grace
    (OSBQ_SHUTDOWN_GRACE_MS: requests and jobs finish), then two Redis timeouts (a gateway's
    calls still travelling, a worker's releases of what did not finish), then STOP_MARGIN_S. A
    bound that followed only the grace would race it."""
    def ms(name, default):
        try:
            return int(env.get(name, default))
        except ValueError:
            return default
    return (ms("OSBQ_SHUTDOWN_GRACE_MS", DEFAULT_GRACE_MS)
            + 2 * ms("OSBQ_REDIS_TIMEOUT_MS", DEFAULT_REDIS_TIMEOUT_MS)) / 1000.0 + STOP_MARGIN_S


def binaries(build_dir):
    """(osbq-gateway, osbq-worker) of a build tree."""
    return (os.path.join(build_dir, "bin", "osbq-gateway"),
            os.path.join(build_dir, "bin", "osbq-worker"))


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# How long the tests' own Redis commands may take. Milliseconds as a rule; but beside other heavy
# work (a load of 11 on two cores) a command that builds test data took over 2 s. Probes, which
# ask whether a server answers yet and are asked again, keep a short one.
REDIS_COMMAND_TIMEOUT_S = 30
REDIS_PROBE_TIMEOUT_S = 2


def wait_until(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def daemon_environment(settings):
    """The environment of a daemon: this process's, without any OSBQ_* variable it happens to
    carry, plus settings (a value None removes the variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSBQ_")}
    for k, v in settings.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def http_status(port, path, ssl_context=None, headers=None, timeout_s=1.0):
    """The status of one GET on 127.0.0.1:port (HTTPS with ssl_context); None when nothing
    answers."""
    if ssl_context is not None:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout_s,
                                           context=ssl_context)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        r.read()
        return r.status
    except (http.client.HTTPException, OSError):
        return None
    finally:
        conn.close()


class Process:
    """A child process with its output in <workdir>/<name>.log; stop() signals it by PID and
    checks the log for a sanitizer report."""

    def __init__(self, name, argv, env, workdir, preexec_fn=None):
        self.name = name
        self.stop_timeout_s = stop_timeout_s(env)
        self.log_path = os.path.join(workdir, name + ".log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=preexec_fn)

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

    def stop(self, signo=signal.SIGTERM, timeout_s=None, again_after_s=None):
        """Stops the process (signo, by default SIGTERM; the same signal once more after
        again_after_s if given; SIGKILL after timeout_s, by default its stop_timeout_s) and
        returns its exit status. Raises when it needed SIGKILL (with the end of its log) or its
        log holds a sanitizer report."""
        if timeout_s is None:
            timeout_s = self.stop_timeout_s
        if self.alive():
            os.kill(self.proc.pid, signo)
        try:
            if again_after_s is not None and again_after_s < timeout_s:
                try:
                    self.proc.wait(timeout=again_after_s)
                except subprocess.TimeoutExpired:
                    self.send_signal(signo)
            status = self.proc.wait(timeout=timeout_s - (again_after_s or 0))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
            tail = "\n".join(self.log().splitlines()[-40:])
            raise AssertionError("%s did not stop within %ss; the end of its log:\n%s"
                                 % (self.name, timeout_s, tail))
        finally:
            self._log.close()
        self.check_sanitizers()
        return status

    def check_sanitizers(self):
        text = self.log()
        for marker in SANITIZER_MARKERS:
            if marker in text:
                raise AssertionError("%s: sanitizer report in its log:\n%s" % (self.name, text))


NO_PERSISTENCE = ("--save", "", "--appendonly", "no")

# The server program every Redis of a stack runs (Sentinels too, with --sentinel): redis-server,
# or what OSBQ_TEST_REDIS_SERVER names, the same options understood (the test command's second
# pass runs valkey-server, docs/reliability.md#the-valkey-pass).
REDIS_SERVER = os.environ.get("OSBQ_TEST_REDIS_SERVER") or "redis-server"


class Redis(Process):
    """A throw-away REDIS_SERVER on loopback (a free port unless given), its data in workdir,
    without persistence unless persistence names other options of it."""

    # Free ports tried before giving up: another test's server may take the one chosen first.
    PORT_ATTEMPTS = 5

    def __init__(self, workdir, port=None, name="redis", persistence=NO_PERSISTENCE):
        self.workdir = workdir
        for attempt in range(1 if port else self.PORT_ATTEMPTS):
            self.port = port or free_port()
            super().__init__(name, [REDIS_SERVER, "--port", str(self.port), "--bind",
                                    "127.0.0.1"] + list(persistence) + ["--dir", workdir],
                             dict(os.environ), workdir)
            try:
                wait_until(lambda: self.ping() or not self.alive(), START_TIMEOUT_S,
                           "%s to answer PING" % name)
                if self.alive() and self.is_ours():
                    return
                if attempt + 1 == (1 if port else self.PORT_ATTEMPTS):
                    raise AssertionError("%s: port %d is another server's" % (name, self.port))
            except BaseException:
                # Nothing holds this object yet to stop it later.
                self.proc.kill()
                self.proc.wait()
                self._log.close()
                raise
            # The port was taken between choosing it and binding it: another one.
            self.proc.kill()
            self.proc.wait()
            self._log.close()

    def is_ours(self):
        """Whether the server answering on the port is this process (not another test's that
        took the port first, which made this one fail to bind)."""
        try:
            return ("process_id:%d\r\n" % self.proc.pid) in self.command(
                "INFO", "server", timeout_s=REDIS_PROBE_TIMEOUT_S)
        except (OSError, RuntimeError):
            return False

    @property
    def url(self):
        return "redis://127.0.0.1:%d/0" % self.port

    def command(self, *args, timeout_s=REDIS_COMMAND_TIMEOUT_S):
        """Sends one command with a minimal RESP client; returns the decoded reply."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout_s) as s:
            s.sendall(encode_command(args))
            return read_resp(s.makefile("rb"))

    def ping(self):
        try:
            return self.command("PING", timeout_s=REDIS_PROBE_TIMEOUT_S) == "PONG"
        except OSError:
            return False
        except RuntimeError:  # an error reply: LOADING while a restarted server reads its AOF
            return False

    def keys(self, pattern="*"):
        return self.command("KEYS", pattern)


def encode_command(args):
    """A command as RESP bytes; each argument bytes, or anything str() turns into text."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def read_resp(f, decode=True):
    """One RESP reply from a binary file object, its strings decoded as UTF-8 unless decode is
    false (then bytes); an error reply raises RuntimeError."""
    line = f.readline()
    if not line:
        raise OSError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode() if decode else rest
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode(errors="replace") if decode else data
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [read_resp(f, decode) for _ in range(n)]
    raise OSError("bad RESP reply %r" % line)


class Stack:
    """A redis-server plus gateways and workers in one directory (a new temporary one unless
    given). settings: the OSBQ_* variables every daemon gets besides OSBQ_REDIS_URL."""

    def __init__(self, gateway_bin, worker_bin, settings=None, workdir=None, start_redis=True):
        self.gateway_bin = gateway_bin
        self.worker_bin = worker_bin
        self.settings = dict(settings or {})
        self.owns_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="osbq-it-")
        self.processes = []
        self.redis = None
        if start_redis:
            self.redis = Redis(self.workdir)
            self.processes.append(self.redis)

    def env(self, **overrides):
        """A daemon's environment: the stack's Redis and settings, then overrides (None removes
        a variable)."""
        settings = {"OSBQ_REDIS_URL": self.redis.url}
        settings.update(self.settings)
        settings.update(overrides)
        return daemon_environment(settings)

    def start_gateway(self, ssl_context=None, name=None, ready_path="/healthz", binary=None,
                      **overrides):
        """Starts a gateway (the stack's gateway_bin unless binary names another, e.g. an older
        release's) on free ports and waits until ready_path answers 200 (over HTTPS with
        ssl_context, with OSBQ_TLS_CERT/KEY among the overrides); the process carries its port
        and ssl_context. A gateway that could not bind a free port because another test's
        process took it first is started again on other ports."""
        attempts = 1 if "OSBQ_LISTEN" in overrides or "OSBQ_BUS_BIND" in overrides else \
            Redis.PORT_ATTEMPTS
        for attempt in range(attempts):
            port = free_port()
            env = self.env(OSBQ_LISTEN="127.0.0.1:%d" % port,
                           OSBQ_BUS_BIND="tcp://127.0.0.1:%d" % free_port(), **overrides)
            p = Process(name or "gateway-%d" % port, [binary or self.gateway_bin], env,
                        self.workdir)
            p.port = port
            p.ssl_context = ssl_context
            self.processes.append(p)

            def ready():
                return not p.alive() or http_status(port, ready_path, ssl_context) == 200

            wait_until(ready, START_TIMEOUT_S, "the gateway to answer %s" % ready_path)
            if p.alive():
                return p
            p.proc.wait()
            p._log.close()
            log = p.log()
            self.processes.remove(p)
            if "Address already in use" not in log or attempt + 1 == attempts:
                raise AssertionError("gateway exited:\n" + log)

    def start_worker(self, name=None, binary=None, **overrides):
        """Starts a worker: the stack's worker_bin unless binary names another."""
        p = Process(name or "worker-%d" % len(self.processes), [binary or self.worker_bin],
                    self.env(**overrides), self.workdir)
        self.processes.append(p)
        return p

    def daemons(self):
        """The gateways and workers, oldest first."""
        return [p for p in self.processes if p is not self.redis]

    def stop(self, again_after_s=None, timeout_s=None):
        """Stops every process it started, newest first (daemons before their Redis), then
        removes the directory it made; each process gets timeout_s, by default its own bound
        (Process.stop_timeout_s). Raises with every failure: a daemon that exited non-zero on
        SIGTERM, needed SIGKILL or logged a sanitizer report."""
        errors = []
        for p in reversed(self.processes):
            try:
                if not p.alive() and p.proc.returncode is None:
                    p.proc.wait()
                was_running = p.alive()
                status = p.stop(timeout_s=timeout_s, again_after_s=again_after_s)
                if was_running and status != 0:
                    errors.append("%s exited with status %s on SIGTERM:\n%s"
                                  % (p.name, status, p.log()))
            except AssertionError as e:
                errors.append(str(e))
        if self.owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if errors:
            raise AssertionError("\n".join(errors))
