/* One request between libmicrohttpd's calls (exchange.h): its state, the handler run on it,
 * its suspensions and their ends, its reply and the job the reply carries. */
#include "exchange.h"

#include <jansson.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "access_log.h"
#include "admission.h"
#include "clock.h"
#include "handlers.h"
#include "log.h"
#include "reply.h"
#include "route.h"
#include "store_pipeline.h"

/* Where a request is, between libmicrohttpd's calls. */
enum exchange_state {
    EXCHANGE_RECEIVING = 0, /* reading the body, then in the handler */
    EXCHANGE_DEFERRED,      /* suspended until defer.call is answered */
    EXCHANGE_WAITING,       /* suspended until wait_result is filled */
    EXCHANGE_SLOT,          /* suspended until its wait for a worker's slot ended */
    EXCHANGE_ANSWERED,      /* a response is queued: further calls are ignored */
};

/* One request's state, from the first access-handler call to the completion callback. */
struct exchange {
    double started;                   /* when the request line arrived (osbq_clock_seconds) */
    enum http_method method;          /* parsed method */
    char *method_name;                /* the method as sent, for the access log */
    char *path;                       /* the raw path, for the access log */
    char *request_identity;           /* X-Broker-API-Request-Identity, for log and echo */
    char *body;                       /* accumulated body, NUL-terminated; NULL while empty */
    size_t body_len;                  /* bytes in body */
    size_t discarded;                 /* bytes dropped after the body passed the limit */
    unsigned status;                  /* status queued, for the access log (0: none) */
    enum exchange_state state;        /* where the request is */
    char *query[4];                   /* decoded query values, in query_names order, or NULL */
    char *trace;                      /* JSON object of the B3 trace headers, or NULL */
    struct MHD_Connection *conn;      /* the connection, to suspend and resume it */
    struct reply_wait wait;           /* what a synchronous request waits for */
    struct waiter_result wait_result; /* how the wait ended */
    const char *route;                /* matched pattern (static), "unmatched" or NULL before */
    char *params[ROUTE_MAX_PARAMS];   /* decoded path parameters (req.params point here) */
    const char *instance_id;          /* the ones that are ids, for the access log, or NULL */
    const char *binding_id;
    char operation_id[33];                /* operation started or joined, for the access log */
    struct access_error error;            /* an error answer's name and first words, or empty */
    char client[64];                      /* the peer's numeric address, or empty */
    struct osbq_platforms *platforms;     /* the set this request uses (a reference) */
    const struct osbq_platform *platform; /* its platform (in platforms), or NULL off /v2 */
    struct request req;                   /* what the handler saw, kept for its second half */
    struct reply_defer defer;             /* the handler's Redis call and second half */
    struct reply_slot slot;               /* the handler's wait for a slot and second half */
    struct dispatch_handover *slot_taken; /* the slot taken for it (the dispatcher's thread sets
                                           * it before resuming the request), or NULL */
    bool slot_stopping;                   /* its wait ended because the gateway stops */
    atomic_bool answered;                 /* defer.call holds its answer (or why it has none) */
};

/* The query parameters OSB requests use; decoded once per request. */
static const char *const query_names[4] = {"accepts_incomplete", "service_id", "plan_id",
                                           "operation"};

