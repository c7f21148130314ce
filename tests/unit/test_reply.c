/* Unit tests for gateway/reply.c: the whole error table, error bodies, and reply body ownership. */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "reply.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define ASYNC_TEXT "This service plan requires client support for asynchronous service operations."
#define CONCURRENCY_TEXT                                                                           \
    "The Service Broker does not support concurrent requests that mutate the same resource."
#define REQUIRES_APP_TEXT                                                                          \
    "This service supports generation of credentials through binding an application only."

/* What the OSB spec asks of each code: status, `error` word, and the exact text when fixed. */
struct expected_row {
    enum osbq_err code;
    unsigned status;
    const char *error;
    const char *description; /* NULL: any non-empty text */
};

static const struct expected_row expected_rows[] = {
    {OSBQ_ERR_BAD_REQUEST, 400, NULL, NULL},
    {OSBQ_ERR_UNAUTHORIZED, 401, NULL, NULL},
    {OSBQ_ERR_FORBIDDEN, 403, NULL, NULL},
    {OSBQ_ERR_NOT_FOUND, 404, NULL, NULL},
    {OSBQ_ERR_METHOD, 405, NULL, NULL},
    {OSBQ_ERR_CONFLICT, 409, NULL, NULL},
    {OSBQ_ERR_GONE, 410, NULL, NULL},
    {OSBQ_ERR_API_VERSION, 412, NULL, NULL},
    {OSBQ_ERR_TOO_LARGE, 413, NULL, NULL},
    {OSBQ_ERR_UNPROCESSABLE, 422, NULL, NULL},
    {OSBQ_ERR_ASYNC_REQUIRED, 422, "AsyncRequired", ASYNC_TEXT},
    {OSBQ_ERR_CONCURRENCY, 422, "ConcurrencyError", CONCURRENCY_TEXT},
    {OSBQ_ERR_MAINTENANCE_INFO, 422, "MaintenanceInfoConflict", NULL},
    {OSBQ_ERR_REQUIRES_APP, 422, "RequiresApp", REQUIRES_APP_TEXT},
    {OSBQ_ERR_INTERNAL, 500, NULL, NULL},
    {OSBQ_ERR_BACKEND, 502, NULL, NULL},
    {OSBQ_ERR_UNAVAILABLE, 503, NULL, NULL},
    {OSBQ_ERR_TIMEOUT, 504, NULL, NULL},
    {OSBQ_ERR_INVALID, 500, NULL, NULL},
    {OSBQ_ERR_MISCONFIGURED, 503, NULL, NULL},
};

/* The parsed body of a reply: an object, with a non-empty string "description". */
static json_t *parse_body(const struct reply *r, enum osbq_err code)
{
    const char *text = r->body != NULL ? r->body : r->static_body;
    if (text == NULL)
        fail_msg("%s: no body", osbq_err_name(code));
    if (strlen(text) != r->body_len)
        fail_msg("%s: body_len %zu, body is %zu bytes", osbq_err_name(code), r->body_len,
                 strlen(text));
    json_error_t jerr;
    json_t *body = json_loads(text, 0, &jerr);
    if (body == NULL)
        fail_msg("%s: body does not parse (%s): %s", osbq_err_name(code), jerr.text, text);
    if (!json_is_object(body))
        fail_msg("%s: body is not an object: %s", osbq_err_name(code), text);
    const char *description = json_string_value(json_object_get(body, "description"));
    if (description == NULL || description[0] == '\0')
        fail_msg("%s: no non-empty string \"description\": %s", osbq_err_name(code), text);
    return body;
}

static const char *body_string(json_t *body, const char *key)
{
    return json_string_value(json_object_get(body, key));
}

static void test_every_code_replies_with_its_row(void **state)
{
    (void)state;
    for (int c = OSBQ_ERR_BAD_REQUEST; c < OSBQ_ERR_COUNT_; c++) {
        enum osbq_err code = (enum osbq_err)c;
        const struct reply_error_row *row = reply_error_row(code);
        struct reply r = {0};
        assert_non_null(row);
        reply_error(&r, code, "custom text");
        json_t *body = parse_body(&r, code);
        if (r.status != row->status)
            fail_msg("%s: status %u, row says %u", osbq_err_name(code), r.status, row->status);
        json_t *error = json_object_get(body, "error");
        if ((error != NULL) != (row->error != NULL))
            fail_msg("%s: \"error\" key %s", osbq_err_name(code),
                     error ? "present without a word in the row" : "missing");
        if (row->error != NULL) {
            assert_string_equal(json_string_value(error), row->error);
            /* Coded errors keep their fixed text whatever the caller says. */
            assert_string_equal(body_string(body, "description"), row->description);
        } else {
            assert_string_equal(body_string(body, "description"), "custom text");
        }
        assert_int_equal(json_object_size(body), row->error != NULL ? 2 : 1);
        assert_int_equal(r.www_authenticate, code == OSBQ_ERR_UNAUTHORIZED);
        assert_null(r.static_body);
        json_decref(body);
        reply_clear(&r);
    }
}

