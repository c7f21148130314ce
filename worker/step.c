/* One step of an operation on a runner thread: claim it in Redis, run one step of the plan's
 * backend while keeping the lease alive, and record what it reported: the outcome, or in
 * progress (the operation waits in Redis, held by nobody, until its next step is due); or give
 * the operation back (release) when the step passes its deadline or the worker stops before it
 * is done. */
#include "step.h"

#include <inttypes.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "clock.h"
#include "lease.h"
#include "log.h"
#include "sealed_job.h"
#include "step_record.h"
#include "step_timing.h"
#include "store_operations.h"

/* Why a step gave its operation up; also its job_end result. */
#define GAVE_UP_DEADLINE   "past_deadline" /* the backend ran past the plan's deadline */
#define GAVE_UP_SHUTDOWN   "released"      /* the worker stopped (or the backend did) first */
#define GAVE_UP_LEASE_LOST "lease_lost"    /* the operation is no longer this worker's */
#define GAVE_UP_HALTED     "halted" /* a delete halted it: its end is recorded, not its outcome */

/* One job from its claim to its recording. On the heap: a detached step (BACKEND_DETACHED)
 * outlives the runner thread that started it, and is recorded by whichever runner thread takes
 * it once its backend ends it. Used by one thread at a time, but for the fields under the
 * pool's lock, which the pool's other threads may read and set. */
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
    /* Guarded by pool->lock: */
    const char *gave_up;      /* GAVE_UP_*: this attempt no longer holds the operation and records
                               * nothing; NULL while it does */
    bool recording;           /* the backend returned an outcome this thread records: nobody gives
                               * the operation up any more */
    bool detached;            /* its runner thread returned: in pool->going_on or pool->ended */
    bool ended;               /* the backend ended it (detached_end) */
    int end_rc;               /* what the backend ended it with */
    struct step *prev, *next; /* in pool->going_on, then (next only) in pool->ended */
};

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static struct step *step_of(struct backend_call *call)
{
    return (struct step *)(void *)((char *)call - offsetof(struct step, call));
}

/* ---- giving an operation back ---- */

/* Marks st as no longer holding its operation, for why (GAVE_UP_*), unless it already is or
 * its outcome is being recorded. Caller holds pool->lock, and tells the pool (gave_up) once it
 * let go of it. Returns true when this call did it: the caller then releases the operation
 * (but for a lost lease). */
static bool give_up_locked(struct step *st, const char *why)
{
    struct step_pool *pool = st->pool;
    if (st->gave_up != NULL || st->recording)
        return false;
    st->gave_up = why;
    pool->given_up++;
    /* The step's thread may sleep in wait. */
    pthread_cond_broadcast(&pool->wake);
    return true;
}

/* Gives job's operation back (osbq_store_release: queued again and due at once, so the
 * recovery loop resends it to a worker), counts it released, and logs one job_released line; a
 * deadline's is a warning that names it. The line names the job's ids itself: it may be written
 * from a thread whose log context is another's (step_release_stuck). */
static void release_op(struct step_pool *pool, const struct osbq_job *job, const char *why,
                       int64_t deadline_s)
{
    struct osbq_error err = {0};
    worker_metrics_operation(pool->metrics, job, WORKER_OP_RELEASED);
    int rc = osbq_store_release(pool->store, job->operation_id, pool->worker_id, &err);
    bool deadline = strcmp(why, GAVE_UP_DEADLINE) == 0;
    enum osbq_log_level level = rc < 0 || deadline ? OSBQ_LOG_WARN : OSBQ_LOG_INFO;
    if (!osbq_log_enabled(level))
        return;
    struct osbq_log_line line;
    osbq_log_line_begin(&line, level, "job_released");
    osbq_log_line_str(&line, "op", job->operation_id);
    osbq_log_line_str(&line, "kind", osbq_job_kind_name(job->kind));
    osbq_log_line_str(&line, "instance", job->instance_id);
    osbq_log_line_str(&line, "binding", job->binding_id);
    osbq_log_line_str(&line, "request_id", job->request_identity);
    osbq_log_line_str(&line, "reason", deadline ? "deadline" : "shutdown");
    if (deadline) {
        osbq_log_line_int(&line, "deadline_s", deadline_s);
        osbq_log_line_str(&line, "backend", "abandoned: its thread stays busy until it returns");
    }
    osbq_log_line_str(&line, "result", rc > 0 ? "released" : rc == 0 ? "not_ours" : "failed");
    if (rc < 0)
        osbq_log_line_str(&line, "error", err.text);
    osbq_log_line_str(&line, "next",
                      rc > 0    ? "due again at once: the recovery loop resends it"
                      : rc == 0 ? "it ended, or another worker holds it"
                                : "it runs again once its lease expires");
    osbq_log_line_end(&line);
}

