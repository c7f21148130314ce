/* The job bus: ZeroMQ sockets between gateways and workers (czmq). */
#ifndef OSBQ_BUS_H
#define OSBQ_BUS_H

#include <czmq.h>
#include <stdbool.h>
#include <stdint.h>

#include "bus_curve.h"
#include "error.h"

/* Stops czmq from installing its own SIGINT/SIGTERM handlers: osbq's binaries wait for
 * signals themselves. Call before any other bus function. */
void osbq_bus_init(void);

/* Creates the gateway's ROUTER socket and binds it to endpoint (OSBQ_BUS_BIND). Workers
 * connect to it. With curve keys (osbq_bus_curve_on) it is a CurveZMQ server that asks the ZAP
 * handler (osbq_bus_auth_start, started before) about each client; otherwise plain. Caller owns
 * the socket (zsock_destroy); NULL with err when the bind fails (e.g. the port is in use). The
 * socket belongs to the thread that uses it. */
zsock_t *osbq_bus_gateway_bind(const char *endpoint, const struct osbq_bus_curve *curve,
                               struct osbq_error *err);

/* The bus protocol: multipart messages whose first frame is a command word.
 *   worker -> gateway  READY  <worker id> <free slots, decimal> <jobs received, decimal>
 *                            on every change, and every OSBQ_BUS_HEARTBEAT_MS as liveness; the
 *                            last frame counts the JOBs this connection has delivered so far,
 *                            so the gateway can subtract the jobs still on their way from the
 *                            free slots (osbq_bus_ready_credit); a READY without it (an older
 *                            worker) is taken as it is, and an older gateway ignores the frame
 *                     READY  <worker id> <free slots> <jobs received> <due, epoch ms>
 *                            the same, with the earliest due time of the waits the worker
 *                            recorded for jobs of this gateway since its last READY here: the
 *                            gateway's recovery loop wakes then to send the next step, instead
 *                            of learning of it at its next full scan (an older gateway ignores
 *                            the frame, an older worker never sends it); "0" when only the
 *                            next frame has something to say
 *                     READY  <worker id> <free slots> <jobs received> <due> <ended>
 *                            the same, with the operation ids (space-separated) of this
 *                            gateway's jobs whose step ended since the last READY here: the
 *                            gateway counts each tenant's running steps (fairness); "" when
 *                            only the next frame has something to say
 *                     READY  <worker id> <free slots> <jobs received> <due> <ended>
 *                            <hand-over lease, ms, decimal>
 *                            the same, from a worker that takes handed jobs: a job handed to it
 *                            (claimed for it by the gateway's begin) is its own for this long,
 *                            1..OSBQ_BUS_HANDOVER_LEASE_MAX_MS; any other value makes the READY
 *                            MALFORMED. An older gateway ignores the frame; a gateway hands
 *                            nothing to a worker that did not say it (an older worker)
 *   gateway -> worker  JOB    <encoded job (proto/job.h)>
 *                     JOB    <encoded job> <handed until, epoch ms, decimal> <tenant>
 *                            a handed job: the gateway's begin claimed the operation for this
 *                            worker, under a lease that ends at `handed until` (> 0); tenant is
 *                            the operation's tenant as the begin recorded it ("" when none).
 *                            Sent only to a worker whose READY said a hand-over lease: an older
 *                            worker takes a JOB of other than one frame as MALFORMED
 *   gateway -> worker  HALT   <operation id>
 *                            a delete halted this operation (docs/decisions/0051): the worker
 *                            stops the step it runs for it now rather than at its next lease
 *                            renewal, and records its end; an operation it does not run is
 *                            ignored. An older worker logs the command as unknown and ignores it
 *   worker -> gateway  REJECT <encoded job>    no free slot after all: the gateway sends it on
 * A gateway forgets a worker silent for OSBQ_BUS_WORKER_EXPIRY_MS. */
#define OSBQ_BUS_READY  "READY"
#define OSBQ_BUS_JOB    "JOB"
#define OSBQ_BUS_REJECT "REJECT"
#define OSBQ_BUS_HALT   "HALT"
/* The longest operation id a HALT carries (the gateways make 32 hex digits). */
#define OSBQ_BUS_OPERATION_ID_MAX 64
#define OSBQ_BUS_HEARTBEAT_MS     1000
#define OSBQ_BUS_WORKER_EXPIRY_MS 3500
/* The longest hand-over lease a READY may say: the longest OSBQ_LEASE_MS. */
#define OSBQ_BUS_HANDOVER_LEASE_MAX_MS 3600000
/* How long a gateway's registry entry lives without renewal, and how often it renews. */
#define OSBQ_BUS_REGISTRY_TTL_MS   10000
#define OSBQ_BUS_REGISTRY_RENEW_MS 2000

