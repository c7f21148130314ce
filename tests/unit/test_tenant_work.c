/* Unit tests of osbq-ctl stats' count of operations in progress by tenant (ctl/tenant_work.c):
 * an operation met twice counts once, counts add up per tenant, operations without a tenant
 * count under "", and the busiest tenants come first (ties by key, idle ones left out). */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "assert_destroy.h"
#include "tenant_work.h"
#include "test_main.h"

static void test_counts_and_order(void **state)
{
    (void)state;
    struct tenant_tally *t = tenant_tally_new();
    assert_non_null(t);
    assert_int_equal(tenant_tally_first_sight(t, "op-1"), 1);
    assert_int_equal(tenant_tally_first_sight(t, "op-1"), 0);
    assert_int_equal(tenant_tally_first_sight(t, "op-2"), 1);
    assert_int_equal(tenant_tally_add(t, "cf/b", 1, 0, 0), 0);
    assert_int_equal(tenant_tally_add(t, "cf/a", 0, 2, 0), 0);
    assert_int_equal(tenant_tally_add(t, "k8s/ns", 0, 0, 5), 0);
    assert_int_equal(tenant_tally_add(t, "cf/b", 0, 1, 0), 0);
    assert_int_equal(tenant_tally_add(t, NULL, 1, 0, 0), 0);
    assert_int_equal(tenant_tally_add(t, "", 0, 0, 1), 0);
    assert_int_equal(tenant_tally_add(t, "idle", 0, 0, 0), 0);
    size_t n = 0;
    const struct tenant_work *w = tenant_tally_sorted(t, &n);
    assert_int_equal(n, 4);
    assert_string_equal(w[0].tenant, "k8s/ns");
    assert_int_equal(tenant_work_total(&w[0]), 5);
    /* Ties by key: "" first, then cf/a before cf/b. */
    assert_string_equal(w[1].tenant, "");
    assert_int_equal(w[1].queued, 1);
    assert_int_equal(w[1].waiting, 1);
    assert_string_equal(w[2].tenant, "cf/a");
    assert_int_equal(w[2].running, 2);
    assert_string_equal(w[3].tenant, "cf/b");
    assert_int_equal(w[3].queued, 1);
    assert_int_equal(w[3].running, 1);
    assert_int_equal(tenant_work_total(&w[3]), 2);
    assert_destroy_twice(tenant_tally_destroy, t);
}

/* Nothing counted: nothing listed. */
static void test_empty(void **state)
{
    (void)state;
    struct tenant_tally *t = tenant_tally_new();
    size_t n = 1;
    (void)tenant_tally_sorted(t, &n);
    assert_int_equal(n, 0);
    tenant_tally_destroy(&t);
}

/* Many tenants (the list grows) and bytes that are not UTF-8 in a key (a part cut mid-character
 * by the gateway): each keeps its own counts. */
static void test_many_tenants(void **state)
{
    (void)state;
    enum { TENANTS = 5000 };
    struct tenant_tally *t = tenant_tally_new();
    char key[32];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < TENANTS; i++) {
            (void)snprintf(key, sizeof key, "k8s/ns-%d", i);
            assert_int_equal(tenant_tally_add(t, key, i % 7, 0, 0), 0);
        }
    assert_int_equal(tenant_tally_add(t, "cf/\xc3", 0, 100, 0), 0);
    size_t n = 0;
    const struct tenant_work *w = tenant_tally_sorted(t, &n);
    /* Those with i % 7 == 0 hold nothing. */
    assert_int_equal(n, 1 + TENANTS - (TENANTS + 6) / 7);
    assert_string_equal(w[0].tenant, "cf/\xc3");
    assert_int_equal(w[1].queued, 12);
    assert_int_equal(tenant_work_total(&w[n - 1]), 2);
    tenant_tally_destroy(&t);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_empty), cmocka_unit_test(test_counts_and_order),
               cmocka_unit_test(test_many_tenants))
