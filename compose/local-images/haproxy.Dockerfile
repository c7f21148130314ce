# haproxy:2.8-bookworm made from Debian's haproxy package (2.6 in bookworm), for hosts that reach
# no container registry (scripts/local-images.sh builds it only when the tag is missing;
# docs/deploy.md). Like the official image: the configuration at
# /usr/local/etc/haproxy/haproxy.cfg, master-worker mode in the foreground, a non-root user,
# SIGUSR1 for a graceful stop. compose/haproxy.cfg is kept valid for both versions.
FROM debian:bookworm
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /usr/local/etc/haproxy
USER haproxy:haproxy
STOPSIGNAL SIGUSR1
CMD ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
