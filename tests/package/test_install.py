"""`cmake --install` of the test build stays where it is told: with `--prefix P` every file
lands under P (the environment files and the systemd units included), and with DESTDIR every
file lands under DESTDIR. A staged install (a package build, an image's build stage) must never
write to the machine it runs on. The build tree is the one the test command built (configured
with the default prefix, /usr/local)."""

import os
import shutil
import subprocess
import tempfile
import unittest

BUILD_DIR = os.environ.get("OSBQ_BUILD_DIR", "")
# What every install holds, relative to its prefix.
EXPECTED = ("bin/osbq-gateway", "bin/osbq-worker", "bin/osbq-ctl", "etc/osbq/catalog.json",
            "etc/osbq/gateway.env", "etc/osbq/worker.env",
            "lib/systemd/system/osbq-gateway.service", "lib/systemd/system/osbq-worker.service",
            "share/man/man1/osbq-ctl.1.gz")


class StagedInstallTest(unittest.TestCase):

    def setUp(self):
        if not os.path.isfile(os.path.join(BUILD_DIR, "CMakeCache.txt")):
            self.fail("OSBQ_BUILD_DIR names no configured build tree: %r" % BUILD_DIR)
        self.dir = tempfile.mkdtemp(prefix="osbq-install-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def install(self, prefix, destdir=None):
        """Installs the build; returns the files it wrote (cmake's install manifest)."""
        env = dict(os.environ)
        env.pop("DESTDIR", None)
        if destdir is not None:
            env["DESTDIR"] = destdir
        subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", prefix], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, timeout=120)
        with open(os.path.join(BUILD_DIR, "install_manifest.txt")) as f:
            return [line.strip() for line in f if line.strip()]

    def check_inside(self, written, prefix, destdir=""):
        """Every file written (the manifest names them without DESTDIR) is under prefix, and
        is there under destdir; so is each of EXPECTED."""
        outside = [p for p in written if not p.startswith(prefix + "/")]
        self.assertEqual(outside, [], "files installed outside %s" % prefix)
        for path in written + [os.path.join(prefix, r) for r in EXPECTED]:
            self.assertTrue(os.path.isfile(destdir + path), "%s not installed" % (destdir + path))

    def test_prefix_holds_every_file(self):
        self.check_inside(self.install(os.path.join(self.dir, "prefix")),
                          os.path.join(self.dir, "prefix"))

    def test_destdir_holds_every_file(self):
        destdir = os.path.join(self.dir, "stage")
        self.check_inside(self.install("/opt/osbq-staged", destdir), "/opt/osbq-staged", destdir)
        self.assertFalse(os.path.exists("/opt/osbq-staged"), "installed outside DESTDIR")


if __name__ == "__main__":
    unittest.main()
