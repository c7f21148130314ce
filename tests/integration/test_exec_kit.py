"""osbq-exec-kit, the backend authors' kit: it runs the examples' programs through the exec
contract as a worker does, without Redis or a gateway (the polling example under --check here,
the PostgreSQL one in test_exec_postgres.py), and refuses what a worker refuses: programs that
break the contract in one way each (tests/data/kit/contract.sh), each with a clear message and
a non-zero exit; --check finds a step that does not converge and a deprovision that fails on an
instance never provisioned; a bad command line, catalog or plan exits 2; an interrupt stops the
running program's whole process group."""

import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

import harness

KIT = os.path.join(harness.BUILD_DIR, "bin", "osbq-exec-kit")
KIT_CATALOG = os.path.join("tests", "data", "kit", "catalog.json")
BACKGROUND_CATALOG = os.path.join("examples", "exec", "catalog-background-job.json")
RUN_TIMEOUT_S = 120


class ExecKitTest(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.TemporaryDirectory(prefix="osbq-kit-")

    def tearDown(self):
        self.state.cleanup()

    def kit(self, *args):
        """Runs the kit from the repository (the catalogs' commands are relative to it), the
        state directory in STATE_DIR; returns (status, stdout, stderr)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OSBQ_")}
        env["STATE_DIR"] = self.state.name
        r = subprocess.run([KIT] + list(args), cwd=harness.SOURCE_DIR, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT_S)
        for marker in harness.SANITIZER_MARKERS:
            self.assertNotIn(marker, r.stderr)
        return r.returncode, r.stdout, r.stderr

    def test_background_job_example_passes_check(self):
        """The polling example: provision and update answer in progress, are polled to their
        end, every step converges when run twice, and the error paths succeed."""
        status, out, err = self.kit("--catalog", BACKGROUND_CATALOG, "--check",
                                    "--env", "WORK_SECONDS=1",
                                    "--env", "STATE_DIR=" + self.state.name)
        self.assertEqual(status, 0, out + err)
        self.assertIn('"kind":"poll"', out)
        self.assertIn("verdict in progress: Started the provision", out)
        self.assertIn("verdict succeeded: The provision is done", out)
        self.assertIn("verdict succeeded: The update is done", out)
        self.assertIn('binding {"credentials":{"token":"example"}}', out)
        self.assertIn("[check: a provision that never finishes]", out)
        self.assertIn("[check: an instance never provisioned]", out)
        self.assertTrue(out.rstrip().endswith(
            " 0 failed; 0 contract violations"), out)

    def test_refusals(self):
        """Each break of the contract is refused with the worker's own description, the run
        exits 1, and the instance is deprovisioned afterwards as a platform would."""
        cases = {
            "invalid-result": "The program's result (its last stdout line starting with '{') "
                              "is not a valid JSON object.",
            "big-resume": "The program's resume state is 5010 bytes, over the limit of 4096.",
            "slow": "The program did not finish within 300 ms.",
            "string-credentials": "The service's program returned a credentials that is not "
                                  "an object.",
        }
        for plan, description in cases.items():
            with self.subTest(plan=plan):
                status, out, err = self.kit("--catalog", KIT_CATALOG, "--plan", plan)
                self.assertEqual(status, 1, out + err)
                self.assertIn("verdict REFUSED by the worker: " + description, out)
                self.assertIn("[clean-up] deprovision", out)
                self.assertIn("osbq-exec-kit: ", out.splitlines()[-1])
        self.assertIn("ran past the plan's timeout_ms (300)", self.kit(
            "--catalog", KIT_CATALOG, "--plan", "slow", "--quiet", "provision")[1])

    def test_check_finds_violations(self):
        """A provision that fails when run again, and a deprovision that fails on an instance
        that does not exist: --check names each and exits 1; without --check both pass."""
        status, out, err = self.kit("--catalog", KIT_CATALOG, "--plan", "not-idempotent",
                                    "--quiet")
        self.assertEqual(status, 0, out + err)
        status, out, err = self.kit("--catalog", KIT_CATALOG, "--plan", "not-idempotent",
                                    "--quiet", "--check")
        self.assertEqual(status, 1, out + err)
        self.assertIn("VIOLATION: run again, the step that succeeded the first time ended "
                      "failed", out)
        status, out, err = self.kit("--catalog", KIT_CATALOG, "--plan", "orphan", "--quiet",
                                    "--check")
        self.assertEqual(status, 1, out + err)
        self.assertIn("VIOLATION: a deprovision of an instance that was never provisioned "
                      "must succeed", out)

    def test_job_on_stdin(self):
        """The job a worker sends: parameters, context (from a file) and bind_resource where a
        gateway puts them, the ids given, the update's target plan, the attempt; a bind's
        binding with the plan's expiry, as a fetch answers it."""
        context = os.path.join(self.state.name, "context.json")
        with open(context, "w") as f:
            json.dump({"platform": "kubernetes", "namespace": "ns"}, f)
        status, out, err = self.kit(
            "--catalog", KIT_CATALOG, "--plan", "kit-tests/good", "--instance", "i-1",
            "--binding", "b-1", "--params", '{"size": 1}', "--update-params", '{"size": 2}',
            "--bind-params", '{"role": "ro"}', "--context", "@" + context,
            "--bind-resource", '{"app_guid": "app-1"}', "--update-plan", "orphan",
            "provision", "update", "bind", "fetch")
        self.assertEqual(status, 0, out + err)
        jobs = [json.loads(line.split(None, 1)[1]) for line in out.splitlines()
                if line.startswith("  stdin ")]
        self.assertEqual([j["kind"] for j in jobs], ["provision", "update", "bind"])
        provision, update, bind = jobs
        self.assertEqual(list(provision), [
            "kind", "operation_id", "instance_id", "binding_id", "service_id", "plan_id",
            "parameters", "context", "bind_resource", "predecessor_binding_id", "attempt"])
        self.assertEqual(provision["parameters"], {"size": 1})
        self.assertEqual(provision["context"], {"platform": "kubernetes", "namespace": "ns"})
        self.assertEqual((provision["instance_id"], provision["binding_id"]), ("i-1", None))
        self.assertEqual(provision["attempt"], 1)
        self.assertEqual(update["parameters"], {"size": 2})
        self.assertEqual(update["plan_id"], "0a0b0c0d-0000-4000-8000-000000000007")
        self.assertEqual(bind["parameters"], {"role": "ro"})
        self.assertEqual(bind["bind_resource"], {"app_guid": "app-1"})
        self.assertEqual(bind["binding_id"], "b-1")
        # The plan's binding_ttl_s: the expiry the runner adds.
        self.assertRegex(out, r'  binding \{"credentials":\{"user":"u","password":"p"\},'
                              r'"metadata":\{"expires_at":"[0-9T:.-]+Z","renew_before":')
        self.assertIn('"plan_id":"0a0b0c0d-0000-4000-8000-000000000007"}', out)

    def test_command_line(self):
        status, out, _ = self.kit("--help")
        self.assertEqual(status, 0)
        for option in ("--catalog", "--plan", "--params", "--context", "--env", "--check"):
            self.assertIn(option, out)
        for args, message in (
                (["--frobnicate"], "unknown option --frobnicate"),
                (["--catalog", KIT_CATALOG, "poll"], "unknown operation poll"),
                (["--catalog", KIT_CATALOG, "--plan", "nope"], "no such plan"),
                (["--catalog", os.path.join("examples", "catalog.json")],
                 "no plan uses the exec backend"),
                (["--catalog", KIT_CATALOG, "--params", "[1]"], "--params: not a JSON object"),
                (["--catalog", KIT_CATALOG, "--env", "A-B=1"], "--env wants NAME=VALUE"),
                (["--catalog", "/nonexistent/catalog.json"], "cannot read"),
                ([], "name the catalog")):
            with self.subTest(args=args):
                status, out, err = self.kit(*args)
                self.assertEqual(status, 2, out + err)
                self.assertIn(message, err)

    def test_interrupt_stops_the_program(self):
        """SIGINT stops the running step: the program's group gets SIGTERM as a worker's
        cancellation does, the kit exits 130 and nothing of the program is left."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OSBQ_")}
        env["STATE_DIR"] = self.state.name
        kit = subprocess.Popen([KIT, "--catalog", KIT_CATALOG, "--plan", "sleepy", "provision"],
                               cwd=harness.SOURCE_DIR, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        try:
            pid_file = os.path.join(self.state.name, "slow.pid")
            deadline = time.monotonic() + 30
            while not os.path.exists(pid_file) and time.monotonic() < deadline:
                time.sleep(0.05)
            with open(pid_file) as f:
                program = int(f.read())
            kit.send_signal(signal.SIGINT)
            out, err = kit.communicate(timeout=30)
        finally:
            if kit.poll() is None:
                kit.kill()
                kit.wait()
        self.assertEqual(kit.returncode, 130, out + err)
        self.assertIn("stopped by the kit", out)
        self.assertIn("verdict cancelled: interrupted", out)
        self.assertFalse(os.path.exists("/proc/%d" % program), "the program is still running")


if __name__ == "__main__":
    unittest.main()
