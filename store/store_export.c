/* osbq-ctl export and import: one instance with what belongs to it, read in one step
 * (store/lua/export.lua) and written in one step (store/lua/import.lua), its records in a form
 * that fits any namespace: the fields that name Redis keys hold them without "<ns>:"
 * (docs/decisions/0055). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_admin.h"
#include "store_internal.h"
#include "store_scripts.h"

/* The fields whose values are Redis keys, one a line (begin_instance.lua, begin_binding.lua,
 * lib/in_progress.lua): the instance's quota counters, and an operation's keys of its records,
 * quota counters and in-progress counter. */
static bool names_keys(const char *field)
{
    static const char *const key_fields[] = {"quota_keys",     "quota_taken", "quotas_held",
                                             "instance_key",   "binding_key", "bindings_key",
                                             "in_progress_key"};
    for (size_t i = 0; i < sizeof key_fields / sizeof key_fields[0]; i++)
        if (strcmp(field, key_fields[i]) == 0)
            return true;
    return false;
}

/* value (len bytes, keys one a line) with from_prefix taken off each line that starts with it
 * and to_prefix put before each line (either may be ""). New string, or NULL. */
static char *keys_moved(const char *value, size_t len, const char *from_prefix,
                        const char *to_prefix)
{
    size_t from_len = strlen(from_prefix), to_len = strlen(to_prefix), lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += value[i] == '\n';
    char *out = malloc(len + lines * to_len + 1);
    if (out == NULL)
        return NULL;
    size_t at = 0;
    for (const char *line = value, *end = value + len; line <= end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *stop = nl != NULL ? nl : end;
        if ((size_t)(stop - line) >= from_len && memcmp(line, from_prefix, from_len) == 0)
            line += from_len;
        memcpy(out + at, to_prefix, to_len);
        at += to_len;
        memcpy(out + at, line, (size_t)(stop - line));
        at += (size_t)(stop - line);
        if (nl == NULL)
            break;
        out[at++] = '\n';
        line = nl + 1;
    }
    out[at] = '\0';
    return out;
}

/* Frees a value that may hold credentials (a binding's result): zeroed first. */
static void value_wipe(char *value)
{
    if (value != NULL)
        memset(value, 0, strlen(value));
}

static void record_clear(struct osbq_export_record *r)
{
    free(r->id);
    for (size_t i = 0; i < r->fields.count; i++)
        value_wipe(r->fields.values[i]);
    osbq_fields_clear(&r->fields);
}

void osbq_export_instance_clear(struct osbq_export_instance *instance)
{
    osbq_fields_clear(&instance->record);
    for (size_t i = 0; i < instance->binding_count; i++)
        record_clear(&instance->bindings[i]);
    for (size_t i = 0; i < instance->operation_count; i++)
        record_clear(&instance->operations[i]);
    free(instance->bindings);
    free(instance->operations);
    memset(instance, 0, sizeof *instance);
}

/* A field of an instance's or binding's hash that belongs to its stack, not to the record:
 * its locks, and the generation of the stack's record counts it is counted in
 * (store/lua/lib/record_counts.lua). An export leaves them out. */
static bool stack_own_field(const char *name)
{
    return strcmp(name, "lock_x") == 0 || strcmp(name, "lock_s") == 0 ||
           strcmp(name, "counted") == 0;
}

/* An HGETALL list into *out, without the stack's own fields when skip_locks, the keys' prefix
 * taken off. 0, or -1 with err. */
static int fields_from_list(const redisReply *list, const char *prefix, bool skip_locks,
                            struct osbq_fields *out, struct osbq_error *err)
{
    memset(out, 0, sizeof *out);
    if (list->type != REDIS_REPLY_ARRAY || list->elements % 2 != 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "export: unexpected reply");
    size_t pairs = list->elements / 2;
    out->names = calloc(pairs + 1, sizeof *out->names);
    out->values = calloc(pairs + 1, sizeof *out->values);
    if (out->names == NULL || out->values == NULL)
        goto oom;
    for (size_t i = 0; i < pairs; i++) {
        const redisReply *name = list->element[2 * i], *value = list->element[2 * i + 1];
        if (name->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING) {
            osbq_fields_clear(out);
            return osbq_error_set(err, OSBQ_ERR_INTERNAL, "export: unexpected reply");
        }
        if (skip_locks && stack_own_field(name->str))
            continue;
        if (osbq_fields_take(out, strndup(name->str, name->len),
                             names_keys(name->str) ? keys_moved(value->str, value->len, prefix, "")
                                                   : strndup(value->str, value->len)) < 0)
            goto oom;
    }
    return 0;
oom:
    osbq_fields_clear(out);
    return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
}

