/* Blocking forms of the gateway's store calls, for tests (store_test_helpers.h). */
#include "store_test_helpers.h"

int osbq_store_begin_instance(struct osbq_store *store, const struct osbq_begin_request *req,
                              struct osbq_begin_reply *out, struct osbq_error *err)
{
    struct osbq_store_call *call = osbq_store_begin_instance_call(store, req, err);
    if (call == NULL)
        return -1;
    osbq_store_call_run(store, call);
    int rc = osbq_store_begin_result(call, out, err);
    osbq_store_call_free(&call);
    return rc;
}

int osbq_store_last_operation(struct osbq_store *store, const char *instance_id,
                              const char *binding_id, const char *operation_id,
                              const char *platform, struct osbq_last_op *out,
                              struct osbq_error *err)
{
    struct osbq_store_call *call =
        osbq_store_last_operation_call(store, instance_id, binding_id, operation_id, platform, err);
    if (call == NULL)
        return -1;
    osbq_store_call_run(store, call);
    int rc = osbq_store_last_operation_result(call, out, err);
    osbq_store_call_free(&call);
    return rc;
}
