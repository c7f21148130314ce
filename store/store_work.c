/* Work in progress by tenant, read for osbq-ctl stats: walks over the operation queue and over
 * the tenants' polls, each step's records read in one pipeline. Nothing here runs on a gateway
 * or a worker. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_admin.h"
#include "store_internal.h"

void osbq_queue_entries_free(struct osbq_queue_entry *entries, size_t n)
{
    if (entries == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        free(entries[i].operation_id);
        free(entries[i].tenant);
    }
    free(entries);
}

void osbq_tenant_polls_free(struct osbq_tenant_polls *polls, size_t n)
{
    if (polls == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(polls[i].tenant);
    free(polls);
}

/* Writes "<ns>:polls:<tenant>" (the tenant as the scripts write it: not encoded). 0, or -1. */
static int polls_key(const struct osbq_store *store, char *buf, size_t size, const char *tenant)
{
    if (store_key_prefix(store, buf, size) < 0)
        return -1;
    size_t used = strlen(buf);
    int n = snprintf(buf + used, size - used, "polls:%s", tenant);
    return n < 0 || (size_t)n >= size - used ? -1 : 0;
}

/* Takes the found members of a walk's step (members: each followed by its score) into out,
 * reading what it needs with more commands on c. 0, or -1 with err (out then holds nothing). */
typedef int (*zscan_take_fn)(struct osbq_store *store, redisContext *c, const redisReply *members,
                             size_t found, void *out, struct osbq_error *err);

/* One step of a walk over the sorted set "<ns>:<suffix>": a ZSCAN from *cursor of about count
 * members (100 when 0), which take reads into out; then *cursor is where the next step starts
 * (0: the walk is over). 0, or -1 with err. */
static int zscan_walk_step(struct osbq_store *store, const char *suffix, uint64_t *cursor,
                           unsigned count, zscan_take_fn take, void *out, struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    redisContext *c = store_key_acquire(store, key, suffix, err);
    if (c == NULL)
        return -1;
    redisReply *scan =
        redisCommand(c, "ZSCAN %s %" PRIu64 " COUNT %u", key, *cursor, count == 0 ? 100U : count);
    int rc = store_reply_failed(c, scan, "ZSCAN", err);
    if (rc == 0 &&
        (scan->type != REDIS_REPLY_ARRAY || scan->elements != 2 ||
         scan->element[0]->type != REDIS_REPLY_STRING ||
         scan->element[1]->type != REDIS_REPLY_ARRAY || scan->element[1]->elements % 2 != 0))
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "ZSCAN: unexpected reply");
    if (rc == 0)
        rc = take(store, c, scan->element[1], scan->element[1]->elements / 2, out, err);
    if (rc == 0)
        *cursor = strtoull(scan->element[0]->str, NULL, 10);
    freeReplyObject(scan);
    store_release(store, c);
    return rc;
}

/* Reads the replies of count commands pipelined on c into replies (NULL where none came). After
 * an error reply the others are still read, so the connection stays in step; after an I/O
 * failure the connection is dropped (store_release). 0, or -1 with err (what: the command). */
static int read_replies(redisContext *c, redisReply **replies, size_t count, const char *what,
                        struct osbq_error *err)
{
    int rc = 0;
    for (size_t i = 0; i < count; i++)
        replies[i] = NULL;
    for (size_t i = 0; i < count; i++) {
        if (redisGetReply(c, (void **)&replies[i]) != REDIS_OK)
            return store_io_error(c, what, err);
        if (rc == 0 && replies[i]->type == REDIS_REPLY_ERROR)
            rc = store_error_reply(what, replies[i]->str, err);
    }
    return rc;
}

static void free_replies(redisReply **replies, size_t count)
{
    for (size_t i = 0; replies != NULL && i < count; i++)
        freeReplyObject(replies[i]);
    free(replies);
}

static enum osbq_work_state work_state(const char *state)
{
    if (state == NULL)
        return OSBQ_WORK_OTHER;
    if (strcmp(state, "queued") == 0)
        return OSBQ_WORK_QUEUED;
    if (strcmp(state, "running") == 0)
        return OSBQ_WORK_RUNNING;
    if (strcmp(state, "waiting") == 0)
        return OSBQ_WORK_WAITING;
    return OSBQ_WORK_OTHER;
}

/* Reads the members' operations (state, tenant) into entries, then, for the waiting ones of a
 * tenant, whether that tenant's polls list them: two pipelines on c. 0, or -1 with err. */
