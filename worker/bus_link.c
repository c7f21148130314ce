/* The worker's gateway connections: one DEALER per endpoint the registry lists, READY credits,
 * and the jobs the gateways send, taken from each in turn (osbq_bus_recv decodes them). */
#include "bus_link.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "clock.h"
#include "log.h"
#include "owned.h"

/* Messages taken from each socket per poll round, so one busy gateway cannot starve the others
 * or the timers. */
#define RECEIVE_BATCH 64
/* Bytes of an unknown command word quoted in the log. */
#define COMMAND_QUOTE_MAX 32
/* A gateway whose handshakes keep failing is logged at most this often (unless the reason
 * changes). */
#define HANDSHAKE_LOG_INTERVAL_MS 30000
/* After a failed handshake the socket is replaced this much later: ZeroMQ gives up on a
 * connection whose handshake failed for a protocol or authentication reason, and a worker whose
 * certificate is added to the gateway's directory must get in without a restart. */
#define REDIAL_MS 2000

/* One gateway. */
struct gateway {
    char *endpoint;         /* its advertised endpoint; owned */
    zsock_t *dealer;        /* our socket to it; owned; NULL when connecting failed (logged once,
                             * skipped while the registry keeps listing it) */
    zsock_t *monitor;       /* the dealer's connection events; owned; NULL when unavailable */
    bool ready_owed;        /* the last READY could not be sent: send the latest once writable */
    bool readable;          /* this poll round: its socket may hold messages still unread */
    bool listed;            /* scratch for bus_link_sync: still in the registry */
    bool connecting;        /* TCP connected, handshake outcome not seen yet */
    unsigned failures;      /* handshakes failed since the last success or log line */
    int64_t failure_logged; /* CLOCK_MONOTONIC ms of the last failure logged; 0: none yet */
    struct osbq_bus_event logged; /* the failure last logged */
    int64_t redial_at;            /* CLOCK_MONOTONIC ms to open a new socket; 0: not due */
    uint64_t received;            /* JOBs delivered by dealer (a new socket starts at 0) */
    uint64_t announced_received;  /* received when free_slots was last counted: what READY says */
    unsigned origin;              /* this socket's number, handed out with its jobs; 0: none */
    int64_t due_ms;               /* earliest due time (epoch ms) the next READY carries; 0: none */
    char *ended;                  /* owned: ended jobs' ids the next READY carries, or NULL */
    size_t ended_len;             /* bytes in ended */
};

struct bus_link {
    const char *worker_id;              /* borrowed: sent with every READY */
    const struct osbq_bus_curve *curve; /* borrowed: the keys of every socket */
    unsigned free_slots;                /* the count last announced; what an owed READY sends */
    unsigned handover_lease_ms;         /* what every READY says a hand-over here lasts */
    struct gateway *gateways;           /* the linked gateways, count of them; owned */
    size_t count;                       /* gateways in use */
    size_t cap;                         /* gateways allocated */
    zmq_pollitem_t *items;              /* poll set scratch, items_cap of them; owned */
    size_t items_cap;                   /* items allocated */
    unsigned last_origin;               /* the number the newest socket was given */
    size_t first_turn;                  /* the gateway read first in the next poll round */
};

struct bus_link *bus_link_new(const char *worker_id, const struct osbq_bus_curve *curve,
                              unsigned handover_lease_ms)
{
    struct bus_link *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->worker_id = worker_id;
    b->curve = curve;
    b->handover_lease_ms = handover_lease_ms;
    return b;
}

/* Forgets the ended jobs gw was to be told of (sent, or of a socket gone). */
static void forget_ended(struct gateway *gw)
{
    free(gw->ended);
    gw->ended = NULL;
    gw->ended_len = 0;
}

static void gateway_clear(struct gateway *gw)
{
    forget_ended(gw);
    osbq_bus_monitor_stop(gw->dealer, &gw->monitor);
    zsock_destroy(&gw->dealer);
    free(gw->endpoint);
    gw->endpoint = NULL;
}

