/* A hand-over in the begin scripts (docs/decisions/0042), against a real redis-server: an
 * operation accepted for a worker the gateway names is recorded as claim.lua's first claim
 * leaves one (running, that worker, its lease, claims 1, started_ms; its queue entry scored by
 * the lease), so progress, finish, a second worker's claim, the recovery loop and osbq-ctl's
 * history take it as claimed; any answer but "accepted" leaves what it found as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_fixture.h"
#include "store_admin.h"
#include "store_operations.h"
#include "store_recovery.h"
#include "store_test_helpers.h"
#include "test_main.h"

/* How long a live hand-over lasts in these tests: longer than any of them runs. */
enum { LIVE_LEASE_MS = 60000 };

static int setup(void **state)
{
    return store_fixture_setup(state, "t");
}

/* The answer to an operation of the tenant "cf/org-1" on instance (on its binding when binding
 * is not NULL), handed to worker until until_ms (worker NULL: not handed). */
static enum osbq_begin_answer begin_handed(struct store_fixture *f, const char *kind,
                                           const char *op, const char *instance,
                                           const char *binding, const char *worker,
                                           int64_t until_ms)
{
    struct osbq_begin_request req = store_test_request(kind, op, instance, "d");
    req.tenant = "cf/org-1";
    req.binding.binding_id = binding;
    req.handed_worker = worker;
    req.handed_until = until_ms;
    struct osbq_begin_reply reply = {0};
    struct osbq_error err = {0};
    if (osbq_store_begin(f->store, &req, &reply, &err) != 0)
        fail_msg("begin %s: %s", kind, err.text);
    enum osbq_begin_answer answer = reply.answer;
    osbq_begin_reply_clear(&reply);
    return answer;
}

/* The integer value of a hash field (0 when absent). */
static int64_t field_ms(struct store_fixture *f, const char *key, const char *name)
{
    return strtoll(store_field(f, key, name), NULL, 10);
}

/* op's score in the queue (-1 when it has no entry). */
static int64_t queue_score(struct store_fixture *f, const char *op)
{
    redisReply *r = redisCommand(f->direct, "ZSCORE t:queue %s", op);
    assert_non_null(r);
    int64_t score = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return score;
}

/* worker's outcome of op (succeeded): finish.lua's answer. */
static int finish_as(struct store_fixture *f, const char *op, const char *worker)
{
    const struct osbq_op_result result = {.succeeded = true, .description = "Done."};
    struct osbq_error err = {0};
    return osbq_store_finish(f->store, op, worker, &result, &err);
}

static int claim_as(struct store_fixture *f, const char *op, const char *worker)
{
    struct osbq_error err = {0};
    return osbq_store_claim(f->store, op, worker, 1, 10000, NULL, &err);
}

static int renew_as(struct store_fixture *f, const char *op, const char *worker)
{
    struct osbq_error err = {0};
    return osbq_store_progress(f->store, op, worker, NULL, 10000, &err);
}

/* Whether the history line says event, with the named worker and attempt (attempt 0: any). */
static bool line_says(const char *line, const char *event, const char *worker, int attempt)
{
    char want[96];
    (void)snprintf(want, sizeof want, "\"event\":\"%s\"", event);
    bool says = strstr(line, want) != NULL;
    (void)snprintf(want, sizeof want, "\"worker\":\"%s\"", worker);
    says = says && strstr(line, want) != NULL;
    (void)snprintf(want, sizeof want, "\"attempt\":%d", attempt);
    return says && (attempt == 0 || strstr(line, want) != NULL);
}

/* A provision handed to w1 is running for w1 from the start: its record is a first claim's, its
 * entry falls due with the lease; w1's renewals and outcome are its own, w2's claim and renewal
 * are refused while the lease lives; finished, osbq-ctl shows w1's claim at started_ms. */
