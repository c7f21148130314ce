/* The one error type of osbq: a domain code plus a short human-readable text. */
#ifndef OSBQ_ERROR_H
#define OSBQ_ERROR_H

/* Domain error codes. gateway/reply.c maps each one to an HTTP status and an OSB `error` word. */
enum osbq_err {
    OSBQ_OK = 0,
    OSBQ_ERR_BAD_REQUEST,      /* malformed or missing mandatory data: 400 */
    OSBQ_ERR_UNAUTHORIZED,     /* authentication failed: 401 */
    OSBQ_ERR_FORBIDDEN,        /* a broker policy (OSBQ_POLICY) refuses the request: 403 */
    OSBQ_ERR_NOT_FOUND,        /* route, instance or binding not found: 404 */
    OSBQ_ERR_METHOD,           /* known route, wrong method: 405 */
    OSBQ_ERR_CONFLICT,         /* exists with different attributes: 409 */
    OSBQ_ERR_GONE,             /* deprovision or unbind of an unknown id: 410 */
    OSBQ_ERR_API_VERSION,      /* missing, malformed or unsupported X-Broker-API-Version: 412 */
    OSBQ_ERR_TOO_LARGE,        /* request body over the limit: 413 */
    OSBQ_ERR_UNPROCESSABLE,    /* well-formed but not acceptable: 422 without an error word */
    OSBQ_ERR_ASYNC_REQUIRED,   /* 422 AsyncRequired */
    OSBQ_ERR_CONCURRENCY,      /* 422 ConcurrencyError */
    OSBQ_ERR_MAINTENANCE_INFO, /* 422 MaintenanceInfoConflict */
    OSBQ_ERR_REQUIRES_APP,     /* 422 RequiresApp */
    OSBQ_ERR_INTERNAL,         /* a bug or an impossible state: 500 */
    OSBQ_ERR_BACKEND,          /* the backend failed: 502 */
    OSBQ_ERR_UNAVAILABLE,      /* a dependency (Redis, the bus) is unreachable: 503 */
    OSBQ_ERR_TIMEOUT,          /* no answer in time: 504 */
    OSBQ_ERR_INVALID,       /* invalid configuration, catalog or encoded data (not an HTTP error) */
    OSBQ_ERR_MISCONFIGURED, /* Redis answers but refuses the configured password, database or
                             * ACL user: 503, and it lasts until the configuration changes */
    OSBQ_ERR_COUNT_         /* number of codes; not a code */
};

#define OSBQ_ERROR_TEXT_MAX 512

/* Filled by a failing call when the caller passed one; lives on the caller's stack. */
struct osbq_error {
    enum osbq_err code;             /* what kind of failure */
    char text[OSBQ_ERROR_TEXT_MAX]; /* one line, no trailing newline; empty when unset */
};

/* Sets *err (when err is not NULL) and returns -1, so callers can `return osbq_error_set(...)`. */
int osbq_error_set(struct osbq_error *err, enum osbq_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes err->text with "prefix: " (when err is not NULL) and returns -1. */
int osbq_error_prefix(struct osbq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The enum's name without the prefix, for logs ("CONCURRENCY"); never NULL. */
const char *osbq_err_name(enum osbq_err code);

#endif