static const char *header(struct MHD_Connection *conn, const char *name)
{
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

enum MHD_Result exchange_answer(struct MHD_Connection *conn, struct exchange *ex, struct reply *r)
{
    /* Before the response takes the body. */
    if (r->status >= 400)
        access_log_note_error(&ex->error, r);
    struct MHD_Response *resp;
    if (r->body != NULL) {
        resp = MHD_create_response_from_buffer(r->body_len, r->body, MHD_RESPMEM_MUST_FREE);
        if (resp != NULL)
            r->body = NULL; /* the response owns it now */
    } else {
        resp = MHD_create_response_from_buffer(r->body_len, (void *)(uintptr_t)r->static_body,
                                               MHD_RESPMEM_PERSISTENT);
    }
    if (resp == NULL) {
        reply_clear(r);
        return MHD_NO;
    }
    bool ok = true;
    if (r->status != 304)
        ok &= MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                      r->content_type ? r->content_type : "application/json") ==
              MHD_YES;
    if (r->etag != NULL)
        ok &= MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, r->etag) == MHD_YES;
    if (r->allow[0] != '\0')
        ok &= MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow) == MHD_YES;
    if (ex->request_identity != NULL)
        ok &= MHD_add_response_header(resp, "X-Broker-API-Request-Identity",
                                      ex->request_identity) == MHD_YES;
    if (r->retry_after[0] != '\0')
        ok &= MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, r->retry_after) == MHD_YES;
    enum MHD_Result rc = MHD_NO;
    /* A platform taking Bearer tokens names every scheme it accepts in one challenge list
     * (RFC 7235); Basic alone keeps libmicrohttpd's challenge, as before platforms. */
    if (ok && r->www_authenticate && (r->auth_schemes & REPLY_AUTH_BEARER)) {
        const char *challenge = (r->auth_schemes & REPLY_AUTH_BASIC)
                                    ? "Basic realm=\"osbq\", Bearer realm=\"osbq\""
                                    : "Bearer realm=\"osbq\"";
        if (MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, challenge) == MHD_YES)
            rc = MHD_queue_response(conn, r->status, resp);
    } else if (ok && r->www_authenticate) {
        rc = MHD_queue_basic_auth_fail_response(conn, "osbq", resp);
    } else if (ok) {
        rc = MHD_queue_response(conn, r->status, resp);
    }
    MHD_destroy_response(resp);
    ex->status = r->status;
    ex->state = EXCHANGE_ANSWERED;
    if (r->operation_id[0] != '\0')
        memcpy(ex->operation_id, r->operation_id, sizeof ex->operation_id);
    reply_clear(r);
    return rc;
}

static enum MHD_Result queue_error(struct MHD_Connection *conn, struct exchange *ex,
                                   enum osbq_err code, const char *description)
{
    struct reply r = {0};
    reply_error(&r, code, description);
    return exchange_answer(conn, ex, &r);
}

/* Keeps the decoded path parameters of a matched route for the handler (and its second half,
 * after the route's buffer is gone) and its ids for the access log. false when out of memory. */
static bool keep_params(struct exchange *ex, const struct route *route,
                        const struct route_params *params)
{
    for (size_t i = 0; i < params->count; i++) {
        ex->params[i] = strdup(params->values[i]);
        if (ex->params[i] == NULL)
            return false;
        ex->req.params[i] = ex->params[i];
    }
    if (params->count > 0 && strstr(route->pattern, ":instance_id") != NULL)
        ex->instance_id = ex->params[0];
    if (params->count > 1 && strstr(route->pattern, ":binding_id") != NULL)
        ex->binding_id = ex->params[1];
    return true;
}

/* Admits the request (its platform's credentials and API version on /v2, the metrics
 * credentials on /metrics), routes it and runs the handler. Routing comes first only to name
 * the route in metrics and logs: a /v2 request still gets 401 before 404. */
static void run_handler(const struct gateway *gw, struct MHD_Connection *conn, struct exchange *ex,
                        struct reply *out)
{
    struct request *req = &ex->req;
    *req = (struct request){
        .method = ex->method,
        .path = ex->path,
        .request_identity = ex->request_identity,
        .originating_identity = header(conn, "X-Broker-API-Originating-Identity"),
        .if_none_match = header(conn, MHD_HTTP_HEADER_IF_NONE_MATCH),
        .content_type = header(conn, MHD_HTTP_HEADER_CONTENT_TYPE),
        .body = ex->body,
        .body_len = ex->body_len,
        .accepts_incomplete = ex->query[0],
        .query_service_id = ex->query[1],
        .query_plan_id = ex->query[2],
        .query_operation = ex->query[3],
        .trace = ex->trace,
    };
    const struct route *route = NULL;
    struct route_params params;
    unsigned allowed = 0;
    /* "<prefix>/v2/...": the prefix names the platform, the router sees the rest. */
    const char *path = ex->path;
    const struct osbq_platform *platform = NULL;
    bool broker = osbq_platforms_route(ex->platforms, ex->path, &platform, &path);
    enum route_result matched = route_match(path, ex->method, &route, &params, &allowed);
    ex->route = matched == ROUTE_FOUND ? route->pattern : "unmatched";

