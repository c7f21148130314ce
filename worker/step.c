/* One step of an operation on a runner thread: claim it in Redis, run one step of the plan's
 * backend while keeping the lease alive, and record what it reported: the outcome, or in
 * progress (the operation waits in Redis, held by nobody, until its next step is due); or give
 * the operation back (release) when the step passes its deadline or the worker stops before it
 * is done. */
#include "step.h"
#include "step_internal.h"

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
#include "owned.h"
#include "sealed_job.h"
#include "step_record.h"
#include "step_timing.h"
#include "store_operations.h"

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
    step_heed(st, lease_settle(&st->lease));
    /* A backend that stopped without an outcome and without being told to (or told only that
     * the process exits) still leaves an operation to give back. */
    bool released;
    const char *gave_up = step_pool_settle(st, rc < 0, &released);
    if (released) {
        pool->gave_up(pool);
        step_release_op(pool, job, GAVE_UP_SHUTDOWN, st->deadline_s);
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
        .exec_watch = pool->watch,
    };
    step_host_attach(&st->call);
}

enum step_fate step_run(struct step *st)
{
    if (!claim(st))
        return STEP_RECORDED;
    prepare(st, osbq_clock_ms());
    step_pool_running(st);
    st->backend_started = osbq_clock_seconds();
    int rc = run_claimed(st);
    if (step_pool_returned(st, &rc))
        return STEP_DETACHED;
    return end_step(st, rc) ? STEP_GAVE_UP : STEP_RECORDED;
}

bool step_record_ended(struct step *st)
{
    return end_step(st, st->end_rc);
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
    OSBQ_OWNED_OR_RETURN(struct step, st, stp);
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

void step_release_all(struct step_pool *pool)
{
    struct osbq_job copy;
    /* One at a time: the pool's lists may change between two. */
    while (step_pool_give_up_one(pool, &copy)) {
        pool->gave_up(pool);
        if (copy.operation_id != NULL)
            step_release_op(pool, &copy, GAVE_UP_SHUTDOWN, 0);
        osbq_job_clear(&copy);
    }
}
