/* Unit tests of the policy module: parsing and its errors, context extraction from both
 * platforms' shapes, deny rules, which quotas a request counts against, and the cap on each
 * tenant's operations in progress. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "catalog_text.h"
#include "policy.h"
#include "string_cases.h"
#include "temp_file.h"
#include "test_main.h"

/* Two services: "db" with plans small and large, "cache" with plan tiny. */
static const char catalog_text[] =
    "{\"services\": ["
    " {\"name\": \"db\", \"id\": \"db-id\", \"description\": \"d\", \"bindable\": true,"
    "  \"plans\": [{\"id\": \"small-id\", \"name\": \"small\", \"description\": \"d\","
    "               \"osbq\": {\"backend\": \"sim\"}},"
    "              {\"id\": \"large-id\", \"name\": \"large\", \"description\": \"d\","
    "               \"osbq\": {\"backend\": \"sim\"}}]},"
    " {\"name\": \"cache\", \"id\": \"cache-id\", \"description\": \"d\", \"bindable\": true,"
    "  \"plans\": [{\"id\": \"tiny-id\", \"name\": \"tiny\", \"description\": \"d\","
    "               \"osbq\": {\"backend\": \"sim\"}}]}]}";

static const char policy_text[] =
    "{\"quotas\": ["
    "  {\"name\": \"total\", \"max_instances\": 100},"
    "  {\"name\": \"large\", \"plans\": [\"large-id\"], \"max_instances\": 2},"
    "  {\"name\": \"db\", \"services\": [\"db-id\"], \"max_instances\": 50},"
    "  {\"name\": \"per-ns\", \"per\": \"namespace\", \"max_instances\": 5},"
    "  {\"name\": \"per-space-cache\", \"per\": \"space_guid\", \"services\": [\"cache-id\"],"
    "   \"max_instances\": 3}],"
    " \"deny\": ["
    "  {\"name\": \"no-large-in-dev\", \"plans\": [\"large-id\"], \"namespaces\": [\"dev\"],"
    "   \"organization_guids\": [\"org-dev\"]},"
    "  {\"name\": \"no-cache-binds\", \"services\": [\"cache-id\"], \"operations\": [\"bind\"],"
    "   \"space_guids\": [\"space-locked\"]}]}";

struct fixture {
    struct osbq_catalog *catalog;
    struct osbq_policy *policy;
    const struct osbq_plan *small, *large, *tiny;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->catalog = catalog_from_text(catalog_text, sizeof catalog_text - 1);
    assert_non_null(f->catalog);
    struct osbq_error err = {0};
    if (osbq_policy_load_text(policy_text, sizeof policy_text - 1, f->catalog, &f->policy, &err) <
        0)
        fail_msg("policy: %s", err.text);
    f->small = osbq_catalog_plan(f->catalog, "small-id");
    f->large = osbq_catalog_plan(f->catalog, "large-id");
    f->tiny = osbq_catalog_plan(f->catalog, "tiny-id");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    osbq_policy_destroy(&f->policy);
    osbq_catalog_destroy(&f->catalog);
    free(f);
    return 0;
}

static void context_of(struct osbq_policy_context *ctx, const char *json)
{
    json_t *context = json_loads(json, 0, NULL);
    assert_non_null(context);
    osbq_policy_context_from(ctx, context, NULL, NULL, NULL);
    /* Copy out before the JSON goes: the tests keep only string literals alive. */
    static char kept[OSBQ_POLICY_FIELD_COUNT_][64];
    for (int i = 0; i < OSBQ_POLICY_FIELD_COUNT_; i++) {
        if (ctx->values[i] != NULL) {
            (void)snprintf(kept[i], sizeof kept[i], "%s", ctx->values[i]);
            ctx->values[i] = kept[i];
        }
    }
    json_decref(context);
}

