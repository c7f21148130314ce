#!/bin/sh
# The long_ops_exec case's poll-style program: the first step answers in progress until
# WAIT_S seconds from now; a poll ends the operation once that time passed, else answers in
# progress again until then.
#
# A step is one process and nothing more: the shell's builtins only (read, parameter expansion,
# test, printf), no command substitution, no cat, date or sed; and the smallest shell (dash,
# Debian's /bin/sh). Starting a process is most of a step's cost (on the bench's machine about
# 2.4 ms of CPU for /bin/true, about as much for this script under dash, 5.5 ms under bash,
# 15-30 ms when it ran cat, date and sed: docs/backends.md, "The cost of a step"), and the
# case runs 20,000 steps.
#
# Its clock is the machine's uptime (/proc/uptime, read by the shell itself: dash has no clock
# of its own), so a poll must run on the machine that ran the first step: true of the case's
# one worker, not of a real deployment, where a program keeps wall-clock time.
#
# The worker writes the job as one line of compact JSON and a newline, then closes stdin, so
# one read takes it whole; the resume therefore reads as "resume":{"until":N}.
IFS= read -r job
read -r up _ </proc/uptime
now=${up%.*}
case $job in
*'"kind":"poll"'*)
    until=${job#*'"resume":{"until":'}
    until=${until%%[!0-9]*}
    if [ -z "$until" ]; then
        echo "the poll's resume holds no until" >&2
        exit 1
    fi
    if [ "$now" -ge "$until" ]; then
        echo "progress 100 Done"
        exit 0
    fi
    ;;
*) until=$((now + WAIT_S)) ;;
esac
printf '{"state":"in progress","description":"Waiting","poll_after_s":%d,"resume":{"until":%d}}\n' \
    $((until - now)) "$until"
