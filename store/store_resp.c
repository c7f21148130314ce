/* RESP, both ways, without I/O: the store's calls written as RESP by the store itself (a script
 * call's numkeys, keys and arguments; a plain command; the EVALSHA head; the mark and the WAIT
 * that make a call durable), and the reading of replies (a call's reply or failure, WAIT's
 * count, the elements of an array reply). The connections and the pipeline send and read the
 * bytes. */
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "owned.h"
#include "store_internal.h"
#include "store_scripts.h"

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
    OSBQ_OWNED_OR_RETURN(struct osbq_store_call, call, cp);
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
