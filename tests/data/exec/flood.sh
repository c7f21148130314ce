#!/bin/sh
# Floods stdout (one 5 MB line, then 3 MB of short lines) and stderr (3 MB), then succeeds:
# the broker must keep reading, keep its memory bounded, and still find the result.
cat >/dev/null
head -c 5000000 /dev/zero | tr '\0' 'x'
echo
head -c 3000000 /dev/zero | tr '\0' 'y' | fold -w 100
echo
head -c 3000000 /dev/zero | tr '\0' 'e' >&2
echo '{"credentials": {"flooded": true}}'
