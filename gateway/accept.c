/* The accept path (accept.h): one function starts every operation, one table refuses. */
#include "accept.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "digest.h"
#include "log.h"
#include "originating_identity.h"
#include "osb_platform.h"
#include "sealed_fields.h"
#include "secrets.h"

/* What a refusal answers. code OSBQ_OK: that resource's script never gives the answer, so it
 * is an internal error. */
struct refusal {
    enum osbq_err code;
    const char *text; /* NULL: the code's own text */
};

/* A refusal by the in-progress cap when its tenant is unknown (never, but for a bug). */
#define CAPPED_TEXT                                                                                \
    "The tenant has as many operations in progress as the broker's policy allows; retry when "     \
    "some have ended."

/* A deprovision of an instance that asks not to be deleted. */
#define PROTECTED_TEXT                                                                             \
    "The service instance is protected from deletion: its parameters or context set "              \
    "\"osbq_deletion_protection\": true. Update it with \"osbq_deletion_protection\": false "      \
    "first."

/* A refusal by the deletion cap when its tenant is unknown (never, but for a bug). */
#define DELETE_CAPPED_TEXT                                                                         \
    "The tenant deleted as many service instances and bindings this minute as the broker's "       \
    "policy allows (OSBQ_POLICY deletes_per_minute_per_tenant); retry in a minute."

/* The store's refusals, for an instance operation and for a binding one (enum
 * accept_resource). Accepted, in-progress and done answers are not refusals. */
static const struct refusal refusals[][ACCEPT_RESOURCE_COUNT_] = {
    [OSBQ_BEGIN_CONFLICT] =
        {
            {OSBQ_ERR_CONFLICT, "A service instance with this id already exists with different "
                                "attributes."},
            {OSBQ_ERR_CONFLICT, "A service binding with this id already exists with different "
                                "parameters."},
        },
    [OSBQ_BEGIN_BUSY] = {{OSBQ_ERR_CONCURRENCY, NULL}, {OSBQ_ERR_CONCURRENCY, NULL}},
    [OSBQ_BEGIN_NOT_FOUND] =
        {
            {OSBQ_ERR_NOT_FOUND, "The service instance does not exist."},
            {OSBQ_ERR_NOT_FOUND, "The service instance does not exist."},
        },
    [OSBQ_BEGIN_GONE] =
        {
            {OSBQ_ERR_GONE, "The service instance does not exist."},
            {OSBQ_ERR_GONE, "The service binding does not exist."},
        },
    [OSBQ_BEGIN_CHANGED] = {{OSBQ_ERR_CONCURRENCY, NULL}, {OSBQ_ERR_CONCURRENCY, NULL}},
    [OSBQ_BEGIN_MISMATCH] =
        {
            {OSBQ_ERR_BAD_REQUEST, "service_id and plan_id must be the service instance's."},
            {OSBQ_ERR_BAD_REQUEST, "service_id and plan_id must be the service instance's."},
        },
    [OSBQ_BEGIN_NO_INSTANCE] = {{OSBQ_OK, NULL},
                                {OSBQ_ERR_NOT_FOUND, "The service instance does not exist."}},
    [OSBQ_BEGIN_INSTANCE_BUSY] = {{OSBQ_OK, NULL}, {OSBQ_ERR_CONCURRENCY, NULL}},
    [OSBQ_BEGIN_BAD_PREDECESSOR] = {{OSBQ_OK, NULL},
                                    {OSBQ_ERR_BAD_REQUEST,
                                     "predecessor_binding_id must name a live binding of this "
                                     "service instance."}},
    /* Instance quotas only; the text names the full quota when it can; policy_refusal() the
     * status. */
    [OSBQ_BEGIN_QUOTA] = {{OSBQ_ERR_FORBIDDEN, "A quota of the broker's policy is full."},
                          {OSBQ_OK, NULL}},
    /* The tenant's operations in progress reached OSBQ_POLICY's cap: the text says whose and
     * how many when it can (osbq_policy_cap_description). */
    [OSBQ_BEGIN_CAPPED] = {{OSBQ_ERR_UNPROCESSABLE, CAPPED_TEXT},
                           {OSBQ_ERR_UNPROCESSABLE, CAPPED_TEXT}},
    /* The deletion guard (docs/policies.md): a protected instance, and the tenant's deletes a
     * minute; the latter's text says whose and how many when it can. */
    [OSBQ_BEGIN_PROTECTED] = {{OSBQ_ERR_UNPROCESSABLE, PROTECTED_TEXT}, {OSBQ_OK, NULL}},
    [OSBQ_BEGIN_DELETE_CAPPED] = {{OSBQ_ERR_UNPROCESSABLE, DELETE_CAPPED_TEXT},
                                  {OSBQ_ERR_UNPROCESSABLE, DELETE_CAPPED_TEXT}},
};

