#!/usr/bin/env python3
"""Opens COUNT connections to 127.0.0.1:PORT and sends one synchronous provision on each (a
new instance id each, PREFIX<n>), then keeps them open without reading until it gets SIGTERM or
SIGINT (bench/run.sh's memory case: the gateway holds each request suspended while the worker
runs a long sim job). Prints "sent N" once every request is written. The request's headers and
body come from bench/run.sh (arguments), so they are those of the other cases.

usage: hold_connections.py PORT COUNT PREFIX AUTH_HEADER VERSION_HEADER BODY"""

import resource
import signal
import socket
import sys
import time


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    port, count, prefix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    auth, version, body = sys.argv[4], sys.argv[5], sys.argv[6].encode()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 64), hard))
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    socks = []
    for n in range(count):
        if stop:
            break
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        head = ("PUT /v2/service_instances/%s%d HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n%s\r\n"
                "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                % (prefix, n, auth, version, len(body)))
        s.sendall(head.encode() + body)
        socks.append(s)
    print("sent %d" % len(socks), flush=True)
    deadline = time.monotonic() + 3600  # bounded: the caller stops it long before
    while not stop and time.monotonic() < deadline:
        time.sleep(0.1)
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