    if (broker) {
        ex->platform = platform;
        if (!admission_check_broker(ex->platforms, platform, conn, req, out)) {
            if (out->status == 401)
                audit_refusal(gw->audit, gw->store, req, ex->client,
                              &(struct audit_refusal){
                                  .status = 401,
                                  .reason = "unauthenticated",
                                  .platform = platform != NULL ? platform->name : NULL,
                                  .description = "The credentials are not the platform's."});
            return;
        }
    } else if (matched == ROUTE_FOUND && route->handler == metrics_get &&
               !admission_check_metrics(gw, conn, out)) {
        return;
    }

    switch (matched) {
    case ROUTE_NOT_FOUND:
        reply_error(out, OSBQ_ERR_NOT_FOUND, "No such endpoint.");
        return;
    case ROUTE_METHOD_NOT_ALLOWED:
        reply_error(out, OSBQ_ERR_METHOD, "Method not allowed on this endpoint.");
        route_allow_header(allowed, out->allow, sizeof out->allow);
        return;
    case ROUTE_FOUND:
        break;
    }
    if (!keep_params(ex, route, &params)) {
        reply_error(out, OSBQ_ERR_INTERNAL, "Out of memory.");
        return;
    }
    /* Every line the handler logs names the request's ids; the operation joins when known. */
    struct osbq_log_context context = {.instance_id = ex->instance_id,
                                       .binding_id = ex->binding_id,
                                       .request_id = ex->request_identity};
    osbq_log_context_set(&context);
    route->handler(gw, req, out);
    osbq_log_context_set(NULL);
}

/* Cloud Foundry's B3 tracing headers, carried through the job into worker logs and backends:
 * a compact JSON object, or NULL when the request has none. */
static char *trace_headers(struct MHD_Connection *conn)
{
    static const char *const names[] = {"X-B3-TraceId", "X-B3-SpanId", "X-B3-ParentSpanId",
                                        "X-B3-Sampled", "X-B3-Flags",  "b3"};
    json_t *trace = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *value = header(conn, names[i]);
        json_t *text = value ? json_string(value) : NULL;
        if (text == NULL)
            continue;
        if (trace == NULL)
            trace = json_object();
        json_object_set_new(trace, names[i], text);
    }
    char *out = trace ? json_dumps(trace, JSON_COMPACT) : NULL;
    json_decref(trace);
    return out;
}

static void exchange_free(struct exchange *ex)
{
    free(ex->method_name);
    free(ex->path);
    free(ex->request_identity);
    free(ex->body);
    for (size_t i = 0; i < sizeof ex->query / sizeof ex->query[0]; i++)
        free(ex->query[i]);
    free(ex->trace);
    for (size_t i = 0; i < ROUTE_MAX_PARAMS; i++)
        free(ex->params[i]);
    osbq_platforms_release(ex->platforms);
    reply_wait_clear(&ex->wait);
    waiter_result_clear(&ex->wait_result);
    reply_defer_clear(&ex->defer);
    /* The client left once a slot was taken for it: nothing was begun, the slot is free. */
    dispatch_handover_cancel(&ex->slot_taken);
    reply_slot_clear(&ex->slot);
    free(ex);
}

static void suspend_exchange(void *request)
{
    struct exchange *ex = request;
    MHD_suspend_connection(ex->conn);
}

static void resume_exchange(void *request)
{
    struct exchange *ex = request;
    MHD_resume_connection(ex->conn);
}

