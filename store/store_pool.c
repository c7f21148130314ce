/* The store's connections: a small pool of hiredis connections shared by a process's threads,
 * the fail-fast state after Redis failed, the connection dropped when its server turned replica
 * (the Sentinels are asked again at the next connect, store_sentinel.c), the scripts loaded on
 * a connection, and PING. */
#include "store.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "owned.h"
#include "store_internal.h"

/* After a failure, calls fail at once for this long, then one caller probes Redis again: while
 * Redis is away, requests get their 503 at once instead of each waiting for a timeout. */
#define STORE_DOWN_MS 250

void store_mark_down(struct osbq_store *store, const struct osbq_error *why)
{
    redisContext *stale[STORE_IDLE_MAX];
    size_t n;
    atomic_fetch_add(&store->errors, 1);
    pthread_mutex_lock(&store->lock);
    if (why != NULL && why->code != OSBQ_OK)
        store->failure = *why;
    else
        osbq_error_set(&store->failure, OSBQ_ERR_UNAVAILABLE, "redis unavailable");
    store->down_until_ms = store_monotonic_ms() + STORE_DOWN_MS;
    store->probing = false;
    n = store->idle_count;
    memcpy(stale, store->idle, n * sizeof stale[0]);
    store->idle_count = 0;
    pthread_mutex_unlock(&store->lock);
    for (size_t i = 0; i < n; i++)
        redisFree(stale[i]);
}

struct osbq_store *osbq_store_new(const struct osbq_config *cfg)
{
    struct osbq_store *store = calloc(1, sizeof *store);
    if (store == NULL)
        return NULL;
    store->cfg = cfg;
    atomic_init(&store->pipeline, NULL);
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
    OSBQ_OWNED_OR_RETURN(struct osbq_store, store, sp);
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
    if (reply == NULL) {
        rc = store_io_error(c, what, err);
    } else if (reply->type == REDIS_REPLY_ERROR) {
        rc = store_error_reply(what, reply->str, err);
    }
    freeReplyObject(reply);
    return rc;
}

/* With Sentinels: logs when the primary is not the one connected to last time. */
static void note_primary(struct osbq_store *store, const char *host, uint16_t port)
{
    char now[sizeof store->primary];
    (void)snprintf(now, sizeof now, "%s:%u", host, (unsigned)port);
    pthread_mutex_lock(&store->lock);
    bool changed = strcmp(store->primary, now) != 0;
    bool first = store->primary[0] == '\0';
    if (changed)
        memcpy(store->primary, now, sizeof now);
    pthread_mutex_unlock(&store->lock);
    if (changed)
        log_info("redis primary %s %s (from Sentinel)", first ? "is" : "is now", now);
}

redisContext *store_connect(struct osbq_store *store, struct osbq_error *err)
{
    const struct osbq_redis_addr *addr = &store->cfg->redis;
    const char *host = addr->host;
    uint16_t port = addr->port;
    char primary[256];
    bool sentinel = store->cfg->sentinel_count > 0;
    if (sentinel) {
        if (store_sentinel_primary(store, primary, sizeof primary, &port, err) < 0)
            return NULL;
        host = primary;
    }
    redisContext *c = redisConnectWithTimeout(host, port, store->timeout);
    if (c == NULL) {
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis: out of memory");
        return NULL;
    }
    if (c->err) {
        char words[256];
        store_io_words(c, words, sizeof words);
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis: %s", words);
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
        if (expect_ok(c, err, "AUTH", r) < 0)
            goto out_free;
    }
    char select[24];
    (void)snprintf(select, sizeof select, "SELECT %u", addr->db);
    if (addr->db != 0 && expect_ok(c, err, select, redisCommand(c, "SELECT %u", addr->db)) < 0)
        goto out_free;
    if (sentinel) {
        if (store_check_primary(c, err) < 0)
            goto out_free;
        note_primary(store, host, port);
    }
    return c;
out_free:
    redisFree(c);
    return NULL;
}

redisContext *store_acquire(struct osbq_store *store, struct osbq_error *err)
{
    redisContext *c = NULL;
    bool probe = false;
    pthread_mutex_lock(&store->lock);
    if (store->down_until_ms != 0) {
        if (store->probing || store_monotonic_ms() < store->down_until_ms) {
            struct osbq_error why = store->failure;
            pthread_mutex_unlock(&store->lock);
            osbq_error_set(err, why.code, "%s (it failed just now)", why.text);
            return NULL;
        }
        store->probing = probe = true;
    }
    if (store->idle_count > 0)
        c = store->idle[--store->idle_count];
    pthread_mutex_unlock(&store->lock);
    if (c == NULL)
        c = store_connect(store, err);
    if (c == NULL)
        store_mark_down(store, err);
    else if (probe) {
        /* The probe connected: the next failure, if any, marks Redis down again. */
        pthread_mutex_lock(&store->lock);
        store->down_until_ms = 0;
        store->probing = false;
        pthread_mutex_unlock(&store->lock);
    }
    return c;
}