static void test_context_shapes(void **state)
{
    (void)state;
    struct osbq_policy_context ctx;
    context_of(&ctx,
               "{\"platform\": \"kubernetes\", \"namespace\": \"dev\", \"clusterid\": \"c\"}");
    assert_string_equal(ctx.values[OSBQ_POLICY_NAMESPACE], "dev");
    assert_null(ctx.values[OSBQ_POLICY_ORGANIZATION_GUID]);
    context_of(&ctx, "{\"platform\": \"cloudfoundry\", \"organization_guid\": \"o\","
                     " \"space_guid\": \"s\"}");
    assert_null(ctx.values[OSBQ_POLICY_NAMESPACE]);
    assert_string_equal(ctx.values[OSBQ_POLICY_ORGANIZATION_GUID], "o");
    assert_string_equal(ctx.values[OSBQ_POLICY_SPACE_GUID], "s");
    /* Before 2.12: no context, the top-level fields. */
    osbq_policy_context_from(&ctx, NULL, "top-org", "top-space", "cf-prod");
    assert_string_equal(ctx.values[OSBQ_POLICY_ORGANIZATION_GUID], "top-org");
    assert_string_equal(ctx.values[OSBQ_POLICY_SPACE_GUID], "top-space");
    assert_string_equal(ctx.values[OSBQ_POLICY_PLATFORM], "cf-prod");
    /* The context's own "platform" names its kind, not the broker's platform. */
    context_of(&ctx, "{\"platform\": \"kubernetes\"}");
    assert_null(ctx.values[OSBQ_POLICY_PLATFORM]);
    /* Empty or non-string values say nothing. */
    context_of(&ctx, "{\"namespace\": \"\", \"organization_guid\": 5}");
    assert_null(ctx.values[OSBQ_POLICY_NAMESPACE]);
    assert_null(ctx.values[OSBQ_POLICY_ORGANIZATION_GUID]);
}

static void test_deny_rules(void **state)
{
    struct fixture *f = *state;
    struct osbq_policy_context ctx;
    char why[256];
    context_of(&ctx, "{\"namespace\": \"dev\"}");
    assert_true(
        osbq_policy_denied(f->policy, OSBQ_POLICY_PROVISION, f->large, &ctx, why, sizeof why));
    assert_string_equal(why, "Policy \"no-large-in-dev\" does not allow provisioning the plan "
                             "\"large\" of the service \"db\" in the namespace \"dev\".");
    /* Operations default to both. */
    assert_true(osbq_policy_denied(f->policy, OSBQ_POLICY_BIND, f->large, &ctx, why, sizeof why));
    assert_false(
        osbq_policy_denied(f->policy, OSBQ_POLICY_PROVISION, f->small, &ctx, why, sizeof why));
    context_of(&ctx, "{\"namespace\": \"prod\"}");
    assert_false(
        osbq_policy_denied(f->policy, OSBQ_POLICY_PROVISION, f->large, &ctx, why, sizeof why));
    /* The Cloud Foundry shape: any listed field refuses. */
    context_of(&ctx, "{\"organization_guid\": \"org-dev\", \"space_guid\": \"x\"}");
    assert_true(
        osbq_policy_denied(f->policy, OSBQ_POLICY_PROVISION, f->large, &ctx, why, sizeof why));
    assert_non_null(strstr(why, "in the organization \"org-dev\""));
    /* A bind-only rule on a service leaves provisioning alone. */
    context_of(&ctx, "{\"space_guid\": \"space-locked\"}");
    assert_false(
        osbq_policy_denied(f->policy, OSBQ_POLICY_PROVISION, f->tiny, &ctx, why, sizeof why));
    assert_true(osbq_policy_denied(f->policy, OSBQ_POLICY_BIND, f->tiny, &ctx, why, sizeof why));
    assert_string_equal(why, "Policy \"no-cache-binds\" does not allow binding the plan \"tiny\" "
                             "of the service \"cache\" in the space \"space-locked\".");
    assert_true(osbq_policy_denies_by_context(f->policy, OSBQ_POLICY_BIND, f->tiny));
    assert_false(osbq_policy_denies_by_context(f->policy, OSBQ_POLICY_PROVISION, f->tiny));
    assert_false(osbq_policy_denies_by_context(f->policy, OSBQ_POLICY_PROVISION, f->small));
    /* No policy: nothing denied. */
    assert_false(osbq_policy_denied(NULL, OSBQ_POLICY_BIND, f->tiny, &ctx, why, sizeof why));
}

