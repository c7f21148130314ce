/* The store's reads for the gateway's requests: an instance, a binding, and an operation's
 * state for last_operation (declared in store_requests.h, whose begin calls store_requests.c
 * makes). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "store_requests.h"

struct osbq_store_call *osbq_store_instance_get_call(struct osbq_store *store,
                                                     const char *instance_id,
                                                     struct osbq_error *err)
{
    char inst[STORE_KEY_MAX];
    if (store_id_key(store, inst, sizeof inst, "instance", instance_id) < 0) {
        osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
        return NULL;
    }
    const char *argv[] = {"HMGET",         inst,         "state",   "service_id",
                          "plan_id",       "parameters", "context", "maintenance_version",
                          "dashboard_url", "metadata",   "lock_x",  "lock_s",
                          "platform"};
    return store_command_new((int)(sizeof argv / sizeof argv[0]), argv, NULL, err);
}

/* Takes call's HMGET reply of count fields, the first the record's state, into *fields[i]
 * (copies; NULL where the record has none): 1, 0 when the record has no state (none), or -1
 * with err. */
static int take_fields(struct osbq_store_call *call, char **const *fields, size_t count,
                       struct osbq_error *err)
{
    redisReply *reply = store_call_take_reply(call, err);
    if (reply == NULL)
        return -1;
    int rc = 0;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != count) {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "HMGET: unexpected reply");
    } else if ((*fields[0] = store_element_dup(reply, 0)) != NULL) {
        for (size_t i = 1; i < count; i++)
            *fields[i] = store_element_dup(reply, i);
        rc = 1;
    }
    freeReplyObject(reply);
    return rc;
}

int osbq_store_instance_get_result(struct osbq_store_call *call, struct osbq_instance *out,
                                   struct osbq_error *err)
{
    struct osbq_instance got = {0};
    char *lock_s = NULL;
    /* In the order osbq_store_instance_get_call asks for them. */
    char **const fields[] = {&got.state,         &got.service_id,
                             &got.plan_id,       &got.parameters,
                             &got.context,       &got.maintenance_version,
                             &got.dashboard_url, &got.metadata,
                             &got.lock_holder,   &lock_s,
                             &got.platform};
    int rc = take_fields(call, fields, sizeof fields / sizeof fields[0], err);
    if (rc > 0) {
        char *end = NULL;
        long n = lock_s != NULL ? strtol(lock_s, &end, 10) : 0;
        got.shared_holders = lock_s != NULL && end != lock_s && *end == '\0' ? n : 0;
        *out = got;
    }
    free(lock_s);
    return rc;
}

int osbq_store_instance_get(struct osbq_store *store, const char *instance_id,
                            struct osbq_instance *out, struct osbq_error *err)
{
    struct osbq_store_call *call =
        osbq_store_call_run_made(store, osbq_store_instance_get_call(store, instance_id, err));
    int rc = call != NULL ? osbq_store_instance_get_result(call, out, err) : -1;
    osbq_store_call_free(&call);
    return rc;
}

void osbq_instance_clear(struct osbq_instance *instance)
{
    free(instance->state);
    free(instance->service_id);
    free(instance->plan_id);
    free(instance->parameters);
    free(instance->context);
    free(instance->maintenance_version);
    free(instance->dashboard_url);
    free(instance->metadata);
    free(instance->lock_holder);
    free(instance->platform);
    memset(instance, 0, sizeof *instance);
}

static int flag_value(const redisReply *reply, size_t i)
{
    return store_element_is(reply, i, "1") ? 1 : store_element_is(reply, i, "0") ? 0 : -1;
}

struct osbq_store_call *osbq_store_last_operation_call(struct osbq_store *store,
                                                       const char *instance_id,
                                                       const char *binding_id,
                                                       const char *operation_id,
                                                       const char *platform, struct osbq_error *err)
{
    char key[STORE_KEY_MAX], prefix[96];
    int built = binding_id != NULL
                    ? store_binding_key(store, key, sizeof key, instance_id, binding_id)
                    : store_id_key(store, key, sizeof key, "instance", instance_id);
    if (built < 0) {
        osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
        return NULL;
    }
    (void)store_key_prefix(store, prefix, sizeof prefix);
    const char *keys[LAST_OPERATION_KEY_COUNT] = {[LAST_OPERATION_KEY_RECORD] = key};
    const char *args[LAST_OPERATION_ARG_COUNT] = {
        [LAST_OPERATION_ARG_OPERATION_ID] = operation_id ? operation_id : "",
        [LAST_OPERATION_ARG_PREFIX] = prefix,
        [LAST_OPERATION_ARG_INSTANCE_ID] = instance_id,
        [LAST_OPERATION_ARG_BINDING_ID] = binding_id ? binding_id : "",
        [LAST_OPERATION_ARG_PLATFORM] = platform ? platform : "",
    };
    return store_call_new(SCRIPT_LAST_OPERATION, keys, args, NULL, err);
}

