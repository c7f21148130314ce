#!/usr/bin/env python3
"""Reads MONITOR output on stdin and prints, NUL-separated, the words of the first EVALSHA that
names INSTANCE_ID, ready for redis-benchmark (bench/run.sh's Redis-script ceiling): every
occurrence of the instance id and of the operation id it names becomes __rand_int__ (a new
random number at each place of each call), and an argument holding bytes no command-line
argument can carry (the msgpack job holds NULs) becomes as many "j" bytes: Lua treats the job
as opaque bytes, so only its length matters to the script's cost.

usage: monitor_call.py INSTANCE_ID < monitor.out"""

import re
import sys

_WORD = re.compile(rb'"((?:[^"\\]|\\.)*)"')
_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"a": b"\a", b"b": b"\b", b'"': b'"',
            b"\\": b"\\"}


def unquote(word):
    """Undoes Redis's sdscatrepr quoting."""
    out = bytearray()
    i = 0
    while i < len(word):
        c = word[i:i + 1]
        if c != b"\\":
            out += c
            i += 1
        elif word[i + 1:i + 2] == b"x":
            out.append(int(word[i + 2:i + 4], 16))
            i += 4
        else:
            out += _ESCAPES.get(word[i + 1:i + 2], word[i + 1:i + 2])
            i += 2
    return bytes(out)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    instance = sys.argv[1].encode()
    for line in sys.stdin.buffer:
        words = [unquote(w) for w in _WORD.findall(line)]
        if len(words) < 3 or words[0].upper() != b"EVALSHA":
            continue
        if not any(w.endswith(b":" + instance) for w in words):
            continue
        nkeys = int(words[2])
        op_key = next((w for w in words[3:3 + nkeys] if b":op:" in w), None)
        if op_key is None:
            sys.exit("monitor_call: the EVALSHA names no operation key")
        op_id = op_key.rsplit(b":", 1)[1]
        out = []
        for w in words:
            if any(b < 0x20 or b >= 0x7f for b in w):
                w = b"j" * len(w)
            else:
                w = w.replace(op_id, b"__rand_int__").replace(instance, b"__rand_int__")
            out.append(w)
        sys.stdout.buffer.write(b"\0".join(out) + b"\0")
        return
    sys.exit("monitor_call: no EVALSHA naming %s in the input" % instance.decode())


if __name__ == "__main__":
    main()
