/* Unit tests of the timing rules of step-wise operations (worker/step_timing.c): when the next
 * step is due, capped at the point the operation must have ended by, and when a claimed step
 * fails instead of running (the deadline across steps, maximum_polling_duration); and the
 * fairness rule of the gateways' recovery loop (gateway/recovery.c: due work handed out only
 * when workers have room; the dispatcher's lanes are tested in test_dispatch_lanes.c). */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <string.h>

#include "catalog.h"
#include "catalog_text.h"
#include "recovery.h"
#include "step_timing.h"
#include "test_main.h"

#define T0 1700000000000LL /* an epoch ms to count from */

static void test_due_capped(void **state)
{
    (void)state;
    assert_int_equal(step_due_ms(T0, 5000, 0), T0 + 5000);
    assert_int_equal(step_due_ms(T0, -1, 0), T0);
    assert_int_equal(step_due_ms(T0, 5000, T0 + 60000), T0 + 5000);
    /* Never after the end: the step that finds the operation out of time runs then. */
    assert_int_equal(step_due_ms(T0, 120000, T0 + 60000), T0 + 60000);
    /* An end already past: due at once. */
    assert_int_equal(step_due_ms(T0, 120000, T0 - 1), T0);
}

static void test_end(void **state)
{
    (void)state;
    struct osbq_claim c = {.started_ms = T0, .accepted_ms = T0 - 1000, .steps = 2};
    assert_int_equal(step_end_ms(&c, 3600, 0), T0 + 3600000);
    assert_int_equal(step_end_ms(&c, 3600, 60), T0 - 1000 + 60000);
    assert_int_equal(step_end_ms(&c, 30, 3600), T0 + 30000);
    c.accepted_ms = 0; /* unknown accept: only the deadline */
    assert_int_equal(step_end_ms(&c, 30, 10), T0 + 30000);
    /* Far futures saturate instead of overflowing. */
    assert_int_equal(step_end_ms(&c, INT64_MAX / 10, 0), INT64_MAX);
}

static void test_overdue(void **state)
{
    (void)state;
    struct osbq_claim first = {.started_ms = T0, .accepted_ms = T0, .steps = 0};
    struct osbq_claim poll = {.started_ms = T0, .accepted_ms = T0, .steps = 3};
    /* A first step's deadline is the runner's own (released, not failed). */
    assert_int_equal(step_overdue(&first, T0 + 100000, 10, 0), STEP_ON_TIME);
    assert_int_equal(step_overdue(&poll, T0 + 9999, 10, 0), STEP_ON_TIME);
    assert_int_equal(step_overdue(&poll, T0 + 10000, 10, 0), STEP_PAST_DEADLINE);
    /* maximum_polling_duration counts from the accept, on any step. */
    assert_int_equal(step_overdue(&first, T0 + 5000, 10, 5), STEP_PAST_POLLING);
    assert_int_equal(step_overdue(&poll, T0 + 20000, 10, 5), STEP_PAST_POLLING);
    assert_int_equal(step_overdue(&poll, T0 + 4999, 10, 5), STEP_ON_TIME);
    char text[160];
    step_overdue_text(STEP_PAST_DEADLINE, 10, 5, text, sizeof text);
    assert_string_equal(text, "The operation did not finish within its deadline of 10 s.");
    step_overdue_text(STEP_PAST_POLLING, 10, 5, text, sizeof text);
    assert_string_equal(text, "The operation did not finish within the plan's "
                              "maximum_polling_duration of 5 s.");
}

static void test_max_polling_from_plan(void **state)
{
    (void)state;
    static const char text[] =
        "{\"services\": [{\"name\": \"s\", \"id\": \"svc\", \"description\": \"d\", \"bindable\": "
        "false,"
        " \"plans\": ["
        "  {\"id\": \"p1\", \"name\": \"a\", \"description\": \"d\","
        "   \"maximum_polling_duration\": 90, \"osbq\": {\"backend\": \"sim\"}},"
        "  {\"id\": \"p2\", \"name\": \"b\", \"description\": \"d\","
        "   \"osbq\": {\"backend\": \"sim\"}}]}]}";
    struct osbq_catalog *catalog = catalog_from_text(text, sizeof text - 1);
    assert_non_null(catalog);
    assert_int_equal(step_max_polling_s(osbq_catalog_plan(catalog, "p1")), 90);
    assert_int_equal(step_max_polling_s(osbq_catalog_plan(catalog, "p2")), 0);
    assert_int_equal(step_max_polling_s(NULL), 0);
    osbq_catalog_destroy(&catalog);
}

/* Recovered work (resends, polls) is taken from Redis no faster than workers run it: another
 * batch only with a free slot and less than a batch still queued in the dispatcher's due lane;
 * new jobs queued in the other lanes do not hold it back (the lanes take turns). */
static void test_recovery_room(void **state)
{
    (void)state;
    struct dispatch_stats stats = {.queued = 0, .workers = 1, .free_slots = 4};
    assert_true(recovery_has_room(&stats, 200));
    stats.queued = stats.queued_due = 199;
    assert_true(recovery_has_room(&stats, 200));
    stats.queued = stats.queued_due = 200;
    assert_false(recovery_has_room(&stats, 200));
    stats.queued = 10000;
    stats.queued_due = 0;
    assert_true(recovery_has_room(&stats, 200));
    stats.queued = 0;
    stats.free_slots = 0;
    assert_false(recovery_has_room(&stats, 200));
}

/* When the recovery loop wakes: the next full scan, or the earliest entry it knows of when
 * sooner; an entry already due (no room then) is looked at again a tick (50 ms) later. */
static void test_recovery_wake(void **state)
{
    (void)state;
    /* Nothing due known: the next full scan. */
    assert_true(recovery_wake_ms(1000, 2000, 0) == 2000);
    /* A step due before the scan: then, to the millisecond. */
    assert_true(recovery_wake_ms(1000, 2000, 1300) == 1300);
    assert_true(recovery_wake_ms(1000, 2000, 1001) == 1001);
    /* Due after the scan: the scan comes first. */
    assert_true(recovery_wake_ms(1000, 2000, 2500) == 2000);
    /* Already due (no worker had room): a tick later, not a busy loop. */
    assert_true(recovery_wake_ms(1000, 2000, 900) == 1050);
    assert_true(recovery_wake_ms(1000, 2000, 1000) == 1050);
    assert_true(recovery_wake_ms(1000, 1020, 900) == 1020);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_due_capped), cmocka_unit_test(test_end),
               cmocka_unit_test(test_overdue), cmocka_unit_test(test_max_polling_from_plan),
               cmocka_unit_test(test_recovery_room), cmocka_unit_test(test_recovery_wake))
