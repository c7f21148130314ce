#!/bin/sh
# The old-style program of the long_ops_exec case and of noisy_neighbor's exec variant: runs
# SLEEP_S seconds, then ends (one step). The job is one line: read by the shell itself, not by a
# cat started for it.
read -r _ || :
exec sleep "$SLEEP_S"
