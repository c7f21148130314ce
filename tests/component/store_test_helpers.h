/* What the tests of the store share: their fixture (a redis-server, the store on it and a plain
 * connection), and blocking forms of the gateway's store calls for the tests that drive the store
 * without a pipeline: each makes the call, runs it at once (osbq_store_call_run) and reads its
 * answer, with the returns of the matching _result function. The daemons never block on these. */
#ifndef OSBQ_TESTS_STORE_TEST_HELPERS_H
#define OSBQ_TESTS_STORE_TEST_HELPERS_H

#include <hiredis/hiredis.h>

#include "redis_fixture.h"
#include "store_requests.h"

/* A redis-server, a store on it and a plain connection to it. */
struct store_fixture {
    struct redis_fixture redis; /* the server */
    struct osbq_config cfg;     /* configuration pointing at it */
    struct osbq_store *store;   /* the store under test */
    redisContext *direct;       /* a plain connection to load and inspect keys */
};

/* Starts f: a redis-server, a store on it with the configuration f->cfg already holds (a
 * Redis timeout of 2 s unless it says one), its keys in namespace ns kept an hour, and a plain
 * connection. 0, or -1 (store_fixture_stop still stops what started). */
int store_fixture_start(struct store_fixture *f, const char *ns);

/* Stops what store_fixture_start started; f can be started again. */
void store_fixture_stop(struct store_fixture *f);

/* cmocka setup: starts a new fixture, its keys in namespace ns, into *state. 0 or -1. */
int store_fixture_setup(void **state, const char *ns);

/* cmocka teardown: stops the fixture *state and frees it. Returns 0. */
int store_fixture_teardown(void **state);

/* A begin request of kind for operation op on instance with digest, as the tests send one
 * unless they set more: service "svc", plan "plan", the job "job-bytes", API 2.17, a claim
 * timeout of 30 s (the strings borrowed). */
struct osbq_begin_request store_test_request(const char *kind, const char *op, const char *instance,
                                             const char *digest);

/* osbq_store_begin_call, run; osbq_store_begin_result's returns. */
int osbq_store_begin(struct osbq_store *store, const struct osbq_begin_request *req,
                     struct osbq_begin_reply *out, struct osbq_error *err);

/* osbq_store_last_operation_call, run; osbq_store_last_operation_result's returns. */
int osbq_store_last_operation(struct osbq_store *store, const char *instance_id,
                              const char *binding_id, const char *operation_id,
                              const char *platform, struct osbq_last_op *out,
                              struct osbq_error *err);

/* osbq_store_poll_call, run; osbq_store_poll_result's returns. */
int store_poll(struct store_fixture *f, const char *operation_id, const char *instance_id,
               const char *binding_id, const char *platform, struct osbq_last_op *out);

/* The hash field of key on the fixture's server, or "" when absent; valid until the next call. */
const char *store_field(struct store_fixture *f, const char *key, const char *name);

#endif