static void test_quotas_a_request_counts_against(void **state)
{
    struct fixture *f = *state;
    struct osbq_policy_context ctx;
    struct osbq_policy_use uses[OSBQ_POLICY_QUOTAS_MAX];
    context_of(&ctx, "{\"namespace\": \"team-a\"}");
    size_t n = osbq_policy_quotas(f->policy, f->large, &ctx, uses);
    assert_int_equal(n, 4);
    assert_string_equal(uses[0].name, "total");
    assert_int_equal(uses[0].field, -1);
    assert_string_equal(uses[1].name, "large");
    assert_int_equal(uses[1].limit, 2);
    assert_string_equal(uses[2].name, "db");
    assert_string_equal(uses[3].name, "per-ns");
    assert_int_equal(uses[3].field, OSBQ_POLICY_NAMESPACE);
    assert_string_equal(uses[3].value, "team-a");
    /* Per-field quotas whose field the request lacks are skipped. */
    context_of(&ctx, "{\"space_guid\": \"s1\"}");
    n = osbq_policy_quotas(f->policy, f->tiny, &ctx, uses);
    assert_int_equal(n, 2);
    assert_string_equal(uses[0].name, "total");
    assert_string_equal(uses[1].name, "per-space-cache");
    assert_string_equal(uses[1].value, "s1");
    char why[256];
    osbq_policy_quota_description(&uses[1], 3, why, sizeof why);
    assert_string_equal(why,
                        "Quota \"per-space-cache\" exceeded: the space \"s1\" has 3 of at most 3 "
                        "instances.");
    osbq_policy_quota_description(&uses[0], 100, why, sizeof why);
    assert_string_equal(why, "Quota \"total\" exceeded: 100 of at most 100 instances exist.");
    assert_int_equal(osbq_policy_quotas(NULL, f->tiny, &ctx, uses), 0);
    assert_int_equal(osbq_policy_quota_count(f->policy), 5);
}

/* Each bad policy (given) and the start of the error it must give (want). */
static const struct string_case bad_policies[] = {
    {"[]", "must be a JSON object"},
    {"{\"quota\": []}", "policy: unknown member \"quota\""},
    {"{\"quotas\": {}}", "quotas: must be an array"},
    {"{\"quotas\": [5]}", "quotas[0]: must be an object"},
    {"{\"quotas\": [{\"max_instances\": 1}]}", "quotas[0]: \"name\" must be a string"},
    {"{\"quotas\": [{\"name\": \"a b\", \"max_instances\": 1}]}", "quotas[0]: \"name\" \"a b\""},
    {"{\"quotas\": [{\"name\": \"a\"}]}", "quotas[0]: \"max_instances\" must be an integer"},
    {"{\"quotas\": [{\"name\": \"a\", \"max_instances\": -1}]}", "quotas[0]: \"max_instances\""},
    {"{\"quotas\": [{\"name\": \"a\", \"max_instances\": 1.5}]}", "quotas[0]: \"max_instances\""},
    {"{\"quotas\": [{\"name\": \"a\", \"max_instances\": 1, \"per\": \"cluster\"}]}",
     "quotas[0]: \"per\" must be"},
    {"{\"quotas\": [{\"name\": \"a\", \"max_instances\": 1, \"plans\": [\"nope\"]}]}",
     "quotas[0].plans[0]: unknown plan id \"nope\""},
    {"{\"quotas\": [{\"name\": \"a\", \"max_instances\": 1, \"services\": [\"small-id\"]}]}",
     "quotas[0].services[0]: unknown service id \"small-id\""},
    {"{\"quotas\": [{\"name\": \"a\", \"max_instances\": 1, \"plans\": []}]}",
     "quotas[0].plans: must be a non-empty array"},
    {"{\"quotas\": [{\"name\": \"a\", \"max_instances\": 1, \"maximum\": 1}]}",
     "quotas[0]: unknown member \"maximum\""},
    {"{\"quotas\": [{\"name\": \"a\", \"max_instances\": 1}, {\"name\": \"a\", "
     "\"max_instances\": 2}]}",
     "quotas[1]: the name \"a\" is used twice"},
    {"{\"deny\": [{\"name\": \"d\"}]}", "deny[0]: name at least one of"},
    {"{\"deny\": [{\"name\": \"d\", \"namespaces\": [\"\"]}]}",
     "deny[0].namespaces[0]: must be a non-empty string"},
    {"{\"deny\": [{\"name\": \"d\", \"namespaces\": [\"x\"], \"operations\": [\"update\"]}]}",
     "deny[0].operations[0]: \"update\" is not"},
    {"{\"deny\": [{\"name\": \"d\", \"namespaces\": [\"x\"], \"plans\": [\"gone\"]}]}",
     "deny[0].plans[0]: unknown plan id \"gone\""},
    {"{\"quotas\": [], \"quotas\": []}", "not valid JSON"},
    {"{\"in_progress_per_tenant\": -1}", "in_progress_per_tenant: must be an integer from 0"},
    {"{\"in_progress_per_tenant\": 1000000001}", "in_progress_per_tenant: must be an integer"},
    {"{\"in_progress_per_tenant\": 2.5}", "in_progress_per_tenant: must be an integer"},
    {"{\"in_progress_per_tenant\": \"50\"}", "in_progress_per_tenant: must be an integer"},
    {"{\"in_progress_per_tenant\": null}", "in_progress_per_tenant: must be an integer"},
    {"{\"in_progress_per_tenant\": {}}",
     "in_progress_per_tenant: must be an integer, or a non-empty"},
    {"{\"in_progress_per_tenant\": [50]}", "in_progress_per_tenant: must be an integer, or"},
    {"{\"in_progress_per_tenant\": {\"cf prod\": 5}}",
     "in_progress_per_tenant: \"cf prod\" is not a platform name"},
    {"{\"in_progress_per_tenant\": {\"\": 5}}",
     "in_progress_per_tenant: \"\" is not a platform name"},
    {"{\"in_progress_per_tenant\": {\"cf\": 5, \"k8s\": -2}}",
     "in_progress_per_tenant.k8s: must be an integer from 0 to 1000000000"},
    {"{\"in_progress_per_tenant\": {\"*\": true}}", "in_progress_per_tenant.*: must be an integer"},
    {"{\"in_progress_per_tenant\": 5, \"in_progress\": 5}",
     "policy: unknown member \"in_progress\""},
};

