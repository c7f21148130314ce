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

zsock_t *osbq_bus_worker_connect(const char *endpoint, struct osbq_error *err)
{
    zsock_t *sock = zsock_new(ZMQ_DEALER);
    if (sock == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot create a ZeroMQ socket");
        return NULL;
    }
    zsock_set_linger(sock, 0);
    /* A worker talks to a gateway only while it is up: messages for a gateway that went away
     * must not pile up (the jobs they carry are in Redis). */
    zsock_set_immediate(sock, 1);
    /* With immediate set and no live peer a send would block for ever: fail instead. */
    zsock_set_sndtimeo(sock, 0);
    if (zsock_connect(sock, "%s", endpoint) < 0) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "cannot connect to %s: %s", endpoint,
                       zmq_strerror(zmq_errno()));
        zsock_destroy(&sock);
        return NULL;
    }
    return sock;
}

int osbq_bus_send_ready(zsock_t *dealer, const char *worker_id, unsigned free_slots)
{
    char slots[16];
    (void)snprintf(slots, sizeof slots, "%u", free_slots);
    return zsock_send(dealer, "sss", OSBQ_BUS_READY, worker_id, slots);
}

int osbq_bus_send_reject(zsock_t *dealer, const void *job, size_t len)
{
    return zsock_send(dealer, "sb", OSBQ_BUS_REJECT, job, len);
}

int osbq_bus_send_job(zsock_t *router, zframe_t *identity, const void *job, size_t len)
{
    return zsock_send(router, "fsb", identity, OSBQ_BUS_JOB, job, len);
}
