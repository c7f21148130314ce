/* The worker's small HTTP server for OSBQ_METRICS_LISTEN: GET/HEAD /metrics (the registry in
 * Prometheus text format, behind basic auth when OSBQ_METRICS_USERNAME is set) and GET/HEAD
 * /healthz (always open, {"status":"ok"}); anything else 404, or 405 for another method on
 * those paths, with a JSON {"description"} body. One libmicrohttpd thread (epoll where
 * available): scrapes are rare and rendering is quick. */
#ifndef OSBQ_WORKER_METRICS_SERVER_H
#define OSBQ_WORKER_METRICS_SERVER_H

#include "config.h"
#include "error.h"
#include "metrics.h"

struct metrics_server;

/* Resolves addr (host:port) and binds a listening TCP socket to the first address that takes
 * it. Returns the socket (non-blocking, close-on-exec), or -1 with err naming the address and
 * the reason (e.g. "cannot listen on 127.0.0.1:9100: Address already in use"). */
int metrics_server_listen(const struct osbq_listen_addr *addr, struct osbq_error *err);

/* Starts serving on listen_fd (taken over: closed by metrics_server_stop, or here on failure).
 * registry is borrowed and rendered on each scrape; it must outlive the server. When
 * cfg->metrics_username is set, /metrics needs it and cfg->metrics_password (only a keyed hash
 * of them is kept). Returns the server (caller stops it with metrics_server_stop), or NULL with
 * err. */
struct metrics_server *metrics_server_start(const struct osbq_config *cfg, int listen_fd,
                                            struct osbq_metrics *registry, struct osbq_error *err);

/* Stops the thread, closes the socket and every connection, frees the server; sets *sp to NULL;
 * accepts NULL. Waits for a scrape being answered. */
void metrics_server_stop(struct metrics_server **sp);

#endif
