"""A poll-style exec program for the tests: the first step answers in progress, each poll
moves one step on, the third step ends. The job's parameters choose a misbehaviour:
{"mode": "fail_poll"} fails its first poll, "huge_resume" saves a state over the size limit,
"no_after" and "bad_resume" print invalid in-progress lines; "after" sets poll_after_s."""
import json
import sys

job = json.load(sys.stdin)
params = job.get("parameters") or {}
mode = params.get("mode", "steps")
after = params.get("after", 0.2)


def in_progress(description, resume, **extra):
    line = {"state": "in progress", "description": description, "poll_after_s": after,
            "resume": resume}
    line.update(extra)
    print(json.dumps(line))
    sys.exit(0)


if job["kind"] != "poll":
    if mode == "huge_resume":
        in_progress("Starting", {"pad": "x" * 5000})
    if mode == "no_after":
        print(json.dumps({"state": "in progress", "description": "Starting"}))
        sys.exit(0)
    if mode == "bad_resume":
        in_progress("Starting", [1, 2])
    print("progress 10 Starting")
    in_progress("Started (1 of 3)", {"n": 1, "of": job["kind"]})

n = job["resume"]["n"]
if mode == "fail_poll":
    print("poll failed: the job broke", file=sys.stderr)
    sys.exit(1)
if job["of"] != job["resume"]["of"] or job["step"] != n:
    print("poll of %s step %s with %r" % (job["of"], job["step"], job["resume"]), file=sys.stderr)
    sys.exit(2)
if n < 2:
    in_progress("Working (%d of 3)" % (n + 1), {"n": n + 1, "of": job["of"]})
print("progress 100 Ready after %d polls" % n)
print(json.dumps({"dashboard_url": "https://dash.example/%s" % job["instance_id"]}))
