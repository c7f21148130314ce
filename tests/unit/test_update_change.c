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

#include "update_change.h"

static const struct update_instance instance = {
    .plan_id = "small",
    .parameters = "{\"size\":1,\"tags\":[\"a\",\"b\"]}",
    .context = "{\"platform\":\"cloudfoundry\",\"space_guid\":\"s1\"}",
    .maintenance_version = "1.2.0",
};

static json_t *parse(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    return v;
}

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
    const struct update_instance no_version = {.plan_id = "small"};
    u.maintenance_version = "1.2.0";
    assert_false(update_changes_nothing(&u, &no_version));
}

/* Parameters replace those in force: the same ones (in any key order) change nothing; {} does
 * when there were none, and not when there were some. */
static void test_parameters(void **state)
{
    (void)state;
    json_t *same = parse("{\"tags\":[\"a\",\"b\"],\"size\":1}");
    json_t *other = parse("{\"size\":2,\"tags\":[\"a\",\"b\"]}");
    json_t *order = parse("{\"size\":1,\"tags\":[\"b\",\"a\"]}");
    json_t *empty = parse("{}");
    struct update_change u = {.plan_id = "small", .parameters = same};
    assert_true(update_changes_nothing(&u, &instance));
    u.parameters = other;
    assert_false(update_changes_nothing(&u, &instance));
    u.parameters = order;
    assert_false(update_changes_nothing(&u, &instance));
    u.parameters = empty;
    assert_false(update_changes_nothing(&u, &instance));
    const struct update_instance none = {.plan_id = "small"};
    assert_true(update_changes_nothing(&u, &none));
    u.parameters = same;
    assert_false(update_changes_nothing(&u, &none));
    const struct update_instance broken = {.plan_id = "small", .parameters = "{"};
    u.parameters = empty;
    assert_false(update_changes_nothing(&u, &broken));
    json_decref(same);
    json_decref(other);
    json_decref(order);
    json_decref(empty);
}

/* A context counts only where the service takes context updates. */
static void test_context(void **state)
{
    (void)state;
    json_t *same = parse("{\"space_guid\":\"s1\",\"platform\":\"cloudfoundry\"}");
    json_t *moved = parse("{\"space_guid\":\"s2\",\"platform\":\"cloudfoundry\"}");
    struct update_change u = {.plan_id = "small", .context = same, .allow_context_updates = true};
    assert_true(update_changes_nothing(&u, &instance));
    u.context = moved;
    assert_false(update_changes_nothing(&u, &instance));
    u.allow_context_updates = false;
    assert_true(update_changes_nothing(&u, &instance));
    const struct update_instance none = {.plan_id = "small"};
    u.allow_context_updates = true;
    assert_false(update_changes_nothing(&u, &none));
    json_decref(same);
    json_decref(moved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_named_changes_nothing),
        cmocka_unit_test(test_plan_and_maintenance),
        cmocka_unit_test(test_parameters),
        cmocka_unit_test(test_context),
    };
    return cmocka_run_group_tests_name("update_change", tests, NULL, NULL);
}
