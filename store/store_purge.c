/* osbq-ctl purge: the broker forgets an instance (with its bindings) or a binding, without any
 * backend (store/lua/purge.lua, docs/decisions/0053). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store_admin.h"
#include "store_internal.h"
#include "store_scripts.h"

int osbq_store_purge(struct osbq_store *store, const char *instance_id, const char *binding_id,
                     const char *by, struct osbq_purge *out, struct osbq_error *err)
{
    *out = (struct osbq_purge){0};
    char record[STORE_KEY_MAX], bindings[STORE_KEY_MAX], prefix[96], now[24], retention[16],
        events_max[16];
    int bad = binding_id != NULL
                  ? store_binding_key(store, record, sizeof record, instance_id, binding_id)
                  : store_id_key(store, record, sizeof record, "instance", instance_id);
    if (bad < 0 || store_id_key(store, bindings, sizeof bindings, "bindings", instance_id) < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
    (void)store_key_prefix(store, prefix, sizeof prefix);
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)snprintf(retention, sizeof retention, "%u", store->cfg->retention_s);
    (void)snprintf(events_max, sizeof events_max, "%u", store->cfg->events_max);
    const char *keys[PURGE_KEY_COUNT] = {
        [PURGE_KEY_RECORD] = record, [PURGE_KEY_BINDINGS] = bindings};
    const char *args[PURGE_ARG_COUNT] = {
        [PURGE_ARG_PREFIX] = prefix, [PURGE_ARG_BINDING] = binding_id != NULL ? "1" : "0",
        [PURGE_ARG_NOW] = now,       [PURGE_ARG_RETENTION] = retention,
        [PURGE_ARG_BY] = by,         [PURGE_ARG_EVENTS_MAX] = events_max,
    };
    redisReply *reply = store_eval(store, SCRIPT_PURGE, keys, args, err);
    if (reply == NULL)
        return -1;
    const redisReply *status =
        reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1 ? reply->element[0] : NULL;
    const redisReply *what =
        reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 ? reply->element[1] : NULL;
    int rc = status != NULL && status->type == REDIS_REPLY_INTEGER ? (int)status->integer : -1;
    if (rc == 1 && what != NULL && what->type == REDIS_REPLY_INTEGER) {
        out->bindings = (size_t)what->integer;
    } else if (rc == 2 && what != NULL && what->type == REDIS_REPLY_STRING) {
        out->running_operation = strdup(what->str);
        if (out->running_operation == NULL)
            rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    } else if (rc != 0) {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "purge: unexpected reply");
    }
    freeReplyObject(reply);
    return rc;
}