/* An unbind's mismatch: the query names the binding's service and plan, not the instance's. */
#define UNBIND_MISMATCH_TEXT                                                                       \
    "service_id and plan_id must be the service binding's: its service, and the plan it was "      \
    "made with or its service instance's plan now."

/* An operation on its way from the handler's checks to the store's answer: the one begin
 * request (begin), and what it points at that the handler's request would not keep alive: the
 * strings the handler named (its body's JSON is freed when it returns), the objects as texts and
 * sealed, the digest. A request that waits for a worker's slot first keeps this, not a copy. */
struct accept_pending {
    const struct accept_desc *desc;     /* the resource's descriptor */
    enum osbq_job_kind kind;            /* the operation's kind */
    struct osbq_begin_request begin;    /* what the begin script records; its other strings are the
                                         * exchange's (the request's headers) or the gateway's */
    char operation_id[33];              /* the operation it proposes (begin.operation_id) */
    char digest[33];                    /* its idempotency digest (begin.digest); "" for deletes */
    char *strings;                      /* one block: the handler's strings begin and quotas name */
    char *texts[4];                     /* the objects as canonical text (struct accept_texts);
                                         * with keys, those sealed are wiped once begin carries
                                         * their sealed copies (drop_plain_texts) */
    struct sealed_texts sealed;         /* those sealed as stored, with keys (begin's texts) */
    bool async;                         /* the platform accepts 202 */
    int64_t timeout_ms;                 /* a synchronous wait's limit */
    const char *metric_service;         /* the service and plan labels of its metrics (the */
    const char *metric_plan;            /* catalog's strings) */
    char *job;                          /* the encoded job, sent when accepted */
    size_t job_len;                     /* bytes in job */
    struct dispatch_handover *handover; /* a worker's slot the begin script claims the operation
                                         * for (docs/decisions/0042-handover.md), or NULL */
    char tenant[TENANT_KEY_MAX];        /* the tenant the request names (the store may answer its
                                         * instance's instead) */
    unsigned weight;                    /* its platform's weight */
    int64_t in_progress_cap;            /* its platform's cap (OSBQ_POLICY in_progress_per_tenant),
                                         * or -1: none */
    size_t quota_count;                 /* quotas it counted against, for a refusal's text */
    struct osbq_policy_use quotas[OSBQ_POLICY_QUOTAS_MAX]; /* their copies */
    int64_t slot_wait_started; /* when a wait for a worker's slot began (osbq_clock_ms) */
    char *user; /* who asked, for the audit trail: the decoded originating identity, or NULL */
};

static void pending_free(void *state)
{
    struct accept_pending *p = state;
    free(p->strings);
    for (size_t i = 0; i < sizeof p->texts / sizeof p->texts[0]; i++)
        free(p->texts[i]);
    sealed_texts_clear(&p->sealed);
    free(p->job);
    dispatch_handover_cancel(&p->handover);
    free(p->user);
    free(p);
}

/* Points the strings of p->begin and p->quotas that the handler named at copies in one block
 * of p's own: they live in the request's JSON, which is gone by the time Redis answers. */
