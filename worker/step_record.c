/* A step's record: its result written to Redis with retries, and its log lines. */
#include "step_record.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bind_result.h"
#include "log.h"
#include "sealed_job.h"
#include "step_timing.h"
#include "store_operations.h"

/* Records the outcome (osbq_store_finish) or, for a step that ended in progress, the wait for
 * the next step due at due_ms (osbq_store_wait), retrying with backoff while Redis fails: until
 * it is recorded (1) or refused because the operation is no longer this worker's (0), or the
 * pool is cancelled (the worker stopping past its grace: one last try, then -1). A report that
 * timed out may still have been recorded; the retry is then refused (0), never recorded
 * twice. */
static int record(struct step_pool *pool, const char *op, const struct osbq_op_result *result,
                  int64_t due_ms)
{
    int64_t backoff = step_finish_backoff_ms(0);
    unsigned failures = 0;
    bool last = false;
    for (;;) {
        struct osbq_error err = {0};
        int rc = result->in_progress
                     ? osbq_store_wait(pool->store, op, pool->worker_id, result, due_ms, &err)
                     : osbq_store_finish(pool->store, op, pool->worker_id, result, &err);
        if (rc > 0 && failures > 0)
            log_info("operation %s: result recorded after %u failed attempts", op, failures);
        if (rc == 0)
            log_warnx("operation %s: no longer this worker's (recorded by an earlier report that "
                      "timed out, ended otherwise, or taken over after its lease ran out or a "
                      "gateway saw this worker go); result dropped",
                      op);
        if (rc >= 0)
            return rc;
        failures++;
        if (last) {
            log_errorx("operation %s: the worker is stopping and still cannot record the result "
                       "(%s); the operation runs again once its lease expires",
                       op, err.text);
            return -1;
        }
        if (failures == 1)
            log_warnx("operation %s: cannot record the result (%s), retrying with backoff until "
                      "Redis answers",
                      op, err.text);
        last = !step_pool_sleep(pool, backoff);
        backoff = step_finish_backoff_ms(backoff);
        worker_metrics_finish_retry(pool->metrics);
    }
}

/* record() for a step that ended in progress: its resume state sealed first when the worker
 * has keys (decision 0058), so Redis only receives the envelope. */
static int record_wait(struct step_pool *pool, struct backend_call *call, int64_t due_ms)
{
    const char *resume = call->result.resume;
    if (pool->secrets == NULL || resume == NULL)
        return record(pool, call->job->operation_id, &call->result, due_ms);
    char *sealed = sealed_resume_seal(pool->secrets, pool->cfg->namespace_, call->job, resume);
    if (sealed == NULL) {
        log_warnx("operation %s: out of memory sealing the state its step saved",
                  call->job->operation_id);
        return -1;
    }
    call->result.resume = sealed;
    int rc = record(pool, call->job->operation_id, &call->result, due_ms);
    call->result.resume = resume;
    free(sealed);
    return rc;
}

int step_record_halted_end(struct step_pool *pool, const struct osbq_job *job, unsigned origin)
{
    struct osbq_error err = {0};
    int rc = osbq_store_halted_end(pool->store, job->operation_id, pool->worker_id, &err);
    if (rc < 0)
        log_warnx("operation %s: halted, its end not recorded (%s): the recovery loop records it "
                  "once its lease runs out",
                  job->operation_id, err.text);
    else if (rc > 0)
        /* The delete that waited for it is due now: the gateway's recovery loop hears it with
         * the next READY (as of a wait's due time) rather than at its next scan. */
        pool->waiting(pool, origin, osbq_store_now_ms());
    return rc;
}

/* A step that ended in progress while a delete halted its operation (wait.lua answered 2):
 * its end is recorded now, failed (finish.lua), so that the delete runs. Returns the job's end
 * result. */
static const char *record_halted(struct step_pool *pool, const struct osbq_job *job,
                                 unsigned origin)
{
    int recorded = step_record_halted_end(pool, job, origin);
    worker_metrics_operation(pool->metrics, job,
                             recorded > 0    ? WORKER_OP_HALTED
                             : recorded == 0 ? WORKER_OP_LOST
                                             : WORKER_OP_RELEASED);
    return recorded > 0 ? "halted" : recorded == 0 ? "dropped" : "not_recorded";
}

