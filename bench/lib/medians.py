#!/usr/bin/env python3
"""The medians of a case's NAME=VALUE lines (bench/cases/due.sh, halt.sh): FILE holds one run a
line, each line starting with its label; prints, for each LABEL given that has figures, its
median of every name matching PATTERN (a regular expression; default: every name).

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
        names = [n for (l, n) in figures if l == label and pattern.search(n)]
        if names:
            print("  %s medians: %s" % (label, " ".join(
                "%s=%g" % (n, statistics.median(figures[(label, n)])) for n in names)))


if __name__ == "__main__":
    main(sys.argv)
