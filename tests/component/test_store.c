/* The store's state transitions (the Lua scripts in store/lua, run by the store) against a
 * real redis-server: locks, idempotency, claims, leases, outcomes, events. */
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

#include "clock.h"
#include "redis_fixture.h"
#include "store_admin.h"
#include "store_operations.h"
#include "store_recovery.h"
#include "store_registry.h"
#include "store_test_helpers.h"
#include "test_main.h"

static int setup(void **state)
{
    return store_fixture_setup(state, "t");
}

/* An instance operation of tenant. */
static enum osbq_begin_answer begin_of(struct store_fixture *f, const char *tenant,
                                       const char *kind, const char *op, const char *instance,
                                       const char *digest, const char *plan,
                                       const char *expected_plan, const char *gateway,
                                       char **running)
{
    struct osbq_begin_request req = store_test_request(kind, op, instance, digest);
    req.waiting_gateway = gateway;
    req.plan_id = plan;
    req.parameters = "{\"size\":1}";
    req.expected_plan_id = expected_plan;
    req.tenant = tenant;
    struct osbq_begin_reply reply = {0};
    struct osbq_error err = {0};
    int rc = osbq_store_begin(f->store, &req, &reply, &err);
    if (rc != 0)
        fail_msg("begin %s: %s", kind, err.text);
    enum osbq_begin_answer answer = reply.answer;
    if (running != NULL)
        *running = reply.operation_id ? strdup(reply.operation_id) : NULL;
    osbq_begin_reply_clear(&reply);
    return answer;
}

/* An instance operation of the tenant "cf/org-1". */
static enum osbq_begin_answer begin(struct store_fixture *f, const char *kind, const char *op,
                                    const char *instance, const char *digest, const char *plan,
                                    const char *expected_plan, const char *gateway, char **running)
{
    return begin_of(f, "cf/org-1", kind, op, instance, digest, plan, expected_plan, gateway,
                    running);
}

static int claim(struct store_fixture *f, const char *op, const char *worker, int64_t lease_ms)
{
    struct osbq_error err = {0};
    return osbq_store_claim(f->store, op, worker, 1, lease_ms, NULL, &err);
}

static int finish(struct store_fixture *f, const char *op, const char *worker, bool ok)
{
    struct osbq_op_result result = {.succeeded = ok,
                                    .description = ok ? "Done." : "Broken.",
                                    .instance_usable = true,
                                    .update_repeatable = false};
    struct osbq_error err = {0};
    return osbq_store_finish(f->store, op, worker, &result, &err);
}

