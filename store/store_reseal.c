/* Values sealed at rest, as osbq-ctl reencrypt walks and rewrites them: read in SCAN steps,
 * replaced one by one with a compare-and-set, so a finish, an update or an unbind running
 * meanwhile wins. */
#include <stdlib.h>
#include <string.h>

#include "store_admin.h"
#include "store_internal.h"
#include "store_scripts.h"

const char *const osbq_sealed_field_names[OSBQ_SEALED_COUNT] = {
    [OSBQ_SEALED_RESULT] = "result",   [OSBQ_SEALED_PARAMETERS] = "parameters",
    [OSBQ_SEALED_CONTEXT] = "context", [OSBQ_SEALED_BIND_RESOURCE] = "bind_resource",
    [OSBQ_SEALED_RESUME] = "resume",
};

const char *osbq_sealed_field_place(enum osbq_sealed_field field)
{
    return field == OSBQ_SEALED_RESULT ? NULL : osbq_sealed_field_names[field];
}

/* What each walk reads: the key pattern, and one HMGET of the ids (instance, binding), the state,
 * then every sealed field in osbq_sealed_field order (fields a kind never has read as nil). The
 * ids of an operation are its `instance` and `binding`. */
static const struct {
    const char *pattern;
    const char *command;
} walks[] = {
    [OSBQ_SEALED_INSTANCES] = {"instance:*", "HMGET %b instance_id binding_id state result "
                                             "parameters context bind_resource resume"},
    [OSBQ_SEALED_BINDINGS] = {"binding:*", "HMGET %b instance_id binding_id state result "
                                           "parameters context bind_resource resume"},
    [OSBQ_SEALED_OPERATIONS] = {"op:*", "HMGET %b instance binding state result parameters "
                                        "context bind_resource resume"},
};
#define HEAD_FIELDS 3 /* instance, binding, state */

/* Frees one entry's strings; values may be plaintext, so they are zeroed. */
static void sealed_values_clear(struct osbq_sealed_values *r)
{
    free(r->key);
    free(r->instance_id);
    free(r->binding_id);
    for (size_t k = 0; k < OSBQ_SEALED_COUNT; k++) {
        if (r->values[k] != NULL) {
            memset(r->values[k], 0, strlen(r->values[k]));
            free(r->values[k]);
        }
    }
    memset(r, 0, sizeof *r);
}

void osbq_sealed_values_free(struct osbq_sealed_values *records, size_t n)
{
    if (records == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        sealed_values_clear(&records[i]);
    free(records);
}

/* The records one scan step found. */
struct sealed_step {
    enum osbq_sealed_records which;
    struct osbq_sealed_values *list; /* allocated at the first reply */
    size_t found;                    /* entries filled */
};

static char *element_dup(const redisReply *got, size_t i)
{
    const redisReply *e = got->element[i];
    return e->type == REDIS_REPLY_STRING ? strndup(e->str, e->len) : NULL;
}

static int take_values(void *ctx, const redisReply *key, const redisReply *got, size_t i,
                       size_t count, struct osbq_error *err)
{
    struct sealed_step *step = ctx;
    if (i == 0 && (step->list = calloc(count, sizeof *step->list)) == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    /* Keys of another type under the pattern (an error reply), and records without the instance
     * their seals are bound to (none osbq made), are not walked; a binding needs its id too. */
    if (got->type != REDIS_REPLY_ARRAY || got->elements != HEAD_FIELDS + OSBQ_SEALED_COUNT ||
        got->element[0]->type != REDIS_REPLY_STRING ||
        (step->which == OSBQ_SEALED_BINDINGS && got->element[1]->type != REDIS_REPLY_STRING))
        return 0;
    bool any = false;
    for (size_t k = 0; k < OSBQ_SEALED_COUNT; k++)
        any = any || got->element[HEAD_FIELDS + k]->type == REDIS_REPLY_STRING;
    const redisReply *state = got->element[2];
    bool in_flight = step->which == OSBQ_SEALED_OPERATIONS && state->type == REDIS_REPLY_STRING &&
                     strcmp(state->str, "succeeded") != 0 && strcmp(state->str, "failed") != 0;
    if (!any && !in_flight)
        return 0;
    struct osbq_sealed_values *r = &step->list[step->found++];
    r->key = strndup(key->str, key->len);
    r->instance_id = element_dup(got, 0);
    r->binding_id = got->element[1]->type == REDIS_REPLY_STRING ? element_dup(got, 1) : strdup("");
    r->in_flight = in_flight;
    bool complete = r->key != NULL && r->instance_id != NULL && r->binding_id != NULL;
    for (size_t k = 0; k < OSBQ_SEALED_COUNT; k++) {
        const redisReply *e = got->element[HEAD_FIELDS + k];
        if (e->type == REDIS_REPLY_STRING)
            complete = complete && (r->values[k] = strndup(e->str, e->len)) != NULL;
    }
    return complete ? 0 : osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
}

int osbq_store_scan_sealed(struct osbq_store *store, enum osbq_sealed_records which,
                           uint64_t *cursor, unsigned count, struct osbq_sealed_values **records,
                           size_t *n, struct osbq_error *err)
{
    char pattern[STORE_KEY_MAX];
    redisContext *c = store_key_acquire(store, pattern, walks[which].pattern, err);
    if (c == NULL)
        return -1;
    struct sealed_step step = {.which = which};
    int rc =
        store_scan_fetch(c, pattern, cursor, count, walks[which].command, take_values, &step, err);
    store_release(store, c);
    if (rc < 0) {
        osbq_sealed_values_free(step.list, step.found);
        return -1;
    }
    *records = step.list;
    *n = step.found;
    return 0;
}

int osbq_store_sealed_replace(struct osbq_store *store, const char *key,
                              enum osbq_sealed_field field, const char *expected,
                              const char *replacement, struct osbq_error *err)
{
    const char *keys[RESEAL_KEY_COUNT] = {[RESEAL_KEY_RECORD] = key};
    const char *args[RESEAL_ARG_COUNT] = {[RESEAL_ARG_FIELD] = osbq_sealed_field_names[field],
                                          [RESEAL_ARG_EXPECTED] = expected,
                                          [RESEAL_ARG_REPLACEMENT] = replacement};
    redisReply *reply = store_eval(store, SCRIPT_RESEAL, keys, args, err);
    if (reply == NULL)
        return -1;
    int rc = reply->type == REDIS_REPLY_INTEGER
                 ? (int)(reply->integer == 1)
                 : osbq_error_set(err, OSBQ_ERR_INTERNAL, "reseal: unexpected reply");
    freeReplyObject(reply);
    return rc;
}