bool step_halt_locked(struct step *st, const char *operation_id)
{
    if (strcmp(st->job.operation_id, operation_id) != 0 || !give_up_locked(st, GAVE_UP_HALTED))
        return false;
    worker_metrics_operation(st->pool->metrics, &st->job, WORKER_OP_HALTED);
    return true;
}

bool step_list_halt_locked(struct step_list *list, const char *operation_id)
{
    for (struct step *st = list->first; st != NULL; st = st->next)
        if (step_halt_locked(st, operation_id))
            return true;
    return false;
}

/* Gives the operation up when verdict says the lease is lost, or that a delete halted it
 * (end_step then records its end), and counts it so. */
static void heed(struct step *st, enum lease_verdict verdict)
{
    if (verdict != LEASE_LOST && verdict != LEASE_HALTED)
        return;
    struct step_pool *pool = st->pool;
    bool halted = verdict == LEASE_HALTED;
    pthread_mutex_lock(&pool->lock);
    bool lost = give_up_locked(st, halted ? GAVE_UP_HALTED : GAVE_UP_LEASE_LOST);
    pthread_mutex_unlock(&pool->lock);
    if (!lost)
        return;
    pool->gave_up(pool);
    worker_metrics_operation(pool->metrics, &st->job, halted ? WORKER_OP_HALTED : WORKER_OP_LOST);
}

/* Whether the backend must stop: the lease was lost, the deadline passed, or the pool was
 * cancelled. The first call that finds the deadline passed or the pool cancelled gives the
 * operation back. */
static bool must_stop(struct step *st, int64_t now)
{
    struct step_pool *pool = st->pool;
    const char *why = NULL;
    /* A renewal sent without waiting may have answered that the lease is lost. */
    heed(st, lease_poll(&st->lease, now));
    pthread_mutex_lock(&pool->lock);
    if (st->gave_up == NULL) {
        if (now >= st->deadline_ms)
            why = GAVE_UP_DEADLINE;
        else if (pool->cancelled)
            why = GAVE_UP_SHUTDOWN;
        if (why != NULL && !give_up_locked(st, why))
            why = NULL;
    }
    bool stop = st->gave_up != NULL;
    pthread_mutex_unlock(&pool->lock);
    if (why != NULL) {
        pool->gave_up(pool);
        release_op(pool, &st->job, why, st->deadline_s);
    }
    return stop;
}

/* ---- the callbacks a backend gets ---- */

static void call_progress(struct backend_call *call, const char *description)
{
    struct step *st = step_of(call);
    int64_t now = osbq_clock_ms();
    /* Past the deadline or given up: the lease is not renewed any more. */
    if (must_stop(st, now) || !lease_text_due(&st->lease, now))
        return;
    heed(st, lease_renew(&st->lease, description, now));
}

static bool call_cancelled(struct backend_call *call)
{
    return must_stop(step_of(call), osbq_clock_ms());
}

static bool call_wait(struct backend_call *call, int64_t ms)
{
    struct step *st = step_of(call);
    struct step_pool *pool = st->pool;
    int64_t until = osbq_clock_ms() + (ms > 0 ? ms : 0);
    for (;;) {
        int64_t now = osbq_clock_ms();
        if (must_stop(st, now))
            return false;
        if (lease_due(&st->lease, now)) {
            /* A long quiet step must not let the lease expire under it. */
            heed(st, lease_renew(&st->lease, NULL, now));
            continue;
        }
        if (now >= until)
            return true;
        pthread_mutex_lock(&pool->lock);
        /* Checked under the lock the cancellation takes, so its wake-up is not missed. */
        if (!pool->cancelled && st->gave_up == NULL)
            osbq_clock_wait_until(&pool->wake, &pool->lock,
                                  min64(min64(until, st->lease.renew_by_ms), st->deadline_ms));
        pthread_mutex_unlock(&pool->lock);
    }
}

