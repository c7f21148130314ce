/* Unit tests of schema/schema.c: the wording of failures (path and keyword), the checks of
 * a schema itself, and the limits that keep a hostile schema or document from hanging a thread.
 * Keyword coverage is the official suite's job (schema_suite.c). */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog.h"
#include "catalog_text.h"
#include "schema.h"
#include "test_main.h"

#define DRAFT4 "http://json-schema.org/draft-04/schema#"
#define DRAFT7 "http://json-schema.org/draft-07/schema#"

/* ---- helpers ---- */

static struct osbq_schema *compile_text(const char *text)
{
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    if (doc == NULL)
        fail_msg("bad test schema: %s: %s", jerr.text, text);
    char msg[512];
    enum osbq_schema_status status;
    struct osbq_schema *schema =
        osbq_schema_compile(doc, OSBQ_SCHEMA_DRAFT7, NULL, &status, msg, sizeof msg);
    json_decref(doc);
    if (schema == NULL)
        fail_msg("schema refused: %s", msg);
    assert_int_equal(status, OSBQ_SCHEMA_OK);
    return schema;
}

/* Compiles text, expecting a refusal with status and exactly message. */
static void assert_refused(const char *text, enum osbq_schema_status expected_status,
                           const char *expected_msg)
{
    json_t *doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    char msg[512];
    enum osbq_schema_status status = OSBQ_SCHEMA_OK;
    struct osbq_schema *schema =
        osbq_schema_compile(doc, OSBQ_SCHEMA_DRAFT7, NULL, &status, msg, sizeof msg);
    json_decref(doc);
    assert_null(schema);
    assert_int_equal(status, expected_status);
    assert_string_equal(msg, expected_msg);
}

static enum osbq_schema_result check(const struct osbq_schema *schema, const char *instance,
                                     char *msg, size_t size)
{
    json_t *doc = json_loads(instance, JSON_DECODE_ANY, NULL);
    if (doc == NULL)
        fail_msg("bad test instance: %s", instance);
    enum osbq_schema_result r = osbq_schema_validate(schema, doc, "parameters", msg, size);
    json_decref(doc);
    return r;
}

/* instance fails schema with exactly expected. */
static void assert_mismatch(const char *schema_text, const char *instance, const char *expected)
{
    struct osbq_schema *schema = compile_text(schema_text);
    char msg[512];
    assert_int_equal(check(schema, instance, msg, sizeof msg), OSBQ_SCHEMA_MISMATCH);
    assert_string_equal(msg, expected);
    osbq_schema_free(schema);
}

static void assert_valid(const char *schema_text, const char *instance)
{
    struct osbq_schema *schema = compile_text(schema_text);
    char msg[512];
    enum osbq_schema_result r = check(schema, instance, msg, sizeof msg);
    if (r != OSBQ_SCHEMA_VALID)
        fail_msg("%s should be valid: %s", instance, msg);
    osbq_schema_free(schema);
}

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* ---- messages ---- */

static const char size_schema[] =
    "{\"$schema\": \"" DRAFT4 "\", \"type\": \"object\", \"required\": [\"name\"],"
    " \"additionalProperties\": false,"
    " \"properties\": {\"name\": {\"type\": \"string\", \"pattern\": \"^[a-z]+$\"},"
    "                  \"size\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 100},"
    "                  \"tags\": {\"type\": \"array\", \"items\": {\"maxLength\": 3}},"
    "                  \"a b\": {\"enum\": [\"x\", \"y\"]},"
    "                  \"email\": {\"format\": \"email\"}}}";

