#!/usr/bin/env python3
"""Cold start to the first 200 (bench/run.sh's memory case): starts a gateway of BUILD_DIR with
the bench's settings (bench/lib/bench_stack.py) against the redis-server on REDIS_PORT, its log
in DIR, then polls GET /v2/catalog with the given headers every millisecond until it answers
200, prints the milliseconds from the start to that answer, and stops the gateway it started
(SIGTERM, then SIGKILL after 10 s). Gives up after 10 s.

usage: cold_start.py BUILD_DIR REDIS_PORT PASSWORD_FILE DIR AUTH_HEADER VERSION_HEADER"""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))

import bench_stack  # noqa: E402 (found through the path set above)
import osbq_stack  # noqa: E402


def ok(port, request):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(request)
            return s.recv(16).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    build_dir, redis_port, password_file, workdir = sys.argv[1:5]
    port = osbq_stack.free_port()
    settings = bench_stack.settings(password_file)
    settings.update({"OSBQ_REDIS_URL": "redis://127.0.0.1:%d/0" % int(redis_port),
                     "OSBQ_LISTEN": "127.0.0.1:%d" % port,
                     "OSBQ_BUS_BIND": "tcp://127.0.0.1:%d" % osbq_stack.free_port()})
    env = osbq_stack.daemon_environment(settings)
    gateway_bin, _ = osbq_stack.binaries(build_dir)
    request = ("GET /v2/catalog HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n%s\r\nConnection: close"
               "\r\n\r\n" % (sys.argv[5], sys.argv[6])).encode()
    t0 = time.monotonic()
    gateway = osbq_stack.Process("gateway-cold", [gateway_bin], env, workdir)
    elapsed = None
    try:
        while time.monotonic() - t0 < 10 and gateway.alive():
            if ok(port, request):
                elapsed = (time.monotonic() - t0) * 1000
                break
            time.sleep(0.001)
    finally:
        try:
            gateway.stop(timeout_s=10)
        except AssertionError as e:
            print("cold_start: %s" % str(e).split("\n", 1)[0], file=sys.stderr)
    if elapsed is None:
        sys.exit("cold_start: no 200 within 10 s")
    print("%.1f" % elapsed)


if __name__ == "__main__":
    main()
