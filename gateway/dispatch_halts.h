/* The dispatcher's halts: a gateway that accepted a delete halting a creation
 * (docs/decisions/0051) tells the worker running the creation's step at once, over the bus
 * (HALT), rather than leave it to hear at its next lease renewal. HTTP threads post a halt
 * (dispatch_halt); the dispatcher's thread, which owns the ROUTER socket and the workers' table,
 * sends them. A halt that cannot be sent (the worker left, the gateway stops) is dropped: the
 * lease renewal tells the worker all the same. */
#ifndef OSBQ_GATEWAY_DISPATCH_HALTS_H
#define OSBQ_GATEWAY_DISPATCH_HALTS_H

#include <czmq.h>

#include "dispatch_workers.h"
#include "mailbox.h"

/* Halts posted, not sent yet: a mailbox the dispatcher's thread polls. */
struct dispatch_halts {
    struct osbq_mailbox mailbox;
};

/* 0, or -1 when its mailbox cannot be made. */
int dispatch_halts_init(struct dispatch_halts *h);

/* Frees the halts not sent and the mailbox. */
void dispatch_halts_clear(struct dispatch_halts *h);

/* The descriptor the dispatcher's thread polls (readable: call dispatch_halts_send). */
int dispatch_halts_fd(const struct dispatch_halts *h);

/* From any thread: asks for HALT operation_id to go to worker_id. 0, or -1 when out of memory,
 * the ids are too long, or the mailbox is closed. */
int dispatch_halts_post(struct dispatch_halts *h, const char *worker_id, const char *operation_id);

/* The dispatcher's thread: sends every halt posted to its worker (found by its own id in
 * workers) on router, dropping those whose worker is not known (any more). */
void dispatch_halts_send(struct dispatch_halts *h, zsock_t *router,
                         struct dispatch_workers *workers);

#endif
