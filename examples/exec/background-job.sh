#!/bin/sh
# osbq exec backend example of the poll protocol (docs/backends.md, "exec", "Steps"): a
# provision or update starts its work as a background job and answers "in progress" at once;
# the worker runs this program again later ("kind": "poll", "of": the operation's kind, "resume":
# what the previous step saved), and each poll looks at the job's marker files: done, failed,
# or still running (in progress again). No worker thread or process waits for the job meanwhile.
#
# The work is a stand-in for a slow API (a cloud database being created): WORK_SECONDS of
# sleep (default 20), then a marker file. Set FAIL_WORK=1 in the plan's env to make it fail.
# State lives under STATE_DIR (default /tmp/osbq-background-job), one directory per instance.
# Deprovision, bind and unbind are quick: they end in one step, as programs always could.
#
# Every step is idempotent: the broker may run one twice (a worker crash, a lost lease). The
# job is started only when its operation has no "started" marker yet, so a repeated first step
# does not start a second job; a repeated poll only looks. Needs python3 (to read the JSON).
set -eu

: "${STATE_DIR:=/tmp/osbq-background-job}"
: "${WORK_SECONDS:=20}"
: "${FAIL_WORK:=0}"
POLL_AFTER_S=2

# The job -> shell variables: kind (poll: the kind polled), poll (1 for a poll), instance and
# operation (both as safe file names: a hash of the id).
kind="" poll=0 instance="" operation=""
eval "$(python3 -c '
import hashlib, json, shlex, sys
job = json.load(sys.stdin)
kind = job["of"] if job["kind"] == "poll" else job["kind"]
name = lambda s: hashlib.sha256(s.encode()).hexdigest()[:32]
print("kind=%s poll=%d instance=%s operation=%s" % (shlex.quote(kind),
      job["kind"] == "poll", name(job["instance_id"]), name(job["operation_id"])))
')"

dir="$STATE_DIR/$instance"
mkdir -p "$dir"
marker="$dir/$operation"

# "In progress" as the protocol's result line: the description is shown to the platform, the
# resume comes back with the next poll (this example needs nothing in it but the start time).
in_progress() {
    printf '{"state": "in progress", "description": "%s", "poll_after_s": %d, "resume": {"started": %s}}\n' \
        "$1" "$POLL_AFTER_S" "$(cat "$marker.started")"
    exit 0
}

case "$kind" in
provision | update)
    if [ "$poll" = 0 ]; then
        if [ ! -e "$marker.started" ]; then
            date +%s >"$marker.started"
            # A new session: the worker kills what a program leaves in its process group when
            # the program exits, and this job must outlive it. Its output goes to a file: a
            # job holding the program's stdout would keep the worker reading it.
            # shellcheck disable=SC2016 # expanded by the job's own shell
            setsid sh -c '
                echo $$ >"$3.pid"
                sleep "$1"
                if [ "$2" = 1 ]; then echo "the job failed" >"$3.failed"
                else echo done >"$3.done"; fi' job "$WORK_SECONDS" "$FAIL_WORK" "$marker" \
                </dev/null >"$marker.log" 2>&1 &
            # Until the job is in its own session it is still in this program's group, and
            # would go with it: wait (5 s at most) for it to say it left.
            i=0
            while [ ! -s "$marker.pid" ] && [ "$i" -lt 100 ]; do
                sleep 0.05
                i=$((i + 1))
            done
        fi
        in_progress "Started the $kind"
    fi
    if [ -e "$marker.done" ]; then
        echo "progress 100 The $kind is done"
        printf '{"dashboard_url": "https://dashboard.example/%s"}\n' "$instance"
        exit 0
    fi
    if [ -e "$marker.failed" ]; then
        cat "$marker.failed" >&2
        exit 1
    fi
    if [ ! -e "$marker.started" ]; then
        # The state directory was lost: the job cannot be found again.
        echo "the $kind's job is gone" >&2
        exit 1
    fi
    in_progress "Working on the $kind ($(($(date +%s) - $(cat "$marker.started"))) s)"
    ;;
deprovision)
    # What the instance's operations started and left running goes first: a provision or
    # update that this delete halted (its job names it: halted_operation_id) leaves its job
    # working, half-made. Each job is the leader of a session of its own (setsid above).
    for pidfile in "$dir"/*.pid; do
        [ -e "$pidfile" ] || continue
        kill -TERM "-$(cat "$pidfile")" 2>/dev/null || true
    done
    rm -rf "$dir"
    echo "progress 100 Deleted"
    ;;
bind)
    echo '{"credentials": {"token": "example"}}'
    ;;
unbind) ;;
*)
    echo "unknown kind $kind" >&2
    exit 1
    ;;
esac
