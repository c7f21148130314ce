#!/bin/sh
# The entrypoint of the local stand-ins for the Redis and Valkey images (redis.Dockerfile,
# valkey.Dockerfile). As the official images do, a command that starts with an option runs the
# image's server with those options. Debian's servers start in protected mode when given no
# config file, refusing every client but loopback; the official images turn that default off,
# and the compose network is the only one that reaches this server. An explicit --protected-mode
# on the command line still wins.
server=$(command -v valkey-server || command -v redis-server)
case "${1:-}" in
  -*) set -- "$server" "$@" ;;
esac
if [ "${1:-}" = redis-server ] || [ "${1:-}" = valkey-server ] || [ "${1:-}" = "$server" ]; then
  case " $* " in
    *" --protected-mode "*) ;;
    *) set -- "$@" --protected-mode no ;;
  esac
fi
exec "$@"
