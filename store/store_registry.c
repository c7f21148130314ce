/* Live processes: the gateway registry (which gateways workers connect to) and the status
 * each gateway and worker publishes for osbq-ctl. */
#include "store_registry.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* Writes the keys of role's status of process id (store_status_keys) into index and entry;
 * returns a connection (caller releases), or NULL with err. */
static redisContext *status_connection(struct osbq_store *store, const char *role, const char *id,
                                       char index[STORE_KEY_MAX], char entry[STORE_KEY_MAX],
                                       struct osbq_error *err)
{
    if (store_status_keys(store, role, id, index, entry, err) < 0)
        return NULL;
    return store_acquire(store, err);
}

/* Appends on c the two commands that read the sorted set key of members scored by their expiry:
 * the expired ones removed, then the live ones listed (pruning and listing in one round trip). */
static void append_live_members(redisContext *c, const char *key)
{
    int64_t now = osbq_store_now_ms();
    redisAppendCommand(c, "ZREMRANGEBYSCORE %s -inf (%" PRId64, key, now);
    redisAppendCommand(c, "ZRANGEBYSCORE %s %" PRId64 " +inf", key, now);
}

/* Adds (live until now + ttl_ms) or removes an endpoint of the gateway registry: one command. */
static int gateway_entry(struct osbq_store *store, const char *endpoint, bool add, int64_t ttl_ms,
                         struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    redisContext *c = store_key_acquire(store, key, "gateways", err);
    if (c == NULL)
        return -1;
    redisReply *reply =
        add ? redisCommand(c, "ZADD %s %" PRId64 " %s", key, osbq_store_now_ms() + ttl_ms, endpoint)
            : redisCommand(c, "ZREM %s %s", key, endpoint);
    int rc = store_reply_failed(c, reply, add ? "ZADD" : "ZREM", err);
    freeReplyObject(reply);
    store_release(store, c);
    return rc;
}

/* Collects the replies of the two commands appended on c, frees them and releases c. */
static int pair_finish(struct osbq_store *store, redisContext *c, struct osbq_error *err)
{
    redisReply *replies[2];
    int rc = store_replies_collect(c, replies, 2, "status", err);
    if (rc == 0)
        for (size_t i = 0; i < 2; i++)
            freeReplyObject(replies[i]);
    store_release(store, c);
    return rc;
}

int osbq_store_gateway_register(struct osbq_store *store, const char *endpoint, int64_t ttl_ms,
                                struct osbq_error *err)
{
    return gateway_entry(store, endpoint, true, ttl_ms, err);
}

int osbq_store_gateway_unregister(struct osbq_store *store, const char *endpoint,
                                  struct osbq_error *err)
{
    return gateway_entry(store, endpoint, false, 0, err);
}

int osbq_store_gateway_list(struct osbq_store *store, char ***out, size_t *count,
                            struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    redisContext *c = store_key_acquire(store, key, "gateways", err);
    if (c == NULL)
        return -1;
    append_live_members(c, key);
    redisReply *pruned = NULL, *listed = NULL;
    int rc = -1;
    if (redisGetReply(c, (void **)&pruned) != REDIS_OK ||
        redisGetReply(c, (void **)&listed) != REDIS_OK) {
        (void)store_io_error(c, "gateways", err);
        goto out;
    }
    if (store_reply_failed(c, listed, "ZRANGEBYSCORE", err) < 0)
        goto out;
    if (listed->type != REDIS_REPLY_ARRAY) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "ZRANGEBYSCORE: unexpected reply");
        goto out;
    }
    char **list = calloc(listed->elements + 1, sizeof *list);
    if (list == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < listed->elements; i++) {
        list[i] = store_element_dup(listed, i);
        if (list[i] == NULL) {
            osbq_store_strings_free(list);
            osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
            goto out;
        }
    }
    *out = list;
    *count = listed->elements;
    rc = 0;
out:
    freeReplyObject(pruned);
    freeReplyObject(listed);
    store_release(store, c);
    return rc;
}

void osbq_store_strings_free(char **strings)
{
    if (strings == NULL)
        return;
    for (char **p = strings; *p != NULL; p++)
        free(*p);
    free(strings);
}

int osbq_store_status_publish(struct osbq_store *store, const char *role, const char *id,
                              const char *status_json, int64_t ttl_ms, struct osbq_error *err)
{
    char index[STORE_KEY_MAX], entry[STORE_KEY_MAX];
    redisContext *c = status_connection(store, role, id, index, entry, err);
    if (c == NULL)
        return -1;
    redisAppendCommand(c, "SET %s %s PX %" PRId64, entry, status_json, ttl_ms);
    redisAppendCommand(c, "ZADD %s %" PRId64 " %s", index, osbq_store_now_ms() + ttl_ms, id);
    return pair_finish(store, c, err);
}

int osbq_store_status_remove(struct osbq_store *store, const char *role, const char *id,
                             struct osbq_error *err)
{
    char index[STORE_KEY_MAX], entry[STORE_KEY_MAX];
    redisContext *c = status_connection(store, role, id, index, entry, err);
    if (c == NULL)
        return -1;
    redisAppendCommand(c, "DEL %s", entry);
    redisAppendCommand(c, "ZREM %s %s", index, id);
    return pair_finish(store, c, err);
}

int osbq_store_status_list(struct osbq_store *store, const char *role, char ***out, size_t *count,
                           struct osbq_error *err)
{
    char index[STORE_KEY_MAX], entry[STORE_KEY_MAX];
    redisContext *c = status_connection(store, role, NULL, index, entry, err);
    if (c == NULL)
        return -1;
    append_live_members(c, index);
    redisReply *listed[2];
    char **list = NULL;
    size_t n = 0;
    int rc = store_replies_collect(c, listed, 2, "status", err);
    if (rc < 0)
        goto out_release;
    const redisReply *ids = listed[1];
    list = calloc(ids->elements + 1, sizeof *list);
    if (list == NULL) {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out;
    }
    char kind[32];
    (void)snprintf(kind, sizeof kind, "status:%s", role);
    for (size_t i = 0; i < ids->elements; i++) {
        const redisReply *id = ids->element[i];
        if (id->type != REDIS_REPLY_STRING ||
            store_id_key(store, entry, sizeof entry, kind, id->str) < 0)
            continue;
        redisAppendCommand(c, "GET %s", entry);
        n++;
    }
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *value = NULL;
        if (redisGetReply(c, (void **)&value) != REDIS_OK) {
            rc = store_io_error(c, "status", err);
            break;
        }
        /* An entry that expired between the two steps is skipped. */
        if (value->type == REDIS_REPLY_STRING && rc == 0) {
            list[found] = strndup(value->str, value->len);
            if (list[found] == NULL)
                rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
            else
                found++;
        }
        freeReplyObject(value);
    }
    if (rc == 0) {
        *out = list;
        *count = found;
        list = NULL;
    }
out:
    osbq_store_strings_free(list);
    freeReplyObject(listed[0]);
    freeReplyObject(listed[1]);
out_release:
    store_release(store, c);
    return rc;
}
