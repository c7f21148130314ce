/* The store's side for operators: walks over records, an instance with what relates to it, an
 * operation and its history. The server's figures and the quota counters are store_stats.c's. */
#include "store_admin.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_history.h"
#include "store_internal.h"

/* Fields an operator never sees: secrets and internal bytes. */
static bool field_hidden(const char *name, size_t len)
{
    static const char *const hidden[] = {"result", "digest", "job", "history", "counted"};
    for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++)
        if (len == strlen(hidden[i]) && memcmp(name, hidden[i], len) == 0)
            return true;
    return false;
}

/* Copies an HGETALL reply into *out, leaving hidden fields out, with one more pair
 * (id_name: id) when id_name is not NULL. Returns 0, or -1 (memory). */
static int fields_from_reply(const redisReply *reply, const char *id_name, const char *id,
                             size_t id_len, struct osbq_fields *out, struct osbq_error *err)
{
    memset(out, 0, sizeof *out);
    size_t pairs = reply->type == REDIS_REPLY_ARRAY ? reply->elements / 2 : 0;
    if (pairs == 0)
        return 0;
    out->names = calloc(pairs + 1, sizeof *out->names);
    out->values = calloc(pairs + 1, sizeof *out->values);
    if (out->names == NULL || out->values == NULL)
        goto oom;
    for (size_t i = 0; i < pairs; i++) {
        const redisReply *name = reply->element[2 * i];
        const redisReply *value = reply->element[2 * i + 1];
        if (name->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING ||
            field_hidden(name->str, name->len))
            continue;
        if (osbq_fields_take(out, strndup(name->str, name->len), strndup(value->str, value->len)) <
            0)
            goto oom;
    }
    if (id_name != NULL && osbq_fields_take(out, strdup(id_name), strndup(id, id_len)) < 0)
        goto oom;
    return 0;
oom:
    osbq_fields_clear(out);
    return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
}

int store_scan_fetch(redisContext *c, const char *pattern, uint64_t *cursor, unsigned count,
                     const char *command, store_scan_take_fn take, void *ctx,
                     struct osbq_error *err)
{
    redisReply *scan = redisCommand(c, "SCAN %" PRIu64 " MATCH %s COUNT %u", *cursor, pattern,
                                    count == 0 ? 100U : count);
    if (store_reply_failed(c, scan, "SCAN", err) < 0) {
        freeReplyObject(scan);
        return -1;
    }
    if (scan->type != REDIS_REPLY_ARRAY || scan->elements != 2 ||
        scan->element[0]->type != REDIS_REPLY_STRING ||
        scan->element[1]->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(scan);
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "SCAN: unexpected reply");
    }
    const redisReply *keys = scan->element[1];
    for (size_t i = 0; i < keys->elements; i++)
        redisAppendCommand(c, command, keys->element[i]->str, keys->element[i]->len);
    bool failed = false;
    for (size_t i = 0; i < keys->elements; i++) {
        redisReply *got = NULL;
        if (redisGetReply(c, (void **)&got) != REDIS_OK) {
            char words[256];
            store_io_words(c, words, sizeof words);
            osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis %.*s: %s", (int)strcspn(command, " "),
                           command, words);
            failed = true;
            break;
        }
        if (!failed && take(ctx, keys->element[i], got, i, keys->elements, err) < 0)
            failed = true;
        freeReplyObject(got);
    }
    if (!failed)
        *cursor = strtoull(scan->element[0]->str, NULL, 10);
    freeReplyObject(scan);
    return failed ? -1 : 0;
}

/* The records one scan step found, as osbq_store_scan_records returns them. */
struct records_step {
    struct osbq_fields *list; /* one per hash found; allocated at the first reply */
    size_t found;             /* entries filled */
    size_t id_at;             /* operations: where the id starts in the key; 0 otherwise */
};

