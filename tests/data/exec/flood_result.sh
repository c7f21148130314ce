#!/bin/sh
# A result line far over the line limit: the operation fails rather than read half of it.
cat >/dev/null
printf '{"credentials": {"x": "'
head -c 2000000 /dev/zero | tr '\0' 'x'
echo '"}}'
