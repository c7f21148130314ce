#!/bin/sh
# The long_ops_exec case's poll-style program: the first step answers in progress until
# WAIT_S seconds from now; a poll ends the operation once that time passed, else answers in
# progress again until then. Plain sh and sed (no interpreter to start per step); the job's
# JSON is compact, so the resume reads as {"until":N}.
job=$(cat)
now=$(date +%s)
case "$job" in
*'"kind":"poll"'*)
    until=$(printf '%s' "$job" | sed -n 's/.*"resume":{"until":\([0-9]*\)}.*/\1/p')
    if [ "$now" -ge "${until:-0}" ]; then
        echo "progress 100 Done"
        exit 0
    fi
    ;;
*) until=$((now + WAIT_S)) ;;
esac
printf '{"state":"in progress","description":"Waiting","poll_after_s":%d,"resume":{"until":%d}}\n' \
    $((until - now)) "$until"
