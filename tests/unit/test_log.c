/* The log line: logfmt and JSON forms of the same fields, and a description's first words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "log.h"
#include "test_main.h"

static void test_json_line_parses_with_the_fields(void **state)
{
    (void)state;
    osbq_log_init("gw", OSBQ_LOG_INFO);
    osbq_log_set_format(OSBQ_LOG_JSON);
    struct osbq_log_line line;
    osbq_log_line_begin(&line, OSBQ_LOG_WARN, "request");
    osbq_log_line_str(&line, "detail", "say \"hi\"\n\t\x01\xc3\xa9");
    osbq_log_line_int(&line, "status", 401);
    osbq_log_line_finish(&line);
    osbq_log_set_format(OSBQ_LOG_LOGFMT);
    assert_int_equal(line.buf[line.len - 1], '\n');
    json_error_t error;
    json_t *obj = json_loadb(line.buf, line.len, 0, &error);
    if (obj == NULL)
        fail_msg("not JSON (%s): %s", error.text, line.buf);
    assert_string_equal(json_string_value(json_object_get(obj, "level")), "warn");
    assert_string_equal(json_string_value(json_object_get(obj, "proc")), "gw");
    assert_string_equal(json_string_value(json_object_get(obj, "msg")), "request");
    assert_int_equal(json_integer_value(json_object_get(obj, "status")), 401);
    assert_non_null(strstr(json_string_value(json_object_get(obj, "detail")), "say \"hi\"\n\t"));
    assert_non_null(json_object_get(obj, "ts"));
    json_decref(obj);
}

static void test_json_line_too_long_stays_json(void **state)
{
    (void)state;
    osbq_log_set_format(OSBQ_LOG_JSON);
    char big[1500];
    memset(big, '"', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    struct osbq_log_line line;
    osbq_log_line_begin(&line, OSBQ_LOG_INFO, big);
    osbq_log_line_str(&line, "a", big);
    osbq_log_line_str(&line, "b", "short");
    osbq_log_line_finish(&line);
    osbq_log_set_format(OSBQ_LOG_LOGFMT);
    json_t *obj = json_loadb(line.buf, line.len, 0, NULL);
    if (obj == NULL)
        fail_msg("not JSON: %s", line.buf);
    assert_int_equal(json_integer_value(json_object_get(obj, "truncated")), 1);
    /* The message is cut short, not lost. */
    assert_non_null(json_string_value(json_object_get(obj, "msg")));
    json_decref(obj);
}

static void test_logfmt_line_keeps_its_form(void **state)
{
    (void)state;
    osbq_log_set_format(OSBQ_LOG_LOGFMT);
    struct osbq_log_line line;
    osbq_log_line_begin(&line, OSBQ_LOG_INFO, "request");
    osbq_log_line_str(&line, "reason", "BAD_REQUEST");
    osbq_log_line_str(&line, "detail", "a b");
    osbq_log_line_finish(&line);
    assert_non_null(strstr(line.buf, " msg=request reason=BAD_REQUEST detail=\"a b\"\n"));
}

static void test_first_words(void **state)
{
    (void)state;
    char out[96];
    osbq_log_first_words("  The plan   is\nunknown.  ", 8, out, sizeof out);
    assert_string_equal(out, "The plan is unknown.");
    osbq_log_first_words("one two three four", 2, out, sizeof out);
    assert_string_equal(out, "one two...");
    char tiny[12];
    osbq_log_first_words("abcdef ghijkl mnop", 8, tiny, sizeof tiny);
    assert_string_equal(tiny, "abcdef...");
    osbq_log_first_words("", 8, out, sizeof out);
    assert_string_equal(out, "");
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_json_line_parses_with_the_fields),
               cmocka_unit_test(test_json_line_too_long_stays_json),
               cmocka_unit_test(test_logfmt_line_keeps_its_form),
               cmocka_unit_test(test_first_words))
