"""The exec backend's PostgreSQL example end to end: a throw-away PostgreSQL cluster on a free
loopback port (Debian's postgresql package, initdb'd in a temporary directory), a redis-server,
a gateway and a worker running examples/exec/catalog-postgres.json. Provision creates the
database, a bound application connects with its credentials and creates a table, after unbind
the login fails, after deprovision the database is gone. The backend authors' kit
(osbq-exec-kit --check) passes the example against the same server, without the stack."""

import glob
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import uuid

import harness

EXAMPLE_DIR = os.path.join(harness.SOURCE_DIR, "examples", "exec")
SERVICE = "3c0f6a9e-8b41-4d27-9a53-6e1d2b7c4f10"
PLAN = "9d2b5e71-4a6c-4f08-b3e9-1c7a8d0f2e64"
ADMIN_PASSWORD = "admin-" + uuid.uuid4().hex
OP_TIMEOUT_S = 60


def pg_bin(name):
    """A PostgreSQL server program from the newest installed major version."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/" + name),
                   key=lambda p: int(p.split("/")[4]))
    if not found:
        raise AssertionError("no /usr/lib/postgresql/*/bin/%s: install the postgresql package "
                             "(scripts/install-deps.sh)" % name)
    return found[-1]


def as_postgres_user():
    """initdb and postgres refuse to run as root: as root, run them as the postgres user."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