/* Parks a synchronous request until its operation ends: registers the waiter and suspends the
 * connection (in that order, under the waiter lock, so a fast result cannot be missed). */
static enum MHD_Result start_waiting(const struct gateway *gw, struct MHD_Connection *conn,
                                     struct exchange *ex, struct reply *r)
{
    ex->wait = r->wait;
    memset(&r->wait, 0, sizeof r->wait);
    memcpy(ex->operation_id, r->operation_id, sizeof ex->operation_id);
    reply_clear(r);
    ex->state = EXCHANGE_WAITING;
    if (waiter_add(gw->waiters, ex->wait.operation_id, osbq_clock_ms() + ex->wait.timeout_ms, ex,
                   &ex->wait_result, suspend_exchange, resume_exchange) < 0) {
        ex->state = EXCHANGE_RECEIVING;
        /* The operation is recorded: it runs, and last_operation reports it. */
        return queue_error(conn, ex, OSBQ_ERR_UNAVAILABLE,
                           "Too many synchronous requests are waiting; the operation goes on: "
                           "poll last_operation, or retry with accepts_incomplete=true.");
    }
    return MHD_YES;
}

/* The pipeline answered the request's call (from its thread): on_access runs the rest. */
static void call_answered(void *request)
{
    struct exchange *ex = request;
    atomic_store(&ex->answered, true);
    MHD_resume_connection(ex->conn);
}

/* Suspends the request while its Redis call travels through the pipeline with other requests'
 * calls (suspended first, so that the answer cannot come before). A refused call (the gateway
 * is stopping) resumes at once and is answered from the error in it. */
static enum MHD_Result start_call(const struct gateway *gw, struct MHD_Connection *conn,
                                  struct exchange *ex, struct reply *r)
{
    ex->defer = r->defer;
    memset(&r->defer, 0, sizeof r->defer);
    reply_clear(r);
    ex->state = EXCHANGE_DEFERRED;
    atomic_store(&ex->answered, false);
    MHD_suspend_connection(conn);
    if (osbq_store_pipeline_submit(gw->pipeline, ex->defer.call, call_answered, ex) < 0) {
        atomic_store(&ex->answered, true);
        MHD_resume_connection(conn);
    }
    return MHD_YES;
}

/* The dispatcher's word that the request's wait for a slot ended (on its thread, under its lock):
 * the request goes on. */
static void slot_wait_ended(void *request, struct dispatch_handover *slot,
                            enum dispatch_slot_end end)
{
    struct exchange *ex = request;
    ex->slot_taken = slot;
    ex->slot_stopping = end == DISPATCH_SLOT_STOPPING;
    MHD_resume_connection(ex->conn);
}

/* Suspends the request while it waits for a worker's slot in the waiting lane (suspended
 * first, so that the slot cannot come before). A wait the dispatcher refuses (its queue is
 * full, or the gateway stops) resumes at once without a slot: the request goes on plain. */
static enum MHD_Result start_slot_wait(const struct gateway *gw, struct MHD_Connection *conn,
                                       struct exchange *ex, struct reply *r,
                                       const struct dispatch_owner *owner)
{
    ex->slot = r->slot;
    memset(&r->slot, 0, sizeof r->slot);
    memcpy(ex->operation_id, r->operation_id, sizeof ex->operation_id);
    reply_clear(r);
    ex->state = EXCHANGE_SLOT;
    ex->slot_taken = NULL;
    ex->slot_stopping = false;
    MHD_suspend_connection(conn);
    if (dispatch_wait_slot(gw->dispatch, ex->operation_id, DISPATCH_LANE_WAITING, owner,
                           ex->slot.deadline_ms, slot_wait_ended, ex) < 0)
        MHD_resume_connection(conn);
    return MHD_YES;
}

/* Sends an accepted operation's job to a worker: the one place jobs leave a handler's reply,
 * once that reply is queued or its request suspended, so that a fast outcome finds the waiter
 * registered. A request that waits for the outcome (sync) has a lane of its own: its client
 * waits on the connection, and new asynchronous work must not queue ahead of it. */