static int take_record(void *ctx, const redisReply *key, const redisReply *hash, size_t i,
                       size_t count, struct osbq_error *err)
{
    struct records_step *step = ctx;
    if (i == 0 && (step->list = calloc(count, sizeof *step->list)) == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    /* A key of another type matching the pattern (none today) is skipped. */
    if (hash->type != REDIS_REPLY_ARRAY || hash->elements == 0)
        return 0;
    bool with_id = step->id_at > 0 && key->len > step->id_at;
    if (fields_from_reply(hash, with_id ? "operation_id" : NULL,
                          with_id ? key->str + step->id_at : NULL,
                          with_id ? key->len - step->id_at : 0, &step->list[step->found], err) < 0)
        return -1;
    step->found++;
    return 0;
}

int osbq_store_scan_records(struct osbq_store *store, enum osbq_record_kind kind, uint64_t *cursor,
                            unsigned count, struct osbq_fields **records, size_t *n,
                            struct osbq_error *err)
{
    char pattern[STORE_KEY_MAX];
    const char *suffix = kind == OSBQ_RECORD_INSTANCE  ? "instance:*"
                         : kind == OSBQ_RECORD_BINDING ? "binding:*"
                                                       : "op:*";
    redisContext *c = store_key_acquire(store, pattern, suffix, err);
    if (c == NULL)
        return -1;
    struct records_step step = {
        .id_at = kind == OSBQ_RECORD_OPERATION ? strlen(pattern) - 1 : 0,
    };
    int rc = store_scan_fetch(c, pattern, cursor, count, "HGETALL %b", take_record, &step, err);
    store_release(store, c);
    if (rc < 0) {
        osbq_fields_array_free(step.list, step.found);
        return -1;
    }
    *records = step.list;
    *n = step.found;
    return 0;
}

/* The keys of one filtered scan step that the filter keeps. */
struct kept_keys {
    const struct osbq_scan_filter *filter;
    char **keys; /* kept, NULL-terminated (strings_push) */
    size_t count;
    size_t cap;
};

static bool strings_push(char ***v, size_t *n, size_t *cap, const char *s);

static int take_few(void *ctx, const redisReply *key, const redisReply *values, size_t i,
                    size_t count, struct osbq_error *err)
{
    (void)i;
    (void)count;
    struct kept_keys *kept = ctx;
    const struct osbq_scan_filter *filter = kept->filter;
    if (values->type != REDIS_REPLY_ARRAY || values->elements != filter->count)
        return 0; /* not a hash: skipped */
    char *names[OSBQ_SCAN_FILTER_FIELDS], *texts[OSBQ_SCAN_FILTER_FIELDS];
    struct osbq_fields few = {.names = names, .values = texts};
    for (size_t f = 0; f < filter->count; f++) {
        if (values->element[f]->type != REDIS_REPLY_STRING)
            continue;
        names[few.count] = (char *)filter->fields[f];
        texts[few.count++] = values->element[f]->str;
    }
    if (few.count == 0 || !filter->keep(&few, filter->ctx))
        return 0;
    if (!strings_push(&kept->keys, &kept->count, &kept->cap, key->str))
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    return 0;
}

static int fetch_records(redisContext *c, char *const *keys, char *const *op_ids, size_t count,
                         struct osbq_fields *out, struct osbq_error *err);

int osbq_store_scan_records_where(struct osbq_store *store, enum osbq_record_kind kind,
                                  uint64_t *cursor, unsigned count,
                                  const struct osbq_scan_filter *filter,
                                  struct osbq_fields **records, size_t *n, struct osbq_error *err)
{
    if (filter == NULL || kind == OSBQ_RECORD_OPERATION)
        return osbq_store_scan_records(store, kind, cursor, count, records, n, err);
    if (filter->count == 0 || filter->count > OSBQ_SCAN_FILTER_FIELDS)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "scan filter: 1 to %d fields",
                              OSBQ_SCAN_FILTER_FIELDS);
    char pattern[STORE_KEY_MAX], command[256] = "HMGET %b";
    if (store_key(store, pattern, sizeof pattern,
                  kind == OSBQ_RECORD_INSTANCE ? "instance:*" : "binding:*") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    for (size_t f = 0; f < filter->count; f++) {
        size_t used = strlen(command);
        (void)snprintf(command + used, sizeof command - used, " %s", filter->fields[f]);
    }
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    struct kept_keys kept = {.filter = filter};
    int rc = store_scan_fetch(c, pattern, cursor, count, command, take_few, &kept, err);
    *records = NULL;
    *n = 0;
    if (rc == 0 && kept.count > 0) {
        *records = calloc(kept.count, sizeof **records);
        rc = *records != NULL ? fetch_records(c, kept.keys, NULL, kept.count, *records, err)
                              : osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        if (rc == 0) {
            *n = kept.count;
        } else {
            osbq_fields_array_free(*records, kept.count);
            *records = NULL;
        }
    }
    store_release(store, c);
    for (size_t i = 0; i < kept.count; i++)
        free(kept.keys[i]);
    free(kept.keys);
    return rc;
}

int osbq_store_instance_record(struct osbq_store *store, const char *instance_id,
                               struct osbq_fields *record, struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    if (store_id_key(store, key, sizeof key, "instance", instance_id) < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "instance id too long");
    redisReply *reply = store_command(store, "HGETALL", err, "HGETALL %s", key);
    int rc = reply != NULL ? 0 : -1;
    /* No hash: rc stays 0. */
    if (rc == 0 && reply->type == REDIS_REPLY_ARRAY && reply->elements > 0)
        rc = fields_from_reply(reply, NULL, NULL, 0, record, err) < 0 ? -1 : 1;
    freeReplyObject(reply);
    return rc;
}

/* HGETALLs each key of keys (count of them, as strings) in one pipeline into out[] (records
 * with no hash are left empty); operations (op_ids: their ids) get their id as the field
 * "operation_id". 0, or -1 with err. */
static int fetch_records(redisContext *c, char *const *keys, char *const *op_ids, size_t count,
                         struct osbq_fields *out, struct osbq_error *err)
{
    for (size_t i = 0; i < count; i++)
        redisAppendCommand(c, "HGETALL %s", keys[i]);
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        redisReply *got = NULL;
        if (redisGetReply(c, (void **)&got) != REDIS_OK)
            return store_io_error(c, "HGETALL", err);
        if (rc == 0 && got->type == REDIS_REPLY_ARRAY && got->elements > 0)
            rc = fields_from_reply(got, op_ids != NULL ? "operation_id" : NULL,
                                   op_ids != NULL ? op_ids[i] : NULL,
                                   op_ids != NULL ? strlen(op_ids[i]) : 0, &out[i], err);
        freeReplyObject(got);
    }
    return rc;
}

