/* The store as a worker uses it: claim an operation, report its progress, record its outcome
 * or give it back. */
#ifndef OSBQ_STORE_OPERATIONS_H
#define OSBQ_STORE_OPERATIONS_H

#include "store.h"

/* What a claim tells the worker about the operation it now holds: where an operation that
 * goes through steps stands. */
struct osbq_claim {
    char *resume;           /* owned JSON text the previous step saved, or NULL on a first step */
    int64_t started_ms;     /* epoch ms of the operation's first claim (its first step) */
    int64_t accepted_ms;    /* epoch ms the gateway accepted the operation, or 0 when unknown */
    uint32_t steps;         /* steps that ended in progress so far: 0 on a first step */
    int64_t due_ms;         /* epoch ms the step was due at (a poll), or 0 */
    char *tenant;           /* owned: whose operation it is, or NULL when none was recorded */
    char *halted_operation; /* owned: a delete's, the creation it halted (docs/decisions/0051),
                             * or NULL */
};

/* Frees the claim's resume text and zeroes it; accepts a zeroed claim. */
void osbq_claim_clear(struct osbq_claim *claim);

/* Claims an operation before running it: queued -> running, a waiting operation that is due
 * (its next step, a poll) -> running, or a running operation whose lease expired taken over.
 * Records worker_id, attempt and a lease until now + lease_ms; a poll's claim is not counted
 * as an attempt. Returns 1 when claimed (run it; *out filled, clear it with
 * osbq_claim_clear), 0 when it is not this worker's to run (finished, held by a live lease, or
 * waiting and not yet due: drop the job), -1 with err when Redis failed. out may be NULL. */
int osbq_store_claim(struct osbq_store *store, const char *operation_id, const char *worker_id,
                     uint32_t attempt, int64_t lease_ms, struct osbq_claim *out,
                     struct osbq_error *err);

/* Records the end of a step a delete halted (docs/decisions/0051), once the step stopped: the
 * operation ends failed (finish.lua names the delete) and the delete becomes due. Only while
 * the operation is halting and this worker's. Returns 2 when it did, 0 when the operation is not
 * halting or not this worker's (nothing written), -1 with err. */
int osbq_store_halted_end(struct osbq_store *store, const char *operation_id, const char *worker_id,
                          struct osbq_error *err);

/* Records progress (a user-facing description, e.g. "Provisioning (40%)", or NULL to keep the
 * current one) and renews the lease. Returns 1, 2 when a delete halted the operation (stop
 * working on it, then record its end: docs/decisions/0051), 0 when the operation is no longer
 * this worker's (stop working on it, record nothing), -1 with err. */
int osbq_store_progress(struct osbq_store *store, const char *operation_id, const char *worker_id,
                        const char *description, int64_t lease_ms, struct osbq_error *err);

/* osbq_store_progress as a call, for a caller that does not wait for it (osbq_store_call_start);
 * the lease runs from when the script runs. NULL with err. */
struct osbq_store_call *osbq_store_progress_call(struct osbq_store *store, const char *operation_id,
                                                 const char *worker_id, const char *description,
                                                 int64_t lease_ms, struct osbq_error *err);

/* The answer of a progress call: as osbq_store_progress. */
int osbq_store_progress_result(struct osbq_store_call *call, struct osbq_error *err);

/* The outcome of an operation, or of one step of it, as a backend reports it. Strings are
 * borrowed. */
struct osbq_op_result {
    bool succeeded;            /* true: succeeded; false: failed */
    const char *description;   /* user-facing text for last_operation; NULL for a default */
    const char *dashboard_url; /* provision/update: the instance's dashboard, or NULL */
    const char *metadata;      /* provision/update: JSON object {labels, attributes}, or NULL */
    const char *binding;       /* bind: JSON object with credentials, endpoints, syslog_drain_url,
                                * route_service_url, volume_mounts and metadata (expires_at,
                                * renew_before), or NULL */
    bool instance_usable;      /* failed update or deprovision: is the instance still usable */
    bool update_repeatable;    /* failed update: may the same update succeed later */
    bool in_progress;          /* the step ended but the operation did not: description is its
                                * progress text, the next step is due after poll_after_ms with
                                * resume; succeeded and the fields above are ignored */
    int64_t poll_after_ms;     /* in progress: how long until the next step, >= 0 */
    const char *resume;        /* in progress: compact JSON text the next step resumes from,
                                * or NULL for none */
};

/* Records the outcome atomically: the operation's state and description, the instance's new
 * state and attributes (applied on success), the lock freed, synchronous waiters woken, the
 * operation kept for OSBQ_RETENTION_S. Returns 1, 2 when a delete had halted the operation (it
 * is recorded failed whatever result says, docs/decisions/0051), 0 when the operation is no
 * longer this
 * worker's (the result is dropped: another attempt owns it), -1 with err. */
int osbq_store_finish(struct osbq_store *store, const char *operation_id, const char *worker_id,
                      const struct osbq_op_result *result, struct osbq_error *err);

/* Records that a step ended in progress (result->in_progress; its description and resume):
 * the operation waits, held by nobody, until due_ms (epoch ms), when the recovery loop sends
 * it to a worker for its next step. Wakes no synchronous waiter. Returns 1, 2 when a delete
 * halted the operation (nothing written: record its end with osbq_store_finish), 0 when the
 * operation is no longer this worker's (dropped), -1 with err. */
int osbq_store_wait(struct osbq_store *store, const char *operation_id, const char *worker_id,
                    const struct osbq_op_result *in_progress, int64_t due_ms,
                    struct osbq_error *err);

/* Gives a running operation back without an outcome (the worker is stopping, or the operation
 * passed its deadline): it is queued again and due at once, so the recovery loop resends it.
 * Returns 1, 0 when it is not this worker's, -1 with err. */
int osbq_store_release(struct osbq_store *store, const char *operation_id, const char *worker_id,
                       struct osbq_error *err);

#endif