/* The fields a poll reads of the operation alone, in the order osbq_store_poll_result reads
 * them. */
enum poll_field {
    POLL_KIND,
    POLL_INSTANCE,
    POLL_BINDING,
    POLL_PLATFORM,
    POLL_STATE,
    POLL_DESCRIPTION,
    POLL_INSTANCE_USABLE,
    POLL_UPDATE_REPEATABLE,
    POLL_CREATED_MS,
    POLL_PLAN_ID,
    POLL_PREV_PLAN_ID,
    POLL_SERVICE_ID,
    POLL_RECORD_GONE,
    POLL_FIELD_COUNT
};

struct osbq_store_call *osbq_store_poll_call(struct osbq_store *store, const char *operation_id,
                                             struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    if (store_id_key(store, key, sizeof key, "op", operation_id) < 0) {
        osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
        return NULL;
    }
    const char *argv[2 + POLL_FIELD_COUNT] = {
        "HMGET",
        key,
        [2 + POLL_KIND] = "kind",
        [2 + POLL_INSTANCE] = "instance",
        [2 + POLL_BINDING] = "binding",
        [2 + POLL_PLATFORM] = "platform",
        [2 + POLL_STATE] = "state",
        [2 + POLL_DESCRIPTION] = "description",
        [2 + POLL_INSTANCE_USABLE] = "instance_usable",
        [2 + POLL_UPDATE_REPEATABLE] = "update_repeatable",
        [2 + POLL_CREATED_MS] = "created_ms",
        [2 + POLL_PLAN_ID] = "plan_id",
        [2 + POLL_PREV_PLAN_ID] = "prev_plan_id",
        [2 + POLL_SERVICE_ID] = "service_id",
        [2 + POLL_RECORD_GONE] = "record_gone",
    };
    return store_command_new(2 + POLL_FIELD_COUNT, argv, NULL, err);
}

/* reply's element i is there and says text (NULL: is not there). An operation with a
 * service_id was begun by the previous release (store/lua/lib/release.lua). */
static bool poll_field_says(const redisReply *reply, enum poll_field i, const char *text)
{
    const redisReply *e = reply->element[i];
    if (text == NULL)
        return e->type == REDIS_REPLY_NIL;
    return e->type == REDIS_REPLY_STRING && strcmp(e->str, text) == 0;
}

/* The plan whose average duration sets an operation's Retry-After: an update's previous plan
 * (the steps that run are the old plan's), else its plan; as last_operation.lua picks it. */
static char *average_plan(const char *kind, char *plan_id, char *prev_plan_id)
{
    if (strcmp(kind, "update") == 0 && prev_plan_id != NULL && prev_plan_id[0] != '\0') {
        free(plan_id);
        return prev_plan_id;
    }
    free(prev_plan_id);
    return plan_id;
}

