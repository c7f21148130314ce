/* The store's calls: a script call or a plain command written as RESP by the store itself,
 * run on a pooled connection with EVALSHA (loading the script on NOSCRIPT), and the reading of
 * replies. The pipeline (store_pipeline.c) sends the same calls without blocking. */
#include "store.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "store_pipeline.h"
#include "store_scripts.h"

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
                                        const char *const *argv, const size_t *lens,
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
    if (sem_init(&call->answered, 0, 0) != 0) {
        free(call);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot make a call's semaphore");
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

struct osbq_store_call *store_call_new(enum store_script script, const char *const *keys,
                                       const char *const *args, const size_t *arg_lens,
                                       struct osbq_error *err)
{
    const struct store_script_contract *contract = &store_script_contracts[script];
    const char *argv[CALL_ARGS_MAX];
    size_t lens[CALL_ARGS_MAX] = {0};
    size_t nkeys = contract->key_count;
    if (nkeys + contract->arg_count > CALL_ARGS_MAX) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "too many arguments for Redis");
        return NULL;
    }
    int argc = (int)(nkeys + contract->arg_count);
    for (size_t i = 0; i < nkeys; i++)
        argv[i] = keys[i];
    for (size_t i = 0; i < contract->arg_count; i++) {
        argv[nkeys + i] = args[i];
        lens[nkeys + i] = arg_lens != NULL ? arg_lens[i] : 0;
    }
    for (int i = 0; i < argc; i++) {
        if (argv[i] == NULL) { /* an entry its designated initializer left out */
            osbq_error_set(err, OSBQ_ERR_INTERNAL, "%s: %s %s missing",
                           store_script_texts[script].name, (size_t)i < nkeys ? "key" : "argument",
                           (size_t)i < nkeys ? contract->keys[i]
                                             : contract->args[(size_t)i - nkeys]);
            return NULL;
        }
    }
    char nkeys_text[12], prefix[24];
    size_t nkeys_len = put_decimal(nkeys_text, nkeys);
    size_t prefix_len = put_bulk(prefix, nkeys_text, nkeys_len);
    struct osbq_store_call *call = call_new(prefix, prefix_len, argc, argv, lens, err);
    if (call != NULL) {
        call->script = script;
        call->name = store_script_texts[script].name;
        call->elements = (size_t)argc + 1;
    }
    return call;
}

struct osbq_store_call *store_command_new(int argc, const char *const *argv, const size_t *lens,
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
    (void)sem_destroy(&call->answered);
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
    bool drop = store_reply_from_replica(reply);
    store_error_reply(call->name, reply->str, &call->err);
    atomic_fetch_add(&store->errors, 1);
    freeReplyObject(reply);
    return drop;
}

/* Whether call must be followed by the WAIT of OSBQ_REDIS_MIN_ACKS. */
static bool wants_acks(const struct osbq_store *store, const struct osbq_store_call *call)
{
    return call->durable && store->cfg->redis_min_acks > 0;
}

/* Sets c's read timeout to the store's plus extra_ms (a WAIT blocks that long). */
static int stretch_timeout(const struct osbq_store *store, redisContext *c, unsigned extra_ms)
{
    struct timeval t = store->timeout;
    t.tv_sec += (time_t)(extra_ms / 1000);
    t.tv_usec += (suseconds_t)((extra_ms % 1000) * 1000);
    if (t.tv_usec >= 1000000) {
        t.tv_sec++;
        t.tv_usec -= 1000000;
    }
    return redisSetTimeout(c, t) == REDIS_OK ? 0 : -1;
}

/* Reads the replies to the mark and the WAIT after a durable call: the acknowledgements, or -1
 * (I/O: c->err says which). */
static long long read_acks(struct osbq_store *store, redisContext *c)
{
    void *mark = NULL, *wait = NULL;
    if (redisGetReply(c, &mark) != REDIS_OK)
        return -1;
    freeReplyObject(mark);
    if (redisGetReply(c, &wait) != REDIS_OK)
        return -1;
    long long acks = store_ack_count(store, wait);
    freeReplyObject(wait);
    return acks < 0 ? 0 : acks;
}