static void test_error_table_matches_the_spec(void **state)
{
    (void)state;
    /* Every code has exactly one expectation. */
    assert_int_equal(COUNT(expected_rows), OSBQ_ERR_COUNT_ - OSBQ_ERR_BAD_REQUEST);
    for (size_t i = 0; i < COUNT(expected_rows); i++) {
        const struct expected_row *want = &expected_rows[i];
        const struct reply_error_row *row = reply_error_row(want->code);
        const char *name = osbq_err_name(want->code);
        struct reply r = {0};
        assert_int_equal(want->code, OSBQ_ERR_BAD_REQUEST + (int)i);
        reply_error(&r, want->code, NULL);
        json_t *body = parse_body(&r, want->code);
        if (r.status != want->status || row->status != want->status)
            fail_msg("%s: status %u (row %u), want %u", name, r.status, row->status, want->status);
        const char *error = body_string(body, "error");
        if (want->error == NULL && (error != NULL || row->error != NULL))
            fail_msg("%s: unexpected error word", name);
        if (want->error != NULL && (error == NULL || strcmp(error, want->error) != 0))
            fail_msg("%s: error word %s, want %s", name, error ? error : "(none)", want->error);
        if (want->description != NULL)
            assert_string_equal(body_string(body, "description"), want->description);
        assert_string_equal(body_string(body, "description"), row->description);
        json_decref(body);
        reply_clear(&r);
    }
}

static void test_unauthorized_asks_for_credentials(void **state)
{
    (void)state;
    struct reply r = {0};
    reply_error(&r, OSBQ_ERR_UNAUTHORIZED, "bad credentials");
    assert_int_equal(r.status, 401);
    assert_true(r.www_authenticate);
    reply_error(&r, OSBQ_ERR_NOT_FOUND, NULL);
    assert_int_equal(r.status, 404);
    assert_false(r.www_authenticate);
    reply_clear(&r);
}

/* Replies each of the n codes with each of the m texts, which the reply must replace with the
 * code's own description; with_status: the reply's status is checked against the table too. */
static void assert_default_descriptions(const enum osbq_err *codes, size_t n,
                                        const char *const *texts, size_t m, bool with_status)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < m; k++) {
            struct reply r = {0};
            reply_error(&r, codes[i], texts[k]);
            json_t *body = parse_body(&r, codes[i]);
            if (with_status)
                assert_int_equal(r.status, reply_error_row(codes[i])->status);
            assert_string_equal(body_string(body, "description"),
                                reply_error_row(codes[i])->description);
            json_decref(body);
            reply_clear(&r);
        }
    }
}

static void test_empty_or_null_description_uses_default(void **state)
{
    (void)state;
    static const enum osbq_err codes[] = {OSBQ_ERR_BAD_REQUEST, OSBQ_ERR_NOT_FOUND,
                                          OSBQ_ERR_UNPROCESSABLE, OSBQ_ERR_CONCURRENCY,
                                          OSBQ_ERR_TIMEOUT};
    static const char *const texts[] = {NULL, ""};
    assert_default_descriptions(codes, COUNT(codes), texts, COUNT(texts), false);
}

static void test_invalid_utf8_description_still_gives_json(void **state)
{
    (void)state;
    static const enum osbq_err codes[] = {OSBQ_ERR_BAD_REQUEST, OSBQ_ERR_CONFLICT,
                                          OSBQ_ERR_ASYNC_REQUIRED};
    static const char *const texts[] = {"\xff\xfe", "bad \xc3 tail", "\xed\xa0\x80"};
    assert_default_descriptions(codes, COUNT(codes), texts, COUNT(texts), true);
}

static void test_description_is_json_escaped(void **state)
{
    (void)state;
    static const char text[] = "quote \" backslash \\ newline \n tab \t caf\xc3\xa9";
    struct reply r = {0};
    reply_error(&r, OSBQ_ERR_BAD_REQUEST, text);
    json_t *body = parse_body(&r, OSBQ_ERR_BAD_REQUEST);
    assert_string_equal(body_string(body, "description"), text);
    json_decref(body);
    reply_clear(&r);
}

static void test_reply_error_from_uses_code_and_text(void **state)
{
    (void)state;
    struct osbq_error err = {0};
    struct reply r = {0};
    osbq_error_set(&err, OSBQ_ERR_CONFLICT, "instance %s exists", "i-1");
    reply_error_from(&r, &err);
    json_t *body = parse_body(&r, err.code);
    assert_int_equal(r.status, 409);
    assert_string_equal(body_string(body, "description"), "instance i-1 exists");
    json_decref(body);

    memset(&err, 0, sizeof err);
    osbq_error_set(&err, OSBQ_ERR_REQUIRES_APP, "ignored");
    reply_error_from(&r, &err);
    body = parse_body(&r, err.code);
    assert_int_equal(r.status, 422);
    assert_string_equal(body_string(body, "error"), "RequiresApp");
    assert_string_equal(body_string(body, "description"), REQUIRES_APP_TEXT);
    json_decref(body);
    reply_clear(&r);
}

