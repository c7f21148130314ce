/* GET .../last_operation of a service instance or of a service binding: one round trip,
 * through the store's pipeline. */
#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "log.h"
#include "osb_platform.h"
#include "validate.h"

/* Seconds until the operation probably ends: the plan's average for this kind minus the time
 * spent, within the configured bounds. CF ignores values below its own interval and Kubernetes
 * reads integer seconds only, so it is always whole seconds. */
static unsigned retry_after_s(const struct osbq_config *cfg, const struct osbq_last_op *op)
{
    int64_t left_ms = -1;
    if (op->average_ms >= 0)
        left_ms = op->average_ms - (osbq_store_now_ms() - op->created_ms);
    int64_t s = left_ms > 0 ? (left_ms + 999) / 1000 : (int64_t)cfg->retry_after_min_s;
    if (s < (int64_t)cfg->retry_after_min_s)
        s = cfg->retry_after_min_s;
    if (s > (int64_t)cfg->retry_after_max_s)
        s = cfg->retry_after_max_s;
    return (unsigned)s;
}

/* The answer once the script's reply is in: for the instance (binding_id NULL) or one of its
 * bindings. */
static void last_operation_answer(const struct gateway *gw, const struct request *req,
                                  const char *binding_id, struct osbq_store_call *call,
                                  struct reply *out)
{
    const char *what = binding_id ? "service binding" : "service instance";
    const char *operation = req->query_operation;
    struct osbq_last_op op = {0};
    struct osbq_error err = {0};
    int found = osbq_store_last_operation_result(call, &op, &err);
    if (reply_read_missing(out, found, false, what, &err))
        return;
    if (found == 2) {
        /* The spec: operation MUST be the value the broker returned. The record's own last
         * operation is safe to name: the store answers only the platform that owns the record,
         * and that platform was given the id in a 202. */
        if (op.last_operation_id != NULL)
            reply_bad_request(out,
                              "\"%s\" is not an operation of this %s: its last operation is "
                              "\"%s\". Send the \"operation\" value of the broker's 202 "
                              "Accepted answer, or no operation parameter.",
                              operation, what, op.last_operation_id);
        else
            reply_bad_request(out,
                              "\"%s\" is not an operation of this %s: send the \"operation\" "
                              "value of the broker's 202 Accepted answer for it, or no operation "
                              "parameter.",
                              operation, what);
        osbq_last_op_clear(&op);
        return;
    }
    bool succeeded = strcmp(op.state, "succeeded") == 0;
    bool failed = strcmp(op.state, "failed") == 0;
    if (succeeded && (strcmp(op.kind, "deprovision") == 0 || strcmp(op.kind, "unbind") == 0)) {
        reply_errorf(out, OSBQ_ERR_GONE, "The %s has been deleted.", what);
        goto out;
    }
    json_t *body = json_object();
    json_object_set_new(body, "state",
                        json_string(succeeded ? "succeeded"
                                    : failed  ? "failed"
                                              : "in progress"));
    if (op.description != NULL)
        json_object_set_new(body, "description", json_string(op.description));
    if (failed && req->api_version >= API_METADATA) {
        if (strcmp(op.kind, "provision") != 0 && op.instance_usable >= 0)
            json_object_set_new(body, "instance_usable", json_boolean(op.instance_usable));
        if (strcmp(op.kind, "update") == 0 && op.update_repeatable >= 0)
            json_object_set_new(body, "update_repeatable", json_boolean(op.update_repeatable));
    }
    reply_json(out, 200, body);
    if (!succeeded && !failed && req->api_version >= API_RETRY_AFTER)
        (void)snprintf(out->retry_after, sizeof out->retry_after, "%u",
                       retry_after_s(gw->cfg, &op));
out:
    osbq_last_op_clear(&op);
}

static void last_operation_get_after_read(const struct gateway *gw, const struct request *req,
                                          struct osbq_store_call *call, void *state,
                                          struct reply *out)
{
    (void)state;
    last_operation_answer(gw, req, NULL, call, out);
}

static void binding_last_operation_get_after_read(const struct gateway *gw,
                                                  const struct request *req,
                                                  struct osbq_store_call *call, void *state,
                                                  struct reply *out)
{
    (void)state;
    last_operation_answer(gw, req, req->params[1], call, out);
}

/* Checks the request and sends its one script call (last_operation.lua). */
static void last_operation(const struct gateway *gw, const struct request *req,
                           const char *binding_id, struct reply *out)
{
    const char *instance_id = req->params[0];
    if (!validate_id(instance_id, "instance_id", out) ||
        (binding_id != NULL && !validate_id(binding_id, "binding_id", out)))
        return;
    const char *operation = req->query_operation;
    if (operation != NULL && operation[0] == '\0') {
        reply_bad_request(out, "The operation query parameter must not be empty.");
        return;
    }
    struct osbq_error err = {0};
    struct osbq_store_call *call = osbq_store_last_operation_call(
        gw->store, instance_id, binding_id, operation, osb_platform_name(req), &err);
    reply_defer_call(out, call, &err,
                     binding_id ? binding_last_operation_get_after_read
                                : last_operation_get_after_read,
                     NULL, NULL);
}

void osb_last_operation_get(const struct gateway *gw, const struct request *req, struct reply *out)
{
    if (req->api_version < API_ASYNC) {
        reply_error(out, OSBQ_ERR_NOT_FOUND, "last_operation needs API 2.7.");
        return;
    }
    last_operation(gw, req, NULL, out);
}

void osb_binding_last_operation_get(const struct gateway *gw, const struct request *req,
                                    struct reply *out)
{
    if (req->api_version < API_FETCH) {
        reply_error(out, OSBQ_ERR_NOT_FOUND,
                    "Asynchronous bindings and their last_operation need API 2.14.");
        return;
    }
    last_operation(gw, req, req->params[1], out);
}
