#!/bin/sh
# Debian's redis-server starts in protected mode when given no config file, refusing every client
# but loopback; the official image turns that default off, and the compose network is the only
# one that reaches this server. An explicit --protected-mode on the command line still wins.
if [ "${1:-}" = redis-server ]; then
  case " $* " in
    *" --protected-mode "*) ;;
    *) set -- "$@" --protected-mode no ;;
  esac
fi
exec "$@"