static void test_bad_policies(void **state)
{
    struct fixture *f = *state;
    for (size_t i = 0; i < sizeof bad_policies / sizeof bad_policies[0]; i++) {
        struct osbq_policy *p = NULL;
        struct osbq_error err = {0};
        const char *text = bad_policies[i].given;
        if (osbq_policy_load_text(text, strlen(text), f->catalog, &p, &err) == 0) {
            osbq_policy_destroy(&p);
            fail_msg("case %zu accepted: %s", i, text);
        }
        assert_null(p);
        assert_int_equal(err.code, OSBQ_ERR_INVALID);
        if (strncmp(err.text, bad_policies[i].want, strlen(bad_policies[i].want)) != 0)
            fail_msg("case %zu: error \"%s\" does not start with \"%s\"", i, err.text,
                     bad_policies[i].want);
    }
}

static void test_without_catalog_ids_are_not_checked(void **state)
{
    (void)state;
    static const char text[] =
        "{\"quotas\": [{\"name\": \"a\", \"max_instances\": 0, \"plans\": [\"unknown\"]}]}";
    struct osbq_policy *p = NULL;
    struct osbq_error err = {0};
    assert_int_equal(osbq_policy_load_text(text, sizeof text - 1, NULL, &p, &err), 0);
    struct osbq_policy_use use;
    osbq_policy_quota_at(p, 0, &use);
    assert_string_equal(use.name, "a");
    assert_int_equal(use.limit, 0);
    osbq_policy_destroy(&p);
}

/* Quotas and deny rules by the OSBQ_PLATFORMS platform that sent the request. */
static void test_per_platform(void **state)
{
    struct fixture *f = *state;
    static const char text[] =
        "{\"quotas\": [{\"name\": \"per-platform\", \"per\": \"platform\", \"max_instances\": 7}],"
        " \"deny\": [{\"name\": \"no-cache-on-k8s-dev\", \"services\": [\"cache-id\"],"
        "  \"platforms\": [\"k8s-dev\"]}]}";
    struct osbq_policy *p = NULL;
    struct osbq_error err = {0};
    if (osbq_policy_load_text(text, sizeof text - 1, f->catalog, &p, &err) < 0)
        fail_msg("%s", err.text);
    struct osbq_policy_context ctx;
    struct osbq_policy_use uses[OSBQ_POLICY_QUOTAS_MAX];
    char why[256];
    osbq_policy_context_from(&ctx, NULL, NULL, NULL, "k8s-dev");
    assert_int_equal(osbq_policy_quotas(p, f->small, &ctx, uses), 1);
    assert_string_equal(uses[0].value, "k8s-dev");
    osbq_policy_quota_description(&uses[0], 7, why, sizeof why);
    assert_string_equal(why, "Quota \"per-platform\" exceeded: the platform \"k8s-dev\" has 7 of "
                             "at most 7 instances.");
    assert_true(osbq_policy_denied(p, OSBQ_POLICY_PROVISION, f->tiny, &ctx, why, sizeof why));
    assert_non_null(strstr(why, "in the platform \"k8s-dev\""));
    osbq_policy_context_from(&ctx, NULL, NULL, NULL, "cf-prod");
    assert_false(osbq_policy_denied(p, OSBQ_POLICY_PROVISION, f->tiny, &ctx, why, sizeof why));
    osbq_policy_destroy(&p);
}

