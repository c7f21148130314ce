"""The previous release, built beside the current tree for the upgrade tests: its version is the
last one CHANGELOG.md lists, its commit the tag v<version> when the clone has it, else the line of
RELEASES (tags do not reach every clone). Its sources come from `git archive <commit>` and are
built once per commit under <build>/previous-release/<commit>/ (osbq-gateway and osbq-worker
only, without sanitizers); a second run finds them there.

Run as a program it prints the two binaries' paths, building them if needed:
    python3 tests/integration/previous_release.py [BUILD_DIR]"""

import fcntl
import os
import re
import shutil
import subprocess
import sys
import time

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_TIMEOUT_S = 600

_RELEASE_HEADING = re.compile(r"^## \[(\d+\.\d+\.\d+)\]", re.MULTILINE)


class ReleaseError(AssertionError):
    """The previous release cannot be found or built; the text says what to do."""


def last_version(source_dir=SOURCE_DIR):
    """The newest released version CHANGELOG.md lists (its first "## [x.y.z]" heading)."""
    with open(os.path.join(source_dir, "CHANGELOG.md")) as f:
        m = _RELEASE_HEADING.search(f.read())
    if m is None:
        raise ReleaseError("CHANGELOG.md lists no released version (\"## [x.y.z] - date\")")
    return m.group(1)


def recorded_commit(version, source_dir=SOURCE_DIR):
    """The commit RELEASES records for version."""
    with open(os.path.join(source_dir, "RELEASES")) as f:
        for line in f:
            fields = line.split()
            if len(fields) == 2 and fields[0] == version:
                return fields[1]
    raise ReleaseError("RELEASES has no line for %s, the last version in CHANGELOG.md: add "
                       "\"%s <commit>\" (docs/deploy.md#releases)" % (version, version))


def _git(source_dir, *args):
    return subprocess.run(["git", "-C", source_dir] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=60)


def resolve(source_dir=SOURCE_DIR):
    """(version, full commit id) of the previous release; raises ReleaseError when the clone's
    history lacks it, or when the tag and RELEASES disagree."""
    version = last_version(source_dir)
    recorded = recorded_commit(version, source_dir)
    if shutil.which("git") is None:
        raise ReleaseError("git is not installed: the upgrade test builds release %s from this "
                           "clone's history" % version)
    tag = _git(source_dir, "rev-parse", "-q", "--verify", "refs/tags/v%s^{commit}" % version)
    found = _git(source_dir, "rev-parse", "-q", "--verify", recorded + "^{commit}")
    if found.returncode != 0:
        raise ReleaseError(
            "this clone's history lacks commit %s of release %s (RELEASES): fetch it, e.g. "
            "`git fetch --unshallow` or `git fetch origin tag v%s`" % (recorded, version, version))
    commit = found.stdout.decode().strip()
    if tag.returncode == 0 and tag.stdout.decode().strip() != commit:
        raise ReleaseError("tag v%s names %s but RELEASES records %s for it: one of them is "
                           "wrong" % (version, tag.stdout.decode().strip(), commit))
    return version, commit


def _run(argv, log, cwd=None):
    log.write(("$ %s\n" % " ".join(argv)).encode())
    log.flush()
    r = subprocess.run(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, timeout=BUILD_TIMEOUT_S)
    if r.returncode != 0:
        raise ReleaseError("%s failed (status %d); see %s" % (argv[0], r.returncode, log.name))


def build(build_dir, source_dir=SOURCE_DIR):
    """(version, gateway binary, worker binary) of the previous release, built under
    build_dir/previous-release/<commit>/ unless a finished build is there already."""
    version, commit = resolve(source_dir)
    top = os.path.join(os.path.abspath(build_dir), "previous-release")
    root = os.path.join(top, commit)
    binaries = (os.path.join(root, "build", "bin", "osbq-gateway"),
                os.path.join(root, "build", "bin", "osbq-worker"))
    stamp = os.path.join(root, "built")
    os.makedirs(top, exist_ok=True)
    # One build at a time, should two tests ask at once.
    with open(os.path.join(top, commit + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(stamp):
            shutil.rmtree(root, ignore_errors=True)
            os.makedirs(os.path.join(root, "src"))
            started = time.monotonic()
            with open(os.path.join(root, "build.log"), "wb") as log:
                archive = subprocess.Popen(["git", "-C", source_dir, "archive", commit],
                                           stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
                untar = subprocess.run(["tar", "-x", "-C", os.path.join(root, "src")],
                                       stdin=archive.stdout, stdout=log, stderr=subprocess.STDOUT,
                                       timeout=BUILD_TIMEOUT_S)
                archive.stdout.close()
                if archive.wait() != 0 or untar.returncode != 0:
                    raise ReleaseError("git archive %s failed" % commit)
                # -O0 without sanitizers: the quickest build that runs like the release; the
                # old tree's warnings are not this tree's to fix.
                _run(["cmake", "-S", os.path.join(root, "src"), "-B", os.path.join(root, "build"),
                      "-DCMAKE_BUILD_TYPE=Debug", "-DOSBQ_SANITIZE=", "-DOSBQ_WERROR=OFF",
                      "-DOSBQ_BUILD_TESTS=OFF"], log)
                _run(["cmake", "--build", os.path.join(root, "build"), "-j2", "--target",
                      "osbq-gateway", "osbq-worker"], log)
                log.write(b"built in %.1f s\n" % (time.monotonic() - started))
            with open(stamp, "w") as f:
                f.write("%s %s\n" % (version, commit))
    for path in binaries:
        out = subprocess.run([path, "--version"], stdout=subprocess.PIPE, timeout=10)
        if out.stdout.decode().split()[-1:] != [version]:
            raise ReleaseError("%s --version says %r, not %s" % (path, out.stdout, version))
    return (version,) + binaries


if __name__ == "__main__":
    build_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(SOURCE_DIR, "build")
    try:
        print("\n".join(build(build_dir)))
    except ReleaseError as e:
        sys.exit(str(e))
