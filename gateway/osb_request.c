/* Helpers every OSB handler uses: body parsing, field checks, ids, digests. */
#include "osb_request.h"

#include "log.h"
#include "validate.h"
#include "waiter.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deeper documents are refused: parameters nest a few levels, never hundreds. */
#define BODY_MAX_DEPTH 64

void osb_error_text(struct reply *out, enum osbq_err code, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    reply_error(out, code, text);
}

bool osb_bad_request(struct reply *out, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    reply_error(out, OSBQ_ERR_BAD_REQUEST, text);
    return false;
}

static size_t depth(const json_t *value)
{
    size_t deepest = 0;
    if (json_is_object(value)) {
        const char *key;
        json_t *member;
        json_object_foreach ((json_t *)value, key, member) {
            size_t d = depth(member);
            deepest = d > deepest ? d : deepest;
            if (deepest > BODY_MAX_DEPTH)
                break;
        }
    } else if (json_is_array(value)) {
        size_t i;
        json_t *member;
        json_array_foreach (value, i, member) {
            size_t d = depth(member);
            deepest = d > deepest ? d : deepest;
            if (deepest > BODY_MAX_DEPTH)
                break;
        }
    }
    return deepest + 1;
}

json_t *osb_parse_body(const struct request *req, struct reply *out)
{
    if (req->content_type != NULL && !validate_json_content_type(req->content_type)) {
        osb_bad_request(out, "The request body must be JSON (Content-Type: application/json).");
        return NULL;
    }
    if (req->body == NULL || req->body_len == 0) {
        osb_bad_request(out, "The request body must be a JSON object.");
        return NULL;
    }
    json_error_t jerr;
    json_t *body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (body == NULL) {
        osb_bad_request(out, "The request body is not valid JSON: %s (line %d, column %d).",
                        jerr.text, jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(body)) {
        json_decref(body);
        osb_bad_request(out, "The request body must be a JSON object.");
        return NULL;
    }
    if (depth(body) > BODY_MAX_DEPTH) {
        json_decref(body);
        osb_bad_request(out, "The request body nests deeper than %d levels.", BODY_MAX_DEPTH);
        return NULL;
    }
    return body;
}

bool osb_accepts_incomplete(const struct request *req)
{
    return req->api_version >= API_ASYNC && req->accepts_incomplete != NULL &&
           strcmp(req->accepts_incomplete, "true") == 0;
}

bool osb_valid_id(const char *id, const char *what, struct reply *out)
{
    size_t len = strlen(id);
    if (len == 0)
        return osb_bad_request(out, "The %s must not be empty.", what);
    if (len > OSB_ID_MAX)
        return osb_bad_request(out, "The %s is longer than %d bytes.", what, OSB_ID_MAX);
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        if (*p < 0x20 || *p == 0x7f || *p == '/')
            return osb_bad_request(out, "The %s holds a control character or '/'.", what);
    /* Ids travel inside JSON (jobs, credentials, events): they must be UTF-8. */
    json_t *as_json = json_string(id);
    if (as_json == NULL)
        return osb_bad_request(out, "The %s is not valid UTF-8.", what);
    json_decref(as_json);
    return true;
}

bool osb_optional_string(json_t *body, const char *key, const char **value, struct reply *out)
{
    json_t *member = json_object_get(body, key);
    *value = NULL;
    if (member == NULL)
        return true;
    if (!json_is_string(member) || json_string_length(member) == 0)
        return osb_bad_request(out, "\"%s\" must be a non-empty string.", key);
    *value = json_string_value(member);
    return true;
}

bool osb_optional_object(json_t *body, const char *key, json_t **value, struct reply *out)
{
    json_t *member = json_object_get(body, key);
    *value = NULL;
    if (member == NULL)
        return true;
    if (!json_is_object(member))
        return osb_bad_request(out, "\"%s\" must be a JSON object.", key);
    *value = member;
    return true;
}

char *osb_canonical(const json_t *value)
{
    if (value == NULL)
        return NULL;
    return json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

static void digest_bytes(struct osb_digest *d, const char *bytes, size_t len)
{
    crypto_generichash_update(&d->state, (const unsigned char *)bytes, len);
}

void osb_digest_begin(struct osb_digest *d)
{
    crypto_generichash_init(&d->state, NULL, 0, 16);
    d->failed = false;
    d->next = '{';
}

/* ["{" or ","] "key": */
static void digest_key(struct osb_digest *d, const char *key)
{
    digest_bytes(d, &d->next, 1);
    d->next = ',';
    digest_bytes(d, "\"", 1);
    digest_bytes(d, key, strlen(key));
    digest_bytes(d, "\":", 2);
}

void osb_digest_json(struct osb_digest *d, const char *key, const char *canonical)
{
    digest_key(d, key);
    if (canonical == NULL)
        canonical = "null";
    digest_bytes(d, canonical, strlen(canonical));
}

void osb_digest_string(struct osb_digest *d, const char *key, const char *value)
{
    digest_key(d, key);
    if (value == NULL) {
        digest_bytes(d, "null", 4);
        return;
    }
    /* A dump escapes only '"', '\\' and control characters (no ASCII or slash escaping is
     * asked for): a string without them is written as it is; one with them is escaped by
     * jansson itself, so the text is the dump's to the byte. */
    size_t len = strlen(value);
    bool plain = true;
    for (size_t i = 0; i < len && plain; i++) {
        unsigned char c = (unsigned char)value[i];
        plain = c >= 0x20 && c != '"' && c != '\\';
    }
    if (plain) {
        digest_bytes(d, "\"", 1);
        digest_bytes(d, value, len);
        digest_bytes(d, "\"", 1);
        return;
    }
    json_t *string = json_string(value);
    char *text = osb_canonical(string);
    json_decref(string);
    if (text == NULL) {
        d->failed = true;
        return;
    }
    digest_bytes(d, text, strlen(text));
    free(text);
}

bool osb_digest_end(struct osb_digest *d, char out[33])
{
    unsigned char hash[16];
    if (d->next == ',')
        digest_bytes(d, "}", 1);
    else
        digest_bytes(d, "{}", 2);
    crypto_generichash_final(&d->state, hash, sizeof hash);
    sodium_bin2hex(out, 33, hash, sizeof hash);
    return !d->failed;
}

void osb_new_operation_id(char out[33])
{
    unsigned char raw[16];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(out, 33, raw, sizeof raw);
}

void osb_reply_accepted(struct reply *out, unsigned api_version, const char *operation_id,
                        const char *dashboard_url)
{
    json_t *body = json_object();
    if (api_version >= API_OPERATION && operation_id != NULL)
        json_object_set_new(body, "operation", json_string(operation_id));
    if (dashboard_url != NULL && dashboard_url[0] != '\0')
        json_object_set_new(body, "dashboard_url", json_string(dashboard_url));
    reply_json(out, 202, body);
}

void osb_wait_for(struct reply *out, const struct request *req, enum osbq_job_kind kind,
                  const char *instance_id, const char *binding_id, int64_t timeout_ms,
                  const char *operation_id, const char *dashboard_url, char *job, size_t job_len)
{
    reply_clear(out);
    struct reply_wait *w = &out->wait;
    w->operation_id = strdup(operation_id);
    w->instance_id = strdup(instance_id);
    w->binding_id = binding_id ? strdup(binding_id) : NULL;
    w->dashboard_url = dashboard_url ? strdup(dashboard_url) : NULL;
    w->deadline_ms = waiter_now_ms() + timeout_ms;
    w->kind = kind;
    w->api_version = req->api_version;
    w->job = job;
    w->job_len = job_len;
    if (w->operation_id == NULL || w->instance_id == NULL ||
        (binding_id != NULL && w->binding_id == NULL))
        reply_error(out, OSBQ_ERR_INTERNAL, "Out of memory.");
}

char *osb_encode_job(const struct osbq_job *job, size_t *len, struct reply *out)
{
    char *bytes = NULL;
    char why[200];
    if (osbq_job_encode(job, &bytes, len, why, sizeof why) < 0) {
        log_warnx("cannot encode a job: %s", why);
        reply_error(out, OSBQ_ERR_BAD_REQUEST, "The request cannot be turned into a job.");
        return NULL;
    }
    return bytes;
}

void osb_reply_started(const struct gateway *gw, const struct request *req,
                       const struct osb_started *s, const struct osbq_begin_reply *got, char *job,
                       size_t job_len, struct reply *out)
{
    bool accepted = got->answer == OSBQ_BEGIN_ACCEPTED;
    const char *operation_id = accepted ? s->operation_id : got->operation_id;
    if (!accepted) {
        /* The identical operation runs already: its own job is on its way. */
        free(job);
        job = NULL;
        job_len = 0;
    }
    if (s->async) {
        if (job != NULL && dispatch_submit(gw->dispatch, operation_id, job, job_len) < 0)
            log_warnx("job queue full: operation %s waits for recovery", operation_id);
        free(job);
        osb_reply_accepted(out, req->api_version, operation_id, s->accepted_dashboard);
    } else {
        osb_wait_for(out, req, s->kind, s->instance_id, s->binding_id, s->timeout_ms, operation_id,
                     s->wait_dashboard, job, job_len);
    }
    /* Kept in the reply (which outlives the handler's buffers) for the access log and for the
     * lines the handler still writes. */
    (void)snprintf(out->operation_id, sizeof out->operation_id, "%s", operation_id);
    osbq_log_context_set_operation(out->operation_id);
    gateway_metrics_operation(gw->metrics, osbq_job_kind_name(s->kind),
                              accepted ? "accepted" : "joined");
}

void osb_job_from_request(struct osbq_job *job, const struct request *req)
{
    job->api_version = req->api_version;
    job->originating_identity = (char *)(uintptr_t)req->originating_identity;
    job->request_identity = (char *)(uintptr_t)req->request_identity;
    job->trace = (char *)(uintptr_t)req->trace;
    job->attempt = 1;
}

void osb_store_unavailable(struct reply *out, const struct osbq_error *err)
{
    log_warnx("%s", err->text);
    reply_error(out, OSBQ_ERR_UNAVAILABLE,
                "The broker's state store is unavailable; try again later.");
}
