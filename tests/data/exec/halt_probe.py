"""An exec program for the halting tests (docs/decisions/0051): it appends each job it gets,
and each SIGTERM it receives, as a JSON line to $RECORD_DIR/jobs.jsonl, then:
- a provision with parameters {"mode": "run"} works 30 s in one step (SIGTERM ends it);
- a provision with {"mode": "wait"} answers in progress, its next poll due in 30 s, and so does
  each poll;
- any other job (a provision with {"mode": "done"}, a deprovision, a bind, an unbind) ends at
  once."""
import json
import os
import signal
import sys
import time

RECORD = os.path.join(os.environ["RECORD_DIR"], "jobs.jsonl")


def record(entry):
    # One write of one short line on an O_APPEND file: lines of concurrent runs never mix.
    fd = os.open(RECORD, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(entry) + "\n").encode())
    finally:
        os.close(fd)


job = json.load(sys.stdin)
record({"kind": job["kind"], "operation_id": job["operation_id"],
        "halted_operation_id": job.get("halted_operation_id")})
mode = (job.get("parameters") or {}).get("mode", "run")


def terminated(signo, frame):
    record({"signal": "TERM", "operation_id": job["operation_id"]})
    sys.exit(1)


if job["kind"] == "provision" and mode == "run":
    signal.signal(signal.SIGTERM, terminated)
    print("progress 10 Working", flush=True)
    time.sleep(30)
elif job["kind"] in ("provision", "poll") and mode == "wait":
    print(json.dumps({"state": "in progress", "description": "Waiting", "poll_after_s": 30,
                      "resume": {"n": 1}}))