void bus_link_destroy(struct bus_link **bp)
{
    OSBQ_OWNED_OR_RETURN(struct bus_link, b, bp);
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
    const struct osbq_bus_ready ready = {.free_slots = b->free_slots,
                                         .received = gw->announced_received,
                                         .due_ms = gw->due_ms,
                                         .ended = gw->ended,
                                         .handover_lease_ms = b->handover_lease_ms};
    gw->ready_owed = osbq_bus_send_ready(gw->dealer, b->worker_id, &ready) < 0;
    if (gw->ready_owed) {
        log_debug("READY to %s not sent yet (%s)", gw->endpoint, zmq_strerror(zmq_errno()));
        return;
    }
    gw->due_ms = 0;
    forget_ended(gw);
}

static struct gateway *find(struct bus_link *b, const char *endpoint)
{
    for (size_t i = 0; i < b->count; i++) {
        if (strcmp(b->gateways[i].endpoint, endpoint) == 0)
            return &b->gateways[i];
    }
    return NULL;
}

/* Opens gw's socket (and its monitor) and owes the gateway a READY. */
static void dial(struct bus_link *b, struct gateway *gw)
{
    struct osbq_error err = {0};
    gw->connecting = false;
    gw->redial_at = 0;
    /* The gateway knows a new socket as a new worker, whose count starts again. */
    gw->received = 0;
    gw->announced_received = 0;
    /* Jobs of the old socket: its gateway forgets them with that connection's worker. */
    forget_ended(gw);
    /* Jobs of the old socket noting a due time reach every gateway (bus_link_note_due). */
    gw->origin = ++b->last_origin;
    if (gw->origin == 0)
        gw->origin = ++b->last_origin;
    gw->dealer = osbq_bus_worker_connect(gw->endpoint, b->curve, &err);
    if (gw->dealer == NULL) {
        log_warnx("gateway %s: %s; ignoring it while the registry lists it", gw->endpoint,
                  err.text);
        return;
    }
    /* Neither side may ever block the main thread: a gateway that cannot take a message now
     * gets it later (READY) or never (REJECT: the job is in Redis and gets resent). */
    zsock_set_sndtimeo(gw->dealer, 0);
    zsock_set_rcvtimeo(gw->dealer, 0);
    gw->monitor = osbq_bus_monitor_start(gw->dealer);
    if (gw->monitor == NULL)
        log_warnx("gateway %s: cannot watch the connection; handshake failures go unlogged",
                  gw->endpoint);
    send_ready(b, gw);
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
    log_info("gateway %s: connecting", endpoint);
    dial(b, gw);
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
        /* An owed READY sent later must not count jobs received after free_slots was: their
         * slots are taken already. */
        b->gateways[i].announced_received = b->gateways[i].received;
        if (b->gateways[i].dealer != NULL)
            send_ready(b, &b->gateways[i]);
    }
}

static void note_due(struct gateway *gw, int64_t due_ms)
{
    if (gw->due_ms == 0 || due_ms < gw->due_ms)
        gw->due_ms = due_ms;
}

void bus_link_note_due(struct bus_link *b, unsigned origin, int64_t due_ms)
{
    if (due_ms <= 0)
        return;
    for (size_t i = 0; origin != 0 && i < b->count; i++)
        if (b->gateways[i].origin == origin) {
            note_due(&b->gateways[i], due_ms);
            return;
        }
    for (size_t i = 0; i < b->count; i++)
        note_due(&b->gateways[i], due_ms);
}

void bus_link_note_ended(struct bus_link *b, unsigned origin, const char *ended)
{
    size_t len = strlen(ended);
    for (size_t i = 0; origin != 0 && len > 0 && i < b->count; i++) {
        struct gateway *gw = &b->gateways[i];
        if (gw->origin != origin)
            continue;
        char *grown = realloc(gw->ended, gw->ended_len + len + 2);
        if (grown == NULL)
            return; /* the gateway forgets these jobs with the worker */
        gw->ended = grown;
        if (gw->ended_len > 0)
            gw->ended[gw->ended_len++] = ' ';
        memcpy(gw->ended + gw->ended_len, ended, len + 1);
        gw->ended_len += len;
        return;
    }
}