static void send_job(const struct gateway *gw, const char *operation_id,
                     const struct dispatch_owner *owner, bool waiting, struct reply *r)
{
    char *job = r->job;
    r->job = NULL;
    enum dispatch_lane lane = waiting ? DISPATCH_LANE_WAITING : DISPATCH_LANE_NEW;
    if (job == NULL) {
        dispatch_handover_cancel(&r->handover);
        return;
    }
    if (r->handover != NULL) {
        /* Claimed for its worker by the begin script: straight there, in no lane. */
        if (dispatch_submit_handed(gw->dispatch, &r->handover, operation_id, lane, owner, job,
                                   r->job_len) < 0)
            log_warnx("gateway stopping: operation %s, handed to a worker, waits for recovery",
                      operation_id);
    } else if (dispatch_submit(gw->dispatch, operation_id, lane, owner, job, r->job_len) < 0) {
        log_warnx("job queue full: operation %s waits for recovery", operation_id);
    }
    free(job);
}

/* Sends what a handler (or its second half) made of the request: a call to Redis, a wait for
 * its operation, or the response; then the job it started, if any. */
static enum MHD_Result respond(const struct gateway *gw, struct MHD_Connection *conn,
                               struct exchange *ex, struct reply *r)
{
    /* What the job needs of the reply, which the cases below clear. */
    char operation_id[sizeof r->operation_id], tenant[sizeof r->tenant];
    char platform[sizeof r->platform];
    memcpy(operation_id, r->operation_id, sizeof operation_id);
    memcpy(tenant, r->tenant, sizeof tenant);
    memcpy(platform, r->platform, sizeof platform);
    unsigned weight = r->weight;
    /* The job's part of the reply, moved out of it, with a halt the request's delete caused. */
    struct reply job = {.job = r->job,
                        .job_len = r->job_len,
                        .handover = r->handover,
                        .halt_worker = r->halt_worker};
    memcpy(job.halt_operation, r->halt_operation, sizeof job.halt_operation);
    r->job = NULL;
    r->handover = NULL;
    r->halt_worker = NULL;
    enum MHD_Result rc = MHD_NO;
    bool waiting = r->kind == REPLY_WAIT;
    const struct dispatch_owner owner = {tenant, weight, platform};
    switch (r->kind) {
    case REPLY_DEFERRED:
        rc = start_call(gw, conn, ex, r);
        break;
    case REPLY_WAIT:
        rc = start_waiting(gw, conn, ex, r);
        break;
    case REPLY_SLOT:
        rc = start_slot_wait(gw, conn, ex, r, &owner);
        break;
    case REPLY_NOW:
        rc = exchange_answer(conn, ex, r);
        break;
    }
    send_job(gw, operation_id, &owner, waiting, &job);
    if (job.halt_worker != NULL && gw->dispatch != NULL &&
        dispatch_halt(gw->dispatch, job.halt_worker, job.halt_operation) < 0)
        log_info("operation %s halted: worker %s not told now; it stops at its next lease "
                 "renewal",
                 job.halt_operation, job.halt_worker);
    free(job.halt_worker);
    return rc;
}

/* What the lines logged while a suspended request goes on name: its ids, and its operation once
 * known. */
static struct osbq_log_context exchange_log_context(const struct exchange *ex)
{
    return (struct osbq_log_context){.operation_id = ex->operation_id[0] ? ex->operation_id : NULL,
                                     .instance_id = ex->instance_id,
                                     .binding_id = ex->binding_id,
                                     .request_id = ex->request_identity};
}

/* Resumed with the handler's call answered: its second half makes the reply. */
/* Runs the handler's second half on its answered call, its lines naming the request: *r gets
 * what it made of the answer. The call is consumed. */
static void run_second_half(const struct gateway *gw, struct exchange *ex, struct reply *r)
{
    struct reply_defer defer = ex->defer;
    memset(&ex->defer, 0, sizeof ex->defer);
    struct osbq_log_context context = exchange_log_context(ex);
    osbq_log_context_set(&context);
    defer.resume(gw, &ex->req, defer.call, defer.state, r);
    osbq_log_context_set(NULL);
    reply_defer_clear(&defer);
}

