/* Unit tests of the exec program's output parser (worker/exec_output.c): progress lines, the
 * result line, over-long lines, the stderr description, and that how the bytes are split into
 * reads does not change the outcome (the fuzz target checks that on any input; the boundary
 * cases are pinned here). */
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

#include "exec_output.h"
#include "test_main.h"

struct progress_log {
    size_t calls;
    char last[EXEC_PROGRESS_MAX + 16];
};

static void on_progress(void *ctx, const char *description)
{
    struct progress_log *log = ctx;
    log->calls++;
    (void)snprintf(log->last, sizeof log->last, "%s", description);
}

static struct exec_output *new_output(struct progress_log *log)
{
    struct exec_output *o = malloc(sizeof *o);
    assert_non_null(o);
    exec_output_init(o, on_progress, log);
    return o;
}

/* Feeds text to stdout in reads of at most chunk bytes, then ends stdout. */
static void feed_stdout(struct exec_output *o, const char *text, size_t len, size_t chunk)
{
    for (size_t off = 0; off < len; off += chunk)
        exec_output_stdout(o, text + off, len - off < chunk ? len - off : chunk);
    exec_output_stdout_end(o);
}

static void test_progress_lines(void **state)
{
    (void)state;
    struct progress_log log = {0};
    struct exec_output *o = new_output(&log);
    static const char text[] = "progress 10 Creating\nprogress 101 too much\nprogress 5x no\n"
                               "progress 50   caf\xc3\xa9\x01 \xff done  \r\nprogress 100\n";
    feed_stdout(o, text, sizeof text - 1, sizeof text);
    assert_int_equal(log.calls, 3);
    assert_string_equal(log.last, "Working (100%)");
    assert_string_equal(o->last_progress, "caf\xc3\xa9 ? done");
    assert_int_equal(o->result_state, EXEC_RESULT_NONE);
    free(o);
}

static void test_last_result_line_wins(void **state)
{
    (void)state;
    struct progress_log log = {0};
    struct exec_output *o = new_output(&log);
    static const char text[] = "{\"a\":1}\nlog line\n \t{\"b\":2}";
    feed_stdout(o, text, sizeof text - 1, 3);
    bool bad = true;
    json_t *result = exec_output_result(o, &bad);
    assert_false(bad);
    assert_non_null(result);
    assert_int_equal(json_integer_value(json_object_get(result, "b")), 2);
    json_decref(result);

    exec_output_init(o, NULL, NULL);
    feed_stdout(o, "{\"a\":1,\"a\":2}\n", 14, 14);
    assert_null(exec_output_result(o, &bad));
    assert_true(bad);
    free(o);
}

/* A result line of exactly EXEC_LINE_MAX bytes is kept, however the reads split it: in one
 * read, or in a read that ends right at the limit with the newline in the next one (that way
 * it used to be discarded, as it was when stdout ended right after it). One byte more is too
 * long either way. The fuzz target's split-read property covers the same ground on short lines. */
static void test_line_at_the_limit(void **state)
{
    (void)state;
    size_t lens[] = {EXEC_LINE_MAX, EXEC_LINE_MAX + 1};
    for (size_t l = 0; l < 2; l++) {
        size_t len = lens[l];
        char *text = malloc(len + 1);
        assert_non_null(text);
        memset(text, ' ', len);
        text[0] = '{';
        text[len - 1] = '}';
        text[len] = '\n';
        size_t chunks[] = {len + 1, EXEC_LINE_MAX, 4096, 1000};
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            struct progress_log log = {0};
            struct exec_output *o = new_output(&log);
            feed_stdout(o, text, len + 1, chunks[c]);
            if (len == EXEC_LINE_MAX) {
                assert_int_equal(o->result_state, EXEC_RESULT_LINE);
                assert_int_equal(o->result_len, EXEC_LINE_MAX);
                bool bad = true;
                json_t *result = exec_output_result(o, &bad);
                assert_non_null(result);
                json_decref(result);
            } else {
                assert_int_equal(o->result_state, EXEC_RESULT_TOO_LONG);
            }
            /* Without the newline, the end of stdout ends the line the same way. */
            exec_output_init(o, NULL, NULL);
            feed_stdout(o, text, len, chunks[c]);
            assert_int_equal(o->result_state,
                             len == EXEC_LINE_MAX ? EXEC_RESULT_LINE : EXEC_RESULT_TOO_LONG);
            free(o);
        }
        free(text);
    }
}

static void test_stderr_description(void **state)
{
    (void)state;
    struct exec_output *o = new_output(NULL);
    char description[1024];
    exec_output_stderr_description(o, description, sizeof description);
    assert_string_equal(description, "");

    static const char text[] = "Traceback:\n  line 1\nError:\tthe quota is\x1b exhausted\n\n";
    exec_output_stderr(o, text, sizeof text - 1);
    exec_output_stderr_description(o, description, sizeof description);
    assert_string_equal(description, "Traceback: line 1 Error: the quota is exhausted");

    /* A long stderr: only the tail, from the start of a line. */
    exec_output_init(o, NULL, NULL);
    char *flood = malloc(EXEC_STDERR_MAX * 2);
    assert_non_null(flood);
    for (size_t i = 0; i < EXEC_STDERR_MAX * 2; i++)
        flood[i] = i % 100 == 99 ? '\n' : 'x';
    exec_output_stderr(o, flood, EXEC_STDERR_MAX * 2);
    exec_output_stderr(o, "last words\n", 11);
    assert_int_equal(o->err_len, EXEC_STDERR_MAX);
    exec_output_stderr_description(o, description, sizeof description);
    assert_true(strlen(description) <= EXEC_STDERR_SHOWN);
    assert_non_null(strstr(description, "last words"));
    assert_int_equal(description[0], 'x');
    free(flood);
    free(o);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_progress_lines),
               cmocka_unit_test(test_last_result_line_wins),
               cmocka_unit_test(test_line_at_the_limit), cmocka_unit_test(test_stderr_description))
