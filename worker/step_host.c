/* What a backend call reaches of its step (step_internal.h): progress, cancellation, waiting,
 * keep-alive, exit and a detached step's end, each against the step's lease, deadline and
 * pool; and giving the operation back when the step must stop. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "clock.h"
#include "lease.h"
#include "log.h"
#include "step_internal.h"
#include "store_operations.h"

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}
static struct step *step_of(struct backend_call *call)
{
    return (struct step *)(void *)((char *)call - offsetof(struct step, call));
}
void step_release_op(struct step_pool *pool, const struct osbq_job *job, const char *why,
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
void step_heed(struct step *st, enum lease_verdict verdict)
{
    if (verdict != LEASE_LOST && verdict != LEASE_HALTED)
        return;
    struct step_pool *pool = st->pool;
    bool halted = verdict == LEASE_HALTED;
    if (!step_pool_give_up(st, halted ? GAVE_UP_HALTED : GAVE_UP_LEASE_LOST))
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
    /* A renewal sent without waiting may have answered that the lease is lost. */
    step_heed(st, lease_poll(&st->lease, now));
    const char *why;
    bool stop = step_pool_must_stop(st, now, &why);
    if (why != NULL) {
        pool->gave_up(pool);
        step_release_op(pool, &st->job, why, st->deadline_s);
    }
    return stop;
}
static void call_progress(struct backend_call *call, const char *description)
{
    struct step *st = step_of(call);
    int64_t now = osbq_clock_ms();
    /* Past the deadline or given up: the lease is not renewed any more. */
    if (must_stop(st, now) || !lease_text_due(&st->lease, now))
        return;
    step_heed(st, lease_renew(&st->lease, description, now));
}
static bool call_cancelled(struct backend_call *call)
{
    return must_stop(step_of(call), osbq_clock_ms());
}
static bool call_wait(struct backend_call *call, int64_t ms)
{
    struct step *st = step_of(call);
    int64_t until = osbq_clock_ms() + (ms > 0 ? ms : 0);
    for (;;) {
        int64_t now = osbq_clock_ms();
        if (must_stop(st, now))
            return false;
        if (lease_due(&st->lease, now)) {
            /* A long quiet step must not let the lease expire under it. */
            step_heed(st, lease_renew(&st->lease, NULL, now));
            continue;
        }
        if (now >= until)
            return true;
        step_pool_wait(st, min64(min64(until, st->lease.renew_by_ms), st->deadline_ms));
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
    step_heed(st, verdict);
    if (description != NULL)
        return verdict != LEASE_LOST && verdict != LEASE_HALTED;
    /* Looks once more, as a wait of 0 ms does after renewing. */
    return !must_stop(st, osbq_clock_ms());
}
static bool call_exiting(struct backend_call *call)
{
    /* The pool is cancelled only when the process exits. */
    return step_pool_cancelled(step_of(call)->pool);
}
/* The backend ended a detached step, on its own thread. */
static void call_detached_end(struct backend_call *call, int rc)
{
    step_pool_ended(step_of(call), rc);
}

void step_host_attach(struct backend_call *call)
{
    call->progress = call_progress;
    call->cancelled = call_cancelled;
    call->wait = call_wait;
    call->keep_alive = call_keep_alive;
    call->exiting = call_exiting;
    call->detached_end = call_detached_end;
}
