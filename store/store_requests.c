/* The store's side of the gateway's requests: begin an operation on an instance
 * (begin_instance.lua) or a binding (begin_binding.lua), and subscribe to the events of finished
 * operations. The reads of an instance, a binding and the last operation are store_reads.c's. */
#include "store_requests.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "store_scripts.h"

static int begin_answer(redisReply *reply, struct osbq_begin_reply *out, struct osbq_error *err);

/* Marks an acceptance's call: with OSBQ_REDIS_MIN_ACKS its answer counts only once replicas
 * hold what it wrote. Returns call. */
static struct osbq_store_call *durable(struct osbq_store_call *call)
{
    if (call != NULL)
        call->durable = true;
    return call;
}

/* What the store derives from a begin request for its script: the keys, and the values it writes
 * out as text. Both scripts take them; the binding keys only a binding operation. */
struct begin_derived {
    char instance[STORE_KEY_MAX], op[STORE_KEY_MAX], queue[STORE_KEY_MAX];
    char waiters[STORE_KEY_MAX], bindings[STORE_KEY_MAX];
    char binding[STORE_KEY_MAX], predecessor[STORE_KEY_MAX]; /* "" when it has none */
    char prefix[96], now[24], claim_deadline[24], api_version[12];
    char in_progress_cap[24]; /* the limit in decimal, or "" for none */
    char delete_cap[24];      /* the deletion guard's limit in decimal, or "" for none */
    char handed_until[24];    /* a hand-over's lease end in decimal, or "" for none */
    char events_max[16];      /* OSBQ_EVENTS_MAX in decimal */
};

/* Fills *d for req; false when an id makes a key too long. */
static bool derive_begin(struct osbq_store *store, const struct osbq_begin_request *req,
                         struct begin_derived *d)
{
    const struct osbq_begin_binding *b = &req->binding;
    d->binding[0] = d->predecessor[0] = d->in_progress_cap[0] = d->handed_until[0] = '\0';
    d->delete_cap[0] = '\0';
    if (store_id_key(store, d->instance, sizeof d->instance, "instance", req->instance_id) < 0 ||
        store_id_key(store, d->bindings, sizeof d->bindings, "bindings", req->instance_id) < 0 ||
        store_id_key(store, d->op, sizeof d->op, "op", req->operation_id) < 0 ||
        store_id_key(store, d->waiters, sizeof d->waiters, "waiters", req->operation_id) < 0 ||
        store_key(store, d->queue, sizeof d->queue, "queue") < 0 ||
        (b->binding_id != NULL && store_binding_key(store, d->binding, sizeof d->binding,
                                                    req->instance_id, b->binding_id) < 0) ||
        (b->predecessor_binding_id != NULL &&
         store_binding_key(store, d->predecessor, sizeof d->predecessor, req->instance_id,
                           b->predecessor_binding_id) < 0))
        return false;
    int64_t now_ms = osbq_store_now_ms();
    (void)store_key_prefix(store, d->prefix, sizeof d->prefix);
    (void)snprintf(d->now, sizeof d->now, "%" PRId64, now_ms);
    (void)snprintf(d->claim_deadline, sizeof d->claim_deadline, "%" PRId64,
                   now_ms + req->claim_timeout_ms);
    (void)snprintf(d->api_version, sizeof d->api_version, "%u", req->api_version);
    if (req->in_progress_cap != NULL)
        (void)snprintf(d->in_progress_cap, sizeof d->in_progress_cap, "%" PRId64,
                       *req->in_progress_cap);
    if (req->delete_cap > 0)
        (void)snprintf(d->delete_cap, sizeof d->delete_cap, "%" PRId64, req->delete_cap);
    if (req->handed_worker != NULL)
        (void)snprintf(d->handed_until, sizeof d->handed_until, "%" PRId64, req->handed_until);
    (void)snprintf(d->events_max, sizeof d->events_max, "%u", store->cfg->events_max);
    return true;
}

/* s, or "" for NULL: the scripts take an absent value as an empty argument. */
static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

