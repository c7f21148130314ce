/* Finding the Redis primary through Sentinel (OSBQ_REDIS_SENTINELS): asked at every new
 * connection, so a failover needs no restart, only the reconnect a failed call causes anyway. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_internal.h"

/* Asks one Sentinel; 0 with host and port, -1 with err. */
static int ask_sentinel(const struct osbq_listen_addr *sentinel, const char *master_name,
                        struct timeval timeout, char *host, size_t size, uint16_t *port,
                        struct osbq_error *err)
{
    redisContext *c = redisConnectWithTimeout(sentinel->host, sentinel->port, timeout);
    if (c == NULL)
        return osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "sentinel: out of memory");
    int rc = -1;
    redisReply *r = NULL;
    char words[256];
    if (c->err) {
        store_io_words(c, words, sizeof words);
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "%s", words);
        goto out;
    }
    (void)redisSetTimeout(c, timeout);
    r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", master_name);
    if (r == NULL) {
        store_io_words(c, words, sizeof words);
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "%s", words);
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               r->element[1]->type == REDIS_REPLY_STRING) {
        long p = strtol(r->element[1]->str, NULL, 10);
        if (p <= 0 || p > 65535 || r->element[0]->len >= size) {
            osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "unusable address in its answer");
        } else {
            (void)snprintf(host, size, "%s", r->element[0]->str);
            *port = (uint16_t)p;
            rc = 0;
        }
    } else if (r->type == REDIS_REPLY_ERROR) {
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "%s", r->str);
    } else {
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "it does not know the master \"%s\"",
                       master_name);
    }
out:
    freeReplyObject(r);
    redisFree(c);
    return rc;
}

int store_sentinel_primary(struct osbq_store *store, char *host, size_t size, uint16_t *port,
                           struct osbq_error *err)
{
    const struct osbq_config *cfg = store->cfg;
    char last[OSBQ_ERROR_TEXT_MAX + 300] = "";
    for (size_t i = 0; i < cfg->sentinel_count; i++) {
        const struct osbq_listen_addr *s = &cfg->sentinels[i];
        struct osbq_error one = {0};
        if (ask_sentinel(s, cfg->redis_master_name, store->timeout, host, size, port, &one) == 0)
            return 0;
        (void)snprintf(last, sizeof last, "sentinel %s:%u: %s", s->host, (unsigned)s->port,
                       one.text);
        log_debug("%s", last);
    }
    return osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "no Sentinel named the primary (last: %s)",
                          last);
}

int store_check_primary(redisContext *c, struct osbq_error *err)
{
    redisReply *r = redisCommand(c, "ROLE");
    int rc = -1;
    if (r == NULL) {
        (void)store_io_error(c, "ROLE", err);
    } else if (r->type == REDIS_REPLY_ERROR) {
        store_error_reply("ROLE", r->str, err);
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 ||
               r->element[0]->type != REDIS_REPLY_STRING ||
               strcmp(r->element[0]->str, "master") != 0) {
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE,
                       "the server the Sentinels named is not a primary (yet)");
    } else {
        rc = 0;
    }
    freeReplyObject(r);
    return rc;
}
