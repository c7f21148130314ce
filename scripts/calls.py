#!/usr/bin/env python3
"""Who calls whom in osbq's C code, for the layout's decision records. A function refers to
another when its body names it: a call, or a callback handed over by name (".progress =
call_progress"). A call through a member (a backend's "call->progress(call, text)") is not
followed: without types a member's name does not say which function it holds, and a hook
handed down is how a lower file reports up without a circle. Functions are found as
scripts/code-sizes.py finds them (a body opens with "{" alone in column 0); a static name
resolves in its own file, any other to the file that defines it. Tests and the bench are left
out; files git does not track yet (and does not ignore) count.

Usage:
  scripts/calls.py circles FOLDER       the files of FOLDER that refer to each other in a circle
                                        (strongly connected, counting only FOLDER's files), with
                                        the references that close each circle
  scripts/calls.py from FILE:FUNCTION   what FUNCTION reaches through its references: functions,
                                        files, their lines, and how many references come back
                                        into FILE from another file ("re-entries")
"""

import collections
import os
import re
import subprocess
import sys

SIGNATURE_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
IDENT = re.compile(r"(->|\.)?\s*\b([A-Za-z_][A-Za-z0-9_]*)\b")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"' + r"|'(?:\\.|[^'\\\n])*'")


def sources():
    names = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], check=True, capture_output=True,
                           text=True).stdout.split()
    for name in names:
        if name.endswith(".c") and not name.startswith(("tests/", "bench/")) and \
                os.path.exists(name):
            with open(name, encoding="utf-8") as f:
                yield name, f.read()


def definitions(name, text):
    """(function, static, first line, body text, lines) of each function defined in text."""
    lines = text.split("\n")
    start = None
    for i, line in enumerate(lines):
        if line == "{" and i > 0:
            j = i - 1
            while j > 0 and lines[j].startswith((" ", "\t")):  # the signature's first line
                j -= 1
            head = " ".join(lines[j:i])
            m = SIGNATURE_NAME.search(head)
            start = (m.group(1) if m else "?", "static" in head.split("(")[0], i)
        elif line.startswith("}") and start is not None:
            fn, static, first = start
            body = "\n".join(lines[first:i + 1])
            yield fn, static, first + 1, body, i - first + 1
            start = None


def graph():
    """funcs: (file, fn) -> lines; refs: (file, fn) -> set of (file, fn) it names."""
    funcs, bodies, public, private = {}, {}, {}, collections.defaultdict(dict)
    for name, text in sources():
        for fn, static, _, body, n in definitions(name, text):
            key = (name, fn)
            funcs[key] = n
            bodies[key] = STRING.sub('""', COMMENT.sub(" ", body))
            if static:
                private[name][fn] = key
            else:
                public.setdefault(fn, key)

    def resolve(file, word):
        return private[file].get(word) or public.get(word)

    refs = {}
    for key, body in bodies.items():
        out = set()
        for m in IDENT.finditer(body):
            word = m.group(2)
            if m.group(1):  # a member, not a function
                continue
            target = resolve(key[0], word)
            if target is not None:
                out.add(target)
        out.discard(key)
        refs[key] = out
    return funcs, refs


def circles(folder):
    funcs, refs = graph()
    folder = folder.rstrip("/") + "/"
    files = sorted({f for f, _ in funcs if f.startswith(folder)})
    edges = collections.defaultdict(set)  # file -> files
    why = collections.defaultdict(list)  # (file, file) -> references
    for (f, fn), targets in refs.items():
        for (g, gn) in targets:
            if f != g and f.startswith(folder) and g.startswith(folder):
                edges[f].add(g)
                why[(f, g)].append("%s -> %s" % (fn, gn))
    # Tarjan's strongly connected components.
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(sorted(comp))

    for v in files:
        if v not in index:
            visit(v)
    found = [c for c in comps if len(c) > 1]
    print("%d files in %s, %d references between them, %d circle(s)" %
          (len(files), folder, sum(len(v) for v in why.values()), len(found)))
    for comp in found:
        print("circle: " + ", ".join(comp))
        for f in comp:
            for g in comp:
                if (f, g) in why:
                    print("  %s -> %s: %s" % (f, g, ", ".join(sorted(why[(f, g)]))))


def reach(spec):
    funcs, refs = graph()
    file, _, fn = spec.partition(":")
    start = (file, fn)
    if start not in funcs:
        sys.exit("no function %s in %s" % (fn, file))
    seen, todo = {start}, [start]
    while todo:
        for t in refs[todo.pop()]:
            if t not in seen:
                seen.add(t)
                todo.append(t)
    per_file = collections.Counter()
    for f, g in seen:
        per_file[f] += funcs[(f, g)]
    reentries = sum(1 for key in seen for t in refs[key] if t[0] == file and key[0] != file)
    print("from %s: %d functions, %d lines of them, in %d files; %d references from another "
          "file back into %s" % (spec, len(seen), sum(per_file.values()), len(per_file),
                                  reentries, file))
    for f, n in sorted(per_file.items(), key=lambda x: -x[1]):
        print("  %6d  %s" % (n, f))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("circles", "from"):
        sys.exit(__doc__)
    os.chdir(subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True,
                            capture_output=True, text=True).stdout.strip())
    (circles if sys.argv[1] == "circles" else reach)(sys.argv[2])


if __name__ == "__main__":
    main()
