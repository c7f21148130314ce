#!/usr/bin/env python3
"""Side by side: the medians of several bench/capacity.py --json runs of a build against
those of a reference (alternate the runs: this machine's noise moves in minutes).

For each phase, and for a lifecycle (one of each phase, the unbinds and deprovisions weighed by
the share of --count they ran), the median Redis, gateway and worker CPU per operation of each
side and their ratio; then the median used_memory per provisioned instance and per bound
binding with its operation.

usage: capacity_compare.py 'NEW_GLOB' 'REFERENCE_GLOB'"""

import glob
import json
import statistics
import sys

FIGURES = ("redis_cpu_us_per_op", "gateway_cpu_us_per_op", "worker_cpu_us_per_op")
MEMORY = ("used_memory_per_provisioned_instance_with_its_operation",
          "used_memory_per_bound_binding_with_its_operation")


def runs(pattern):
    paths = sorted(glob.glob(pattern))
    if not paths:
        sys.exit("no file matches %s" % pattern)
    out = []
    for p in paths:
        with open(p) as f:
            out.append(json.load(f))
    return out


def per_phase(reports):
    """{phase: {figure: median}} with the lifecycle as one more phase."""
    table = {}
    for r in reports:
        count = r["count"]
        life = {f: 0.0 for f in FIGURES}
        for ph in r["phases"]:
            row = table.setdefault(ph["phase"], {f: [] for f in FIGURES})
            for f in FIGURES:
                value = ph.get(f)
                if value is None:
                    continue
                row[f].append(value)
                life[f] += value * ph["operations"] / count
        row = table.setdefault("lifecycle", {f: [] for f in FIGURES})
        for f in FIGURES:
            row[f].append(life[f])
    return {p: {f: statistics.median(v) if v else None for f, v in row.items()}
            for p, row in table.items()}


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    new, ref = runs(argv[1]), runs(argv[2])
    a, b = per_phase(new), per_phase(ref)
    print("%d runs against %d; medians of CPU µs per operation, new / reference (ratio)"
          % (len(new), len(ref)))
    print("%-16s %24s %24s %24s" % ("phase", "Redis", "gateway", "worker"))
    for phase in list(a):
        cells = []
        for f in FIGURES:
            x, y = a[phase].get(f), b.get(phase, {}).get(f)
            if x is None or y is None:
                cells.append("%24s" % "-")
            else:
                cells.append("%24s" % ("%.1f / %.1f (%.2fx)" % (x, y, x / y if y else 0)))
        print("%-16s %s" % (phase, " ".join(cells)))
    for m in MEMORY:
        x = statistics.median(r["memory"][m] for r in new)
        y = statistics.median(r["memory"][m] for r in ref)
        print("%-58s %d / %d B (%.2fx)" % (m, x, y, x / y))


if __name__ == "__main__":
    main(sys.argv)
