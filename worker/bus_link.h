/* The worker's side of the bus: one DEALER socket per live gateway, kept in step with the
 * registry, announcing free slots and receiving jobs. Used by the main thread only, since
 * ZeroMQ sockets belong to one thread. */
#ifndef OSBQ_WORKER_BUS_LINK_H
#define OSBQ_WORKER_BUS_LINK_H

#include <czmq.h>
#include <stddef.h>

#include "bus.h"

struct bus_link;

/* Called for each JOB message: dealer is the socket it came on (borrowed: reply REJECT on it),
 * endpoint the gateway's, origin the connection's number (never 0; bus_link_note_due takes it
 * back), job and len the encoded job (borrowed for the call only), handed its hand-over
 * (handed->present: the gateway's begin claimed its operation for this worker; borrowed). */
typedef void (*bus_link_job_fn)(void *ctx, zsock_t *dealer, const char *endpoint, unsigned origin,
                                const void *job, size_t len, const struct osbq_bus_handed *handed);

/* Called for each HALT message: a gateway's word that a delete halted operation_id (borrowed
 * for the call only), docs/decisions/0051. */
typedef void (*bus_link_halt_fn)(void *ctx, const char *endpoint, const char *operation_id);

/* What bus_link_poll calls for the messages it receives; on_halt may be NULL (then a HALT is
 * logged and ignored). */
struct bus_link_handlers {
    bus_link_job_fn on_job;
    bus_link_halt_fn on_halt;
};

/* A link with no gateway yet. worker_id and curve (the keys every gateway socket uses; plain
 * when it holds none) are borrowed and must outlive the link; handover_lease_ms is what every
 * READY says a hand-over to this worker lasts (its OSBQ_LEASE_MS: it takes handed jobs, and
 * bus_link_job_fn gets their hand-over). Caller owns the result (bus_link_destroy); NULL when
 * out of memory. */
struct bus_link *bus_link_new(const char *worker_id, const struct osbq_bus_curve *curve,
                              unsigned handover_lease_ms);

/* Closes every socket and frees the link; sets *bp to NULL; accepts NULL. */
void bus_link_destroy(struct bus_link **bp);

/* Makes the gateways exactly endpoints[0..count): connects to new endpoints (and announces
 * free_slots to them as soon as they accept it) and closes the sockets of endpoints no longer
 * listed. An endpoint that cannot be connected to is logged once and skipped while it stays
 * listed. endpoints is borrowed. */
void bus_link_sync(struct bus_link *b, char *const *endpoints, size_t count, unsigned free_slots);

/* Sends READY free_slots to every gateway. A gateway that cannot take it now (still
 * connecting, or gone) gets the latest count as soon as its socket accepts a message. */
void bus_link_announce(struct bus_link *b, unsigned free_slots);

/* Notes that a job which came through connection origin (as given to bus_link_job_fn) left its
 * operation waiting until due_ms (epoch ms): the next READY to that gateway carries the earliest
 * such time, so its recovery loop sends the next step when it is due. origin 0, or a connection
 * since closed, notes it for every gateway. */
void bus_link_note_due(struct bus_link *b, unsigned origin, int64_t due_ms);

/* Notes that jobs which came through connection origin ended (ended: their operation ids,
 * separated by spaces; copied): the next READY to that gateway lists them. Dropped when that
 * connection is gone (its gateway forgets the worker's jobs with the connection). */
void bus_link_note_ended(struct bus_link *b, unsigned origin, const char *ended);

/* Sends READY (the count last announced) to every gateway holding a due time or ended jobs not
 * sent yet: for what was noted while the free slots did not change (a detached step ending). */
void bus_link_send_notes(struct bus_link *b);

/* Gateways currently linked (sockets open). */
size_t bus_link_count(const struct bus_link *b);

/* Waits up to timeout_ms for a message on any gateway socket or an event on one of the
 * nextra items of extra (file descriptors, whose revents it sets), then receives every waiting
 * message, calling handlers->on_job for each JOB and on_halt for each HALT, and logging and
 * ignoring anything else. Returns 0, or -1 when polling itself failed (errno set; EINTR counts
 * as 0). */
int bus_link_poll(struct bus_link *b, zmq_pollitem_t *extra, size_t nextra, long timeout_ms,
                  const struct bus_link_handlers *handlers, void *ctx);

#endif
