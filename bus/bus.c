/* The job bus: ZeroMQ sockets between gateways and workers (czmq). */
#include "bus.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void osbq_bus_init(void)
{
    zsys_handler_set(NULL);
    /* czmq's own lines (zauth's decisions at debug level, certificate parse errors) go where
     * osbq's log goes, not to a buffered stdout. */
    zsys_set_logstream(stderr);
}

zsock_t *osbq_bus_gateway_bind(const char *endpoint, const struct osbq_bus_curve *curve,
                               struct osbq_error *err)
{
    zsock_t *sock = zsock_new(ZMQ_ROUTER);
    if (sock == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot create a ZeroMQ socket");
        return NULL;
    }
    /* Unsent jobs are the recovery loop's business, never a reason to block shutdown. */
    zsock_set_linger(sock, 0);
    if (osbq_bus_curve_on(curve)) {
        /* Set before the bind: they apply to the connections it accepts. */
        zsock_set_zap_domain(sock, OSBQ_BUS_ZAP_DOMAIN);
        zcert_apply(curve->own, sock);
        zsock_set_curve_server(sock, 1);
    }
    if (zsock_bind(sock, "%s", endpoint) < 0) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "cannot bind %s: %s", endpoint,
                       zmq_strerror(zmq_errno()));
        zsock_destroy(&sock);
        return NULL;
    }
    return sock;
}

zsock_t *osbq_bus_worker_connect(const char *endpoint, const struct osbq_bus_curve *curve,
                                 struct osbq_error *err)
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
    if (osbq_bus_curve_on(curve)) {
        zcert_apply(curve->own, sock);
        zsock_set_curve_serverkey(sock, curve->server_public);
    }
    if (zsock_connect(sock, "%s", endpoint) < 0) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "cannot connect to %s: %s", endpoint,
                       zmq_strerror(zmq_errno()));
        zsock_destroy(&sock);
        return NULL;
    }
    return sock;
}

int osbq_bus_send_ready(zsock_t *dealer, const char *worker_id, const struct osbq_bus_ready *ready)
{
    char slots[16], count[24], due[24], lease[16];
    (void)snprintf(slots, sizeof slots, "%u", ready->free_slots);
    (void)snprintf(count, sizeof count, "%" PRIu64, ready->received);
    (void)snprintf(due, sizeof due, "%" PRId64, ready->due_ms > 0 ? ready->due_ms : 0);
    (void)snprintf(lease, sizeof lease, "%u", ready->handover_lease_ms);
    bool ended = ready->ended != NULL && ready->ended[0] != '\0';
    /* Each optional frame goes only when it or a frame after it has something to say: an
     * older gateway reads the shorter forms, and a quiet READY stays small. */
    size_t frames = ready->handover_lease_ms > 0 ? 7 : ended ? 6 : ready->due_ms > 0 ? 5 : 4;
    /* One 's' per frame sent: zsock_send reads only the arguments its picture names. */
    static const char picture[] = "sssssss";
    return zsock_send(dealer, picture + (sizeof picture - 1 - frames), OSBQ_BUS_READY, worker_id,
                      slots, count, due, ended ? ready->ended : "", lease);
}

int64_t osbq_bus_ready_due(const char *frame)
{
    if (frame == NULL || *frame < '1' || *frame > '9')
        return 0;
    char *end = NULL;
    errno = 0;
    long long due = strtoll(frame, &end, 10);
    return errno == 0 && *end == '\0' ? (int64_t)due : 0;
}

unsigned osbq_bus_ready_credit(unsigned free_slots, uint64_t sent, uint64_t received)
{
    uint64_t on_the_way = sent > received ? sent - received : 0;
    return on_the_way >= free_slots ? 0 : free_slots - (unsigned)on_the_way;
}

/* More free slots than any worker has: a READY announcing them is garbled. */
#define READY_MAX_SLOTS 1000000

/* A count frame's value: true when the frame is one or more ASCII digits and nothing else, at
 * most max. strtoul alone would also take an empty frame, leading spaces, a sign (a negative
 * number wraps around), the digits before a NUL byte, and saturate a number that does not fit. */
