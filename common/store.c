/* The store: a small pool of hiredis connections shared by a process's threads. */
#include "store.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "store_internal.h"
#include "store_scripts.h"

/* After a failure, calls fail at once for this long, then one caller probes Redis again: while
 * Redis is away, requests get their 503 at once instead of each waiting for a timeout. */
#define STORE_DOWN_MS 250

int64_t store_monotonic_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Idle connections are dropped (they may be dead too) and callers fail fast for
 * STORE_DOWN_MS. */
void store_mark_down(struct osbq_store *store)
{
    redisContext *stale[STORE_IDLE_MAX];
    size_t n;
    atomic_fetch_add(&store->errors, 1);
    pthread_mutex_lock(&store->lock);
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

static redisContext *store_connect(struct osbq_store *store, struct osbq_error *err)
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
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis %s:%u: %s", host, (unsigned)port,
                       c->errstr);
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

/* Takes an idle connection or opens a new one. While Redis is marked down, fails at once unless
 * this caller is the one probe. */
redisContext *store_acquire(struct osbq_store *store, struct osbq_error *err)
{
    redisContext *c = NULL;
    bool probe = false;
    pthread_mutex_lock(&store->lock);
    if (store->down_until_ms != 0) {
        if (store->probing || store_monotonic_ms() < store->down_until_ms) {
            pthread_mutex_unlock(&store->lock);
            osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis unavailable (it failed just now)");
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
        store_mark_down(store);
    else if (probe) {
        /* The probe connected: the next failure, if any, marks Redis down again. */
        pthread_mutex_lock(&store->lock);
        store->down_until_ms = 0;
        store->probing = false;
        pthread_mutex_unlock(&store->lock);
    }
    return c;
}

/* Returns a connection for reuse, or closes it when it failed (hiredis contexts are not
 * reusable after an error) or the pool is full. */
void store_release(struct osbq_store *store, redisContext *c)
{
    /* I/O errors and timeouts mean Redis is away; a protocol error does not. */
    if (c->err == REDIS_ERR_IO || c->err == REDIS_ERR_EOF)
        store_mark_down(store);
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

static redisReply *call_take_reply(struct osbq_store_call *call, struct osbq_error *err);

struct osbq_store_call *osbq_store_ping_call(struct osbq_error *err)
{
    const char *argv[] = {"PING"};
    return store_command_new(1, argv, NULL, err);
}

int osbq_store_ping_result(struct osbq_store_call *call, struct osbq_error *err)
{
    redisReply *reply = call_take_reply(call, err);
    if (reply == NULL)
        return -1;
    freeReplyObject(reply);
    return 0;
}

int osbq_store_key(const struct osbq_store *store, char *buf, size_t size, const char *suffix)
{
    int n = snprintf(buf, size, "%s:%s", store->cfg->namespace_, suffix);
    if (n < 0 || (size_t)n >= size)
        return -1;
    return n;
}

/* Appends id to buf at *used, percent-encoded outside A-Za-z0-9-._~, so an id can never hold
 * the ':' separator or a glob character. Returns 0, or -1 when it does not fit. */
static int append_id(char *buf, size_t size, size_t *used, const char *id)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t at = *used;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        if (at + (plain ? 1 : 3) >= size)
            return -1;
        if (plain) {
            buf[at++] = (char)*p;
        } else {
            buf[at++] = '%';
            buf[at++] = hex[*p >> 4];
            buf[at++] = hex[*p & 15];
        }
    }
    buf[at] = '\0';
    *used = at;
    return 0;
}

/* Writes "<ns>:<kind>:<id>" with id encoded by append_id. Returns 0, or -1. */
int store_id_key(const struct osbq_store *store, char *buf, size_t size, const char *kind,
                 const char *id)
{
    int n = snprintf(buf, size, "%s:%s:", store->cfg->namespace_, kind);
    if (n < 0 || (size_t)n >= size)
        return -1;
    size_t used = (size_t)n;
    return append_id(buf, size, &used, id);
}

/* Writes "<ns>:binding:<instance id>:<binding id>", both ids encoded. Returns 0, or -1. */
static int binding_key(const struct osbq_store *store, char *buf, size_t size,
                       const char *instance_id, const char *binding_id)
{
    if (store_id_key(store, buf, size, "binding", instance_id) < 0)
        return -1;
    size_t used = strlen(buf);
    if (used + 2 >= size)
        return -1;
    buf[used++] = ':';
    return append_id(buf, size, &used, binding_id);
}

/* Writes the counter key of quota name for value (NULL: the quota's one counter). */
static int quota_key(const struct osbq_store *store, char *buf, size_t size, const char *name,
                     const char *value)
{
    if (value == NULL)
        return store_id_key(store, buf, size, "quota", name);
    if (store_id_key(store, buf, size, "quota", name) < 0)
        return -1;
    size_t used = strlen(buf);
    if (used + 2 >= size)
        return -1;
    buf[used++] = ':';
    return append_id(buf, size, &used, value);
}

char *osbq_store_quota_spec(const struct osbq_store *store, const struct osbq_policy_use *uses,
                            size_t count)
{
    size_t cap = 1 + count * (STORE_KEY_MAX + 24), len = 0;
    char *spec = malloc(cap);
    if (spec == NULL)
        return NULL;
    spec[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        char key[STORE_KEY_MAX];
        if (quota_key(store, key, sizeof key, uses[i].name, uses[i].value) < 0) {
            free(spec);
            return NULL;
        }
        int n =
            snprintf(spec + len, cap - len, "%s%" PRId64 " %s", i ? "\n" : "", uses[i].limit, key);
        if (n < 0 || (size_t)n >= cap - len) {
            free(spec);
            return NULL;
        }
        len += (size_t)n;
    }
    return spec;
}

int osbq_store_quota_used(struct osbq_store *store, const char *name, const char *value,
                          int64_t *used, struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    if (quota_key(store, key, sizeof key, name, value) < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "quota key too long");
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    redisReply *reply = redisCommand(c, "GET %s", key);
    int rc = store_reply_failed(c, reply, "GET", err);
    if (rc == 0)
        *used = reply->type == REDIS_REPLY_STRING ? strtoll(reply->str, NULL, 10) : 0;
    freeReplyObject(reply);
    store_release(store, c);
    return rc;
}

int64_t osbq_store_now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* READONLY: a primary demoted to a replica by a failover. Its connection must go, so the next
 * one asks the Sentinels again. */
static bool from_replica(const redisReply *reply)
{
    return reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "READONLY", 8) == 0;
}

