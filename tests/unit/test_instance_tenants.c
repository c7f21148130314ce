/* Unit tests for gateway/instance_tenants.c: the instances' tenants a gateway learns from its
 * begin answers, under which a synchronous request without one of its own waits for a slot
 * (docs/decisions/0045): unknown until learned, replaced by a newer answer, a key too long not
 * kept, bounded (all forgotten past INSTANCE_TENANTS_MAX, the newest kept). */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <string.h>

#include "assert_destroy.h"
#include "memo.h"
#include "test_main.h"

static void test_learned_then_replaced(void **state)
{
    (void)state;
    struct memo *t = memo_new(INSTANCE_TENANTS_MAX);
    assert_non_null(t);
    char tenant[TENANT_KEY_MAX] = "untouched";
    assert_false(instance_tenants_get(t, "i-1", tenant));
    assert_string_equal(tenant, "untouched");
    instance_tenants_put(t, "i-1", "cf/org-a");
    assert_true(instance_tenants_get(t, "i-1", tenant));
    assert_string_equal(tenant, "cf/org-a");
    assert_false(instance_tenants_get(t, "i-2", tenant));
    /* The id deleted and provisioned again by another organization. */
    instance_tenants_put(t, "i-1", "cf/org-b");
    assert_true(instance_tenants_get(t, "i-1", tenant));
    assert_string_equal(tenant, "cf/org-b");
    assert_destroy_twice(memo_free, t);
    memo_free(NULL);
}

static void test_too_long_not_kept(void **state)
{
    (void)state;
    struct memo *t = memo_new(INSTANCE_TENANTS_MAX);
    assert_non_null(t);
    char longest[TENANT_KEY_MAX + 1];
    memset(longest, 'x', TENANT_KEY_MAX);
    longest[TENANT_KEY_MAX] = '\0';
    instance_tenants_put(t, "i-1", longest);
    char tenant[TENANT_KEY_MAX];
    assert_false(instance_tenants_get(t, "i-1", tenant));
    longest[TENANT_KEY_MAX - 1] = '\0';
    instance_tenants_put(t, "i-1", longest);
    assert_true(instance_tenants_get(t, "i-1", tenant));
    assert_string_equal(tenant, longest);
    memo_free(&t);
}

static void test_bounded(void **state)
{
    (void)state;
    struct memo *t = memo_new(INSTANCE_TENANTS_MAX);
    assert_non_null(t);
    char id[32], tenant[TENANT_KEY_MAX];
    for (int i = 0; i < INSTANCE_TENANTS_MAX; i++) {
        (void)snprintf(id, sizeof id, "i-%d", i);
        instance_tenants_put(t, id, "cf/org");
    }
    assert_true(instance_tenants_get(t, "i-0", tenant));
    /* Known ones are still replaced in place. */
    instance_tenants_put(t, "i-0", "cf/other");
    assert_true(instance_tenants_get(t, "i-1", tenant));
    instance_tenants_put(t, "i-new", "cf/org");
    assert_false(instance_tenants_get(t, "i-0", tenant));
    assert_false(instance_tenants_get(t, "i-1", tenant));
    assert_true(instance_tenants_get(t, "i-new", tenant));
    memo_free(&t);
}

static void test_no_table(void **state)
{
    (void)state;
    char tenant[TENANT_KEY_MAX];
    instance_tenants_put(NULL, "i-1", "cf/org");
    assert_false(instance_tenants_get(NULL, "i-1", tenant));
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_learned_then_replaced),
               cmocka_unit_test(test_too_long_not_kept), cmocka_unit_test(test_bounded),
               cmocka_unit_test(test_no_table))