/* Sends call's command on c and waits for its reply: NULL on an I/O error (c->err says which),
 * as redisCommandArgv. hiredis appends formatted commands to its output buffer as they are,
 * so the head and the tail go out as one command. A durable call (with OSBQ_REDIS_MIN_ACKS)
 * has the mark and the WAIT pipelined behind it, their outcome in call->acks_short. */
static redisReply *run_call(struct osbq_store *store, redisContext *c, const char *head,
                            size_t head_len, struct osbq_store_call *call)
{
    void *reply = NULL;
    char mark[STORE_ACK_COMMAND_MAX], wait[STORE_ACK_COMMAND_MAX];
    size_t mark_len = 0, wait_len = 0;
    bool acked = wants_acks(store, call);
    if (acked) {
        mark_len = store_ack_mark_command(store, mark);
        wait_len = store_ack_wait_command(store, wait);
        if (mark_len == 0 || stretch_timeout(store, c, store->cfg->redis_ack_timeout_ms) < 0)
            return NULL;
    }
    if (redisAppendFormattedCommand(c, head, head_len) != REDIS_OK ||
        redisAppendFormattedCommand(c, call->tail, call->tail_len) != REDIS_OK ||
        (acked && (redisAppendFormattedCommand(c, mark, mark_len) != REDIS_OK ||
                   redisAppendFormattedCommand(c, wait, wait_len) != REDIS_OK)) ||
        redisGetReply(c, &reply) != REDIS_OK)
        return NULL;
    if (!acked)
        return reply;
    long long acks = read_acks(store, c);
    if (acks < 0 || redisSetTimeout(c, store->timeout) != REDIS_OK) {
        freeReplyObject(reply);
        return NULL;
    }
    call->acks_short = acks < (long long)store->cfg->redis_min_acks;
    return reply;
}

void osbq_store_use_pipeline(struct osbq_store *store, struct osbq_store_pipeline *pipeline)
{
    atomic_store(&store->pipeline, pipeline);
}

static void call_answered(void *ctx)
{
    struct osbq_store_call *call = ctx;
    (void)sem_post(&call->answered);
}

/* Hands call to pipeline with its own completion. 0, or -1 when the pipeline refused it
 * (draining): the call is as it was. */
static int submit(struct osbq_store_pipeline *pipeline, struct osbq_store_call *call)
{
    call->answer_taken = false;
    if (osbq_store_pipeline_submit(pipeline, call, call_answered, call) == 0)
        return 0;
    call->err = (struct osbq_error){0};
    return -1;
}

int osbq_store_call_start(struct osbq_store *store, struct osbq_store_call *call)
{
    struct osbq_store_pipeline *pipeline = atomic_load(&store->pipeline);
    return pipeline != NULL ? submit(pipeline, call) : -1;
}

bool osbq_store_call_answered(struct osbq_store_call *call)
{
    if (!call->answer_taken && sem_trywait(&call->answered) == 0)
        call->answer_taken = true;
    return call->answer_taken;
}

void osbq_store_call_wait(struct osbq_store_call *call)
{
    while (!call->answer_taken) {
        /* Fails only when interrupted by a signal handler: the answer is still to come. */
        if (sem_wait(&call->answered) == 0)
            call->answer_taken = true;
    }
}

/* EVALSHA, loading the script first when Redis does not know it (first use, or Redis
 * restarted: SCRIPT LOAD gives the same SHA, the text's SHA-1, so the head stands). */