static void test_provision_lifecycle(void **state)
{
    struct store_fixture *f = *state;
    char *running = NULL;
    assert_int_equal(begin(f, "provision", "op1", "i1", "d1", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_string_equal(store_field(f, "t:instance:i1", "state"), "provisioning");
    assert_string_equal(store_field(f, "t:instance:i1", "lock_x"), "op1");
    assert_string_equal(store_field(f, "t:op:op1", "state"), "queued");
    /* A provision's operation holds only what the instance does not: its parameters, digest
     * and the plain keys finish.lua builds from the ids are not copied (a waiting operation
     * stays small). */
    assert_string_equal(store_field(f, "t:instance:i1", "parameters"), "{\"size\":1}");
    assert_string_equal(store_field(f, "t:op:op1", "parameters"), "");
    assert_string_equal(store_field(f, "t:op:op1", "digest"), "");
    assert_string_equal(store_field(f, "t:op:op1", "instance_key"), "");
    assert_string_equal(store_field(f, "t:op:op1", "bindings_key"), "");
    assert_string_equal(store_field(f, "t:op:op1", "prev_plan_id"), "");
    /* identical: the same operation; different: conflict; others wait */
    assert_int_equal(begin(f, "provision", "op2", "i1", "d1", "plan-a", NULL, NULL, &running),
                     OSBQ_BEGIN_IN_PROGRESS);
    assert_string_equal(running, "op1");
    free(running);
    assert_int_equal(begin(f, "provision", "op3", "i1", "other", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_CONFLICT);
    assert_int_equal(begin(f, "deprovision", "op4", "i1", "", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_BUSY);
    assert_int_equal(begin(f, "deprovision", "op4", "i1", "", "plan-b", NULL, NULL, NULL),
                     OSBQ_BEGIN_MISMATCH);
    assert_string_equal(store_field(f, "t:op:op2", "state"), "");

    assert_int_equal(claim(f, "op1", "w1", 10000), 1);
    assert_int_equal(claim(f, "op1", "w2", 10000), 0); /* live lease */
    struct osbq_error err = {0};
    assert_int_equal(osbq_store_progress(f->store, "op1", "w2", "x", 10000, &err), 0);
    assert_int_equal(osbq_store_progress(f->store, "op1", "w1", "Provisioning (50%)", 10000, &err),
                     1);
    assert_string_equal(store_field(f, "t:op:op1", "description"), "Provisioning (50%)");
    assert_int_equal(finish(f, "op1", "w2", true), 0); /* not its operation */
    assert_int_equal(finish(f, "op1", "w1", true), 1);
    assert_int_equal(finish(f, "op1", "w1", true), 0); /* never reported twice */
    assert_string_equal(store_field(f, "t:instance:i1", "state"), "provisioned");
    assert_string_equal(store_field(f, "t:instance:i1", "lock_x"), "");
    assert_string_equal(store_field(f, "t:op:op1", "state"), "succeeded");
    assert_string_equal(store_field(f, "t:op:op1", "job"), "");
    assert_int_equal(claim(f, "op1", "w3", 10000), 0);

    assert_int_equal(begin(f, "provision", "op5", "i1", "d1", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_DONE);
    assert_int_equal(begin(f, "provision", "op6", "i1", "d2", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_CONFLICT);
    redisReply *ttl = redisCommand(f->direct, "TTL t:op:op1");
    assert_true(ttl->integer > 0 && ttl->integer <= 3600);
    freeReplyObject(ttl);
}

static void test_update_applies_on_success_only(void **state)
{
    struct store_fixture *f = *state;
    char *running = NULL;
    assert_int_equal(begin(f, "provision", "u0", "i2", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(claim(f, "u0", "w", 10000), 1);
    assert_int_equal(finish(f, "u0", "w", true), 1);

    assert_int_equal(begin(f, "update", "u1", "i2", "du", "plan-b", "plan-x", NULL, NULL),
                     OSBQ_BEGIN_CHANGED);
    assert_int_equal(begin(f, "update", "u1", "i2", "du", "plan-b", "plan-a", NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(begin(f, "update", "u2", "i2", "du", "plan-b", "plan-a", NULL, &running),
                     OSBQ_BEGIN_IN_PROGRESS);
    assert_string_equal(running, "u1");
    free(running);
    assert_int_equal(begin(f, "update", "u3", "i2", "other", "plan-b", "plan-a", NULL, NULL),
                     OSBQ_BEGIN_BUSY);
    assert_string_equal(store_field(f, "t:instance:i2", "plan_id"), "plan-a");
    /* An update keeps what its finish applies and what an identical update joins by. */
    assert_string_equal(store_field(f, "t:op:u1", "parameters"), "{\"size\":1}");
    assert_string_equal(store_field(f, "t:op:u1", "digest"), "du");
    assert_string_equal(store_field(f, "t:op:u1", "prev_plan_id"), "plan-a");
    assert_int_equal(claim(f, "u1", "w", 10000), 1);
    assert_int_equal(finish(f, "u1", "w", false), 1);
    assert_string_equal(store_field(f, "t:instance:i2", "plan_id"), "plan-a");
    assert_string_equal(store_field(f, "t:op:u1", "instance_usable"), "1");
    assert_string_equal(store_field(f, "t:op:u1", "update_repeatable"), "0");

    assert_int_equal(begin(f, "update", "u4", "i2", "du", "plan-b", "plan-a", NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(claim(f, "u4", "w", 10000), 1);
    assert_int_equal(finish(f, "u4", "w", true), 1);
    assert_string_equal(store_field(f, "t:instance:i2", "plan_id"), "plan-b");
    assert_int_equal(begin(f, "update", "u5", "nope", "du", "plan-b", NULL, NULL, NULL),
                     OSBQ_BEGIN_NOT_FOUND);
}

static void test_deprovision_and_reuse(void **state)
{
    struct store_fixture *f = *state;
    char *running = NULL;
    assert_int_equal(begin(f, "deprovision", "x0", "i3", "", "p", NULL, NULL, NULL),
                     OSBQ_BEGIN_GONE);
    assert_int_equal(begin(f, "provision", "x1", "i3", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(claim(f, "x1", "w", 10000), 1);
    assert_int_equal(finish(f, "x1", "w", false), 1);
    assert_string_equal(store_field(f, "t:instance:i3", "state"), "failed");
    /* orphan mitigation: a failed provision can be deprovisioned; update cannot run */
    assert_int_equal(begin(f, "update", "x2", "i3", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_NOT_FOUND);
    assert_int_equal(begin(f, "deprovision", "x3", "i3", "", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(begin(f, "deprovision", "x4", "i3", "", "plan-a", NULL, NULL, &running),
                     OSBQ_BEGIN_IN_PROGRESS);
    assert_string_equal(running, "x3");
    free(running);
    assert_int_equal(claim(f, "x3", "w", 10000), 1);
    assert_int_equal(finish(f, "x3", "w", true), 1);
    assert_string_equal(store_field(f, "t:instance:i3", "state"), "gone");

    struct osbq_last_op op = {0};
    struct osbq_error err = {0};
    assert_int_equal(osbq_store_last_operation(f->store, "i3", NULL, NULL, NULL, &op, &err), 1);
    assert_string_equal(op.kind, "deprovision");
    assert_string_equal(op.state, "succeeded");
    osbq_last_op_clear(&op);
    assert_int_equal(osbq_store_last_operation(f->store, "i3", NULL, "x1", NULL, &op, &err), 1);
    assert_string_equal(op.kind, "provision");
    assert_string_equal(op.state, "failed");
    osbq_last_op_clear(&op);
    assert_int_equal(osbq_store_last_operation(f->store, "i3", NULL, "u1", NULL, &op, &err), 2);
    /* An operation not of this instance: the answer names the instance's last operation. */
    assert_string_equal(op.last_operation_id, "x3");
    assert_null(op.kind);
    osbq_last_op_clear(&op);
    assert_int_equal(osbq_store_last_operation(f->store, "unknown", NULL, NULL, NULL, &op, &err),
                     0);

    assert_int_equal(begin(f, "deprovision", "x5", "i3", "", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_GONE);
    assert_int_equal(begin(f, "provision", "x6", "i3", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
}

static void test_expired_lease_is_taken_over(void **state)
{
    struct store_fixture *f = *state;
    assert_int_equal(begin(f, "provision", "l1", "i4", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(claim(f, "l1", "dead", 1), 1);
    osbq_clock_sleep_ms(20);
    assert_int_equal(claim(f, "l1", "alive", 10000), 1);
    assert_int_equal(finish(f, "l1", "dead", true), 0);
    assert_int_equal(finish(f, "l1", "alive", true), 1);
}

static void test_finish_wakes_waiting_gateways(void **state)
{
    struct store_fixture *f = *state;
    struct osbq_error err = {0};
    redisContext *sub = osbq_store_subscribe_events(f->store, "gw1", &err);
    assert_non_null(sub);
    assert_int_equal(begin(f, "provision", "e1", "i5", "d", "plan-a", NULL, "gw1", NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(claim(f, "e1", "w", 10000), 1);
    assert_int_equal(finish(f, "e1", "w", true), 1);
    redisReply *message = NULL;
    assert_int_equal(redisGetReply(sub, (void **)&message), REDIS_OK);
    assert_int_equal(message->type, REDIS_REPLY_ARRAY);
    assert_string_equal(message->element[1]->str, "t:events:gw1");
    assert_non_null(strstr(message->element[2]->str, "\"operation\":\"e1\""));
    assert_non_null(strstr(message->element[2]->str, "\"state\":\"succeeded\""));
    freeReplyObject(message);
    redisFree(sub);
    redisReply *exists = redisCommand(f->direct, "EXISTS t:waiters:e1");
    assert_int_equal(exists->integer, 0);
    freeReplyObject(exists);
}

static void test_ids_cannot_escape_their_keys(void **state)
{
    struct store_fixture *f = *state;
    assert_int_equal(begin(f, "provision", "k1", "a:b*{c}\n", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_string_equal(store_field(f, "t:instance:a%3Ab%2A%7Bc%7D%0A", "state"), "provisioning");
    /* An encoded id's keys are recorded: finish.lua could not build them from the id. */
    assert_string_equal(store_field(f, "t:op:k1", "instance_key"), "t:instance:a%3Ab%2A%7Bc%7D%0A");
    assert_string_equal(store_field(f, "t:op:k1", "bindings_key"), "t:bindings:a%3Ab%2A%7Bc%7D%0A");
    assert_int_equal(claim(f, "k1", "w", 10000), 1);
    assert_int_equal(finish(f, "k1", "w", true), 1);
    assert_string_equal(store_field(f, "t:instance:a%3Ab%2A%7Bc%7D%0A", "state"), "provisioned");
    assert_string_equal(store_field(f, "t:instance:a%3Ab%2A%7Bc%7D%0A", "lock_x"), "");
    /* "i1:lock" must not touch the record of "i1" */
    assert_int_equal(begin(f, "provision", "k2", "i1:x", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_string_equal(store_field(f, "t:instance:i1", "state"), "provisioned");
}

static void test_gateway_registry(void **state)
{
    struct store_fixture *f = *state;
    struct osbq_error err = {0};
    char **list = NULL;
    size_t count = 0;
    assert_int_equal(osbq_store_gateway_register(f->store, "tcp://a:1", 10000, &err), 0);
    assert_int_equal(osbq_store_gateway_register(f->store, "tcp://b:2", 1, &err), 0);
    osbq_clock_sleep_ms(20);
    assert_int_equal(osbq_store_gateway_list(f->store, &list, &count, &err), 0);
    assert_int_equal(count, 1);
    assert_string_equal(list[0], "tcp://a:1");
    osbq_store_strings_free(list);
    assert_int_equal(osbq_store_gateway_unregister(f->store, "tcp://a:1", &err), 0);
    assert_int_equal(osbq_store_gateway_list(f->store, &list, &count, &err), 0);
    assert_int_equal(count, 0);
    osbq_store_strings_free(list);
}

static void test_process_status(void **state)
{
    struct store_fixture *f = *state;
    struct osbq_error err = {0};
    char **list = NULL;
    size_t count = 0;
    assert_int_equal(
        osbq_store_status_publish(f->store, "worker", "w-b", "{\"id\":\"w-b\"}", 10000, &err), 0);
    assert_int_equal(
        osbq_store_status_publish(f->store, "worker", "w-a", "{\"id\":\"w-a\"}", 10000, &err), 0);
    assert_int_equal(
        osbq_store_status_publish(f->store, "worker", "w-old", "{\"id\":\"w-old\"}", 1, &err), 0);
    assert_int_equal(
        osbq_store_status_publish(f->store, "gateway", "g-1", "{\"id\":\"g-1\"}", 10000, &err), 0);
    assert_int_equal(osbq_store_status_publish(f->store, "janitor", "x", "{}", 10000, &err), -1);
    osbq_clock_sleep_ms(20);
    /* Expired entries are gone; the rest come least recently renewed first (w-b, published
     * first, unless both fell in the same millisecond), each role on its own. */
    assert_int_equal(osbq_store_status_list(f->store, "worker", &list, &count, &err), 0);
    assert_int_equal(count, 2);
    bool b_first = strcmp(list[0], "{\"id\":\"w-b\"}") == 0;
    assert_string_equal(list[b_first ? 0 : 1], "{\"id\":\"w-b\"}");
    assert_string_equal(list[b_first ? 1 : 0], "{\"id\":\"w-a\"}");
    osbq_store_strings_free(list);
    assert_int_equal(osbq_store_status_remove(f->store, "worker", "w-a", &err), 0);
    assert_int_equal(osbq_store_status_list(f->store, "worker", &list, &count, &err), 0);
    assert_int_equal(count, 1);
    osbq_store_strings_free(list);
    assert_int_equal(osbq_store_status_list(f->store, "gateway", &list, &count, &err), 0);
    assert_int_equal(count, 1);
    osbq_store_strings_free(list);
}

/* Checks the event names of an operation's history, joined by spaces, against want. */
static void assert_history(struct store_fixture *f, const char *op, const char *want)
{
    struct osbq_fields fields = {0};
    char **history = NULL;
    size_t count = 0;
    struct osbq_error err = {0};
    char out[512] = "";
    assert_int_equal(osbq_store_operation_get(f->store, op, &fields, &history, &count, &err), 1);
    for (size_t i = 0; i < count; i++) {
        const char *at = strstr(history[i], "\"event\":\"");
        assert_non_null(at);
        at += strlen("\"event\":\"");
        size_t used = strlen(out);
        (void)snprintf(out + used, sizeof out - used, "%s%.*s", used ? " " : "",
                       (int)strcspn(at, "\""), at);
    }
    /* The encoded job and the digest stay inside Redis. */
    assert_null(osbq_fields_get(&fields, "job"));
    assert_null(osbq_fields_get(&fields, "digest"));
    assert_string_equal(osbq_fields_get(&fields, "kind"), "provision");
    osbq_fields_clear(&fields);
    osbq_store_strings_free(history);
    assert_string_equal(out, want);
}

/* A poll that names its operation reads the operation alone (docs/decisions/0043): answered
 * when the operation is the instance's (or the binding's) and its platform's, and says its
 * platform; anything else (another instance, binding or platform, an operation of the previous
 * release, which says none, or none at all) is left to last_operation.lua. */
static void test_poll_reads_the_operation_alone(void **state)
{
    struct store_fixture *f = *state;
    assert_int_equal(begin(f, "provision", "pa", "ip", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    struct osbq_last_op op = {0};
    assert_int_equal(store_poll(f, "pa", "ip", NULL, "default", &op), 1);
    assert_string_equal(op.kind, "provision");
    assert_string_equal(op.state, "queued");
    assert_string_equal(op.average_plan, "plan-a");
    assert_int_equal(op.average_ms, -1);
    assert_true(op.created_ms > 0);
    osbq_last_op_clear(&op);
    assert_int_equal(store_poll(f, "pa", "ip", NULL, NULL, &op), 1); /* any platform */
    osbq_last_op_clear(&op);
    assert_int_equal(store_poll(f, "pa", "other", NULL, "default", &op), 0);
    assert_int_equal(store_poll(f, "pa", "ip", "b1", "default", &op), 0);
    assert_int_equal(store_poll(f, "pa", "ip", NULL, "k8s", &op), 0);
    assert_int_equal(store_poll(f, "nothing", "ip", NULL, "default", &op), 0);
    assert_null(op.kind);

    assert_int_equal(claim(f, "pa", "w1", 10000), 1);
    assert_int_equal(finish(f, "pa", "w1", true), 1);
    assert_int_equal(store_poll(f, "pa", "ip", NULL, "default", &op), 1);
    assert_string_equal(op.state, "succeeded");
    assert_string_equal(op.description, "Done.");
    osbq_last_op_clear(&op);

    /* An update's steps are its previous plan's: that plan's average. */
    assert_int_equal(begin(f, "update", "pu", "ip", "d2", "plan-b", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(store_poll(f, "pu", "ip", NULL, "default", &op), 1);
    assert_string_equal(op.kind, "update");
    assert_string_equal(op.average_plan, "plan-a");
    osbq_last_op_clear(&op);
    struct osbq_error err = {0};
    assert_int_equal(osbq_store_last_operation(f->store, "ip", NULL, "pu", NULL, &op, &err), 1);
    assert_string_equal(op.average_plan, "plan-a");
    osbq_last_op_clear(&op);

    /* The previous release's operations name a service and no platform. */
    redisReply *r = redisCommand(f->direct, "HSET t:op:pu service_id svc");
    freeReplyObject(r);
    assert_int_equal(store_poll(f, "pu", "ip", NULL, "default", &op), 0);

    /* Another platform's operation names it. */
    struct osbq_begin_request req = store_test_request("provision", "pk", "ik", "d");
    req.plan_id = "plan-a";
    req.platform = "k8s";
    req.tenant = "k8s/ns";
    struct osbq_begin_reply reply = {0};
    assert_int_equal(osbq_store_begin(f->store, &req, &reply, &err), 0);
    assert_int_equal(reply.answer, OSBQ_BEGIN_ACCEPTED);
    osbq_begin_reply_clear(&reply);
    assert_string_equal(store_field(f, "t:op:pk", "platform"), "k8s");
    assert_string_equal(store_field(f, "t:op:pa", "platform"), "");
    assert_int_equal(store_poll(f, "pk", "ik", NULL, "k8s", &op), 1);
    osbq_last_op_clear(&op);
    assert_int_equal(store_poll(f, "pk", "ik", NULL, "default", &op), 0);
    assert_int_equal(store_poll(f, "pa", "ip", NULL, "k8s", &op), 0);
}

static int names_order(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A finished operation says each thing once (docs/decisions/0041): no history line for its
 * first claim nor for its worker's outcome, no attempt beside its claims, no copy of its
 * instance's service; an operator still reads all of them. The default platform is not named
 * (docs/decisions/0043). */
static void test_finished_operation_says_once(void **state)
{
    struct store_fixture *f = *state;
    struct osbq_error err = {0};
    assert_int_equal(begin(f, "provision", "once", "i-once", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(claim(f, "once", "w1", 10000), 1);
    assert_int_equal(finish(f, "once", "w1", true), 1);
    redisReply *r = redisCommand(f->direct, "HKEYS t:op:once");
    assert_true(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements < 32);
    const char *names[32];
    for (size_t i = 0; i < r->elements; i++)
        names[i] = r->element[i]->str;
    qsort(names, r->elements, sizeof names[0], names_order);
    char joined[512] = "";
    for (size_t i = 0; i < r->elements; i++) {
        size_t used = strlen(joined);
        (void)snprintf(joined + used, sizeof joined - used, "%s%s", used ? " " : "", names[i]);
    }
    freeReplyObject(r);
    assert_string_equal(joined, "api claims created_ms description finished_ms instance kind "
                                "plan_id started_ms state worker");

    struct osbq_fields fields = {0};
    char **history = NULL;
    size_t count = 0;
    assert_int_equal(osbq_store_operation_get(f->store, "once", &fields, &history, &count, &err),
                     1);
    assert_string_equal(osbq_fields_get(&fields, "attempt"), "1");
    assert_string_equal(osbq_fields_get(&fields, "service_id"), "svc");
    assert_int_equal(count, 2);
    assert_non_null(strstr(history[0], "\"event\":\"claimed\""));
    assert_non_null(strstr(history[0], "\"worker\":\"w1\""));
    assert_non_null(strstr(history[1], "\"event\":\"succeeded\""));
    assert_non_null(strstr(history[1], "\"description\":"));
    osbq_fields_clear(&fields);
    osbq_store_strings_free(history);
}

static void test_operation_history_and_repairs(void **state)
{
    struct store_fixture *f = *state;
    struct osbq_error err = {0};
    assert_int_equal(begin(f, "provision", "oph", "ih", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(claim(f, "oph", "w1", 10000), 1);
    assert_int_equal(osbq_store_release(f->store, "oph", "w1", &err), 1);
    assert_int_equal(claim(f, "oph", "w2", 10000), 1);
    assert_int_equal(osbq_store_progress(f->store, "oph", "w2", NULL, 10000, &err), 1);
    /* w2 renews its lease: resending would run the operation twice at once. */
    assert_int_equal(osbq_store_operator_resend(f->store, "oph", "ops", &err), 2);
    assert_int_equal(osbq_store_progress(f->store, "oph", "w2", NULL, 1, &err), 1);
    osbq_clock_sleep_ms(20);
    /* Its lease ran out: taken from w2, claims start again, due at once. */
    assert_int_equal(osbq_store_operator_resend(f->store, "oph", "ops", &err), 1);
    assert_string_equal(store_field(f, "t:op:oph", "state"), "queued");
    assert_string_equal(store_field(f, "t:op:oph", "claims"), "0");
    assert_int_equal(osbq_store_progress(f->store, "oph", "w2", NULL, 10000, &err), 0);
    assert_int_equal(finish(f, "oph", "w2", true), 0);
    redisReply *score = redisCommand(f->direct, "ZSCORE t:queue oph");
    assert_string_equal(score->str, "0");
    freeReplyObject(score);
    assert_int_equal(claim(f, "oph", "w3", 10000), 1);
    /* Failed by an operator while w3 runs it: the lock is free, w3's outcome is refused. */
    assert_int_equal(
        osbq_store_operator_fail(f->store, "oph", "Stuck; failed by ops.", "ops", &err), 1);
    assert_int_equal(finish(f, "oph", "w3", true), 0);
    assert_string_equal(store_field(f, "t:op:oph", "state"), "failed");
    assert_string_equal(store_field(f, "t:op:oph", "description"), "Stuck; failed by ops.");
    assert_string_equal(store_field(f, "t:instance:ih", "state"), "failed");
    assert_string_equal(store_field(f, "t:instance:ih", "lock_x"), "");
    assert_history(f, "oph",
                   "claimed released claimed resent_by_operator claimed failed_by_operator");
    /* The history is a field of the operation: it expires with it, no key of its own. */
    redisReply *exists = redisCommand(f->direct, "EXISTS t:history:oph");
    assert_int_equal(exists->integer, 0);
    freeReplyObject(exists);
    /* Nothing to repair once finished; unknown operations are not found. */
    assert_int_equal(osbq_store_operator_fail(f->store, "oph", "again", "ops", &err), 0);
    assert_int_equal(osbq_store_operator_resend(f->store, "oph", "ops", &err), 0);
    struct osbq_fields fields = {0};
    char **history = NULL;
    size_t count = 0;
    assert_int_equal(osbq_store_operation_get(f->store, "nope", &fields, &history, &count, &err),
                     0);
}

static void test_scan_records_hides_secrets(void **state)
{
    struct store_fixture *f = *state;
    struct osbq_error err = {0};
    for (int i = 0; i < 30; i++) {
        char op[16], instance[16];
        (void)snprintf(op, sizeof op, "sop%d", i);
        (void)snprintf(instance, sizeof instance, "si%d", i);
        assert_int_equal(begin(f, "provision", op, instance, "d", "plan-a", NULL, NULL, NULL),
                         OSBQ_BEGIN_ACCEPTED);
    }
    redisReply *r = redisCommand(f->direct, "HSET t:binding:si0:b1 state bound result secret");
    freeReplyObject(r);
    size_t seen = 0;
    uint64_t cursor = 0;
    int steps = 0;
    do {
        struct osbq_fields *records = NULL;
        size_t n = 0;
        assert_int_equal(
            osbq_store_scan_records(f->store, OSBQ_RECORD_INSTANCE, &cursor, 7, &records, &n, &err),
            0);
        for (size_t i = 0; i < n; i++) {
            const char *id = osbq_fields_get(&records[i], "instance_id");
            if (id != NULL && strncmp(id, "si", 2) == 0)
                seen++;
            assert_null(osbq_fields_get(&records[i], "digest"));
        }
        osbq_fields_array_free(records, n);
    } while (cursor != 0 && ++steps < 1000);
    assert_int_equal(seen, 30);
    struct osbq_fields *bindings = NULL;
    size_t n = 0;
    cursor = 0;
    do {
        osbq_fields_array_free(bindings, n);
        bindings = NULL;
        n = 0;
        assert_int_equal(osbq_store_scan_records(f->store, OSBQ_RECORD_BINDING, &cursor, 1000,
                                                 &bindings, &n, &err),
                         0);
    } while (n == 0 && cursor != 0);
    assert_int_equal(n, 1);
    assert_string_equal(osbq_fields_get(&bindings[0], "state"), "bound");
    assert_null(osbq_fields_get(&bindings[0], "result"));
    osbq_fields_array_free(bindings, n);
    struct osbq_store_stats stats;
    assert_int_equal(osbq_store_stats_get(f->store, &stats, &err), 0);
    assert_true(stats.unfinished >= 30);
    assert_true(stats.used_memory > 0);
    /* The server names itself as the program the fixture ran: "valkey" for valkey-server. */
    const char *program = strrchr(redis_fixture_server(), '/');
    program = program != NULL ? program + 1 : redis_fixture_server();
    size_t name_len = strlen(stats.server.name);
    assert_true(name_len > 0);
    assert_int_equal(strncmp(program, stats.server.name, name_len), 0);
    assert_int_equal(program[name_len], '-');
    assert_true(stats.server.version[0] >= '1' && stats.server.version[0] <= '9');
}

static void test_scripts_reload_after_flush(void **state)
{
    struct store_fixture *f = *state;
    redisReply *r = redisCommand(f->direct, "SCRIPT FLUSH");
    freeReplyObject(r);
    assert_int_equal(begin(f, "provision", "s1", "i6", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
}

/* Finds the item for op in a recovery batch, or NULL. */
static const struct osbq_recovery_item *find_item(const struct osbq_recovery_item *items,
                                                  size_t count, const char *op)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(items[i].operation_id, op) == 0)
            return &items[i];
    return NULL;
}

static void test_recovery_resends_then_abandons(void **state)
{
    struct store_fixture *f = *state;
    struct osbq_error err = {0};
    struct osbq_recovery_item *items = NULL;
    size_t count = 0;
    /* accepted with a claim deadline 30 s away: not due yet */
    assert_int_equal(begin(f, "provision", "r1", "i7", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(osbq_store_recover(f->store, 100, 2, 1, true, &items, &count, NULL, &err), 0);
    assert_null(find_item(items, count, "r1"));
    osbq_recovery_free(items, count);
    /* due now: its claim never came */
    redisReply *r = redisCommand(f->direct, "ZADD t:queue 1 r1");
    freeReplyObject(r);
    assert_int_equal(osbq_store_recover(f->store, 100, 2, 10000, true, &items, &count, NULL, &err),
                     0);
    const struct osbq_recovery_item *it = find_item(items, count, "r1");
    assert_non_null(it);
    assert_false(it->abandon);
    assert_false(it->lease_expired); /* never claimed: no lease ran out */
    assert_string_equal(it->kind, "provision");
    assert_int_equal(it->claims, 0);
    assert_int_equal(it->job_len, 9);
    assert_memory_equal(it->job, "job-bytes", 9);
    osbq_recovery_free(items, count);
    /* taken once: a second scan (another gateway) does not get it */
    assert_int_equal(osbq_store_recover(f->store, 100, 2, 10000, true, &items, &count, NULL, &err),
                     0);
    assert_null(find_item(items, count, "r1"));
    osbq_recovery_free(items, count);
    /* two claims whose leases run out: resent once, then abandoned */
    for (int attempt = 1; attempt <= 2; attempt++) {
        assert_int_equal(claim(f, "r1", "w", 1), 1);
        osbq_clock_sleep_ms(20);
        assert_int_equal(
            osbq_store_recover(f->store, 100, 2, 10000, true, &items, &count, NULL, &err), 0);
        it = find_item(items, count, "r1");
        assert_non_null(it);
        assert_int_equal(it->claims, attempt);
        assert_int_equal(it->abandon, attempt == 2);
        assert_int_equal(it->lease_expired, attempt == 1);
        osbq_recovery_free(items, count);
    }
    assert_int_equal(finish(f, "r1", "other", true), 0); /* not its operation */
    assert_int_equal(osbq_store_abandon(f->store, "r1", "Gave up.", &err), 1);
    assert_string_equal(store_field(f, "t:op:r1", "state"), "failed");
    assert_string_equal(store_field(f, "t:op:r1", "description"), "Gave up.");
    assert_string_equal(store_field(f, "t:instance:i7", "state"), "failed");
    assert_string_equal(store_field(f, "t:instance:i7", "lock_x"), "");
    assert_int_equal(osbq_store_abandon(f->store, "r1", "Again.", &err), 0);
    assert_history(f, "r1", "resent claimed lease_expired claimed abandoned");
}

/* A step-wise operation: a step ends in progress (wait), the operation is held by nobody until
 * it is due, recovery hands it out as a poll (no attempt, no resend), the poll's claim returns
 * the saved state, and the outcome clears it. */
static void test_steps_wait_and_poll(void **state)
{
    struct store_fixture *f = *state;
    struct osbq_error err = {0};
    struct osbq_recovery_item *items = NULL;
    size_t count = 0;
    struct osbq_claim c = {0};
    assert_int_equal(begin(f, "provision", "s1", "is", "d", "plan-a", NULL, "gw1", NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(osbq_store_claim(f->store, "s1", "w1", 1, 10000, &c, &err), 1);
    assert_null(c.resume);
    assert_int_equal(c.steps, 0);
    assert_true(c.started_ms > 0);
    assert_true(c.accepted_ms > 0 && c.accepted_ms <= c.started_ms);
    int64_t started = c.started_ms;
    osbq_claim_clear(&c);

    struct osbq_op_result step = {
        .in_progress = true, .description = "Provisioning (0%)", .resume = "{\"until_ms\":1}"};
    int64_t later = osbq_store_now_ms() + 60000;
    assert_int_equal(osbq_store_wait(f->store, "s1", "w2", &step, later, &err), 0);
    assert_int_equal(osbq_store_wait(f->store, "s1", "w1", &step, later, &err), 1);
    assert_string_equal(store_field(f, "t:op:s1", "state"), "waiting");
    assert_string_equal(store_field(f, "t:op:s1", "description"), "Provisioning (0%)");
    assert_string_equal(store_field(f, "t:op:s1", "resume"), "{\"until_ms\":1}");
    assert_string_equal(store_field(f, "t:op:s1", "steps"), "1");
    assert_string_equal(store_field(f, "t:op:s1", "worker"), "");
    /* Not its worker's any more: a late progress or outcome of the step is refused. */
    assert_int_equal(osbq_store_progress(f->store, "s1", "w1", NULL, 10000, &err), 0);
    assert_int_equal(finish(f, "s1", "w1", true), 0);
    /* Not due: neither handed out nor claimable by a duplicate delivery; the scan says when
     * the earliest entry is. */
    int64_t next_due = 0;
    assert_int_equal(
        osbq_store_recover(f->store, 100, 2, 10000, true, &items, &count, &next_due, &err), 0);
    assert_null(find_item(items, count, "s1"));
    assert_true(next_due > 0 && next_due <= later);
    osbq_recovery_free(items, count);
    assert_int_equal(claim(f, "s1", "w3", 10000), 0);

    /* Due now: a poll, only when a worker has room. */
    step.resume = "{\"until_ms\":2}";
    assert_int_equal(claim(f, "s1", "w1", 10000), 0);
    redisReply *r = redisCommand(f->direct, "HSET t:op:s1 due_ms 1");
    freeReplyObject(r);
    /* It waits in its tenant's polls (wait.lua): due there. */
    char tenant[64];
    (void)snprintf(tenant, sizeof tenant, "%s", store_field(f, "t:op:s1", "tenant"));
    assert_true(tenant[0] != '\0');
    r = redisCommand(f->direct, "ZADD t:polls:%s 1 s1", tenant);
    freeReplyObject(r);
    r = redisCommand(f->direct, "ZADD t:poll_tenants 1 %s", tenant);
    freeReplyObject(r);
    assert_int_equal(osbq_store_recover(f->store, 100, 2, 10000, false, &items, &count, NULL, &err),
                     0);
    assert_null(find_item(items, count, "s1"));
    osbq_recovery_free(items, count);
    assert_int_equal(osbq_store_recover(f->store, 100, 2, 10000, true, &items, &count, NULL, &err),
                     0);
    const struct osbq_recovery_item *it = find_item(items, count, "s1");
    assert_non_null(it);
    assert_true(it->poll);
    assert_false(it->abandon);
    assert_int_equal(it->claims, 1);
    assert_memory_equal(it->job, "job-bytes", 9);
    osbq_recovery_free(items, count);
    assert_string_equal(store_field(f, "t:op:s1", "resends"), "");

    assert_int_equal(osbq_store_claim(f->store, "s1", "w2", 2, 10000, &c, &err), 1);
    assert_string_equal(c.resume, "{\"until_ms\":1}");
    assert_int_equal(c.steps, 1);
    assert_int_equal(c.started_ms, started);
    osbq_claim_clear(&c);
    assert_null(c.resume);
    /* A poll is not an attempt; the step runs on exactly one worker at a time. */
    assert_string_equal(store_field(f, "t:op:s1", "claims"), "1");
    assert_int_equal(claim(f, "s1", "w3", 10000), 0);
    /* In progress again without a resume: the old one goes. */
    step.resume = NULL;
    assert_int_equal(osbq_store_wait(f->store, "s1", "w2", &step, 1, &err), 1);
    assert_string_equal(store_field(f, "t:op:s1", "resume"), "");
    assert_string_equal(store_field(f, "t:op:s1", "steps"), "2");
    assert_int_equal(claim(f, "s1", "w3", 10000), 1);
    assert_int_equal(finish(f, "s1", "w3", true), 1);
    assert_string_equal(store_field(f, "t:op:s1", "state"), "succeeded");
    assert_string_equal(store_field(f, "t:op:s1", "due_ms"), "");
    assert_string_equal(store_field(f, "t:instance:is", "state"), "provisioned");
    assert_history(f, "s1", "claimed waiting succeeded");
}

/* A waiting operation under the repairs: a poll step's worker dies (its lease runs out: queued,
 * the saved state kept, the next claim an attempt), an operator resends it (due at once, still
 * waiting) or fails it, and the recovery loop may abandon it. */
static void test_steps_repairs(void **state)
{
    struct store_fixture *f = *state;
    struct osbq_error err = {0};
    struct osbq_claim c = {0};
    struct osbq_op_result step = {.in_progress = true, .resume = "{\"n\":1}"};
    assert_int_equal(begin(f, "provision", "s2", "is2", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(claim(f, "s2", "w1", 10000), 1);
    int64_t later = osbq_store_now_ms() + 60000;
    assert_int_equal(osbq_store_wait(f->store, "s2", "w1", &step, later, &err), 1);
    assert_string_equal(store_field(f, "t:op:s2", "description"), "In progress.");
    assert_int_equal(osbq_store_operator_resend(f->store, "s2", "ops", &err), 1);
    assert_string_equal(store_field(f, "t:op:s2", "state"), "waiting");
    assert_string_equal(store_field(f, "t:op:s2", "claims"), "0");
    assert_int_equal(claim(f, "s2", "w2", 1), 1);
    osbq_clock_sleep_ms(20);
    struct osbq_recovery_item *items = NULL;
    size_t count = 0;
    assert_int_equal(osbq_store_recover(f->store, 100, 5, 10000, true, &items, &count, NULL, &err),
                     0);
    const struct osbq_recovery_item *it = find_item(items, count, "s2");
    assert_non_null(it);
    assert_true(it->lease_expired);
    assert_false(it->poll);
    osbq_recovery_free(items, count);
    assert_string_equal(store_field(f, "t:op:s2", "state"), "queued");
    assert_int_equal(osbq_store_claim(f->store, "s2", "w3", 2, 10000, &c, &err), 1);
    assert_string_equal(c.resume, "{\"n\":1}");
    osbq_claim_clear(&c);
    assert_string_equal(store_field(f, "t:op:s2", "claims"), "1");
    /* Released (shutdown, deadline): the saved state stays for the next claim. */
    assert_int_equal(osbq_store_release(f->store, "s2", "w3", &err), 1);
    assert_string_equal(store_field(f, "t:op:s2", "resume"), "{\"n\":1}");
    assert_int_equal(claim(f, "s2", "w3", 10000), 1);
    assert_int_equal(osbq_store_wait(f->store, "s2", "w3", &step, later, &err), 1);
    assert_int_equal(osbq_store_abandon(f->store, "s2", "Gave up.", &err), 1);
    assert_string_equal(store_field(f, "t:op:s2", "state"), "failed");
    assert_string_equal(store_field(f, "t:op:s2", "resume"), "");

    assert_int_equal(begin(f, "provision", "s3", "is3", "d", "plan-a", NULL, NULL, NULL),
                     OSBQ_BEGIN_ACCEPTED);
    assert_int_equal(claim(f, "s3", "w1", 10000), 1);
    assert_int_equal(osbq_store_wait(f->store, "s3", "w1", &step, later, &err), 1);
    assert_int_equal(osbq_store_operator_fail(f->store, "s3", "Failed by ops.", "ops", &err), 1);
    assert_string_equal(store_field(f, "t:op:s3", "state"), "failed");
    assert_string_equal(store_field(f, "t:instance:is3", "lock_x"), "");
}

/* One operation of tenant, claimed by w1 and waiting, due at due_ms. */
static void begin_waiting(struct store_fixture *f, const char *tenant, const char *op,
                          int64_t due_ms)
{
    char instance[64];
    (void)snprintf(instance, sizeof instance, "i-%s", op);
    assert_int_equal(
        begin_of(f, tenant, "provision", op, instance, "d", "plan-a", NULL, NULL, NULL),
        OSBQ_BEGIN_ACCEPTED);
    struct osbq_error err = {0};
    struct osbq_op_result step = {.in_progress = true};
    assert_int_equal(claim(f, op, "w1", 10000), 1);
    assert_int_equal(osbq_store_wait(f->store, op, "w1", &step, due_ms, &err), 1);
}

static long long zcard(struct store_fixture *f, const char *key)
{
    redisReply *r = redisCommand(f->direct, "ZCARD %s", key);
    long long n = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return n;
}

/* A scan of the polls as test_polls_leave_fairly makes them (ten at most, five a tenant), with
 * or without a worker with room; returns the count taken, the items the caller's to free. */
static size_t scan_polls(struct store_fixture *f, bool room, struct osbq_recovery_item **items,
                         size_t *count, int64_t *next_due)
{
    struct osbq_error err = {0};
    assert_int_equal(osbq_store_recover(f->store, 10, 5, 10000, room, items, count, next_due, &err),
                     0);
    return *count;
}

/* The operations named in taken are in the batch and those in left are not (both lists end
 * with NULL); a failure names the operation. */
static void assert_batch(const struct osbq_recovery_item *items, size_t count,
                         const char *const *taken, const char *const *left)
{
    for (; *taken != NULL; taken++)
        if (find_item(items, count, *taken) == NULL)
            fail_msg("%s is not in the batch", *taken);
    for (; *left != NULL; left++)
        if (find_item(items, count, *left) != NULL)
            fail_msg("%s is in the batch", *left);
}

/* Due steps leave Redis tenant by tenant (docs/decisions/0038): a tenant with many steps due,
 * due first, takes its share of a batch and another tenant's one step leaves in the same
 * batch; a tenant alone takes the whole batch; a claim, an operator's failure and a finish take
 * an operation out of its tenant's polls, and a tenant with nothing waiting is listed no more. */
static void test_polls_leave_fairly(void **state)
{
    struct store_fixture *f = *state;
    struct osbq_error err = {0};
    char op[32];
    /* Nothing of the earlier tests' operations in the scans below. */
    freeReplyObject(redisCommand(f->direct, "FLUSHDB"));
    for (int i = 0; i < 30; i++) {
        (void)snprintf(op, sizeof op, "pa%d", i);
        begin_waiting(f, "cf/org-a", op, 1000 + i);
    }
    begin_waiting(f, "cf/org-b", "pb0", 5000);
    assert_int_equal(zcard(f, "t:polls:cf/org-a"), 30);
    assert_int_equal(zcard(f, "t:poll_tenants"), 2);
    /* Still counted among the operations in progress. */
    assert_int_equal(zcard(f, "t:queue"), 31);

    struct osbq_recovery_item *items = NULL;
    size_t count = 0;
    int64_t next_due = 0;
    assert_int_equal(scan_polls(f, true, &items, &count, &next_due), 10);
    const struct osbq_recovery_item *b = find_item(items, count, "pb0");
    assert_non_null(b);
    assert_true(b->poll);
    assert_string_equal(b->tenant, "cf/org-b");
    /* org-a's earliest ones, in order. */
    assert_batch(items, count, (const char *const[]){"pa0", "pa8", NULL},
                 (const char *const[]){"pa9", NULL});
    osbq_recovery_free(items, count);
    /* Each taken once: a second scan takes org-a's next ones, and org-b has none due. */
    assert_int_equal(scan_polls(f, true, &items, &count, &next_due), 10);
    assert_batch(items, count, (const char *const[]){"pa9", "pa18", NULL},
                 (const char *const[]){"pb0", NULL});
    osbq_recovery_free(items, count);
    /* Without a worker with room, nothing is polled. */
    assert_int_equal(scan_polls(f, false, &items, &count, &next_due), 0);
    osbq_recovery_free(items, count);

    /* A claim takes it out of its tenant's polls; so do an operator's failure and a finish. */
    assert_int_equal(claim(f, "pb0", "w2", 10000), 1);
    assert_int_equal(zcard(f, "t:polls:cf/org-b"), 0);
    assert_int_equal(osbq_store_operator_fail(f->store, "pa29", "Failed by ops.", "ops", &err), 1);
    assert_int_equal(zcard(f, "t:polls:cf/org-a"), 29);
    assert_int_equal(finish(f, "pb0", "w2", true), 1);
    /* org-b has nothing waiting: once its listing falls due (at pb0's next poll, made now), a
     * scan lists it no more; the scan says when org-a's first is due again (a claim timeout
     * after it was taken). */
    freeReplyObject(redisCommand(f->direct, "ZADD t:poll_tenants 1 cf/org-b"));
    (void)scan_polls(f, true, &items, &count, &next_due);
    osbq_recovery_free(items, count);
    redisReply *r = redisCommand(f->direct, "ZSCORE t:poll_tenants cf/org-b");
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    assert_true(next_due > osbq_store_now_ms());
    /* An operator's resend makes a waiting step due at once in its tenant's polls. */
    assert_int_equal(osbq_store_operator_resend(f->store, "pa28", "ops", &err), 1);
    assert_int_equal(scan_polls(f, true, &items, &count, &next_due), 1);
    assert_string_equal(items[0].operation_id, "pa28");
    osbq_recovery_free(items, count);
}

/* osbq-ctl reencrypt's two steps: the walk finds every binding with a sealed value (and only
 * those), and the replacement is a compare-and-set: a value written since the walk read it
 * stays. The instances' and operations' walks find theirs, an operation in flight too. */
static void test_results_walk_and_compare_and_set(void **state)
{
    struct store_fixture *f = *state;
    struct osbq_error err = {0};
    for (int i = 0; i < 25; i++) {
        redisReply *r = redisCommand(f->direct,
                                     "HSET t:binding:ri:rb%d instance_id ri binding_id rb%d "
                                     "state bound result old-%d",
                                     i, i, i);
        freeReplyObject(r);
    }
    freeReplyObject(redisCommand(f->direct, "HSET t:binding:ri:gone state gone"));
    freeReplyObject(redisCommand(f->direct, "HSET t:binding:ri:noids state bound result x"));
    size_t seen = 0;
    uint64_t cursor = 0;
    int steps = 0;
    char key[64] = "";
    do {
        struct osbq_sealed_values *results = NULL;
        size_t n = 0;
        if (osbq_store_scan_sealed(f->store, OSBQ_SEALED_BINDINGS, &cursor, 5, &results, &n, &err) <
            0)
            fail_msg("scan: %s", err.text);
        for (size_t i = 0; i < n; i++) {
            /* Neither "gone" (no result) nor "noids" (no ids to bind a seal to) is walked. */
            const char *result = results[i].values[OSBQ_SEALED_RESULT];
            assert_string_equal(results[i].instance_id, "ri");
            assert_memory_equal(result, "old-", 4);
            assert_string_equal(result + 4, results[i].binding_id + 2);
            assert_null(results[i].values[OSBQ_SEALED_PARAMETERS]);
            if (strcmp(results[i].binding_id, "rb7") == 0)
                (void)snprintf(key, sizeof key, "%s", results[i].key);
            seen++;
        }
        osbq_sealed_values_free(results, n);
    } while (cursor != 0 && ++steps < 1000);
    assert_int_equal(seen, 25);
    assert_string_equal(key, "t:binding:ri:rb7");
    assert_int_equal(
        osbq_store_sealed_replace(f->store, key, OSBQ_SEALED_RESULT, "old-7", "new-7", &err), 1);
    assert_string_equal(store_field(f, key, "result"), "new-7");
    /* Written meanwhile (the walk read old-7): left alone. */
    assert_int_equal(
        osbq_store_sealed_replace(f->store, key, OSBQ_SEALED_RESULT, "old-7", "newer", &err), 0);
    assert_string_equal(store_field(f, key, "result"), "new-7");
    /* Deleted meanwhile (an unbind): not brought back. */
    freeReplyObject(redisCommand(f->direct, "HDEL %s result", key));
    assert_int_equal(
        osbq_store_sealed_replace(f->store, key, OSBQ_SEALED_RESULT, "new-7", "again", &err), 0);
    assert_string_equal(store_field(f, key, "result"), "");

    /* An instance's parameters and an operation's resume state, in their own walks. */
    freeReplyObject(redisCommand(f->direct, "HSET t:instance:wi instance_id wi state provisioned "
                                            "parameters p-1 context c-1"));
    freeReplyObject(redisCommand(f->direct, "HSET t:op:wo instance wi state running resume r-1"));
    const struct osbq_sealed_values *wi = NULL, *wo = NULL;
    struct osbq_sealed_values *found[2] = {NULL, NULL};
    size_t counts[2] = {0, 0};
    const enum osbq_sealed_records walks[2] = {OSBQ_SEALED_INSTANCES, OSBQ_SEALED_OPERATIONS};
    for (size_t w = 0; w < 2; w++) {
        /* The other tests' records are there too: one step covers them all. */
        cursor = 0;
        assert_int_equal(osbq_store_scan_sealed(f->store, walks[w], &cursor, 100000, &found[w],
                                                &counts[w], &err),
                         0);
        assert_int_equal(cursor, 0);
        for (size_t i = 0; i < counts[w]; i++) {
            if (strcmp(found[w][i].key, "t:instance:wi") == 0)
                wi = &found[w][i];
            if (strcmp(found[w][i].key, "t:op:wo") == 0)
                wo = &found[w][i];
        }
    }
    assert_non_null(wi);
    assert_string_equal(wi->values[OSBQ_SEALED_PARAMETERS], "p-1");
    assert_string_equal(wi->values[OSBQ_SEALED_CONTEXT], "c-1");
    assert_string_equal(wi->binding_id, "");
    assert_false(wi->in_flight);
    assert_non_null(wo);
    assert_string_equal(wo->instance_id, "wi");
    assert_string_equal(wo->values[OSBQ_SEALED_RESUME], "r-1");
    assert_true(wo->in_flight);
    assert_int_equal(
        osbq_store_sealed_replace(f->store, wo->key, OSBQ_SEALED_RESUME, "r-1", "r-2", &err), 1);
    assert_string_equal(store_field(f, "t:op:wo", "resume"), "r-2");
    osbq_sealed_values_free(found[0], counts[0]);
    osbq_sealed_values_free(found[1], counts[1]);
}

OSBQ_TEST_MAIN(setup, store_fixture_teardown, cmocka_unit_test(test_provision_lifecycle),
               cmocka_unit_test(test_update_applies_on_success_only),
               cmocka_unit_test(test_deprovision_and_reuse),
               cmocka_unit_test(test_expired_lease_is_taken_over),
               cmocka_unit_test(test_finish_wakes_waiting_gateways),
               cmocka_unit_test(test_ids_cannot_escape_their_keys),
               cmocka_unit_test(test_gateway_registry), cmocka_unit_test(test_process_status),
               cmocka_unit_test(test_operation_history_and_repairs),
               cmocka_unit_test(test_finished_operation_says_once),
               cmocka_unit_test(test_scan_records_hides_secrets),
               cmocka_unit_test(test_scripts_reload_after_flush),
               cmocka_unit_test(test_recovery_resends_then_abandons),
               cmocka_unit_test(test_steps_wait_and_poll), cmocka_unit_test(test_steps_repairs),
               cmocka_unit_test(test_polls_leave_fairly),
               cmocka_unit_test(test_results_walk_and_compare_and_set),
               cmocka_unit_test(test_poll_reads_the_operation_alone))
