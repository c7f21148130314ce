/* The exec program's output, parsed as it arrives (see exec_output.h). */
#include "exec_output.h"

#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The length of the valid UTF-8 character at p (left bytes available), or 0 when the bytes
 * there are not one (overlong forms and surrogates included): descriptions end up in JSON,
 * which must be valid UTF-8. */
static size_t utf8_char_len(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1fu;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0fu;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07u;
    } else {
        return 0;
    }
    if (left < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3fu);
    }
    if (n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)))
        return 0;
    if (n == 4 && (cp < 0x10000 || cp > 0x10ffff))
        return 0;
    return n;
}

/* Copies len bytes of text into out (out_size > 0) as one line of valid UTF-8: control
 * characters and blanks collapse into single spaces, invalid bytes become '?', leading and
 * trailing blanks go; cut at a character boundary when out is too small. */
static void clean_text(const char *text, size_t len, char *out, size_t out_size)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t o = 0;
    bool space = false;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_char_len(p + i, len - i);
        if (n == 1 && (p[i] <= 0x20 || p[i] == 0x7f)) {
            space = o > 0;
            i++;
            continue;
        }
        const char *src = n == 0 ? "?" : text + i;
        size_t src_len = n == 0 ? 1 : n;
        if (o + src_len + (space ? 1 : 0) >= out_size)
            break;
        if (space)
            out[o++] = ' ';
        space = false;
        memcpy(out + o, src, src_len);
        o += src_len;
        i += n == 0 ? 1 : n;
    }
    out[o] = '\0';
}

void exec_output_init(struct exec_output *o, exec_progress_fn progress, void *ctx)
{
    o->progress = progress;
    o->progress_ctx = ctx;
    o->line_len = 0;
    o->line_overlong = false;
    o->result_len = 0;
    o->result_state = EXEC_RESULT_NONE;
    o->err_len = 0;
    o->last_progress[0] = '\0';
}

void exec_output_wipe(struct exec_output *o)
{
    /* Lines are wiped as they end and a result when replaced, and the stderr tail never holds
     * bytes past err_len: the lengths cover all that is left. */
    sodium_memzero(o->line, o->line_len);
    sodium_memzero(o->result, o->result_len);
    sodium_memzero(o->err_tail, o->err_len);
    sodium_memzero(o->last_progress, sizeof o->last_progress);
    exec_output_init(o, NULL, NULL);
}

/* True when text (n bytes) starts, after blanks, with '{': a result line. */
static bool starts_object(const char *text, size_t n)
{
    size_t i = 0;
    while (i < n && (text[i] == ' ' || text[i] == '\t'))
        i++;
    return i < n && text[i] == '{';
}

/* "progress <percent> <text>": reports "<text> (<percent>%)" and keeps the text for the
 * success description. True when the line was one. */
static bool progress_line(struct exec_output *o, const char *line, size_t len)
{
    static const char prefix[] = "progress ";
    size_t i = sizeof prefix - 1;
    if (len < i || memcmp(line, prefix, i) != 0)
        return false;
    unsigned percent = 0;
    size_t digits = 0;
    while (i < len && line[i] >= '0' && line[i] <= '9' && digits < 4) {
        percent = percent * 10 + (unsigned)(line[i] - '0');
        i++;
        digits++;
    }
    if (digits == 0 || percent > 100 || (i < len && line[i] != ' '))
        return false;
    char text[EXEC_PROGRESS_MAX];
    clean_text(line + i, len - i, text, sizeof text);
    if (text[0] != '\0')
        (void)snprintf(o->last_progress, sizeof o->last_progress, "%s", text);
    char description[EXEC_PROGRESS_MAX + 16];
    (void)snprintf(description, sizeof description, "%s (%u%%)", text[0] != '\0' ? text : "Working",
                   percent);
    if (o->progress != NULL)
        o->progress(o->progress_ctx, description);
    return true;
}

/* One complete stdout line (without its newline). */
static void stdout_line(struct exec_output *o, const char *line, size_t len)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (progress_line(o, line, len))
        return;
    if (!starts_object(line, len))
        return;
    sodium_memzero(o->result, o->result_len);
    memcpy(o->result, line, len);
    o->result_len = len;
    o->result_state = EXEC_RESULT_LINE;
}

void exec_output_stdout(struct exec_output *o, const char *data, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t seg = nl != NULL ? (size_t)(nl - data) : n;
        if (!o->line_overlong) {
            size_t room = EXEC_LINE_MAX - o->line_len;
            size_t take = seg < room ? seg : room;
            memcpy(o->line + o->line_len, data, take);
            o->line_len += take;
            /* Only a byte past the limit makes a line too long: a full buffer whose newline
             * comes in the next read (or never) is a line of exactly EXEC_LINE_MAX bytes. */
            if (take < seg) {
                /* Too long to keep: discard it up to its end. A result line that long fails
                 * the operation rather than be read in part. */
                if (starts_object(o->line, o->line_len)) {
                    sodium_memzero(o->result, o->result_len);
                    o->result_len = 0;
                    o->result_state = EXEC_RESULT_TOO_LONG;
                }
                sodium_memzero(o->line, o->line_len);
                o->line_len = 0;
                o->line_overlong = true;
            }
        }
        if (nl == NULL)
            return;
        if (!o->line_overlong)
            stdout_line(o, o->line, o->line_len);
        sodium_memzero(o->line, o->line_len);
        o->line_len = 0;
        o->line_overlong = false;
        data = nl + 1;
        n -= seg + 1;
    }
}

void exec_output_stdout_end(struct exec_output *o)
{
    if (!o->line_overlong && o->line_len > 0)
        stdout_line(o, o->line, o->line_len);
}

void exec_output_stderr(struct exec_output *o, const char *data, size_t n)
{
    if (n >= EXEC_STDERR_MAX) {
        memcpy(o->err_tail, data + n - EXEC_STDERR_MAX, EXEC_STDERR_MAX);
        o->err_len = EXEC_STDERR_MAX;
        return;
    }
    if (o->err_len + n > EXEC_STDERR_MAX) {
        size_t drop = o->err_len + n - EXEC_STDERR_MAX;
        memmove(o->err_tail, o->err_tail + drop, o->err_len - drop);
        o->err_len -= drop;
    }
    memcpy(o->err_tail + o->err_len, data, n);
    o->err_len += n;
}

json_t *exec_output_result(const struct exec_output *o, bool *bad)
{
    *bad = false;
    if (o->result_state != EXEC_RESULT_LINE)
        return NULL;
    json_t *result = json_loadb(o->result, o->result_len, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(result)) {
        json_decref(result);
        *bad = true;
        return NULL;
    }
    return result;
}

void exec_output_stderr_description(const struct exec_output *o, char *out, size_t out_size)
{
    size_t end = o->err_len;
    while (end > 0 && (unsigned char)o->err_tail[end - 1] <= 0x20)
        end--;
    size_t start = end > EXEC_STDERR_SHOWN ? end - EXEC_STDERR_SHOWN : 0;
    if (start > 0 || o->err_len == EXEC_STDERR_MAX) {
        /* Cut: begin with a whole line when one starts in the window, else at a character. */
        const char *nl = memchr(o->err_tail + start, '\n', end - start);
        if (nl != NULL && nl + 1 < o->err_tail + end)
            start = (size_t)(nl + 1 - o->err_tail);
        while (start < end && ((unsigned char)o->err_tail[start] & 0xc0) == 0x80)
            start++;
    }
    clean_text(o->err_tail + start, end - start, out, out_size);
}