const char *step_record(struct step_pool *pool, struct backend_call *call, unsigned origin,
                        int64_t end_ms, double backend_seconds, int64_t *due_in_ms)
{
    const struct osbq_job *job = call->job;
    *due_in_ms = -1;
    if (call->result.in_progress) {
        int64_t now = osbq_store_now_ms();
        int64_t due = step_due_ms(now, call->result.poll_after_ms, end_ms);
        int recorded = record_wait(pool, call, due);
        if (recorded == 2)
            return record_halted(pool, job, origin);
        if (recorded > 0) {
            /* A step, not an outcome: the operation goes on, held by nobody. */
            worker_metrics_step(pool->metrics);
            pool->waiting(pool, origin, due);
            *due_in_ms = due - now;
            return "waiting";
        }
        worker_metrics_operation(pool->metrics, job,
                                 recorded == 0 ? WORKER_OP_LOST : WORKER_OP_RELEASED);
        return recorded == 0 ? "dropped" : "not_recorded";
    }
    if (call->result.succeeded && job->kind == OSBQ_JOB_BIND && call->plan != NULL &&
        call->plan->binding_ttl_s > 0)
        bind_result_add_plan_expiry(call);
    char *sealed = bind_result_seal(pool->secrets, pool->cfg->namespace_, call);
    int recorded = record(pool, job->operation_id, &call->result, 0);
    if (sealed != NULL) {
        /* The envelope goes; the plaintext stays in the call until it is cleared. */
        call->result.binding = NULL;
        free(sealed);
    }
    /* Not recorded (the worker stopping while Redis is away) counts as released: another
     * worker runs it once its lease expires. */
    if (recorded == 2) {
        /* A delete halted it: finish.lua recorded it failed, whatever the step reported. */
        worker_metrics_operation(pool->metrics, job, WORKER_OP_HALTED);
        return "halted";
    }
    worker_metrics_operation(pool->metrics, job,
                             recorded > 0
                                 ? (call->result.succeeded ? WORKER_OP_SUCCEEDED : WORKER_OP_FAILED)
                             : recorded == 0 ? WORKER_OP_LOST
                                             : WORKER_OP_RELEASED);
    if (recorded > 0)
        worker_metrics_duration(pool->metrics, job->kind, backend_seconds);
    if (recorded > 0)
        return call->result.succeeded ? "succeeded" : "failed";
    return recorded == 0 ? "dropped" : "not_recorded";
}

void step_record_log(const struct osbq_job *job, const char *event, uint32_t step,
                     const char *result, const char *description, int64_t duration_ms,
                     int64_t due_in_ms, int64_t late_ms)
{
    /* A failed operation is what an on-call person looks for: a warning, with its gist. */
    bool failed = result != NULL && strcmp(result, "failed") == 0;
    enum osbq_log_level level = failed ? OSBQ_LOG_WARN : OSBQ_LOG_INFO;
    if (!osbq_log_enabled(level))
        return;
    struct osbq_log_line line;
    osbq_log_line_begin(&line, level, event);
    osbq_log_line_str(&line, "op", job->operation_id);
    osbq_log_line_str(&line, "kind", osbq_job_kind_name(job->kind));
    osbq_log_line_str(&line, "instance", job->instance_id);
    osbq_log_line_str(&line, "binding", job->binding_id);
    osbq_log_line_str(&line, "plan", job->plan_id);
    osbq_log_line_int(&line, "attempt", job->attempt);
    if (step > 0)
        osbq_log_line_int(&line, "step", step);
    osbq_log_line_str(&line, "request_id", job->request_identity);
    osbq_log_line_str(&line, "trace", job->trace);
    osbq_log_line_str(&line, "result", result);
    if (failed && description != NULL) {
        char detail[96];
        osbq_log_first_words(description, 8, detail, sizeof detail);
        osbq_log_line_str(&line, "detail", detail);
    }
    osbq_log_line_str(&line, "description", description);
    if (duration_ms >= 0)
        osbq_log_line_int(&line, "duration_ms", duration_ms);
    if (due_in_ms >= 0)
        osbq_log_line_int(&line, "due_in_ms", due_in_ms);
    if (late_ms >= 0)
        osbq_log_line_int(&line, "late_ms", late_ms);
    osbq_log_line_end(&line);
}
