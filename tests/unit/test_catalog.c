/* Unit tests of the catalog loader: the fixture cases under tests/data/catalog, the example
 * catalog, the public body and its ETag, the lookups, and the semver check. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "catalog_text.h"
#include "semver.h"
#include "string_cases.h"

#define CATALOG_DATA_DIR  OSBQ_TEST_DATA_DIR "/catalog"
#define EFFECTIVE_CATALOG CATALOG_DATA_DIR "/valid/effective-values/catalog.json"
#define DRAFT4            "http://json-schema.org/draft-04/schema#"

static const char minimal_catalog[] =
    "{\"services\": [{\"name\": \"s\", \"id\": \"s-id\", \"description\": \"d\", \"bindable\": "
    "true,"
    " \"plans\": [{\"id\": \"p-id\", \"name\": \"p\", \"description\": \"d\","
    " \"osbq\": {\"backend\": \"sim\"}}]}]}";

/* ---- helpers ---- */

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    va_start(ap, fmt);
    (void)vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* The whole file as a string, or NULL when it cannot be read. */
static char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 4096;
    size_t used = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t n;
    while ((n = fread(buf + used, 1, cap - used - 1, f)) > 0) {
        used += n;
        if (cap - used == 1) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    fclose(f);
    buf[used] = '\0';
    if (len != NULL)
        *len = used;
    return buf;
}

static struct osbq_catalog *load_ok(const char *path)
{
    struct osbq_catalog *cat = NULL;
    struct osbq_error err = {0};
    if (osbq_catalog_load_file(path, &cat, &err) != 0)
        fail_msg("%s: %s", path, err.text);
    assert_non_null(cat);
    return cat;
}

static struct osbq_catalog *load_json_ok(const json_t *doc)
{
    char *text = json_dumps(doc, 0);
    assert_non_null(text);
    struct osbq_catalog *cat = catalog_from_text(text, strlen(text));
    free(text);
    assert_non_null(cat);
    return cat;
}

static json_t *parse_file(const char *path)
{
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (doc == NULL)
        fail_msg("%s: %s", path, jerr.text);
    return doc;
}

static bool has_osbq_key(json_t *v)
{
    const char *key;
    json_t *child;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach (v, key, child) {
            if (strcmp(key, "osbq") == 0 || has_osbq_key(child))
                return true;
        }
    } else if (json_is_array(v)) {
        json_array_foreach (v, i, child) {
            if (has_osbq_key(child))
                return true;
        }
    }
    return false;
}

/* The body must be the input document minus the plans' "osbq" objects, nothing more or less. */
static void assert_body_matches(const struct osbq_catalog *cat, json_t *input)
{
    size_t len = 0;
    const char *body = osbq_catalog_body(cat, &len);
    assert_non_null(body);
    assert_int_equal(len, strlen(body));
    assert_null(strchr(body, '\n'));

    json_t *expected = json_deep_copy(input);
    assert_non_null(expected);
    size_t i;
    json_t *service;
    json_array_foreach (json_object_get(expected, "services"), i, service) {
        size_t j;
        json_t *plan;
        json_array_foreach (json_object_get(service, "plans"), j, plan)
            json_object_del(plan, "osbq");
    }
    json_error_t jerr;
    json_t *actual = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (actual == NULL)
        fail_msg("body does not parse: %s", jerr.text);
    assert_false(has_osbq_key(actual));
    assert_true(json_equal(actual, expected));
    json_decref(actual);
    json_decref(expected);
}

static void assert_etag_format(const char *etag)
{
    assert_int_equal(strlen(etag), 34);
    assert_int_equal(etag[0], '"');
    assert_int_equal(etag[33], '"');
    for (size_t i = 1; i < 33; i++)
        assert_non_null(strchr("0123456789abcdef", etag[i]));
}

/* ---- fixture cases: one cmocka test per directory ---- */

static void test_valid_case(void **state)
{
    char *path = xprintf("%s/catalog.json", (const char *)*state);
    struct osbq_catalog *cat = load_ok(path);
    json_t *input = parse_file(path);
    assert_body_matches(cat, input);
    assert_etag_format(osbq_catalog_etag(cat));
    json_decref(input);
    osbq_catalog_destroy(&cat);
    assert_null(cat);
    free(path);
}

