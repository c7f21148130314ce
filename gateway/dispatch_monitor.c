/* The dispatcher's socket monitor: ZeroMQ sends each event of the watched socket as a
 * two-frame message on an inproc PAIR socket (an event number and value, then an endpoint);
 * only disconnections are asked for, whose value is the connection's descriptor. */
#include "dispatch_monitor.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "owned.h"

struct dispatch_monitor {
    zsock_t *events; /* the PAIR end ZeroMQ sends the events to */
};

struct dispatch_monitor *dispatch_monitor_start(zsock_t *router)
{
    struct dispatch_monitor *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    /* One endpoint per monitor: a process may run several dispatchers (tests). */
    char endpoint[64];
    (void)snprintf(endpoint, sizeof endpoint, "inproc://osbq-dispatch-monitor-%p", (void *)m);
    if (zmq_socket_monitor(zsock_resolve(router), endpoint, ZMQ_EVENT_DISCONNECTED) != 0) {
        log_warnx("cannot watch the workers' connections (%s): a worker that dies is seen "
                  "to go by its silence only",
                  zmq_strerror(zmq_errno()));
        free(m);
        return NULL;
    }
    char connect[sizeof endpoint + 1];
    (void)snprintf(connect, sizeof connect, ">%s", endpoint);
    m->events = zsock_new_pair(connect);
    if (m->events == NULL) {
        log_warnx("cannot read the workers' connection events: a worker that dies is seen to go "
                  "by its silence only");
        (void)zmq_socket_monitor(zsock_resolve(router), NULL, 0);
        free(m);
        return NULL;
    }
    return m;
}

void *dispatch_monitor_socket(struct dispatch_monitor *m)
{
    return zsock_resolve(m->events);
}

/* Reads one frame of an event; its size, or -1 when none is waiting. */
static int recv_frame(void *sock, void *buf, size_t size, bool *more)
{
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    if (zmq_msg_recv(&frame, sock, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&frame);
        return -1;
    }
    size_t len = zmq_msg_size(&frame);
    memcpy(buf, zmq_msg_data(&frame), len < size ? len : size);
    *more = zmq_msg_more(&frame) != 0;
    zmq_msg_close(&frame);
    return (int)(len < size ? len : size);
}

int dispatch_monitor_next_end(struct dispatch_monitor *m)
{
    void *sock = zsock_resolve(m->events);
    for (;;) {
        unsigned char head[6];
        char endpoint[256];
        bool more = false;
        int len = recv_frame(sock, head, sizeof head, &more);
        if (len < 0)
            return -1;
        /* The endpoint frame follows at once (the two are sent as one message). */
        while (more && recv_frame(sock, endpoint, sizeof endpoint, &more) >= 0)
            ;
        uint16_t event;
        uint32_t value;
        if (len != (int)sizeof head)
            continue;
        memcpy(&event, head, sizeof event);
        memcpy(&value, head + sizeof event, sizeof value);
        if (event == ZMQ_EVENT_DISCONNECTED)
            return (int)value;
    }
}

void dispatch_monitor_stop(struct dispatch_monitor **mp, zsock_t *router)
{
    OSBQ_OWNED_OR_RETURN(struct dispatch_monitor, m, mp);
    if (router != NULL)
        (void)zmq_socket_monitor(zsock_resolve(router), NULL, 0);
    zsock_destroy(&m->events);
    free(m);
    *mp = NULL;
}
