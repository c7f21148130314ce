#!/usr/bin/env python3
"""Cold start to the first 200 (bench/run.sh's memory case): starts COMMAND, then polls
GET /v2/catalog on 127.0.0.1:PORT with the given headers every millisecond until it answers
200, prints the milliseconds from the start to that answer, and stops the process it started
(SIGTERM, then SIGKILL after 10 s). Gives up after 10 s.

usage: cold_start.py PORT AUTH_HEADER VERSION_HEADER COMMAND [ARG...]"""

import socket
import subprocess
import sys
import time


def ok(port, request):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(request)
            return s.recv(16).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    port = int(sys.argv[1])
    request = ("GET /v2/catalog HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n%s\r\nConnection: close"
               "\r\n\r\n" % (sys.argv[2], sys.argv[3])).encode()
    t0 = time.monotonic()
    proc = subprocess.Popen(sys.argv[4:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    elapsed = None
    try:
        while time.monotonic() - t0 < 10 and proc.poll() is None:
            if ok(port, request):
                elapsed = (time.monotonic() - t0) * 1000
                break
            time.sleep(0.001)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if elapsed is None:
        sys.exit("cold_start: no 200 within 10 s")
    print("%.1f" % elapsed)


if __name__ == "__main__":
    main()