static bool keep_strings(struct accept_pending *p)
{
    enum { NAMED = 9 }; /* the begin request's strings below */
    struct osbq_begin_request *b = &p->begin;
    const char **kept[NAMED + OSBQ_POLICY_QUOTAS_MAX] = {
        &b->instance_id,
        &b->service_id,
        &b->plan_id,
        &b->maintenance_version,
        &b->dashboard_url,
        &b->expected_plan_id,
        &b->quotas,
        &b->binding.binding_id,
        &b->binding.predecessor_binding_id,
    };
    size_t count = NAMED, size = 0;
    for (size_t i = 0; i < p->quota_count; i++)
        kept[count++] = &p->quotas[i].value;
    for (size_t i = 0; i < count; i++)
        size += *kept[i] != NULL ? strlen(*kept[i]) + 1 : 0;
    char *at = p->strings = malloc(size > 0 ? size : 1);
    if (at == NULL)
        return false;
    for (size_t i = 0; i < count; i++) {
        if (*kept[i] == NULL)
            continue;
        size_t n = strlen(*kept[i]) + 1;
        memcpy(at, *kept[i], n);
        *kept[i] = at;
        at += n;
    }
    return true;
}

/* True when the request allows an asynchronous answer for an operation on resource: its
 * version knows them, and asynchronous bindings exist from 2.14 on (older platforms always get
 * a synchronous answer to a bind or unbind). */
static bool async_allowed(const struct request *req, enum accept_resource resource)
{
    if (resource == ACCEPT_BINDING && req->api_version < API_FETCH)
        return false;
    return req->api_version >= API_ASYNC && req->accepts_incomplete != NULL &&
           strcmp(req->accepts_incomplete, "true") == 0;
}

/* True when a's operation is answered asynchronously: the request allows it, and, for a bind,
 * the platform can read the credentials afterwards: a binding made asynchronously is read only
 * by fetching it (spec, Polling Last Operation for Service Bindings), so a service without
 * bindings_retrievable binds synchronously whatever the request allows (the catalog check
 * refuses a plan of it that binds only asynchronously). */
static bool answered_async(const struct request *req, const struct accept_desc *desc,
                           const struct accept *a)
{
    if (a->kind == OSBQ_JOB_BIND && a->plan != NULL && !a->plan->service->bindings_retrievable)
        return false;
    return async_allowed(req, desc->resource);
}

bool accept_async_check(const struct request *req, const struct accept_desc *desc,
                        const struct osbq_plan *plan, struct reply *out)
{
    bool required = plan != NULL && (desc->resource == ACCEPT_BINDING ? plan->bind_async_required
                                                                      : plan->async_required);
    if (required && !async_allowed(req, desc->resource)) {
        reply_error(out, OSBQ_ERR_ASYNC_REQUIRED, NULL);
        return false;
    }
    return true;
}

/* 202 with the operation (2.9+) and, when given, the dashboard URL. */
static void reply_accepted(struct reply *out, unsigned api_version, const char *operation_id,
                           const char *dashboard_url)
{
    json_t *body = json_object();
    if (api_version >= API_OPERATION && operation_id != NULL)
        json_object_set_new(body, "operation", json_string(operation_id));
    if (dashboard_url != NULL && dashboard_url[0] != '\0')
        json_object_set_new(body, "dashboard_url", json_string(dashboard_url));
    reply_json(out, 202, body);
}

/* Makes out a REPLY_WAIT: http.c suspends the request until operation_id ends or the plan's
 * time passes. */
static void reply_wait_for(struct reply *out, const struct request *req,
                           const struct accept_pending *p, const char *operation_id,
                           const char *dashboard_url)
{
    const char *binding_id = p->desc->resource == ACCEPT_BINDING ? req->params[1] : NULL;
    reply_clear(out);
    out->kind = REPLY_WAIT;
    struct reply_wait *w = &out->wait;
    w->operation_id = strdup(operation_id);
    w->instance_id = strdup(req->params[0]);
    w->binding_id = binding_id ? strdup(binding_id) : NULL;
    w->dashboard_url = dashboard_url ? strdup(dashboard_url) : NULL;
    w->timeout_ms = p->timeout_ms;
    w->kind = p->kind;
    w->api_version = req->api_version;
    if (w->operation_id == NULL || w->instance_id == NULL ||
        (binding_id != NULL && w->binding_id == NULL))
        reply_error(out, OSBQ_ERR_INTERNAL, "Out of memory.");
}

/* The job this request made, as the job of the identical operation already recorded
 * (operation_id): the same request, so the same job but for its id. Replaces p->job; keeps it
 * when it cannot be done (then nothing is resent). */