void osbq_store_call_run(struct osbq_store *store, struct osbq_store_call *call)
{
    /* The pipeline answers every call it took, within the Redis timeout. */
    if (osbq_store_call_start(store, call) == 0) {
        osbq_store_call_wait(call);
        return;
    }
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
    redisReply *reply = run_call(store, c, head, head_len, call);
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR && call->script != STORE_CALL_COMMAND &&
        strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(reply);
        reply = NULL;
        if (script_load(store, c, call->script, sha, &call->err) < 0) {
            store_release(store, c);
            return;
        }
        reply = run_call(store, c, head, head_len, call);
    }
    if (reply == NULL) /* I/O: counted (and Redis marked down) by store_release */
        (void)store_io_error(c, call->name, &call->err);
    else if (store_call_settle(store, call, reply))
        store_drop_replica(c);
    store_release(store, c);
}

redisReply *store_call_take_reply(struct osbq_store_call *call, struct osbq_error *err)
{
    redisReply *reply = call->reply;
    call->reply = NULL;
    if (reply != NULL && call->acks_short) {
        freeReplyObject(reply);
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE,
                       "redis %s: fewer replicas than OSBQ_REDIS_MIN_ACKS acknowledged it within "
                       "OSBQ_REDIS_ACK_TIMEOUT_MS",
                       call->name);
        return NULL;
    }
    if (reply == NULL)
        *err = call->err;
    return reply;
}

bool osbq_store_call_not_durable(const struct osbq_store_call *call)
{
    return call->durable && call->acks_short;
}

size_t store_ack_mark_command(const struct osbq_store *store, char *buf)
{
    char key[STORE_KEY_MAX];
    if (store_key(store, key, sizeof key, "acks") < 0)
        return 0;
    size_t key_len = strlen(key);
    if (key_len + 64 > STORE_ACK_COMMAND_MAX)
        return 0;
    size_t at = 0;
    memcpy(buf, "*3\r\n", 4);
    at += 4;
    at += put_bulk(buf + at, "SET", 3);
    at += put_bulk(buf + at, key, key_len);
    at += put_bulk(buf + at, "1", 1);
    return at;
}

size_t store_ack_wait_command(const struct osbq_store *store, char *buf)
{
    char acks[24], timeout[24];
    int acks_len = snprintf(acks, sizeof acks, "%u", store->cfg->redis_min_acks);
    int timeout_len = snprintf(timeout, sizeof timeout, "%u", store->cfg->redis_ack_timeout_ms);
    size_t at = 0;
    memcpy(buf, "*3\r\n", 4);
    at += 4;
    at += put_bulk(buf + at, "WAIT", 4);
    at += put_bulk(buf + at, acks, (size_t)acks_len);
    at += put_bulk(buf + at, timeout, (size_t)timeout_len);
    return at;
}

long long store_ack_count(struct osbq_store *store, const redisReply *reply)
{
    long long acks = reply != NULL && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
    if (acks < (long long)store->cfg->redis_min_acks)
        atomic_fetch_add(&store->ack_timeouts, 1);
    return acks;
}

uint64_t osbq_store_ack_timeout_count(const struct osbq_store *store)
{
    return atomic_load(&store->ack_timeouts);
}

redisReply *store_eval(struct osbq_store *store, enum store_script script, const char *const *keys,
                       const char *const *args, struct osbq_error *err)
{
    struct osbq_store_call *call = store_call_new(script, keys, args, NULL, err);
    if (call == NULL)
        return NULL;
    osbq_store_call_run(store, call);
    redisReply *reply = store_call_take_reply(call, err);
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

/* Sends count pipelined commands (already appended on c) and collects their replies; on an
 * I/O failure or an error reply frees them all and fails. */
int store_replies_collect(redisContext *c, redisReply **replies, size_t count, const char *what,
                          struct osbq_error *err)
{
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        replies[i] = NULL;
        if (rc == 0 && redisGetReply(c, (void **)&replies[i]) != REDIS_OK) {
            rc = store_io_error(c, what, err);
        } else if (rc == 0 && replies[i]->type == REDIS_REPLY_ERROR) {
            rc = store_error_reply(what, replies[i]->str, err);
        }
    }
    if (rc < 0)
        for (size_t i = 0; i < count; i++)
            freeReplyObject(replies[i]);
    return rc;
}