static int read_operations(struct osbq_store *store, redisContext *c, const redisReply *members,
                           struct osbq_queue_entry *entries, size_t n, struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    redisReply **replies = calloc(n, sizeof *replies);
    if (replies == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const redisReply *member = members->element[2 * i];
        entries[i].operation_id = strndup(member->str, member->len);
        if (entries[i].operation_id == NULL) {
            free(replies);
            return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        }
    }
    for (size_t i = 0; i < n; i++) {
        /* An id too long for a key has no record: HMGET of an empty name answers nils. */
        if (store_id_key(store, key, sizeof key, "op", entries[i].operation_id) < 0)
            key[0] = '\0';
        redisAppendCommand(c, "HMGET %s state tenant", key);
    }
    int rc = read_replies(c, replies, n, "HMGET", err);
    size_t waiting = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *state = store_element_dup(replies[i], 0);
        entries[i].state = work_state(state);
        free(state);
        entries[i].tenant = store_element_dup(replies[i], 1);
        if (entries[i].state == OSBQ_WORK_WAITING && entries[i].tenant != NULL &&
            polls_key(store, key, sizeof key, entries[i].tenant) == 0) {
            redisAppendCommand(c, "ZSCORE %s %s", key, entries[i].operation_id);
            waiting++;
        }
    }
    if (rc == 0 && waiting > 0) {
        redisReply **scores = calloc(waiting, sizeof *scores);
        if (scores == NULL) {
            /* The commands are written: their replies must still be read. */
            for (size_t i = 0; i < waiting; i++) {
                redisReply *r = NULL;
                if (redisGetReply(c, (void **)&r) == REDIS_OK)
                    freeReplyObject(r);
            }
            rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        } else {
            rc = read_replies(c, scores, waiting, "ZSCORE", err);
            size_t k = 0;
            for (size_t i = 0; rc == 0 && i < n; i++)
                if (entries[i].state == OSBQ_WORK_WAITING && entries[i].tenant != NULL &&
                    polls_key(store, key, sizeof key, entries[i].tenant) == 0)
                    entries[i].in_polls = scores[k++]->type != REDIS_REPLY_NIL;
            free_replies(scores, waiting);
        }
    }
    free_replies(replies, n);
    return rc;
}

/* What a step of the queue's walk found. */
struct queue_found {
    struct osbq_queue_entry **entries;
    size_t *n;
};

static int take_queued(struct osbq_store *store, redisContext *c, const redisReply *members,
                       size_t found, void *out, struct osbq_error *err)
{
    struct queue_found *q = out;
    if (found == 0)
        return 0;
    struct osbq_queue_entry *got = calloc(found, sizeof *got);
    if (got == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    if (read_operations(store, c, members, got, found, err) < 0) {
        osbq_queue_entries_free(got, found);
        return -1;
    }
    *q->entries = got;
    *q->n = found;
    return 0;
}

int osbq_store_queue_scan(struct osbq_store *store, uint64_t *cursor, unsigned count,
                          struct osbq_queue_entry **entries, size_t *n, struct osbq_error *err)
{
    *entries = NULL;
    *n = 0;
    struct queue_found q = {entries, n};
    return zscan_walk_step(store, "queue", cursor, count, take_queued, &q, err);
}

/* What a step of the walk over the tenants' polls found. */
struct polls_found {
    struct osbq_tenant_polls **polls;
    size_t *n;
};

/* The tenants' polls lengths: a ZCARD each, in one pipeline. */
static int take_polls(struct osbq_store *store, redisContext *c, const redisReply *members,
                      size_t found, void *out, struct osbq_error *err)
{
    struct polls_found *p = out;
    if (found == 0)
        return 0;
    char key[STORE_KEY_MAX];
    int rc = 0;
    struct osbq_tenant_polls *got = calloc(found, sizeof *got);
    redisReply **replies = calloc(found, sizeof *replies);
    if (got == NULL || replies == NULL)
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    size_t sent = 0;
    for (size_t i = 0; rc == 0 && i < found; i++) {
        const redisReply *member = members->element[2 * i];
        got[i].tenant = strndup(member->str, member->len);
        if (got[i].tenant == NULL) {
            rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        } else if (polls_key(store, key, sizeof key, got[i].tenant) == 0) {
            redisAppendCommand(c, "ZCARD %s", key);
            sent++;
        }
    }
    /* Every command written is read, even after a failure, so the connection stays in step. */
    int read_rc = sent > 0 ? read_replies(c, replies, sent, "ZCARD", err) : 0;
    if (rc == 0)
        rc = read_rc;
    for (size_t i = 0, k = 0; rc == 0 && i < found; i++) {
        if (polls_key(store, key, sizeof key, got[i].tenant) < 0)
            continue;
        got[i].waiting = replies[k]->type == REDIS_REPLY_INTEGER ? replies[k]->integer : 0;
        k++;
    }
    free_replies(replies, sent);
    if (rc < 0) {
        osbq_tenant_polls_free(got, found);
        return -1;
    }
    *p->polls = got;
    *p->n = found;
    return 0;
}

int osbq_store_polls_scan(struct osbq_store *store, uint64_t *cursor, unsigned count,
                          struct osbq_tenant_polls **polls, size_t *n, struct osbq_error *err)
{
    *polls = NULL;
    *n = 0;
    struct polls_found p = {polls, n};
    return zscan_walk_step(store, "poll_tenants", cursor, count, take_polls, &p, err);
}
