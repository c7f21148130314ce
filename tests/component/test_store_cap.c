/* The cap on a tenant's operations in progress (OSBQ_POLICY in_progress_per_tenant) in the begin
 * scripts and finish.lua, against a real redis-server: checked and counted atomically, only
 * for accepted operations; a refusal writes nothing; a join does not count; every way an
 * operation ends gives its count back once, to the counter it took, whatever cap is in force
 * then; without a cap no command runs for it. */
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

/* The counters of the tenants below ("cf/org-a" and "cf/org-b", encoded as ids are). */
#define COUNTER_A "t:inprogress:cf%2Forg-a"
#define COUNTER_B "t:inprogress:cf%2Forg-b"

static int setup(void **state)
{
    return store_fixture_setup(state, "t");
}

/* A command's integer answer (GET of a counter: 0 when absent, EXISTS). */
static long long integer(struct store_fixture *f, const char *command, const char *key)
{
    redisReply *r = redisCommand(f->direct, "%s %s", command, key);
    assert_non_null(r);
    long long v = r->type == REDIS_REPLY_INTEGER  ? r->integer
                  : r->type == REDIS_REPLY_STRING ? atoll(r->str)
                                                  : 0;
    freeReplyObject(r);
    return v;
}

static long long counter(struct store_fixture *f, const char *key)
{
    return integer(f, "GET", key);
}

/* What a begin answered, with a CAPPED answer's count and tenant. */
struct answer {
    enum osbq_begin_answer answer;
    long long in_progress;
    char tenant[64];
};

static struct answer answer_of(int rc, struct osbq_begin_reply *reply, const struct osbq_error *err)
{
    if (rc != 0)
        fail_msg("begin: %s", err->text);
    struct answer a = {.answer = reply->answer, .in_progress = reply->in_progress};
    (void)snprintf(a.tenant, sizeof a.tenant, "%s", reply->tenant ? reply->tenant : "");
    osbq_begin_reply_clear(reply);
    return a;
}

/* An operation of tenant (NULL: none) with cap (NULL: none): on the instance, or on its binding
 * when binding is not NULL. */
static struct answer begin_of(struct store_fixture *f, const char *kind, const char *op,
                              const char *instance, const char *binding, const char *digest,
                              const char *tenant, const int64_t *cap)
{
    struct osbq_begin_request req = store_test_request(kind, op, instance, digest);
    req.quotas = strcmp(kind, "update") == 0 ? OSBQ_STORE_QUOTAS_UNCHANGED : NULL;
    req.tenant = tenant;
    req.in_progress_cap = cap;
    req.binding.binding_id = binding;
    struct osbq_begin_reply reply = {0};
    struct osbq_error err = {0};
    int rc = osbq_store_begin(f->store, &req, &reply, &err);
    return answer_of(rc, &reply, &err);
}

/* An instance operation of tenant (NULL: none) with cap (NULL: none). */
static struct answer begin(struct store_fixture *f, const char *kind, const char *op,
                           const char *instance, const char *digest, const char *tenant,
                           const int64_t *cap)
{
    return begin_of(f, kind, op, instance, NULL, digest, tenant, cap);
}

static struct answer begin_binding(struct store_fixture *f, const char *kind, const char *op,
                                   const char *instance, const char *binding, const char *tenant,
                                   const int64_t *cap)
{
    return begin_of(f, kind, op, instance, binding, strcmp(kind, "bind") == 0 ? "bd" : "", tenant,
                    cap);
}

/* Claims op as worker w1 and records its outcome. */
static void run_to_end(struct store_fixture *f, const char *op, bool ok)
{
    struct osbq_error err = {0};
    assert_int_equal(osbq_store_claim(f->store, op, "w1", 1, 10000, NULL, &err), 1);
    const struct osbq_op_result result = {
        .succeeded = ok, .description = ok ? "Done." : "Broken.", .instance_usable = true};
    assert_int_equal(osbq_store_finish(f->store, op, "w1", &result, &err), 1);
}

static int by_name(const void *a, const void *b)
{
    const redisReply *x = *(redisReply *const *)a, *y = *(redisReply *const *)b;
    return strcmp(x->str, y->str);
}

