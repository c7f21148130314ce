/* The HTTP server: libmicrohttpd glue between sockets and the router. */
#ifndef OSBQ_GATEWAY_HTTP_H
#define OSBQ_GATEWAY_HTTP_H

#include <stdint.h>

#include "config.h"
#include "error.h"
#include "gateway.h"
#include "tls.h"

struct http_server;

/* Starts serving listen_fd (which it takes over) with gw's handlers on the configured number
 * of threads: HTTPS with tls's certificate when tls is not NULL, else plain HTTP. gw and tls
 * are borrowed and must outlive the server. NULL with err on failure. */
struct http_server *http_start(const struct gateway *gw, int listen_fd, struct tls_credentials *tls,
                               struct osbq_error *err);

/* Stops accepting connections (the listening socket closes); requests on open connections
 * are still served. */
void http_quiesce(struct http_server *server);

/* Requests between their first byte and their completion, now. */
int http_inflight(struct http_server *server);

/* After http_quiesce: waits until no request is in flight or the monotonic deadline_ms
 * passed (woken by the last request's completion, not polling). Returns the requests still in
 * flight. */
int http_wait_idle(struct http_server *server, int64_t deadline_ms);

/* Stops the threads, closes every connection and the socket, frees; sets *sp to NULL. */
void http_stop(struct http_server **sp);

#endif
