# valkey/valkey:8-bookworm made from Debian's valkey-server (8.0.1, bookworm-backports), for hosts
# that reach no container registry (scripts/local-images.sh builds it only when the tag is missing
# and compose/docker-compose.yml is to run it: OSBQ_REDIS_IMAGE; docs/deploy.md). It behaves like
# the official image where the compose file relies on it: options alone (or `valkey-server ...`)
# as the command, `valkey-cli` for the health check, data in /data, a non-root user. Only the
# two valkey packages come from bookworm-backports; everything else stays bookworm's.
FROM debian:bookworm
# scripts/local-images.sh passes its OSBQ_DEBIAN_MIRROR.
ARG DEBIAN_MIRROR=http://deb.debian.org/debian
RUN printf '%s\n' "deb $DEBIAN_MIRROR bookworm-backports main" \
      > /etc/apt/sources.list.d/bookworm-backports.list \
 && printf '%s\n' 'Package: *' 'Pin: release n=bookworm-backports' 'Pin-Priority: -1' '' \
      'Package: valkey-server valkey-tools' 'Pin: release n=bookworm-backports' \
      'Pin-Priority: 500' > /etc/apt/preferences.d/valkey \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends valkey-server valkey-tools \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown valkey:valkey /data
COPY redis-entrypoint.sh /usr/local/bin/redis-entrypoint
RUN chmod 0755 /usr/local/bin/redis-entrypoint
VOLUME /data
WORKDIR /data
USER valkey:valkey
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/redis-entrypoint"]
CMD ["valkey-server"]
