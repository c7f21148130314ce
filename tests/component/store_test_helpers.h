/* Blocking forms of the gateway's store calls, for the tests that drive the store without a
 * pipeline: each makes the call, runs it at once (osbq_store_call_run) and reads its answer,
 * with the returns of the matching _result function. The daemons never block on these. */
#ifndef OSBQ_TESTS_STORE_TEST_HELPERS_H
#define OSBQ_TESTS_STORE_TEST_HELPERS_H

#include "store_requests.h"

/* osbq_store_begin_instance_call, run; osbq_store_begin_result's returns. */
int osbq_store_begin_instance(struct osbq_store *store, const struct osbq_begin_request *req,
                              struct osbq_begin_reply *out, struct osbq_error *err);

/* osbq_store_last_operation_call, run; osbq_store_last_operation_result's returns. */
int osbq_store_last_operation(struct osbq_store *store, const char *instance_id,
                              const char *binding_id, const char *operation_id,
                              const char *platform, struct osbq_last_op *out,
                              struct osbq_error *err);

#endif
