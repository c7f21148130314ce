/* The answer to a synchronous request once its wait ended: the outcome announced, or, after a
 * timeout, the outcome read once more from Redis (the announcement may have been lost). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"

/* The outcome as an announcement would have carried it: a bind reads its binding (deferred),
 * the rest answer at once. */
static void answer_outcome(const struct gateway *gw, const struct reply_wait *wait,
                           const struct waiter_result *result, struct reply *out)
{
    if (wait->kind == OSBQ_JOB_BIND || wait->kind == OSBQ_JOB_UNBIND)
        osb_binding_finished(gw, wait, result, out);
    else
        osb_instance_finished(wait, result, out);
}

/* After a timeout, once the operation is read: its outcome if it ended, else 504. state is the
 * request's wait (borrowed: the exchange owns it). */
static void sync_reply_after_read(const struct gateway *gw, const struct request *req,
                                  struct osbq_store_call *call, void *state, struct reply *out)
{
    (void)req;
    const struct reply_wait *wait = state;
    struct osbq_last_op op = {0};
    struct osbq_error err = {0};
    int found = osbq_store_last_operation_result(call, &op, &err);
    bool ended =
        found == 1 && (strcmp(op.state, "succeeded") == 0 || strcmp(op.state, "failed") == 0);
    if (!ended) {
        osbq_last_op_clear(&op);
        reply_error(out, OSBQ_ERR_TIMEOUT,
                    "The operation did not finish within the plan's synchronous time "
                    "limit; it goes on in the background.");
        return;
    }
    struct waiter_result read = {
        .outcome = WAITER_FINISHED,
        .succeeded = strcmp(op.state, "succeeded") == 0,
        .description = op.description,
        .instance_usable = op.instance_usable != 0,
        .update_repeatable = op.update_repeatable != 0,
    };
    answer_outcome(gw, wait, &read, out);
    osbq_last_op_clear(&op);
}

/* An announced outcome waiting for the replicas: both borrowed from the request's exchange. */
struct announced {
    const struct reply_wait *wait;
    const struct waiter_result *result;
};

/* With OSBQ_REDIS_MIN_ACKS, once a PING through the pipeline is answered: the WAIT behind it
 * covers every write before it, the outcome's included, so the announcement can be answered. */
static void sync_reply_after_acks(const struct gateway *gw, const struct request *req,
                                  struct osbq_store_call *call, void *state, struct reply *out)
{
    (void)req;
    const struct announced *a = state;
    struct osbq_error err = {0};
    if (osbq_store_ping_result(call, &err) < 0) {
        reply_store_unavailable(out, &err);
        return;
    }
    answer_outcome(gw, a->wait, a->result, out);
}

/* Reads the operation once more after a timeout: sync_reply_after_read answers. */
static void read_after_timeout(const struct gateway *gw, const struct reply_wait *wait,
                               struct reply *out)
{
    struct osbq_error err = {0};
    struct osbq_store_call *call = osbq_store_last_operation_call(
        gw->store, wait->instance_id, wait->binding_id, wait->operation_id, NULL, &err);
    reply_defer_call(out, call, &err, sync_reply_after_read, (void *)(uintptr_t)wait, NULL);
}

/* What a synchronous update that was stopped at its limit says. */
#define UPDATE_STOPPED_TEXT                                                                        \
    "The update did not finish within the plan's synchronous time limit; it was stopped and "      \
    "nothing was changed. Retry with accepts_incomplete=true to let it run longer."

/* After an update's timeout, once the gateway tried to stop it: 504 when it did (nothing was
 * applied), else the outcome it reached meanwhile. state is the request's wait (borrowed). */
static void sync_reply_after_halt(const struct gateway *gw, const struct request *req,
                                  struct osbq_store_call *call, void *state, struct reply *out)
{
    (void)req;
    const struct reply_wait *wait = state;
    struct osbq_error err = {0};
    int halted = osbq_store_sync_limit_result(call, &err);
    if (halted < 0) {
        /* Not known to be stopped: it may still apply, so no 5xx that says otherwise. */
        reply_store_unavailable(out, &err);
        return;
    }
    if (halted > 0) {
        reply_error(out, OSBQ_ERR_TIMEOUT, UPDATE_STOPPED_TEXT);
        return;
    }
    read_after_timeout(gw, wait, out);
}

void osb_sync_reply(const struct gateway *gw, const struct reply_wait *wait,
                    const struct waiter_result *result, struct reply *out)
{
    bool binding = wait->kind == OSBQ_JOB_BIND || wait->kind == OSBQ_JOB_UNBIND;
    switch (result->outcome) {
    case WAITER_FINISHED:
        /* The announcement leaves the primary before its replicas have the outcome. A binding's
         * answer reads the binding through the pipeline, which waits for them anyway. */
        if (gw->cfg->redis_min_acks > 0 && !binding) {
            struct osbq_error err = {0};
            struct announced *a = malloc(sizeof *a);
            struct osbq_store_call *call = a != NULL ? osbq_store_ping_call(&err) : NULL;
            if (call == NULL) {
                free(a);
                reply_error(out, OSBQ_ERR_INTERNAL, NULL);
                return;
            }
            *a = (struct announced){wait, result};
            reply_defer(out, call, sync_reply_after_acks, a, free);
            return;
        }
        answer_outcome(gw, wait, result, out);
        return;
    case WAITER_SHUTDOWN:
        reply_error(out, OSBQ_ERR_UNAVAILABLE,
                    "The broker is restarting; the operation goes on: poll last_operation.");
        return;
    case WAITER_TIMEOUT:
        break;
    }
    if (wait->kind == OSBQ_JOB_UPDATE) {
        /* Spec, Updating a Service Instance, Response: with a 4xx or 5xx the broker "MUST NOT
         * apply any of the requested changes": the update is stopped before the 504
         * (docs/decisions/0048-sync-limit-halts-the-operation.md). */
        struct osbq_error err = {0};
        struct osbq_store_call *call =
            osbq_store_sync_limit_call(gw->store, wait->operation_id, UPDATE_STOPPED_TEXT, &err);
        reply_defer_call(out, call, &err, sync_reply_after_halt, (void *)(uintptr_t)wait, NULL);
        return;
    }
    read_after_timeout(gw, wait, out);
}
