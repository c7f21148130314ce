/* Logging: logfmt lines on stderr, one write(2) each. */
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Set once by osbq_log_init before threads start, read-only afterwards. */
static const char *log_process = "osbq";
static enum osbq_log_level log_max_level = OSBQ_LOG_INFO;
static enum osbq_log_format log_format = OSBQ_LOG_LOGFMT;

/* What this thread works on, written on each of its lines (osbq_log_context_set). */
static _Thread_local struct osbq_log_context log_context;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void osbq_log_init(const char *process_name, enum osbq_log_level level)
{
    log_process = process_name;
    log_max_level = level;
}

void osbq_log_set_format(enum osbq_log_format format)
{
    log_format = format;
}

int osbq_log_format_parse(const char *text, enum osbq_log_format *out)
{
    if (strcmp(text, "logfmt") == 0)
        *out = OSBQ_LOG_LOGFMT;
    else if (strcmp(text, "json") == 0)
        *out = OSBQ_LOG_JSON;
    else
        return -1;
    return 0;
}

void osbq_log_first_words(const char *text, size_t words, char *out, size_t size)
{
    size_t len = 0;
    size_t count = 0;
    const char *p = text;
    if (size == 0)
        return;
    out[0] = '\0';
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (*p == '\0')
            break;
        size_t n = strcspn(p, " \t\n\r");
        if (count == words || len + (count > 0) + n + 4 > size) {
            if (len + 4 <= size) {
                memcpy(out + len, "...", 4);
                len += 3;
            }
            return;
        }
        if (count > 0)
            out[len++] = ' ';
        memcpy(out + len, p, n);
        len += n;
        out[len] = '\0';
        count++;
        p += n;
    }
}

int osbq_log_level_parse(const char *text, enum osbq_log_level *out)
{
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++) {
        if (strcmp(text, level_names[i]) == 0) {
            *out = (enum osbq_log_level)i;
            return 0;
        }
    }
    return -1;
}

int osbq_log_enabled(enum osbq_log_level level)
{
    return level <= log_max_level;
}

static void append_raw(struct osbq_log_line *line, const char *s, size_t n)
{
    /* Keep room for ",\"truncated\":1", the closing brace, the newline and the NUL. */
    const size_t reserve = 20;
    if (line->truncated || line->len + n + reserve >= sizeof line->buf) {
        line->truncated = 1;
        return;
    }
    memcpy(line->buf + line->len, s, n);
    line->len += n;
    line->buf[line->len] = '\0';
}

static void append_fmt(struct osbq_log_line *line, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void append_fmt(struct osbq_log_line *line, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    append_raw(line, tmp, strnlen(tmp, sizeof tmp));
}

static int needs_quotes(const char *s)
{
    if (*s == '\0')
        return 1;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p >= 0x7f)
            return 1;
    return 0;
}

/* Appends value quoted, with \" \\ \n and \t escaped. Other control bytes become \xNN in
 * logfmt; in JSON every byte outside printable ASCII becomes \u00XX, so a line stays valid JSON
 * whatever a client sent. */
static void append_quoted(struct osbq_log_line *line, const char *value, int json)
{
    append_raw(line, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char esc[2] = {'\\', (char)*p};
            append_raw(line, esc, 2);
        } else if (*p == '\n') {
            append_raw(line, "\\n", 2);
        } else if (*p == '\t') {
            append_raw(line, "\\t", 2);
        } else if (json && (*p < ' ' || *p >= 0x7f)) {
            append_fmt(line, "\\u%04x", *p);
        } else if (*p < ' ' || *p == 0x7f) {
            append_fmt(line, "\\x%02x", *p);
        } else {
            append_raw(line, (const char *)p, 1);
        }
    }
    append_raw(line, "\"", 1);
}

/* Appends value as a logfmt value: bare when safe, else quoted. */
static void append_value(struct osbq_log_line *line, const char *value)
{
    if (needs_quotes(value))
        append_quoted(line, value, 0);
    else
        append_raw(line, value, strlen(value));
}

static void append_json_string(struct osbq_log_line *line, const char *value)
{
    append_quoted(line, value, 1);
}

/* A field that did not fit whole is taken out again: half a quoted value would spoil the rest
 * of the line for a parser. */
static void drop_partial_field(struct osbq_log_line *line, size_t start)
{
    if (line->truncated) {
        line->len = start;
        line->buf[start] = '\0';
    }
}

/* Appends the separator and the key of a field. */
static void append_key(struct osbq_log_line *line, const char *key)
{
    if (line->json) {
        append_raw(line, ",", 1);
        append_json_string(line, key);
        append_raw(line, ":", 1);
    } else {
        append_raw(line, " ", 1);
        append_raw(line, key, strlen(key));
        append_raw(line, "=", 1);
    }
}

static void append_message_field(struct osbq_log_line *line, const char *event)
{
    size_t start = line->len;
    if (line->json) {
        append_raw(line, ",\"msg\":", 7);
        append_json_string(line, event);
    } else {
        append_raw(line, " msg=", 5);
        append_value(line, event);
    }
    drop_partial_field(line, start);
}