static void test_handed_begin_records_a_claim(void **state)
{
    struct store_fixture *f = *state;
    int64_t before = osbq_store_now_ms();
    int64_t until = before + LIVE_LEASE_MS;
    assert_int_equal(begin_handed(f, "provision", "h1", "ih1", NULL, "w1", until),
                     OSBQ_BEGIN_ACCEPTED);
    int64_t after = osbq_store_now_ms();
    assert_string_equal(store_field(f, "t:op:h1", "state"), "running");
    assert_string_equal(store_field(f, "t:op:h1", "worker"), "w1");
    assert_int_equal(field_ms(f, "t:op:h1", "lease_until"), until);
    assert_string_equal(store_field(f, "t:op:h1", "claims"), "1");
    int64_t started = field_ms(f, "t:op:h1", "started_ms");
    assert_true(started >= before && started <= after);
    assert_int_equal(started, field_ms(f, "t:op:h1", "created_ms"));
    /* No history line: started_ms, worker and claims say the claim (decision 0041). */
    assert_string_equal(store_field(f, "t:op:h1", "history"), "");
    assert_int_equal(queue_score(f, "h1"), until);
    assert_string_equal(store_field(f, "t:instance:ih1", "lock_x"), "h1");

    assert_int_equal(claim_as(f, "h1", "w2"), 0); /* a live lease */
    assert_int_equal(renew_as(f, "h1", "w2"), 0);
    assert_int_equal(renew_as(f, "h1", "w1"), 1);
    assert_int_equal(finish_as(f, "h1", "w2"), 0);
    assert_int_equal(finish_as(f, "h1", "w1"), 1);
    assert_string_equal(store_field(f, "t:op:h1", "state"), "succeeded");
    assert_string_equal(store_field(f, "t:instance:ih1", "state"), "provisioned");
    assert_string_equal(store_field(f, "t:instance:ih1", "lock_x"), "");
    assert_int_equal(queue_score(f, "h1"), -1);

    struct osbq_fields fields = {0};
    char **history = NULL;
    size_t count = 0;
    struct osbq_error err = {0};
    assert_int_equal(osbq_store_operation_get(f->store, "h1", &fields, &history, &count, &err), 1);
    assert_string_equal(osbq_fields_get(&fields, "attempt"), "1");
    assert_int_equal(count, 2);
    assert_true(line_says(history[0], "claimed", "w1", 1));
    char at[48];
    (void)snprintf(at, sizeof at, "\"ms\":%lld", (long long)started);
    assert_non_null(strstr(history[0], at));
    assert_true(line_says(history[1], "succeeded", "w1", 0));
    osbq_fields_clear(&fields);
    osbq_store_strings_free(history);
}

/* A handed job lost with its worker (a hand-over whose lease ran out): another worker's claim
 * takes it over as a second attempt, or the recovery loop finds it as it finds a claimed one
 * whose worker died; the first worker's late renewal and outcome are refused. */
