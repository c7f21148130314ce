/* The state of one compilation: the schema path it is at, and the failure it records
 * ("<path>: <what>"). Every file of the compiler reports through it; it calls none of them. */
#include <stdarg.h>
#include <stdio.h>

#include "schema_compiler.h"

int js_fail(struct compiler *c, enum osbq_schema_status status, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    c->status = status;
    if (c->msg_size > 0) {
        if (c->path_len > 0)
            (void)snprintf(c->msg, c->msg_size, "%s: %s", c->path, what);
        else
            (void)snprintf(c->msg, c->msg_size, "%s", what);
    }
    return -1;
}

int js_no_memory(struct compiler *c)
{
    return js_fail(c, OSBQ_SCHEMA_NO_MEMORY, "out of memory");
}

/* Appends separator and segment to the path, cut short when it is full (it only names a place
 * in a message); returns the length before. */
static size_t path_append(struct compiler *c, const char *separator, const char *segment)
{
    size_t saved = c->path_len;
    size_t room = sizeof c->path - c->path_len;
    int n = snprintf(c->path + c->path_len, room, "%s%s", separator, segment);
    if (n > 0)
        c->path_len += (size_t)n < room ? (size_t)n : room - 1;
    return saved;
}

size_t js_path_push(struct compiler *c, const char *segment)
{
    return path_append(c, c->path_len > 0 ? "." : "", segment);
}

size_t js_path_index(struct compiler *c, size_t i)
{
    char index[32];
    (void)snprintf(index, sizeof index, "[%zu]", i);
    return path_append(c, "", index);
}

void js_path_pop(struct compiler *c, size_t saved)
{
    c->path_len = saved;
    c->path[saved] = '\0';
}

void js_address_key(const json_t *v, char out[32])
{
    (void)snprintf(out, 32, "%p", (const void *)v);
}