/* Creates a worker's DEALER socket connected to one gateway's endpoint; with curve keys a
 * CurveZMQ client that accepts only the gateways' public key. Caller owns it. */
zsock_t *osbq_bus_worker_connect(const char *endpoint, const struct osbq_bus_curve *curve,
                                 struct osbq_error *err);

/* The connection events of a socket, for logging why a peer cannot be reached (ZeroMQ itself
 * retries silently): connected, disconnected, handshake succeeded or failed. */
struct osbq_bus_event {
    unsigned kind;  /* ZMQ_EVENT_* */
    uint32_t value; /* its value: errno, ZMQ_PROTOCOL_ERROR_* or the ZAP status code */
};

/* Starts watching sock's connection events; returns the socket to read them from (owned by
 * the caller, read with osbq_bus_event_read, stopped with osbq_bus_monitor_stop), or NULL when
 * the monitor cannot start (the bus works without it). */
zsock_t *osbq_bus_monitor_start(zsock_t *sock);

/* Stops watching sock and destroys *monitorp; accepts *monitorp NULL. Call before sock goes. */
void osbq_bus_monitor_stop(zsock_t *sock, zsock_t **monitorp);

/* Reads one waiting event without blocking. 0, or -1 when none is waiting. */
int osbq_bus_event_read(zsock_t *monitor, struct osbq_bus_event *event);

/* What a worker's READY says to one gateway. */
struct osbq_bus_ready {
    unsigned free_slots; /* slots free now */
    uint64_t received;   /* JOBs this socket delivered so far */
    int64_t due_ms;      /* the earliest due time (epoch ms) of the waits recorded for this
                          * gateway's jobs since the last READY to it; 0: none */
    const char *ended;   /* the operation ids, separated by spaces, of this gateway's jobs whose
                          * step ended (or never started) since the last READY to it; NULL or
                          * "": none */
    unsigned handover_lease_ms; /* the worker takes handed jobs, each its own for this long (at
                                 * most OSBQ_BUS_HANDOVER_LEASE_MAX_MS); 0: do not say it */
};

/* Worker side: sends READY (its frames: bus.h's protocol above), its last frames only when
 * they have something to say. 0 or -1. */
int osbq_bus_send_ready(zsock_t *dealer, const char *worker_id, const struct osbq_bus_ready *ready);

/* Gateway side: the due frame of a READY (NULL when absent) as epoch ms; 0 when absent or not
 * a positive decimal number (a malformed frame is ignored, as a READY without it). */
int64_t osbq_bus_ready_due(const char *frame);

/* Gateway side: the jobs a worker can take now, from a READY that announced free_slots after
 * receiving `received` jobs of the `sent` this gateway has sent it: the jobs sent since are
 * on their way and will take slots. A received count above sent (the counts of another
 * connection) is taken as nothing on the way. */
unsigned osbq_bus_ready_credit(unsigned free_slots, uint64_t sent, uint64_t received);

/* Worker side: hands a job back (REJECT). 0 or -1. */
int osbq_bus_send_reject(zsock_t *dealer, const void *job, size_t len);

/* The receiving half of the protocol above. A gateway reads what workers send (on its ROUTER,
 * each message after the sender's identity), a worker what gateways send: each side takes the
 * other side's commands only. */
enum osbq_bus_side {
    OSBQ_BUS_AT_GATEWAY, /* READY and REJECT, after the sender's identity */
    OSBQ_BUS_AT_WORKER,  /* JOB, HALT */
};

/* What a received message is. */
enum osbq_bus_kind {
    OSBQ_BUS_MSG_READY,     /* a worker's free slots: osbq_bus_msg.ready */
    OSBQ_BUS_MSG_REJECT,    /* a job a worker handed back: osbq_bus_msg.job */
    OSBQ_BUS_MSG_JOB,       /* a job to run: osbq_bus_msg.job */
    OSBQ_BUS_MSG_HALT,      /* an operation a delete halted: osbq_bus_msg.operation_id */
    OSBQ_BUS_MSG_MALFORMED, /* a command this side takes, with frames it cannot read */
    OSBQ_BUS_MSG_UNKNOWN,   /* a command this side does not take, or no command at all */
};

/* A READY as a gateway reads it. */
struct osbq_bus_ready_received {
    char *worker_id;            /* the worker's own id; owned (the receiver may take it) */
    unsigned free_slots;        /* the free slots it announced */
    bool counts_received;       /* it said how many JOBs it received (an older worker does not) */
    uint64_t received;          /* that count; 0 without it */
    int64_t due_ms;             /* its due frame (osbq_bus_ready_due); 0: none, or not a due time */
    char *ended;                /* its ended frame: operation ids separated by spaces; owned; NULL:
                                 * none */
    unsigned handover_lease_ms; /* its hand-over lease frame; 0: not said (an older worker):
                                 * hand it nothing */
};

