#!/usr/bin/env python3
"""Prints the Redis protocol that clones one finished instance COUNT times, for
`redis-cli --pipe` (bench/run.sh's scale and repair cases). The template is a real instance the
gateway and worker wrote (a synchronous provision, maybe a bind), so the clones have exactly the
shape they write: every key that names the instance id or its last operation id (the instance
hash and the operation hash; a bound one's binding hash and bindings set), with every field or
member, and the same remaining time to live, with the two ids replaced. Clone n is instance PREFIX<n>; its operation id is the template's with the last 12
hex digits replaced by n. A clone is not in the count of live records the scripts keep (the
template's 'counted' mark is left out): the case that needs it counted runs osbq-ctl recount.

usage: preload_clone.py REDIS_PORT TEMPLATE_INSTANCE_ID COUNT PREFIX [FIRST]"""

import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))

from osbq_stack import encode_command, read_resp  # noqa: E402 (found through the path above)


def command(sock_file, sock, *args):
    sock.sendall(encode_command(args))
    return read_resp(sock_file, decode=False)


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    port, template, count, prefix = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3]), \
        sys.argv[4].encode()
    first = int(sys.argv[5]) if len(sys.argv) == 6 else 0
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    f = sock.makefile("rb")
    ns = b"osbq:"
    last_op = command(f, sock, "HGET", ns + b"instance:" + template, "last_op")
    if not last_op or len(last_op) < 12:
        sys.exit("preload_clone: %s has no last operation" % template.decode())
    keys = [k for k in command(f, sock, "KEYS", ns + b"*")
            if template in k.split(b":") or last_op in k]
    templates = []
    for key in sorted(keys):
        kind = command(f, sock, "TYPE", key)
        if kind not in (b"hash", b"set"):
            sys.exit("preload_clone: %s is a %s; only hashes and sets are cloned" % (key, kind))
        flat = command(f, sock, "HGETALL" if kind == b"hash" else "SMEMBERS", key)
        if kind == b"hash":
            # The count of live records (docs/decisions/0056) marks a record it counts; a clone
            # is not in the count: written unmarked, as an older release wrote it.
            pairs = [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
            flat = [v for name, value in pairs if name != b"counted" for v in (name, value)]
        ttl = command(f, sock, "PTTL", key)
        templates.append((key, b"HSET" if kind == b"hash" else b"SADD", flat, ttl))
    sock.close()
    out = sys.stdout.buffer
    op_stem = last_op[:-12]
    for n in range(first, first + count):
        instance = prefix + str(n).encode()
        op = op_stem + b"%012x" % n
        chunk = []
        for key, write, flat, ttl in templates:
            def swap(v):
                return v.replace(last_op, op).replace(template, instance)
            chunk.append(encode_command([write, swap(key)] + [swap(v) for v in flat]))
            if ttl > 0:
                chunk.append(encode_command([b"PEXPIRE", swap(key), str(ttl).encode()]))
        out.write(b"".join(chunk))
    out.flush()


if __name__ == "__main__":
    main()