static void test_codes_without_http_meaning_map_to_500(void **state)
{
    (void)state;
    const struct reply_error_row *internal = reply_error_row(OSBQ_ERR_INTERNAL);
    assert_int_equal(internal->status, 500);
    assert_ptr_equal(reply_error_row(OSBQ_OK), internal);
    assert_ptr_equal(reply_error_row(OSBQ_ERR_COUNT_), internal);
    assert_int_equal(reply_error_row(OSBQ_ERR_INVALID)->status, 500);

    struct reply r = {0};
    reply_error(&r, OSBQ_OK, "not an error");
    json_t *body = parse_body(&r, OSBQ_OK);
    assert_int_equal(r.status, 500);
    json_decref(body);
    reply_clear(&r);
}

static void test_reply_json_steals_the_object(void **state)
{
    (void)state;
    struct reply r = {0};
    json_t *obj = json_pack("{s:s, s:i}", "operation", "op-1", "n", 3);
    assert_non_null(obj);
    json_incref(obj); /* our own reference, to watch reply_json drop its one */
    assert_int_equal(obj->refcount, 2);
    reply_json(&r, 202, obj);
    assert_int_equal(obj->refcount, 1);
    json_decref(obj);

    assert_int_equal(r.status, 202);
    assert_non_null(r.body);
    assert_null(r.static_body);
    assert_string_equal(r.body, "{\"operation\":\"op-1\",\"n\":3}");
    assert_int_equal(r.body_len, strlen(r.body));
    reply_clear(&r);
}

static void test_reply_json_replaces_an_earlier_body(void **state)
{
    (void)state;
    struct reply r = {0};
    reply_error(&r, OSBQ_ERR_UNAUTHORIZED, NULL);
    reply_json(&r, 200, json_object());
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{}");
    assert_int_equal(r.body_len, 2);
    assert_false(r.www_authenticate);
    reply_clear(&r);
}

static void test_reply_json_without_object_falls_back_to_500(void **state)
{
    (void)state;
    json_t *not_objects[] = {NULL, json_integer(7), json_string("text")};
    for (size_t i = 0; i < COUNT(not_objects); i++) {
        struct reply r = {0};
        reply_json(&r, 200, not_objects[i]);
        assert_int_equal(r.status, 500);
        assert_null(r.body);
        json_t *body = parse_body(&r, OSBQ_ERR_INTERNAL);
        json_decref(body);
        reply_clear(&r);
    }
}

static void test_reply_static_keeps_the_pointer(void **state)
{
    (void)state;
    static const char catalog[] = "{\"services\":[]}";
    struct reply r = {0};
    reply_error(&r, OSBQ_ERR_NOT_FOUND, NULL); /* an owned body that must be freed first */
    reply_static(&r, 200, catalog, sizeof catalog - 1);
    assert_int_equal(r.status, 200);
    assert_ptr_equal(r.static_body, catalog);
    assert_null(r.body);
    assert_int_equal(r.body_len, sizeof catalog - 1);
    reply_clear(&r); /* must not free the borrowed body */
    assert_null(r.static_body);
    assert_string_equal(catalog, "{\"services\":[]}");
}

static void test_reply_clear_zeroes_everything(void **state)
{
    (void)state;
    static const struct reply zero;
    struct reply r = {0};
    reply_error(&r, OSBQ_ERR_UNAUTHORIZED, NULL);
    r.etag = "\"e\"";
    (void)snprintf(r.allow, sizeof r.allow, "%s", "GET, HEAD");
    reply_clear(&r);
    assert_memory_equal(&r, &zero, sizeof r);
    reply_clear(&r); /* a cleared reply can be cleared again */
    assert_memory_equal(&r, &zero, sizeof r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_replies_with_its_row),
        cmocka_unit_test(test_error_table_matches_the_spec),
        cmocka_unit_test(test_unauthorized_asks_for_credentials),
        cmocka_unit_test(test_empty_or_null_description_uses_default),
        cmocka_unit_test(test_invalid_utf8_description_still_gives_json),
        cmocka_unit_test(test_description_is_json_escaped),
        cmocka_unit_test(test_reply_error_from_uses_code_and_text),
        cmocka_unit_test(test_codes_without_http_meaning_map_to_500),
        cmocka_unit_test(test_reply_json_steals_the_object),
        cmocka_unit_test(test_reply_json_replaces_an_earlier_body),
        cmocka_unit_test(test_reply_json_without_object_falls_back_to_500),
        cmocka_unit_test(test_reply_static_keeps_the_pointer),
        cmocka_unit_test(test_reply_clear_zeroes_everything),
    };
    return cmocka_run_group_tests_name("reply", tests, NULL, NULL);
}
