#!/bin/sh
# Starts a grandchild and waits on it, after telling the test both process ids. It ignores
# SIGTERM, as a stuck program might, so only SIGKILL stops it.
trap '' TERM
sleep 300 &
echo "progress 10 pids $$ $!"
wait