static void test_invalid_case(void **state)
{
    const char *dir = *state;
    char *path = xprintf("%s/catalog.json", dir);
    char *error_path = xprintf("%s/error", dir);
    char *expected = read_text(error_path, NULL);
    if (expected == NULL)
        fail_msg("%s: missing", error_path);
    expected[strcspn(expected, "\r\n")] = '\0';

    struct osbq_catalog *cat = NULL;
    struct osbq_error err = {0};
    assert_int_equal(osbq_catalog_load_file(path, &cat, &err), -1);
    assert_null(cat);
    assert_int_equal(err.code, OSBQ_ERR_INVALID);
    assert_string_equal(err.text, expected);

    /* The in-memory loader must agree with the file loader. */
    size_t len = 0;
    char *text = read_text(path, &len);
    assert_non_null(text);
    struct osbq_error text_err = {0};
    assert_int_equal(osbq_catalog_load_text(text, len, &cat, &text_err), -1);
    assert_null(cat);
    assert_string_equal(text_err.text, expected);

    free(text);
    free(expected);
    free(error_path);
    free(path);
}

/* ---- fixed tests ---- */

static void test_example_catalog(void **state)
{
    (void)state;
    const char *path = OSBQ_SOURCE_DIR "/examples/catalog.json";
    struct osbq_catalog *cat = load_ok(path);
    json_t *input = parse_file(path);
    assert_body_matches(cat, input);
    json_decref(input);

    assert_int_equal(osbq_catalog_service_count(cat), 3);
    const struct osbq_service *sim = osbq_catalog_service_at(cat, 0);
    assert_string_equal(sim->name, "osbq-sim");
    assert_int_equal(sim->plan_count, 3);
    assert_true(sim->allow_context_updates);
    for (size_t i = 0; i < sim->plan_count; i++)
        assert_string_equal(sim->plans[i].backend, "sim");
    assert_string_equal(sim->plans[1].name, "slow");
    assert_true(sim->plans[1].plan_updateable);
    assert_string_equal(sim->plans[1].maintenance_version, "1.0.0");
    assert_true(sim->plans[2].async_required);

    const struct osbq_service *logs = osbq_catalog_service_at(cat, 1);
    assert_string_equal(logs->name, "osbq-sim-logs");
    assert_string_equal(logs->requires_list[0], "syslog_drain");
    assert_null(logs->requires_list[1]);

    const struct osbq_service *redis = osbq_catalog_service_at(cat, 2);
    assert_string_equal(redis->name, "osbq-redis");
    for (size_t i = 0; i < redis->plan_count; i++)
        assert_string_equal(redis->plans[i].backend, "redis");
    osbq_catalog_destroy(&cat);
}

static void test_body_and_etag(void **state)
{
    (void)state;
    struct osbq_catalog *a = load_ok(EFFECTIVE_CATALOG);
    struct osbq_catalog *b = load_ok(EFFECTIVE_CATALOG);
    assert_etag_format(osbq_catalog_etag(a));
    assert_string_equal(osbq_catalog_etag(a), osbq_catalog_etag(b));
    assert_string_equal(osbq_catalog_body(a, NULL), osbq_catalog_body(b, NULL));
    /* Compact and in file order: the first key of the first service comes first. */
    const char *start = "{\"services\":[{\"name\":\"effective\",";
    assert_true(strncmp(osbq_catalog_body(a, NULL), start, strlen(start)) == 0);

    json_t *doc = parse_file(EFFECTIVE_CATALOG);
    json_t *plan = json_array_get(
        json_object_get(json_array_get(json_object_get(doc, "services"), 0), "plans"), 0);

    /* osbq settings are not part of the body, so they cannot change the ETag. */
    json_object_set_new(json_object_get(plan, "osbq"), "provision_ms", json_integer(1234));
    struct osbq_catalog *c = load_json_ok(doc);
    assert_string_equal(osbq_catalog_etag(a), osbq_catalog_etag(c));

    json_object_set_new(plan, "description", json_string("Changed."));
    struct osbq_catalog *d = load_json_ok(doc);
    assert_string_not_equal(osbq_catalog_etag(a), osbq_catalog_etag(d));
    assert_etag_format(osbq_catalog_etag(d));

    json_decref(doc);
    osbq_catalog_destroy(&a);
    osbq_catalog_destroy(&b);
    osbq_catalog_destroy(&c);
    osbq_catalog_destroy(&d);
}