/* For the exec watch's thread, which drives every program and must not wait for Redis once
 * per program: renews the lease when due, and writes description when given and due, without
 * waiting for the answer (a later call reads it). */
static bool call_keep_alive(struct backend_call *call, const char *description)
{
    struct step *st = step_of(call);
    int64_t now = osbq_clock_ms();
    if (must_stop(st, now))
        return false;
    bool due = description != NULL ? lease_text_due(&st->lease, now) : lease_due(&st->lease, now);
    if (!due)
        return true;
    enum lease_verdict verdict = lease_renew_start(&st->lease, description, now);
    heed(st, verdict);
    if (description != NULL)
        return verdict != LEASE_LOST && verdict != LEASE_HALTED;
    /* Looks once more, as a wait of 0 ms does after renewing. */
    return !must_stop(st, osbq_clock_ms());
}

static bool call_exiting(struct backend_call *call)
{
    struct step_pool *pool = step_of(call)->pool;
    pthread_mutex_lock(&pool->lock);
    bool exiting = pool->exiting;
    pthread_mutex_unlock(&pool->lock);
    return exiting;
}

/* The backend ended a detached step, on its own thread: the step waits for a pool thread to
 * record it. Before its runner thread came back from the backend, that thread records it. */
static void call_detached_end(struct backend_call *call, int rc)
{
    struct step *st = step_of(call);
    struct step_pool *pool = st->pool;
    pthread_mutex_lock(&pool->lock);
    st->ended = true;
    st->end_rc = rc;
    if (st->detached) {
        if (st->prev != NULL)
            st->prev->next = st->next;
        else
            pool->going_on.first = st->next;
        if (st->next != NULL)
            st->next->prev = st->prev;
        else
            pool->going_on.last = st->prev;
        st->prev = st->next = NULL;
        if (pool->ended.last != NULL)
            pool->ended.last->next = st;
        else
            pool->ended.first = st;
        pool->ended.last = st;
        pool->detached_ended(pool);
    }
    pthread_mutex_unlock(&pool->lock);
}

/* ---- one job ---- */

/* Finds the plan and backend, parses the parameters and runs the backend. Returns 0 with the
 * outcome in st->call.result (a failure when something is missing), -1 when cancelled, or
 * BACKEND_DETACHED. */
static int run_backend(struct step *st)
{
    struct backend_call *call = &st->call;
    const struct osbq_job *job = &st->job;
    char text[BACKEND_DESCRIPTION_MAX];
    const struct osbq_plan *plan = osbq_catalog_plan(st->pool->catalog, job->plan_id);
    if (plan == NULL) {
        (void)snprintf(text, sizeof text, "The plan %s is no longer in the broker's catalog.",
                       job->plan_id);
        backend_call_fail(call, text, true, false);
        return 0;
    }
    const struct backend *backend = backend_find(plan->backend);
    if (backend == NULL) {
        /* The catalog only names known backends, so only a build mismatch gets here. */
        (void)snprintf(text, sizeof text, "The %s backend is not available in this broker.",
                       plan->backend);
        backend_call_fail(call, text, true, false);
        return 0;
    }
    struct osbq_error err = {0};
    if (sealed_job_open(st->pool->secrets, st->pool->cfg->namespace_, &st->job, &st->opened, &err) <
        0) {
        log_warnx("operation %s: cannot open the request's sealed values: %s", job->operation_id,
                  err.text);
        (void)snprintf(text, sizeof text, "The broker cannot decrypt the request: %s.", err.text);
        backend_call_fail(call, text, true, false);
        return 0;
    }
    if (job->parameters != NULL) {
        json_error_t jerr;
        st->parameters = json_loads(job->parameters, 0, &jerr);
        /* The gateway checked them: an object that does not parse here is a broker bug. */
        if (!json_is_object(st->parameters)) {
            log_warnx("operation %s: parameters are not a JSON object (%s)", job->operation_id,
                      jerr.text);
            backend_call_fail(call, "The broker could not read the operation's parameters.", true,
                              false);
            return 0;
        }
    }
    call->plan = plan;
    call->parameters = st->parameters;
    return backend_run(backend, call);
}

/* Runs the claimed step: the backend, unless the operation ran out of time as a whole
 * (step_overdue: then it fails without running), with the state its previous step saved.
 * Returns what run_backend returns. */
