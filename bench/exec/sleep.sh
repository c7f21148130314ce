#!/bin/sh
# The long_ops_exec case's old-style program: runs SLEEP_S seconds, then ends (one step).
cat >/dev/null
exec sleep "$SLEEP_S"
