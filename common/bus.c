/* The job bus: ZeroMQ sockets between gateways and workers (czmq). */
#include "bus.h"

void osbq_bus_init(void)
{
    zsys_handler_set(NULL);
}

zsock_t *osbq_bus_gateway_bind(const char *endpoint, struct osbq_error *err)
{
    zsock_t *sock = zsock_new(ZMQ_ROUTER);
    if (sock == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot create a ZeroMQ socket");
        return NULL;
    }
    /* Unsent jobs are the recovery loop's business, never a reason to block shutdown. */
    zsock_set_linger(sock, 0);
    if (zsock_bind(sock, "%s", endpoint) < 0) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "cannot bind %s: %s", endpoint,
                       zmq_strerror(zmq_errno()));
        zsock_destroy(&sock);
        return NULL;
    }
    return sock;
}
