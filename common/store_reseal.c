/* Binding results at rest, as osbq-ctl reencrypt walks and rewrites them: read in SCAN steps,
 * replaced one by one with a compare-and-set, so a finish or an unbind running meanwhile wins. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* Frees one entry's strings; the result may hold plaintext credentials, so it is zeroed. */
static void stored_result_clear(struct osbq_stored_result *r)
{
    free(r->key);
    free(r->instance_id);
    free(r->binding_id);
    if (r->result != NULL) {
        memset(r->result, 0, strlen(r->result));
        free(r->result);
    }
    memset(r, 0, sizeof *r);
}

void osbq_stored_results_free(struct osbq_stored_result *results, size_t n)
{
    if (results == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        stored_result_clear(&results[i]);
    free(results);
}

int osbq_store_scan_results(struct osbq_store *store, uint64_t *cursor, unsigned count,
                            struct osbq_stored_result **results, size_t *n, struct osbq_error *err)
{
    char pattern[STORE_KEY_MAX];
    if (osbq_store_key(store, pattern, sizeof pattern, "binding:*") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    int rc = -1;
    struct osbq_stored_result *list = NULL;
    size_t found = 0;
    redisReply *scan = NULL;
    const redisReply *keys = NULL;
    uint64_t next = 0;
    if (store_scan_step(c, pattern, *cursor, count, &scan, &keys, &next, err) < 0)
        goto out;
    list = calloc(keys->elements + 1, sizeof *list);
    if (list == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < keys->elements; i++)
        redisAppendCommand(c, "HMGET %b instance_id binding_id result", keys->element[i]->str,
                           keys->element[i]->len);
    /* Every reply is read, even after a failure, so the connection stays in step. */
    bool failed = false;
    for (size_t i = 0; i < keys->elements; i++) {
        redisReply *got = NULL;
        if (redisGetReply(c, (void **)&got) != REDIS_OK) {
            osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis HMGET: %s", c->errstr);
            failed = true;
            break;
        }
        struct osbq_stored_result *r = &list[found];
        /* Records without a result, or without the ids its sealing is bound to (begin_binding
         * writes both ids with the record: none osbq made), are not results to rewrite. */
        bool usable = got->type == REDIS_REPLY_ARRAY && got->elements == 3;
        for (size_t k = 0; usable && k < 3; k++)
            usable = got->element[k]->type == REDIS_REPLY_STRING;
        if (!failed && usable) {
            r->key = strndup(keys->element[i]->str, keys->element[i]->len);
            r->instance_id = strndup(got->element[0]->str, got->element[0]->len);
            r->binding_id = strndup(got->element[1]->str, got->element[1]->len);
            r->result = strndup(got->element[2]->str, got->element[2]->len);
            found++;
            if (r->key == NULL || r->instance_id == NULL || r->binding_id == NULL ||
                r->result == NULL) {
                osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
                failed = true;
            }
        }
        freeReplyObject(got);
    }
    if (failed)
        goto out;
    *cursor = next;
    *results = list;
    *n = found;
    list = NULL;
    rc = 0;
out:
    osbq_stored_results_free(list, found);
    freeReplyObject(scan);
    store_release(store, c);
    return rc;
}

int osbq_store_result_replace(struct osbq_store *store, const char *key, const char *expected,
                              const char *replacement, struct osbq_error *err)
{
    const char *argv[] = {key, expected, replacement};
    redisReply *reply = store_eval(store, SCRIPT_RESEAL, 1, 3, argv, NULL, err);
    if (reply == NULL)
        return -1;
    int rc = reply->type == REDIS_REPLY_INTEGER
                 ? (int)(reply->integer == 1)
                 : osbq_error_set(err, OSBQ_ERR_INTERNAL, "reseal: unexpected reply");
    freeReplyObject(reply);
    return rc;
}
