/* The live records' count (store/lua/lib/record_counts.lua): read, built, dropped. */
#include "store_counts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "store_scripts.h"

/* Parses a count field "<i|b>\n<state>\n<plan id>\n<version>" (the plan id may hold a newline:
 * the version never does) and its value into *line. 1, 0 when it is not a count's field ("gen",
 * "built", "walk") or counts nothing, -1 when out of memory. */
static int line_parse(const char *field, size_t len, const char *value,
                      struct osbq_record_count *line)
{
    if (len < 2 || (field[0] != 'i' && field[0] != 'b') || field[1] != '\n')
        return 0;
    /* A line fallen to 0 stays in the hash (lib/record_counts.lua): nothing to show. */
    long long count = strtoll(value, NULL, 10);
    if (count == 0)
        return 0;
    const char *state = field + 2, *end = field + len;
    const char *state_end = memchr(state, '\n', (size_t)(end - state));
    if (state_end == NULL)
        return 0;
    const char *version = end;
    while (version > state_end + 1 && version[-1] != '\n')
        version--;
    if (version == state_end + 1)
        return 0;
    version--; /* the newline before the version */
    line->binding = field[0] == 'b';
    line->state = strndup(state, (size_t)(state_end - state));
    line->plan_id = strndup(state_end + 1, (size_t)(version - state_end - 1));
    line->maintenance_version = strndup(version + 1, (size_t)(end - version - 1));
    line->count = count;
    return line->state != NULL && line->plan_id != NULL && line->maintenance_version != NULL ? 1
                                                                                             : -1;
}

/* Runs command ("HGETALL", "DEL") on the count's hash: its reply (caller frees), or NULL with
 * err. */
static redisReply *on_counts(struct osbq_store *store, const char *command, struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    if (store_key(store, key, sizeof key, "record_counts") < 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
        return NULL;
    }
    const char *argv[] = {command, key};
    return store_command_argv(store, 2, argv, err);
}

void osbq_record_counts_clear(struct osbq_record_counts *counts)
{
    for (size_t i = 0; i < counts->count; i++) {
        free(counts->list[i].state);
        free(counts->list[i].plan_id);
        free(counts->list[i].maintenance_version);
    }
    free(counts->list);
    memset(counts, 0, sizeof *counts);
}

int osbq_store_record_counts(struct osbq_store *store, struct osbq_record_counts *out,
                             struct osbq_error *err)
{
    memset(out, 0, sizeof *out);
    redisReply *reply = on_counts(store, "HGETALL", err);
    if (reply == NULL)
        return -1;
    int rc = 0;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0) {
        freeReplyObject(reply);
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "record counts: unexpected reply");
    }
    size_t pairs = reply->elements / 2;
    out->list = pairs > 0 ? calloc(pairs, sizeof *out->list) : NULL;
    const char *gen = NULL, *built = NULL;
    for (size_t i = 0; rc == 0 && i < pairs; i++) {
        const redisReply *name = reply->element[2 * i], *value = reply->element[2 * i + 1];
        if (out->list == NULL) {
            rc = -1;
            break;
        }
        if (name->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING)
            continue;
        if (strcmp(name->str, "gen") == 0)
            gen = value->str;
        else if (strcmp(name->str, "built") == 0)
            built = value->str;
        int got = line_parse(name->str, name->len, value->str, &out->list[out->count]);
        if (got != 0)
            out->count++;
        if (got < 0)
            rc = -1;
    }
    out->kept = gen != NULL;
    out->built = gen != NULL && built != NULL && strcmp(gen, built) == 0;
    freeReplyObject(reply);
    if (rc < 0) {
        osbq_record_counts_clear(out);
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    }
    return 0;
}

int64_t osbq_count_walk_pause_ms(int64_t took_ms)
{
    int64_t pause = took_ms * OSBQ_COUNT_WALK_PAUSE_FACTOR;
    return pause > OSBQ_COUNT_WALK_PAUSE_MS ? pause : OSBQ_COUNT_WALK_PAUSE_MS;
}

int osbq_store_count_records_step(struct osbq_store *store, unsigned batch, int64_t *counted,
                                  struct osbq_error *err)
{
    char key[STORE_KEY_MAX], prefix[96], count[16];
    if (store_key(store, key, sizeof key, "record_counts") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    (void)store_key_prefix(store, prefix, sizeof prefix);
    (void)snprintf(count, sizeof count, "%u", batch);
    const char *keys[COUNT_RECORDS_KEY_COUNT] = {[COUNT_RECORDS_KEY_COUNTS] = key};
    const char *args[COUNT_RECORDS_ARG_COUNT] = {
        [COUNT_RECORDS_ARG_PREFIX] = prefix, [COUNT_RECORDS_ARG_BATCH] = count};
    redisReply *reply = store_eval(store, SCRIPT_COUNT_RECORDS, keys, args, err);
    if (reply == NULL)
        return -1;
    int64_t built = store_element_int(reply, 1, -1);
    *counted = store_element_int(reply, 2, 0);
    freeReplyObject(reply);
    if (built != 0 && built != 1)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "count_records: unexpected reply");
    return (int)built;
}

int osbq_store_record_counts_drop(struct osbq_store *store, struct osbq_error *err)
{
    redisReply *reply = on_counts(store, "DEL", err);
    freeReplyObject(reply);
    return reply != NULL ? 0 : -1;
}
