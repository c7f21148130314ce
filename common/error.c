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
    char prefix[OSBQ_ERROR_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char joined[OSBQ_ERROR_TEXT_MAX];
    (void)snprintf(joined, sizeof joined, "%s: %s", prefix, err->text);
    memcpy(err->text, joined, sizeof err->text);
    return -1;
}

const char *osbq_err_name(enum osbq_err code)
{
    static const char *const names[OSBQ_ERR_COUNT_] = {
        [OSBQ_OK] = "OK",
        [OSBQ_ERR_BAD_REQUEST] = "BAD_REQUEST",
        [OSBQ_ERR_UNAUTHORIZED] = "UNAUTHORIZED",
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
    };
    if ((unsigned)code >= OSBQ_ERR_COUNT_ || names[code] == NULL)
        return "UNKNOWN";
    return names[code];
}
