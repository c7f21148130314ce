#!/bin/sh
# The long_ops_exec case's old-style program: runs SLEEP_S seconds, then ends (one step). The
# job is one line: read by the shell itself, not by a cat started for it.
read -r _ || :
exec sleep "$SLEEP_S"