static void job_for_operation(struct accept_pending *p, const char *operation_id)
{
    struct osbq_job job = {0};
    char *bytes = NULL;
    size_t len = 0;
    if (osbq_job_decode(p->job, p->job_len, &job, NULL, 0) < 0)
        return;
    job.operation_id = operation_id;
    if (osbq_job_encode(&job, &bytes, &len, NULL, 0) == 0) {
        free(p->job);
        p->job = bytes;
        p->job_len = len;
    }
    osbq_job_clear(&job);
}

/* Answers OSBQ_BEGIN_ACCEPTED and OSBQ_BEGIN_IN_PROGRESS: 202 with the operation, or a wait for
 * its outcome. A new operation's job goes with the reply. One already recorded has its own job
 * on its way, except with OSBQ_REDIS_MIN_ACKS: an acceptance answered 503 because replicas did
 * not acknowledge it in time stays recorded without its job sent, and this request is the
 * platform's retry of it; its job is sent again (a worker's claim drops a second delivery), so
 * the operation starts now rather than after OSBQ_CLAIM_TIMEOUT_MS. */
static void reply_started(const struct gateway *gw, const struct request *req,
                          struct accept_pending *p, const struct osbq_begin_reply *got,
                          struct reply *out)
{
    bool accepted = got->answer == OSBQ_BEGIN_ACCEPTED;
    /* Recorded, but waiting for the creation it halted: the recovery loop sends its job once
     * that stopped; the slot taken for it is given back (pending_free). */
    bool halting = got->answer == OSBQ_BEGIN_HALTING;
    const char *operation_id = accepted || halting ? p->operation_id : got->operation_id;
    /* An update's dashboard too, from 2.14 (spec, Updating a Service Instance, Body: "MUST
     * return it with the initial response ... even if the Service Instance is being updated
     * asynchronously"), as its synchronous 200 does. */
    bool dashboard = p->kind == OSBQ_JOB_PROVISION ||
                     (p->kind == OSBQ_JOB_UPDATE && req->api_version >= API_FETCH);
    if (p->async)
        reply_accepted(out, req->api_version, operation_id, dashboard ? got->dashboard_url : NULL);
    else
        reply_wait_for(out, req, p, operation_id,
                       p->desc->resource == ACCEPT_INSTANCE ? got->dashboard_url : NULL);
    if (!accepted && !halting && gw->cfg->redis_min_acks > 0 && operation_id != NULL)
        job_for_operation(p, operation_id);
    if (!halting && (accepted || gw->cfg->redis_min_acks > 0)) {
        out->job = p->job;
        out->job_len = p->job_len;
        p->job = NULL;
        if (accepted) {
            /* Recorded as claimed for the slot's worker: the job goes there. */
            out->handover = p->handover;
            p->handover = NULL;
        }
        /* The operation's tenant as recorded: its instance's. */
        (void)snprintf(out->tenant, sizeof out->tenant, "%s",
                       accepted && got->tenant != NULL ? got->tenant : p->tenant);
        out->weight = p->weight;
        /* The tenant's platform is the request's: an instance is its platform's alone. */
        (void)snprintf(out->platform, sizeof out->platform, "%s", osb_platform_name(req));
    }
    /* The worker running the halted creation's step is told with the job's turn (http.c). */
    if (halting && got->halted_worker != NULL && got->halted_operation != NULL &&
        strlen(got->halted_operation) < sizeof out->halt_operation) {
        out->halt_worker = strdup(got->halted_worker);
        memcpy(out->halt_operation, got->halted_operation, strlen(got->halted_operation) + 1);
    }
    /* Kept in the reply (which outlives the pending state) for the access log, the job and
     * the lines still written about the request. */
    (void)snprintf(out->operation_id, sizeof out->operation_id, "%s", operation_id);
    osbq_log_context_set_operation(out->operation_id);
    gateway_metrics_operation(gw->metrics, osbq_job_kind_name(p->kind),
                              accepted || halting ? "accepted" : "joined", p->metric_service,
                              p->metric_plan);
}

enum osbq_err policy_refusal(enum osbq_job_kind kind)
{
    return kind == OSBQ_JOB_UPDATE ? OSBQ_ERR_UNPROCESSABLE : OSBQ_ERR_FORBIDDEN;
}