static int run_claimed(struct step *st)
{
    struct backend_call *call = &st->call;
    const struct osbq_claim *claim = &st->claim;
    enum step_overdue overdue =
        step_overdue(claim, osbq_store_now_ms(), st->deadline_s, st->max_polling_s);
    if (overdue != STEP_ON_TIME) {
        char text[BACKEND_DESCRIPTION_MAX];
        step_overdue_text(overdue, st->deadline_s, st->max_polling_s, text, sizeof text);
        backend_call_fail(call, text, true, true);
        return 0;
    }
    struct osbq_error err = {0};
    if (sealed_resume_open(st->pool->secrets, st->pool->cfg->namespace_, &st->job,
                           &st->claim.resume, &err) < 0) {
        log_warnx("operation %s: cannot open the state its previous step saved: %s",
                  st->job.operation_id, err.text);
        char text[BACKEND_DESCRIPTION_MAX];
        (void)snprintf(text, sizeof text,
                       "The broker cannot decrypt the state its previous step saved: %s.",
                       err.text);
        backend_call_fail(call, text, true, false);
        return 0;
    }
    if (claim->resume != NULL) {
        st->resume = json_loads(claim->resume, 0, NULL);
        /* Written by backend_call_wait_for: one that does not parse is a broker bug. */
        if (!json_is_object(st->resume)) {
            backend_call_fail(call, "The broker could not read the state its previous step saved.",
                              true, false);
            return 0;
        }
    }
    call->resume = st->resume;
    call->step = claim->steps;
    return run_backend(st);
}

/* A step a delete halted has stopped (its backend returned): its end is recorded now, so that
 * finish.lua fails the operation and makes the delete that halted it due, rather than when
 * its lease runs out (docs/decisions/0051). The line says how long the step ran. */
static void record_halted_end(struct step *st)
{
    int rc = step_record_halted_end(st->pool, &st->job, st->origin);
    int64_t age_ms = osbq_clock_ms() - st->started_ms;
    if (rc == 0)
        log_warnx("operation %s: told to halt after %" PRId64 " ms, but it is not halting here "
                  "(ended meanwhile, or not this worker's): its step stopped, nothing recorded",
                  st->job.operation_id, age_ms);
    else if (rc > 0)
        log_info("operation %s (%s of instance %s): halted by a delete, its step stopped after "
                 "%" PRId64 " ms",
                 st->job.operation_id, osbq_job_kind_name(st->job.kind), st->job.instance_id,
                 age_ms);
}

/* Ends the step with what the backend answered (rc: 0 a result, -1 none): records it, or
 * gives the operation back, and writes the job's end line. Returns true when its operation was
 * given up (counted in pool->given_up until the pool takes it off). */
static bool end_step(struct step *st, int rc)
{
    struct step_pool *pool = st->pool;
    const struct osbq_job *job = &st->job;
    double backend_seconds = osbq_clock_seconds() - st->backend_started;
    /* The answer of a renewal still out decides whether the lease is still ours. */
    heed(st, lease_settle(&st->lease));
    /* A backend that stopped without an outcome and without being told to (or told only that
     * the process exits) still leaves an operation to give back. */
    const char *release_why = NULL;
    pthread_mutex_lock(&pool->lock);
    if (rc < 0 && give_up_locked(st, GAVE_UP_SHUTDOWN))
        release_why = GAVE_UP_SHUTDOWN;
    const char *gave_up = st->gave_up;
    st->recording = gave_up == NULL;
    pthread_mutex_unlock(&pool->lock);
    if (release_why != NULL) {
        pool->gave_up(pool);
        release_op(pool, job, release_why, st->deadline_s);
    }
    if (gave_up != NULL && strcmp(gave_up, GAVE_UP_HALTED) == 0)
        record_halted_end(st);

    const char *outcome = gave_up;
    int64_t due_in_ms = -1;
    if (gave_up == NULL)
        outcome = step_record(pool, &st->call, st->origin,
                              step_end_ms(&st->claim, st->deadline_s, st->max_polling_s),
                              backend_seconds, &due_in_ms);
    /* Past its deadline, whatever the backend finally reported was dropped: not its text. */
    step_record_log(job, "job_end", st->claim.steps, outcome,
                    gave_up == NULL ? st->call.result.description : NULL,
                    osbq_clock_ms() - st->started_ms, due_in_ms, -1);
    return gave_up != NULL;
}