void bus_link_send_notes(struct bus_link *b)
{
    for (size_t i = 0; i < b->count; i++) {
        struct gateway *gw = &b->gateways[i];
        if ((gw->due_ms != 0 || gw->ended != NULL) && gw->dealer != NULL && !gw->ready_owed)
            send_ready(b, gw);
    }
}

size_t bus_link_count(const struct bus_link *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->count; i++)
        n += b->gateways[i].dealer != NULL;
    return n;
}

/* Takes one message from gw's socket, if it holds one. Returns whether it did. */
static bool receive_one(struct gateway *gw, const struct bus_link_handlers *handlers, void *ctx)
{
    struct osbq_bus_msg m;
    if (osbq_bus_recv(gw->dealer, OSBQ_BUS_AT_WORKER, &m) < 0)
        return false;
    if (m.kind == OSBQ_BUS_MSG_JOB) {
        gw->received++;
        handlers->on_job(ctx, gw->dealer, gw->endpoint, gw->origin, zframe_data(m.job),
                         zframe_size(m.job), &m.handed);
    } else if (m.kind == OSBQ_BUS_MSG_HALT && handlers->on_halt != NULL) {
        handlers->on_halt(ctx, gw->endpoint, m.operation_id);
    } else {
        char quoted[COMMAND_QUOTE_MAX + 1];
        osbq_bus_msg_command(&m, quoted, sizeof quoted);
        log_warnx("gateway %s: unknown message \"%s\" (%zu frames), ignoring", gw->endpoint, quoted,
                  m.frames);
    }
    osbq_bus_msg_clear(&m);
    return true;
}

/* Takes the jobs of the readable gateways one from each in turn, starting with another gateway
 * each round: every gateway is told of the same free slots, so when several send jobs for them
 * at once, each gets its share of the slots (reading one gateway's socket to the end first
 * gave the gateway first in the list nearly every slot, and jobs waiting in the others waited
 * for it: docs/reliability.md, several gateways). */
static void receive_in_turn(struct bus_link *b, const struct bus_link_handlers *handlers, void *ctx)
{
    if (b->count == 0)
        return;
    size_t first = b->first_turn++ % b->count;
    for (int taken = 0; taken < RECEIVE_BATCH; taken++) {
        bool any = false;
        for (size_t j = 0; j < b->count; j++) {
            struct gateway *gw = &b->gateways[(first + j) % b->count];
            if (gw->readable && gw->dealer != NULL)
                gw->readable = receive_one(gw, handlers, ctx);
            any = any || gw->readable;
        }
        if (!any)
            return;
    }
}

