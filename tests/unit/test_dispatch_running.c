/* Unit tests of the jobs a dispatcher counts as running (gateway/dispatch_running.c): each
 * tenant's load counts its jobs until they end, come back, or their worker goes; a job counted
 * twice or ended twice is counted once; a READY's ended list ends each job it names; a job
 * handed back finds the owner it was sent with. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assert_destroy.h"
#include "dispatch_running.h"
#include "test_main.h"

/* Workers are compared by address only. */
static int worker_a, worker_b;

static void add(struct dispatch_running *r, const char *operation_id, const char *tenant,
                const void *worker)
{
    const struct dispatch_owner owner = {tenant, 2, "cf"};
    dispatch_running_add(r, operation_id, &owner, worker);
}

static void test_load_per_tenant(void **state)
{
    (void)state;
    struct dispatch_running *r = dispatch_running_new();
    assert_non_null(r);
    assert_int_equal(dispatch_running_load(r, "t1"), 0);
    add(r, "op1", "t1", &worker_a);
    add(r, "op2", "t1", &worker_b);
    add(r, "op3", "t2", &worker_a);
    assert_int_equal(dispatch_running_load(r, "t1"), 2);
    assert_int_equal(dispatch_running_load(r, "t2"), 1);
    assert_int_equal(dispatch_running_count(r), 3);
    /* Sent twice (a resend while its first send still counts): one job. */
    add(r, "op1", "t1", &worker_b);
    assert_int_equal(dispatch_running_load(r, "t1"), 2);
    dispatch_running_end(r, "op1");
    assert_int_equal(dispatch_running_load(r, "t1"), 1);
    /* Ended twice, or never counted: nothing more ends. */
    dispatch_running_end(r, "op1");
    dispatch_running_end(r, "unknown");
    assert_int_equal(dispatch_running_load(r, "t1"), 1);
    dispatch_running_end(r, "op2");
    dispatch_running_end(r, "op3");
    assert_int_equal(dispatch_running_load(r, "t1"), 0);
    assert_int_equal(dispatch_running_load(r, "t2"), 0);
    assert_int_equal(dispatch_running_count(r), 0);
    assert_destroy_twice(dispatch_running_destroy, r);
}

/* A READY's ended frame: the ids separated by spaces, empty ones skipped. */
static void test_end_listed(void **state)
{
    (void)state;
    struct dispatch_running *r = dispatch_running_new();
    add(r, "op1", "t1", &worker_a);
    add(r, "op2", "t1", &worker_a);
    add(r, "op3", "t1", &worker_a);
    char ended[] = "op1  op3 gone";
    dispatch_running_end_listed(r, ended);
    assert_int_equal(dispatch_running_load(r, "t1"), 1);
    assert_non_null(dispatch_running_find(r, "op2"));
    assert_null(dispatch_running_find(r, "op1"));
    dispatch_running_end_listed(r, NULL);
    assert_int_equal(dispatch_running_count(r), 1);
    dispatch_running_destroy(&r);
}

/* Counts the space-separated words of list, checking each is "op<n>" with n a multiple of 3
 * (worker_b's) when of_b, else not one. */
static size_t count_listed(const char *list, bool of_b)
{
    size_t n = 0;
    for (const char *p = list; p != NULL && *p != '\0';) {
        const char *end = strchr(p, ' ');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        assert_true(len > 2 && strncmp(p, "op", 2) == 0);
        assert_int_equal(strtol(p + 2, NULL, 10) % 3 == 0, of_b);
        n++;
        p = end != NULL ? end + 1 : p + len;
    }
    return n;
}

/* A worker that left takes its jobs with it, and only its own, and says which they were: the
 * operations the recovery loop revokes. */
static void test_end_worker(void **state)
{
    (void)state;
    struct dispatch_running *r = dispatch_running_new();
    char id[16];
    for (int i = 0; i < 100; i++) {
        (void)snprintf(id, sizeof id, "op%d", i);
        add(r, id, i % 2 ? "t1" : "t2", i % 3 ? &worker_a : &worker_b);
    }
    char *of_a = dispatch_running_end_worker(r, &worker_a);
    assert_int_equal(count_listed(of_a, false), 66);
    free(of_a);
    /* Of 0..99, the multiples of 3 went to worker_b: 34 of them, 17 odd (t1) and 17 even. */
    assert_int_equal(dispatch_running_count(r), 34);
    assert_int_equal(dispatch_running_load(r, "t1"), 17);
    assert_int_equal(dispatch_running_load(r, "t2"), 17);
    assert_null(dispatch_running_end_worker(r, &worker_a));
    char *of_b = dispatch_running_end_worker(r, &worker_b);
    assert_int_equal(count_listed(of_b, true), 34);
    free(of_b);
    assert_int_equal(dispatch_running_count(r), 0);
    assert_int_equal(dispatch_running_load(r, "t1"), 0);
    dispatch_running_destroy(&r);
}

/* A job handed back gets the owner it was sent with; a missing tenant or platform reads "". */
static void test_find_owner(void **state)
{
    (void)state;
    struct dispatch_running *r = dispatch_running_new();
    add(r, "op1", "cf/org-1", &worker_a);
    const struct dispatch_owner unknown = {NULL, 0, NULL};
    dispatch_running_add(r, "op2", &unknown, &worker_b);
    const struct dispatch_running_job *job = dispatch_running_find(r, "op1");
    assert_non_null(job);
    assert_string_equal(job->tenant, "cf/org-1");
    assert_string_equal(job->platform, "cf");
    assert_int_equal(job->weight, 2);
    assert_ptr_equal(job->worker, &worker_a);
    job = dispatch_running_find(r, "op2");
    assert_non_null(job);
    assert_string_equal(job->tenant, "");
    assert_string_equal(job->platform, "");
    assert_int_equal(dispatch_running_load(r, ""), 1);
    dispatch_running_destroy(&r);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_load_per_tenant),
               cmocka_unit_test(test_end_listed), cmocka_unit_test(test_end_worker),
               cmocka_unit_test(test_find_owner))
