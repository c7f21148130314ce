/* The one error type of osbq: setting, prefixing and naming errors. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int osbq_error_set(struct osbq_error *err, enum osbq_err code, const char *fmt, ...)
{
    if (err == NULL)
        return -1;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
    return -1;
}

int osbq_error_prefix(struct osbq_error *err, const char *fmt, ...)
{
    if (err == NULL)
        return -1;
    char joined[OSBQ_ERROR_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(joined, sizeof joined, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    /* Truncation of an over-long message is fine: it is one line for a human. */
    size_t used = strlen(joined);
    size_t room = sizeof joined - used;
    if (room > 2) {
        memcpy(joined + used, ": ", 2);
        used += 2;
        size_t text_len = strnlen(err->text, sizeof err->text);
        size_t copy = text_len < sizeof joined - used - 1 ? text_len : sizeof joined - used - 1;
        memcpy(joined + used, err->text, copy);
        joined[used + copy] = '\0';
    }
    memcpy(err->text, joined, sizeof err->text);
    return -1;
}

const char *osbq_err_name(enum osbq_err code)
{
    static const char *const names[OSBQ_ERR_COUNT_] = {
        [OSBQ_OK] = "OK",
        [OSBQ_ERR_BAD_REQUEST] = "BAD_REQUEST",
        [OSBQ_ERR_UNAUTHORIZED] = "UNAUTHORIZED",
        [OSBQ_ERR_FORBIDDEN] = "FORBIDDEN",
        [OSBQ_ERR_NOT_FOUND] = "NOT_FOUND",
        [OSBQ_ERR_METHOD] = "METHOD",
        [OSBQ_ERR_CONFLICT] = "CONFLICT",
        [OSBQ_ERR_GONE] = "GONE",
        [OSBQ_ERR_API_VERSION] = "API_VERSION",
        [OSBQ_ERR_TOO_LARGE] = "TOO_LARGE",
        [OSBQ_ERR_UNPROCESSABLE] = "UNPROCESSABLE",
        [OSBQ_ERR_ASYNC_REQUIRED] = "ASYNC_REQUIRED",
        [OSBQ_ERR_CONCURRENCY] = "CONCURRENCY",
        [OSBQ_ERR_MAINTENANCE_INFO] = "MAINTENANCE_INFO",
        [OSBQ_ERR_REQUIRES_APP] = "REQUIRES_APP",
        [OSBQ_ERR_INTERNAL] = "INTERNAL",
        [OSBQ_ERR_BACKEND] = "BACKEND",
        [OSBQ_ERR_UNAVAILABLE] = "UNAVAILABLE",
        [OSBQ_ERR_TIMEOUT] = "TIMEOUT",
        [OSBQ_ERR_INVALID] = "INVALID",
        [OSBQ_ERR_MISCONFIGURED] = "MISCONFIGURED",
    };
    if ((unsigned)code >= OSBQ_ERR_COUNT_ || names[code] == NULL)
        return "UNKNOWN";
    return names[code];
}
