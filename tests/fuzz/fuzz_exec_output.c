/* Fuzz target: the exec backend's output parser (worker/exec_output.c). The input is what a
 * program prints, on stdout and on stderr. Properties: every progress description and the
 * stderr description are one line of valid UTF-8 within their bounds; the result is a JSON
 * object or flagged bad; and the outcome does not depend on how the bytes were split into
 * reads (one read, or reads of varying sizes as pipes deliver). Repeating the input reaches
 * the over-long line paths (EXEC_LINE_MAX) that libFuzzer's short inputs cannot. */
#include <jansson.h>
#include <string.h>

#include "exec_output.h"
#include "fuzz_target.h"

/* Copies the input this many times for the over-long pass: > EXEC_LINE_MAX for a 4 KiB input. */
#define REPEATS 20

/* True when text is one line of valid UTF-8 (no control characters) shorter than max. */
static bool one_line(const char *text, size_t max)
{
    size_t len = strnlen(text, max);
    if (len == max)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
            return false;
    json_t *s = json_stringn(text, len); /* NULL when not valid UTF-8 */
    json_decref(s);
    return s != NULL;
}

struct progress_count {
    size_t calls;
};

static void on_progress(void *ctx, const char *description)
{
    struct progress_count *count = ctx;
    count->calls++;
    FUZZ_CHECK(one_line(description, EXEC_PROGRESS_MAX + 16));
    FUZZ_CHECK(strlen(description) >= 4 &&
               strcmp(description + strlen(description) - 2, "%)") == 0);
}

/* Feeds data to o's stdout and stderr in reads of varying sizes (step picks the pattern; 0 for
 * one read), then ends stdout. */
static void feed(struct exec_output *o, const uint8_t *data, size_t size, size_t step)
{
    size_t off = 0, n = 1;
    while (off < size) {
        size_t take = step == 0 ? size - off : n;
        if (take > size - off)
            take = size - off;
        exec_output_stdout(o, (const char *)data + off, take);
        exec_output_stderr(o, (const char *)data + off, take);
        off += take;
        n = n % 97 + step;
    }
    exec_output_stdout_end(o);
}

/* Checks o's outcome; returns the parsed result (a new reference, or NULL). */
static json_t *check_outcome(const struct exec_output *o)
{
    FUZZ_CHECK(o->result_len <= EXEC_LINE_MAX && o->err_len <= EXEC_STDERR_MAX);
    FUZZ_CHECK(one_line(o->last_progress, EXEC_PROGRESS_MAX));
    bool bad = true;
    json_t *result = exec_output_result(o, &bad);
    if (result != NULL)
        FUZZ_CHECK(json_is_object(result) && !bad && o->result_state == EXEC_RESULT_LINE);
    else
        FUZZ_CHECK(bad == (o->result_state == EXEC_RESULT_LINE));
    char description[1024];
    exec_output_stderr_description(o, description, sizeof description);
    FUZZ_CHECK(one_line(description, sizeof description));
    return result;
}

/* Parses data in one read and in reads of varying sizes; both must agree. */
static void parse_both_ways(struct exec_output *whole, struct exec_output *split,
                            const uint8_t *data, size_t size)
{
    struct progress_count whole_count = {0}, split_count = {0};
    exec_output_init(whole, on_progress, &whole_count);
    exec_output_init(split, on_progress, &split_count);
    feed(whole, data, size, 0);
    feed(split, data, size, 1 + (size % 7));

    json_t *a = check_outcome(whole);
    json_t *b = check_outcome(split);
    FUZZ_CHECK(whole_count.calls == split_count.calls);
    FUZZ_CHECK(whole->result_state == split->result_state);
    FUZZ_CHECK(whole->result_len == split->result_len &&
               memcmp(whole->result, split->result, whole->result_len) == 0);
    FUZZ_CHECK(strcmp(whole->last_progress, split->last_progress) == 0);
    FUZZ_CHECK(whole->err_len == split->err_len &&
               memcmp(whole->err_tail, split->err_tail, whole->err_len) == 0);
    FUZZ_CHECK((a == NULL) == (b == NULL) && (a == NULL || json_equal(a, b)));
    json_decref(a);
    json_decref(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Allocated once: two parsers are 400 KiB, and mapping them afresh for every input made
     * the target ten times slower. */
    static struct exec_output *whole, *split;
    if (whole == NULL) {
        whole = malloc(sizeof *whole);
        split = malloc(sizeof *split);
        FUZZ_CHECK(whole != NULL && split != NULL);
    }
    parse_both_ways(whole, split, data, size);
    /* The same bytes many times over: lines and stderr past their limits. */
    uint8_t *many = malloc(size * REPEATS + 1);
    FUZZ_CHECK(many != NULL);
    for (size_t i = 0; i < REPEATS; i++)
        memcpy(many + i * size, data, size);
    parse_both_ways(whole, split, many, size * REPEATS);
    free(many);
    return 0;
}
