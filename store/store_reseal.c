/* Binding results at rest, as osbq-ctl reencrypt walks and rewrites them: read in SCAN steps,
 * replaced one by one with a compare-and-set, so a finish or an unbind running meanwhile wins. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "store_admin.h"
#include "store_internal.h"
#include "store_scripts.h"

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

/* The results one scan step found. */
struct results_step {
    struct osbq_stored_result *list; /* allocated at the first reply */
    size_t found;                    /* entries filled */
};

static int take_result(void *ctx, const redisReply *key, const redisReply *got, size_t i,
                       size_t count, struct osbq_error *err)
{
    struct results_step *step = ctx;
    if (i == 0 && (step->list = calloc(count, sizeof *step->list)) == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    /* Records without a result, or without the ids its sealing is bound to (begin_binding
     * writes both ids with the record: none osbq made), are not results to rewrite. */
    bool usable = got->type == REDIS_REPLY_ARRAY && got->elements == 3;
    for (size_t k = 0; usable && k < 3; k++)
        usable = got->element[k]->type == REDIS_REPLY_STRING;
    if (!usable)
        return 0;
    struct osbq_stored_result *r = &step->list[step->found++];
    r->key = strndup(key->str, key->len);
    r->instance_id = strndup(got->element[0]->str, got->element[0]->len);
    r->binding_id = strndup(got->element[1]->str, got->element[1]->len);
    r->result = strndup(got->element[2]->str, got->element[2]->len);
    if (r->key == NULL || r->instance_id == NULL || r->binding_id == NULL || r->result == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    return 0;
}

int osbq_store_scan_results(struct osbq_store *store, uint64_t *cursor, unsigned count,
                            struct osbq_stored_result **results, size_t *n, struct osbq_error *err)
{
    char pattern[STORE_KEY_MAX];
    if (store_key(store, pattern, sizeof pattern, "binding:*") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    redisContext *c = store_acquire(store, err);
    if (c == NULL)
        return -1;
    struct results_step step = {0};
    int rc = store_scan_fetch(c, pattern, cursor, count, "HMGET %b instance_id binding_id result",
                              take_result, &step, err);
    store_release(store, c);
    if (rc < 0) {
        osbq_stored_results_free(step.list, step.found);
        return -1;
    }
    *results = step.list;
    *n = step.found;
    return 0;
}

int osbq_store_result_replace(struct osbq_store *store, const char *key, const char *expected,
                              const char *replacement, struct osbq_error *err)
{
    const char *keys[RESEAL_KEY_COUNT] = {[RESEAL_KEY_BINDING] = key};
    const char *args[RESEAL_ARG_COUNT] = {
        [RESEAL_ARG_EXPECTED] = expected, [RESEAL_ARG_REPLACEMENT] = replacement};
    redisReply *reply = store_eval(store, SCRIPT_RESEAL, keys, args, err);
    if (reply == NULL)
        return -1;
    int rc = reply->type == REDIS_REPLY_INTEGER
                 ? (int)(reply->integer == 1)
                 : osbq_error_set(err, OSBQ_ERR_INTERNAL, "reseal: unexpected reply");
    freeReplyObject(reply);
    return rc;
}
