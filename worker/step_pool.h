/* The step pool: what the steps of one runner share with it, and the one lock over their shared
 * state. step_pool.c alone takes that lock; the runner and the steps go through its verbs (give
 * up, running and returned, detach and end, take ended, halt, cancel, release at exit).
 *
 * Lock order: a caller may hold the runner's own lock when it calls a verb; the pool never calls
 * back (its hooks) with its lock held, so nothing waits the other way round. */
#ifndef OSBQ_WORKER_STEP_POOL_H
#define OSBQ_WORKER_STEP_POOL_H

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

/* Steps in one state (sys/queue.h): running, going on detached, or ended detached. */
TAILQ_HEAD(step_list, step);

/* What the steps of one pool share. The runner fills the lent fields and hooks before its first
 * step; the rest is step_pool.c's, under its lock. */
struct step_pool {
    const struct osbq_config *cfg;        /* borrowed: lease_ms and the namespace */
    const struct osbq_catalog *catalog;   /* borrowed: plans by id */
    struct osbq_store *store;             /* borrowed, shared by every thread */
    const char *worker_id;                /* borrowed: recorded in each claimed operation */
    const struct worker_metrics *metrics; /* borrowed, or NULL: what is counted */
    const struct osbq_secrets *secrets;   /* borrowed, or NULL: bind results and resume states
                                           * stored in plaintext, jobs' sealed values not
                                           * opened (step_pool_set_secrets) */
    struct exec_watch *watch;             /* the exec programs' loop, handed to every call */

    /* The hooks, each called without the pool's lock. A step gave its operation up: the
     * runner's main thread may be waiting for nothing held. */
    void (*gave_up)(struct step_pool *pool);
    /* A wait was recorded for a job that came through origin: its next step is due at due_ms
     * (epoch). */
    void (*waiting)(struct step_pool *pool, unsigned origin, int64_t due_ms);
    /* A detached step's backend ended it: one of the runner's threads takes it
     * (step_pool_take_ended) and records it. */
    void (*detached_ended)(struct step_pool *pool);

    /* step_pool.c's alone: */
    pthread_mutex_t lock;      /* guards what follows and each step's give-up state */
    pthread_cond_t wake;       /* broadcast when the pool is cancelled or a step gives up:
                                * sleeping backends and retries stop (CLOCK_MONOTONIC) */
    bool cancelled;            /* backends must stop, even those ignoring it: the process exits */
    unsigned given_up;         /* steps whose operation was given up while their backend still
                                * runs (step_pool_forget takes each off) */
    unsigned detached;         /* detached steps not recorded yet: held by the pool, by no thread */
    struct step_list running;  /* steps whose backend runs on a runner thread */
    struct step_list going_on; /* detached steps still going on */
    struct step_list ended;    /* detached steps ended, to be recorded (step_pool_take_ended) */
};

/* ---- for the runner ---- */

/* The lock, its condition and the lists. 0, or -1. */
int step_pool_init(struct step_pool *pool);
void step_pool_fini(struct step_pool *pool);

void step_pool_set_secrets(struct step_pool *pool, const struct osbq_secrets *secrets);

/* Tells every backend to stop (the process exits): running ones through their callbacks,
 * sleeping ones and record retries at once. */
void step_pool_cancel(struct step_pool *pool);
bool step_pool_cancelled(struct step_pool *pool);

/* The oldest detached step whose backend ended it, for the calling thread to record
 * (step_record_ended), or NULL. */
struct step *step_pool_take_ended(struct step_pool *pool);

/* Whether detached steps may still end: a closed runner keeps a thread to record them. */
bool step_pool_holds_detached(struct step_pool *pool);

/* Takes off the counts a step whose run returned having given its operation up (gave_up), or
 * a detached step now recorded (detached; gave_up: it gave its operation up). True when no
 * detached step is left. */
bool step_pool_forget(struct step_pool *pool, bool gave_up, bool detached);

/* The steps the runner counts as held by nobody's thread but the pool, and of its steps and
 * those, the ones that gave their operation up. */
void step_pool_counts(struct step_pool *pool, unsigned *detached, unsigned *given_up);

/* Gives up, as halted by a delete (a gateway's HALT, docs/decisions/0051), the running or
 * detached step that runs operation_id: its backend is told to stop, and the step records the
 * operation's end once it returned. True when one did (the gave_up hook was called). */
bool step_pool_halt(struct step_pool *pool, const char *operation_id);

/* At exit: gives up (as stopped) one running or detached step that still holds its operation,
 * its job copied into *copy (zeroed when out of memory) for the caller to release
 * (step_release_all); false when none is left. */
bool step_pool_give_up_one(struct step_pool *pool, struct osbq_job *copy);

/* ---- for a step (step.c, step_host.c, step_record.c) ---- */

/* Marks st as no longer holding its operation, for why (GAVE_UP_*), unless it already is or
 * its outcome is being recorded; counts it and wakes its waits. True when this call did it: the
 * caller then calls the gave_up hook and releases the operation (but for a lost lease). */
bool step_pool_give_up(struct step *st, const char *why);

/* st's backend is about to run on the calling runner thread. */
void step_pool_running(struct step *st);

/* st's backend returned *rc on its runner thread. True when st is detached now (*rc
 * BACKEND_DETACHED, its backend not done): it is the pool's, in going_on. Otherwise *rc is
 * what ended it (a detached step that ended before its thread came back: its end's). */
bool step_pool_returned(struct step *st, int *rc);

/* A detached step's backend ended it with rc (on its own thread): the step goes to ended, for a
 * runner thread, or, before its runner thread came back, to that thread. */
void step_pool_ended(struct step *st, int rc);

/* Before st records what its backend ended it with: gives its operation up when stopped (the
 * backend stopped without an outcome), unless it is given up already; from then on nobody gives
 * it up. Returns why it gave its operation up (NULL: it records its outcome), *released true
 * when this call gave it up (the caller releases it). */
const char *step_pool_settle(struct step *st, bool stopped, bool *released);

/* Whether st's backend must stop: it gave its operation up, or (this call gives it up, *why
 * set; else *why NULL) its deadline passed or the pool was cancelled. */
bool step_pool_must_stop(struct step *st, int64_t now, const char **why);

/* Sleeps until until_ms, or until the pool is cancelled or st gives up, or a spurious wake. */
void step_pool_wait(struct step *st, int64_t until_ms);

/* Sleeps ms unless the pool gets cancelled first; false when it did. */
bool step_pool_sleep(struct step_pool *pool, int64_t ms);

#endif
