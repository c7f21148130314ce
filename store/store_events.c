/* The audit trail's stream: appended to, trimmed by age, read. */
#include "store_events.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* Most fields an event written here carries (pairs). */
#define EVENT_PAIRS_MAX 16

void osbq_events_free(struct osbq_event *events, size_t count)
{
    if (events == NULL)
        return;
    for (size_t i = 0; i < count; i++)
        osbq_fields_clear(&events[i].fields);
    free(events);
}

int osbq_store_event_add(struct osbq_store *store, const char *kind, const char *const *fields,
                         size_t pairs, struct osbq_error *err)
{
    if (store->cfg->events_max == 0)
        return 0;
    if (pairs > EVENT_PAIRS_MAX)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "an event of more than %d fields",
                              EVENT_PAIRS_MAX);
    char key[STORE_KEY_MAX];
    if (store_key(store, key, sizeof key, "events") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    const char *argv[4 + 2 * EVENT_PAIRS_MAX] = {"XADD", key, "*", "event"};
    int argc = 4;
    argv[argc++] = kind;
    for (size_t i = 0; i < pairs; i++) {
        const char *value = fields[2 * i + 1];
        if (value == NULL || value[0] == '\0')
            continue;
        argv[argc++] = fields[2 * i];
        argv[argc++] = value;
    }
    redisReply *reply = store_command_argv(store, argc, argv, err);
    int rc = reply != NULL ? 0 : -1;
    freeReplyObject(reply);
    return rc;
}

int osbq_store_events_trim(struct osbq_store *store, unsigned max_entries, unsigned max_age_s,
                           struct osbq_error *err)
{
    char key[STORE_KEY_MAX], max[16], min_id[32];
    if (store_key(store, key, sizeof key, "events") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    (void)snprintf(max, sizeof max, "%u", max_entries);
    (void)snprintf(min_id, sizeof min_id, "%" PRId64,
                   osbq_store_now_ms() - (int64_t)max_age_s * 1000);
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    redisAppendCommand(c, "XTRIM %s MAXLEN ~ %s", key, max);
    if (max_age_s > 0)
        redisAppendCommand(c, "XTRIM %s MINID ~ %s", key, min_id);
    redisReply *replies[2] = {NULL, NULL};
    int rc = store_replies_collect(c, replies, max_age_s > 0 ? 2 : 1, "XTRIM", err);
    store_release(store, c);
    freeReplyObject(replies[0]);
    freeReplyObject(replies[1]);
    return rc < 0 ? -1 : 0;
}

/* One stream entry [id, [name, value, ...]] into *out. 0, or -1 (memory). */
static int event_from_reply(const redisReply *entry, struct osbq_event *out, struct osbq_error *err)
{
    memset(out, 0, sizeof *out);
    if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 ||
        entry->element[0]->type != REDIS_REPLY_STRING ||
        entry->element[1]->type != REDIS_REPLY_ARRAY)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "events: unexpected reply");
    (void)snprintf(out->id, sizeof out->id, "%s", entry->element[0]->str);
    out->ms = strtoll(out->id, NULL, 10);
    const redisReply *list = entry->element[1];
    for (size_t i = 0; i + 1 < list->elements; i += 2) {
        if (list->element[i]->type != REDIS_REPLY_STRING ||
            list->element[i + 1]->type != REDIS_REPLY_STRING)
            continue;
        if (osbq_fields_add(&out->fields, list->element[i]->str, list->element[i + 1]->str, err) <
            0)
            return -1;
    }
    return 0;
}

/* The entries of an XRANGE reply (or of XREAD's one stream) into *out. 0, or -1 with err. */
static int events_from_reply(const redisReply *entries, struct osbq_event **out, size_t *n,
                             struct osbq_error *err)
{
    *out = NULL;
    *n = 0;
    if (entries->type != REDIS_REPLY_ARRAY || entries->elements == 0)
        return 0;
    *out = calloc(entries->elements, sizeof **out);
    if (*out == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; i < entries->elements; i++) {
        if (event_from_reply(entries->element[i], &(*out)[i], err) < 0) {
            osbq_events_free(*out, i + 1);
            *out = NULL;
            return -1;
        }
        *n = i + 1;
    }
    return 0;
}

int osbq_store_events_read(struct osbq_store *store, const char *after_id, int64_t until_ms,
                           unsigned count, int block_ms, struct osbq_event **out, size_t *n,
                           struct osbq_error *err)
{
    *out = NULL;
    *n = 0;
    char key[STORE_KEY_MAX], start[64], end[32], count_text[16], block[16];
    if (store_key(store, key, sizeof key, "events") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    const char *after = after_id != NULL && after_id[0] != '\0' ? after_id : "0";
    /* "(" makes XRANGE's start exclusive: the entries after the last one read. */
    (void)snprintf(start, sizeof start, "(%s", after);
    if (strcmp(after, "0") == 0)
        (void)snprintf(start, sizeof start, "-");
    if (until_ms > 0)
        (void)snprintf(end, sizeof end, "%" PRId64, until_ms);
    else
        (void)snprintf(end, sizeof end, "+");
    (void)snprintf(count_text, sizeof count_text, "%u", count);
    (void)snprintf(block, sizeof block, "%d", block_ms);
    redisReply *reply =
        block_ms > 0 ? store_command(store, "XREAD", err, "XREAD COUNT %s BLOCK %s STREAMS %s %s",
                                     count_text, block, key, after)
                     : store_command(store, "XRANGE", err, "XRANGE %s %s %s COUNT %s", key, start,
                                     end, count_text);
    int rc = reply != NULL ? 0 : -1;
    if (rc == 0) {
        const redisReply *entries = reply;
        /* XREAD: [[key, entries]], or nil when the wait ended with nothing. */
        if (block_ms > 0)
            entries = reply->type == REDIS_REPLY_ARRAY && reply->elements == 1 &&
                              reply->element[0]->type == REDIS_REPLY_ARRAY &&
                              reply->element[0]->elements == 2
                          ? reply->element[0]->element[1]
                          : NULL;
        if (entries != NULL)
            rc = events_from_reply(entries, out, n, err);
    }
    freeReplyObject(reply);
    return rc < 0 ? -1 : 0;
}