redisContext *store_key_acquire(struct osbq_store *store, char key[STORE_KEY_MAX],
                                const char *suffix, struct osbq_error *err)
{
    if (store_key(store, key, STORE_KEY_MAX, suffix) < 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
        return NULL;
    }
    return store_acquire(store, err);
}

void store_release(struct osbq_store *store, redisContext *c)
{
    /* I/O errors and timeouts mean Redis is away; a protocol error does not. */
    if (c->err == REDIS_ERR_IO || c->err == REDIS_ERR_EOF) {
        struct osbq_error why = {.code = OSBQ_ERR_UNAVAILABLE};
        char words[256];
        store_io_words(c, words, sizeof words);
        (void)snprintf(why.text, sizeof why.text, "redis: %s", words);
        store_mark_down(store, &why);
    }
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

/* ---- a reply on a connection ---- */

void store_drop_replica(redisContext *c)
{
    if (c->err == 0) {
        c->err = REDIS_ERR_EOF;
        (void)snprintf(c->errstr, sizeof c->errstr, "the server is a replica now");
    }
}

int store_reply_failed(redisContext *c, redisReply *reply, const char *what, struct osbq_error *err)
{
    if (reply == NULL)
        return store_io_error(c, what, err);
    if (reply->type == REDIS_REPLY_ERROR) {
        if (store_reply_from_replica(reply))
            store_drop_replica(c);
        return store_error_reply(what, reply->str, err);
    }
    return 0;
}

/* ---- the scripts a connection's Redis knows ---- */

int store_script_load(struct osbq_store *store, redisContext *c, enum store_script script,
                      char sha[41], struct osbq_error *err)
{
    redisReply *reply = redisCommand(c, "SCRIPT LOAD %s", store_script_texts[script].text);
    if (store_reply_failed(c, reply, "SCRIPT LOAD", err) < 0) {
        freeReplyObject(reply);
        return -1;
    }
    if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
        freeReplyObject(reply);
        return osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis SCRIPT LOAD: odd reply");
    }
    memcpy(sha, reply->str, 40);
    sha[40] = '\0';
    freeReplyObject(reply);
    pthread_mutex_lock(&store->lock);
    memcpy(store->script_sha[script], sha, 41);
    pthread_mutex_unlock(&store->lock);
    return 0;
}

int store_script_sha(struct osbq_store *store, redisContext *c, enum store_script script,
                     char sha[41], struct osbq_error *err)
{
    pthread_mutex_lock(&store->lock);
    memcpy(sha, store->script_sha[script], 41);
    pthread_mutex_unlock(&store->lock);
    return sha[0] != '\0' ? 0 : store_script_load(store, c, script, sha, err);
}

/* c's reply, once c is given back: NULL with err when it is none or an error. */
static redisReply *command_done(struct osbq_store *store, redisContext *c, redisReply *reply,
                                const char *what, struct osbq_error *err)
{
    int rc = store_reply_failed(c, reply, what, err);
    store_release(store, c);
    if (rc < 0) {
        freeReplyObject(reply);
        return NULL;
    }
    return reply;
}

redisReply *store_command(struct osbq_store *store, const char *what, struct osbq_error *err,
                          const char *format, ...)
{
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return NULL;
    va_list ap;
    va_start(ap, format);
    redisReply *reply = redisvCommand(c, format, ap);
    va_end(ap);
    return command_done(store, c, reply, what, err);
}

redisReply *store_command_argv(struct osbq_store *store, int argc, const char **argv,
                               struct osbq_error *err)
{
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return NULL;
    return command_done(store, c, redisCommandArgv(c, argc, argv, NULL), argv[0], err);
}

/* ---- PING, blocking or in two halves ---- */

int osbq_store_ping(struct osbq_store *store, struct osbq_error *err)
{
    redisReply *reply = store_command(store, "PING", err, "PING");
    int rc = reply != NULL ? 0 : -1;
    freeReplyObject(reply);
    return rc;
}

struct osbq_store_call *osbq_store_ping_call(struct osbq_error *err)
{
    const char *argv[] = {"PING"};
    return store_command_new(1, argv, NULL, err);
}

int osbq_store_ping_result(struct osbq_store_call *call, struct osbq_error *err)
{
    redisReply *reply = store_call_take_reply(call, err);
    if (reply == NULL)
        return -1;
    freeReplyObject(reply);
    return 0;
}

int64_t osbq_store_now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t osbq_store_error_count(const struct osbq_store *store)
{
    return atomic_load(&store->errors);
}
