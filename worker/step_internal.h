/* A step's insides, shared by step.c (its run: claim, backend, record) and step_host.c (what its
 * backend call reaches of it). Nothing outside worker/step*.c includes it. */
#ifndef OSBQ_WORKER_STEP_INTERNAL_H
#define OSBQ_WORKER_STEP_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "lease.h"
#include "sealed_job.h"
#include "step.h"
#include "store_operations.h"

/* Why a step gave its operation up; also its job_end result. */
#define GAVE_UP_DEADLINE   "past_deadline" /* the backend ran past the plan's deadline */
#define GAVE_UP_SHUTDOWN   "released"      /* the worker stopped (or the backend did) first */
#define GAVE_UP_LEASE_LOST "lease_lost"    /* the operation is no longer this worker's */
#define GAVE_UP_HALTED     "halted" /* a delete halted it: its end is recorded, not its outcome */

/* One job from its claim to its recording. On the heap: a detached step (BACKEND_DETACHED)
 * outlives the runner thread that started it, and is recorded by whichever runner thread takes
 * it once its backend ends it. Used by one thread at a time, but for the fields under the
 * pool's lock, which only step_pool.c reads and sets. */
struct step {
    struct step_pool *pool;      /* its pool */
    struct osbq_job job;         /* owned */
    unsigned origin;             /* the connection it came through (runner_submit) */
    struct lease lease;          /* the lease on its operation, once claimed */
    struct backend_call call;    /* what its backend gets; the callbacks are this file's */
    struct sealed_job opened;    /* the job's sealed values opened: its fields point here */
    json_t *parameters;          /* the parsed parameters the call borrows */
    json_t *resume;              /* the parsed state the previous step saved, the call borrows */
    int64_t deadline_s;          /* the plan's deadline for the kind (step_deadline_s) */
    int64_t deadline_ms;         /* monotonic time the backend is abandoned at */
    int64_t max_polling_s;       /* the plan's maximum_polling_duration (step_max_polling_s) */
    struct osbq_claim claim;     /* what the claim returned (the saved state of a poll step) */
    struct step_handover handed; /* its hand-over (until_ms 0: none) */
    int64_t lease_spent_ms;      /* how much of its lease passed before the step started: a
                                  * hand-over's lease ran from the begin script */
    int64_t started_ms;          /* monotonic time of the claim */
    double backend_started;      /* osbq_clock_seconds() when the backend was called */
    /* step_pool.c's, under the pool's lock: */
    const char *gave_up;    /* GAVE_UP_*: this attempt no longer holds the operation and records
                             * nothing; NULL while it does */
    bool recording;         /* the backend returned an outcome this thread records: nobody gives
                             * the operation up any more */
    bool detached;          /* its runner thread returned: in the pool's going_on or ended */
    bool ended;             /* the backend ended it (detached_end) */
    int end_rc;             /* what the backend ended it with */
    TAILQ_ENTRY(step) link; /* in the pool's running, going_on or ended */
};

/* Gives job's operation back (osbq_store_release: queued again and due at once, so the
 * recovery loop resends it to a worker), counts it released, and logs one job_released line; a
 * deadline's is a warning that names it. The line names the job's ids itself: it may be written
 * from a thread whose log context is another's (step_release_all). */
void step_release_op(struct step_pool *pool, const struct osbq_job *job, const char *why,
                     int64_t deadline_s);

/* Gives the operation up when verdict says the lease is lost, or that a delete halted it
 * (end_step then records its end), and counts it so. */
void step_heed(struct step *st, enum lease_verdict verdict);

/* Sets call's callbacks (progress, cancelled, wait, keep_alive, exiting, detached_end) to the
 * step host's: call is the `call` of its struct step. */
void step_host_attach(struct backend_call *call);

#endif