/* Marks c failed, so store_release drops it and marks Redis down. */
static void drop_replica_connection(redisContext *c)
{
    if (c->err == 0) {
        c->err = REDIS_ERR_EOF;
        (void)snprintf(c->errstr, sizeof c->errstr, "the server is a replica now");
    }
}

int store_reply_failed(redisContext *c, redisReply *reply, const char *what, struct osbq_error *err)
{
    if (reply == NULL)
        return osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis %s: %s", what, c->errstr);
    if (reply->type == REDIS_REPLY_ERROR) {
        if (from_replica(reply))
            drop_replica_connection(c);
        return osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis %s: %s", what, reply->str);
    }
    return 0;
}

static int script_load(struct osbq_store *store, redisContext *c, enum store_script script,
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
    return sha[0] != '\0' ? 0 : script_load(store, c, script, sha, err);
}

/* Decimal digits of n written at out; returns how many. */
static size_t put_decimal(char *out, size_t n)
{
    char digits[24];
    size_t count = 0;
    do {
        digits[count++] = (char)('0' + n % 10);
        n /= 10;
    } while (n > 0);
    for (size_t i = 0; i < count; i++)
        out[i] = digits[count - 1 - i];
    return count;
}

static size_t decimal_width(size_t n)
{
    size_t width = 1;
    while (n >= 10) {
        n /= 10;
        width++;
    }
    return width;
}

/* Writes "$<len>\r\n<bytes>\r\n" at out; returns the bytes written. */
static size_t put_bulk(char *out, const char *bytes, size_t len)
{
    size_t at = 0;
    out[at++] = '$';
    at += put_decimal(out + at, len);
    out[at++] = '\r';
    out[at++] = '\n';
    memcpy(out + at, bytes, len);
    at += len;
    out[at++] = '\r';
    out[at++] = '\n';
    return at;
}

/* The arguments are written as RESP by the store itself, with one length pass and memcpys:
 * hiredis formats through sdscatfmt, a printf-like formatter that cost more instructions than
 * everything else a request does with Redis (docs/decisions/0012). One block holds the call
 * and its bytes. */
enum { CALL_ARGS_MAX = 41 };

/* A call whose tail is prefix (already RESP, prefix_len bytes) then argv as bulk strings. */
static struct osbq_store_call *call_new(const char *prefix, size_t prefix_len, int argc,
                                        const char **argv, const size_t *lens,
                                        struct osbq_error *err)
{
    size_t arg_len[CALL_ARGS_MAX];
    if (argc > CALL_ARGS_MAX || argc < 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "too many arguments for Redis");
        return NULL;
    }
    size_t total = prefix_len;
    for (int i = 0; i < argc; i++) {
        arg_len[i] = lens && lens[i] ? lens[i] : strlen(argv[i]);
        total += 1 + decimal_width(arg_len[i]) + 2 + arg_len[i] + 2;
    }
    struct osbq_store_call *call = calloc(1, sizeof *call + total);
    if (call == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    call->tail = (char *)(call + 1);
    memcpy(call->tail, prefix, prefix_len);
    size_t at = prefix_len;
    for (int i = 0; i < argc; i++)
        at += put_bulk(call->tail + at, argv[i], arg_len[i]);
    call->tail_len = at;
    return call;
}

struct osbq_store_call *store_call_new(enum store_script script, int nkeys, int argc,
                                       const char **argv, const size_t *lens,
                                       struct osbq_error *err)
{
    char nkeys_text[12], prefix[24];
    size_t nkeys_len = put_decimal(nkeys_text, (size_t)nkeys);
    size_t prefix_len = put_bulk(prefix, nkeys_text, nkeys_len);
    struct osbq_store_call *call = call_new(prefix, prefix_len, argc, argv, lens, err);
    if (call != NULL) {
        call->script = script;
        call->name = store_script_texts[script].name;
        call->elements = (size_t)argc + 1;
    }
    return call;
}

struct osbq_store_call *store_command_new(int argc, const char **argv, const size_t *lens,
                                          struct osbq_error *err)
{
    char prefix[24];
    size_t prefix_len = 0;
    prefix[prefix_len++] = '*';
    prefix_len += put_decimal(prefix + prefix_len, (size_t)argc);
    prefix[prefix_len++] = '\r';
    prefix[prefix_len++] = '\n';
    struct osbq_store_call *call = call_new(prefix, prefix_len, argc, argv, lens, err);
    if (call != NULL) {
        call->script = STORE_CALL_COMMAND;
        call->name = argv[0];
        call->elements = (size_t)argc;
    }
    return call;
}