int osbq_store_poll_result(struct osbq_store_call *call, const char *instance_id,
                           const char *binding_id, const char *platform, struct osbq_last_op *out,
                           struct osbq_error *err)
{
    redisReply *reply = store_call_take_reply(call, err);
    if (reply == NULL)
        return -1;
    int rc = 0;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != POLL_FIELD_COUNT) {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "HMGET: unexpected reply");
    } else if (!poll_field_says(reply, POLL_KIND, NULL) &&
               poll_field_says(reply, POLL_INSTANCE, instance_id) &&
               poll_field_says(reply, POLL_BINDING, binding_id) &&
               poll_field_says(reply, POLL_SERVICE_ID, NULL) &&
               poll_field_says(reply, POLL_RECORD_GONE, NULL) &&
               (platform == NULL || platform[0] == '\0' ||
                poll_field_says(reply, POLL_PLATFORM, platform) ||
                (strcmp(platform, STORE_PLATFORM_DEFAULT) == 0 &&
                 poll_field_says(reply, POLL_PLATFORM, NULL))) &&
               !poll_field_says(reply, POLL_STATE, NULL)) {
        struct osbq_last_op got = {0};
        got.kind = store_element_dup(reply, POLL_KIND);
        got.state = store_element_dup(reply, POLL_STATE);
        got.description = store_element_dup(reply, POLL_DESCRIPTION);
        got.instance_usable = flag_value(reply, POLL_INSTANCE_USABLE);
        got.update_repeatable = flag_value(reply, POLL_UPDATE_REPEATABLE);
        got.created_ms = store_element_int(reply, POLL_CREATED_MS, 0);
        got.average_ms = -1;
        if (got.kind != NULL)
            got.average_plan = average_plan(got.kind, store_element_dup(reply, POLL_PLAN_ID),
                                            store_element_dup(reply, POLL_PREV_PLAN_ID));
        if (got.kind == NULL || got.state == NULL) {
            osbq_last_op_clear(&got);
            rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        } else {
            *out = got;
            rc = 1;
        }
    }
    freeReplyObject(reply);
    return rc;
}

int osbq_store_last_operation_result(struct osbq_store_call *call, struct osbq_last_op *out,
                                     struct osbq_error *err)
{
    redisReply *reply = store_call_take_reply(call, err);
    if (reply == NULL)
        return -1;
    int rc;
    if (store_element_is(reply, 0, "not_found")) {
        rc = 0;
    } else if (store_element_is(reply, 0, "unknown_operation")) {
        struct osbq_last_op got = {.last_operation_id = store_element_dup(reply, 1)};
        *out = got;
        rc = 2;
    } else if (store_element_is(reply, 0, "ok")) {
        struct osbq_last_op got = {0};
        got.instance_state = store_element_dup(reply, 1);
        got.kind = store_element_dup(reply, 2);
        got.state = store_element_dup(reply, 3);
        got.description = store_element_dup(reply, 4);
        got.instance_usable = flag_value(reply, 5);
        got.update_repeatable = flag_value(reply, 6);
        got.created_ms = store_element_int(reply, 7, 0);
        got.average_plan = store_element_dup(reply, 8);
        got.average_ms = store_element_int(reply, 9, -1);
        *out = got;
        rc = 1;
    } else {
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "last_operation: unexpected reply");
    }
    freeReplyObject(reply);
    return rc;
}

void osbq_last_op_clear(struct osbq_last_op *op)
{
    free(op->instance_state);
    free(op->kind);
    free(op->state);
    free(op->description);
    free(op->last_operation_id);
    free(op->average_plan);
    memset(op, 0, sizeof *op);
}

struct osbq_store_call *osbq_store_binding_get_call(struct osbq_store *store,
                                                    const char *instance_id, const char *binding_id,
                                                    struct osbq_error *err)
{
    char key[STORE_KEY_MAX];
    if (store_binding_key(store, key, sizeof key, instance_id, binding_id) < 0) {
        osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
        return NULL;
    }
    const char *argv[] = {"HMGET",    key,          "state",        "service_id",
                          "plan_id",  "parameters", "result",       "lock_x",
                          "platform", "context",    "bind_resource"};
    return store_command_new((int)(sizeof argv / sizeof argv[0]), argv, NULL, err);
}

int osbq_store_binding_get_result(struct osbq_store_call *call, struct osbq_binding *out,
                                  struct osbq_error *err)
{
    struct osbq_binding got = {0};
    /* In the order osbq_store_binding_get_call asks for them. */
    char **const fields[] = {&got.state,      &got.service_id, &got.plan_id,
                             &got.parameters, &got.result,     &got.lock_holder,
                             &got.platform,   &got.context,    &got.bind_resource};
    int rc = take_fields(call, fields, sizeof fields / sizeof fields[0], err);
    if (rc > 0)
        *out = got;
    return rc;
}

void osbq_binding_clear(struct osbq_binding *binding)
{
    free(binding->state);
    free(binding->service_id);
    free(binding->plan_id);
    free(binding->parameters);
    if (binding->result != NULL) {
        /* Credentials do not linger in freed memory. */
        memset(binding->result, 0, strlen(binding->result));
        free(binding->result);
    }
    free(binding->lock_holder);
    free(binding->platform);
    free(binding->context);
    free(binding->bind_resource);
    memset(binding, 0, sizeof *binding);
}