static enum MHD_Result finish_call(const struct gateway *gw, struct MHD_Connection *conn,
                                   struct exchange *ex)
{
    ex->state = EXCHANGE_RECEIVING;
    struct reply r = {0};
    run_second_half(gw, ex, &r);
    return respond(gw, conn, ex, &r);
}

/* Resumed once the request's wait for a slot ended: its second half goes on with the slot taken
 * (or none), and owns the wait's state from then on. */
static enum MHD_Result finish_slot_wait(const struct gateway *gw, struct MHD_Connection *conn,
                                        struct exchange *ex)
{
    ex->state = EXCHANGE_RECEIVING;
    struct reply_slot slot = ex->slot;
    memset(&ex->slot, 0, sizeof ex->slot);
    struct dispatch_handover *taken = ex->slot_taken;
    ex->slot_taken = NULL;
    struct osbq_log_context context = exchange_log_context(ex);
    osbq_log_context_set(&context);
    struct reply r = {0};
    slot.resume(gw, &ex->req, taken, ex->slot_stopping, slot.state, &r);
    osbq_log_context_set(NULL);
    return respond(gw, conn, ex, &r);
}

/* The client left while the request's call travelled: resumed for the answer, libmicrohttpd
 * found the connection closed and ended the request without running its second half. An
 * operation that call recorded is accepted all the same (it is in Redis), so its job must go to
 * a worker now, not when the recovery loop finds it unclaimed (OSBQ_CLAIM_TIMEOUT_MS later):
 * run the second half for its job alone. A further call it asks for (an update's read came
 * first) recorded nothing yet and is dropped. */
static void finish_call_unanswered(const struct gateway *gw, struct exchange *ex)
{
    struct reply r = {0};
    run_second_half(gw, ex, &r);
    if (r.job != NULL) {
        log_info("operation %s: its client left before the answer; the job goes on",
                 r.operation_id);
        /* Nobody waits for it any more: a new operation's lane. */
        const struct dispatch_owner owner = {r.tenant, r.weight, r.platform};
        send_job(gw, r.operation_id, &owner, false, &r);
    }
    reply_clear(&r);
}

/* The peer's numeric address for the access log; empty when unknown. */
static void client_address(struct MHD_Connection *conn, char *out, size_t size)
{
    out[0] = '\0';
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL)
        return;
    const struct sockaddr *addr = info->client_addr;
    socklen_t len =
        addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (getnameinfo(addr, len, out, (socklen_t)size, NULL, 0, NI_NUMERICHOST) != 0)
        out[0] = '\0';
}

struct exchange *exchange_new(const struct gateway *gw, struct MHD_Connection *conn,
                              const char *url, const char *method)
{
    struct exchange *ex = calloc(1, sizeof *ex);
    if (ex == NULL)
        return NULL;
    atomic_init(&ex->answered, false);
    /* Held to the end of the request: a reload meanwhile does not change its platform. */
    ex->platforms = osbq_platforms_acquire(gw->platforms);
    ex->started = osbq_clock_seconds();
    ex->method = route_method_parse(method);
    ex->method_name = strdup(method);
    ex->path = strdup(url);
    ex->conn = conn;
    client_address(conn, ex->client, sizeof ex->client);
    const char *identity = header(conn, "X-Broker-API-Request-Identity");
    if (identity != NULL)
        ex->request_identity = strdup(identity);
    bool ok = ex->method_name != NULL && ex->path != NULL &&
              (identity == NULL || ex->request_identity != NULL);
    for (size_t i = 0; ok && i < sizeof query_names / sizeof query_names[0]; i++) {
        const char *raw = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, query_names[i]);
        if (raw == NULL)
            continue;
        ex->query[i] = strdup(raw);
        if (ex->query[i] == NULL)
            ok = false;
        else
            (void)MHD_http_unescape(ex->query[i]);
    }
    if (ok)
        ex->trace = trace_headers(conn);
    if (!ok) {
        exchange_free(ex);
        return NULL;
    }
    return ex;
}

