#!/bin/sh
# Fails with several lines on stderr: the description is their tail, as one line.
cat >/dev/null
echo "first line of noise" >&2
printf 'ERROR:  database "x" is\ton fire\n\n' >&2
exit 3