/* The export script's answer into *out. 0, or -1 with err. */
static int instance_from_reply(const redisReply *reply, const char *prefix,
                               struct osbq_export_instance *out, struct osbq_error *err)
{
    const redisReply *bindings = reply->element[2], *ops = reply->element[3];
    if (bindings->type != REDIS_REPLY_ARRAY || ops->type != REDIS_REPLY_ARRAY ||
        ops->elements % 2 != 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "export: unexpected reply");
    if (fields_from_list(reply->element[1], prefix, true, &out->record, err) < 0)
        return -1;
    if (bindings->elements > 0 &&
        (out->bindings = calloc(bindings->elements, sizeof *out->bindings)) == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; i < bindings->elements; i++) {
        struct osbq_export_record *b = &out->bindings[out->binding_count++];
        if (fields_from_list(bindings->element[i], prefix, false, &b->fields, err) < 0)
            return -1;
        /* begin_binding.lua writes the id with the record; one without it is no binding osbq
         * made, and has no id to export it under. */
        const char *id = osbq_fields_get(&b->fields, "binding_id");
        if (id == NULL)
            return osbq_error_set(err, OSBQ_ERR_INVALID, "a binding record has no binding_id");
        if ((b->id = strdup(id)) == NULL)
            return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    }
    if (ops->elements > 0 &&
        (out->operations = calloc(ops->elements / 2, sizeof *out->operations)) == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; i < ops->elements; i += 2) {
        struct osbq_export_record *op = &out->operations[out->operation_count++];
        const redisReply *id = ops->element[i];
        if (id->type != REDIS_REPLY_STRING)
            return osbq_error_set(err, OSBQ_ERR_INTERNAL, "export: unexpected reply");
        if ((op->id = strndup(id->str, id->len)) == NULL)
            return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        if (fields_from_list(ops->element[i + 1], prefix, false, &op->fields, err) < 0)
            return -1;
    }
    return 0;
}

int osbq_store_export_instance(struct osbq_store *store, const char *instance_id,
                               struct osbq_export_instance *out, char **running_operation,
                               struct osbq_error *err)
{
    memset(out, 0, sizeof *out);
    *running_operation = NULL;
    char record[STORE_KEY_MAX], bindings[STORE_KEY_MAX], prefix[96], ops_max[16];
    if (store_id_key(store, record, sizeof record, "instance", instance_id) < 0 ||
        store_id_key(store, bindings, sizeof bindings, "bindings", instance_id) < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "instance id too long");
    (void)store_key_prefix(store, prefix, sizeof prefix);
    (void)snprintf(ops_max, sizeof ops_max, "%d", OSBQ_STORE_RELATED_OPS_MAX);
    const char *keys[EXPORT_KEY_COUNT] = {
        [EXPORT_KEY_INSTANCE] = record, [EXPORT_KEY_BINDINGS] = bindings};
    const char *args[EXPORT_ARG_COUNT] = {
        [EXPORT_ARG_PREFIX] = prefix, [EXPORT_ARG_OPS_MAX] = ops_max};
    redisReply *reply = store_eval(store, SCRIPT_EXPORT, keys, args, err);
    if (reply == NULL)
        return -1;
    int64_t status = store_element_int(reply, 0, -1);
    int rc;
    if (status == 0) {
        rc = 0;
    } else if (status == 2 && reply->elements == 2) {
        *running_operation = store_element_dup(reply, 1);
        if (*running_operation == NULL && (*running_operation = strdup("")) == NULL)
            rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        else
            rc = 2;
    } else if (status == 1 && reply->elements == 4) {
        rc = instance_from_reply(reply, prefix, out, err) < 0 ? -1 : 1;
        if (rc < 0)
            osbq_export_instance_clear(out);
    } else {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "export: unexpected reply");
    }
    freeReplyObject(reply);
    return rc;
}