/* Loads the minimal catalog with metadata on its service and returns the body's metadata. */
static char *body_metadata(json_t *metadata)
{
    json_t *doc = json_loads(minimal_catalog, 0, NULL);
    assert_non_null(doc);
    json_object_set_new(json_array_get(json_object_get(doc, "services"), 0), "metadata", metadata);
    struct osbq_catalog *cat = load_json_ok(doc);
    assert_body_matches(cat, doc);
    const char *body = osbq_catalog_body(cat, NULL);
    const char *start = strstr(body, "\"metadata\":");
    assert_non_null(start);
    char *copy = xprintf("%.*s", (int)strcspn(start, "}") + 1, start);
    json_decref(doc);
    osbq_catalog_destroy(&cat);
    return copy;
}

/* Prices are written by people: the body must show them as written, yet keep numbers that
 * need all 17 digits exact. */
static void test_body_numbers(void **state)
{
    (void)state;
    char *m = body_metadata(json_pack("{s:f, s:f}", "price", 0.99, "whole", 99.0));
    assert_string_equal(m, "\"metadata\":{\"price\":0.99,\"whole\":99.0}");
    free(m);
    m = body_metadata(json_pack("{s:f}", "sum", 0.1 + 0.2));
    assert_string_equal(m, "\"metadata\":{\"sum\":0.30000000000000004}");
    free(m);
}

static void test_lookups(void **state)
{
    (void)state;
    struct osbq_catalog *cat = load_ok(EFFECTIVE_CATALOG);
    assert_int_equal(osbq_catalog_service_count(cat), 2);
    assert_null(osbq_catalog_service_at(cat, 2));

    const struct osbq_service *s =
        osbq_catalog_service(cat, "e0000000-0000-4000-8000-000000000002");
    assert_non_null(s);
    assert_ptr_equal(s, osbq_catalog_service_at(cat, 1));
    assert_string_equal(s->name, "plain");
    assert_string_equal(json_string_value(json_object_get(s->json, "name")), "plain");

    const struct osbq_plan *p = osbq_catalog_plan(cat, "e0000000-0000-4000-8000-000000000022");
    assert_non_null(p);
    assert_string_equal(p->name, "bindable");
    assert_ptr_equal(p->service, s);
    assert_int_equal(s->plan_count, 2);
    assert_ptr_equal(&s->plans[1], p);
    assert_string_equal(json_string_value(json_object_get(p->json, "id")), p->id);

    /* Services and plans share one id namespace, but each lookup finds only its own kind. */
    assert_null(osbq_catalog_service(cat, "e0000000-0000-4000-8000-000000000022"));
    assert_null(osbq_catalog_plan(cat, "e0000000-0000-4000-8000-000000000002"));
    assert_null(osbq_catalog_service(cat, "unknown"));
    assert_null(osbq_catalog_plan(cat, "unknown"));
    assert_null(osbq_catalog_plan(cat, ""));
    assert_null(osbq_catalog_plan(cat, NULL));
    assert_null(osbq_catalog_plan(NULL, "e0000000-0000-4000-8000-000000000022"));
    osbq_catalog_destroy(&cat);
}

/* Metric labels: the catalog's ids, "unknown" for anything else, a plan only with its own
 * service. */