/* Answers a refusal from the table. */
static void reply_refused(const struct accept_pending *p, const struct osbq_begin_reply *got,
                          struct reply *out)
{
    const struct refusal *row = NULL;
    if ((size_t)got->answer < sizeof refusals / sizeof refusals[0])
        row = &refusals[got->answer][p->desc->resource];
    if (row == NULL || row->code == OSBQ_OK) {
        reply_error(out, OSBQ_ERR_INTERNAL, NULL);
        return;
    }
    char why[OSBQ_ERROR_TEXT_MAX];
    const char *text = row->text;
    if (got->answer == OSBQ_BEGIN_MISMATCH && p->kind == OSBQ_JOB_UNBIND)
        text = UNBIND_MISMATCH_TEXT;
    if (got->answer == OSBQ_BEGIN_QUOTA && got->quota_index < p->quota_count) {
        osbq_policy_quota_description(&p->quotas[got->quota_index], got->quota_used, why,
                                      sizeof why);
        text = why;
    }
    if (got->answer == OSBQ_BEGIN_CAPPED && got->tenant != NULL) {
        osbq_policy_cap_description(got->tenant, got->in_progress, p->in_progress_cap, why,
                                    sizeof why);
        text = why;
    }
    if (got->answer == OSBQ_BEGIN_DELETE_CAPPED && got->tenant != NULL) {
        osbq_policy_delete_cap_description(got->tenant, got->in_progress, p->begin.delete_cap, why,
                                           sizeof why);
        text = why;
    }
    reply_error(out, got->answer == OSBQ_BEGIN_QUOTA ? policy_refusal(p->kind) : row->code, text);
}

/* A delete that halted the creation holding its record (docs/decisions/0051): said once, at the
 * gateway that accepted it. */
static void log_halt(const struct accept_pending *p, const struct osbq_begin_reply *got)
{
    const char *creation = p->kind == OSBQ_JOB_UNBIND ? "bind" : "provision";
    if (got->halted_worker != NULL)
        log_info("%s %s halts %s %s, whose step runs on worker %s", osbq_job_kind_name(p->kind),
                 p->operation_id, creation, got->halted_operation ? got->halted_operation : "?",
                 got->halted_worker);
    else
        log_info("%s %s halts %s %s, which no worker runs now", osbq_job_kind_name(p->kind),
                 p->operation_id, creation, got->halted_operation ? got->halted_operation : "?");
}

/* The answer once the begin script has answered: 202, a wait, the finished request's answer,
 * or why not. */
static void accept_operation_after_begin(const struct gateway *gw, const struct request *req,
                                         struct osbq_store_call *call, void *state,
                                         struct reply *out)
{
    struct accept_pending *p = state;
    struct osbq_begin_reply got = {0};
    struct osbq_error err = {0};
    if (osbq_store_begin_result(call, &got, &err) < 0) {
        if (osbq_store_call_not_durable(call)) {
            /* Recorded on the primary only: the job stays here, the platform's retry finds the
             * operation (and sends the job). */
            log_warnx("%s", err.text);
            gateway_metrics_operation(gw->metrics, osbq_job_kind_name(p->kind), "not_durable",
                                      p->metric_service, p->metric_plan);
            reply_error(out, OSBQ_ERR_UNAVAILABLE,
                        "The broker could not make the operation durable; retry.");
            return;
        }
        reply_store_unavailable(out, &err);
        return;
    }
    if (got.tenant != NULL && got.answer != OSBQ_BEGIN_CAPPED &&
        got.answer != OSBQ_BEGIN_DELETE_CAPPED)
        instance_tenants_put(gw->instance_tenants, req->params[0], got.tenant);
    if (got.answer == OSBQ_BEGIN_HALTING)
        log_halt(p, &got);
    if (got.answer == OSBQ_BEGIN_ACCEPTED || got.answer == OSBQ_BEGIN_IN_PROGRESS ||
        got.answer == OSBQ_BEGIN_HALTING)
        reply_started(gw, req, p, &got, out);
    else if (got.answer == OSBQ_BEGIN_DONE)
        p->desc->done(gw, req, p->begin.service_id, &got, out);
    else
        reply_refused(p, &got, out);
    if (got.answer == OSBQ_BEGIN_CAPPED || got.answer == OSBQ_BEGIN_DELETE_CAPPED ||
        got.answer == OSBQ_BEGIN_PROTECTED)
        gateway_metrics_operation(gw->metrics, osbq_job_kind_name(p->kind),
                                  got.answer == OSBQ_BEGIN_CAPPED          ? "capped"
                                  : got.answer == OSBQ_BEGIN_DELETE_CAPPED ? "delete_capped"
                                                                           : "protected",
                                  p->metric_service, p->metric_plan);
    osbq_begin_reply_clear(&got);
}