/* fields as a flat JSON list [name, value, ...], the keys named put in the namespace of
 * prefix; NULL when a value is not UTF-8 or out of memory. */
static json_t *fields_list(const struct osbq_fields *fields, const char *prefix)
{
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < fields->count; i++) {
        char *moved = names_keys(fields->names[i])
                          ? keys_moved(fields->values[i], strlen(fields->values[i]), "", prefix)
                          : NULL;
        const char *value = moved != NULL ? moved : fields->values[i];
        json_t *name_json = json_string(fields->names[i]), *value_json = json_string(value);
        free(moved);
        if (name_json == NULL || value_json == NULL || json_array_append_new(list, name_json) < 0 ||
            json_array_append_new(list, value_json) < 0) {
            json_decref(value_json);
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* The import script's records: {"instance", "bindings", "operations"}, every key in full.
 * NULL with err. */
static char *import_records(struct osbq_store *store, const char *instance_id,
                            const struct osbq_export_instance *in, const char *prefix,
                            struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    json_t *bindings = json_array(), *ops = json_array();
    json_t *root = json_pack("{s:o, s:o, s:o}", "instance", fields_list(&in->record, prefix),
                             "bindings", bindings, "operations", ops);
    bool ok = root != NULL;
    for (size_t i = 0; ok && i < in->binding_count; i++) {
        ok = store_binding_key(store, key, sizeof key, instance_id, in->bindings[i].id) == 0;
        ok = ok && json_array_append_new(
                       bindings,
                       json_pack("[s, o]", key, fields_list(&in->bindings[i].fields, prefix))) == 0;
    }
    for (size_t i = 0; ok && i < in->operation_count; i++) {
        ok = store_id_key(store, key, sizeof key, "op", in->operations[i].id) == 0;
        ok = ok && json_array_append_new(
                       ops, json_pack("[s, o]", key,
                                      fields_list(&in->operations[i].fields, prefix))) == 0;
    }
    char *text = ok ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (text == NULL)
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "an id too long, a value that is not UTF-8, or out of memory");
    return text;
}

int osbq_store_import_instance(struct osbq_store *store, const char *instance_id,
                               const struct osbq_export_instance *in, const char *by,
                               char **existing_state, struct osbq_error *err)
{
    *existing_state = NULL;
    char record[STORE_KEY_MAX], bindings[STORE_KEY_MAX], counts[STORE_KEY_MAX], prefix[96],
        retention[16], events_max[16];
    if (store_id_key(store, record, sizeof record, "instance", instance_id) < 0 ||
        store_id_key(store, bindings, sizeof bindings, "bindings", instance_id) < 0 ||
        store_key(store, counts, sizeof counts, "record_counts") < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "instance id too long");
    (void)store_key_prefix(store, prefix, sizeof prefix);
    (void)snprintf(retention, sizeof retention, "%u", store->cfg->retention_s);
    (void)snprintf(events_max, sizeof events_max, "%u", store->cfg->events_max);
    char *records = import_records(store, instance_id, in, prefix, err);
    if (records == NULL)
        return -1;
    const char *keys[IMPORT_KEY_COUNT] = {[IMPORT_KEY_INSTANCE] = record,
                                          [IMPORT_KEY_BINDINGS] = bindings,
                                          [IMPORT_KEY_COUNTS] = counts};
    const char *args[IMPORT_ARG_COUNT] = {[IMPORT_ARG_RECORDS] = records,
                                          [IMPORT_ARG_RETENTION] = retention,
                                          [IMPORT_ARG_PREFIX] = prefix,
                                          [IMPORT_ARG_BY] = by,
                                          [IMPORT_ARG_EVENTS_MAX] = events_max};
    redisReply *reply = store_eval(store, SCRIPT_IMPORT, keys, args, err);
    value_wipe(records);
    free(records);
    if (reply == NULL)
        return -1;
    int64_t status = store_element_int(reply, 0, -1);
    int rc;
    if (status == 1 || status == 2) {
        rc = (int)status;
    } else if (status == 0) {
        *existing_state = store_element_dup(reply, 1);
        rc = *existing_state != NULL || (*existing_state = strdup("")) != NULL
                 ? 0
                 : osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    } else {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "import: unexpected reply");
    }
    freeReplyObject(reply);
    return rc;
}
