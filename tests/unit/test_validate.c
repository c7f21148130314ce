/* Unit tests for gateway/validate.c: the API version header, basic-auth checks, ETag matching
 * and the optional body members. */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdbool.h>
#include <string.h>

#include "auth.h"
#include "string_cases.h"
#include "validate.h"

#define COUNT(a)  (sizeof(a) / sizeof((a)[0]))
#define UNTOUCHED 12345u

static void test_api_version_accepted(void **state)
{
    (void)state;
    static const struct {
        const char *header;
        unsigned expected;
    } cases[] = {
        {"2.17", 217}, {"2.0", 200},  {"2.12", 212},   {"2.1", 201},
        {"2.99", 217}, {"2.18", 217}, {"2.9999", 217},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        unsigned got = UNTOUCHED;
        struct osbq_error err = {0};
        int rc = validate_api_version(cases[i].header, &got, &err);
        if (rc != 0)
            fail_msg("\"%s\" rejected: %s", cases[i].header, err.text);
        if (got != cases[i].expected)
            fail_msg("\"%s\" gave %u, want %u", cases[i].header, got, cases[i].expected);
    }
    assert_int_equal(VALIDATE_API_LATEST, 217);
}

static void test_api_version_rejected(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "",     "1.0",   "3.0",   "2",      "2.",      ".17",     "2.x",
        "junk", " 2.17", "2.17 ", "2.17.1", "-2.17",   "99999.1", "2.17x",
        "2,17", "+2.17", "2..17", "2.-1",   "2.00000", "0.17",    "22.17",
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        unsigned got = UNTOUCHED;
        struct osbq_error err = {0};
        int rc = validate_api_version(cases[i], &got, &err);
        if (rc != -1)
            fail_msg("\"%s\" accepted as %u", cases[i], got);
        if (err.code != OSBQ_ERR_API_VERSION)
            fail_msg("\"%s\": code %s, want API_VERSION", cases[i], osbq_err_name(err.code));
        if (got != UNTOUCHED)
            fail_msg("\"%s\": *out written on failure", cases[i]);
        /* Every rejection tells the platform what is supported. */
        if (strstr(err.text, "2.17") == NULL)
            fail_msg("\"%s\": text \"%s\" does not name 2.17", cases[i], err.text);
    }
}

static void test_api_version_missing_header(void **state)
{
    (void)state;
    unsigned got = UNTOUCHED;
    struct osbq_error err = {0};
    assert_int_equal(validate_api_version(NULL, &got, &err), -1);
    assert_int_equal(err.code, OSBQ_ERR_API_VERSION);
    assert_non_null(strstr(err.text, "missing"));
    assert_int_equal(got, UNTOUCHED);
}

static void test_auth_check(void **state)
{
    (void)state;
    static const struct {
        const char *username;
        const char *password;
        bool expected;
    } cases[] = {
        {"broker", "s3cret-pw", true},
        {"Broker", "s3cret-pw", false},
        {"brokerx", "s3cret-pw", false},
        {"broker", "s3cret-PW", false},
        {NULL, "s3cret-pw", false},
        {"broker", NULL, false},
        {NULL, NULL, false},
        {"broker", "s3cret", false},
        {"broker", "s3cret-pw!", false},
        {"s3cret-pw", "broker", false},
        {"", "", false},
        {"broker", "", false},
        {"", "s3cret-pw", false},
    };
    struct osbq_auth auth;
    assert_int_equal(osbq_auth_init(&auth, "broker", "s3cret-pw"), 0);
    for (size_t i = 0; i < COUNT(cases); i++) {
        bool got = osbq_auth_check(&auth, cases[i].username, cases[i].password);
        if (got != cases[i].expected)
            fail_msg("case %zu (\"%s\", \"%s\"): got %d", i,
                     cases[i].username ? cases[i].username : "(null)",
                     cases[i].password ? cases[i].password : "(null)", got);
    }
}

static void test_auth_password_with_colon(void **state)
{
    (void)state;
    struct osbq_auth auth;
    assert_int_equal(osbq_auth_init(&auth, "broker", "pa:ss:word"), 0);
    assert_true(osbq_auth_check(&auth, "broker", "pa:ss:word"));
    assert_false(osbq_auth_check(&auth, "broker", "pa"));
    /* Another split of the same bytes must not match. */
    assert_false(osbq_auth_check(&auth, "broker:pa", "ss:word"));
    assert_false(osbq_auth_check(&auth, "broker", "pa:ss"));
    assert_false(osbq_auth_check(&auth, "broker", "ss:word"));
}