/* Encodes p's job (carrying the texts as kept: sealed with the gateway's keys); false with a 400
 * in out when it cannot be (the handler checked the fields). */
static bool pending_job(const struct request *req, struct accept_pending *p,
                        const char *maintenance_info, struct reply *out)
{
    const struct osbq_begin_request *b = &p->begin;
    const struct osbq_job job = {
        .operation_id = p->operation_id,
        .kind = p->kind,
        .instance_id = b->instance_id,
        .binding_id = b->binding.binding_id,
        .service_id = b->service_id,
        .plan_id = b->plan_id,
        .parameters = b->parameters,
        .context = b->context,
        .bind_resource = b->binding.bind_resource,
        .maintenance_info = maintenance_info,
        .api_version = req->api_version,
        .originating_identity = req->originating_identity,
        .request_identity = req->request_identity,
        .trace = req->trace,
        .predecessor_binding_id = b->binding.predecessor_binding_id,
        .attempt = 1,
    };
    char why[200];
    if (osbq_job_encode(&job, &p->job, &p->job_len, why, sizeof why) < 0) {
        log_warnx("cannot encode a job: %s", why);
        reply_error(out, OSBQ_ERR_BAD_REQUEST, "The request cannot be turned into a job.");
        return false;
    }
    return true;
}

/* p's objects as texts (p->texts), its digest (desc->digest) and its texts as kept
 * (sealed_fields.h), which begin and the job carry; kept_maintenance_info is the job's. False
 * when out of memory. */
static bool pending_texts(const struct gateway *gw, const struct accept *a,
                          struct accept_pending *p, const char **kept_maintenance_info)
{
    const json_t *objects[] = {a->parameters, a->context, a->maintenance_info, a->bind_resource};
    for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
        p->texts[i] = digest_canonical(objects[i]);
    const struct accept_texts t = {p->texts[0], p->texts[1], p->texts[2], p->texts[3]};
    bool deleting = a->kind == OSBQ_JOB_DEPROVISION || a->kind == OSBQ_JOB_UNBIND;
    struct accept_texts kept;
    if ((!deleting && !p->desc->digest(a, &t, p->digest)) ||
        !sealed_texts_make(gw, a->begin.instance_id, a->begin.binding.binding_id, &t, &p->sealed,
                           &kept))
        return false;
    p->begin.parameters = kept.parameters;
    p->begin.context = kept.context;
    p->begin.binding.bind_resource = kept.bind_resource;
    *kept_maintenance_info = kept.maintenance_info;
    return true;
}

/* With the gateway's keys, the begin request and the job carry the sealed texts: the plain
 * ones, the platform's request values, are wiped now rather than kept until Redis answers (or a
 * worker's slot is found). maintenance_info is never sealed (the catalog's). */
static void drop_plain_texts(struct accept_pending *p)
{
    const char *sealed[] = {p->sealed.parameters, p->sealed.context, NULL, p->sealed.bind_resource};
    for (size_t i = 0; i < sizeof sealed / sizeof sealed[0]; i++) {
        if (sealed[i] == NULL)
            continue;
        osbq_secrets_free_text(p->texts[i]);
        p->texts[i] = NULL;
    }
}

/* The rest of p->begin: what accept_operation decides (the operation's id, the tenant, the caps,
 * who asks) and the request's headers. */
