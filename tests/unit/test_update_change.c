/* Unit tests for gateway/update_change.c: which updates change nothing. */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <jansson.h>
#include <stdbool.h>

#include "json_text.h"
#include "test_main.h"
#include "update_change.h"

static const struct update_instance instance = {
    .plan_id = "small",
    .parameters = "{\"size\":1,\"tags\":[\"a\",\"b\"]}",
    .context = "{\"platform\":\"cloudfoundry\",\"space_guid\":\"s1\"}",
    .maintenance_version = "1.2.0",
};

/* The same plan with nothing else in force: no parameters, context or maintenance version. */
static const struct update_instance bare = {.plan_id = "small"};

static void test_nothing_named_changes_nothing(void **state)
{
    (void)state;
    struct update_change u = {.plan_id = "small"};
    assert_true(update_changes_nothing(&u, &instance));
    u.maintenance_version = "1.2.0";
    assert_true(update_changes_nothing(&u, &instance));
}

static void test_plan_and_maintenance(void **state)
{
    (void)state;
    struct update_change u = {.plan_id = "large"};
    assert_false(update_changes_nothing(&u, &instance));
    u.plan_id = "small";
    u.maintenance_version = "1.3.0";
    assert_false(update_changes_nothing(&u, &instance));
    u.maintenance_version = "1.2.0";
    assert_false(update_changes_nothing(&u, &bare));
}

/* Parameters replace those in force: the same ones (in any key order) change nothing; {} does
 * when there were none, and not when there were some. */
static void test_parameters(void **state)
{
    (void)state;
    json_t *same = json_from_text("{\"tags\":[\"a\",\"b\"],\"size\":1}");
    json_t *other = json_from_text("{\"size\":2,\"tags\":[\"a\",\"b\"]}");
    json_t *order = json_from_text("{\"size\":1,\"tags\":[\"b\",\"a\"]}");
    json_t *empty = json_from_text("{}");
    const struct update_instance broken = {.plan_id = "small", .parameters = "{"};
    const struct {
        const json_t *parameters;
        const struct update_instance *in_force;
        bool changes_nothing;
    } cases[] = {
        {same, &instance, true},
        {other, &instance, false},
        {order, &instance, false}, /* a list's order is its value */
        {empty, &instance, false},
        {empty, &bare, true},
        {same, &bare, false},
        /* What is in force does not parse: nothing can be the same as it. */
        {empty, &broken, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct update_change u = {.plan_id = "small", .parameters = cases[i].parameters};
        if (update_changes_nothing(&u, cases[i].in_force) != cases[i].changes_nothing)
            fail_msg("case %zu: changes nothing should be %d", i, cases[i].changes_nothing);
    }
    json_decref(same);
    json_decref(other);
    json_decref(order);
    json_decref(empty);
}

/* A context counts only where the service takes context updates. */
static void test_context(void **state)
{
    (void)state;
    json_t *same = json_from_text("{\"space_guid\":\"s1\",\"platform\":\"cloudfoundry\"}");
    json_t *moved = json_from_text("{\"space_guid\":\"s2\",\"platform\":\"cloudfoundry\"}");
    struct update_change u = {.plan_id = "small", .context = same, .allow_context_updates = true};
    assert_true(update_changes_nothing(&u, &instance));
    u.context = moved;
    assert_false(update_changes_nothing(&u, &instance));
    u.allow_context_updates = false;
    assert_true(update_changes_nothing(&u, &instance));
    u.allow_context_updates = true;
    assert_false(update_changes_nothing(&u, &bare));
    json_decref(same);
    json_decref(moved);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_nothing_named_changes_nothing),
               cmocka_unit_test(test_plan_and_maintenance), cmocka_unit_test(test_parameters),
               cmocka_unit_test(test_context))