/* Takes a handed job's operation as claimed: the begin script claimed it for this worker. Taken
 * as it is while at most a third of the hand-over's lease has passed, so the lease's first
 * renewal comes as early in it as a claim's would; later (a slow delivery, or the gateway's
 * clock ahead of this one) only once the lease is renewed, which says the operation is still this
 * worker's (nobody took it over when the lease ran out). Returns false when it is not, or
 * Redis failed (the job is dropped; logged and counted as a claim's). */
static bool adopt(struct step *st)
{
    struct step_pool *pool = st->pool;
    const struct osbq_job *job = &st->job;
    int64_t lease_ms = (int64_t)pool->cfg->lease_ms;
    int64_t begun = st->handed.until_ms - lease_ms;
    int64_t spent = osbq_store_now_ms() - begun;
    st->lease_spent_ms = spent > 0 ? spent : 0;
    if (spent > lease_ms / 3) {
        struct osbq_error err = {0};
        int renewed = osbq_store_progress(pool->store, job->operation_id, pool->worker_id, NULL,
                                          lease_ms, &err);
        if (renewed <= 0) {
            worker_metrics_claim(pool->metrics,
                                 renewed == 0 ? WORKER_CLAIM_SKIPPED : WORKER_CLAIM_ERROR);
            log_warnx("operation %s: handed to this worker %" PRId64 " ms ago and %s, dropping "
                      "the job",
                      job->operation_id, spent,
                      renewed == 0 ? "no longer its own" : "its lease cannot be renewed");
            return false;
        }
        st->lease_spent_ms = 0;
    }
    st->claim =
        (struct osbq_claim){.started_ms = begun, .accepted_ms = begun, .tenant = st->handed.tenant};
    st->handed.tenant = NULL;
    worker_metrics_claim(pool->metrics, WORKER_CLAIM_CLAIMED);
    worker_metrics_handed(pool->metrics);
    return true;
}

/* Claims st's operation. Returns false when it is not this worker's to run, or Redis failed
 * (the job is dropped; logged and counted). */
static bool claim(struct step *st)
{
    struct step_pool *pool = st->pool;
    const struct osbq_job *job = &st->job;
    if (st->handed.until_ms > 0)
        return adopt(st);
    struct osbq_error err = {0};
    int claimed = osbq_store_claim(pool->store, job->operation_id, pool->worker_id, job->attempt,
                                   (int64_t)pool->cfg->lease_ms, &st->claim, &err);
    if (claimed == 0) {
        worker_metrics_claim(pool->metrics, WORKER_CLAIM_SKIPPED);
        log_debug("operation %s: finished, held by another worker or not due, dropping the job",
                  job->operation_id);
        return false;
    }
    if (claimed < 0) {
        worker_metrics_claim(pool->metrics, WORKER_CLAIM_ERROR);
        log_warnx("operation %s: cannot claim it (%s), dropping the job; it will be resent",
                  job->operation_id, err.text);
        return false;
    }
    worker_metrics_claim(pool->metrics, WORKER_CLAIM_CLAIMED);
    return true;
}

/* Sets the claimed step up to run: its deadline, lease and backend call. */
static void prepare(struct step *st, int64_t now)
{
    struct step_pool *pool = st->pool;
    const struct osbq_job *job = &st->job;
    const struct osbq_plan *plan = osbq_catalog_plan(pool->catalog, job->plan_id);
    st->deadline_s = step_deadline_s(plan, job->kind);
    st->max_polling_s = step_max_polling_s(plan);
    int64_t late_ms = -1;
    if (st->claim.due_ms > 0) {
        int64_t late = osbq_store_now_ms() - st->claim.due_ms;
        late_ms = late > 0 ? late : 0;
        worker_metrics_step_lateness(pool->metrics, (double)late_ms / 1000.0);
    }
    step_record_log(job, "job_start", st->claim.steps, NULL, NULL, -1, -1, late_ms);

    st->started_ms = now;
    st->deadline_ms = now + st->deadline_s * 1000;
    lease_init(&st->lease, pool->store, job->operation_id, pool->worker_id,
               (int64_t)pool->cfg->lease_ms, now - st->lease_spent_ms);
    st->call = (struct backend_call){
        .job = job,
        .tenant = st->claim.tenant,
        .halted_operation = st->claim.halted_operation,
        .progress = call_progress,
        .cancelled = call_cancelled,
        .wait = call_wait,
        .keep_alive = call_keep_alive,
        .exiting = call_exiting,
        .detached_end = call_detached_end,
        .exec_watch = pool->watch,
    };
}

