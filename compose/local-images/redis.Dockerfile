# redis:7-bookworm made from Debian's redis-server, for hosts that reach no container registry
# (scripts/local-images.sh builds it only when the tag is missing; docs/deploy.md). It behaves
# like the official image where compose/docker-compose.yml relies on it: `redis-server ...` or
# options alone as the command, `redis-cli` for the health check, data in /data, a non-root user.
FROM debian:bookworm
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server redis-tools \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown redis:redis /data
COPY redis-entrypoint.sh /usr/local/bin/redis-entrypoint
RUN chmod 0755 /usr/local/bin/redis-entrypoint
VOLUME /data
WORKDIR /data
USER redis:redis
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/redis-entrypoint"]
CMD ["redis-server"]
