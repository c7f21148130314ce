/* Redis's failures in words an operator can act on, without I/O: a connection's failure (from
 * hiredis's context or an errno), an error reply, and the refusals that only a configuration
 * change cures. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "store_internal.h"

/* Whether hiredis's error text is strerror's text of errnum. */
static bool says(const char *errstr, int errnum)
{
    return strstr(errstr, strerror(errnum)) != NULL;
}

static void failure_words(const redisContext *c, int type, const char *errstr, char *out,
                          size_t size)
{
    const char *host = c->tcp.host != NULL ? c->tcp.host : "redis";
    int port = c->tcp.port;
    long timeout_ms =
        c->timeout != NULL ? (long)c->timeout->tv_sec * 1000 + c->timeout->tv_usec / 1000 : 0;
    if (type == REDIS_ERR_EOF)
        (void)snprintf(out, size, "%s:%d closed the connection", host, port);
    else if (says(errstr, ETIMEDOUT) || says(errstr, EAGAIN) || says(errstr, EINPROGRESS))
        (void)snprintf(out, size, "%s:%d: timed out after %ld ms (OSBQ_REDIS_TIMEOUT_MS)", host,
                       port, timeout_ms);
    else if (says(errstr, ECONNREFUSED))
        (void)snprintf(out, size,
                       "connection refused by %s:%d (is Redis running and listening there?)", host,
                       port);
    else if (says(errstr, ECONNRESET) || says(errstr, EPIPE))
        (void)snprintf(out, size, "%s:%d dropped the connection", host, port);
    else if (says(errstr, EHOSTUNREACH) || says(errstr, ENETUNREACH))
        (void)snprintf(out, size, "no network route to %s:%d", host, port);
    else if (type == REDIS_ERR_OTHER && strstr(errstr, "known") != NULL)
        (void)snprintf(out, size, "cannot resolve the host name %s (%s)", host, errstr);
    else
        (void)snprintf(out, size, "%s:%d: %s", host, port, errstr);
}

void store_io_words(const redisContext *c, char *out, size_t size)
{
    failure_words(c, c->err, c->errstr, out, size);
}

int store_io_error(const redisContext *c, const char *what, struct osbq_error *err)
{
    char words[256];
    store_io_words(c, words, sizeof words);
    return osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis %s: %s", what, words);
}

void store_errno_words(const redisContext *c, int errnum, char *out, size_t size)
{
    failure_words(c, REDIS_ERR_IO, strerror(errnum), out, size);
}

/* What an operator must change for each refusal that no retry cures. */
static const struct {
    const char *reply; /* a word of Redis's error reply */
    const char *fix;
} misconfigurations[] = {
    {"WRONGPASS", "Redis refuses the user name or password of OSBQ_REDIS_URL"},
    {"invalid password", "Redis refuses the password of OSBQ_REDIS_URL"},
    {"invalid username-password", "Redis refuses the user name or password of OSBQ_REDIS_URL"},
    {"without any password configured",
     "OSBQ_REDIS_URL gives a password but Redis has none set (drop it from the URL)"},
    {"no password is set",
     "OSBQ_REDIS_URL gives a password but Redis has none set (drop it from the URL)"},
    {"NOAUTH", "Redis requires a password and OSBQ_REDIS_URL gives none"},
    {"DB index is out of range",
     "Redis has no such database: OSBQ_REDIS_URL's database number must be below the "
     "server's `databases` setting"},
    {"invalid DB index", "OSBQ_REDIS_URL's database number is not one Redis accepts"},
    {"NOPERM", "Redis's ACL does not allow OSBQ_REDIS_URL's user this command or key"},
};

int store_error_reply(const char *what, const char *reply, struct osbq_error *err)
{
    for (size_t i = 0; i < sizeof misconfigurations / sizeof misconfigurations[0]; i++) {
        if (strstr(reply, misconfigurations[i].reply) != NULL)
            return osbq_error_set(err, OSBQ_ERR_MISCONFIGURED, "redis %s: misconfigured: %s (%s)",
                                  what, misconfigurations[i].fix, reply);
    }
    return osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis %s: %s", what, reply);
}

bool store_reply_from_replica(const redisReply *reply)
{
    return reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "READONLY", 8) == 0;
}
