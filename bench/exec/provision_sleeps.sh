#!/bin/sh
# The halt case's program: a provision sleeps SLEEP_S seconds (a delete halts it meanwhile:
# SIGTERM to its process group); every other kind, the deprovision that follows included, ends
# at once. The job is one line, read by the shell itself.
IFS= read -r job || :
case $job in
*'"kind":"provision"'*) exec sleep "$SLEEP_S" ;;
esac
