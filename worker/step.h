/* One step of an operation, from its claim to its record: the plan's backend run while the
 * lease is kept alive, and what it reported recorded (the outcome, or the wait for its next
 * step); or the operation given back (released) when the step passes its deadline or the
 * worker stops before it is done. A step knows its pool (runner.c) only through struct
 * step_pool: what the pool lends it, and the hooks through which it reports back. */
#ifndef OSBQ_WORKER_STEP_H
#define OSBQ_WORKER_STEP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "catalog.h"
#include "config.h"
#include "job.h"
#include "secrets.h"
#include "store.h"
#include "worker_metrics.h"

struct step;
struct exec_watch;

/* Steps that went on elsewhere (detached, BACKEND_DETACHED): a list of them (sys/queue.h). */
TAILQ_HEAD(step_list, step);

/* What the steps of one pool share: what the pool lends them, the lock and state they share
 * with it, and its hooks. The pool owns it and fills it before its first step; steps borrow it. */
struct step_pool {
    const struct osbq_config *cfg;        /* borrowed: lease_ms and the namespace */
    const struct osbq_catalog *catalog;   /* borrowed: plans by id */
    struct osbq_store *store;             /* borrowed, shared by every thread */
    const char *worker_id;                /* borrowed: recorded in each claimed operation */
    const struct worker_metrics *metrics; /* borrowed, or NULL: what is counted */
    const struct osbq_secrets *secrets;   /* borrowed, or NULL: bind results and resume states
                                           * stored in plaintext, jobs' sealed values not
                                           * opened; set before the first step */
    struct exec_watch *watch;             /* the exec programs' loop, handed to every call */

    pthread_mutex_t lock;      /* the pool's lock: guards the fields below, each step's give-up
                                * state, and whatever else of the pool's it chooses */
    pthread_cond_t wake;       /* broadcast when the pool is cancelled or a step gives up:
                                * sleeping backends and retries stop (CLOCK_MONOTONIC) */
    bool cancelled;            /* backends must stop */
    bool exiting;              /* the process exits: even backends ignoring cancelled() return */
    unsigned given_up;         /* steps whose operation was given up while their backend still
                                * runs (the pool takes each off once its step_run returns) */
    unsigned detached;         /* detached steps not recorded yet: held by the pool, by no thread */
    struct step_list going_on; /* of those, the ones still going on */
    struct step_list ended;    /* of those, the ones ended, to be recorded (step_take_ended) */

    /* The hooks. A step gave its operation up (lock not held): the pool's main thread may be
     * waiting for nothing held. */
    void (*gave_up)(struct step_pool *pool);
    /* A wait was recorded for a job that came through origin: its next step is due at due_ms
     * (epoch). Lock not held. */
    void (*waiting)(struct step_pool *pool, unsigned origin, int64_t due_ms);
    /* A detached step's backend ended it: it is in pool->ended, for one of the pool's threads
     * to record. Lock held. */
    void (*detached_ended)(struct step_pool *pool);
};

/* Under pool->lock: when st runs operation_id, gives it up as halted by a delete (a gateway's
 * HALT, docs/decisions/0051): its backend is told to stop, and the step records the operation's
 * end once it returned. True when it did; the caller then calls pool->gave_up once it let go
 * of the lock. */
bool step_halt_locked(struct step *st, const char *operation_id);

/* step_halt_locked for the first step of list that runs operation_id. */
bool step_list_halt_locked(struct step_list *list, const char *operation_id);

/* What step_run did with its step. */
enum step_fate {
    STEP_RECORDED, /* ended and recorded (or dropped before its claim): free it */
    STEP_GAVE_UP,  /* ended, its operation given up: free it and take it off pool->given_up */
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

/* Claims and runs st on the calling thread, then records it (or gives its operation back);
 * *running (the caller's, guarded by pool->lock) holds st while its backend runs, for
 * step_release_stuck. Returns what became of it. */
enum step_fate step_run(struct step *st, struct step **running);

/* With pool->lock held: the oldest detached step whose backend ended it, taken off
 * pool->ended, or NULL. */
struct step *step_take_ended(struct step_pool *pool);

/* Records a detached step its backend ended (step_take_ended), on the calling thread. Returns
 * true when its operation was given up (counted in pool->given_up until the caller takes it
 * off). */
bool step_record_ended(struct step *st);

/* For the pool at exit, on its own thread, with pool->lock held (dropped meanwhile: the caller
 * re-reads what it walks): gives st's operation back unless it is given up or being recorded
 * already, as when the backend notices the cancellation. For a backend stuck in a long call. */
void step_release_stuck(struct step *st);

/* The same for each detached step whose backend has not ended it. */
void step_release_detached(struct step_pool *pool);

#endif
