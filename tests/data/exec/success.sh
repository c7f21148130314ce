#!/bin/sh
# Succeeds after progress lines, ordinary output and stderr noise; its result line is followed
# by a line that is not JSON (the last line starting with '{' is the result).
cat >/dev/null
echo "progress 40 Creating database"
echo "progress abc not a progress line"
echo "progress 101 out of range"
echo "an ordinary line"
echo "warning on stderr" >&2
echo '{"ignored": "an earlier result line"}'
printf 'progress 100 Done\001 creating  \n'
echo '{"credentials": {"username": "u", "password": "p"}, "endpoints": [{"host": "db", "ports": ["5432"]}], "dashboard_url": "https://dash.example/x", "metadata": {"labels": {"tier": "gold"}}, "extra": 1}'
echo "trailing text"
