#!/usr/bin/env python3
"""Sizes of osbq's C code, for the layout's decision records: lines per top-level folder, the
largest files and the largest functions. Functions are found by the project's brace style
(clang-format, BreakBeforeBraces: Linux): a body opens with "{" alone in column 0 and closes
with "}" in column 0. Usage: scripts/code-sizes.py [--top N] [--over LINES] [REV] (REV: a git
revision to measure instead of the working tree; --over LINES: list the functions longer than
that)."""

import argparse
import collections
import os
import re
import subprocess
import sys

SIGNATURE_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def sources(rev):
    """(path, text) of every tracked C source outside tests/, at rev or in the work tree."""
    if rev:
        names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev], check=True,
                               capture_output=True, text=True).stdout.split()
    else:
        names = subprocess.run(["git", "ls-files"], check=True, capture_output=True,
                               text=True).stdout.split()
    for name in names:
        if not name.endswith((".c", ".h")) or name.startswith(("tests/", "bench/")):
            continue
        if rev:
            text = subprocess.run(["git", "show", "%s:%s" % (rev, name)], check=True,
                                  capture_output=True, text=True).stdout
        elif os.path.exists(name):
            with open(name, encoding="utf-8") as f:
                text = f.read()
        else:
            continue
        yield name, text


def functions(text):
    """(name, lines) of each function body in text."""
    lines = text.split("\n")
    start = None
    for i, line in enumerate(lines):
        if line == "{" and i > 0:
            # The name is on the signature's first line, which may be a few lines up.
            j = i - 1
            while j > 0 and lines[j].startswith((" ", "\t")):
                j -= 1
            head = " ".join(lines[j:i])
            m = SIGNATURE_NAME.search(head)
            start = (m.group(1) if m else "?", i)
        elif line.startswith("}") and start is not None:
            yield start[0], i - start[1] + 1
            start = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--over", type=int, default=0,
                    help="also list every function longer than this many lines, and count them")
    ap.add_argument("rev", nargs="?")
    args = ap.parse_args()
    per_folder = collections.Counter()
    files = []
    funcs = []
    for name, text in sources(args.rev):
        n = text.count("\n")
        folder = name.split("/")[0] if "/" in name else "."
        per_folder[folder] += n
        files.append((n, name))
        for fn, length in functions(text):
            funcs.append((length, "%s:%s" % (name, fn)))
    print("lines of C (tests and bench excluded) per folder:")
    for folder, n in sorted(per_folder.items()):
        print("  %-10s %6d" % (folder, n))
    print("  %-10s %6d" % ("total", sum(per_folder.values())))
    print("largest files:")
    for n, name in sorted(files, reverse=True)[:args.top]:
        print("  %6d  %s" % (n, name))
    print("largest functions (lines of body):")
    for n, name in sorted(funcs, reverse=True)[:args.top]:
        print("  %6d  %s" % (n, name))
    if args.over:
        long_funcs = [f for f in sorted(funcs, reverse=True) if f[0] > args.over]
        print("functions over %d lines: %d" % (args.over, len(long_funcs)))
        for n, name in long_funcs:
            print("  %6d  %s" % (n, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
