#!/bin/sh
# The old-style program of the long_ops_exec case, of noisy_neighbor's exec variant and of the
# takeover case (every kind of step): runs SLEEP_S seconds, then ends (one step). The job is one
# line: read by the shell itself, not by a cat started for it.
read -r _ || :
exec sleep "$SLEEP_S"
