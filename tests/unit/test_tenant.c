/* Unit tests of tenant keys (gateway/tenant.c): what names a tenant from a request's platform,
 * context and top-level organization and space, at each OSBQ_TENANT_KEY scope. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tenant.h"
#include "test_main.h"

static const char cf[] =
    "{\"platform\":\"cloudfoundry\",\"organization_guid\":\"org-1\",\"space_guid\":\"space-1\"}";
static const char k8s[] = "{\"platform\":\"kubernetes\",\"namespace\":\"team-a\"}";

static void expect(enum osbq_tenant_scope scope, const char *platform, const char *context,
                   const char *org, const char *space, const char *want)
{
    char key[TENANT_KEY_MAX];
    tenant_key(scope, platform, context, org, space, key);
    assert_string_equal(key, want);
}

static void test_scopes(void **state)
{
    (void)state;
    expect(OSBQ_TENANT_PLATFORM, "cf", cf, NULL, NULL, "cf");
    expect(OSBQ_TENANT_ORGANIZATION, "cf", cf, NULL, NULL, "cf/org-1");
    expect(OSBQ_TENANT_SPACE, "cf", cf, NULL, NULL, "cf/org-1/space-1");
    /* Kubernetes: the namespace is the organization; there is no space. */
    expect(OSBQ_TENANT_ORGANIZATION, "k8s", k8s, NULL, NULL, "k8s/team-a");
    expect(OSBQ_TENANT_SPACE, "k8s", k8s, NULL, NULL, "k8s/team-a");
}

/* The context wins over the top-level fields; without a context, the top-level ones; without
 * any, the platform alone (a deprovision, an unbind: their instance's tenant is recorded). */
static void test_fallbacks(void **state)
{
    (void)state;
    expect(OSBQ_TENANT_SPACE, "default", cf, "org-top", "space-top", "default/org-1/space-1");
    expect(OSBQ_TENANT_SPACE, "default", NULL, "org-top", "space-top", "default/org-top/space-top");
    expect(OSBQ_TENANT_SPACE, "default", "{\"platform\":\"x\"}", "org-top", NULL,
           "default/org-top");
    expect(OSBQ_TENANT_SPACE, "default", NULL, NULL, "space-top", "default");
    expect(OSBQ_TENANT_ORGANIZATION, "default", NULL, NULL, NULL, "default");
    expect(OSBQ_TENANT_ORGANIZATION, "default", NULL, "", "", "default");
    /* Not strings, empty, or not JSON: as if absent. */
    expect(OSBQ_TENANT_ORGANIZATION, "default", "{\"organization_guid\":7,\"namespace\":\"\"}",
           "org-top", NULL, "default/org-top");
    expect(OSBQ_TENANT_ORGANIZATION, "default", "not json", NULL, NULL, "default");
}

/* A long identifier is cut, so a key always fits. */
static void test_long_parts_cut(void **state)
{
    (void)state;
    char org[300], context[400], key[TENANT_KEY_MAX], want[TENANT_KEY_MAX];
    memset(org, 'o', sizeof org - 1);
    org[sizeof org - 1] = '\0';
    (void)snprintf(context, sizeof context, "{\"organization_guid\":\"%s\",\"space_guid\":\"%s\"}",
                   org, "s");
    tenant_key(OSBQ_TENANT_SPACE, "cf", context, NULL, NULL, key);
    (void)snprintf(want, sizeof want, "cf/%.*s/s", TENANT_PART_MAX, org);
    assert_string_equal(key, want);
    assert_true(strlen(key) < TENANT_KEY_MAX);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_scopes), cmocka_unit_test(test_fallbacks),
               cmocka_unit_test(test_long_parts_cut))
