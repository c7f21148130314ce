/* The job bus: ZeroMQ sockets between gateways and workers (czmq). */
#ifndef OSBQ_BUS_H
#define OSBQ_BUS_H

#include <czmq.h>

#include "error.h"

/* Stops czmq from installing its own SIGINT/SIGTERM handlers: osbq's binaries wait for
 * signals themselves. Call before any other bus function. */
void osbq_bus_init(void);

/* Creates the gateway's ROUTER socket and binds it to endpoint (OSBQ_BUS_BIND). Workers
 * connect to it. Caller owns the socket (zsock_destroy); NULL with err when the bind fails
 * (e.g. the port is in use). The socket belongs to the thread that uses it. */
zsock_t *osbq_bus_gateway_bind(const char *endpoint, struct osbq_error *err);

#endif