size_t store_call_head(const struct osbq_store_call *call, const char sha[41], char *buf)
{
    if (call->script == STORE_CALL_COMMAND)
        return 0;
    size_t at = 0;
    buf[at++] = '*';
    at += put_decimal(buf + at, call->elements + 2);
    buf[at++] = '\r';
    buf[at++] = '\n';
    at += put_bulk(buf + at, "EVALSHA", 7);
    at += put_bulk(buf + at, sha, 40);
    return at;
}

void osbq_store_call_free(struct osbq_store_call **cp)
{
    struct osbq_store_call *call = cp ? *cp : NULL;
    if (call == NULL)
        return;
    freeReplyObject(call->reply);
    free(call);
    *cp = NULL;
}

bool store_call_settle(struct osbq_store *store, struct osbq_store_call *call, redisReply *reply)
{
    call->reply = NULL;
    if (reply->type != REDIS_REPLY_ERROR) {
        call->reply = reply;
        return false;
    }
    bool drop = from_replica(reply);
    osbq_error_set(&call->err, OSBQ_ERR_UNAVAILABLE, "redis %s: %s", call->name, reply->str);
    atomic_fetch_add(&store->errors, 1);
    freeReplyObject(reply);
    return drop;
}

/* Sends call's command on c and waits for its reply: NULL on an I/O error (c->err says which),
 * as redisCommandArgv. hiredis appends formatted commands to its output buffer as they are,
 * so the head and the tail go out as one command. */
static redisReply *run_call(redisContext *c, const char *head, size_t head_len,
                            const struct osbq_store_call *call)
{
    void *reply = NULL;
    if (redisAppendFormattedCommand(c, head, head_len) != REDIS_OK ||
        redisAppendFormattedCommand(c, call->tail, call->tail_len) != REDIS_OK ||
        redisGetReply(c, &reply) != REDIS_OK)
        return NULL;
    return reply;
}

/* EVALSHA, loading the script first when Redis does not know it (first use, or Redis
 * restarted: SCRIPT LOAD gives the same SHA, the text's SHA-1, so the head stands). */
void osbq_store_call_run(struct osbq_store *store, struct osbq_store_call *call)
{
    char sha[41] = "", head[STORE_CALL_HEAD_MAX];
    redisContext *c = store_acquire(store, &call->err);
    if (c == NULL)
        return;
    if (call->script != STORE_CALL_COMMAND &&
        store_script_sha(store, c, call->script, sha, &call->err) < 0) {
        store_release(store, c);
        return;
    }
    size_t head_len = store_call_head(call, sha, head);
    redisReply *reply = run_call(c, head, head_len, call);
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR && call->script != STORE_CALL_COMMAND &&
        strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(reply);
        reply = NULL;
        if (script_load(store, c, call->script, sha, &call->err) < 0) {
            store_release(store, c);
            return;
        }
        reply = run_call(c, head, head_len, call);
    }
    if (reply == NULL) /* I/O: counted (and Redis marked down) by store_release */
        osbq_error_set(&call->err, OSBQ_ERR_UNAVAILABLE, "redis %s: %s", call->name, c->errstr);
    else if (store_call_settle(store, call, reply))
        drop_replica_connection(c);
    store_release(store, c);
}

/* Takes the reply out of an answered call: NULL with err (the call's) when it has none. */
static redisReply *call_take_reply(struct osbq_store_call *call, struct osbq_error *err)
{
    redisReply *reply = call->reply;
    call->reply = NULL;
    if (reply == NULL)
        *err = call->err;
    return reply;
}

/* Runs one of the embedded scripts with EVALSHA. argv holds the keys then the arguments;
 * lengths may be 0 for C strings. Returns the reply (caller frees) or NULL with err. */
redisReply *store_eval(struct osbq_store *store, enum store_script script, int nkeys, int argc,
                       const char **argv, const size_t *lens, struct osbq_error *err)
{
    struct osbq_store_call *call = store_call_new(script, nkeys, argc, argv, lens, err);
    if (call == NULL)
        return NULL;
    osbq_store_call_run(store, call);
    redisReply *reply = call_take_reply(call, err);
    osbq_store_call_free(&call);
    return reply;
}

/* Copies element i of an array reply as a new string; NULL for nil, empty or missing. */
char *store_element_dup(const redisReply *reply, size_t i)
{
    if (reply->type != REDIS_REPLY_ARRAY || i >= reply->elements)
        return NULL;
    const redisReply *e = reply->element[i];
    if (e->type != REDIS_REPLY_STRING || e->len == 0)
        return NULL;
    return strndup(e->str, e->len);
}

bool store_element_is(const redisReply *reply, size_t i, const char *text)
{
    if (reply->type != REDIS_REPLY_ARRAY || i >= reply->elements)
        return false;
    const redisReply *e = reply->element[i];
    return e->type == REDIS_REPLY_STRING && strcmp(e->str, text) == 0;
}

int64_t store_element_int(const redisReply *reply, size_t i, int64_t fallback)
{
    if (reply->type == REDIS_REPLY_ARRAY && i < reply->elements &&
        reply->element[i]->type == REDIS_REPLY_INTEGER)
        return (int64_t)reply->element[i]->integer;
    char *text = store_element_dup(reply, i);
    if (text == NULL)
        return fallback;
    char *end = NULL;
    long long n = strtoll(text, &end, 10);
    bool ok = end != text && *end == '\0';
    free(text);
    return ok ? (int64_t)n : fallback;
}

