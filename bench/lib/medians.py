#!/usr/bin/env python3
"""The medians of a case's NAME=VALUE lines (bench/cases/due.sh, halt.sh): FILE holds one run a
line, each line starting with its label; prints, for each LABEL given that has figures, its
median of every name matching PATTERN (a regular expression; default: every name). A LABEL
A/B prints instead, for each such name both have, the ratio of A's median to B's (a build's
figures against a reference's: bench/cases/takeover.sh).

usage: medians.py FILE PATTERN LABEL..."""

import re
import statistics
import sys


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    path, pattern, labels = argv[1], re.compile(argv[2]), argv[3:]
    figures = {}
    with open(path) as f:
        for line in f:
            label, _, rest = line.partition(" ")
            for name, value in re.findall(r"(\w+)=([0-9.]+)", rest):
                figures.setdefault((label, name), []).append(float(value))
    for label in labels:
        if "/" in label:
            ratios(figures, pattern, *label.split("/", 1))
            continue
        names = [n for (l, n) in figures if l == label and pattern.search(n)]
        if names:
            print("  %s medians: %s" % (label, " ".join(
                "%s=%g" % (n, statistics.median(figures[(label, n)])) for n in names)))


def ratios(figures, pattern, a, b):
    out = []
    for (label, name), values in figures.items():
        if label == a and pattern.search(name) and (b, name) in figures:
            below = statistics.median(figures[(b, name)])
            if below:
                out.append("%s=%.3g" % (name, statistics.median(values) / below))
    if out:
        print("  %s / %s: %s" % (a, b, " ".join(out)))


if __name__ == "__main__":
    main(sys.argv)