static void pending_begin(const struct gateway *gw, const struct request *req,
                          const struct accept *a, struct accept_pending *p)
{
    unsigned char raw[16];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(p->operation_id, sizeof p->operation_id, raw, sizeof raw);
    const char *platform = osb_platform_name(req);
    tenant_key(gw->cfg->tenant_scope, platform, p->texts[1], a->organization_guid, a->space_guid,
               p->tenant);
    p->weight = req->platform != NULL ? req->platform->weight : 1;
    p->in_progress_cap = osbq_policy_in_progress_cap(gw->policy, platform);
    int64_t delete_cap = osbq_policy_delete_cap(gw->policy, platform);
    struct osbq_begin_request *b = &p->begin;
    b->kind = osbq_job_kind_name(a->kind);
    b->operation_id = p->operation_id;
    b->digest = p->digest;
    b->waiting_gateway = p->async ? NULL : gw->gateway_id;
    b->api_version = req->api_version;
    b->claim_timeout_ms = gw->cfg->claim_timeout_ms;
    b->platform = platform;
    b->tenant = p->tenant;
    b->in_progress_cap = p->in_progress_cap >= 0 ? &p->in_progress_cap : NULL;
    b->delete_cap = delete_cap > 0 ? delete_cap : 0;
    b->user = p->user;
    b->request_id = req->request_identity;
}

/* The pending state of a's operation, with its new id and its encoded job; NULL with out set.
 * Free with pending_free. */
static struct accept_pending *pending_new(const struct gateway *gw, const struct request *req,
                                          const struct accept_desc *desc, const struct accept *a,
                                          struct reply *out)
{
    struct accept_pending *p = calloc(1, sizeof *p);
    if (p == NULL) {
        reply_error(out, OSBQ_ERR_INTERNAL, "Out of memory.");
        return NULL;
    }
    p->desc = desc;
    p->kind = a->kind;
    p->begin = a->begin;
    p->quota_count =
        a->quota_count < OSBQ_POLICY_QUOTAS_MAX ? a->quota_count : OSBQ_POLICY_QUOTAS_MAX;
    for (size_t i = 0; i < p->quota_count; i++)
        p->quotas[i] = a->quotas[i];
    const char *maintenance_info = NULL;
    if (!keep_strings(p) || !pending_texts(gw, a, p, &maintenance_info) ||
        (gw->cfg->events_max > 0 && req->originating_identity != NULL &&
         req->originating_identity[0] != '\0' &&
         (p->user = originating_identity_decode(req->originating_identity)) == NULL)) {
        pending_free(p);
        reply_error(out, OSBQ_ERR_INTERNAL, "Out of memory.");
        return NULL;
    }
    osbq_catalog_metric_labels(gw->catalog, p->begin.service_id, p->begin.plan_id,
                               &p->metric_service, &p->metric_plan);
    p->async = answered_async(req, desc, a);
    p->timeout_ms = a->plan ? a->plan->sync_timeout_ms : OSBQ_CATALOG_SYNC_TIMEOUT_MS_DEFAULT;
    pending_begin(gw, req, a, p);
    drop_plain_texts(p);
    if (!pending_job(req, p, maintenance_info, out)) {
        pending_free(p);
        return NULL;
    }
    /* A worker with a slot free now: the begin script claims the operation for it, and the job
     * needs no claim of its own. Given back unless the operation is begun. */
    p->handover = dispatch_handover_take(gw->dispatch);
    return p;
}

/* Sends p's begin call, its operation handed to p->handover's worker when it holds a slot; the
 * store's answer goes to accept_operation_after_begin, which then owns p. */
static void pending_begin_call(const struct gateway *gw, struct accept_pending *p,
                               struct reply *out)
{
    struct osbq_begin_request *b = &p->begin;
    b->job = p->job;
    b->job_len = p->job_len;
    b->handed_worker = p->handover != NULL ? dispatch_handover_worker(p->handover) : NULL;
    b->handed_until = p->handover != NULL ? dispatch_handover_until(p->handover) : 0;
    struct osbq_error err = {0};
    struct osbq_store_call *call = osbq_store_begin_call(gw->store, b, &err);
    reply_defer_call(out, call, &err, accept_operation_after_begin, p, pending_free);
}

/* Once a synchronous request's wait for a worker's slot ended: it begins, handed to slot when
 * one was taken, plain otherwise; its wait for the outcome gets what is left of its time. Nothing
 * begins when the gateway stops. */