static void test_metric_labels(void **state)
{
    (void)state;
    struct osbq_catalog *cat = load_ok(EFFECTIVE_CATALOG);
    const char *service = NULL, *plan = NULL;
    const char *plain = "e0000000-0000-4000-8000-000000000002";
    const char *bindable = "e0000000-0000-4000-8000-000000000022";
    osbq_catalog_metric_labels(cat, plain, bindable, &service, &plan);
    assert_string_equal(service, plain);
    assert_string_equal(plan, bindable);
    osbq_catalog_metric_labels(cat, NULL, bindable, &service, &plan);
    assert_string_equal(service, plain);
    assert_string_equal(plan, bindable);
    osbq_catalog_metric_labels(cat, plain, "made-up", &service, &plan);
    assert_string_equal(service, plain);
    assert_string_equal(plan, OSBQ_CATALOG_UNKNOWN_LABEL);
    osbq_catalog_metric_labels(cat, plain, NULL, &service, &plan);
    assert_string_equal(plan, OSBQ_CATALOG_UNKNOWN_LABEL);
    /* A plan of another service. */
    const char *other = osbq_catalog_service_at(cat, 0)->id;
    osbq_catalog_metric_labels(cat, other, bindable, &service, &plan);
    assert_string_equal(service, other);
    assert_string_equal(plan, OSBQ_CATALOG_UNKNOWN_LABEL);
    osbq_catalog_metric_labels(cat, "made-up", bindable, &service, &plan);
    assert_string_equal(service, OSBQ_CATALOG_UNKNOWN_LABEL);
    assert_string_equal(plan, OSBQ_CATALOG_UNKNOWN_LABEL);
    osbq_catalog_metric_labels(NULL, plain, bindable, &service, &plan);
    assert_string_equal(service, OSBQ_CATALOG_UNKNOWN_LABEL);
    assert_string_equal(plan, OSBQ_CATALOG_UNKNOWN_LABEL);
    osbq_catalog_destroy(&cat);
}

static void test_effective_values(void **state)
{
    (void)state;
    struct osbq_catalog *cat = load_ok(EFFECTIVE_CATALOG);
    const struct osbq_service *eff = osbq_catalog_service_at(cat, 0);
    const struct osbq_service *plain = osbq_catalog_service_at(cat, 1);

    assert_true(eff->bindable);
    assert_true(eff->instances_retrievable);
    assert_false(eff->bindings_retrievable);
    assert_false(eff->allow_context_updates);
    assert_false(plain->bindable);
    assert_false(plain->instances_retrievable);

    const struct osbq_plan *p = &eff->plans[0]; /* inherits from a bindable, updateable service */
    assert_true(p->bindable);
    assert_true(p->plan_updateable);
    assert_false(p->binding_rotatable);
    assert_null(p->maintenance_version);
    assert_string_equal(p->backend, "sim");
    assert_false(p->async_required);
    assert_int_equal(p->sync_timeout_ms, OSBQ_CATALOG_SYNC_TIMEOUT_MS_DEFAULT);
    assert_string_equal(json_string_value(json_object_get(p->settings, "backend")), "sim");

    p = &eff->plans[1]; /* overrides every field */
    assert_false(p->bindable);
    assert_false(p->plan_updateable);
    assert_true(p->binding_rotatable);
    assert_string_equal(p->maintenance_version, "2.1.1+abcdef");
    assert_true(p->async_required);
    assert_int_equal(p->sync_timeout_ms, 1500);
    assert_int_equal(json_integer_value(json_object_get(p->settings, "provision_ms")), 10);

    p = &plain->plans[0]; /* inherits from a service without plan_updateable */
    assert_false(p->bindable);
    assert_false(p->plan_updateable);

    p = &plain->plans[1];
    assert_true(p->bindable);
    assert_true(p->plan_updateable);
    osbq_catalog_destroy(&cat);
}

static void test_requires_list(void **state)
{
    (void)state;
    struct osbq_catalog *cat = load_ok(EFFECTIVE_CATALOG);
    const char *const *list = osbq_catalog_service_at(cat, 0)->requires_list;
    assert_string_equal(list[0], "syslog_drain");
    assert_string_equal(list[1], "volume_mount");
    assert_null(list[2]);
    assert_null(osbq_catalog_service_at(cat, 1)->requires_list[0]);
    osbq_catalog_destroy(&cat);
}

static void test_unreadable_path(void **state)
{
    (void)state;
    struct osbq_catalog *cat = NULL;
    struct osbq_error err = {0};
    assert_int_equal(osbq_catalog_load_file("/nonexistent/osbq/catalog.json", &cat, &err), -1);
    assert_null(cat);
    assert_int_equal(err.code, OSBQ_ERR_INVALID);
    assert_string_equal(err.text,
                        "cannot read /nonexistent/osbq/catalog.json: No such file or directory");

    assert_int_equal(osbq_catalog_load_file(CATALOG_DATA_DIR, &cat, &err), -1);
    assert_null(cat);
    assert_string_equal(err.text, "cannot read " CATALOG_DATA_DIR ": Is a directory");
}