/* in_progress_per_tenant: one number for every platform, or numbers by platform with "*" for the
 * others; without it (or for a platform it leaves out) nothing is capped. */
static void test_in_progress_cap(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *platform;
        int64_t cap;
    } cases[] = {
        {"{}", "default", -1},
        {"{\"quotas\": []}", "cf", -1},
        {"{\"in_progress_per_tenant\": 50}", "default", 50},
        {"{\"in_progress_per_tenant\": 50}", "cf", 50},
        {"{\"in_progress_per_tenant\": 0}", "cf", 0},
        {"{\"in_progress_per_tenant\": 1000000000}", "cf", 1000000000},
        {"{\"in_progress_per_tenant\": {\"cf\": 200, \"k8s-dev\": 20}}", "cf", 200},
        {"{\"in_progress_per_tenant\": {\"cf\": 200, \"k8s-dev\": 20}}", "k8s-dev", 20},
        {"{\"in_progress_per_tenant\": {\"cf\": 200, \"k8s-dev\": 20}}", "k8s", -1},
        {"{\"in_progress_per_tenant\": {\"cf\": 200, \"k8s-dev\": 20}}", "default", -1},
        {"{\"in_progress_per_tenant\": {\"cf\": 200, \"*\": 50}}", "cf", 200},
        {"{\"in_progress_per_tenant\": {\"*\": 50, \"cf\": 200}}", "cf", 200},
        {"{\"in_progress_per_tenant\": {\"cf\": 200, \"*\": 50}}", "default", 50},
        {"{\"in_progress_per_tenant\": {\"cf\": 200, \"*\": 50}}", NULL, 50},
        {"{\"in_progress_per_tenant\": {\"a.b_c-D9\": 3}}", "a.b_c-D9", 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct osbq_policy *p = NULL;
        struct osbq_error err = {0};
        if (osbq_policy_load_text(cases[i].text, strlen(cases[i].text), NULL, &p, &err) < 0)
            fail_msg("case %zu: %s", i, err.text);
        int64_t cap = osbq_policy_in_progress_cap(p, cases[i].platform);
        if (cap != cases[i].cap)
            fail_msg("case %zu: cap %lld, want %lld", i, (long long)cap, (long long)cases[i].cap);
        osbq_policy_destroy(&p);
    }
    assert_int_equal(osbq_policy_in_progress_cap(NULL, "cf"), -1);
}

static void test_cap_description(void **state)
{
    (void)state;
    char why[512];
    osbq_policy_cap_description("cf/org-123", 50, 50, why, sizeof why);
    assert_string_equal(why, "The tenant \"cf/org-123\" already has 50 operations in progress, and "
                             "this broker's policy allows at most 50 per tenant (OSBQ_POLICY "
                             "in_progress_per_tenant); retry when some have ended.");
    osbq_policy_cap_description("default", 1, 1, why, sizeof why);
    assert_string_equal(why, "The tenant \"default\" already has 1 operation in progress, and this "
                             "broker's policy allows at most 1 per tenant (OSBQ_POLICY "
                             "in_progress_per_tenant); retry when some have ended.");
    /* Deprovisions and unbinds count without being refused: a tenant may be over its cap. */
    osbq_policy_cap_description("k8s/team-a", 7, 5, why, sizeof why);
    assert_non_null(strstr(why, "already has 7 operations in progress"));
    assert_non_null(strstr(why, "allows at most 5 per tenant"));
    /* Cut, never overrun. */
    char small[16];
    osbq_policy_cap_description("k8s/team-a", 7, 5, small, sizeof small);
    assert_string_equal(small, "The tenant \"k8s");
}

