/* The store: a small pool of hiredis connections shared by a process's threads. */
#include "store.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Idle connections kept for reuse; more may be open at once while threads are busy. */
#define STORE_IDLE_MAX 64

struct osbq_store {
    const struct osbq_config *cfg;      /* borrowed configuration */
    struct timeval timeout;             /* connect and command timeout */
    pthread_mutex_t lock;               /* guards idle and idle_count */
    redisContext *idle[STORE_IDLE_MAX]; /* connected contexts ready for reuse */
    size_t idle_count;                  /* entries used in idle */
};

struct osbq_store *osbq_store_new(const struct osbq_config *cfg)
{
    struct osbq_store *store = calloc(1, sizeof *store);
    if (store == NULL)
        return NULL;
    store->cfg = cfg;
    store->timeout.tv_sec = (time_t)(cfg->redis_timeout_ms / 1000);
    store->timeout.tv_usec = (suseconds_t)((cfg->redis_timeout_ms % 1000) * 1000);
    if (pthread_mutex_init(&store->lock, NULL) != 0) {
        free(store);
        return NULL;
    }
    return store;
}

void osbq_store_destroy(struct osbq_store **sp)
{
    struct osbq_store *store = sp ? *sp : NULL;
    if (store == NULL)
        return;
    for (size_t i = 0; i < store->idle_count; i++)
        redisFree(store->idle[i]);
    pthread_mutex_destroy(&store->lock);
    free(store);
    *sp = NULL;
}

/* Runs a command that must answer +OK (AUTH, SELECT) on a fresh connection. */
static int expect_ok(redisContext *c, struct osbq_error *err, const char *what, redisReply *reply)
{
    int rc = 0;
    if (reply == NULL)
        rc = osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "%s: %s", what, c->errstr);
    else if (reply->type == REDIS_REPLY_ERROR)
        rc = osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "%s: %s", what, reply->str);
    freeReplyObject(reply);
    return rc;
}

static redisContext *store_connect(struct osbq_store *store, struct osbq_error *err)
{
    const struct osbq_redis_addr *addr = &store->cfg->redis;
    redisContext *c = redisConnectWithTimeout(addr->host, addr->port, store->timeout);
    if (c == NULL) {
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis: out of memory");
        return NULL;
    }
    if (c->err) {
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis %s:%u: %s", addr->host,
                       (unsigned)addr->port, c->errstr);
        goto out_free;
    }
    if (redisSetTimeout(c, store->timeout) != REDIS_OK) {
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis: cannot set timeout: %s", c->errstr);
        goto out_free;
    }
    if (addr->password != NULL) {
        redisReply *r = addr->username
                            ? redisCommand(c, "AUTH %s %s", addr->username, addr->password)
                            : redisCommand(c, "AUTH %s", addr->password);
        if (expect_ok(c, err, "redis AUTH", r) < 0)
            goto out_free;
    }
    if (addr->db != 0 &&
        expect_ok(c, err, "redis SELECT", redisCommand(c, "SELECT %u", addr->db)) < 0)
        goto out_free;
    return c;
out_free:
    redisFree(c);
    return NULL;
}

/* Takes an idle connection or opens a new one. */
static redisContext *store_acquire(struct osbq_store *store, struct osbq_error *err)
{
    redisContext *c = NULL;
    pthread_mutex_lock(&store->lock);
    if (store->idle_count > 0)
        c = store->idle[--store->idle_count];
    pthread_mutex_unlock(&store->lock);
    return c ? c : store_connect(store, err);
}

/* Returns a connection for reuse, or closes it when it failed (hiredis contexts are not
 * reusable after an error) or the pool is full. */
static void store_release(struct osbq_store *store, redisContext *c)
{
    if (c->err == 0) {
        pthread_mutex_lock(&store->lock);
        if (store->idle_count < STORE_IDLE_MAX) {
            store->idle[store->idle_count++] = c;
            c = NULL;
        }
        pthread_mutex_unlock(&store->lock);
    }
    if (c != NULL)
        redisFree(c);
}

int osbq_store_ping(struct osbq_store *store, struct osbq_error *err)
{
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    redisReply *reply = redisCommand(c, "PING");
    int rc = 0;
    if (reply == NULL)
        rc = osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis PING: %s", c->errstr);
    else if (reply->type == REDIS_REPLY_ERROR)
        rc = osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis PING: %s", reply->str);
    freeReplyObject(reply);
    store_release(store, c);
    return rc;
}

int osbq_store_key(const struct osbq_store *store, char *buf, size_t size, const char *suffix)
{
    int n = snprintf(buf, size, "%s:%s", store->cfg->namespace_, suffix);
    if (n < 0 || (size_t)n >= size)
        return -1;
    return n;
}