static int begin_answer(redisReply *reply, struct osbq_begin_reply *out, struct osbq_error *err);

struct osbq_store_call *osbq_store_begin_instance_call(struct osbq_store *store,
                                                       const struct osbq_begin_request *req,
                                                       struct osbq_error *err)
{
    char inst[STORE_KEY_MAX], op[STORE_KEY_MAX], queue[STORE_KEY_MAX], waiters[STORE_KEY_MAX];
    char set[STORE_KEY_MAX], prefix[96], now[24], deadline[24], api[12];
    if (store_id_key(store, inst, sizeof inst, "instance", req->instance_id) < 0 ||
        store_id_key(store, set, sizeof set, "bindings", req->instance_id) < 0 ||
        store_id_key(store, op, sizeof op, "op", req->operation_id) < 0 ||
        store_id_key(store, waiters, sizeof waiters, "waiters", req->operation_id) < 0 ||
        osbq_store_key(store, queue, sizeof queue, "queue") < 0) {
        osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
        return NULL;
    }
    int64_t now_ms = osbq_store_now_ms();
    (void)snprintf(prefix, sizeof prefix, "%s:", store->cfg->namespace_);
    (void)snprintf(now, sizeof now, "%" PRId64, now_ms);
    (void)snprintf(deadline, sizeof deadline, "%" PRId64, now_ms + req->claim_timeout_ms);
    (void)snprintf(api, sizeof api, "%u", req->api_version);
    const char *argv[] = {
        inst,
        op,
        queue,
        waiters,
        set,
        req->kind,
        req->operation_id,
        req->digest,
        now,
        req->waiting_gateway ? req->waiting_gateway : "",
        req->service_id,
        req->plan_id ? req->plan_id : "",
        req->parameters ? req->parameters : "",
        req->context ? req->context : "",
        req->maintenance_version ? req->maintenance_version : "",
        req->dashboard_url ? req->dashboard_url : "",
        (const char *)req->job,
        deadline,
        req->expected_plan_id ? req->expected_plan_id : "",
        prefix,
        req->instance_id,
        api,
        req->quotas ? req->quotas : "",
        req->platform ? req->platform : "default",
    };
    size_t lens[sizeof argv / sizeof argv[0]] = {0};
    lens[16] = req->job_len;
    return store_call_new(SCRIPT_BEGIN_INSTANCE, 5, (int)(sizeof argv / sizeof argv[0]), argv, lens,
                          err);
}

int osbq_store_begin_result(struct osbq_store_call *call, struct osbq_begin_reply *out,
                            struct osbq_error *err)
{
    redisReply *reply = call_take_reply(call, err);
    return reply != NULL ? begin_answer(reply, out, err) : -1;
}

/* Runs a begin call at once: the blocking form of both begin steps. */
static int begin_now(struct osbq_store *store, struct osbq_store_call *call,
                     struct osbq_begin_reply *out, struct osbq_error *err)
{
    if (call == NULL)
        return -1;
    osbq_store_call_run(store, call);
    int rc = osbq_store_begin_result(call, out, err);
    osbq_store_call_free(&call);
    return rc;
}

int osbq_store_begin_instance(struct osbq_store *store, const struct osbq_begin_request *req,
                              struct osbq_begin_reply *out, struct osbq_error *err)
{
    return begin_now(store, osbq_store_begin_instance_call(store, req, err), out, err);
}

/* Turns a begin script's reply into *out; frees the reply. */
static int begin_answer(redisReply *reply, struct osbq_begin_reply *out, struct osbq_error *err)
{
    static const struct {
        const char *word;
        enum osbq_begin_answer answer;
    } answers[] = {
        {"accepted", OSBQ_BEGIN_ACCEPTED},
        {"in_progress", OSBQ_BEGIN_IN_PROGRESS},
        {"done", OSBQ_BEGIN_DONE},
        {"conflict", OSBQ_BEGIN_CONFLICT},
        {"busy", OSBQ_BEGIN_BUSY},
        {"not_found", OSBQ_BEGIN_NOT_FOUND},
        {"gone", OSBQ_BEGIN_GONE},
        {"changed", OSBQ_BEGIN_CHANGED},
        {"mismatch", OSBQ_BEGIN_MISMATCH},
        {"no_instance", OSBQ_BEGIN_NO_INSTANCE},
        {"instance_busy", OSBQ_BEGIN_INSTANCE_BUSY},
        {"bad_predecessor", OSBQ_BEGIN_BAD_PREDECESSOR},
        {"quota", OSBQ_BEGIN_QUOTA},
    };
    int rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "begin: unexpected reply");
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) {
        if (!store_element_is(reply, 0, answers[i].word))
            continue;
        memset(out, 0, sizeof *out);
        out->answer = answers[i].answer;
        if (out->answer == OSBQ_BEGIN_QUOTA) {
            int64_t line = store_element_int(reply, 1, 0);
            out->quota_index = line > 0 ? (size_t)(line - 1) : 0;
            out->quota_used = store_element_int(reply, 2, 0);
            rc = 0;
            break;
        }
        out->operation_id = store_element_dup(reply, 1);
        out->dashboard_url = store_element_dup(reply, 2);
        out->metadata = store_element_dup(reply, 3);
        out->binding_result = store_element_dup(reply, 4);
        rc = 0;
        break;
    }
    freeReplyObject(reply);
    return rc;
}

