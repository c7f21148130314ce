/* The dispatcher: the thread that owns the gateway's ROUTER socket, tracks the workers' free
 * slots, and sends each job to a worker with room (bus/bus.h has the protocol). */
#ifndef OSBQ_GATEWAY_DISPATCH_H
#define OSBQ_GATEWAY_DISPATCH_H

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dispatch_lanes.h"
#include "error.h"
#include "metrics.h"

struct dispatch;

/* Starts the dispatcher thread on router (which it takes over: *routerp is set to NULL).
 * max_queued bounds the jobs held while no worker has room. waits, when not NULL, is a histogram
 * family (borrowed) labelled lane and platform, in that order, that gets each job's time in the
 * queue, in seconds, under its lane's name and the platform label it was submitted with. NULL
 * with err on failure. */
struct dispatch *dispatch_start(zsock_t **routerp, unsigned max_queued, struct osbq_metric *waits,
                                struct osbq_error *err);

/* Stops the thread and frees everything, queued jobs included (they are in Redis); sets *dp to
 * NULL; accepts NULL. */
void dispatch_stop(struct dispatch **dp);

/* Whose a job is. */
struct dispatch_owner {
    const char *tenant;   /* its tenant's key (its queue in a lane); NULL or "" when unknown */
    unsigned weight;      /* its platform's weight; 0 counts as 1 */
    const char *platform; /* the platform label its wait is counted under (tenant_platform_label:
                           * a name of OSBQ_PLATFORMS, "default" or "unknown", so the label's
                           * values stay few); NULL counts as "unknown" */
};

/* Queues an encoded job of owner in lane for the next worker with a free slot (the lanes take
 * turns, and a lane's tenants take rounds by weight: dispatch_lanes_pop); copies it and the
 * owner's strings. A job whose operation is already queued here, in any lane, is dropped (a
 * resend of a job that only waits for room). Safe from any thread. Returns 0, or -1 when the
 * queue is full or the dispatcher is stopping (the job stays recorded in Redis). */
int dispatch_submit(struct dispatch *d, const char *operation_id, enum dispatch_lane lane,
                    const struct dispatch_owner *owner, const void *job, size_t len);

/* Tells worker_id that a delete halted operation_id, whose step it runs (HALT,
 * gateway/dispatch_halts.h); safe from any thread. 0, or -1 when it cannot be posted (the
 * worker then hears at its next lease renewal). */
int dispatch_halt(struct dispatch *d, const char *worker_id, const char *operation_id);

/* A free slot of one worker, taken before an operation's begin script runs so that the script
 * claims the operation for that worker: the job then needs no claim call of its own (a
 * hand-over, docs/decisions/0042-handover.md). */
struct dispatch_handover;

/* When no job waits in any lane and a live worker that takes handed jobs (its READY says a
 * hand-over lease) has a slot free: takes that slot and returns it, else NULL (the job goes the
 * plain way). Safe from any thread. */
struct dispatch_handover *dispatch_handover_take(struct dispatch *d);

/* The id of the worker h's slot is on, and the end of the hand-over's lease (epoch ms,
 * osbq_store_now_ms when the slot was taken plus the lease its worker's READY said): what the
 * begin script records and the worker gets with the job. */
const char *dispatch_handover_worker(const struct dispatch_handover *h);
int64_t dispatch_handover_until(const struct dispatch_handover *h);

/* Gives h's slot back (its operation was not begun), frees it and sets *hp to NULL; accepts
 * NULL and *hp NULL. Safe from any thread. */
void dispatch_handover_cancel(struct dispatch_handover **hp);

/* Sends the job of an operation begun as handed (*hp) straight to its worker, with the
 * hand-over's lease end and the operation's tenant as recorded in owner (what the worker's
 * claim would have read); its time from here to the worker is counted under lane, as
 * dispatch_submit's. Copies the job, takes *hp (set to NULL). Safe from any thread. -1 when the
 * dispatcher is stopping or out of memory: the operation's lease runs out and the recovery
 * loop resends it, as it does when the worker left meanwhile. */
int dispatch_submit_handed(struct dispatch *d, struct dispatch_handover **hp,
                           const char *operation_id, enum dispatch_lane lane,
                           const struct dispatch_owner *owner, const void *job, size_t len);