static void test_handed_lease_runs_out(void **state)
{
    struct store_fixture *f = *state;
    int64_t past = osbq_store_now_ms() - 1;
    assert_int_equal(begin_handed(f, "provision", "h2", "ih2", NULL, "w1", past),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(claim_as(f, "h2", "w2"), 1);
    assert_string_equal(store_field(f, "t:op:h2", "worker"), "w2");
    assert_string_equal(store_field(f, "t:op:h2", "claims"), "2");
    assert_int_equal(renew_as(f, "h2", "w1"), 0);
    assert_int_equal(finish_as(f, "h2", "w1"), 0);
    assert_int_equal(finish_as(f, "h2", "w2"), 1);
    struct osbq_fields fields = {0};
    char **history = NULL;
    size_t count = 0;
    struct osbq_error err = {0};
    assert_int_equal(osbq_store_operation_get(f->store, "h2", &fields, &history, &count, &err), 1);
    assert_int_equal(count, 3);
    assert_true(line_says(history[0], "claimed", "w1", 1));
    assert_true(line_says(history[1], "claimed", "w2", 2));
    assert_true(line_says(history[2], "succeeded", "w2", 0));
    osbq_fields_clear(&fields);
    osbq_store_strings_free(history);

    assert_int_equal(begin_handed(f, "provision", "h3", "ih3", NULL, "w1", past),
                     OSBQ_BEGIN_ACCEPTED);
    struct osbq_recovery_item *items = NULL;
    assert_int_equal(osbq_store_recover(f->store, 100, 5, 10000, true, &items, &count, NULL, &err),
                     0);
    const struct osbq_recovery_item *found = NULL;
    for (size_t i = 0; i < count; i++)
        if (strcmp(items[i].operation_id, "h3") == 0)
            found = &items[i];
    assert_non_null(found);
    assert_false(found->abandon);
    assert_true(found->lease_expired);
    assert_int_equal(found->claims, 1);
    osbq_recovery_free(items, count);
    assert_string_equal(store_field(f, "t:op:h3", "state"), "queued");
    assert_int_equal(finish_as(f, "h3", "w1"), 0);
}

/* begin_binding.lua hands a bind as begin_instance.lua hands an instance operation. */
static void test_handed_bind(void **state)
{
    struct store_fixture *f = *state;
    assert_int_equal(begin_handed(f, "provision", "hb0", "ihb", NULL, NULL, 0),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(claim_as(f, "hb0", "w0"), 1);
    assert_int_equal(finish_as(f, "hb0", "w0"), 1);
    int64_t until = osbq_store_now_ms() + LIVE_LEASE_MS;
    assert_int_equal(begin_handed(f, "bind", "hb1", "ihb", "b1", "w1", until), OSBQ_BEGIN_ACCEPTED);
    assert_string_equal(store_field(f, "t:op:hb1", "state"), "running");
    assert_string_equal(store_field(f, "t:op:hb1", "worker"), "w1");
    assert_int_equal(field_ms(f, "t:op:hb1", "lease_until"), until);
    assert_string_equal(store_field(f, "t:op:hb1", "claims"), "1");
    assert_int_equal(field_ms(f, "t:op:hb1", "started_ms"), field_ms(f, "t:op:hb1", "created_ms"));
    assert_string_equal(store_field(f, "t:op:hb1", "history"), "");
    assert_int_equal(queue_score(f, "hb1"), until);
    assert_string_equal(store_field(f, "t:instance:ihb", "lock_s"), "1");
    assert_int_equal(claim_as(f, "hb1", "w2"), 0);
    assert_int_equal(finish_as(f, "hb1", "w1"), 1);
    assert_string_equal(store_field(f, "t:binding:ihb:b1", "state"), "bound");
    assert_string_equal(store_field(f, "t:binding:ihb:b1", "lock_x"), "");
    assert_string_equal(store_field(f, "t:instance:ihb", "lock_s"), ""); /* no holder left */
}

/* Every field of op's record and its queue entry's score, as one text: what a begin that does not
 * accept must leave as it was. */
static void record_text(struct store_fixture *f, const char *op, char *out, size_t size)
{
    redisReply *r = redisCommand(f->direct, "HGETALL t:op:%s", op);
    assert_true(r != NULL && r->type == REDIS_REPLY_ARRAY);
    int used = snprintf(out, size, "score %lld", (long long)queue_score(f, op));
    for (size_t i = 0; i < r->elements && used > 0 && (size_t)used < size; i++)
        used += snprintf(out + used, size - (size_t)used, " %s", r->element[i]->str);
    assert_true(used > 0 && (size_t)used < size);
    freeReplyObject(r);
}

/* A begin handed to w1 that finds the instance (or binding) held answers as it would without a
 * hand-over and writes nothing: the operation it found stays queued or its own worker's, and
 * no record of the refused one exists. */
static void test_handover_needs_an_acceptance(void **state)
{
    struct store_fixture *f = *state;
    char before[2048], after[2048];
    int64_t until = osbq_store_now_ms() + LIVE_LEASE_MS;
    assert_int_equal(begin_handed(f, "provision", "r1", "ir", NULL, NULL, 0), OSBQ_BEGIN_ACCEPTED);
    record_text(f, "r1", before, sizeof before);
    /* The identical provision: in progress (joined, no waiter); another kind: busy. */
    assert_int_equal(begin_handed(f, "provision", "r2", "ir", NULL, "w1", until),
                     OSBQ_BEGIN_IN_PROGRESS);
    assert_int_equal(begin_handed(f, "deprovision", "r3", "ir", NULL, "w1", until),
                     OSBQ_BEGIN_BUSY);
    assert_int_equal(begin_handed(f, "bind", "r4", "ir", "rb", "w1", until),
                     OSBQ_BEGIN_INSTANCE_BUSY);
    record_text(f, "r1", after, sizeof after);
    assert_string_equal(after, before);
    assert_string_equal(store_field(f, "t:op:r1", "state"), "queued");

    /* Running for its own worker: still its own. */
    assert_int_equal(claim_as(f, "r1", "w0"), 1);
    record_text(f, "r1", before, sizeof before);
    assert_int_equal(begin_handed(f, "provision", "r5", "ir", NULL, "w1", until),
                     OSBQ_BEGIN_IN_PROGRESS);
    record_text(f, "r1", after, sizeof after);
    assert_string_equal(after, before);
    assert_string_equal(store_field(f, "t:op:r1", "worker"), "w0");
    for (const char *const *op = (const char *const[]){"r2", "r3", "r4", "r5", NULL}; *op; op++)
        assert_int_equal(queue_score(f, *op), -1);
    redisReply *r = redisCommand(f->direct, "EXISTS t:op:r2 t:op:r3 t:op:r4 t:op:r5");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
}

OSBQ_TEST_MAIN(setup, store_fixture_teardown, cmocka_unit_test(test_handed_begin_records_a_claim),
               cmocka_unit_test(test_handed_lease_runs_out), cmocka_unit_test(test_handed_bind),
               cmocka_unit_test(test_handover_needs_an_acceptance))