void osbq_begin_reply_clear(struct osbq_begin_reply *reply)
{
    free(reply->binding_result);
    free(reply->operation_id);
    free(reply->dashboard_url);
    free(reply->metadata);
    memset(reply, 0, sizeof *reply);
}

struct osbq_store_call *osbq_store_instance_get_call(struct osbq_store *store,
                                                     const char *instance_id,
                                                     struct osbq_error *err)
{
    char inst[STORE_KEY_MAX];
    if (store_id_key(store, inst, sizeof inst, "instance", instance_id) < 0) {
        osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
        return NULL;
    }
    const char *argv[] = {"HMGET",         inst,         "state",   "service_id",
                          "plan_id",       "parameters", "context", "maintenance_version",
                          "dashboard_url", "metadata",   "lock_x",  "lock_s",
                          "platform"};
    return store_command_new((int)(sizeof argv / sizeof argv[0]), argv, NULL, err);
}

int osbq_store_instance_get_result(struct osbq_store_call *call, struct osbq_instance *out,
                                   struct osbq_error *err)
{
    redisReply *reply = call_take_reply(call, err);
    if (reply == NULL)
        return -1;
    int rc = 0;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 11) {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "HMGET: unexpected reply");
    } else {
        struct osbq_instance got = {0};
        got.state = store_element_dup(reply, 0);
        if (got.state != NULL) {
            char **fields[] = {
                &got.service_id,          &got.plan_id,       &got.parameters, &got.context,
                &got.maintenance_version, &got.dashboard_url, &got.metadata,   &got.lock_holder};
            for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
                *fields[i] = store_element_dup(reply, i + 1);
            got.shared_holders = (long)store_element_int(reply, 9, 0);
            got.platform = store_element_dup(reply, 10);
            *out = got;
            rc = 1;
        }
    }
    freeReplyObject(reply);
    return rc;
}

int osbq_store_instance_get(struct osbq_store *store, const char *instance_id,
                            struct osbq_instance *out, struct osbq_error *err)
{
    struct osbq_store_call *call = osbq_store_instance_get_call(store, instance_id, err);
    if (call == NULL)
        return -1;
    osbq_store_call_run(store, call);
    int rc = osbq_store_instance_get_result(call, out, err);
    osbq_store_call_free(&call);
    return rc;
}

void osbq_instance_clear(struct osbq_instance *instance)
{
    free(instance->state);
    free(instance->service_id);
    free(instance->plan_id);
    free(instance->parameters);
    free(instance->context);
    free(instance->maintenance_version);
    free(instance->dashboard_url);
    free(instance->metadata);
    free(instance->lock_holder);
    free(instance->platform);
    memset(instance, 0, sizeof *instance);
}

static int flag_value(const redisReply *reply, size_t i)
{
    return store_element_is(reply, i, "1") ? 1 : store_element_is(reply, i, "0") ? 0 : -1;
}

struct osbq_store_call *osbq_store_last_operation_call(struct osbq_store *store,
                                                       const char *instance_id,
                                                       const char *binding_id,
                                                       const char *operation_id,
                                                       const char *platform, struct osbq_error *err)
{
    char key[STORE_KEY_MAX], prefix[96];
    int built = binding_id != NULL ? binding_key(store, key, sizeof key, instance_id, binding_id)
                                   : store_id_key(store, key, sizeof key, "instance", instance_id);
    if (built < 0) {
        osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
        return NULL;
    }
    (void)snprintf(prefix, sizeof prefix, "%s:", store->cfg->namespace_);
    const char *argv[] = {key,         operation_id ? operation_id : "", prefix,
                          instance_id, binding_id ? binding_id : "",     platform ? platform : ""};
    return store_call_new(SCRIPT_LAST_OPERATION, 1, 6, argv, NULL, err);
}

int osbq_store_last_operation_result(struct osbq_store_call *call, struct osbq_last_op *out,
                                     struct osbq_error *err)
{
    redisReply *reply = call_take_reply(call, err);
    if (reply == NULL)
        return -1;
    int rc;
    if (store_element_is(reply, 0, "not_found")) {
        rc = 0;
    } else if (store_element_is(reply, 0, "unknown_operation")) {
        rc = 2;
    } else if (store_element_is(reply, 0, "ok")) {
        struct osbq_last_op got = {0};
        got.instance_state = store_element_dup(reply, 1);
        got.kind = store_element_dup(reply, 2);
        got.state = store_element_dup(reply, 3);
        got.description = store_element_dup(reply, 4);
        got.instance_usable = flag_value(reply, 5);
        got.update_repeatable = flag_value(reply, 6);
        got.created_ms = store_element_int(reply, 7, 0);
        got.average_ms = store_element_int(reply, 9, -1);
        *out = got;
        rc = 1;
    } else {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "last_operation: unexpected reply");
    }
    freeReplyObject(reply);
    return rc;
}

int osbq_store_last_operation(struct osbq_store *store, const char *instance_id,
                              const char *binding_id, const char *operation_id,
                              const char *platform, struct osbq_last_op *out,
                              struct osbq_error *err)
{
    struct osbq_store_call *call =
        osbq_store_last_operation_call(store, instance_id, binding_id, operation_id, platform, err);
    if (call == NULL)
        return -1;
    osbq_store_call_run(store, call);
    int rc = osbq_store_last_operation_result(call, out, err);
    osbq_store_call_free(&call);
    return rc;
}