/* begin_instance.lua's call for req. */
static struct osbq_store_call *begin_instance_call(const struct osbq_begin_request *req,
                                                   const struct begin_derived *d,
                                                   struct osbq_error *err)
{
    static const char *const protection[] = {[OSBQ_DELETION_PROTECTION_UNSAID] = "",
                                             [OSBQ_DELETION_PROTECTION_OFF] = "0",
                                             [OSBQ_DELETION_PROTECTION_ON] = "1"};
    const char *keys[BEGIN_INSTANCE_KEY_COUNT] = {
        [BEGIN_INSTANCE_KEY_INSTANCE] = d->instance, [BEGIN_INSTANCE_KEY_OP] = d->op,
        [BEGIN_INSTANCE_KEY_QUEUE] = d->queue,       [BEGIN_INSTANCE_KEY_WAITERS] = d->waiters,
        [BEGIN_INSTANCE_KEY_BINDINGS] = d->bindings,
    };
    const char *args[BEGIN_INSTANCE_ARG_COUNT] = {
        [BEGIN_INSTANCE_ARG_KIND] = req->kind,
        [BEGIN_INSTANCE_ARG_OPERATION_ID] = req->operation_id,
        [BEGIN_INSTANCE_ARG_DIGEST] = req->digest,
        [BEGIN_INSTANCE_ARG_NOW] = d->now,
        [BEGIN_INSTANCE_ARG_WAITING_GATEWAY] = or_empty(req->waiting_gateway),
        [BEGIN_INSTANCE_ARG_SERVICE_ID] = req->service_id,
        [BEGIN_INSTANCE_ARG_PLAN_ID] = or_empty(req->plan_id),
        [BEGIN_INSTANCE_ARG_PARAMETERS] = or_empty(req->parameters),
        [BEGIN_INSTANCE_ARG_CONTEXT] = or_empty(req->context),
        [BEGIN_INSTANCE_ARG_MAINTENANCE_VERSION] = or_empty(req->maintenance_version),
        [BEGIN_INSTANCE_ARG_DASHBOARD_URL] = or_empty(req->dashboard_url),
        [BEGIN_INSTANCE_ARG_JOB] = req->job,
        [BEGIN_INSTANCE_ARG_CLAIM_DEADLINE] = d->claim_deadline,
        [BEGIN_INSTANCE_ARG_EXPECTED_PLAN_ID] = or_empty(req->expected_plan_id),
        [BEGIN_INSTANCE_ARG_PREFIX] = d->prefix,
        [BEGIN_INSTANCE_ARG_INSTANCE_ID] = req->instance_id,
        [BEGIN_INSTANCE_ARG_API_VERSION] = d->api_version,
        [BEGIN_INSTANCE_ARG_QUOTAS] = or_empty(req->quotas),
        [BEGIN_INSTANCE_ARG_PLATFORM] = req->platform ? req->platform : STORE_PLATFORM_DEFAULT,
        [BEGIN_INSTANCE_ARG_TENANT] = or_empty(req->tenant),
        [BEGIN_INSTANCE_ARG_IN_PROGRESS_CAP] = d->in_progress_cap,
        [BEGIN_INSTANCE_ARG_HANDED_WORKER] = or_empty(req->handed_worker),
        [BEGIN_INSTANCE_ARG_HANDED_UNTIL] = d->handed_until,
        [BEGIN_INSTANCE_ARG_HALT] = req->halt ? "1" : "",
        [BEGIN_INSTANCE_ARG_DELETION_PROTECTION] = protection[req->deletion_protection],
        [BEGIN_INSTANCE_ARG_DELETE_CAP] = d->delete_cap,
        [BEGIN_INSTANCE_ARG_EVENTS_MAX] = d->events_max,
        [BEGIN_INSTANCE_ARG_USER] = or_empty(req->user),
        [BEGIN_INSTANCE_ARG_REQUEST_ID] = or_empty(req->request_id),
    };
    size_t lens[BEGIN_INSTANCE_ARG_COUNT] = {[BEGIN_INSTANCE_ARG_JOB] = req->job_len};
    return store_call_new(SCRIPT_BEGIN_INSTANCE, keys, args, lens, err);
}

