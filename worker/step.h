/* One step of an operation, from its claim to its record: the plan's backend run while the
 * lease is kept alive, and what it reported recorded (the outcome, or the wait for its next
 * step); or the operation given back (released) when the step passes its deadline or the
 * worker stops before it is done. A step knows its runner only through struct step_pool
 * (step_pool.h): what the runner lends it, the verbs of the state they share, and the hooks
 * through which it reports back. */
#ifndef OSBQ_WORKER_STEP_H
#define OSBQ_WORKER_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include "job.h"
#include "step_pool.h"

struct step;

/* What step_run did with its step. */
enum step_fate {
    STEP_RECORDED, /* ended and recorded (or dropped before its claim): free it */
    STEP_GAVE_UP,  /* ended, its operation given up: free it and step_pool_forget it */
    STEP_DETACHED, /* goes on elsewhere: it is in pool->going_on, the pool's now */
};

/* A job's hand-over: the gateway's begin script claimed its operation for this worker
 * (docs/decisions/0042-handover.md), so its step runs without a claim of its own. */
struct step_handover {
    int64_t until_ms; /* the hand-over's lease end, epoch ms; 0: a plain job, claimed first */
    char *tenant;     /* owned: the operation's tenant as recorded, or NULL */
};

/* Frees what handed owns and zeroes it; accepts NULL. */
void step_handover_clear(struct step_handover *handed);

/* A step of job (taken over: *job is zeroed) that came through origin (runner_submit), for
 * pool's threads; handed, when not NULL, is its hand-over (taken over too: zeroed). NULL when
 * out of memory (job and handed untouched). Caller owns the result (step_destroy), unless
 * step_run detaches it. */
struct step *step_new(struct step_pool *pool, struct osbq_job *job, unsigned origin,
                      struct step_handover *handed);

/* Frees st (waiting for a renewal of its lease still out); sets *stp to NULL; accepts NULL. */
void step_destroy(struct step **stp);

/* The step's job and origin; borrowed, valid until st goes. */
const struct osbq_job *step_job(const struct step *st);
unsigned step_origin(const struct step *st);

/* Claims and runs st on the calling thread, then records it (or gives its operation back).
 * Returns what became of it. */
enum step_fate step_run(struct step *st);

/* Records a detached step its backend ended (step_pool_take_ended), on the calling thread.
 * Returns true when its operation was given up (counted in the pool's given up until the caller
 * takes it off: step_pool_forget). */
bool step_record_ended(struct step *st);

/* At exit, on the calling thread: gives back the operations of the steps whose backend has not
 * returned (a backend stuck in a long call) nor given theirs up, as a backend noticing the
 * cancellation does. */
void step_release_all(struct step_pool *pool);

#endif
