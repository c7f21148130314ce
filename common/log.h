/* Logging: one logfmt line per event on stderr, written with a single write(2) so lines from
 * different threads never interleave. Never log credentials or binding contents. */
#ifndef OSBQ_LOG_H
#define OSBQ_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum osbq_log_level {
    OSBQ_LOG_ERROR = 0,
    OSBQ_LOG_WARN,
    OSBQ_LOG_INFO,
    OSBQ_LOG_DEBUG,
};

/* How lines are written: logfmt (key=value) or one JSON object per line, same fields. */
enum osbq_log_format {
    OSBQ_LOG_LOGFMT = 0,
    OSBQ_LOG_JSON,
};

/* Sets the process name written on every line and the most verbose level written.
 * Call once at start-up, before any thread starts; these and the format are the log module's
 * only state (static in log.c). */
void osbq_log_init(const char *process_name, enum osbq_log_level level);

/* Sets the line format (OSBQ_LOG_FORMAT); at start-up, before any thread starts. */
void osbq_log_set_format(enum osbq_log_format format);

/* Parses "logfmt" or "json"; returns 0, or -1 for anything else. */
int osbq_log_format_parse(const char *text, enum osbq_log_format *out);

/* Copies the first `words` blank-separated words of text into out (size bytes, NUL-terminated),
 * runs of blanks made one space and "..." appended when text goes on: a description's gist for
 * a log line. */
void osbq_log_first_words(const char *text, size_t words, char *out, size_t size);

/* Parses "error", "warn", "info" or "debug"; returns 0, or -1 for anything else. */
int osbq_log_level_parse(const char *text, enum osbq_log_level *out);

/* True when lines of this level are written. */
int osbq_log_enabled(enum osbq_log_level level);

/* Writes `ts=... level=... proc=... func=... msg="<formatted>"`; with_errno appends
 * ` error="<strerror(errno)>"`. Use the macros below. */
void osbq_log_msg(enum osbq_log_level level, const char *func, int with_errno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Like osbq_log_msg, then exits with status 1. For start-up failures only. */
void osbq_log_fatal(const char *func, int with_errno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* A library's log callback (libmicrohttpd's MHD_OPTION_EXTERNAL_LOGGER): its message at debug
 * level, trailing newlines cut, after name (a const char *: the library's name, borrowed). */
void osbq_log_library(void *name, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

#define log_warn(...)   osbq_log_msg(OSBQ_LOG_WARN, __func__, 1, __VA_ARGS__)
#define log_warnx(...)  osbq_log_msg(OSBQ_LOG_WARN, __func__, 0, __VA_ARGS__)
#define log_errorx(...) osbq_log_msg(OSBQ_LOG_ERROR, __func__, 0, __VA_ARGS__)
#define log_info(...)   osbq_log_msg(OSBQ_LOG_INFO, __func__, 0, __VA_ARGS__)
#define log_debug(...)  osbq_log_msg(OSBQ_LOG_DEBUG, __func__, 0, __VA_ARGS__)
#define fatal(...)      osbq_log_fatal(__func__, 1, __VA_ARGS__)
#define fatalx(...)     osbq_log_fatal(__func__, 0, __VA_ARGS__)

/* What the calling thread works on: its lines carry these as op=, instance=, binding= and
 * request_id= (absent ones left out), so one operation can be followed across the gateway's
 * and the workers' logs. Set by the HTTP layer around a request's handler and by a runner
 * thread around a job. The strings are borrowed and must stay valid until the context is
 * cleared. */
struct osbq_log_context {
    const char *operation_id; /* the operation, or NULL */
    const char *instance_id;  /* the service instance, or NULL */
    const char *binding_id;   /* the binding, or NULL */
    const char *request_id;   /* the platform's X-Broker-API-Request-Identity, or NULL */
};

/* Makes *ctx (copied) the calling thread's context; NULL clears it. The context is the log
 * module's one piece of per-thread state (thread-local in log.c). */
void osbq_log_context_set(const struct osbq_log_context *ctx);

/* Sets only the operation of the calling thread's context (a handler learns it late). */
void osbq_log_context_set_operation(const char *operation_id);

/* A structured line built field by field (the access log), then written at once. */
struct osbq_log_line {
    char buf[2048]; /* the line so far; always NUL-terminated */
    size_t len;     /* bytes used in buf, without the NUL */
    int truncated;  /* set when a field did not fit: the line ends with `truncated=1` */
    int json;       /* written as a JSON object (the format when the line began) */
};

/* Starts a line with ts, level, proc and msg=<event> (a bare word such as "request"). */
void osbq_log_line_begin(struct osbq_log_line *line, enum osbq_log_level level, const char *event);
/* Appends key=value, quoting and escaping the value when logfmt needs it; NULL writes nothing. */
void osbq_log_line_str(struct osbq_log_line *line, const char *key, const char *value);
/* Appends key=<integer>. */
void osbq_log_line_int(struct osbq_log_line *line, const char *key, int64_t value);
/* Closes the line and adds the newline; line->buf then holds the text osbq_log_line_end
 * writes (tests read it). */
void osbq_log_line_finish(struct osbq_log_line *line);
/* Finishes the line and writes it in one write(2). */
void osbq_log_line_end(struct osbq_log_line *line);

#endif