/* A JOB's hand-over: the gateway's begin claimed the operation for the receiving worker. */
struct osbq_bus_handed {
    bool present;     /* the job was handed to the receiving worker at begin */
    int64_t until_ms; /* the hand-over's lease end, epoch ms */
    char *tenant;     /* owned: the operation's tenant as recorded ("" when none) */
};

/* One received message, decoded: its kind says which of the fields below it fills. */
struct osbq_bus_msg {
    enum osbq_bus_kind kind;              /* what it is */
    zframe_t *identity;                   /* at a gateway: the sender's ROUTER identity; owned;
                                           * NULL at a worker, or when missing */
    zframe_t *command;                    /* the command frame as received, for a log line
                                           * (osbq_bus_msg_command); owned; NULL: none */
    size_t frames;                        /* frames after the identity, the command's included */
    struct osbq_bus_ready_received ready; /* READY's fields */
    zframe_t *job;                        /* JOB and REJECT: the encoded job; owned; NULL in a
                                           * REJECT without one (the worker is full all the
                                           * same) */
    struct osbq_bus_handed handed;        /* JOB: the hand-over, when the gateway handed it
                                           * (present) */
    char *operation_id;                   /* HALT: the operation (1..OSBQ_BUS_OPERATION_ID_MAX
                                           * bytes, no NUL); owned */
    int source_fd;                        /* at a gateway: the descriptor of the connection it
                                           * came on (ZeroMQ's ZMQ_SRCFD), which the ROUTER's
                                           * socket monitor names when it ends; -1: unknown */
};

/* Receives one message from sock, waiting as long as its receive timeout says (the gateway's
 * ROUTER and the workers' DEALERs: not at all), and decodes it for side into *out, which the
 * caller clears (osbq_bus_msg_clear); at a gateway with the descriptor of its connection. 0, or
 * -1 when no message came. */
int osbq_bus_recv(zsock_t *sock, enum osbq_bus_side side, struct osbq_bus_msg *out);

/* Decodes a message received on side's socket into *out (every field set); takes *msgp and sets
 * it to NULL. No I/O: a READY whose worker id or free slots are missing, whose counts are not
 * decimal numbers, that announces over a million free slots, or whose hand-over lease is not
 * 1..OSBQ_BUS_HANDOVER_LEASE_MAX_MS is MALFORMED, as is a JOB with other than one or three
 * frames after its command, or a handed one whose until is no positive decimal number that
 * fits int64_t or whose tenant holds a NUL byte, as is a HALT with other than one frame after its
 * command or an operation id that is empty, longer than OSBQ_BUS_OPERATION_ID_MAX or holds a
 * NUL byte; frames after those a READY or a REJECT has are ignored. */
void osbq_bus_decode(zmsg_t **msgp, enum osbq_bus_side side, struct osbq_bus_msg *out);

/* Frees what *m owns and empties it; accepts a message already cleared. */
void osbq_bus_msg_clear(struct osbq_bus_msg *m);

/* m's command word for a log line: at most size - 1 bytes, each control or non-ASCII byte
 * replaced by '?' (it comes from the network); "" when it had none. */
void osbq_bus_msg_command(const struct osbq_bus_msg *m, char *out, size_t size);

/* Gateway side: sends HALT operation_id to the worker whose ROUTER identity is given. 0, or -1
 * when the worker is unreachable. */
int osbq_bus_send_halt(zsock_t *router, zframe_t *identity, const char *operation_id);

/* Gateway side: sends a JOB to the worker whose ROUTER identity is given, without copying the
 * job: on success ZeroMQ owns owner and calls release(data, owner) once the bytes are written,
 * from its own I/O thread. On -1 (the worker is unreachable) nothing was sent and the caller
 * still owns owner. */
int osbq_bus_send_job(zsock_t *router, zframe_t *identity, void *job, size_t len,
                      void (*release)(void *data, void *owner), void *owner);

/* Gateway side: sends a handed JOB (the operation claimed for that worker at begin), the job
 * frame as osbq_bus_send_job sends it, with the same contract, followed by the hand-over's lease
 * end until_ms (epoch ms, > 0) and the operation's tenant as recorded (borrowed; NULL or "":
 * none). Only for a worker whose READY said a hand-over lease. */
int osbq_bus_send_handed_job(zsock_t *router, zframe_t *identity, void *job, size_t len,
                             void (*release)(void *data, void *owner), void *owner,
                             int64_t until_ms, const char *tenant);

#endif