static void operation_begin_after_slot(const struct gateway *gw, const struct request *req,
                                       struct dispatch_handover *slot, bool stopping, void *state,
                                       struct reply *out)
{
    (void)req;
    struct accept_pending *p = state;
    if (stopping) {
        dispatch_handover_cancel(&slot);
        pending_free(p);
        reply_error(out, OSBQ_ERR_UNAVAILABLE,
                    "The broker is restarting; the operation was not started: retry.");
        return;
    }
    int64_t waited = osbq_clock_ms() - p->slot_wait_started;
    p->timeout_ms = p->timeout_ms > waited ? p->timeout_ms - waited : 0;
    p->handover = slot;
    pending_begin_call(gw, p, out);
}

/* The tenant whose turn a request waiting for a slot takes in the lane (out): its operation's,
 * which the begin script makes its instance's. The gateway knows it when it learned the
 * instance's tenant from an earlier begin, or when the request names its organization (a
 * provision; an update or a bind with a context), or when tenants are whole platforms. False when
 * it does not (a DELETE of an instance begun through another gateway): waiting under another key
 * would let one tenant's requests pass another's. */
static bool slot_tenant(const struct gateway *gw, const struct request *req,
                        const struct accept_pending *p, char out[TENANT_KEY_MAX])
{
    if (instance_tenants_get(gw->instance_tenants, req->params[0], out))
        return true;
    if (gw->cfg->tenant_scope != OSBQ_TENANT_PLATFORM && strchr(p->tenant, '/') == NULL)
        return false;
    memcpy(out, p->tenant, TENANT_KEY_MAX);
    return true;
}

/* A synchronous request that found no slot to hand its operation over to waits for one before
 * it begins (docs/decisions/0045-wait-for-a-slot-first.md): begun now, its job would wait in the
 * lanes all the same and cost a claim call once sent. Its client waits for the outcome anyway,
 * and nothing is acknowledged before the begin. It waits at most half its time: then it begins
 * plain; its pending state, begin request and all, waits with it. False (out untouched) when its
 * tenant is not known: it begins now. */
static bool wait_for_a_slot(const struct gateway *gw, const struct request *req,
                            struct accept_pending *p, struct reply *out)
{
    char tenant[TENANT_KEY_MAX];
    if (!slot_tenant(gw, req, p, tenant))
        return false;
    p->slot_wait_started = osbq_clock_ms();
    reply_wait_slot(out, p->slot_wait_started + p->timeout_ms / 2, operation_begin_after_slot, p,
                    pending_free);
    (void)snprintf(out->operation_id, sizeof out->operation_id, "%s", p->operation_id);
    memcpy(out->tenant, tenant, sizeof out->tenant);
    out->weight = p->weight;
    (void)snprintf(out->platform, sizeof out->platform, "%s", osb_platform_name(req));
    return true;
}

void accept_operation(const struct gateway *gw, const struct request *req,
                      const struct accept_desc *desc, const struct accept *a, struct reply *out)
{
    struct accept_pending *p = pending_new(gw, req, desc, a, out);
    if (p == NULL)
        return;
    if (p->handover == NULL && !p->async && gw->dispatch != NULL &&
        wait_for_a_slot(gw, req, p, out))
        return;
    pending_begin_call(gw, p, out);
}

void accept_delete(const struct gateway *gw, const struct request *req,
                   const struct accept_desc *desc, struct reply *out)
{
    if (req->query_service_id == NULL || req->query_service_id[0] == '\0' ||
        req->query_plan_id == NULL || req->query_plan_id[0] == '\0') {
        reply_bad_request(out, "The query parameters service_id and plan_id are required.");
        return;
    }
    const struct osbq_plan *plan = osb_platform_plan(gw, req, req->query_plan_id);
    if (!accept_async_check(req, desc, plan, out))
        return;
    bool binding = desc->resource == ACCEPT_BINDING;
    const struct accept a = {
        .kind = binding ? OSBQ_JOB_UNBIND : OSBQ_JOB_DEPROVISION,
        .begin = {.instance_id = req->params[0],
                  .service_id = req->query_service_id,
                  .plan_id = req->query_plan_id,
                  .binding = {.binding_id = binding ? req->params[1] : NULL},
                  /* A plan no longer offered halts as the default does. */
                  .halt = plan == NULL || plan->halt_on_delete},
        .plan = plan,
    };
    accept_operation(gw, req, desc, &a, out);
}
