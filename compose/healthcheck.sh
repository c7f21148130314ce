#!/bin/bash
# Container health check of the osbq images, with nothing but bash (no curl in the image).
#   osbq-healthcheck [PATH]              GET PATH (default /healthz) from the gateway on
#                                        OSBQ_LISTEN's port (a worker: OSBQ_METRICS_LISTEN's);
#                                        healthy on a 200 status line. A gateway with
#                                        OSBQ_TLS_CERT set speaks HTTPS only, which bash cannot:
#                                        healthy when the port accepts a connection (PATH is not
#                                        asked; docs/deploy.md#tls)
#   osbq-healthcheck --process NAME      healthy while a process named NAME runs (not a zombie)
set -u
if [ "${1:-}" = "--process" ]; then
  name=${2:?usage: osbq-healthcheck --process NAME}
  for stat in /proc/[0-9]*/stat; do
    read -r line <"$stat" 2>/dev/null || continue
    comm=${line#*(}; comm=${comm%)*}; state=${line##*) }; state=${state%% *}
    [ "$comm" = "$name" ] && [ "$state" != Z ] && exit 0
  done
  echo "osbq-healthcheck: no running $name process" >&2
  exit 1
fi
path=${1:-/healthz}
listen=${OSBQ_LISTEN:-${OSBQ_METRICS_LISTEN:-0.0.0.0:8080}}
port=${listen##*:}
host=${listen%:*}; host=${host#[}; host=${host%]}
case "$host" in ''|0.0.0.0|'*') host=127.0.0.1 ;; ::) host=::1 ;; esac
exec 3<>"/dev/tcp/$host/$port" || exit 1
if [ -n "${OSBQ_TLS_CERT:-}" ] && [ -n "${OSBQ_LISTEN:-}" ]; then
  exec 3<&-
  exit 0
fi
printf 'GET %s HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n' "$path" >&3
IFS= read -r -t 3 status <&3 || { echo "osbq-healthcheck: no answer on $host:$port" >&2; exit 1; }
exec 3<&-
case "$status" in
  HTTP/1.?" 200 "*) exit 0 ;;
  *) echo "osbq-healthcheck: GET $path: ${status%$'\r'}" >&2; exit 1 ;;
esac
