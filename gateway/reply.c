/* Replies: the error table (OSB spec "Service Broker Errors") and JSON bodies. */
#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "log.h"
#include "store.h"

/* Kubernetes' OSB client recognises the 422 codes only with these exact descriptions. */
static const struct reply_error_row error_rows[OSBQ_ERR_COUNT_] = {
    [OSBQ_OK] = {200, NULL, "OK"},
    [OSBQ_ERR_BAD_REQUEST] = {400, NULL, "The request is malformed or misses mandatory data."},
    [OSBQ_ERR_UNAUTHORIZED] = {401, NULL, "Authentication failed."},
    [OSBQ_ERR_FORBIDDEN] = {403, NULL, "The broker's policy does not allow this request."},
    [OSBQ_ERR_NOT_FOUND] = {404, NULL, "Not found."},
    [OSBQ_ERR_METHOD] = {405, NULL, "Method not allowed on this resource."},
    [OSBQ_ERR_CONFLICT] = {409, NULL, "The resource already exists with different attributes."},
    [OSBQ_ERR_GONE] = {410, NULL, "The resource does not exist."},
    [OSBQ_ERR_API_VERSION] = {412, NULL, "Unsupported X-Broker-API-Version."},
    [OSBQ_ERR_TOO_LARGE] = {413, NULL, "The request body is too large."},
    [OSBQ_ERR_UNPROCESSABLE] = {422, NULL, "The request cannot be processed."},
    [OSBQ_ERR_ASYNC_REQUIRED] = {422, "AsyncRequired",
                                 "This service plan requires client support for asynchronous "
                                 "service operations."},
    [OSBQ_ERR_CONCURRENCY] = {422, "ConcurrencyError",
                              "The Service Broker does not support concurrent requests that "
                              "mutate the same resource."},
    [OSBQ_ERR_MAINTENANCE_INFO] = {422, "MaintenanceInfoConflict",
                                   "The maintenance_info.version in the request does not match "
                                   "the catalog."},
    [OSBQ_ERR_REQUIRES_APP] = {422, "RequiresApp",
                               "This service supports generation of credentials through binding "
                               "an application only."},
    [OSBQ_ERR_INTERNAL] = {500, NULL, "Internal error."},
    [OSBQ_ERR_BACKEND] = {502, NULL, "The service backend failed."},
    [OSBQ_ERR_UNAVAILABLE] = {503, NULL, "The broker's state store is unavailable."},
    [OSBQ_ERR_TIMEOUT] = {504, NULL, "The operation did not finish in time."},
    [OSBQ_ERR_INVALID] = {500, NULL, "Internal error."},
    [OSBQ_ERR_MISCONFIGURED] = {503, NULL, "The broker's state store refuses its configuration."},
};

const struct reply_error_row *reply_error_row(enum osbq_err code)
{
    if ((unsigned)code >= OSBQ_ERR_COUNT_ || code == OSBQ_OK)
        return &error_rows[OSBQ_ERR_INTERNAL];
    return &error_rows[code];
}

void reply_json(struct reply *out, unsigned status, json_t *body)
{
    reply_clear(out);
    out->status = status;
    out->body = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (out->body == NULL) {
        /* Only allocation can fail here; answer with a body that needs no allocation. */
        static const char fallback[] = "{\"description\":\"Internal error.\"}";
        out->status = 500;
        out->static_body = fallback;
        out->body_len = sizeof fallback - 1;
        return;
    }
    out->body_len = strlen(out->body);
}

void reply_static(struct reply *out, unsigned status, const char *body, size_t len)
{
    reply_clear(out);
    out->status = status;
    out->static_body = body;
    out->body_len = len;
}

void reply_error(struct reply *out, enum osbq_err code, const char *description)
{
    const struct reply_error_row *row = reply_error_row(code);
    /* The 422 codes keep their fixed texts: platforms match on them. */
    if (description == NULL || description[0] == '\0' || row->error != NULL)
        description = row->description;
    json_t *body = json_object();
    if (body != NULL && row->error != NULL)
        json_object_set_new(body, "error", json_string(row->error));
    if (body != NULL) {
        /* A description echoing client bytes may not be UTF-8; fall back to the row's text. */
        json_t *text = json_string(description);
        if (text == NULL)
            text = json_string(row->description);
        json_object_set_new(body, "description", text);
    }
    reply_json(out, row->status, body);
    out->www_authenticate = code == OSBQ_ERR_UNAUTHORIZED;
    /* The OSB word when the spec has one, else osbq's own name for the code. */
    out->reason = row->error != NULL ? row->error : osbq_err_name(code);
}