/* How a request's wait for a slot (dispatch_wait_slot) ended. */
enum dispatch_slot_end {
    DISPATCH_SLOT_TAKEN,    /* a worker's slot was taken for it: begin it handed */
    DISPATCH_SLOT_NONE,     /* no slot to hand over: its wait ran out, or its turn came with room
                             * only on workers that take no handed jobs; begin it plain */
    DISPATCH_SLOT_STOPPING, /* the gateway stops (dispatch_drain_slots): begin nothing */
};

/* Called once per dispatch_wait_slot, with the dispatcher's lock held (so keep it short and
 * call nothing of the dispatcher's): slot is the slot taken (DISPATCH_SLOT_TAKEN, then ctx owns
 * it: begin handed, or dispatch_handover_cancel), else NULL. */
typedef void (*dispatch_slot_fn)(void *ctx, struct dispatch_handover *slot,
                                 enum dispatch_slot_end end);

/* A synchronous request that found no slot to hand its operation over to waits for one in lane,
 * among the jobs, before it is begun (docs/decisions/0045-wait-for-a-slot-first.md): its turn
 * comes as a job's would (the lanes' rules, owner's tenant), and then a slot of the roomiest
 * worker that takes handed jobs is taken for it. fn(ctx, ...) says how the wait ended: at its
 * turn, at deadline_ms (osbq_clock_ms) at the latest, or when the gateway stops. operation_id
 * is the operation the request proposes (unique). Counted in the queue's bound like a job.
 * Safe from any thread. Returns 0, or -1 (fn is not called) when the queue is full or slots are
 * no longer given (dispatch_drain_slots): begin at once, plain. */
int dispatch_wait_slot(struct dispatch *d, const char *operation_id, enum dispatch_lane lane,
                       const struct dispatch_owner *owner, int64_t deadline_ms, dispatch_slot_fn fn,
                       void *ctx);

/* Ends every wait for a slot with DISPATCH_SLOT_STOPPING, now or (those still on their way to
 * the dispatcher's thread) when its thread takes them, and refuses new ones: the gateway
 * stops, and no request may stay suspended. Once it returns no fn is running. Safe from any
 * thread. */
void dispatch_drain_slots(struct dispatch *d);

/* Who hears what the dispatcher learns from the workers (the recovery loop). Both are called on
 * the dispatcher's thread and must not call the dispatcher. */
struct dispatch_listener {
    /* The due time (epoch ms) a worker's READY carries: the earliest next step of the waits it
     * recorded for jobs this gateway sent it. */
    void (*due)(void *ctx, int64_t due_ms);
    /* The worker worker_id went (why: "disconnected", "silent" or "unreachable"; NULL: a job
     * handed to a worker already said gone, which was not sent); the jobs this gateway sent it
     * and it did not end were those of operation_ids (separated by spaces; NULL: none). All
     * borrowed for the call. */
    void (*gone)(void *ctx, const char *worker_id, const char *operation_ids, const char *why);
    void *ctx;
};

/* Sets who hears them (NULL: nobody). Once it returns, the previous listener is not being called
 * and will not be: it may be freed. Safe from any thread. */
void dispatch_listen(struct dispatch *d, const struct dispatch_listener *listener);

/* Figures for logs and /metrics: jobs waiting, workers known, their free slots. */
struct dispatch_stats {
    size_t queued;          /* jobs waiting for a worker, in every lane */
    size_t queued_due;      /* of those, the recovery loop's (DISPATCH_LANE_DUE) */
    size_t workers;         /* live workers */
    size_t free_slots;      /* their free slots, as last announced, less those taken for
                             * hand-overs not sent yet */
    size_t tenants_waiting; /* tenants with jobs waiting, counted once per lane they wait in */
};
void dispatch_get_stats(struct dispatch *d, struct dispatch_stats *out);

/* Waits until enough(the figures) says so (checked under the dispatcher's lock: it must be
 * quick) or the monotonic deadline_ms passed, woken each time the dispatcher's thread publishes
 * new figures (a turn). Returns whether enough said so. */
bool dispatch_wait_stats(struct dispatch *d, bool (*enough)(const struct dispatch_stats *stats),
                         int64_t deadline_ms);

/* The longest any tenant's oldest job has waited in lane, in seconds (0: none waits). Walks the
 * lane's tenants: for a metrics scrape. */
double dispatch_longest_wait(struct dispatch *d, enum dispatch_lane lane);

#endif