/* Appends a copy of s to the list *v (*n entries, room for *cap); false when out of memory. */
static bool strings_push(char ***v, size_t *n, size_t *cap, const char *s)
{
    if (*n + 1 >= *cap) {
        size_t grown = *cap == 0 ? 16 : *cap * 2;
        char **more = realloc(*v, grown * sizeof *more);
        if (more == NULL)
            return false;
        *v = more;
        *cap = grown;
    }
    if (((*v)[*n] = strdup(s)) == NULL)
        return false;
    (*v)[++*n] = NULL;
    return true;
}

/* A growing NULL-terminated list of strings (strings_push). */
struct strings {
    char **v;
    size_t n, cap;
};

static void strings_clear(struct strings *s)
{
    osbq_store_strings_free(s->v);
    *s = (struct strings){0};
}

/* Reads the bindings whose keys are the members of set, each whole, into *out (*count). */
static int related_bindings(redisContext *c, const char *set, struct osbq_fields **out,
                            size_t *count, struct osbq_error *err)
{
    struct strings keys = {0};
    redisReply *members = redisCommand(c, "SMEMBERS %s", set);
    int rc = store_reply_failed(c, members, "SMEMBERS", err);
    for (size_t i = 0; rc == 0 && members->type == REDIS_REPLY_ARRAY && i < members->elements; i++)
        if (members->element[i]->type == REDIS_REPLY_STRING &&
            !strings_push(&keys.v, &keys.n, &keys.cap, members->element[i]->str))
            rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    if (rc == 0 && keys.n > 0) {
        if ((*out = calloc(keys.n, sizeof **out)) == NULL)
            rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        else
            *count = keys.n;
        if (rc == 0)
            rc = fetch_records(c, keys.v, NULL, keys.n, *out, err);
    }
    freeReplyObject(members);
    strings_clear(&keys);
    return rc;
}