static void test_auth_instances_are_independent(void **state)
{
    (void)state;
    struct osbq_auth a, b;
    assert_int_equal(osbq_auth_init(&a, "one", "pw-one"), 0);
    assert_int_equal(osbq_auth_init(&b, "two", "pw-two"), 0);
    assert_true(osbq_auth_check(&a, "one", "pw-one"));
    assert_false(osbq_auth_check(&a, "two", "pw-two"));
    assert_true(osbq_auth_check(&b, "two", "pw-two"));
    assert_false(osbq_auth_check(&b, "one", "pw-one"));
    /* Keys are random per instance, so equal credentials do not give equal digests. */
    assert_true(memcmp(a.key, b.key, sizeof a.key) != 0);
}

static void test_etag_matches(void **state)
{
    (void)state;
    static const char etag[] = "\"abc123\"";
    static const struct {
        const char *header;
        bool expected;
    } cases[] = {
        {"\"abc123\"", true},
        {"\"other\", \"abc123\"", true},
        {"\"other\",\"abc123\"", true},
        {"\"other\" ,\t\"abc123\"", true},
        {"*", true},
        {"W/\"abc123\"", true},
        {"\"other\", W/\"abc123\"", true},
        {" \"abc123\"", true},
        {"\"abc124\"", false},
        {"\"other\"", false},
        {"\"abc12\"", false},
        {"\"abc1234\"", false},
        {"\"ABC123\"", false},
        {"abc123", false},
        {"\"abc123", false},
        {"W/abc123", false},
        {"", false},
        {" , ", false},
        {"\"\"", false},
        {"*junk", false},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        bool got = validate_etag_matches(cases[i].header, etag);
        if (got != cases[i].expected)
            fail_msg("If-None-Match '%s' vs %s: got %d, want %d", cases[i].header, etag, got,
                     cases[i].expected);
    }
}

static void test_json_content_type(void **state)
{
    (void)state;
    static const char *const json[] = {"application/json",
                                       "APPLICATION/JSON",
                                       "application/json; charset=utf-8",
                                       "application/json;charset=UTF-8",
                                       " application/json ",
                                       "Application/Json\t;q=1"};
    static const char *const other[] = {"",
                                        "application/jsonx",
                                        "application/json-patch+json",
                                        "application/x-json",
                                        "text/plain",
                                        "application/js",
                                        "application/json,text/plain",
                                        "multipart/form-data; boundary=application/json"};
    string_cases_check(validate_json_content_type, json, sizeof json / sizeof json[0],
                       "taken for JSON", other, sizeof other / sizeof other[0],
                       "refused as not JSON");
}

/* Optional members: absent and JSON null read as absent (docs/conformance.md); a value of the
 * right type is borrowed; anything else is a 400 naming the member. */
static void test_optional_members(void **state)
{
    (void)state;
    json_t *body = json_loads("{\"p\": null, \"o\": {\"a\": 1}, \"s\": \"x\", \"n\": 3, "
                              "\"e\": \"\", \"sn\": null}",
                              0, NULL);
    assert_non_null(body);
    json_t *object = (json_t *)0x1;
    const char *text = "untouched";
    struct reply out = {0};
    assert_true(validate_optional_object(body, "p", &object, &out));
    assert_null(object);
    assert_true(validate_optional_object(body, "absent", &object, &out));
    assert_null(object);
    assert_true(validate_optional_object(body, "o", &object, &out));
    assert_ptr_equal(object, json_object_get(body, "o"));
    assert_int_equal(out.status, 0);
    assert_true(validate_optional_string(body, "sn", &text, &out));
    assert_null(text);
    assert_true(validate_optional_string(body, "s", &text, &out));
    assert_string_equal(text, "x");
    assert_int_equal(out.status, 0);
    static const char *const wrong_objects[] = {"s", "n"};
    for (size_t i = 0; i < COUNT(wrong_objects); i++) {
        assert_false(validate_optional_object(body, wrong_objects[i], &object, &out));
        assert_int_equal(out.status, 400);
        reply_clear(&out);
    }
    static const char *const wrong_strings[] = {"o", "n", "e"};
    for (size_t i = 0; i < COUNT(wrong_strings); i++) {
        assert_false(validate_optional_string(body, wrong_strings[i], &text, &out));
        assert_int_equal(out.status, 400);
        reply_clear(&out);
    }
    json_decref(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_version_accepted),
        cmocka_unit_test(test_api_version_rejected),
        cmocka_unit_test(test_api_version_missing_header),
        cmocka_unit_test(test_auth_check),
        cmocka_unit_test(test_auth_password_with_colon),
        cmocka_unit_test(test_auth_instances_are_independent),
        cmocka_unit_test(test_etag_matches),
        cmocka_unit_test(test_json_content_type),
        cmocka_unit_test(test_optional_members),
    };
    return cmocka_run_group_tests_name("validate", tests, NULL, NULL);
}
