#!/bin/sh
# Reports the variables a test looks at as its credentials.
cat >/dev/null
printf '{"credentials": {"extra": "%s", "override": "%s", "osbq": "%s%s%s%s", "path_set": %s}}\n' \
  "${EXTRA-}" "${OVERRIDE-}" "${OSBQ_BROKER_PASSWORD-}" "${OSBQ_REDIS_URL-}" "${OSBQ_SECRET_KEY-}" \
  "${OSBQ_ANYTHING-}" "$([ -n "${PATH-}" ] && echo true || echo false)"