/* The operations found so far (related_ops). */
struct ops_found {
    struct osbq_fields *list; /* *count of them, room for cap */
    size_t *count;
    size_t cap;
    struct strings seen; /* the ids read */
};

/* One level of related_ops: reads the operations of ids, appends them to found and the ids of
 * their predecessors not read yet to next. */
static int related_ops_level(struct osbq_store *store, redisContext *c, const struct strings *ids,
                             struct ops_found *found, struct strings *next, struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    struct strings op_keys = {0};
    struct osbq_fields *level = calloc(ids->n, sizeof *level);
    bool ok = level != NULL;
    for (size_t i = 0; ok && i < ids->n; i++)
        ok = store_id_key(store, key, sizeof key, "op", ids->v[i]) == 0 &&
             strings_push(&op_keys.v, &op_keys.n, &op_keys.cap, key);
    if (ok && *found->count + ids->n > found->cap) {
        size_t grown = (*found->count + ids->n) * 2;
        struct osbq_fields *more = realloc(found->list, grown * sizeof *more);
        if ((ok = more != NULL)) {
            found->list = more;
            found->cap = grown;
        }
    }
    int rc = ok ? fetch_records(c, op_keys.v, ids->v, ids->n, level, err)
                : osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; rc == 0 && i < ids->n; i++) {
        if (level[i].count == 0)
            continue;
        const char *prev = osbq_fields_get(&level[i], "prev_op");
        bool known = false;
        for (size_t k = 0; prev != NULL && k < found->seen.n; k++)
            known = known || strcmp(found->seen.v[k], prev) == 0;
        if (prev != NULL && !known && !strings_push(&next->v, &next->n, &next->cap, prev))
            rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        found->list[(*found->count)++] = level[i];
        memset(&level[i], 0, sizeof level[i]);
    }
    for (size_t i = 0; rc == 0 && i < ids->n; i++)
        if (!strings_push(&found->seen.v, &found->seen.n, &found->seen.cap, ids->v[i]))
            rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    osbq_fields_array_free(level, level != NULL ? ids->n : 0);
    strings_clear(&op_keys);
    return rc;
}

/* The operations: the instance's and each binding's last, then each one's predecessor (prev_op,
 * written by the begin scripts), level by level, each level one pipeline. Bounded: a cycle
 * cannot happen, but a record written by hand could make one. */
static int related_ops(struct osbq_store *store, redisContext *c, const char *last_op,
                       const struct osbq_fields *bindings, size_t binding_count,
                       struct osbq_fields **ops, size_t *op_count, struct osbq_error *err)
{
    struct strings ids = {0};
    struct ops_found found = {.count = op_count};
    int rc = 0;
    if (last_op != NULL && !strings_push(&ids.v, &ids.n, &ids.cap, last_op))
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; rc == 0 && i < binding_count; i++) {
        const char *op = osbq_fields_get(&bindings[i], "last_op");
        if (op != NULL && !strings_push(&ids.v, &ids.n, &ids.cap, op))
            rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    }
    while (rc == 0 && ids.n > 0 && *op_count < OSBQ_STORE_RELATED_OPS_MAX) {
        struct strings next = {0};
        rc = related_ops_level(store, c, &ids, &found, &next, err);
        strings_clear(&ids);
        ids = next;
    }
    strings_clear(&ids);
    strings_clear(&found.seen);
    *ops = found.list;
    return rc;
}