/* Appends an upload chunk; false when the body would pass the limit. */
static bool body_append(struct exchange *ex, const char *data, size_t size, size_t limit)
{
    if (size > limit - ex->body_len)
        return false;
    char *grown = realloc(ex->body, ex->body_len + size + 1);
    if (grown == NULL)
        return false;
    memcpy(grown + ex->body_len, data, size);
    ex->body = grown;
    ex->body_len += size;
    ex->body[ex->body_len] = '\0';
    return true;
}

bool exchange_answered(const struct exchange *ex)
{
    return ex->state == EXCHANGE_ANSWERED;
}

enum MHD_Result exchange_upload(const struct gateway *gw, struct exchange *ex, const char *data,
                                size_t size)
{
    /* libmicrohttpd 0.9.75 cannot queue a response before the upload ends, so a chunked body
     * over the limit is drained and answered 413 at the end; one that goes on far past the limit
     * has the connection closed instead. */
    if (ex->discarded > 0 || !body_append(ex, data, size, gw->cfg->max_body_bytes)) {
        ex->discarded += size;
        if (ex->discarded / 16 > gw->cfg->max_body_bytes)
            return MHD_NO;
    }
    return MHD_YES;
}

enum MHD_Result exchange_go_on(const struct gateway *gw, struct MHD_Connection *conn,
                               struct exchange *ex)
{
    if (ex->discarded > 0)
        return queue_error(conn, ex, OSBQ_ERR_TOO_LARGE,
                           "The request body is larger than the broker accepts.");
    if (ex->state == EXCHANGE_DEFERRED)
        return finish_call(gw, conn, ex);
    if (ex->state == EXCHANGE_SLOT)
        return finish_slot_wait(gw, conn, ex);
    struct reply r = {0};
    if (ex->state == EXCHANGE_WAITING) {
        /* Resumed: the operation ended, or the wait did. */
        ex->state = EXCHANGE_RECEIVING;
        struct osbq_log_context context = exchange_log_context(ex);
        osbq_log_context_set(&context);
        osb_sync_reply(gw, &ex->wait, &ex->wait_result, &r);
        osbq_log_context_set(NULL);
        memcpy(r.operation_id, ex->operation_id, sizeof r.operation_id);
        return respond(gw, conn, ex, &r);
    }
    run_handler(gw, conn, ex, &r);
    return respond(gw, conn, ex, &r);
}

void exchange_complete(const struct gateway *gw, struct exchange *ex,
                       enum MHD_RequestTerminationCode toe)
{
    if (ex->state == EXCHANGE_DEFERRED && atomic_load(&ex->answered))
        finish_call_unanswered(gw, ex);
    struct gateway_metrics *metrics = gw->metrics;
    osbq_series_add(metrics->in_flight, -1);
    int64_t micros = (int64_t)((osbq_clock_seconds() - ex->started) * 1e6);
    /* A request cut off before any answer (status 0) is counted as code "0". */
    gateway_metrics_request(metrics, ex->route ? ex->route : "unmatched",
                            route_method_label(ex->method), ex->status, (double)micros / 1e6);
    if (ex->platform != NULL)
        gateway_metrics_platform_request(metrics, ex->platform->name, ex->status);
    const struct access_entry entry = {
        .method = ex->method_name,
        .path = ex->path,
        .status = ex->status,
        .error = &ex->error,
        .client = ex->client,
        .duration_us = micros,
        .request_id = ex->request_identity,
        .instance_id = ex->instance_id,
        .binding_id = ex->binding_id,
        .platform = ex->platform != NULL ? ex->platform->name : NULL,
        .operation_id = ex->operation_id,
        .aborted = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? 0 : (int)toe,
    };
    access_log_write(&entry);
    exchange_free(ex);
}