void reply_error_flags(struct reply *out, enum osbq_err code, const char *description,
                       int instance_usable, int update_repeatable)
{
    reply_error(out, code, description);
    if (instance_usable < 0 && update_repeatable < 0)
        return;
    json_t *body = json_loads(out->body ? out->body : "{}", 0, NULL);
    unsigned status = out->status;
    const char *reason = out->reason;
    if (body == NULL)
        return;
    if (instance_usable >= 0)
        json_object_set_new(body, "instance_usable", json_boolean(instance_usable));
    if (update_repeatable >= 0)
        json_object_set_new(body, "update_repeatable", json_boolean(update_repeatable));
    reply_json(out, status, body);
    out->reason = reason;
}

void reply_error_from(struct reply *out, const struct osbq_error *err)
{
    reply_error(out, err->code, err->text);
}

static void reply_verror(struct reply *out, enum osbq_err code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void reply_verror(struct reply *out, enum osbq_err code, const char *fmt, va_list ap)
{
    char text[512];
    (void)vsnprintf(text, sizeof text, fmt, ap);
    reply_error(out, code, text);
}

void reply_errorf(struct reply *out, enum osbq_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    reply_verror(out, code, fmt, ap);
    va_end(ap);
}

bool reply_bad_request(struct reply *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    reply_verror(out, OSBQ_ERR_BAD_REQUEST, fmt, ap);
    va_end(ap);
    return false;
}

void reply_store_unavailable(struct reply *out, const struct osbq_error *err)
{
    if (err->code == OSBQ_ERR_MISCONFIGURED) {
        log_errorx("%s", err->text);
        reply_error(out, OSBQ_ERR_MISCONFIGURED,
                    "The broker's state store refuses the broker's configuration; the broker's "
                    "operator must fix it.");
        return;
    }
    log_warnx("%s", err->text);
    reply_error(out, OSBQ_ERR_UNAVAILABLE,
                "The broker's state store is unavailable; try again later.");
}

bool reply_read_missing(struct reply *out, int found, bool hidden, const char *what,
                        const struct osbq_error *err)
{
    if (found < 0) {
        reply_store_unavailable(out, err);
        return true;
    }
    if (found == 0 || hidden) {
        reply_errorf(out, OSBQ_ERR_NOT_FOUND, "The %s does not exist.", what);
        return true;
    }
    return false;
}

void reply_wait_clear(struct reply_wait *wait)
{
    free(wait->operation_id);
    free(wait->instance_id);
    free(wait->binding_id);
    free(wait->dashboard_url);
    memset(wait, 0, sizeof *wait);
}

void reply_defer(struct reply *out, struct osbq_store_call *call, reply_resume_fn resume,
                 void *state, void (*state_free)(void *state))
{
    reply_clear(out);
    out->kind = REPLY_DEFERRED;
    out->defer = (struct reply_defer){call, resume, state, state_free};
}

void reply_defer_call(struct reply *out, struct osbq_store_call *call, const struct osbq_error *err,
                      reply_resume_fn resume, void *state, void (*state_free)(void *state))
{
    if (call != NULL) {
        reply_defer(out, call, resume, state, state_free);
        return;
    }
    if (state != NULL && state_free != NULL)
        state_free(state);
    reply_error_from(out, err);
}

void reply_wait_slot(struct reply *out, int64_t deadline_ms, reply_slot_fn resume, void *state,
                     void (*state_free)(void *state))
{
    reply_clear(out);
    out->kind = REPLY_SLOT;
    out->slot = (struct reply_slot){resume, state, state_free, deadline_ms};
}

void reply_slot_clear(struct reply_slot *slot)
{
    if (slot->state != NULL && slot->state_free != NULL)
        slot->state_free(slot->state);
    memset(slot, 0, sizeof *slot);
}

void reply_defer_clear(struct reply_defer *defer)
{
    osbq_store_call_free(&defer->call);
    if (defer->state != NULL && defer->state_free != NULL)
        defer->state_free(defer->state);
    memset(defer, 0, sizeof *defer);
}

void reply_clear(struct reply *out)
{
    free(out->body);
    free(out->job);
    free(out->halt_worker);
    dispatch_handover_cancel(&out->handover);
    reply_wait_clear(&out->wait);
    reply_defer_clear(&out->defer);
    reply_slot_clear(&out->slot);
    memset(out, 0, sizeof *out);
}
