#!/bin/sh
# An old-style program that simply runs long: sleeps SLEEP_S seconds and records when it ran
# ("<start ns> <end ns>") in a new file under RECORD_DIR, so a test can count how many ran at
# once.
cat >/dev/null
f=$(mktemp "$RECORD_DIR/run.XXXXXX")
start=$(date +%s%N)
echo "progress 10 Sleeping"
sleep "$SLEEP_S"
echo "$start $(date +%s%N)" >"$f"
echo "progress 100 Slept"
