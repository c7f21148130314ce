#!/bin/sh
# Exits 0, but its result line is cut short.
cat >/dev/null
echo '{"credentials": {"password": "hunter2"'