/* Loads the minimal catalog with a create schema of exactly bytes bytes (compact). */
static int load_with_schema_size(size_t bytes, struct osbq_error *err)
{
    json_t *doc = json_loads(minimal_catalog, 0, NULL);
    assert_non_null(doc);
    json_t *params = json_pack("{s:s, s:s}", "$schema", DRAFT4, "description", "");
    assert_non_null(params);
    size_t overhead = json_dumpb(params, NULL, 0, JSON_COMPACT);
    assert_true(bytes >= overhead);
    char *padding = malloc(bytes - overhead + 1);
    assert_non_null(padding);
    memset(padding, 'x', bytes - overhead);
    padding[bytes - overhead] = '\0';
    json_object_set_new(params, "description", json_string(padding));
    free(padding);
    assert_int_equal(json_dumpb(params, NULL, 0, JSON_COMPACT), bytes);

    json_t *plan = json_array_get(
        json_object_get(json_array_get(json_object_get(doc, "services"), 0), "plans"), 0);
    json_object_set_new(
        plan, "schemas",
        json_pack("{s:{s:{s:o}}}", "service_instance", "create", "parameters", params));
    char *text = json_dumps(doc, JSON_INDENT(2));
    assert_non_null(text);
    json_decref(doc);
    struct osbq_catalog *cat = NULL;
    int rc = osbq_catalog_load_text(text, strlen(text), &cat, err);
    free(text);
    assert_true(rc == 0 ? cat != NULL : cat == NULL);
    osbq_catalog_destroy(&cat);
    return rc;
}

static void test_schema_size_limit(void **state)
{
    (void)state;
    const char *expected =
        "services[0].plans[0].schemas.service_instance.create.parameters: larger than 64 kB";
    struct osbq_error err = {0};
    assert_int_equal(load_with_schema_size(70 * 1024, &err), -1);
    assert_int_equal(err.code, OSBQ_ERR_INVALID);
    assert_string_equal(err.text, expected);
    assert_int_equal(load_with_schema_size(65537, &err), -1);
    assert_string_equal(err.text, expected);
    assert_int_equal(load_with_schema_size(65536, &err), 0);
}

static void test_load_text_parse_error(void **state)
{
    (void)state;
    struct osbq_catalog *cat = NULL;
    struct osbq_error err = {0};
    const char text[] = "{\"services\": [}";
    assert_int_equal(osbq_catalog_load_text(text, sizeof text - 1, &cat, &err), -1);
    assert_null(cat);
    assert_int_equal(err.code, OSBQ_ERR_INVALID);
    assert_true(strncmp(err.text, "line 1, column 15: ", 19) == 0);
}

static void test_destroy_null(void **state)
{
    (void)state;
    struct osbq_catalog *cat = NULL;
    osbq_catalog_destroy(NULL);
    osbq_catalog_destroy(&cat);
    assert_null(cat);
}

/* Precedence, semver.org rule 11's own example chain, and what the digits' width and build
 * metadata do not change. */
static void test_semver_compare(void **state)
{
    (void)state;
    static const char *const chain[] = {
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.2.0",
        "1.10.0",
        "2.0.0",
        "10.0.0",
        "100000000000000000000.0.0",
    };
    size_t n = sizeof chain / sizeof chain[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            int order = osbq_semver_compare(chain[i], chain[j]);
            int want = i < j ? -1 : i > j ? 1 : 0;
            if ((order < 0 ? -1 : order > 0 ? 1 : 0) != want)
                fail_msg("%s vs %s: %d", chain[i], chain[j], order);
        }
    assert_int_equal(osbq_semver_compare("1.2.3+build.5", "1.2.3"), 0);
    assert_int_equal(osbq_semver_compare("1.2.3-rc.1+a", "1.2.3-rc.1+b"), 0);
}

