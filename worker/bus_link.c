/* The worker's gateway connections: one DEALER per endpoint the registry lists, READY credits,
 * and the receiving half of the bus protocol (common/bus.h). */
#include "bus_link.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "log.h"

/* Messages taken from one socket per poll round, so one busy gateway cannot starve the others
 * or the timers. */
#define RECEIVE_BATCH 64
/* Bytes of an unknown command word quoted in the log. */
#define COMMAND_QUOTE_MAX 32

/* One gateway. */
struct gateway {
    char *endpoint;  /* its advertised endpoint; owned */
    zsock_t *dealer; /* our socket to it; owned; NULL when connecting failed (logged once,
                      * skipped while the registry keeps listing it) */
    bool ready_owed; /* the last READY could not be sent: send the latest once writable */
    bool listed;     /* scratch for bus_link_sync: still in the registry */
};

struct bus_link {
    const char *worker_id;    /* borrowed: sent with every READY */
    unsigned free_slots;      /* the count last announced; what an owed READY sends */
    struct gateway *gateways; /* the linked gateways, count of them; owned */
    size_t count;             /* gateways in use */
    size_t cap;               /* gateways allocated */
    zmq_pollitem_t *items;    /* poll set scratch, items_cap of them; owned */
    size_t items_cap;         /* items allocated */
};

struct bus_link *bus_link_new(const char *worker_id)
{
    struct bus_link *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->worker_id = worker_id;
    return b;
}

static void gateway_clear(struct gateway *gw)
{
    zsock_destroy(&gw->dealer);
    free(gw->endpoint);
    gw->endpoint = NULL;
}

void bus_link_destroy(struct bus_link **bp)
{
    if (bp == NULL || *bp == NULL)
        return;
    struct bus_link *b = *bp;
    for (size_t i = 0; i < b->count; i++)
        gateway_clear(&b->gateways[i]);
    free(b->gateways);
    free(b->items);
    free(b);
    *bp = NULL;
}

static void send_ready(struct bus_link *b, struct gateway *gw)
{
    /* With ZMQ_IMMEDIATE a gateway still connecting (or gone) refuses the message at once;
     * the poll loop sends it when the socket turns writable. */
    gw->ready_owed = osbq_bus_send_ready(gw->dealer, b->worker_id, b->free_slots) < 0;
    if (gw->ready_owed)
        log_debug("READY to %s not sent yet (%s)", gw->endpoint, zmq_strerror(zmq_errno()));
}

static struct gateway *find(struct bus_link *b, const char *endpoint)
{
    for (size_t i = 0; i < b->count; i++) {
        if (strcmp(b->gateways[i].endpoint, endpoint) == 0)
            return &b->gateways[i];
    }
    return NULL;
}

/* Adds endpoint and connects to it. Returns the new gateway, or NULL when out of memory. */
static struct gateway *add(struct bus_link *b, const char *endpoint)
{
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4;
        struct gateway *grown = realloc(b->gateways, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;
        b->gateways = grown;
        b->cap = cap;
    }
    struct gateway *gw = &b->gateways[b->count];
    memset(gw, 0, sizeof *gw);
    gw->endpoint = strdup(endpoint);
    if (gw->endpoint == NULL)
        return NULL;
    b->count++;
    struct osbq_error err = {0};
    gw->dealer = osbq_bus_worker_connect(endpoint, &err);
    if (gw->dealer == NULL) {
        log_warnx("gateway %s: %s; ignoring it while the registry lists it", endpoint, err.text);
        return gw;
    }
    /* Neither side may ever block the main thread: a gateway that cannot take a message now
     * gets it later (READY) or never (REJECT: the job is in Redis and gets resent). */
    zsock_set_sndtimeo(gw->dealer, 0);
    zsock_set_rcvtimeo(gw->dealer, 0);
    log_info("gateway %s: connecting", endpoint);
    send_ready(b, gw);
    return gw;
}

