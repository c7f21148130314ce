/* GET .../last_operation of a service instance or of a service binding: one round trip,
 * through the store's pipeline; a poll that names its operation reads only the operation, no
 * script (docs/decisions/0043). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "handlers.h"
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

/* An operation that has not ended: its answer says "in progress" and carries Retry-After. */
static bool in_progress(const struct osbq_last_op *op)
{
    return strcmp(op->state, "succeeded") != 0 && strcmp(op->state, "failed") != 0;
}

/* The answer from what the store read of the operation (op, whose strings it frees); what:
 * "service instance" or "service binding". */
static void answer_operation(const struct gateway *gw, const struct request *req, const char *what,
                             struct osbq_last_op *op, struct reply *out)
{
    bool succeeded = strcmp(op->state, "succeeded") == 0;
    bool failed = strcmp(op->state, "failed") == 0;
    if (succeeded && (strcmp(op->kind, "deprovision") == 0 || strcmp(op->kind, "unbind") == 0)) {
        reply_errorf(out, OSBQ_ERR_GONE, "The %s has been deleted.", what);
        goto out;
    }
    json_t *body = json_object();
    json_object_set_new(body, "state",
                        json_string(succeeded ? "succeeded"
                                    : failed  ? "failed"
                                              : "in progress"));
    if (op->description != NULL)
        json_object_set_new(body, "description", json_string(op->description));
    if (failed && req->api_version >= API_METADATA) {
        if (strcmp(op->kind, "provision") != 0 && op->instance_usable >= 0)
            json_object_set_new(body, "instance_usable", json_boolean(op->instance_usable));
        if (strcmp(op->kind, "update") == 0 && op->update_repeatable >= 0)
            json_object_set_new(body, "update_repeatable", json_boolean(op->update_repeatable));
    }
    reply_json(out, 200, body);
    if (in_progress(op) && req->api_version >= API_RETRY_AFTER)
        (void)snprintf(out->retry_after, sizeof out->retry_after, "%u", retry_after_s(gw->cfg, op));
out:
    osbq_last_op_clear(op);
}

/* The binding a request's route names, or NULL for an instance's last_operation. */
static const char *route_binding(const struct request *req, bool binding)
{
    return binding ? req->params[1] : NULL;
}

/* What the route's record is called in answers. */
static const char *record_noun(bool binding)
{
    return binding ? "service binding" : "service instance";
}

/* A call's resume state says which route asked (the call borrows no memory for it). */
static void *route_state(bool binding)
{
    return (void *)(uintptr_t)binding;
}

static bool route_is_binding(const void *state)
{
    return (uintptr_t)state != 0;
}

/* The answer once last_operation.lua's reply is in (state: route_state). */
static void last_operation_after_read(const struct gateway *gw, const struct request *req,
                                      struct osbq_store_call *call, void *state, struct reply *out)
{
    const char *what = record_noun(route_is_binding(state));
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
    /* Kept for the polls that read the operation alone. */
    if (op.average_plan != NULL && op.average_plan[0] != '\0' && in_progress(&op))
        averages_put(gw->averages, op.average_plan, op.kind, osbq_clock_seconds(), op.average_ms);
    answer_operation(gw, req, what, &op, out);
}

/* Sends last_operation.lua's call: the record, then the operation it names or the record's
 * last one, in one round trip. */
static void read_with_record(const struct gateway *gw, const struct request *req, bool binding,
                             struct reply *out)
{
    gateway_metrics_last_operation_read(gw->metrics, GATEWAY_LAST_OP_READ_RECORD);
    struct osbq_error err = {0};
    struct osbq_store_call *call =
        osbq_store_last_operation_call(gw->store, req->params[0], route_binding(req, binding),
                                       req->query_operation, osb_platform_name(req), &err);
    reply_defer_call(out, call, &err, last_operation_after_read, route_state(binding), NULL);
}

/* A named operation, read alone (state: route_state): answered from it when it can (and, in
 * progress, when this gateway read its plan's average a moment ago); else the record is read
 * with it. */
static void poll_after_read(const struct gateway *gw, const struct request *req,
                            struct osbq_store_call *call, void *state, struct reply *out)
{
    bool binding = route_is_binding(state);
    struct osbq_last_op op = {0};
    struct osbq_error err = {0};
    int found = osbq_store_poll_result(call, req->params[0], route_binding(req, binding),
                                       osb_platform_name(req), &op, &err);
    if (found < 0) {
        reply_store_unavailable(out, &err);
        return;
    }
    if (found == 0 || (in_progress(&op) && req->api_version >= API_RETRY_AFTER &&
                       !averages_get(gw->averages, op.average_plan ? op.average_plan : "", op.kind,
                                     osbq_clock_seconds(), &op.average_ms))) {
        osbq_last_op_clear(&op);
        read_with_record(gw, req, binding, out);
        return;
    }
    answer_operation(gw, req, record_noun(binding), &op, out);
}

/* Checks the request and sends its one call: the operation alone when the request names it
 * (as platforms do, with the id of the broker's 202), else last_operation.lua. */
static void last_operation(const struct gateway *gw, const struct request *req, bool binding,
                           struct reply *out)
{
    if (!validate_id(req->params[0], "instance_id", out) ||
        (binding && !validate_id(req->params[1], "binding_id", out)))
        return;
    const char *operation = req->query_operation;
    if (operation == NULL) {
        read_with_record(gw, req, binding, out);
        return;
    }
    if (operation[0] == '\0') {
        reply_bad_request(out, "The operation query parameter must not be empty.");
        return;
    }
    gateway_metrics_last_operation_read(gw->metrics, GATEWAY_LAST_OP_READ_OPERATION);
    struct osbq_error err = {0};
    struct osbq_store_call *call = osbq_store_poll_call(gw->store, operation, &err);
    reply_defer_call(out, call, &err, poll_after_read, route_state(binding), NULL);
}

void osb_last_operation_get(const struct gateway *gw, const struct request *req, struct reply *out)
{
    if (req->api_version < API_ASYNC) {
        reply_error(out, OSBQ_ERR_NOT_FOUND, "last_operation needs API 2.7.");
        return;
    }
    last_operation(gw, req, false, out);
}

void osb_binding_last_operation_get(const struct gateway *gw, const struct request *req,
                                    struct reply *out)
{
    if (req->api_version < API_FETCH) {
        reply_error(out, OSBQ_ERR_NOT_FOUND,
                    "Asynchronous bindings and their last_operation need API 2.14.");
        return;
    }
    last_operation(gw, req, true, out);
}