static void test_semver(void **state)
{
    (void)state;
    static const char *const valid[] = {
        "0.0.0",
        "1.0.0",
        "2.1.1+abcdef",
        "1.0.0-alpha.1",
        "1.0.0-0.3.7",
        "1.0.0-x.7.z.92",
        "10.20.30",
        "1.0.0-alpha+001",
        "1.0.0+20130313144700",
        "1.0.0-beta+exp.sha.5114f85",
        "1.0.0-0A.is.legal",
        "1.0.0--",
        "1.0.0-rc-1+build-2.01",
        "999999999999999999999.0.0",
    };
    static const char *const invalid[] = {
        "",       "1",         "1.0",     "01.0.0",     "1.01.0",   "1.0.00",     "1.0.0-",
        "1.0.0+", "1.0.0-01",  "v1.0.0",  "1.0.0-a..b", "1.0.0-a.", "1.0.0+a..b", "1.0.0 ",
        " 1.0.0", "1.0.0-a_b", "1.0.0+é", "1.0.0.0",    "-1.0.0",   "1.0.0+a+b",  "1..0",
    };
    string_cases_check(osbq_semver_valid, valid, sizeof valid / sizeof valid[0], "valid", invalid,
                       sizeof invalid / sizeof invalid[0], "invalid");
    assert_false(osbq_semver_valid(NULL));
}

/* ---- the runner ---- */

struct test_list {
    struct CMUnitTest *tests; /* the tests to run */
    size_t count;             /* used entries */
    size_t cap;               /* allocated entries */
    size_t owned_from;        /* entries from here on own their name and initial_state */
};

static void add_test(struct test_list *list, struct CMUnitTest test)
{
    if (list->count == list->cap) {
        list->cap = list->cap ? 2 * list->cap : 64;
        list->tests = realloc(list->tests, list->cap * sizeof *list->tests);
        if (list->tests == NULL) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
    list->tests[list->count++] = test;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One test per directory under CATALOG_DATA_DIR/kind, sorted by name. */
static int add_cases(struct test_list *list, const char *kind, CMUnitTestFunction fn)
{
    char *dir_path = xprintf("%s/%s", CATALOG_DATA_DIR, kind);
    DIR *dir = opendir(dir_path);
    if (dir == NULL) {
        fprintf(stderr, "cannot open %s\n", dir_path);
        free(dir_path);
        return -1;
    }
    char **names = NULL;
    size_t count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.')
            continue;
        names = realloc(names, (count + 1) * sizeof *names);
        if (names == NULL) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        names[count++] = xprintf("%s", entry->d_name);
    }
    closedir(dir);
    qsort(names, count, sizeof *names, compare_names);
    for (size_t i = 0; i < count; i++) {
        add_test(list, (struct CMUnitTest){
                           .name = xprintf("%s/%s", kind, names[i]),
                           .test_func = fn,
                           .initial_state = xprintf("%s/%s", dir_path, names[i]),
                       });
        free(names[i]);
    }
    free(names);
    free(dir_path);
    if (count == 0) {
        fprintf(stderr, "no cases in %s/%s\n", CATALOG_DATA_DIR, kind);
        return -1;
    }
    return 0;
}

int main(void)
{
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_example_catalog),   cmocka_unit_test(test_body_and_etag),
        cmocka_unit_test(test_body_numbers),      cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_metric_labels),     cmocka_unit_test(test_effective_values),
        cmocka_unit_test(test_requires_list),     cmocka_unit_test(test_unreadable_path),
        cmocka_unit_test(test_schema_size_limit), cmocka_unit_test(test_load_text_parse_error),
        cmocka_unit_test(test_destroy_null),      cmocka_unit_test(test_semver),
        cmocka_unit_test(test_semver_compare),
    };
    struct test_list list = {0};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        add_test(&list, fixed[i]);
    list.owned_from = list.count;
    int failed = 1;
    if (add_cases(&list, "valid", test_valid_case) == 0 &&
        add_cases(&list, "invalid", test_invalid_case) == 0)
        failed = _cmocka_run_group_tests("catalog", list.tests, list.count, NULL, NULL);
    for (size_t i = list.owned_from; i < list.count; i++) {
        free((char *)list.tests[i].name);
        free(list.tests[i].initial_state);
    }
    free(list.tests);
    return failed;
}