void bus_link_sync(struct bus_link *b, char *const *endpoints, size_t count, unsigned free_slots)
{
    b->free_slots = free_slots;
    for (size_t i = 0; i < b->count; i++)
        b->gateways[i].listed = false;
    for (size_t i = 0; i < count; i++) {
        struct gateway *gw = find(b, endpoints[i]);
        if (gw == NULL)
            gw = add(b, endpoints[i]);
        if (gw == NULL) {
            log_warnx("gateway %s: out of memory, ignoring it until the next registry read",
                      endpoints[i]);
            continue;
        }
        gw->listed = true;
    }
    size_t kept = 0;
    for (size_t i = 0; i < b->count; i++) {
        struct gateway *gw = &b->gateways[i];
        if (!gw->listed) {
            log_info("gateway %s: gone from the registry, disconnecting", gw->endpoint);
            gateway_clear(gw);
            continue;
        }
        b->gateways[kept++] = *gw;
    }
    b->count = kept;
}

void bus_link_announce(struct bus_link *b, unsigned free_slots)
{
    b->free_slots = free_slots;
    for (size_t i = 0; i < b->count; i++) {
        if (b->gateways[i].dealer != NULL)
            send_ready(b, &b->gateways[i]);
    }
}

size_t bus_link_count(const struct bus_link *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->count; i++)
        n += b->gateways[i].dealer != NULL;
    return n;
}

/* Copies up to COMMAND_QUOTE_MAX bytes of a command word with control and non-ASCII bytes
 * replaced by '?', since it goes to the log. */
static void quote_command(zframe_t *frame, char *out, size_t size)
{
    const unsigned char *data = zframe_data(frame);
    size_t len = zframe_size(frame);
    size_t n = 0;
    for (; n < len && n < COMMAND_QUOTE_MAX && n + 1 < size; n++)
        out[n] = data[n] < 0x80 && isprint(data[n]) ? (char)data[n] : '?';
    out[n] = '\0';
}

/* Takes the messages waiting on gw's socket, up to RECEIVE_BATCH. */
static void receive(struct gateway *gw, bus_link_job_fn on_job, void *ctx)
{
    for (int i = 0; i < RECEIVE_BATCH; i++) {
        zmsg_t *msg = zmsg_recv(gw->dealer);
        if (msg == NULL)
            return;
        zframe_t *command = zmsg_first(msg);
        if (zmsg_size(msg) == 2 && zframe_streq(command, OSBQ_BUS_JOB)) {
            zframe_t *job = zmsg_next(msg);
            on_job(ctx, gw->dealer, gw->endpoint, zframe_data(job), zframe_size(job));
        } else {
            char quoted[COMMAND_QUOTE_MAX + 1];
            quote_command(command, quoted, sizeof quoted);
            log_warnx("gateway %s: unknown message \"%s\" (%zu frames), ignoring", gw->endpoint,
                      quoted, zmsg_size(msg));
        }
        zmsg_destroy(&msg);
    }
}

int bus_link_poll(struct bus_link *b, zmq_pollitem_t *extra, size_t nextra, long timeout_ms,
                  bus_link_job_fn on_job, void *ctx)
{
    size_t need = nextra + b->count;
    if (need > b->items_cap) {
        zmq_pollitem_t *grown = realloc(b->items, need * sizeof *grown);
        if (grown == NULL) {
            errno = ENOMEM;
            return -1;
        }
        b->items = grown;
        b->items_cap = need;
    }
    memcpy(b->items, extra, nextra * sizeof *extra);
    /* Gateways without a socket are left out, in the same order in both loops. */
    size_t n = nextra;
    for (size_t i = 0; i < b->count; i++) {
        struct gateway *gw = &b->gateways[i];
        if (gw->dealer == NULL)
            continue;
        b->items[n] = (zmq_pollitem_t){
            .socket = zsock_resolve(gw->dealer),
            .events = (short)(ZMQ_POLLIN | (gw->ready_owed ? ZMQ_POLLOUT : 0)),
        };
        n++;
    }
    int rc = zmq_poll(b->items, (int)n, timeout_ms);
    if (rc < 0)
        return zmq_errno() == EINTR ? 0 : -1;
    for (size_t k = 0; k < nextra; k++)
        extra[k].revents = b->items[k].revents;
    size_t k = nextra;
    for (size_t i = 0; i < b->count; i++) {
        struct gateway *gw = &b->gateways[i];
        if (gw->dealer == NULL)
            continue;
        short revents = b->items[k++].revents;
        if ((revents & ZMQ_POLLOUT) && gw->ready_owed)
            send_ready(b, gw);
        if (revents & ZMQ_POLLIN)
            receive(gw, on_job, ctx);
    }
    return 0;
}