class Postgres:
    """A PostgreSQL cluster in a temporary directory, listening on 127.0.0.1 only."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="osbq-pg-")
        self.port = harness.free_port()
        self.data = os.path.join(self.dir, "data")
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        pwfile = os.path.join(self.dir, "pw")
        with open(pwfile, "w") as f:
            f.write(ADMIN_PASSWORD + "\n")
        if os.geteuid() == 0:
            shutil.chown(pwfile, "postgres")
        self._run([pg_bin("initdb"), "-D", self.data, "-U", "postgres", "-A", "scram-sha-256",
                   "--pwfile", pwfile, "-E", "UTF8", "--no-sync"])
        self._run([pg_bin("pg_ctl"), "-D", self.data, "-l", os.path.join(self.dir, "log"), "-w",
                   "-o", "-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s"
                   % (self.port, self.dir), "start"])

    def _run(self, argv):
        r = subprocess.run(as_postgres_user() + argv, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=60)
        if r.returncode != 0:
            raise AssertionError("%s failed:\n%s" % (argv[0], r.stdout.decode(errors="replace")))

    def stop(self):
        try:
            self._run([pg_bin("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop"])
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def admin_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "OSBQ_"))}
        env.update({"PGHOST": "127.0.0.1", "PGPORT": str(self.port), "PGUSER": "postgres",
                    "PGPASSWORD": ADMIN_PASSWORD, "PGDATABASE": "postgres"})
        return env


def psql(uri_or_none, sql, env):
    """Runs sql through psql (a connection URI, or the admin environment); (status, output)."""
    argv = ["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql]
    if uri_or_none is not None:
        argv.insert(1, uri_or_none)
    r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, timeout=30)
    return r.returncode, r.stdout.decode(errors="replace")


class ExecPostgresTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pg = Postgres()
        cls.stack = None
        try:
            # The example catalog as it is, but for the script's path (the example's is
            # relative to the repository root) and the server's address. The admin password
            # comes from the worker's environment: a catalog holds no secret.
            with open(os.path.join(EXAMPLE_DIR, "catalog-postgres.json")) as f:
                catalog = json.load(f)
            osbq = catalog["services"][0]["plans"][0]["osbq"]
            assert osbq["command"] == ["/bin/sh", "examples/exec/postgres.sh"], osbq["command"]
            osbq["command"] = ["/bin/sh", os.path.join(EXAMPLE_DIR, "postgres.sh")]
            osbq["env"].update({"PGHOST": "127.0.0.1", "PGPORT": str(cls.pg.port),
                                "PGUSER": "postgres"})
            cls.catalog_path = os.path.join(cls.pg.dir, "catalog.json")
            with open(cls.catalog_path, "w") as f:
                json.dump(catalog, f)
            cls.stack = harness.Stack(catalog=cls.catalog_path,
                                      extra_env={"PGPASSWORD": ADMIN_PASSWORD})
            cls.gateways, cls.workers = harness.start_cluster(cls.stack, 1, 1)
            harness.wait_workers_connected(cls.gateways, 1)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.stack is not None:
                cls.stack.stop()
        finally:
            cls.pg.stop()

    def setUp(self):
        self.client = self.stack.client(self.gateways[0])

    def tearDown(self):
        self.client.close()

    def wait_done(self, path, deleting):
        """Polls path's last_operation until it ends; returns its body."""
        deadline = time.monotonic() + OP_TIMEOUT_S
        while time.monotonic() < deadline:
            r = self.client.request("GET", path + "/last_operation")
            if deleting and r.status == 410:
                return {"state": "succeeded"}  # the spec's answer once the delete succeeded
            self.assertEqual(r.status, 200, r.body)
            body = r.json()
            if body["state"] != "in progress":
                return body
            time.sleep(0.1)
        self.fail("operation at %s did not end within %ss" % (path, OP_TIMEOUT_S))

    def run_op(self, method, path, body=None, query=None):
        q = dict(query or {}, accepts_incomplete="true")
        r = self.client.request(method, path + "?" + urllib.parse.urlencode(q), body)
        self.assertIn(r.status, (200, 201, 202), r.body)
        if r.status == 202:
            done = self.wait_done(path, method == "DELETE")
            self.assertEqual(done["state"], "succeeded", done)
        return r

    def database_exists(self, name):
        status, out = psql(None, "SELECT count(*) FROM pg_database WHERE datname = '%s'" % name,
                           self.pg.admin_env())
        self.assertEqual(status, 0, out)
        return out.strip() == "1"

    def test_errors_show_no_server_address(self):
        """What the script prints on stderr is the description platform users read: a server
        that cannot be reached (and a wrong password) is a sentence, without the host, port
        or socket path psql names."""
        closed = harness.free_port()
        job = {"kind": "provision", "operation_id": "op", "instance_id": "no-server",
               "binding_id": None, "service_id": SERVICE, "plan_id": PLAN, "parameters": None,
               "context": None, "bind_resource": None, "predecessor_binding_id": None,
               "attempt": 1}
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        for port, password, expected in (
                (closed, ADMIN_PASSWORD, "The database server cannot be reached"),
                (self.pg.port, "wrong-" + ADMIN_PASSWORD, "refused the broker's login")):
            env.update(PGHOST="127.0.0.1", PGPORT=str(port), PGUSER="postgres",
                       PGPASSWORD=password)
            r = subprocess.run(["/bin/sh", os.path.join(EXAMPLE_DIR, "postgres.sh")],
                               input=json.dumps(job).encode(), env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
            err = r.stderr.decode()
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(expected, err)
            for internal in ("127.0.0.1", str(port), "/tmp", "/var/run", "psql:"):
                self.assertNotIn(internal, err)

    def test_provision_bind_connect_unbind_deprovision(self):
        iid, bid = str(uuid.uuid4()), str(uuid.uuid4())
        ipath = "/v2/service_instances/" + iid
        bpath = ipath + "/service_bindings/" + bid
        ids = {"service_id": SERVICE, "plan_id": PLAN}
        self.run_op("PUT", ipath, dict(ids, context={"platform": "osbq-tests"}))
        self.run_op("PUT", bpath, dict(ids, bind_resource={"app_guid": "app-1"}))
        r = self.client.request("GET", bpath)
        self.assertEqual(r.status, 200, r.body)
        credentials = r.json()["credentials"]
        self.assertEqual(credentials["host"], "127.0.0.1")
        self.assertEqual(credentials["port"], self.pg.port)
        self.assertTrue(self.database_exists(credentials["database"]))
        self.assertGreaterEqual(len(credentials["password"]), 32)

        # The application: only its credentials, no admin environment.
        app_env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "OSBQ_"))}
        status, out = psql(credentials["uri"], "CREATE TABLE notes (body text); "
                           "INSERT INTO notes VALUES ('hello'); SELECT body FROM notes",
                           app_env)
        self.assertEqual(status, 0, out)
        self.assertIn("hello", out)
        # Nothing about the credentials reached the daemons' logs.
        for p in self.stack.processes:
            self.assertNotIn(credentials["password"], p.log(), p.name)

        self.run_op("DELETE", bpath, query=ids)
        status, out = psql(credentials["uri"], "SELECT 1", app_env)
        self.assertNotEqual(status, 0, out)
        self.assertIn("password authentication failed", out)

        self.run_op("DELETE", ipath, query=ids)
        self.assertFalse(self.database_exists(credentials["database"]))

    def test_kit_check(self):
        """osbq-exec-kit --check: the lifecycle, every step run twice (a bind's rerun sets a new
        password), an unbind of a binding never bound, a deprovision of a provision stopped
        part-way and of an instance never provisioned; no database of the kit's is left."""
        r = subprocess.run([os.path.join(harness.BUILD_DIR, "bin", "osbq-exec-kit"), "--check",
                            "--quiet", "--catalog", self.catalog_path,
                            "--context", '{"platform": "osbq-tests"}'],
                           env=self.pg.admin_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                           timeout=OP_TIMEOUT_S * 2)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("0 failed; 0 contract violations", r.stdout.splitlines()[-1])
        self.assertIn("verdict succeeded: Role created", r.stdout)
        self.assertIn('"password":', r.stdout)
        status, out = psql(None, "SELECT count(*) FROM pg_database WHERE datname LIKE 'i_kit%'",
                           self.pg.admin_env())
        self.assertEqual((status, out.strip()), (0, "0"))


if __name__ == "__main__":
    unittest.main()
