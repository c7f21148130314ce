/* What the exec backend's program prints, read as it arrives: stdout split into lines,
 * "progress <percent> <text>" lines reported, the last line starting with '{' kept as the
 * result, and the tail of stderr kept for a failure's description (docs/backends.md). No I/O:
 * the backend feeds the bytes it reads, so this parser can be tested and fuzzed on its own. */
#ifndef OSBQ_WORKER_EXEC_OUTPUT_H
#define OSBQ_WORKER_EXEC_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Longest stdout line kept: a progress line or the result. Longer lines are discarded as they
 * arrive (a result that long fails the operation), so a flood costs no memory. */
#define EXEC_LINE_MAX (64 * 1024)
/* Bytes of stderr kept, the latest ones: only the tail ends up in a failure's description. */
#define EXEC_STDERR_MAX (64 * 1024)
/* Bytes of that tail a failure shows. */
#define EXEC_STDERR_SHOWN 900
/* Longest progress text kept (before " (NN%)" is added). */
#define EXEC_PROGRESS_MAX 200

/* What the last stdout line starting with '{' turned out to be. */
enum exec_result_state {
    EXEC_RESULT_NONE,     /* no such line */
    EXEC_RESULT_LINE,     /* in result[] */
    EXEC_RESULT_TOO_LONG, /* longer than EXEC_LINE_MAX: discarded */
};

/* Called for each progress line with "<text> (<percent>%)" (valid UTF-8, one line). */
typedef void (*exec_progress_fn)(void *ctx, const char *description);

/* The parser's state: ~200 KiB, so keep it on the heap. It may hold credentials (the result):
 * wipe it (exec_output_wipe) before freeing. */
struct exec_output {
    exec_progress_fn progress;
    void *progress_ctx;
    char line[EXEC_LINE_MAX]; /* the stdout line being assembled */
    size_t line_len;
    bool line_overlong; /* the current line passed EXEC_LINE_MAX: discarding to its end */
    char result[EXEC_LINE_MAX];
    size_t result_len;
    enum exec_result_state result_state;
    char err_tail[EXEC_STDERR_MAX]; /* the latest stderr bytes */
    size_t err_len;
    char last_progress[EXEC_PROGRESS_MAX]; /* the last progress text, "" when none */
};

/* Resets o's state and sets the progress callback (progress may be NULL: progress lines are
 * then only remembered). The buffers are left as they are (only bytes the parser wrote are ever
 * read), so the pages of a fresh allocation stay untouched until output needs them: a worker
 * running hundreds of programs pays for what they print, not for the limits. */
void exec_output_init(struct exec_output *o, exec_progress_fn progress, void *ctx);

/* Zeroes every byte the parser wrote (the result may hold credentials) and resets o; what a
 * program never printed is not touched. */
void exec_output_wipe(struct exec_output *o);

/* Feeds n bytes of stdout. */
void exec_output_stdout(struct exec_output *o, const char *data, size_t n);

/* Stdout reached its end: a last line without a newline counts. */
void exec_output_stdout_end(struct exec_output *o);

/* Feeds n bytes of stderr. */
void exec_output_stderr(struct exec_output *o, const char *data, size_t n);

/* The result line parsed: a new reference to the JSON object, or NULL when result_state is not
 * EXEC_RESULT_LINE (*bad false) or the line is not a JSON object (*bad true). */
json_t *exec_output_result(const struct exec_output *o, bool *bad);

/* The failure description from the stderr tail: its last EXEC_STDERR_SHOWN bytes or less,
 * starting at a line when the cut fell inside one, as one line of valid UTF-8. "" when stderr
 * was empty. out_size > 0. */
void exec_output_stderr_description(const struct exec_output *o, char *out, size_t out_size);

#endif
