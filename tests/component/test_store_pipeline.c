/* The store's pipeline (store/store_pipeline.c) against a real redis-server: replies reach the
 * calls they answer while several threads submit at once, plain commands among scripts,
 * NOSCRIPT, a server that stops answering, a connection the server closes, draining, and the
 * blocking calls of several threads sent through it (osbq_store_use_pipeline); with
 * OSBQ_REDIS_MIN_ACKS, acceptances answered only once a replica holds them (WAIT), and refused
 * as not durable when none does, for the pipeline and for a worker's outcome. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "redis_fixture.h"
#include "store_operations.h"
#include "store_pipeline.h"
#include "store_requests.h"
#include "store_test_helpers.h"
#include "test_main.h"

/* Short, so the stopped-Redis test ends quickly; the fan-out test, whose 1,600 calls queue behind
 * each other on one connection, gets the long one so a loaded machine cannot time it out. */
#define TIMEOUT_MS      600u
#define LONG_TIMEOUT_MS 10000u
/* OSBQ_REDIS_ACK_TIMEOUT_MS and OSBQ_LEASE_MS of the acknowledgement tests. */
#define ACK_TIMEOUT_MS 200u
#define ACK_LEASE_MS   700u
/* Tries of a call that a loaded machine's late acknowledgement answered "not durable". */
#define ACK_TRIES 5

struct fixture {
    struct store_fixture base;            /* the server, the store the pipeline uses, and a
                                           * plain connection to inspect and disturb */
    struct osbq_store_pipeline *pipeline; /* under test */
    struct redis_fixture replica;         /* acknowledgement tests: a replica, pid 0 until
                                           * started */
};

static int setup_with_acks(void **state, unsigned timeout_ms, unsigned min_acks,
                           unsigned ack_timeout_ms)
{
    struct fixture *f = calloc(1, sizeof *f);
    *state = f;
    if (f == NULL)
        return -1;
    f->base.cfg.redis_timeout_ms = timeout_ms;
    f->base.cfg.redis_min_acks = min_acks;
    f->base.cfg.redis_ack_timeout_ms = ack_timeout_ms;
    f->base.cfg.lease_ms = ACK_LEASE_MS;
    if (store_fixture_start(&f->base, "t") < 0)
        return -1;
    struct osbq_error err = {0};
    f->pipeline = osbq_store_pipeline_start(f->base.store, &err);
    return f->pipeline != NULL ? 0 : -1;
}

static int setup(void **state)
{
    return setup_with_acks(state, TIMEOUT_MS, 0, ACK_TIMEOUT_MS);
}

static int setup_long_timeout(void **state)
{
    return setup_with_acks(state, LONG_TIMEOUT_MS, 0, ACK_TIMEOUT_MS);
}

/* OSBQ_REDIS_MIN_ACKS=1, no replica yet. */
static int setup_one_ack(void **state)
{
    return setup_with_acks(state, LONG_TIMEOUT_MS, 1, ACK_TIMEOUT_MS);
}

/* A replica that is there but, on a loaded machine, may take longer than ACK_TIMEOUT_MS to
 * acknowledge a batch: what is tested is that it does, not how fast. */
static int setup_one_ack_patient(void **state)
{
    return setup_with_acks(state, LONG_TIMEOUT_MS, 1, LONG_TIMEOUT_MS);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    osbq_store_pipeline_free(&f->pipeline);
    if (f->replica.pid > 0)
        redis_fixture_stop(&f->replica);
    store_fixture_stop(&f->base);
    free(f);
    return 0;
}

/* Counts answered calls; a waiter sleeps until enough are in. */
struct answers {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    size_t count;
};

static void answered(void *ctx)
{
    struct answers *a = ctx;
    pthread_mutex_lock(&a->lock);
    a->count++;
    pthread_cond_broadcast(&a->changed);
    pthread_mutex_unlock(&a->lock);
}

static void answers_init(struct answers *a)
{
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->changed, NULL);
    a->count = 0;
}