/* A message too long for the line is cut short rather than dropped. */
static void append_message(struct osbq_log_line *line, const char *event)
{
    append_message_field(line, event);
    if (!line->truncated)
        return;
    char shorter[200];
    (void)snprintf(shorter, sizeof shorter, "%s", event);
    line->truncated = 0;
    append_message_field(line, shorter);
    line->truncated = 1;
}

void osbq_log_line_begin(struct osbq_log_line *line, enum osbq_log_level level, const char *event)
{
    struct timespec ts;
    struct tm tm;
    char when[32] = "";
    line->len = 0;
    line->truncated = 0;
    line->buf[0] = '\0';
    line->json = log_format == OSBQ_LOG_JSON;
    if (clock_gettime(CLOCK_REALTIME, &ts) == 0 && gmtime_r(&ts.tv_sec, &tm) != NULL)
        (void)strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    if (line->json) {
        append_fmt(line, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"proc\":", when,
                   ts.tv_nsec / 1000000L, level_names[level]);
        append_json_string(line, log_process);
    } else {
        append_fmt(line, "ts=%s.%03ldZ level=%s proc=%s", when, ts.tv_nsec / 1000000L,
                   level_names[level], log_process);
    }
    append_message(line, event);
}

void osbq_log_line_str(struct osbq_log_line *line, const char *key, const char *value)
{
    if (value == NULL)
        return;
    size_t start = line->len;
    append_key(line, key);
    if (line->json)
        append_json_string(line, value);
    else
        append_value(line, value);
    drop_partial_field(line, start);
}

void osbq_log_line_int(struct osbq_log_line *line, const char *key, int64_t value)
{
    size_t start = line->len;
    append_key(line, key);
    append_fmt(line, "%" PRId64, value);
    drop_partial_field(line, start);
}

void osbq_log_line_finish(struct osbq_log_line *line)
{
    /* append_raw kept room for these. */
    if (line->truncated) {
        const char *mark = line->json ? ",\"truncated\":1" : " truncated=1";
        memcpy(line->buf + line->len, mark, strlen(mark));
        line->len += strlen(mark);
    }
    if (line->json)
        line->buf[line->len++] = '}';
    line->buf[line->len++] = '\n';
    line->buf[line->len] = '\0';
}

void osbq_log_line_end(struct osbq_log_line *line)
{
    osbq_log_line_finish(line);
    /* A short or failed write to stderr has nowhere better to be reported. */
    (void)!write(STDERR_FILENO, line->buf, line->len);
}

void osbq_log_context_set(const struct osbq_log_context *ctx)
{
    if (ctx == NULL)
        memset(&log_context, 0, sizeof log_context);
    else
        log_context = *ctx;
}

void osbq_log_context_set_operation(const char *operation_id)
{
    log_context.operation_id = operation_id;
}

/* Empty values count as absent: a context may point into a buffer cleared meanwhile. */
static void append_context_field(struct osbq_log_line *line, const char *key, const char *value)
{
    if (value != NULL && value[0] != '\0')
        osbq_log_line_str(line, key, value);
}

/* Appends the calling thread's context fields to line (osbq_log_msg does it for every line). */
static void line_context(struct osbq_log_line *line)
{
    append_context_field(line, "op", log_context.operation_id);
    append_context_field(line, "instance", log_context.instance_id);
    append_context_field(line, "binding", log_context.binding_id);
    append_context_field(line, "request_id", log_context.request_id);
}

static void log_vmsg(enum osbq_log_level level, const char *func, int with_errno, const char *fmt,
                     va_list ap) __attribute__((format(printf, 4, 0)));

static void log_vmsg(enum osbq_log_level level, const char *func, int with_errno, const char *fmt,
                     va_list ap)
{
    int saved_errno = errno;
    char msg[1024];
    (void)vsnprintf(msg, sizeof msg, fmt, ap);
    struct osbq_log_line line;
    osbq_log_line_begin(&line, level, msg);
    line_context(&line);
    osbq_log_line_str(&line, "func", func);
    if (with_errno)
        osbq_log_line_str(&line, "error", strerror(saved_errno));
    osbq_log_line_end(&line);
    errno = saved_errno;
}

void osbq_log_msg(enum osbq_log_level level, const char *func, int with_errno, const char *fmt, ...)
{
    if (!osbq_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, func, with_errno, fmt, ap);
    va_end(ap);
}

void osbq_log_library(void *name, const char *fmt, va_list ap)
{
    if (!osbq_log_enabled(OSBQ_LOG_DEBUG))
        return;
    char msg[512];
    (void)vsnprintf(msg, sizeof msg, fmt, ap);
    size_t len = strlen(msg);
    while (len > 0 && msg[len - 1] == '\n')
        msg[--len] = '\0';
    log_debug("%s: %s", (const char *)name, msg);
}

void osbq_log_fatal(const char *func, int with_errno, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(OSBQ_LOG_ERROR, func, with_errno, fmt, ap);
    va_end(ap);
    exit(1);
}