int osbq_store_instance_related(struct osbq_store *store, const char *instance_id,
                                const char *last_op, struct osbq_fields **bindings,
                                size_t *binding_count, struct osbq_fields **ops, size_t *op_count,
                                struct osbq_error *err)
{
    *bindings = *ops = NULL;
    *binding_count = *op_count = 0;
    char set[STORE_KEY_MAX];
    if (store_id_key(store, set, sizeof set, "bindings", instance_id) < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "instance id too long");
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    int rc = related_bindings(c, set, bindings, binding_count, err);
    if (rc == 0)
        rc = related_ops(store, c, last_op, *bindings, *binding_count, ops, op_count, err);
    store_release(store, c);
    if (rc < 0) {
        osbq_fields_array_free(*bindings, *binding_count);
        osbq_fields_array_free(*ops, *op_count);
        *bindings = *ops = NULL;
        *binding_count = *op_count = 0;
    }
    return rc;
}

/* Operations begun by this release do not copy their instance's service_id nor keep an attempt
 * beside their claims, which counts the same (docs/decisions/0041): an operator still sees both,
 * the attempt from the claims and the service from the instance. */
static int implied_fields(struct osbq_store *store, struct osbq_fields *op, struct osbq_error *err)
{
    const char *claims = osbq_fields_get(op, "claims");
    if (osbq_fields_get(op, "attempt") == NULL && claims != NULL &&
        osbq_fields_add(op, "attempt", claims, err) < 0)
        return -1;
    const char *instance_id = osbq_fields_get(op, "instance");
    if (osbq_fields_get(op, "service_id") != NULL || instance_id == NULL)
        return 0;
    struct osbq_fields instance = {0};
    int rc = osbq_store_instance_record(store, instance_id, &instance, err);
    const char *service_id = rc > 0 ? osbq_fields_get(&instance, "service_id") : NULL;
    if (service_id != NULL)
        rc = osbq_fields_add(op, "service_id", service_id, err);
    osbq_fields_clear(&instance);
    return rc < 0 ? -1 : 0;
}

int osbq_store_operation_get(struct osbq_store *store, const char *operation_id,
                             struct osbq_fields *op, char ***history, size_t *history_count,
                             struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    if (store_id_key(store, key, sizeof key, "op", operation_id) < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "operation id too long");
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    redisAppendCommand(c, "HGETALL %s", key);
    redisAppendCommand(c, "HGET %s history", key);
    redisReply *replies[2];
    int rc = store_replies_collect(c, replies, 2, "operation", err);
    store_release(store, c);
    if (rc < 0)
        return -1;
    struct osbq_fields fields = {0};
    char **events = NULL;
    size_t count = 0;
    if (replies[0]->type != REDIS_REPLY_ARRAY || replies[0]->elements == 0) {
        rc = 0;
        goto out;
    }
    if (fields_from_reply(replies[0], NULL, NULL, 0, &fields, err) < 0 ||
        implied_fields(store, &fields, err) < 0) {
        rc = -1;
        goto out;
    }
    bool has_history = replies[1]->type == REDIS_REPLY_STRING;
    events = store_history_events(&fields, has_history ? replies[1]->str : NULL,
                                  has_history ? replies[1]->len : 0, &count);
    if (events == NULL) {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out;
    }
    *op = fields;
    *history = events;
    *history_count = count;
    memset(&fields, 0, sizeof fields);
    events = NULL;
    rc = 1;
out:
    osbq_fields_clear(&fields);
    osbq_store_strings_free(events);
    freeReplyObject(replies[0]);
    freeReplyObject(replies[1]);
    return rc;
}
