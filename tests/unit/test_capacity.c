/* Unit tests for the workers a load needs (ctl/capacity.c): the rule of `osbq-ctl stats`, read
 * from statuses as gateways and workers publish them, and its edges (no workers, zero slots,
 * stopping workers, figures missing or absurd). */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "capacity.h"
#include "json_text.h"
#include "test_main.h"

/* The rule on statuses written as JSON text. */
static int64_t needed(const char *gateways, const char *workers, struct capacity *c, bool *exact)
{
    json_t *g = json_from_text(gateways);
    json_t *w = json_from_text(workers);
    capacity_from_statuses(g, w, c);
    json_decref(g);
    json_decref(w);
    return capacity_workers_needed(c, exact);
}

/* The same, checking the workers it says and whether that is exact (else a lower bound). */
static void assert_needed(const char *gateways, const char *workers, struct capacity *c,
                          int64_t want, bool want_exact)
{
    /* The opposite to start with: what is checked is what the rule wrote. */
    bool exact = !want_exact;
    assert_int_equal(needed(gateways, workers, c, &exact), want);
    assert_int_equal(exact, want_exact);
}

static void test_queued_and_running_over_slots_per_worker(void **state)
{
    (void)state;
    struct capacity c;
    bool exact = false;
    /* Two gateways hold 12 and 8 jobs; two workers of 16 slots run 16 each: 52 jobs, 4 workers.
     * The gateways' free_slots and workers (every worker counted by every gateway) are not
     * read. */
    assert_needed("[{\"jobs_queued\": 12, \"free_slots\": 0, \"workers\": 2},"
                  " {\"jobs_queued\": 8, \"free_slots\": 0, \"workers\": 2}]",
                  "[{\"slots\": 16, \"running\": 16}, {\"slots\": 16, \"running\": 16}]", &c, 4,
                  true);
    assert_int_equal(c.queued, 20);
    assert_int_equal(c.running, 32);
    assert_int_equal(c.workers, 2);
    assert_int_equal(c.sized, 2);
    assert_int_equal(c.slots, 32);
    /* Exactly full: no more than the workers there are; one job more: one worker more. */
    assert_int_equal(
        needed("[{\"jobs_queued\": 0}]", "[{\"slots\": 16, \"running\": 16}]", &c, &exact), 1);
    assert_int_equal(
        needed("[{\"jobs_queued\": 1}]", "[{\"slots\": 16, \"running\": 16}]", &c, &exact), 2);
    /* Half the slots busy on three workers: two are enough (scale down). */
    assert_int_equal(needed("[]",
                            "[{\"slots\": 16, \"running\": 8}, {\"slots\": 16, \"running\": 8},"
                            " {\"slots\": 16, \"running\": 8}]",
                            &c, &exact),
                     2);
    /* Workers of different sizes: the mean size (3 workers, 40 slots: 40/3 a worker). */
    assert_int_equal(needed("[{\"jobs_queued\": 14}]",
                            "[{\"slots\": 8, \"running\": 8}, {\"slots\": 16, \"running\": 16},"
                            " {\"slots\": 16, \"running\": 16}]",
                            &c, &exact),
                     5);
}

static void test_no_load_needs_no_worker(void **state)
{
    (void)state;
    struct capacity c;
    assert_needed("[]", "[]", &c, 0, true);
    assert_needed("[{\"jobs_queued\": 0}]", "[{\"slots\": 16, \"running\": 0}]", &c, 0, true);
}

static void test_no_worker_to_size_by(void **state)
{
    (void)state;
    struct capacity c;
    /* Jobs queued and no worker: one, a lower bound. */
    assert_needed("[{\"jobs_queued\": 500}]", "[]", &c, 1, false);
    assert_int_equal(c.workers, 0);
    /* Workers that publish no slots, or zero: their running jobs count, their size does not. */
    assert_needed("[{\"jobs_queued\": 3}]", "[{\"running\": 2}, {\"slots\": 0}]", &c, 1, false);
    assert_int_equal(c.running, 2);
    assert_int_equal(c.workers, 2);
    assert_int_equal(c.sized, 0);
    /* One worker with zero slots beside one with 10: sized by the one. */
    assert_needed("[{\"jobs_queued\": 15}]",
                  "[{\"slots\": 0, \"running\": 0}, {\"slots\": 10, \"running\": 10}]", &c, 3,
                  true);
}

static void test_stopping_workers(void **state)
{
    (void)state;
    struct capacity c;
    /* A stopping worker's running jobs are load (they finish there or move on after the
     * grace), and its size is a worker's size. */
    assert_needed("[{\"jobs_queued\": 0}]",
                  "[{\"slots\": 4, \"running\": 4, \"stopping\": true},"
                  " {\"slots\": 4, \"running\": 2, \"stopping\": false}]",
                  &c, 2, true);
    assert_int_equal(c.stopping, 1);
    assert_int_equal(c.workers, 2);
    /* Every worker stopping (a rolling update): still sized by them. */
    assert_needed("[{\"jobs_queued\": 9}]", "[{\"slots\": 4, \"running\": 4, \"stopping\": true}]",
                  &c, 4, true);
    assert_int_equal(c.stopping, 1);
}

static void test_figures_missing_or_absurd(void **state)
{
    (void)state;
    struct capacity c;
    bool exact = false;
    /* Not numbers, negative, or not objects: 0; a "stopping" that is not true: not stopping. */
    assert_int_equal(needed("[{\"jobs_queued\": \"7\"}, {\"jobs_queued\": -5}, 3]",
                            "[{\"slots\": -1, \"running\": -3, \"stopping\": 1}, \"w\"]", &c,
                            &exact),
                     0);
    assert_int_equal(c.queued, 0);
    assert_int_equal(c.stopping, 0);
    assert_int_equal(c.workers, 2);
    /* Huge figures are clamped: no overflow, still a positive answer. */
    assert_true(needed("[{\"jobs_queued\": 9223372036854775807},"
                       " {\"jobs_queued\": 9223372036854775807}]",
                       "[{\"slots\": 1, \"running\": 9223372036854775807}]", &c, &exact) > 0);
    assert_true(exact);
    /* A NULL array is no process. */
    capacity_from_statuses(NULL, NULL, &c);
    assert_int_equal(c.workers, 0);
    assert_int_equal(capacity_workers_needed(&c, &exact), 0);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_queued_and_running_over_slots_per_worker),
               cmocka_unit_test(test_no_load_needs_no_worker),
               cmocka_unit_test(test_no_worker_to_size_by), cmocka_unit_test(test_stopping_workers),
               cmocka_unit_test(test_figures_missing_or_absurd))
