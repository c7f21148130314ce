/* The ends of the workers' connections to the dispatcher's ROUTER socket, from ZeroMQ's socket
 * monitor: a worker that dies (killed, crashed) has its connection closed by the kernel at once,
 * seconds before its READYs are missed, and the dispatcher takes its steps from it then
 * (docs/decisions/0052). A connection is named by its descriptor, which each message from it
 * also carries (osbq_bus_msg.source_fd). Used by the dispatcher's thread only. */
#ifndef OSBQ_GATEWAY_DISPATCH_MONITOR_H
#define OSBQ_GATEWAY_DISPATCH_MONITOR_H

#include <czmq.h>

struct dispatch_monitor;

/* Watches router's connections; NULL (logged) when ZeroMQ cannot: then workers are only seen
 * to go by their silence. Call before the socket is used by another thread. */
struct dispatch_monitor *dispatch_monitor_start(zsock_t *router);

/* The socket to poll for ended connections (ZMQ_POLLIN). */
void *dispatch_monitor_socket(struct dispatch_monitor *m);

/* The descriptor of a connection that ended, or -1 when no end is waiting; never blocks. */
int dispatch_monitor_next_end(struct dispatch_monitor *m);

/* Stops watching router and frees the monitor; sets *mp to NULL; accepts NULL and *mp NULL.
 * Before router is closed. */
void dispatch_monitor_stop(struct dispatch_monitor **mp, zsock_t *router);

#endif