static void test_message_names_path_and_keyword(void **state)
{
    (void)state;
    assert_mismatch(size_schema, "{\"name\": \"db\", \"size\": 300}",
                    "parameters.size: 300 is greater than the maximum of 100");
    assert_mismatch(size_schema, "{\"name\": \"db\", \"size\": 0}",
                    "parameters.size: 0 is less than the minimum of 1");
    assert_mismatch(size_schema, "{\"name\": \"db\", \"size\": \"big\"}",
                    "parameters.size: string is not of type integer");
    assert_mismatch(size_schema, "{\"name\": \"db\", \"size\": 1.5}",
                    "parameters.size: number is not of type integer");
    assert_mismatch(size_schema, "{\"size\": 3}",
                    "parameters: the required property \"name\" is missing");
    assert_mismatch(size_schema, "{\"name\": \"db\", \"colour\": 3}",
                    "parameters: the property \"colour\" is not allowed (additionalProperties)");
    assert_mismatch(size_schema, "{\"name\": \"Db\"}",
                    "parameters.name: \"Db\" does not match the pattern \"^[a-z]+$\"");
    assert_mismatch(size_schema, "{\"name\": \"db\", \"tags\": [\"ok\", \"toolong\"]}",
                    "parameters.tags[1]: 7 characters is longer than the maxLength of 3");
    assert_mismatch(size_schema, "{\"name\": \"db\", \"a b\": \"z\"}",
                    "parameters[\"a b\"]: \"z\" is not one of the enum values");
    assert_mismatch(size_schema, "{\"name\": \"db\", \"email\": \"nobody\"}",
                    "parameters.email: \"nobody\" is not a valid email (format)");
    assert_mismatch(size_schema, "[]", "parameters: array is not of type object");
    assert_valid(size_schema,
                 "{\"name\": \"db\", \"size\": 100, \"tags\": [\"a\"], \"a b\": \"x\"}");
}

static void test_message_other_keywords(void **state)
{
    (void)state;
    assert_mismatch("{\"properties\": {\"n\": {\"exclusiveMaximum\": 10}}}", "{\"n\": 10}",
                    "parameters.n: 10 is greater than or equal to the exclusiveMaximum of 10");
    assert_mismatch("{\"$schema\": \"" DRAFT4 "\", \"maximum\": 10, \"exclusiveMaximum\": true}",
                    "10", "parameters: 10 is greater than or equal to the exclusive maximum of 10");
    assert_mismatch("{\"multipleOf\": 0.01}", "19.991",
                    "parameters: 19.991 is not a multiple of 0.01 (multipleOf)");
    assert_mismatch("{\"uniqueItems\": true}", "[1, 2, 1.0]",
                    "parameters: items 0 and 2 are equal (uniqueItems)");
    assert_mismatch("{\"oneOf\": [{\"type\": \"integer\"}, {\"minimum\": 0}]}", "5",
                    "parameters: matches more than one schema of oneOf (0 and others)");
    assert_mismatch("{\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]}", "5",
                    "parameters: does not match any schema of anyOf");
    assert_mismatch("{\"not\": {\"type\": \"integer\"}}", "5",
                    "parameters: must not match the schema of not");
    assert_mismatch("{\"const\": \"on\"}", "\"off\"",
                    "parameters: \"off\" is not the const value \"on\"");
    assert_mismatch("{\"dependencies\": {\"tls\": [\"cert\"]}}", "{\"tls\": true}",
                    "parameters: the property \"tls\" requires the property \"cert\" "
                    "(dependencies)");
    assert_mismatch("{\"if\": {\"required\": [\"a\"]}, \"then\": {\"required\": [\"b\"]}}",
                    "{\"a\": 1}", "parameters: the required property \"b\" is missing");
    assert_mismatch("{\"properties\": {\"x\": false}}", "{\"x\": 1}",
                    "parameters.x: no value is allowed here (false schema)");
    assert_mismatch("{\"definitions\": {\"port\": {\"maximum\": 65535}},"
                    " \"properties\": {\"port\": {\"$ref\": \"#/definitions/port\"}}}",
                    "{\"port\": 70000}",
                    "parameters.port: 70000 is greater than the maximum of 65535");
    /* Floats: 19.99 is a multiple of 0.01 although 19.99 / 0.01 is not exact in binary. */
    assert_valid("{\"multipleOf\": 0.01}", "19.99");
    /* Code points, not bytes: "héllo" is 5 characters in 6 bytes. */
    assert_valid("{\"maxLength\": 5}", "\"h\\u00e9llo\"");
    assert_mismatch("{\"maxLength\": 4}", "\"h\\u00e9llo\"",
                    "parameters: 5 characters is longer than the maxLength of 4");
}

