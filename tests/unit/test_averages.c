/* Unit tests for gateway/averages.c: the plans' averages a gateway keeps for the polls that read
 * an operation alone (docs/decisions/0043): fresh for AVERAGES_MAX_AGE_S, by plan and kind,
 * "none recorded" kept like a number, and bounded. */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>

#include "memo.h"
#include "test_main.h"

static void test_fresh_then_stale(void **state)
{
    (void)state;
    struct memo *a = memo_new(AVERAGES_MAX);
    assert_non_null(a);
    int64_t ms = 0;
    assert_false(averages_get(a, "plan-a", "provision", 100.0, &ms));
    averages_put(a, "plan-a", "provision", 100.0, 4200);
    assert_true(averages_get(a, "plan-a", "provision", 100.0, &ms));
    assert_int_equal(ms, 4200);
    assert_true(averages_get(a, "plan-a", "provision", 100.0 + AVERAGES_MAX_AGE_S - 0.5, &ms));
    assert_false(averages_get(a, "plan-a", "provision", 100.0 + AVERAGES_MAX_AGE_S, &ms));
    /* A clock that went back does not make an entry fresh for ever. */
    assert_false(averages_get(a, "plan-a", "provision", 99.0, &ms));
    /* Read again: replaced. */
    averages_put(a, "plan-a", "provision", 200.0, 5000);
    assert_true(averages_get(a, "plan-a", "provision", 201.0, &ms));
    assert_int_equal(ms, 5000);
    memo_free(&a);
    assert_null(a);
}

static void test_by_plan_and_kind(void **state)
{
    (void)state;
    struct memo *a = memo_new(AVERAGES_MAX);
    int64_t ms = 0;
    averages_put(a, "plan-a", "provision", 1.0, 10);
    averages_put(a, "plan-a", "bind", 1.0, -1); /* none recorded yet: kept too */
    averages_put(a, "plan-b", "provision", 1.0, 30);
    assert_true(averages_get(a, "plan-a", "provision", 2.0, &ms));
    assert_int_equal(ms, 10);
    assert_true(averages_get(a, "plan-a", "bind", 2.0, &ms));
    assert_int_equal(ms, -1);
    assert_true(averages_get(a, "plan-b", "provision", 2.0, &ms));
    assert_int_equal(ms, 30);
    assert_false(averages_get(a, "plan-b", "bind", 2.0, &ms));
    /* "<kind> <plan>": a kind is one word, so a plan id with spaces is still its own. */
    averages_put(a, "a b", "update", 1.0, 7);
    assert_false(averages_get(a, "a", "update", 2.0, &ms));
    assert_true(averages_get(a, "a b", "update", 2.0, &ms));
    assert_int_equal(ms, 7);
    memo_free(&a);
}

static void test_bounded(void **state)
{
    (void)state;
    struct memo *a = memo_new(AVERAGES_MAX);
    char plan[32];
    for (int i = 0; i < AVERAGES_MAX; i++) {
        (void)snprintf(plan, sizeof plan, "plan-%d", i);
        averages_put(a, plan, "provision", 1.0, i);
    }
    int64_t ms = 0;
    assert_true(averages_get(a, "plan-0", "provision", 2.0, &ms));
    /* One more than it keeps: the others are forgotten (read again as polls need them). */
    averages_put(a, "one-more", "provision", 1.0, 1);
    assert_false(averages_get(a, "plan-0", "provision", 2.0, &ms));
    assert_true(averages_get(a, "one-more", "provision", 2.0, &ms));
    memo_free(&a);
}

static void test_null_table(void **state)
{
    (void)state;
    int64_t ms = 3;
    averages_put(NULL, "p", "provision", 1.0, 5);
    assert_false(averages_get(NULL, "p", "provision", 1.0, &ms));
    assert_int_equal(ms, 3);
    memo_free(NULL);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_fresh_then_stale),
               cmocka_unit_test(test_by_plan_and_kind), cmocka_unit_test(test_bounded),
               cmocka_unit_test(test_null_table))
