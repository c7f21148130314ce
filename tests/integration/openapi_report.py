"""The OpenAPI conformance report of an integration run (osb_conformance.py): "reset" empties
the report directory before the run, "summary" prints the exchanges checked per endpoint over
every test file that wrote a report. Run by ctest as the setup and cleanup of the integration
tests; a test left out of the run is simply absent from the totals."""

import collections
import glob
import json
import os
import shutil
import sys


def main(argv):
    if len(argv) != 3 or argv[1] not in ("reset", "summary"):
        print("usage: openapi_report.py reset|summary DIRECTORY", file=sys.stderr)
        return 2
    directory = argv[2]
    if argv[1] == "reset":
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory, exist_ok=True)
        return 0
    checked = collections.Counter()
    unchecked = collections.Counter()
    excepted = collections.Counter()
    files = sorted(glob.glob(os.path.join(directory, "*.json")))
    for path in files:
        with open(path, encoding="utf-8") as f:
            counts = json.load(f)
        checked.update(counts.get("checked", {}))
        unchecked.update(counts.get("unchecked", {}))
        excepted.update(counts.get("exceptions", {}))
        print("%-40s %6d checked" % (os.path.basename(path)[:-5],
                                     sum(counts.get("checked", {}).values())))
    print("OpenAPI conformance: %d exchanges checked in %d test files, %d not on /v2"
          % (sum(checked.values()), len(files), sum(unchecked.values())))
    for endpoint, n in sorted(checked.items()):
        print("  %6d  %s" % (n, endpoint))
    for path, n in sorted(unchecked.items()):
        print("  %6d  %s (not checked)" % (n, path))
    print("Statuses allowed by the exceptions list (the spec's prose, not the document):")
    for entry, n in sorted(excepted.items()):
        print("  %6d  %s" % (n, entry))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