enum step_fate step_run(struct step *st, struct step **running)
{
    struct step_pool *pool = st->pool;
    if (!claim(st))
        return STEP_RECORDED;
    prepare(st, osbq_clock_ms());
    pthread_mutex_lock(&pool->lock);
    *running = st;
    pthread_mutex_unlock(&pool->lock);

    st->backend_started = osbq_clock_seconds();
    int rc = run_claimed(st);
    pthread_mutex_lock(&pool->lock);
    *running = NULL;
    if (rc == BACKEND_DETACHED) {
        if (!st->ended) {
            /* The thread goes back to the pool; the step's end brings it to another. */
            st->detached = true;
            st->prev = NULL;
            st->next = pool->going_on.first;
            if (st->next != NULL)
                st->next->prev = st;
            else
                pool->going_on.last = st;
            pool->going_on.first = st;
            pool->detached++;
            pthread_mutex_unlock(&pool->lock);
            return STEP_DETACHED;
        }
        rc = st->end_rc;
    }
    pthread_mutex_unlock(&pool->lock);
    return end_step(st, rc) ? STEP_GAVE_UP : STEP_RECORDED;
}

struct step *step_take_ended(struct step_pool *pool)
{
    struct step *st = pool->ended.first;
    if (st == NULL)
        return NULL;
    pool->ended.first = st->next;
    if (pool->ended.first == NULL)
        pool->ended.last = NULL;
    st->next = NULL;
    return st;
}

bool step_record_ended(struct step *st)
{
    return end_step(st, st->end_rc);
}

/* Gives st's operation back from the pool's thread: lock held, dropped meanwhile. */
static void release_from_pool(struct step *st)
{
    struct step_pool *pool = st->pool;
    if (!give_up_locked(st, GAVE_UP_SHUTDOWN))
        return;
    /* The step's strings may go as soon as the lock is dropped: copy what the release needs. */
    struct osbq_job copy;
    int copied = osbq_job_copy(&st->job, &copy);
    pthread_mutex_unlock(&pool->lock);
    pool->gave_up(pool);
    if (copied == 0)
        release_op(pool, &copy, GAVE_UP_SHUTDOWN, 0);
    osbq_job_clear(&copy);
    pthread_mutex_lock(&pool->lock);
}

void step_release_stuck(struct step *st)
{
    release_from_pool(st);
}

void step_release_detached(struct step_pool *pool)
{
    /* One at a time, since the list may change while the lock is dropped. */
    for (;;) {
        struct step *st = pool->going_on.first;
        while (st != NULL && (st->gave_up != NULL || st->recording))
            st = st->next;
        if (st == NULL)
            return;
        release_from_pool(st);
    }
}

void step_handover_clear(struct step_handover *handed)
{
    if (handed == NULL)
        return;
    free(handed->tenant);
    *handed = (struct step_handover){0};
}

struct step *step_new(struct step_pool *pool, struct osbq_job *job, unsigned origin,
                      struct step_handover *handed)
{
    struct step *st = calloc(1, sizeof *st);
    if (st == NULL)
        return NULL;
    st->pool = pool;
    st->job = *job;
    memset(job, 0, sizeof *job);
    st->origin = origin;
    if (handed != NULL) {
        st->handed = *handed;
        *handed = (struct step_handover){0};
    }
    return st;
}

void step_destroy(struct step **stp)
{
    struct step *st = stp ? *stp : NULL;
    if (st == NULL)
        return;
    /* The pipeline's thread must be done with the lease's renewal before it goes (normally
     * end_step read it already). */
    lease_clear(&st->lease);
    json_decref(st->parameters);
    json_decref(st->resume);
    sealed_job_clear(&st->opened);
    backend_call_clear(&st->call);
    osbq_claim_clear(&st->claim);
    step_handover_clear(&st->handed);
    osbq_job_clear(&st->job);
    free(st);
    *stp = NULL;
}

const struct osbq_job *step_job(const struct step *st)
{
    return &st->job;
}

unsigned step_origin(const struct step *st)
{
    return st->origin;
}