/* A digest of every key and its serialized value (DUMP), in key order: what a refusal must
 * leave as it was. */
static uint64_t snapshot(struct store_fixture *f)
{
    redisReply *keys = redisCommand(f->direct, "KEYS *");
    assert_non_null(keys);
    assert_int_equal(keys->type, REDIS_REPLY_ARRAY);
    qsort(keys->element, keys->elements, sizeof *keys->element, by_name);
    uint64_t h = 14695981039346656037u; /* FNV-1a */
    for (size_t i = 0; i < keys->elements; i++) {
        redisReply *dump = redisCommand(f->direct, "DUMP %s", keys->element[i]->str);
        assert_non_null(dump);
        assert_int_equal(dump->type, REDIS_REPLY_STRING);
        const char *parts[] = {keys->element[i]->str, dump->str};
        size_t lens[] = {keys->element[i]->len + 1, dump->len};
        for (size_t p = 0; p < 2; p++)
            for (size_t j = 0; j < lens[p]; j++)
                h = (h ^ (unsigned char)parts[p][j]) * 1099511628211u;
        freeReplyObject(dump);
    }
    freeReplyObject(keys);
    return h;
}

static void test_cap_counts_refuses_and_gives_back(void **state)
{
    struct store_fixture *f = *state;
    const int64_t two = 2;
    assert_int_equal(begin(f, "provision", "op1", "i1", "d1", "cf/org-a", &two).answer,
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(begin(f, "provision", "op2", "i2", "d2", "cf/org-a", &two).answer,
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(counter(f, COUNTER_A), 2);
    assert_string_equal(store_field(f, "t:op:op1", "in_progress_key"), COUNTER_A);

    /* An identical request joins the running operation: not counted, not refused. */
    assert_int_equal(begin(f, "provision", "op1b", "i1", "d1", "cf/org-a", &two).answer,
                     OSBQ_BEGIN_IN_PROGRESS);
    assert_int_equal(counter(f, COUNTER_A), 2);

    /* The third is refused, naming the tenant and its count, and writes nothing. */
    uint64_t before = snapshot(f);
    struct answer a = begin(f, "provision", "op3", "i3", "d3", "cf/org-a", &two);
    assert_int_equal(a.answer, OSBQ_BEGIN_CAPPED);
    assert_int_equal(a.in_progress, 2);
    assert_string_equal(a.tenant, "cf/org-a");
    assert_true(snapshot(f) == before);
    assert_int_equal(integer(f, "EXISTS", "t:instance:i3"), 0);

    /* Another tenant has its own count. */
    assert_int_equal(begin(f, "provision", "op4", "i4", "d4", "cf/org-b", &two).answer,
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(counter(f, COUNTER_B), 1);

    /* Ending gives back once: a second outcome is refused and changes nothing. */
    run_to_end(f, "op1", true);
    assert_int_equal(counter(f, COUNTER_A), 1);
    struct osbq_error err = {0};
    const struct osbq_op_result again = {.succeeded = true, .description = "Again."};
    assert_int_equal(osbq_store_finish(f->store, "op1", "w1", &again, &err), 0);
    assert_int_equal(counter(f, COUNTER_A), 1);
    assert_int_equal(begin(f, "provision", "op3", "i3", "d3", "cf/org-a", &two).answer,
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(counter(f, COUNTER_A), 2);

    /* A failure gives back too. */
    run_to_end(f, "op2", false);
    assert_int_equal(counter(f, COUNTER_A), 1);

    /* The last one ends: the counter goes. */
    run_to_end(f, "op3", true);
    run_to_end(f, "op4", true);
    assert_int_equal(integer(f, "EXISTS", COUNTER_A), 0);
    assert_int_equal(integer(f, "EXISTS", COUNTER_B), 0);
}

/* Every operation of an instance counts as the instance's tenant's (a deprovision's request
 * names no organization); deprovisions and unbinds are counted but never refused; updates and
 * binds are refused. */
static void test_cap_kinds_and_the_instance_tenant(void **state)
{
    struct store_fixture *f = *state;
    const int64_t one = 1;
    assert_int_equal(begin(f, "provision", "p1", "i1", "d1", "cf/org-a", &one).answer,
                     OSBQ_BEGIN_ACCEPTED);
    run_to_end(f, "p1", true);
    assert_int_equal(begin(f, "provision", "p2", "i2", "d2", "cf/org-a", &one).answer,
                     OSBQ_BEGIN_ACCEPTED);
    run_to_end(f, "p2", true);
    assert_int_equal(integer(f, "EXISTS", COUNTER_A), 0);

    /* A bind holds the tenant's one place... */
    assert_int_equal(begin_binding(f, "bind", "b1", "i1", "bid1", "cf", &one).answer,
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(counter(f, COUNTER_A), 1);
    /* ...so an update, a bind and a provision wait; their refusal names the instance's tenant. */
    struct answer a = begin(f, "update", "u1", "i2", "du", "cf", &one);
    assert_int_equal(a.answer, OSBQ_BEGIN_CAPPED);
    assert_string_equal(a.tenant, "cf/org-a");
    assert_int_equal(begin_binding(f, "bind", "b2", "i2", "bid2", "cf", &one).answer,
                     OSBQ_BEGIN_CAPPED);
    assert_int_equal(begin(f, "provision", "p3", "i3", "d3", "cf/org-a", &one).answer,
                     OSBQ_BEGIN_CAPPED);
    /* A deprovision (whose request says only "cf") counts as org-a's, over the cap. */
    assert_int_equal(begin(f, "deprovision", "x2", "i2", "", "cf", &one).answer,
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(counter(f, COUNTER_A), 2);
    assert_int_equal(integer(f, "EXISTS", "t:inprogress:cf"), 0);
    run_to_end(f, "b1", true);
    /* So does an unbind. */
    assert_int_equal(begin_binding(f, "unbind", "ub1", "i1", "bid1", "cf", &one).answer,
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(counter(f, COUNTER_A), 2);
    run_to_end(f, "x2", true);
    assert_int_equal(begin(f, "update", "u2", "i1", "du", "cf", &one).answer, OSBQ_BEGIN_BUSY);
    run_to_end(f, "ub1", true);
    assert_int_equal(integer(f, "EXISTS", COUNTER_A), 0);
    assert_int_equal(begin(f, "update", "u3", "i1", "du", "cf", &one).answer, OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(counter(f, COUNTER_A), 1);
    run_to_end(f, "u3", false);
    assert_int_equal(integer(f, "EXISTS", COUNTER_A), 0);
}

/* The recovery loop's abandon and an operator's fail give back, from queued, running and
 * waiting; what an operation holds goes back where it was taken even when the cap is gone or
 * was not there when it began. */
static void test_cap_every_end_and_policy_changes(void **state)
{
    struct store_fixture *f = *state;
    const int64_t cap = 10;
    struct osbq_error err = {0};
    /* Provisions q1..q4 of instances i1..i4 under the cap; q5 (of i5) begun without a cap:
     * not counted, and so not given back. */
    for (int i = 1; i <= 5; i++) {
        char op[8], instance[8], digest[8];
        (void)snprintf(op, sizeof op, "q%d", i);
        (void)snprintf(instance, sizeof instance, "i%d", i);
        (void)snprintf(digest, sizeof digest, "d%d", i);
        assert_int_equal(
            begin(f, "provision", op, instance, digest, "cf/org-a", i < 5 ? &cap : NULL).answer,
            OSBQ_BEGIN_ACCEPTED);
    }
    assert_string_equal(store_field(f, "t:op:q5", "in_progress_key"), "");
    assert_int_equal(counter(f, COUNTER_A), 4);

    /* Queued, abandoned by the recovery loop. */
    assert_int_equal(osbq_store_abandon(f->store, "q1", "Gave up.", &err), 1);
    assert_int_equal(counter(f, COUNTER_A), 3);
    assert_int_equal(osbq_store_abandon(f->store, "q1", "Again.", &err), 0);
    assert_int_equal(counter(f, COUNTER_A), 3);
    /* Queued, failed by an operator. */
    assert_int_equal(osbq_store_operator_fail(f->store, "q2", "Ops.", "ops", &err), 1);
    assert_int_equal(counter(f, COUNTER_A), 2);
    assert_int_equal(osbq_store_operator_fail(f->store, "q2", "Ops.", "ops", &err), 0);
    /* Running, failed by an operator: its worker's late outcome changes nothing. */
    assert_int_equal(osbq_store_claim(f->store, "q3", "w1", 1, 10000, NULL, &err), 1);
    assert_int_equal(osbq_store_operator_fail(f->store, "q3", "Ops.", "ops", &err), 1);
    const struct osbq_op_result late = {.succeeded = true, .description = "Late."};
    assert_int_equal(osbq_store_finish(f->store, "q3", "w1", &late, &err), 0);
    assert_int_equal(counter(f, COUNTER_A), 1);
    /* Waiting between two steps, failed by an operator. */
    assert_int_equal(osbq_store_claim(f->store, "q4", "w1", 1, 10000, NULL, &err), 1);
    const struct osbq_op_result step = {.in_progress = true, .description = "Half."};
    assert_int_equal(
        osbq_store_wait(f->store, "q4", "w1", &step, osbq_store_now_ms() + 60000, &err), 1);
    assert_string_equal(store_field(f, "t:op:q4", "state"), "waiting");
    assert_int_equal(counter(f, COUNTER_A), 1);
    assert_int_equal(osbq_store_operator_fail(f->store, "q4", "Ops.", "ops", &err), 1);
    assert_int_equal(integer(f, "EXISTS", COUNTER_A), 0);
    run_to_end(f, "q5", true);
    assert_int_equal(integer(f, "EXISTS", COUNTER_A), 0);

    /* Counted under a cap, ended after the cap went (or changed): given back all the same. */
    assert_int_equal(begin(f, "deprovision", "r1", "i5", "", "cf", &cap).answer,
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(counter(f, COUNTER_A), 1);
    run_to_end(f, "r1", true);
    assert_int_equal(integer(f, "EXISTS", COUNTER_A), 0);
}

/* Without a cap the scripts run no command for it (the round trips and commands per
 * operation stay as they were): no GET, INCR or DECR at all for a provision without quotas. */
static void test_no_cap_no_command(void **state)
{
    struct store_fixture *f = *state;
    freeReplyObject(redisCommand(f->direct, "CONFIG RESETSTAT"));
    assert_int_equal(begin(f, "provision", "n1", "i1", "d1", "cf/org-a", NULL).answer,
                     OSBQ_BEGIN_ACCEPTED);
    run_to_end(f, "n1", true);
    assert_int_equal(begin_binding(f, "bind", "n2", "i1", "bid", "cf/org-a", NULL).answer,
                     OSBQ_BEGIN_ACCEPTED);
    run_to_end(f, "n2", true);
    redisReply *r = redisCommand(f->direct, "INFO commandstats");
    assert_non_null(r);
    assert_non_null(r->str);
    assert_null(strstr(r->str, "cmdstat_get:"));
    assert_null(strstr(r->str, "cmdstat_incr:"));
    assert_null(strstr(r->str, "cmdstat_decr:"));
    assert_non_null(strstr(r->str, "cmdstat_hmget:")); /* the stats are there */
    freeReplyObject(r);
    redisReply *keys = redisCommand(f->direct, "KEYS t:inprogress:*");
    assert_int_equal(keys->elements, 0);
    freeReplyObject(keys);
}

OSBQ_TEST_MAIN(NULL, NULL,
               cmocka_unit_test_setup_teardown(test_cap_counts_refuses_and_gives_back, setup,
                                               store_fixture_teardown),
               cmocka_unit_test_setup_teardown(test_cap_kinds_and_the_instance_tenant, setup,
                                               store_fixture_teardown),
               cmocka_unit_test_setup_teardown(test_cap_every_end_and_policy_changes, setup,
                                               store_fixture_teardown),
               cmocka_unit_test_setup_teardown(test_no_cap_no_command, setup,
                                               store_fixture_teardown))
