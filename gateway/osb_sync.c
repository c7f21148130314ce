/* The answer to a synchronous request once its wait ended: the outcome announced, or, after a
 * timeout, the outcome read once more from Redis (the announcement may have been lost). */
#include <string.h>

#include "handlers.h"

void osb_sync_reply(const struct gateway *gw, const struct reply_wait *wait,
                    const struct waiter_result *result, struct reply *out)
{
    struct osbq_last_op op = {0};
    struct waiter_result read = {0};
    bool binding = wait->kind == OSBQ_JOB_BIND || wait->kind == OSBQ_JOB_UNBIND;
    switch (result->outcome) {
    case WAITER_FINISHED:
        break;
    case WAITER_SHUTDOWN:
        reply_error(out, OSBQ_ERR_UNAVAILABLE,
                    "The broker is restarting; the operation goes on: poll last_operation.");
        return;
    case WAITER_TIMEOUT: {
        struct osbq_error err = {0};
        int found = osbq_store_last_operation(gw->store, wait->instance_id, wait->binding_id,
                                              wait->operation_id, NULL, &op, &err);
        bool ended =
            found == 1 && (strcmp(op.state, "succeeded") == 0 || strcmp(op.state, "failed") == 0);
        if (!ended) {
            osbq_last_op_clear(&op);
            reply_error(out, OSBQ_ERR_TIMEOUT,
                        "The operation did not finish within the plan's synchronous time "
                        "limit; it goes on in the background.");
            return;
        }
        read.outcome = WAITER_FINISHED;
        read.succeeded = strcmp(op.state, "succeeded") == 0;
        read.description = op.description;
        read.instance_usable = op.instance_usable != 0;
        read.update_repeatable = op.update_repeatable != 0;
        result = &read;
        break;
    }
    }
    if (binding)
        osb_binding_finished(gw, wait, result, out);
    else
        osb_instance_finished(wait, result, out);
    osbq_last_op_clear(&op);
}