static bool frame_count(zframe_t *frame, uint64_t max, uint64_t *value)
{
    const unsigned char *data = zframe_data(frame);
    size_t len = zframe_size(frame);
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (data[i] < '0' || data[i] > '9')
            return false;
        unsigned digit = (unsigned)(data[i] - '0');
        if (v > (max - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    *value = v;
    return len > 0;
}

/* The frame holds a NUL byte: as a C string, the text before it would not be the frame. */
static bool frame_has_nul(zframe_t *frame)
{
    return zframe_size(frame) > 0 && memchr(zframe_data(frame), '\0', zframe_size(frame)) != NULL;
}

/* A due frame's time (osbq_bus_ready_due); 0 when absent, or holding a NUL byte. */
static int64_t frame_due(zframe_t *frame)
{
    if (frame == NULL || frame_has_nul(frame))
        return 0;
    char *text = zframe_strdup(frame);
    int64_t due = osbq_bus_ready_due(text);
    free(text);
    return due;
}

/* Reads a READY's frames after its command into *out; false when they do not read (the frames
 * taken are freed). */
static bool decode_ready(zmsg_t *msg, struct osbq_bus_ready_received *out)
{
    char *id = zmsg_popstr(msg);
    zframe_t *slots = zmsg_pop(msg);
    zframe_t *received = zmsg_pop(msg); /* NULL from an older worker */
    zframe_t *due = zmsg_pop(msg);      /* NULL without a wait recorded, or older */
    char *ended = zmsg_popstr(msg);     /* NULL without a job ended, or older */
    zframe_t *lease = zmsg_pop(msg);    /* NULL from a worker that takes no handed jobs */
    uint64_t slots_value = 0, received_value = 0, lease_value = 0;
    bool ok = id != NULL && slots != NULL && frame_count(slots, READY_MAX_SLOTS, &slots_value) &&
              (received == NULL || frame_count(received, UINT64_MAX, &received_value)) &&
              (lease == NULL || (frame_count(lease, OSBQ_BUS_HANDOVER_LEASE_MAX_MS, &lease_value) &&
                                 lease_value > 0));
    if (ok) {
        *out = (struct osbq_bus_ready_received){
            .worker_id = id,
            .free_slots = (unsigned)slots_value,
            .counts_received = received != NULL,
            .received = received_value,
            .due_ms = frame_due(due),
            .ended = ended,
            .handover_lease_ms = (unsigned)lease_value,
        };
        id = NULL;
        ended = NULL;
    }
    free(id);
    zframe_destroy(&slots);
    zframe_destroy(&received);
    zframe_destroy(&due);
    free(ended);
    zframe_destroy(&lease);
    return ok;
}

/* Decodes what follows the command frame, out->command, of a message from a worker. */
static void decode_from_worker(zmsg_t *msg, struct osbq_bus_msg *out)
{
    if (zframe_streq(out->command, OSBQ_BUS_READY))
        out->kind = decode_ready(msg, &out->ready) ? OSBQ_BUS_MSG_READY : OSBQ_BUS_MSG_MALFORMED;
    else if (zframe_streq(out->command, OSBQ_BUS_REJECT)) {
        out->kind = OSBQ_BUS_MSG_REJECT;
        out->job = zmsg_pop(msg);
    }
}

/* Reads a handed JOB's frames after the job into *out; false when they do not read (the frames
 * taken are freed). */
static bool decode_handed(zmsg_t *msg, struct osbq_bus_handed *out)
{
    zframe_t *until = zmsg_pop(msg);
    zframe_t *tenant = zmsg_pop(msg);
    uint64_t until_value = 0;
    bool ok = until != NULL && tenant != NULL && frame_count(until, INT64_MAX, &until_value) &&
              until_value > 0 && !frame_has_nul(tenant);
    if (ok)
        *out = (struct osbq_bus_handed){
            .present = true,
            .until_ms = (int64_t)until_value,
            .tenant = zframe_strdup(tenant),
        };
    zframe_destroy(&until);
    zframe_destroy(&tenant);
    return ok;
}

/* Decodes a HALT's operation id frame into out. */
static void decode_halt(zmsg_t *msg, struct osbq_bus_msg *out)
{
    out->kind = OSBQ_BUS_MSG_MALFORMED;
    if (out->frames != 2)
        return;
    zframe_t *id = zmsg_pop(msg);
    size_t len = id != NULL ? zframe_size(id) : 0;
    if (len > 0 && len <= OSBQ_BUS_OPERATION_ID_MAX && !frame_has_nul(id)) {
        out->operation_id = zframe_strdup(id);
        if (out->operation_id != NULL)
            out->kind = OSBQ_BUS_MSG_HALT;
    }
    zframe_destroy(&id);
}

/* Decodes what follows the command frame, out->command, of a message from a gateway: a JOB's
 * job frame, and a handed one's two frames after it; a HALT's operation id. */
static void decode_from_gateway(zmsg_t *msg, struct osbq_bus_msg *out)
{
    if (zframe_streq(out->command, OSBQ_BUS_HALT)) {
        decode_halt(msg, out);
        return;
    }
    if (!zframe_streq(out->command, OSBQ_BUS_JOB))
        return;
    bool handed = out->frames == 4;
    out->kind = OSBQ_BUS_MSG_MALFORMED;
    if (out->frames != 2 && !handed)
        return;
    zframe_t *job = zmsg_pop(msg);
    if (handed && !decode_handed(msg, &out->handed)) {
        zframe_destroy(&job);
        return;
    }
    out->kind = OSBQ_BUS_MSG_JOB;
    out->job = job;
}

void osbq_bus_decode(zmsg_t **msgp, enum osbq_bus_side side, struct osbq_bus_msg *out)
{
    zmsg_t *msg = *msgp;
    *msgp = NULL;
    *out = (struct osbq_bus_msg){.kind = OSBQ_BUS_MSG_UNKNOWN, .source_fd = -1};
    if (side == OSBQ_BUS_AT_GATEWAY)
        out->identity = zmsg_pop(msg);
    out->frames = zmsg_size(msg);
    out->command = zmsg_pop(msg);
    if (out->command != NULL && (side == OSBQ_BUS_AT_WORKER || out->identity != NULL)) {
        if (side == OSBQ_BUS_AT_GATEWAY)
            decode_from_worker(msg, out);
        else
            decode_from_gateway(msg, out);
    }
    zmsg_destroy(&msg);
}

/* A gateway's message, read frame by frame as raw ZeroMQ messages, the ones czmq does not hide,
 * for the descriptor of the connection it came on (ZMQ_SRCFD; the identity frame the ROUTER
 * makes up may lack it, the frames received carry it). NULL when none came; *fd -1 when ZeroMQ
 * does not say. */
static zmsg_t *recv_with_source(zsock_t *sock, int *fd)
{
    void *handle = zsock_resolve(sock);
    zmsg_t *msg = NULL;
    bool more = true;
    *fd = -1;
    while (more) {
        zmq_msg_t frame;
        zmq_msg_init(&frame);
        /* The rest of a multipart message has arrived with its first frame. */
        if (zmq_msg_recv(&frame, handle, 0) < 0) {
            zmq_msg_close(&frame);
            break;
        }
        more = zmq_msg_more(&frame) != 0;
        if (*fd < 0)
            *fd = zmq_msg_get(&frame, ZMQ_SRCFD);
        if (msg == NULL)
            msg = zmsg_new();
        if (msg != NULL && zmsg_addmem(msg, zmq_msg_data(&frame), zmq_msg_size(&frame)) != 0)
            zmsg_destroy(&msg);
        zmq_msg_close(&frame);
    }
    return msg;
}

int osbq_bus_recv(zsock_t *sock, enum osbq_bus_side side, struct osbq_bus_msg *out)
{
    int fd = -1;
    zmsg_t *msg = side == OSBQ_BUS_AT_GATEWAY ? recv_with_source(sock, &fd) : zmsg_recv(sock);
    if (msg == NULL)
        return -1;
    osbq_bus_decode(&msg, side, out);
    out->source_fd = fd < 0 ? -1 : fd;
    return 0;
}

void osbq_bus_msg_clear(struct osbq_bus_msg *m)
{
    zframe_destroy(&m->identity);
    zframe_destroy(&m->command);
    zframe_destroy(&m->job);
    free(m->ready.worker_id);
    free(m->ready.ended);
    free(m->handed.tenant);
    free(m->operation_id);
    *m = (struct osbq_bus_msg){.kind = OSBQ_BUS_MSG_UNKNOWN, .source_fd = -1};
}

void osbq_bus_msg_command(const struct osbq_bus_msg *m, char *out, size_t size)
{
    const unsigned char *data = m->command != NULL ? zframe_data(m->command) : NULL;
    size_t len = m->command != NULL ? zframe_size(m->command) : 0;
    size_t n = 0;
    for (; n < len && n + 1 < size; n++)
        out[n] = data[n] < 0x80 && isprint(data[n]) ? (char)data[n] : '?';
    if (size > 0)
        out[n] = '\0';
}

int osbq_bus_send_reject(zsock_t *dealer, const void *job, size_t len)
{
    return zsock_send(dealer, "sb", OSBQ_BUS_REJECT, job, len);
}

/* Sends a JOB, its job frame without a copy (osbq_bus_send_job's contract), then, when until is
 * not NULL, a handed job's two frames. */
static int send_job_message(zsock_t *router, zframe_t *identity, void *job, size_t len,
                            void (*release)(void *data, void *owner), void *owner,
                            const char *until, const char *tenant)
{
    void *sock = zsock_resolve(router);
    /* With ROUTER_MANDATORY an unreachable worker fails the identity frame, before anything
     * is queued: the job is still the caller's. */
    if (zmq_send(sock, zframe_data(identity), zframe_size(identity), ZMQ_SNDMORE) < 0)
        return -1;
    zmq_msg_t body;
    if (zmq_msg_init_data(&body, job, len, release, owner) != 0) {
        /* Out of memory with the identity frame out: end the message so the socket stays
         * usable (the worker ignores a lone JOB frame); the caller keeps the job. */
        (void)zmq_send(sock, OSBQ_BUS_JOB, strlen(OSBQ_BUS_JOB), 0);
        return -1;
    }
    if (zmq_send(sock, OSBQ_BUS_JOB, strlen(OSBQ_BUS_JOB), ZMQ_SNDMORE) < 0 ||
        zmq_msg_send(&body, sock, until != NULL ? ZMQ_SNDMORE : 0) < 0) {
        /* Not sent: closing the message hands the job back through release, so the caller
         * must not touch it; report success to keep ownership rules simple (recovery resends
         * an operation whose job was lost). */
        zmq_msg_close(&body);
        return 0;
    }
    /* The job is ZeroMQ's now. Both frames go whatever the first one's fate, the second ending
     * the message: one lost loses the job as above, and the hand-over's lease running out
     * brings the operation back. */
    if (until != NULL) {
        (void)zmq_send(sock, until, strlen(until), ZMQ_SNDMORE);
        (void)zmq_send(sock, tenant, strlen(tenant), 0);
    }
    return 0;
}

int osbq_bus_send_halt(zsock_t *router, zframe_t *identity, const char *operation_id)
{
    void *sock = zsock_resolve(router);
    /* With ROUTER_MANDATORY an unreachable worker fails the identity frame: nothing queued. */
    if (zmq_send(sock, zframe_data(identity), zframe_size(identity), ZMQ_SNDMORE) < 0)
        return -1;
    if (zmq_send(sock, OSBQ_BUS_HALT, strlen(OSBQ_BUS_HALT), ZMQ_SNDMORE) < 0)
        return -1;
    return zmq_send(sock, operation_id, strlen(operation_id), 0) < 0 ? -1 : 0;
}

int osbq_bus_send_job(zsock_t *router, zframe_t *identity, void *job, size_t len,
                      void (*release)(void *data, void *owner), void *owner)
{
    return send_job_message(router, identity, job, len, release, owner, NULL, NULL);
}

int osbq_bus_send_handed_job(zsock_t *router, zframe_t *identity, void *job, size_t len,
                             void (*release)(void *data, void *owner), void *owner,
                             int64_t until_ms, const char *tenant)
{
    char until[24];
    (void)snprintf(until, sizeof until, "%" PRId64, until_ms);
    return send_job_message(router, identity, job, len, release, owner, until,
                            tenant != NULL ? tenant : "");
}

zsock_t *osbq_bus_monitor_start(zsock_t *sock)
{
    /* One inproc endpoint per monitor ever started: a closed one may linger a moment. */
    static atomic_ulong started;
    char endpoint[64];
    (void)snprintf(endpoint, sizeof endpoint, "inproc://osbq-bus-monitor-%lu",
                   atomic_fetch_add(&started, 1));
    int events = ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                 ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    if (zmq_socket_monitor(zsock_resolve(sock), endpoint, events) != 0)
        return NULL;
    zsock_t *monitor = zsock_new(ZMQ_PAIR);
    if (monitor == NULL || zsock_connect(monitor, "%s", endpoint) < 0) {
        zsock_destroy(&monitor);
        (void)zmq_socket_monitor(zsock_resolve(sock), NULL, 0);
        return NULL;
    }
    zsock_set_linger(monitor, 0);
    zsock_set_rcvtimeo(monitor, 0);
    return monitor;
}

void osbq_bus_monitor_stop(zsock_t *sock, zsock_t **monitorp)
{
    if (*monitorp == NULL)
        return;
    if (sock != NULL)
        (void)zmq_socket_monitor(zsock_resolve(sock), NULL, 0);
    zsock_destroy(monitorp);
}

int osbq_bus_event_read(zsock_t *monitor, struct osbq_bus_event *event)
{
    zmsg_t *msg = zmsg_recv(monitor);
    if (msg == NULL)
        return -1;
    /* The first frame is the event (16 bits) and its value (32 bits), in host order. */
    zframe_t *head = zmsg_first(msg);
    int rc = -1;
    if (head != NULL && zframe_size(head) == 6) {
        uint16_t kind;
        memcpy(&kind, zframe_data(head), sizeof kind);
        memcpy(&event->value, zframe_data(head) + 2, sizeof event->value);
        event->kind = kind;
        rc = 0;
    }
    zmsg_destroy(&msg);
    return rc;
}