/* Waits until count calls were answered, at most 10 s; returns how many were. */
static size_t answers_wait(struct answers *a, size_t count)
{
    struct timespec until;
    (void)clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&a->lock);
    while (a->count < count && pthread_cond_timedwait(&a->changed, &a->lock, &until) == 0)
        ;
    size_t got = a->count;
    pthread_mutex_unlock(&a->lock);
    return got;
}

static void answers_clear(struct answers *a)
{
    pthread_cond_destroy(&a->changed);
    pthread_mutex_destroy(&a->lock);
}

static struct osbq_store_call *provision_call(struct fixture *f, const char *op,
                                              const char *instance)
{
    struct osbq_begin_request req = store_test_request("provision", op, instance, "d");
    struct osbq_error err = {0};
    struct osbq_store_call *call = osbq_store_begin_call(f->base.store, &req, &err);
    if (call == NULL)
        fail_msg("begin_call: %s", err.text);
    return call;
}

/* One submitting thread: its calls, each for its own instance, all in flight at once. */
struct submitter {
    struct fixture *f;
    int index;              /* which thread */
    struct answers answers; /* its calls answered */
    struct osbq_store_call *calls[400];
};

#define CALLS_PER_THREAD 400
#define THREADS          4

static void *submit_many(void *arg)
{
    struct submitter *s = arg;
    for (int i = 0; i < CALLS_PER_THREAD; i++) {
        char op[32], instance[32];
        (void)snprintf(op, sizeof op, "op-%d-%d", s->index, i);
        (void)snprintf(instance, sizeof instance, "i-%d-%d", s->index, i);
        s->calls[i] = provision_call(s->f, op, instance);
        if (osbq_store_pipeline_submit(s->f->pipeline, s->calls[i], answered, &s->answers) != 0)
            return s;
    }
    return NULL;
}

/* THREADS threads submit CALLS_PER_THREAD provisions each at once; every one must be answered
 * as accepted, with the operation its call proposed. */