/* begin_binding.lua's call for req. */
static struct osbq_store_call *begin_binding_call(const struct osbq_begin_request *req,
                                                  const struct begin_derived *d,
                                                  struct osbq_error *err)
{
    const struct osbq_begin_binding *b = &req->binding;
    const char *keys[BEGIN_BINDING_KEY_COUNT] = {
        [BEGIN_BINDING_KEY_INSTANCE] = d->instance,
        [BEGIN_BINDING_KEY_BINDING] = d->binding,
        [BEGIN_BINDING_KEY_OP] = d->op,
        [BEGIN_BINDING_KEY_QUEUE] = d->queue,
        [BEGIN_BINDING_KEY_WAITERS] = d->waiters,
        [BEGIN_BINDING_KEY_BINDINGS] = d->bindings,
    };
    const char *args[BEGIN_BINDING_ARG_COUNT] = {
        [BEGIN_BINDING_ARG_KIND] = req->kind,
        [BEGIN_BINDING_ARG_OPERATION_ID] = req->operation_id,
        [BEGIN_BINDING_ARG_DIGEST] = req->digest,
        [BEGIN_BINDING_ARG_NOW] = d->now,
        [BEGIN_BINDING_ARG_WAITING_GATEWAY] = or_empty(req->waiting_gateway),
        [BEGIN_BINDING_ARG_SERVICE_ID] = req->service_id,
        [BEGIN_BINDING_ARG_PLAN_ID] = or_empty(req->plan_id),
        [BEGIN_BINDING_ARG_PARAMETERS] = or_empty(req->parameters),
        [BEGIN_BINDING_ARG_CONTEXT] = or_empty(req->context),
        [BEGIN_BINDING_ARG_BIND_RESOURCE] = or_empty(b->bind_resource),
        [BEGIN_BINDING_ARG_JOB] = req->job,
        [BEGIN_BINDING_ARG_CLAIM_DEADLINE] = d->claim_deadline,
        [BEGIN_BINDING_ARG_PREFIX] = d->prefix,
        [BEGIN_BINDING_ARG_INSTANCE_ID] = req->instance_id,
        [BEGIN_BINDING_ARG_BINDING_ID] = b->binding_id,
        [BEGIN_BINDING_ARG_API_VERSION] = d->api_version,
        [BEGIN_BINDING_ARG_PREDECESSOR_KEY] = d->predecessor,
        [BEGIN_BINDING_ARG_PREDECESSOR_ID] = or_empty(b->predecessor_binding_id),
        [BEGIN_BINDING_ARG_PLATFORM] = req->platform ? req->platform : STORE_PLATFORM_DEFAULT,
        [BEGIN_BINDING_ARG_TENANT] = or_empty(req->tenant),
        [BEGIN_BINDING_ARG_IN_PROGRESS_CAP] = d->in_progress_cap,
        [BEGIN_BINDING_ARG_HANDED_WORKER] = or_empty(req->handed_worker),
        [BEGIN_BINDING_ARG_HANDED_UNTIL] = d->handed_until,
        [BEGIN_BINDING_ARG_HALT] = req->halt ? "1" : "",
        [BEGIN_BINDING_ARG_DELETE_CAP] = d->delete_cap,
        [BEGIN_BINDING_ARG_EVENTS_MAX] = d->events_max,
        [BEGIN_BINDING_ARG_USER] = or_empty(req->user),
        [BEGIN_BINDING_ARG_REQUEST_ID] = or_empty(req->request_id),
    };
    size_t lens[BEGIN_BINDING_ARG_COUNT] = {[BEGIN_BINDING_ARG_JOB] = req->job_len};
    return store_call_new(SCRIPT_BEGIN_BINDING, keys, args, lens, err);
}

struct osbq_store_call *osbq_store_begin_call(struct osbq_store *store,
                                              const struct osbq_begin_request *req,
                                              struct osbq_error *err)
{
    struct begin_derived derived;
    if (!derive_begin(store, req, &derived)) {
        osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
        return NULL;
    }
    /* Two scripts: an instance operation and a binding's hold and check different records. */
    return durable(req->binding.binding_id != NULL ? begin_binding_call(req, &derived, err)
                                                   : begin_instance_call(req, &derived, err));
}

