/* Listening TCP sockets for the HTTP servers. */
#ifndef OSBQ_TCP_LISTEN_H
#define OSBQ_TCP_LISTEN_H

#include "config.h"
#include "error.h"

/* Opens a non-blocking, close-on-exec listening TCP socket on addr (the first of its resolved
 * addresses that binds) with the given backlog. Returns the descriptor, or -1 with err saying
 * why (e.g. "cannot listen on 0.0.0.0:8080: Address already in use"). */
int osbq_tcp_listen(const struct osbq_listen_addr *addr, int backlog, struct osbq_error *err);

#endif