/* Why a handshake failed, in an operator's words. */
static void describe_failure(const struct bus_link *b, const struct osbq_bus_event *ev, char *out,
                             size_t size)
{
    /* A CurveZMQ server that cannot read our HELLO (another server key) just closes. */
    const char *closed_hint = osbq_bus_curve_on(b->curve)
                                  ? "; check that the gateway's server key is the one in "
                                    "OSBQ_BUS_CURVE_SERVER_CERT"
                                  : "";
    if (ev->kind == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        (void)snprintf(out, size,
                       "the gateway refused this worker's key (ZAP status %u): its public "
                       "certificate is not in the gateway's OSBQ_BUS_CURVE_CLIENTS_DIR",
                       (unsigned)ev->value);
    else if (ev->kind == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
             ev->value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
        (void)snprintf(out, size,
                       "security mechanism mismatch: CurveZMQ is configured on one side only "
                       "(OSBQ_BUS_CURVE_*)");
    else if (ev->kind == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
        (void)snprintf(out, size, "protocol error 0x%x", (unsigned)ev->value);
    else if (ev->kind == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
        (void)snprintf(out, size, "connection lost during the handshake (%s)%s",
                       zmq_strerror((int)ev->value), closed_hint);
    else
        (void)snprintf(out, size, "the gateway closed the connection during the handshake%s",
                       closed_hint);
}

static void handshake_failed(struct bus_link *b, struct gateway *gw,
                             const struct osbq_bus_event *ev)
{
    gw->connecting = false;
    gw->failures++;
    int64_t now = osbq_clock_ms();
    if (gw->redial_at == 0)
        gw->redial_at = now + REDIAL_MS;
    /* A refusal or a mechanism mismatch says more than a lost connection: logged at once. */
    bool telling = ev->kind == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
                   ev->kind == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    bool news = telling && (gw->logged.kind != ev->kind || gw->logged.value != ev->value);
    if (gw->failure_logged != 0 && now - gw->failure_logged < HANDSHAKE_LOG_INTERVAL_MS && !news)
        return;
    gw->logged = *ev;
    char why[200];
    describe_failure(b, ev, why, sizeof why);
    log_warnx("handshake with %s failed: %s. No job comes from this gateway until a handshake "
              "succeeds; retrying (%u failed since the last such line)",
              gw->endpoint, why, gw->failures);
    gw->failures = 0;
    gw->failure_logged = now;
}

/* Reads gw's connection events: failed handshakes are logged (rate-limited), a success after
 * them too. */
static void watch(struct bus_link *b, struct gateway *gw)
{
    struct osbq_bus_event ev;
    for (int i = 0; i < RECEIVE_BATCH && osbq_bus_event_read(gw->monitor, &ev) == 0; i++) {
        switch (ev.kind) {
        case ZMQ_EVENT_CONNECTED:
            gw->connecting = true;
            break;
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
            gw->connecting = false;
            if (gw->failure_logged != 0)
                log_info("handshake with %s succeeded", gw->endpoint);
            gw->failure_logged = 0;
            gw->failures = 0;
            gw->redial_at = 0;
            memset(&gw->logged, 0, sizeof gw->logged);
            break;
        case ZMQ_EVENT_DISCONNECTED:
            if (gw->connecting)
                handshake_failed(b, gw, &ev);
            break;
        default:
            handshake_failed(b, gw, &ev);
            break;
        }
    }
}

int bus_link_poll(struct bus_link *b, zmq_pollitem_t *extra, size_t nextra, long timeout_ms,
                  const struct bus_link_handlers *handlers, void *ctx)
{
    int64_t now = osbq_clock_ms();
    for (size_t i = 0; i < b->count; i++) {
        struct gateway *gw = &b->gateways[i];
        /* Events still unread may tell the handshake succeeded meanwhile: read them first. */
        if (gw->dealer != NULL && gw->redial_at != 0 && now >= gw->redial_at && gw->monitor != NULL)
            watch(b, gw);
        if (gw->dealer != NULL && gw->redial_at != 0 && now >= gw->redial_at) {
            osbq_bus_monitor_stop(gw->dealer, &gw->monitor);
            zsock_destroy(&gw->dealer);
            dial(b, gw);
        }
    }
    size_t need = nextra + 2 * b->count;
    if (need > b->items_cap) {
        zmq_pollitem_t *grown = realloc(b->items, need * sizeof *grown);
        if (grown == NULL) {
            errno = ENOMEM;
            return -1;
        }
        b->items = grown;
        b->items_cap = need;
    }
    if (nextra > 0)
        memcpy(b->items, extra, nextra * sizeof *extra);
    /* Gateways without a socket are left out, in the same order in both loops. */
    size_t n = nextra;
    for (size_t i = 0; i < b->count; i++) {
        struct gateway *gw = &b->gateways[i];
        if (gw->dealer == NULL)
            continue;
        b->items[n++] = (zmq_pollitem_t){
            .socket = zsock_resolve(gw->dealer),
            .events = (short)(ZMQ_POLLIN | (gw->ready_owed ? ZMQ_POLLOUT : 0)),
        };
        if (gw->monitor != NULL)
            b->items[n++] =
                (zmq_pollitem_t){.socket = zsock_resolve(gw->monitor), .events = ZMQ_POLLIN};
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
        if (gw->monitor != NULL && (b->items[k++].revents & ZMQ_POLLIN))
            watch(b, gw);
        if ((revents & ZMQ_POLLOUT) && gw->ready_owed)
            send_ready(b, gw);
        gw->readable = (revents & ZMQ_POLLIN) != 0;
    }
    receive_in_turn(b, handlers, ctx);
    return 0;
}