/* deletes_per_minute_per_tenant: the same shape as in_progress_per_tenant, beside it and
 * independent of it, from 1 up (0 would forbid every delete: a deny rule's job). */
static void test_delete_cap(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *platform;
        int64_t cap, in_progress;
    } cases[] = {
        {"{}", "cf", -1, -1},
        {"{\"deletes_per_minute_per_tenant\": 20}", "cf", 20, -1},
        {"{\"deletes_per_minute_per_tenant\": {\"cf\": 20, \"*\": 100}}", "cf", 20, -1},
        {"{\"deletes_per_minute_per_tenant\": {\"cf\": 20, \"*\": 100}}", "k8s", 100, -1},
        {"{\"deletes_per_minute_per_tenant\": {\"cf\": 20}}", "k8s", -1, -1},
        {"{\"deletes_per_minute_per_tenant\": 5, \"in_progress_per_tenant\": 7}", "cf", 5, 7},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct osbq_policy *p = NULL;
        struct osbq_error err = {0};
        if (osbq_policy_load_text(cases[i].text, strlen(cases[i].text), NULL, &p, &err) < 0)
            fail_msg("case %zu: %s", i, err.text);
        assert_int_equal(osbq_policy_delete_cap(p, cases[i].platform), cases[i].cap);
        assert_int_equal(osbq_policy_in_progress_cap(p, cases[i].platform), cases[i].in_progress);
        osbq_policy_destroy(&p);
    }
    assert_int_equal(osbq_policy_delete_cap(NULL, "cf"), -1);
    static const char *const bad[] = {
        "{\"deletes_per_minute_per_tenant\": 0}",
        "{\"deletes_per_minute_per_tenant\": {\"cf\": 0}}",
        "{\"deletes_per_minute_per_tenant\": -1}",
        "{\"deletes_per_minute_per_tenant\": \"20\"}",
        "{\"deletes_per_minute_per_tenant\": {}}",
        "{\"deletes_per_minute_per_tenant\": {\"bad name\": 3}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct osbq_policy *p = NULL;
        struct osbq_error err = {0};
        if (osbq_policy_load_text(bad[i], strlen(bad[i]), NULL, &p, &err) == 0)
            fail_msg("bad case %zu accepted", i);
        assert_non_null(strstr(err.text, "deletes_per_minute_per_tenant"));
    }
    char why[512];
    osbq_policy_delete_cap_description("cf/org-123", 20, 20, why, sizeof why);
    assert_string_equal(why, "The tenant \"cf/org-123\" deleted 20 service instances or bindings "
                             "in the last minute, and this broker's policy allows at most 20 a "
                             "minute per tenant (OSBQ_POLICY deletes_per_minute_per_tenant); retry "
                             "in a minute.");
}

static void test_file_errors_name_the_path(void **state)
{
    (void)state;
    struct osbq_policy *p = NULL;
    struct osbq_error err = {0};
    assert_int_equal(osbq_policy_load_file("/nonexistent/policy.json", NULL, &p, &err), -1);
    assert_non_null(strstr(err.text, "/nonexistent/policy.json"));
    static const char text[] = "{\"deny\": 1}";
    char path[64];
    temp_file_write(text, sizeof text - 1, path, sizeof path);
    assert_int_equal(osbq_policy_load_file(path, NULL, &p, &err), -1);
    assert_true(strncmp(err.text, path, strlen(path)) == 0);
    assert_non_null(strstr(err.text, "deny: must be an array"));
    remove(path);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_context_shapes),
               cmocka_unit_test_setup_teardown(test_deny_rules, setup, teardown),
               cmocka_unit_test_setup_teardown(test_quotas_a_request_counts_against, setup,
                                               teardown),
               cmocka_unit_test_setup_teardown(test_bad_policies, setup, teardown),
               cmocka_unit_test(test_without_catalog_ids_are_not_checked),
               cmocka_unit_test_setup_teardown(test_per_platform, setup, teardown),
               cmocka_unit_test(test_in_progress_cap), cmocka_unit_test(test_delete_cap),
               cmocka_unit_test(test_cap_description),
               cmocka_unit_test(test_file_errors_name_the_path))