void osbq_last_op_clear(struct osbq_last_op *op)
{
    free(op->instance_state);
    free(op->kind);
    free(op->state);
    free(op->description);
    memset(op, 0, sizeof *op);
}

/* Runs a script that answers an integer 0/1 about one operation (claim, progress, finish). */
static int op_script(struct osbq_store *store, enum store_script script, int nkeys, int argc,
                     const char **argv, struct osbq_error *err)
{
    redisReply *reply = store_eval(store, script, nkeys, argc, argv, NULL, err);
    if (reply == NULL)
        return -1;
    int rc = reply->type == REDIS_REPLY_INTEGER
                 ? (reply->integer == 1 ? 1 : 0)
                 : osbq_error_set(err, OSBQ_ERR_INTERNAL, "%s: unexpected reply",
                                  store_script_texts[script].name);
    freeReplyObject(reply);
    return rc;
}

int osbq_store_claim(struct osbq_store *store, const char *operation_id, const char *worker_id,
                     uint32_t attempt, int64_t lease_ms, struct osbq_error *err)
{
    char op[STORE_KEY_MAX], queue[STORE_KEY_MAX];
    char attempt_text[12], now[24], lease[24];
    if (store_id_key(store, op, sizeof op, "op", operation_id) < 0 ||
        osbq_store_key(store, queue, sizeof queue, "queue") < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
    (void)snprintf(attempt_text, sizeof attempt_text, "%" PRIu32, attempt);
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
    const char *argv[] = {op, queue, worker_id, attempt_text, now, lease, operation_id};
    return op_script(store, SCRIPT_CLAIM, 2, 7, argv, err);
}

int osbq_store_progress(struct osbq_store *store, const char *operation_id, const char *worker_id,
                        const char *description, int64_t lease_ms, struct osbq_error *err)
{
    char op[STORE_KEY_MAX], queue[STORE_KEY_MAX], now[24], lease[24];
    if (store_id_key(store, op, sizeof op, "op", operation_id) < 0 ||
        osbq_store_key(store, queue, sizeof queue, "queue") < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
    const char *argv[] = {op,  queue, worker_id,   description ? description : "",
                          now, lease, operation_id};
    return op_script(store, SCRIPT_PROGRESS, 2, 7, argv, err);
}

/* How finish_op may take an operation: from its worker, from the recovery loop (abandon), or
 * from an operator. */
enum finish_by { FINISH_BY_WORKER, FINISH_BY_RECOVERY, FINISH_BY_OPERATOR };

static int finish_op(struct osbq_store *store, const char *operation_id, const char *worker_id,
                     const struct osbq_op_result *result, enum finish_by by,
                     struct osbq_error *err);

int osbq_store_finish(struct osbq_store *store, const char *operation_id, const char *worker_id,
                      const struct osbq_op_result *result, struct osbq_error *err)
{
    return finish_op(store, operation_id, worker_id, result, FINISH_BY_WORKER, err);
}

int osbq_store_abandon(struct osbq_store *store, const char *operation_id, const char *description,
                       struct osbq_error *err)
{
    struct osbq_op_result failed = {.succeeded = false,
                                    .description = description,
                                    .instance_usable = true,
                                    .update_repeatable = true};
    return finish_op(store, operation_id, "", &failed, FINISH_BY_RECOVERY, err);
}

int osbq_store_operator_fail(struct osbq_store *store, const char *operation_id,
                             const char *description, struct osbq_error *err)
{
    struct osbq_op_result failed = {.succeeded = false,
                                    .description = description,
                                    .instance_usable = true,
                                    .update_repeatable = true};
    return finish_op(store, operation_id, "", &failed, FINISH_BY_OPERATOR, err);
}

static int finish_op(struct osbq_store *store, const char *operation_id, const char *worker_id,
                     const struct osbq_op_result *result, enum finish_by by, struct osbq_error *err)
{
    static const char *const modes[] = {[FINISH_BY_WORKER] = "",
                                        [FINISH_BY_RECOVERY] = "abandon",
                                        [FINISH_BY_OPERATOR] = "operator"};
    char op[STORE_KEY_MAX], queue[STORE_KEY_MAX], waiters[STORE_KEY_MAX];
    char now[24], retention[16], prefix[96];
    if (store_id_key(store, op, sizeof op, "op", operation_id) < 0 ||
        store_id_key(store, waiters, sizeof waiters, "waiters", operation_id) < 0 ||
        osbq_store_key(store, queue, sizeof queue, "queue") < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)snprintf(retention, sizeof retention, "%u", store->cfg->retention_s);
    (void)snprintf(prefix, sizeof prefix, "%s:", store->cfg->namespace_);
    const char *description = result->description;
    if (description == NULL || description[0] == '\0')
        description = result->succeeded ? "Succeeded." : "Failed.";
    const char *argv[] = {
        op,
        queue,
        waiters,
        worker_id,
        result->succeeded ? "1" : "0",
        description,
        result->dashboard_url ? result->dashboard_url : "",
        result->metadata ? result->metadata : "",
        result->instance_usable ? "1" : "0",
        result->update_repeatable ? "1" : "0",
        now,
        retention,
        prefix,
        operation_id,
        result->binding ? result->binding : "",
        modes[by],
    };
    return op_script(store, SCRIPT_FINISH, 3, (int)(sizeof argv / sizeof argv[0]), argv, err);
}

int osbq_store_gateway_register(struct osbq_store *store, const char *endpoint, int64_t ttl_ms,
                                struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    if (osbq_store_key(store, key, sizeof key, "gateways") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    redisReply *reply =
        redisCommand(c, "ZADD %s %" PRId64 " %s", key, osbq_store_now_ms() + ttl_ms, endpoint);
    int rc = store_reply_failed(c, reply, "ZADD", err);
    freeReplyObject(reply);
    store_release(store, c);
    return rc;
}

int osbq_store_gateway_unregister(struct osbq_store *store, const char *endpoint,
                                  struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    if (osbq_store_key(store, key, sizeof key, "gateways") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    redisReply *reply = redisCommand(c, "ZREM %s %s", key, endpoint);
    int rc = store_reply_failed(c, reply, "ZREM", err);
    freeReplyObject(reply);
    store_release(store, c);
    return rc;
}

int osbq_store_gateway_list(struct osbq_store *store, char ***out, size_t *count,
                            struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    if (osbq_store_key(store, key, sizeof key, "gateways") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    int64_t now = osbq_store_now_ms();
    /* Pruning and listing in one round trip. */
    redisAppendCommand(c, "ZREMRANGEBYSCORE %s -inf (%" PRId64, key, now);
    redisAppendCommand(c, "ZRANGEBYSCORE %s %" PRId64 " +inf", key, now);
    redisReply *pruned = NULL, *listed = NULL;
    int rc = -1;
    if (redisGetReply(c, (void **)&pruned) != REDIS_OK ||
        redisGetReply(c, (void **)&listed) != REDIS_OK) {
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis gateways: %s", c->errstr);
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

redisContext *osbq_store_subscribe_events(struct osbq_store *store, const char *gateway_id,
                                          struct osbq_error *err)
{
    char channel[STORE_KEY_MAX];
    if (store_id_key(store, channel, sizeof channel, "events", gateway_id) < 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "gateway id too long");
        return NULL;
    }
    redisContext *c = store_connect(store, err);
    if (c == NULL)
        return NULL;
    redisReply *reply = redisCommand(c, "SUBSCRIBE %s", channel);
    if (store_reply_failed(c, reply, "SUBSCRIBE", err) < 0) {
        freeReplyObject(reply);
        redisFree(c);
        return NULL;
    }
    freeReplyObject(reply);
    return c;
}

struct osbq_store_call *osbq_store_begin_binding_call(struct osbq_store *store,
                                                      const struct osbq_bind_request *req,
                                                      struct osbq_error *err)
{
    char inst[STORE_KEY_MAX], binding[STORE_KEY_MAX], op[STORE_KEY_MAX], queue[STORE_KEY_MAX];
    char waiters[STORE_KEY_MAX], set[STORE_KEY_MAX], pred[STORE_KEY_MAX];
    char prefix[96], now[24], deadline[24], api[12];
    if (store_id_key(store, inst, sizeof inst, "instance", req->instance_id) < 0 ||
        binding_key(store, binding, sizeof binding, req->instance_id, req->binding_id) < 0 ||
        store_id_key(store, op, sizeof op, "op", req->operation_id) < 0 ||
        store_id_key(store, waiters, sizeof waiters, "waiters", req->operation_id) < 0 ||
        store_id_key(store, set, sizeof set, "bindings", req->instance_id) < 0 ||
        osbq_store_key(store, queue, sizeof queue, "queue") < 0 ||
        (req->predecessor_binding_id != NULL &&
         binding_key(store, pred, sizeof pred, req->instance_id, req->predecessor_binding_id) <
             0)) {
        osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
        return NULL;
    }
    if (req->predecessor_binding_id == NULL)
        pred[0] = '\0';
    int64_t now_ms = osbq_store_now_ms();
    (void)snprintf(prefix, sizeof prefix, "%s:", store->cfg->namespace_);
    (void)snprintf(now, sizeof now, "%" PRId64, now_ms);
    (void)snprintf(deadline, sizeof deadline, "%" PRId64, now_ms + req->claim_timeout_ms);
    (void)snprintf(api, sizeof api, "%u", req->api_version);
    const char *argv[] = {
        inst,
        binding,
        op,
        queue,
        waiters,
        set,
        req->kind,
        req->operation_id,
        req->digest,
        now,
        req->waiting_gateway ? req->waiting_gateway : "",
        req->service_id,
        req->plan_id,
        req->parameters ? req->parameters : "",
        req->context ? req->context : "",
        req->bind_resource ? req->bind_resource : "",
        (const char *)req->job,
        deadline,
        prefix,
        req->instance_id,
        req->binding_id,
        api,
        pred,
        req->predecessor_binding_id ? req->predecessor_binding_id : "",
        req->platform ? req->platform : "default",
    };
    size_t lens[sizeof argv / sizeof argv[0]] = {0};
    lens[16] = req->job_len;
    return store_call_new(SCRIPT_BEGIN_BINDING, 6, (int)(sizeof argv / sizeof argv[0]), argv, lens,
                          err);
}

int osbq_store_begin_binding(struct osbq_store *store, const struct osbq_bind_request *req,
                             struct osbq_begin_reply *out, struct osbq_error *err)
{
    return begin_now(store, osbq_store_begin_binding_call(store, req, err), out, err);
}

struct osbq_store_call *osbq_store_binding_get_call(struct osbq_store *store,
                                                    const char *instance_id, const char *binding_id,
                                                    struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    if (binding_key(store, key, sizeof key, instance_id, binding_id) < 0) {
        osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
        return NULL;
    }
    const char *argv[] = {"HMGET",      key,      "state",  "service_id", "plan_id",
                          "parameters", "result", "lock_x", "platform"};
    return store_command_new((int)(sizeof argv / sizeof argv[0]), argv, NULL, err);
}

int osbq_store_binding_get_result(struct osbq_store_call *call, struct osbq_binding *out,
                                  struct osbq_error *err)
{
    redisReply *reply = call_take_reply(call, err);
    if (reply == NULL)
        return -1;
    int rc = 0;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 7) {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "HMGET: unexpected reply");
    } else {
        struct osbq_binding got = {0};
        got.state = store_element_dup(reply, 0);
        if (got.state != NULL) {
            got.service_id = store_element_dup(reply, 1);
            got.plan_id = store_element_dup(reply, 2);
            got.parameters = store_element_dup(reply, 3);
            got.result = store_element_dup(reply, 4);
            got.lock_holder = store_element_dup(reply, 5);
            got.platform = store_element_dup(reply, 6);
            *out = got;
            rc = 1;
        }
    }
    freeReplyObject(reply);
    return rc;
}

int osbq_store_binding_get(struct osbq_store *store, const char *instance_id,
                           const char *binding_id, struct osbq_binding *out, struct osbq_error *err)
{
    struct osbq_store_call *call = osbq_store_binding_get_call(store, instance_id, binding_id, err);
    if (call == NULL)
        return -1;
    osbq_store_call_run(store, call);
    int rc = osbq_store_binding_get_result(call, out, err);
    osbq_store_call_free(&call);
    return rc;
}

void osbq_binding_clear(struct osbq_binding *binding)
{
    free(binding->state);
    free(binding->service_id);
    free(binding->plan_id);
    free(binding->parameters);
    if (binding->result != NULL) {
        /* Credentials do not linger in freed memory. */
        memset(binding->result, 0, strlen(binding->result));
        free(binding->result);
    }
    free(binding->lock_holder);
    free(binding->platform);
    memset(binding, 0, sizeof *binding);
}

int osbq_store_recover(struct osbq_store *store, unsigned limit, unsigned max_attempts,
                       int64_t claim_timeout_ms, bool can_resend, struct osbq_recovery_item **items,
                       size_t *count, struct osbq_error *err)
{
    char queue[STORE_KEY_MAX], now[24], limit_text[12], attempts[12], timeout[24], prefix[96];
    if (osbq_store_key(store, queue, sizeof queue, "queue") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)snprintf(limit_text, sizeof limit_text, "%u", limit);
    (void)snprintf(attempts, sizeof attempts, "%u", max_attempts);
    (void)snprintf(timeout, sizeof timeout, "%" PRId64, claim_timeout_ms);
    (void)snprintf(prefix, sizeof prefix, "%s:", store->cfg->namespace_);
    const char *argv[] = {
        queue, now, limit_text, attempts, timeout, prefix, can_resend ? "1" : "0"};
    redisReply *reply = store_eval(store, SCRIPT_RECOVER, 1, 7, argv, NULL, err);
    if (reply == NULL)
        return -1;
    int rc = -1;
    struct osbq_recovery_item *list = NULL;
    size_t n = 0;
    if (reply->type != REDIS_REPLY_ARRAY) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "recover: unexpected reply");
        goto out;
    }
    list = calloc(reply->elements + 1, sizeof *list);
    if (list == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *e = reply->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 6)
            continue;
        struct osbq_recovery_item *item = &list[n];
        item->operation_id = store_element_dup(e, 0);
        item->abandon = store_element_is(e, 1, "abandon");
        item->claims = (uint32_t)store_element_int(e, 2, 0);
        item->lease_expired = store_element_is(e, 4, "lease");
        item->kind = store_element_dup(e, 5);
        if (e->element[3]->type == REDIS_REPLY_STRING && e->element[3]->len > 0) {
            item->job = malloc(e->element[3]->len);
            if (item->job != NULL) {
                memcpy(item->job, e->element[3]->str, e->element[3]->len);
                item->job_len = e->element[3]->len;
            }
        }
        if (item->operation_id == NULL) {
            free(item->job);
            free(item->kind);
            continue;
        }
        n++;
    }
    *items = list;
    *count = n;
    list = NULL;
    rc = 0;
out:
    osbq_recovery_free(list, n);
    freeReplyObject(reply);
    return rc;
}

void osbq_recovery_free(struct osbq_recovery_item *items, size_t count)
{
    if (items == NULL)
        return;
    for (size_t i = 0; i < count; i++) {
        free(items[i].operation_id);
        free(items[i].job);
        free(items[i].kind);
    }
    free(items);
}

int osbq_store_release(struct osbq_store *store, const char *operation_id, const char *worker_id,
                       struct osbq_error *err)
{
    char op[STORE_KEY_MAX], queue[STORE_KEY_MAX], now[24];
    if (store_id_key(store, op, sizeof op, "op", operation_id) < 0 ||
        osbq_store_key(store, queue, sizeof queue, "queue") < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    const char *argv[] = {op, queue, worker_id, now, operation_id};
    return op_script(store, SCRIPT_RELEASE, 2, 5, argv, err);
}

uint64_t osbq_store_error_count(const struct osbq_store *store)
{
    return atomic_load(&store->errors);
}
