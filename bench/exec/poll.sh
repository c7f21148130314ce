#!/bin/bash
# The long_ops_exec case's poll-style program: the first step answers in progress until
# WAIT_S seconds from now; a poll ends the operation once that time passed, else answers in
# progress again until then.
#
# A step is one process and nothing more: bash builtins only (read, $EPOCHSECONDS, parameter
# expansion, printf), no command substitution, no cat, date or sed. Starting a process is most
# of a step's cost (on the bench's quiet machine about 2.4 ms of CPU for /bin/true, 5.5 ms for
# this script, 15-30 ms when it ran cat, date and sed: docs/backends.md, "exec"), and the case
# runs 20,000 steps.
#
# The worker writes the job as one line of compact JSON and a newline, then closes stdin, so
# one read takes it whole; the resume therefore reads as "resume":{"until":N}.
IFS= read -r job
now=$EPOCHSECONDS
case $job in
*'"kind":"poll"'*)
    until=${job#*'"resume":{"until":'}
    until=${until%%[!0-9]*}
    if [[ -z $until ]]; then
        echo "the poll's resume holds no until" >&2
        exit 1
    fi
    if ((now >= until)); then
        echo "progress 100 Done"
        exit 0
    fi
    ;;
*) until=$((now + WAIT_S)) ;;
esac
printf '{"state":"in progress","description":"Waiting","poll_after_s":%d,"resume":{"until":%d}}\n' \
    $((until - now)) "$until"