int osbq_store_begin_result(struct osbq_store_call *call, struct osbq_begin_reply *out,
                            struct osbq_error *err)
{
    redisReply *reply = store_call_take_reply(call, err);
    return reply != NULL ? begin_answer(reply, out, err) : -1;
}

/* Turns a begin script's reply into *out; frees the reply. */
static int begin_answer(redisReply *reply, struct osbq_begin_reply *out, struct osbq_error *err)
{
    static const struct {
        const char *word;
        enum osbq_begin_answer answer;
    } answers[] = {
        {"accepted", OSBQ_BEGIN_ACCEPTED},
        {"halting", OSBQ_BEGIN_HALTING},
        {"in_progress", OSBQ_BEGIN_IN_PROGRESS},
        {"done", OSBQ_BEGIN_DONE},
        {"conflict", OSBQ_BEGIN_CONFLICT},
        {"busy", OSBQ_BEGIN_BUSY},
        {"not_found", OSBQ_BEGIN_NOT_FOUND},
        {"gone", OSBQ_BEGIN_GONE},
        {"changed", OSBQ_BEGIN_CHANGED},
        {"mismatch", OSBQ_BEGIN_MISMATCH},
        {"no_instance", OSBQ_BEGIN_NO_INSTANCE},
        {"instance_busy", OSBQ_BEGIN_INSTANCE_BUSY},
        {"bad_predecessor", OSBQ_BEGIN_BAD_PREDECESSOR},
        {"quota", OSBQ_BEGIN_QUOTA},
        {"capped", OSBQ_BEGIN_CAPPED},
        {"protected", OSBQ_BEGIN_PROTECTED},
        {"delete_capped", OSBQ_BEGIN_DELETE_CAPPED},
    };
    int rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "begin: unexpected reply");
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) {
        if (!store_element_is(reply, 0, answers[i].word))
            continue;
        memset(out, 0, sizeof *out);
        out->answer = answers[i].answer;
        if (out->answer == OSBQ_BEGIN_QUOTA) {
            int64_t line = store_element_int(reply, 1, 0);
            out->quota_index = line > 0 ? (size_t)(line - 1) : 0;
            out->quota_used = store_element_int(reply, 2, 0);
            rc = 0;
            break;
        }
        if (out->answer == OSBQ_BEGIN_CAPPED || out->answer == OSBQ_BEGIN_DELETE_CAPPED) {
            out->in_progress = store_element_int(reply, 1, 0);
            out->tenant = store_element_dup(reply, 2);
            rc = 0;
            break;
        }
        out->operation_id = store_element_dup(reply, 1);
        out->dashboard_url = store_element_dup(reply, 2);
        out->metadata = store_element_dup(reply, 3);
        out->binding_result = store_element_dup(reply, 4);
        out->tenant = store_element_dup(reply, 5);
        if (out->answer == OSBQ_BEGIN_HALTING) {
            out->halted_operation = store_element_dup(reply, 6);
            out->halted_worker = store_element_dup(reply, 7);
        }
        rc = 0;
        break;
    }
    freeReplyObject(reply);
    return rc;
}

void osbq_begin_reply_clear(struct osbq_begin_reply *reply)
{
    free(reply->binding_result);
    free(reply->operation_id);
    free(reply->dashboard_url);
    free(reply->metadata);
    free(reply->tenant);
    free(reply->halted_operation);
    free(reply->halted_worker);
    memset(reply, 0, sizeof *reply);
}

redisContext *osbq_store_subscribe_events(struct osbq_store *store, const char *gateway_id,
                                          struct osbq_error *err)
{
    char channel[STORE_KEY_MAX];
    if (store_id_key(store, channel, sizeof channel, "events", gateway_id) < 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "gateway id too long");
        return NULL;
    }
    redisContext *c = store_connect(store, err);
    if (c == NULL)
        return NULL;
    redisReply *reply = redisCommand(c, "SUBSCRIBE %s", channel);
    if (store_reply_failed(c, reply, "SUBSCRIBE", err) < 0) {
        freeReplyObject(reply);
        redisFree(c);
        return NULL;
    }
    freeReplyObject(reply);
    return c;
}
