/* The store's figures for operators (osbq-ctl stats and quotas, declared in store_admin.h): the
 * server's INFO, and the quota counters by name and value. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_admin.h"
#include "store_internal.h"

/* The integer after "<name>:" in an INFO reply, or -1. */
static int64_t info_int(const char *info, const char *name)
{
    const char *at = strstr(info, name);
    size_t len = strlen(name);
    if (at == NULL || at[len] != ':')
        return -1;
    return (int64_t)strtoll(at + len + 1, NULL, 10);
}

int osbq_store_stats_get(struct osbq_store *store, struct osbq_store_stats *out,
                         struct osbq_error *err)
{
    char queue[STORE_KEY_MAX];
    redisContext *c = store_key_acquire(store, queue, "queue", err);
    if (c == NULL)
        return -1;
    redisAppendCommand(c, "ZCARD %s", queue);
    redisAppendCommand(c, "ZCOUNT %s -inf %" PRId64, queue, osbq_store_now_ms());
    redisAppendCommand(c, "INFO");
    redisReply *replies[3];
    int rc = store_replies_collect(c, replies, 3, "stats", err);
    store_release(store, c);
    if (rc < 0)
        return -1;
    memset(out, 0, sizeof *out);
    out->unfinished = replies[0]->type == REDIS_REPLY_INTEGER ? replies[0]->integer : -1;
    out->overdue = replies[1]->type == REDIS_REPLY_INTEGER ? replies[1]->integer : -1;
    out->used_memory = -1;
    /* hiredis 0.14 answers INFO as a bulk string. */
    if (replies[2]->type == REDIS_REPLY_STRING) {
        const char *info = replies[2]->str;
        out->used_memory = info_int(info, "\r\nused_memory");
        osbq_store_server_parse(info, &out->server);
    }
    for (size_t i = 0; i < 3; i++)
        freeReplyObject(replies[i]);
    return 0;
}

int osbq_store_quota_used(struct osbq_store *store, const char *name, const char *value,
                          int64_t *used, struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    if (store_quota_key(store, key, sizeof key, name, value) < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "quota key too long");
    redisReply *reply = store_command(store, "GET", err, "GET %s", key);
    int rc = reply != NULL ? 0 : -1;
    if (rc == 0)
        *used = reply->type == REDIS_REPLY_STRING ? strtoll(reply->str, NULL, 10) : 0;
    freeReplyObject(reply);
    return rc;
}

/* A walk over one per-field quota's counters. */
struct quota_walk {
    size_t prefix_len;               /* "<ns>:quota:<name>:": what precedes each value */
    osbq_store_quota_visit_fn visit; /* the caller's */
    void *ctx;
};

static int take_counter(void *ctx, const redisReply *key, const redisReply *got, size_t i,
                        size_t count, struct osbq_error *err)
{
    struct quota_walk *walk = ctx;
    (void)i;
    (void)count;
    if (got->type != REDIS_REPLY_STRING || key->len <= walk->prefix_len)
        return 0;
    if (walk->visit(key->str + walk->prefix_len, strtoll(got->str, NULL, 10), walk->ctx) < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "stopped");
    return 0;
}

int osbq_store_quota_walk(struct osbq_store *store, const char *name,
                          osbq_store_quota_visit_fn visit, void *ctx, struct osbq_error *err)
{
    char key[STORE_KEY_MAX], pattern[STORE_KEY_MAX + 2];
    if (store_id_key(store, key, sizeof key, "quota", name) < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    struct quota_walk walk = {strlen(key) + 1, visit, ctx};
    (void)snprintf(pattern, sizeof pattern, "%s:*", key);
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    uint64_t cursor = 0;
    int rc;
    do
        rc = store_scan_fetch(c, pattern, &cursor, 500, "GET %b", take_counter, &walk, err);
    while (rc == 0 && cursor != 0);
    store_release(store, c);
    return rc;
}