static void provision_from_threads(struct fixture *f)
{
    struct submitter s[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        s[t].f = f;
        s[t].index = t;
        answers_init(&s[t].answers);
        assert_int_equal(pthread_create(&threads[t], NULL, submit_many, &s[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        void *refused = NULL;
        pthread_join(threads[t], &refused);
        assert_null(refused);
    }
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(answers_wait(&s[t].answers, CALLS_PER_THREAD), CALLS_PER_THREAD);
        for (int i = 0; i < CALLS_PER_THREAD; i++) {
            struct osbq_begin_reply got = {0};
            struct osbq_error err = {0};
            char op[32];
            (void)snprintf(op, sizeof op, "op-%d-%d", t, i);
            assert_int_equal(osbq_store_begin_result(s[t].calls[i], &got, &err), 0);
            assert_int_equal(got.answer, OSBQ_BEGIN_ACCEPTED);
            assert_non_null(got.operation_id);
            assert_string_equal(got.operation_id, op);
            osbq_begin_reply_clear(&got);
            osbq_store_call_free(&s[t].calls[i]);
        }
        answers_clear(&s[t].answers);
    }
}

/* Several threads' calls share the connection; each reply reaches the call it answers: an
 * accepted provision's reply names the operation that call proposed. */
static void test_replies_reach_their_calls(void **state)
{
    struct fixture *f = *state;
    provision_from_threads(f);
    /* The same instance again: the script saw the first call's write. */
    struct answers one;
    answers_init(&one);
    struct osbq_store_call *call = provision_call(f, "op-again", "i-2-7");
    assert_int_equal(osbq_store_pipeline_submit(f->pipeline, call, answered, &one), 0);
    assert_int_equal(answers_wait(&one, 1), 1);
    struct osbq_begin_reply got = {0};
    struct osbq_error err = {0};
    assert_int_equal(osbq_store_begin_result(call, &got, &err), 0);
    assert_int_equal(got.answer, OSBQ_BEGIN_IN_PROGRESS);
    assert_string_equal(got.operation_id, "op-2-7");
    osbq_begin_reply_clear(&got);
    osbq_store_call_free(&call);
    answers_clear(&one);
}

/* Submits one last_operation call and waits for it; returns what the result says. */
static int last_operation(struct fixture *f, const char *instance, struct osbq_last_op *op,
                          struct osbq_error *err, int64_t *took_ms)
{
    struct answers one;
    answers_init(&one);
    struct osbq_store_call *call =
        osbq_store_last_operation_call(f->base.store, instance, NULL, NULL, NULL, err);
    assert_non_null(call);
    int64_t start = osbq_clock_ms();
    assert_int_equal(osbq_store_pipeline_submit(f->pipeline, call, answered, &one), 0);
    assert_int_equal(answers_wait(&one, 1), 1);
    if (took_ms != NULL)
        *took_ms = osbq_clock_ms() - start;
    int rc = osbq_store_last_operation_result(call, op, err);
    osbq_store_call_free(&call);
    answers_clear(&one);
    return rc;
}

static void provision(struct fixture *f, const char *op, const char *instance)
{
    struct answers one;
    answers_init(&one);
    struct osbq_store_call *call = provision_call(f, op, instance);
    assert_int_equal(osbq_store_pipeline_submit(f->pipeline, call, answered, &one), 0);
    assert_int_equal(answers_wait(&one, 1), 1);
    struct osbq_begin_reply got = {0};
    struct osbq_error err = {0};
    assert_int_equal(osbq_store_begin_result(call, &got, &err), 0);
    assert_int_equal(got.answer, OSBQ_BEGIN_ACCEPTED);
    osbq_begin_reply_clear(&got);
    osbq_store_call_free(&call);
    answers_clear(&one);
}

/* The script cache flushed under a live connection: the call is answered all the same. */
static void test_noscript_loads_and_resends(void **state)
{
    struct fixture *f = *state;
    provision(f, "op-ns", "i-ns");
    redisReply *r = redisCommand(f->base.direct, "SCRIPT FLUSH");
    assert_non_null(r);
    freeReplyObject(r);
    struct osbq_last_op op = {0};
    struct osbq_error err = {0};
    assert_int_equal(last_operation(f, "i-ns", &op, &err, NULL), 1);
    assert_string_equal(op.state, "queued");
    osbq_last_op_clear(&op);
}

/* Redis stopped (SIGSTOP): the call fails within the timeout, not later; once Redis is back the
 * pipeline reconnects. */
static void test_unanswered_call_fails_within_the_timeout(void **state)
{
    struct fixture *f = *state;
    provision(f, "op-st", "i-st");
    assert_int_equal(kill(f->base.redis.pid, SIGSTOP), 0);
    struct osbq_last_op op = {0};
    struct osbq_error err = {0};
    int64_t took = 0;
    int rc = last_operation(f, "i-st", &op, &err, &took);
    assert_int_equal(kill(f->base.redis.pid, SIGCONT), 0);
    assert_int_equal(rc, -1);
    assert_int_equal(err.code, OSBQ_ERR_UNAVAILABLE);
    assert_non_null(strstr(err.text, "OSBQ_REDIS_TIMEOUT_MS"));
    assert_true(took >= TIMEOUT_MS - 50);
    assert_true(took < TIMEOUT_MS + 1500);
    /* Right after the failure the store fails fast; then one call reconnects. */
    osbq_clock_sleep_ms(400);
    memset(&err, 0, sizeof err);
    assert_int_equal(last_operation(f, "i-st", &op, &err, NULL), 1);
    osbq_last_op_clear(&op);
}

/* The server closes the connection: the next call after the fail-fast moment reconnects. */
static void test_reconnects_after_the_server_closed_it(void **state)
{
    struct fixture *f = *state;
    provision(f, "op-k", "i-k");
    redisReply *r = redisCommand(f->base.direct, "CLIENT KILL TYPE normal SKIPME yes");
    assert_non_null(r);
    assert_true(r->type == REDIS_REPLY_INTEGER && r->integer >= 1);
    freeReplyObject(r);
    struct osbq_last_op op = {0};
    struct osbq_error err = {0};
    int rc = 0;
    /* The first call may find the dead connection (and fail) or a new one; within a second it
     * must work. */
    for (int i = 0; i < 20 && rc != 1; i++) {
        memset(&err, 0, sizeof err);
        rc = last_operation(f, "i-k", &op, &err, NULL);
        if (rc != 1)
            osbq_clock_sleep_ms(100);
    }
    assert_int_equal(rc, 1);
    assert_string_equal(op.state, "queued");
    osbq_last_op_clear(&op);
}

/* A plain command (HMGET) travels with the script calls; its answer is its own. */
static void test_plain_commands_share_the_connection(void **state)
{
    struct fixture *f = *state;
    redisReply *r = redisCommand(f->base.direct, "HSET t:binding:i-c:b-1 state bound result %s",
                                 "{\"credentials\":{\"u\":\"x\"}}");
    assert_non_null(r);
    freeReplyObject(r);
    struct answers some;
    answers_init(&some);
    struct osbq_error err = {0};
    /* A plain command first: the pipeline's output buffer is still empty. */
    struct osbq_store_call *calls[3] = {
        osbq_store_binding_get_call(f->base.store, "i-c", "b-1", &err),
        provision_call(f, "op-c", "i-c"),
        osbq_store_binding_get_call(f->base.store, "i-c", "b-2", &err),
    };
    for (int i = 0; i < 3; i++) {
        assert_non_null(calls[i]);
        assert_int_equal(osbq_store_pipeline_submit(f->pipeline, calls[i], answered, &some), 0);
    }
    assert_int_equal(answers_wait(&some, 3), 3);
    struct osbq_begin_reply got = {0};
    assert_int_equal(osbq_store_begin_result(calls[1], &got, &err), 0);
    assert_int_equal(got.answer, OSBQ_BEGIN_ACCEPTED);
    osbq_begin_reply_clear(&got);
    struct osbq_binding b = {0};
    assert_int_equal(osbq_store_binding_get_result(calls[0], &b, &err), 1);
    assert_string_equal(b.state, "bound");
    assert_string_equal(b.result, "{\"credentials\":{\"u\":\"x\"}}");
    osbq_binding_clear(&b);
    assert_int_equal(osbq_store_binding_get_result(calls[2], &b, &err), 0);
    for (int i = 0; i < 3; i++)
        osbq_store_call_free(&calls[i]);
    answers_clear(&some);
}

/* Draining answers what was taken, then refuses (the call stays the caller's, with a reason). */
static void test_drain_answers_then_refuses(void **state)
{
    struct fixture *f = *state;
    struct answers some;
    answers_init(&some);
    struct osbq_store_call *calls[50];
    for (int i = 0; i < 50; i++) {
        char op[32], instance[32];
        (void)snprintf(op, sizeof op, "op-dr-%d", i);
        (void)snprintf(instance, sizeof instance, "i-dr-%d", i);
        calls[i] = provision_call(f, op, instance);
        assert_int_equal(osbq_store_pipeline_submit(f->pipeline, calls[i], answered, &some), 0);
    }
    osbq_store_pipeline_drain(f->pipeline);
    assert_int_equal(answers_wait(&some, 50), 50);
    for (int i = 0; i < 50; i++) {
        struct osbq_begin_reply got = {0};
        struct osbq_error err = {0};
        assert_int_equal(osbq_store_begin_result(calls[i], &got, &err), 0);
        assert_int_equal(got.answer, OSBQ_BEGIN_ACCEPTED);
        osbq_begin_reply_clear(&got);
        osbq_store_call_free(&calls[i]);
    }
    struct osbq_store_call *late = provision_call(f, "op-late", "i-late");
    assert_int_equal(osbq_store_pipeline_submit(f->pipeline, late, answered, &some), -1);
    struct osbq_begin_reply got = {0};
    struct osbq_error err = {0};
    assert_int_equal(osbq_store_begin_result(late, &got, &err), -1);
    assert_int_equal(err.code, OSBQ_ERR_UNAVAILABLE);
    osbq_store_call_free(&late);
    answers_clear(&some);
    /* Nothing of the refused call reached Redis. */
    redisReply *r = redisCommand(f->base.direct, "EXISTS t:instance:i-late");
    assert_true(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 0);
    freeReplyObject(r);
}

/* The start of what "INFO replication" on c says of key (e.g. "master_link_status:up"). */
static bool info_says(redisContext *c, const char *text)
{
    redisReply *r = redisCommand(c, "INFO replication");
    bool says = r != NULL && r->type == REDIS_REPLY_STRING && strstr(r->str, text) != NULL;
    freeReplyObject(r);
    return says;
}

/* Starts f->replica as a replica of f->base.redis and waits until it is in sync. */
static void start_replica(struct fixture *f)
{
    assert_int_equal(redis_fixture_start(&f->replica), 0);
    redisContext *c = redisConnect("127.0.0.1", f->replica.port);
    assert_true(c != NULL && c->err == 0);
    redisReply *r = redisCommand(c, "REPLICAOF 127.0.0.1 %d", f->base.redis.port);
    assert_non_null(r);
    freeReplyObject(r);
    bool up = false;
    for (int i = 0; i < 100 && !(up = info_says(c, "master_link_status:up")); i++)
        osbq_clock_sleep_ms(100);
    redisFree(c);
    assert_true(up);
    for (int i = 0; i < 100 && !info_says(f->base.direct, "state=online"); i++)
        osbq_clock_sleep_ms(100);
}

/* Submits call, waits for it, and reads it as a begin: the result's return. */
static int begin_through_pipeline(struct fixture *f, struct osbq_store_call *call,
                                  struct osbq_begin_reply *got, struct osbq_error *err)
{
    struct answers one;
    answers_init(&one);
    assert_int_equal(osbq_store_pipeline_submit(f->pipeline, call, answered, &one), 0);
    assert_int_equal(answers_wait(&one, 1), 1);
    answers_clear(&one);
    return osbq_store_begin_result(call, got, err);
}

/* No replica: the acceptance is answered "not durable" after the WAIT's timeout, though the
 * script recorded it; reads fail too until a replica is back; the repeat of the request finds the
 * same operation. */
static void test_acceptance_without_replica_is_not_durable(void **state)
{
    struct fixture *f = *state;
    struct osbq_begin_reply got = {0};
    struct osbq_error err = {0};
    struct osbq_store_call *call = provision_call(f, "op-a1", "i-a1");
    int64_t start = osbq_clock_ms();
    assert_int_equal(begin_through_pipeline(f, call, &got, &err), -1);
    int64_t took = osbq_clock_ms() - start;
    assert_true(osbq_store_call_not_durable(call));
    assert_int_equal(err.code, OSBQ_ERR_UNAVAILABLE);
    assert_non_null(strstr(err.text, "OSBQ_REDIS_MIN_ACKS"));
    assert_true(took >= ACK_TIMEOUT_MS - 20);
    assert_true(osbq_store_ack_timeout_count(f->base.store) >= 1);
    osbq_store_call_free(&call);
    /* A read fails as well: what it read is not on a replica. */
    struct osbq_last_op op = {0};
    memset(&err, 0, sizeof err);
    assert_int_equal(last_operation(f, "i-a1", &op, &err, NULL), -1);
    assert_int_equal(err.code, OSBQ_ERR_UNAVAILABLE);
    /* Replicas back: the record is there, and the platform's retry joins the operation
     * recorded the first time. A loaded machine may schedule the replica's acknowledgement
     * past ACK_TIMEOUT_MS: that answer is "not durable" again, and is retried as a platform
     * retries a 503. */
    start_replica(f);
    int rc = -1;
    for (int i = 0; i < ACK_TRIES && rc == -1 && err.code == OSBQ_ERR_UNAVAILABLE; i++) {
        memset(&err, 0, sizeof err);
        rc = last_operation(f, "i-a1", &op, &err, NULL);
    }
    assert_int_equal(rc, 1);
    assert_string_equal(op.state, "queued");
    osbq_last_op_clear(&op);
    rc = -1;
    for (int i = 0; i < ACK_TRIES && rc == -1; i++) {
        osbq_store_call_free(&call);
        call = provision_call(f, "op-a1-retry", "i-a1");
        memset(&err, 0, sizeof err);
        rc = begin_through_pipeline(f, call, &got, &err);
        if (rc == -1)
            assert_true(osbq_store_call_not_durable(call));
    }
    assert_int_equal(rc, 0);
    assert_false(osbq_store_call_not_durable(call));
    assert_int_equal(got.answer, OSBQ_BEGIN_IN_PROGRESS);
    assert_string_equal(got.operation_id, "op-a1");
    osbq_begin_reply_clear(&got);
    osbq_store_call_free(&call);
}

/* With a replica, many calls from several threads are each answered once a WAIT behind them
 * answered, in batches (far fewer WAITs than calls). */
static void test_acceptances_with_replica_are_acknowledged(void **state)
{
    struct fixture *f = *state;
    start_replica(f);
    redisReply *r = redisCommand(f->base.direct, "CONFIG RESETSTAT");
    freeReplyObject(r);
    provision_from_threads(f);
    assert_int_equal(osbq_store_ack_timeout_count(f->base.store), 0);
    r = redisCommand(f->base.direct, "INFO commandstats");
    assert_true(r != NULL && r->type == REDIS_REPLY_STRING);
    const char *wait = strstr(r->str, "cmdstat_wait:calls=");
    assert_non_null(wait);
    long waits = strtol(wait + strlen("cmdstat_wait:calls="), NULL, 10);
    print_message("%d acceptances, %ld WAITs\n", THREADS * CALLS_PER_THREAD, waits);
    assert_true(waits >= 1 && waits < THREADS * CALLS_PER_THREAD);
    freeReplyObject(r);
    /* The replica has them all. */
    redisContext *c = redisConnect("127.0.0.1", f->replica.port);
    r = redisCommand(c, "EXISTS t:instance:i-3-399 t:instance:i-0-0");
    assert_true(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 2);
    freeReplyObject(r);
    redisFree(c);
}

/* A worker's outcome with no replica: finish WAITs again up to a lease, then stands recorded
 * on the primary (1), each short WAIT counted. */
static void test_outcome_without_replica_waits_a_lease(void **state)
{
    struct fixture *f = *state;
    struct osbq_begin_reply got = {0};
    struct osbq_error err = {0};
    struct osbq_store_call *call = provision_call(f, "op-w1", "i-w1");
    assert_int_equal(begin_through_pipeline(f, call, &got, &err), -1); /* recorded, not durable */
    osbq_store_call_free(&call);
    assert_int_equal(osbq_store_claim(f->base.store, "op-w1", "w1", 1, 10000, NULL, &err), 1);
    uint64_t before = osbq_store_ack_timeout_count(f->base.store);
    struct osbq_op_result result = {.succeeded = true};
    int64_t start = osbq_clock_ms();
    assert_int_equal(osbq_store_finish(f->base.store, "op-w1", "w1", &result, &err), 1);
    int64_t took = osbq_clock_ms() - start;
    assert_true(took >= ACK_LEASE_MS - 20);
    assert_true(took < ACK_LEASE_MS + 3 * ACK_TIMEOUT_MS + 1000);
    assert_true(osbq_store_ack_timeout_count(f->base.store) >= before + 3);
}

/* With a replica, an outcome is acknowledged by its first WAIT: none times out, so finish does
 * not wait out a lease. (The patient fixture: on a loaded machine the acknowledgement may come
 * later than ACK_TIMEOUT_MS; what is tested is that it comes.) */
static void test_outcome_with_replica_is_acknowledged(void **state)
{
    struct fixture *f = *state;
    struct osbq_error err = {0};
    start_replica(f);
    provision(f, "op-w2", "i-w2");
    assert_int_equal(osbq_store_claim(f->base.store, "op-w2", "w1", 1, 10000, NULL, &err), 1);
    struct osbq_op_result result = {.succeeded = true};
    assert_int_equal(osbq_store_finish(f->base.store, "op-w2", "w1", &result, &err), 1);
    assert_int_equal(osbq_store_ack_timeout_count(f->base.store), 0);
}

/* Connections the server accepted so far (INFO stats). */
static long long connections_received(struct fixture *f)
{
    redisReply *r = redisCommand(f->base.direct, "INFO stats");
    assert_true(r != NULL && r->type == REDIS_REPLY_STRING);
    const char *at = strstr(r->str, "total_connections_received:");
    assert_non_null(at);
    long long n = atoll(at + strlen("total_connections_received:"));
    freeReplyObject(r);
    return n;
}

#define BLOCKING_THREADS 4
#define BLOCKING_CALLS   200

/* One thread's blocking calls: progress reports for operations nobody holds (each answers 0). */
static void *report_progress(void *arg)
{
    struct fixture *f = arg;
    for (int i = 0; i < BLOCKING_CALLS; i++) {
        struct osbq_error err = {0};
        if (osbq_store_progress(f->base.store, "op-nobody", "w", "text", 1000, &err) != 0)
            return f;
    }
    return NULL;
}

/* With osbq_store_use_pipeline, the blocking calls of several threads are answered through the
 * pipeline's one connection (no pooled connection is opened for them); once the pipeline
 * drains, calls run on a pooled connection again. */
static void test_blocking_calls_share_the_pipeline(void **state)
{
    struct fixture *f = *state;
    struct osbq_error err = {0};
    /* The pipeline connects on its first call. */
    struct osbq_store_call *ping = osbq_store_ping_call(&err);
    assert_non_null(ping);
    struct answers some;
    answers_init(&some);
    assert_int_equal(osbq_store_pipeline_submit(f->pipeline, ping, answered, &some), 0);
    assert_int_equal(answers_wait(&some, 1), 1);
    assert_int_equal(osbq_store_ping_result(ping, &err), 0);
    osbq_store_call_free(&ping);
    answers_clear(&some);

    osbq_store_use_pipeline(f->base.store, f->pipeline);
    long long before = connections_received(f);
    pthread_t threads[BLOCKING_THREADS];
    for (int i = 0; i < BLOCKING_THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, report_progress, f), 0);
    for (int i = 0; i < BLOCKING_THREADS; i++) {
        void *failed = f;
        assert_int_equal(pthread_join(threads[i], &failed), 0);
        assert_null(failed);
    }
    assert_int_equal(connections_received(f), before);

    osbq_store_pipeline_drain(f->pipeline);
    assert_int_equal(osbq_store_progress(f->base.store, "op-nobody", "w", "text", 1000, &err), 0);
    assert_int_equal(connections_received(f), before + 1);
    osbq_store_use_pipeline(f->base.store, NULL);
}

OSBQ_TEST_MAIN(
    NULL, NULL,
    cmocka_unit_test_setup_teardown(test_replies_reach_their_calls, setup_long_timeout, teardown),
    cmocka_unit_test_setup_teardown(test_noscript_loads_and_resends, setup, teardown),
    cmocka_unit_test_setup_teardown(test_unanswered_call_fails_within_the_timeout, setup, teardown),
    cmocka_unit_test_setup_teardown(test_reconnects_after_the_server_closed_it, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plain_commands_share_the_connection, setup, teardown),
    cmocka_unit_test_setup_teardown(test_drain_answers_then_refuses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_acceptance_without_replica_is_not_durable, setup_one_ack,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_acceptances_with_replica_are_acknowledged,
                                    setup_one_ack_patient, teardown),
    cmocka_unit_test_setup_teardown(test_outcome_without_replica_waits_a_lease, setup_one_ack,
                                    teardown),
    cmocka_unit_test_setup_teardown(test_outcome_with_replica_is_acknowledged,
                                    setup_one_ack_patient, teardown),
    cmocka_unit_test_setup_teardown(test_blocking_calls_share_the_pipeline, setup_long_timeout,
                                    teardown))