static void test_long_values_are_cut(void **state)
{
    (void)state;
    struct osbq_schema *schema = compile_text("{\"maxLength\": 3, \"pattern\": \"^a\"}");
    char long_value[300];
    memset(long_value, 'b', sizeof long_value);
    (void)snprintf(long_value, sizeof long_value, "\"%0200d\"", 0);
    char msg[512];
    assert_int_equal(check(schema, long_value, msg, sizeof msg), OSBQ_SCHEMA_MISMATCH);
    assert_string_equal(msg, "parameters: 200 characters is longer than the maxLength of 3");
    osbq_schema_free(schema);
    schema = compile_text("{\"pattern\": \"^a\"}");
    assert_int_equal(check(schema, long_value, msg, sizeof msg), OSBQ_SCHEMA_MISMATCH);
    assert_true(strlen(msg) < 150);
    assert_non_null(strstr(msg, "... does not match the pattern"));
    /* A small buffer truncates, never overflows. */
    char small[16];
    assert_int_equal(check(schema, long_value, small, sizeof small), OSBQ_SCHEMA_MISMATCH);
    assert_string_equal(small, "parameters: \"00");
    osbq_schema_free(schema);

    /* Cuts never split a UTF-8 sequence: a description must be valid UTF-8. */
    schema = compile_text("{\"pattern\": \"^a\"}");
    json_t *accented = json_string(
        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
    assert_non_null(accented);
    for (size_t size = 10; size < 120; size++) {
        char cut[120];
        assert_int_equal(osbq_schema_validate(schema, accented, "parameters", cut, size),
                         OSBQ_SCHEMA_MISMATCH);
        json_t *as_json = json_string(cut);
        if (as_json == NULL)
            fail_msg("not UTF-8 with a %zu-byte buffer: %s", size, cut);
        json_decref(as_json);
    }
    json_decref(accented);
    osbq_schema_free(schema);
}

/* ---- checks of the schema itself ---- */

static void test_invalid_schemas_are_refused(void **state)
{
    (void)state;
    assert_refused("{\"properties\": {\"size\": {\"type\": 5}}}", OSBQ_SCHEMA_INVALID,
                   "properties.size.type: must be a type name (null, boolean, object, array, "
                   "number, string, integer) or a non-empty array of them");
    assert_refused("{\"type\": \"int\"}", OSBQ_SCHEMA_INVALID,
                   "type: must be a type name (null, boolean, object, array, number, string, "
                   "integer) or a non-empty array of them");
    assert_refused("{\"maxLength\": -1}", OSBQ_SCHEMA_INVALID,
                   "maxLength: must be a non-negative integer");
    assert_refused("{\"multipleOf\": 0}", OSBQ_SCHEMA_INVALID,
                   "multipleOf: must be a number greater than 0");
    assert_refused("{\"required\": \"name\"}", OSBQ_SCHEMA_INVALID,
                   "required: must be an array of strings");
    assert_refused("{\"anyOf\": []}", OSBQ_SCHEMA_INVALID,
                   "anyOf: must be a non-empty array of schemas");
    assert_refused("{\"pattern\": \"(\"}", OSBQ_SCHEMA_INVALID,
                   "pattern: invalid regular expression at offset 1: missing closing parenthesis");
    assert_refused("{\"items\": [{}, 3]}", OSBQ_SCHEMA_INVALID,
                   "items[1]: must be a schema (an object or a boolean)");
    assert_refused("[]", OSBQ_SCHEMA_INVALID, "must be a schema (an object or a boolean)");
    assert_refused("{\"$schema\": \"" DRAFT4 "\", \"not\": true}", OSBQ_SCHEMA_INVALID,
                   "not: must be a schema (an object)");
    assert_refused("{\"$schema\": \"" DRAFT4 "\", \"exclusiveMinimum\": 3}", OSBQ_SCHEMA_INVALID,
                   "exclusiveMinimum: must be a boolean in draft-04");
    assert_refused("{\"$schema\": \"https://json-schema.org/draft/2020-12/schema\"}",
                   OSBQ_SCHEMA_INVALID,
                   "$schema: unsupported \"https://json-schema.org/draft/2020-12/schema\" "
                   "(supported: the draft-04, draft-06 and draft-07 meta-schemas)");
    assert_refused("{\"$ref\": \"#/definitions/missing\"}", OSBQ_SCHEMA_INVALID,
                   "$ref: $ref \"#/definitions/missing\" points to nothing");
}

static void test_remote_refs_are_refused(void **state)
{
    (void)state;
    assert_refused("{\"properties\": {\"a\": {\"$ref\": \"http://example.com/a.json\"}}}",
                   OSBQ_SCHEMA_REMOTE_REF,
                   "properties.a.$ref: remote $ref \"http://example.com/a.json\" is not supported");
    assert_refused("{\"$ref\": \"other.json#/a\"}", OSBQ_SCHEMA_REMOTE_REF,
                   "$ref: remote $ref \"other.json#/a\" is not supported");
    /* An $id inside the document makes its URI local. */
    assert_valid("{\"$id\": \"http://example.com/root.json\","
                 " \"definitions\": {\"a\": {\"$id\": \"a.json\", \"type\": \"integer\"}},"
                 " \"properties\": {\"a\": {\"$ref\": \"http://example.com/a.json\"}}}",
                 "{\"a\": 1}");
}

static void test_pointer_escapes(void **state)
{
    (void)state;
    const char *schema = "{\"definitions\": {\"a/b\": {\"type\": \"integer\"},"
                         " \"c~d\": {\"type\": \"string\"}, \"e%f\": {\"type\": \"null\"}},"
                         " \"properties\": {\"x\": {\"$ref\": \"#/definitions/a~1b\"},"
                         "  \"y\": {\"$ref\": \"#/definitions/c~0d\"},"
                         "  \"z\": {\"$ref\": \"#/definitions/e%25f\"}}}";
    assert_valid(schema, "{\"x\": 1, \"y\": \"s\", \"z\": null}");
    assert_mismatch(schema, "{\"z\": 1}", "parameters.z: integer is not of type null");
}

/* ---- hostile schemas and documents ---- */

static void test_catastrophic_pattern_is_bounded(void **state)
{
    (void)state;
    struct osbq_schema *schema = compile_text("{\"pattern\": \"^(a+)+$\"}");
    char instance[4100];
    instance[0] = '"';
    memset(instance + 1, 'a', 4000);
    (void)snprintf(instance + 4001, sizeof instance - 4001, "!\"");
    char msg[512];
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    enum osbq_schema_result r = check(schema, instance, msg, sizeof msg);
    double took = seconds_since(&start);
    /* Either answer is bounded; PCRE2 gives up at its match limit. */
    assert_true(r == OSBQ_SCHEMA_TOO_COSTLY || r == OSBQ_SCHEMA_MISMATCH);
    if (r == OSBQ_SCHEMA_TOO_COSTLY)
        assert_string_equal(msg, "parameters: schema too costly: the pattern \"^(a+)+$\" "
                                 "exceeded its match limit");
    print_message("catastrophic pattern: %.3f s, %s\n", took, msg);
    assert_true(took < 2.0);
    osbq_schema_free(schema);
}

/* "(\\w+\\s?)*" defeats PCRE2's auto-possessification and has no required last character, so
 * without the match limit "aaa...a!" takes exponential time. */
static void test_backtracking_pattern_hits_match_limit(void **state)
{
    (void)state;
    struct osbq_schema *schema = compile_text("{\"pattern\": \"^(\\\\w+\\\\s?)*$\"}");
    char instance[64];
    (void)snprintf(instance, sizeof instance, "\"%s!\"", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    char msg[512];
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    assert_int_equal(check(schema, instance, msg, sizeof msg), OSBQ_SCHEMA_TOO_COSTLY);
    assert_true(seconds_since(&start) < 2.0);
    assert_string_equal(msg, "parameters: schema too costly: the pattern \"^(\\w+\\s?)*$\" "
                             "exceeded its match limit");
    osbq_schema_free(schema);
}

static void test_ref_cycle_is_bounded(void **state)
{
    (void)state;
    /* Infinite by itself: every application applies itself again. */
    struct osbq_schema *schema = compile_text("{\"$ref\": \"#\"}");
    char msg[512];
    assert_int_equal(check(schema, "{}", msg, sizeof msg), OSBQ_SCHEMA_TOO_COSTLY);
    assert_string_equal(msg, "parameters: schema too costly: more than 128 nested schema "
                             "applications");
    osbq_schema_free(schema);

    /* Legitimate recursion over a deep document stops at the depth limit. */
    schema = compile_text("{\"items\": {\"$ref\": \"#\"}}");
    size_t depth = 1000;
    char *deep = malloc(2 * depth + 1);
    assert_non_null(deep);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    assert_int_equal(check(schema, deep, msg, sizeof msg), OSBQ_SCHEMA_TOO_COSTLY);
    assert_non_null(strstr(msg, "schema too costly: more than 128 nested schema applications"));
    /* ... and a modest one passes. */
    deep[20] = '\0';
    memset(deep + 10, ']', 10);
    assert_int_equal(check(schema, deep, msg, sizeof msg), OSBQ_SCHEMA_VALID);
    free(deep);
    osbq_schema_free(schema);
}

/* allOf nested depth levels around {"minimum": 1}. Caller frees. */
static char *nested_all_of(size_t depth)
{
    size_t len = depth * 12 + 32;
    char *text = malloc(len);
    assert_non_null(text);
    size_t used = 0;
    for (size_t i = 0; i < depth; i++)
        used += (size_t)snprintf(text + used, len - used, "{\"allOf\":[");
    used += (size_t)snprintf(text + used, len - used, "{\"minimum\": 1}");
    for (size_t i = 0; i < depth; i++)
        used += (size_t)snprintf(text + used, len - used, "]}");
    return text;
}

static void test_nested_schema_is_bounded(void **state)
{
    (void)state;
    /* Deeper than a validation may go: refused when compiled, not at every request. */
    char *text = nested_all_of(300);
    assert_refused(text, OSBQ_SCHEMA_INVALID, "schema nested deeper than 128 levels");
    free(text);
    /* 100 levels compile and validate, first failure reported from the innermost schema. */
    text = nested_all_of(100);
    assert_valid(text, "5");
    assert_mismatch(text, "0", "parameters: 0 is less than the minimum of 1");
    free(text);
}

static void test_step_budget(void **state)
{
    (void)state;
    /* uniqueItems over 3000 distinct items is 4.5 million comparisons: over the budget. */
    struct osbq_schema *schema = compile_text("{\"uniqueItems\": true}");
    json_t *items = json_array();
    for (int i = 0; i < 3000; i++)
        json_array_append_new(items, json_integer(i));
    char msg[512];
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    assert_int_equal(osbq_schema_validate(schema, items, "parameters", msg, sizeof msg),
                     OSBQ_SCHEMA_TOO_COSTLY);
    assert_true(seconds_since(&start) < 2.0);
    assert_string_equal(msg, "parameters: schema too costly: validation needs more than 200000 "
                             "steps");
    /* 300 items (45,000 comparisons) are fine. */
    while (json_array_size(items) > 300)
        json_array_remove(items, json_array_size(items) - 1);
    assert_int_equal(osbq_schema_validate(schema, items, "parameters", msg, sizeof msg),
                     OSBQ_SCHEMA_VALID);
    json_decref(items);
    osbq_schema_free(schema);
}

static void test_too_costly_wins_inside_branches(void **state)
{
    (void)state;
    /* The limit is hit inside not: a failure there must not turn into a success. */
    struct osbq_schema *schema = compile_text("{\"not\": {\"pattern\": \"^(\\\\w+\\\\s?)*$\"}}");
    char msg[512];
    assert_int_equal(check(schema, "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\"", msg, sizeof msg),
                     OSBQ_SCHEMA_TOO_COSTLY);
    assert_non_null(strstr(msg, "schema too costly"));
    osbq_schema_free(schema);
}

/* ---- the catalog compiles each plan's schemas once ---- */

static void test_catalog_plan_schemas(void **state)
{
    (void)state;
    static const char text[] =
        "{\"services\": [{\"name\": \"s\", \"id\": \"s-id\", \"description\": \"d\","
        " \"bindable\": true, \"plans\": ["
        " {\"id\": \"p1\", \"name\": \"p1\", \"description\": \"d\", \"osbq\": {\"backend\": "
        "\"sim\"},"
        "  \"schemas\": {\"service_instance\": {"
        "    \"create\": {\"parameters\": {\"$schema\": \"" DRAFT4 "\", \"required\": [\"size\"]}},"
        "    \"update\": {\"parameters\": {\"$schema\": \"" DRAFT7 "\", \"maxProperties\": 1}}},"
        "   \"service_binding\": {\"create\": {\"parameters\": {\"$schema\": \"" DRAFT7 "\","
        "    \"properties\": {\"role\": {\"enum\": [\"ro\", \"rw\"]}}}}}}},"
        " {\"id\": \"p2\", \"name\": \"p2\", \"description\": \"d\", \"osbq\": {\"backend\": "
        "\"sim\"}}]}]}";
    struct osbq_catalog *cat = catalog_from_text(text, sizeof text - 1);
    assert_non_null(cat);
    const struct osbq_plan *p1 = osbq_catalog_plan(cat, "p1");
    const struct osbq_plan *p2 = osbq_catalog_plan(cat, "p2");
    assert_non_null(p1->provision_schema);
    assert_non_null(p1->update_schema);
    assert_non_null(p1->bind_schema);
    assert_null(p2->provision_schema);
    assert_null(p2->update_schema);
    assert_null(p2->bind_schema);
    char msg[256];
    assert_int_equal(check(p1->provision_schema, "{}", msg, sizeof msg), OSBQ_SCHEMA_MISMATCH);
    assert_string_equal(msg, "parameters: the required property \"size\" is missing");
    assert_int_equal(check(p1->update_schema, "{\"a\": 1, \"b\": 2}", msg, sizeof msg),
                     OSBQ_SCHEMA_MISMATCH);
    assert_string_equal(msg, "parameters: 2 properties is more than the maxProperties of 1");
    assert_int_equal(check(p1->bind_schema, "{\"role\": \"ro\"}", msg, sizeof msg),
                     OSBQ_SCHEMA_VALID);
    osbq_catalog_destroy(&cat);
}

/* ---- threads ---- */

struct worker {
    const struct osbq_schema *schema;
    int failures;
};

static void *validate_many(void *arg)
{
    struct worker *w = arg;
    json_t *good = json_pack("{s:s, s:i, s:[s]}", "name", "db", "size", 5, "tags", "abc");
    json_t *bad = json_pack("{s:s, s:i}", "name", "db", "size", 300);
    for (int i = 0; i < 2000; i++) {
        char msg[256];
        if (osbq_schema_validate(w->schema, good, "parameters", msg, sizeof msg) !=
            OSBQ_SCHEMA_VALID)
            w->failures++;
        if (osbq_schema_validate(w->schema, bad, "parameters", msg, sizeof msg) !=
                OSBQ_SCHEMA_MISMATCH ||
            strcmp(msg, "parameters.size: 300 is greater than the maximum of 100") != 0)
            w->failures++;
    }
    json_decref(good);
    json_decref(bad);
    return NULL;
}

static void test_threads_share_a_compiled_schema(void **state)
{
    (void)state;
    struct osbq_schema *schema = compile_text(size_schema);
    pthread_t threads[4];
    struct worker workers[4];
    for (int i = 0; i < 4; i++) {
        workers[i] = (struct worker){.schema = schema};
        assert_int_equal(pthread_create(&threads[i], NULL, validate_many, &workers[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].failures, 0);
    }
    osbq_schema_free(schema);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_message_names_path_and_keyword),
               cmocka_unit_test(test_message_other_keywords),
               cmocka_unit_test(test_long_values_are_cut),
               cmocka_unit_test(test_invalid_schemas_are_refused),
               cmocka_unit_test(test_remote_refs_are_refused),
               cmocka_unit_test(test_pointer_escapes),
               cmocka_unit_test(test_catastrophic_pattern_is_bounded),
               cmocka_unit_test(test_backtracking_pattern_hits_match_limit),
               cmocka_unit_test(test_ref_cycle_is_bounded),
               cmocka_unit_test(test_nested_schema_is_bounded), cmocka_unit_test(test_step_budget),
               cmocka_unit_test(test_too_costly_wins_inside_branches),
               cmocka_unit_test(test_catalog_plan_schemas),
               cmocka_unit_test(test_threads_share_a_compiled_schema))
