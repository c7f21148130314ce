/* The store's side of an operation after its accept: a worker's claim, progress, outcome, wait
 * (a step that ended in progress) and release; the recovery loop's scan and abandon; an operator's
 * fail. One finish script records every outcome, whoever gives it (finish.lua). */
#include "store_operations.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_admin.h"
#include "store_internal.h"
#include "store_recovery.h"
#include "store_requests.h"
#include "store_scripts.h"

/* Reads a script's integer 0/1 answer about one operation; frees reply (NULL: err is set). */
static int int_answer(redisReply *reply, enum store_script script, struct osbq_error *err)
{
    if (reply == NULL)
        return -1;
    /* 2: the operation is one a delete halted (progress, wait and finish say so, decision
     * 0051). */
    int rc = reply->type == REDIS_REPLY_INTEGER
                 ? (reply->integer == 1 || reply->integer == 2 ? (int)reply->integer : 0)
                 : osbq_error_set(err, OSBQ_ERR_INTERNAL, "%s: unexpected reply",
                                  store_script_texts[script].name);
    freeReplyObject(reply);
    return rc;
}

/* Runs a script that answers an integer 0/1 (2) about one operation (wait, release). */
static int op_script(struct osbq_store *store, enum store_script script, const char *const *keys,
                     const char *const *args, struct osbq_error *err)
{
    return int_answer(store_eval(store, script, keys, args, err), script, err);
}

/* The keys of the scripts that act on one operation: its hash and the queue. 0, or -1 with
 * err. */
static int op_keys(const struct osbq_store *store, const char *operation_id, char *op, char *queue,
                   struct osbq_error *err)
{
    if (store_id_key(store, op, STORE_KEY_MAX, "op", operation_id) < 0 ||
        store_key(store, queue, STORE_KEY_MAX, "queue") < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
    return 0;
}

void osbq_claim_clear(struct osbq_claim *claim)
{
    if (claim == NULL)
        return;
    free(claim->resume);
    free(claim->tenant);
    free(claim->halted_operation);
    memset(claim, 0, sizeof *claim);
}

/* *out: a copy of reply's element i when it is a non-empty string, else NULL. False when out
 * of memory. */
static bool dup_present(const redisReply *reply, size_t i, char **out)
{
    *out = NULL;
    if (reply->elements <= i || reply->element[i]->type != REDIS_REPLY_STRING ||
        reply->element[i]->len == 0)
        return true;
    *out = store_element_dup(reply, i);
    return *out != NULL;
}

/* Fills *out from claim.lua's {1, resume, started_ms, steps, created_ms, due_ms, tenant, after}.
 * 0, or -1 with err when out of memory. */
static int claim_read(const redisReply *reply, struct osbq_claim *out, struct osbq_error *err)
{
    memset(out, 0, sizeof *out);
    if (!dup_present(reply, 1, &out->resume))
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    out->started_ms = reply->elements >= 3 ? store_element_int(reply, 2, 0) : 0;
    int64_t steps = reply->elements >= 4 ? store_element_int(reply, 3, 0) : 0;
    out->steps = steps > 0 && steps <= UINT32_MAX ? (uint32_t)steps : 0;
    out->accepted_ms = reply->elements >= 5 ? store_element_int(reply, 4, 0) : 0;
    out->due_ms = reply->elements >= 6 ? store_element_int(reply, 5, 0) : 0;
    if (!dup_present(reply, 6, &out->tenant) || !dup_present(reply, 7, &out->halted_operation)) {
        osbq_claim_clear(out);
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    }
    return 0;
}

int osbq_store_claim(struct osbq_store *store, const char *operation_id, const char *worker_id,
                     uint32_t attempt, int64_t lease_ms, struct osbq_claim *out,
                     struct osbq_error *err)
{
    char op[STORE_KEY_MAX], queue[STORE_KEY_MAX];
    char attempt_text[12], now[24], lease[24], prefix[96];
    if (out != NULL)
        memset(out, 0, sizeof *out);
    if (op_keys(store, operation_id, op, queue, err) < 0)
        return -1;
    (void)store_key_prefix(store, prefix, sizeof prefix);
    (void)snprintf(attempt_text, sizeof attempt_text, "%" PRIu32, attempt);
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
    const char *keys[CLAIM_KEY_COUNT] = {[CLAIM_KEY_OP] = op, [CLAIM_KEY_QUEUE] = queue};
    const char *args[CLAIM_ARG_COUNT] = {
        [CLAIM_ARG_WORKER_ID] = worker_id,
        [CLAIM_ARG_ATTEMPT] = attempt_text,
        [CLAIM_ARG_NOW] = now,
        [CLAIM_ARG_LEASE] = lease,
        [CLAIM_ARG_OPERATION_ID] = operation_id,
        [CLAIM_ARG_PREFIX] = prefix,
    };
    redisReply *reply = store_eval(store, SCRIPT_CLAIM, keys, args, err);
    if (reply == NULL)
        return -1;
    int rc;
    if (reply->type == REDIS_REPLY_INTEGER)
        rc = 0;
    else if (reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1 &&
             store_element_int(reply, 0, 0) == 1)
        rc = out != NULL && claim_read(reply, out, err) < 0 ? -1 : 1;
    else
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "claim: unexpected reply");
    freeReplyObject(reply);
    return rc;
}

struct osbq_store_call *osbq_store_progress_call(struct osbq_store *store, const char *operation_id,
                                                 const char *worker_id, const char *description,
                                                 int64_t lease_ms, struct osbq_error *err)
{
    char op[STORE_KEY_MAX], queue[STORE_KEY_MAX], now[24], lease[24];
    if (op_keys(store, operation_id, op, queue, err) < 0)
        return NULL;
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)snprintf(lease, sizeof lease, "%" PRId64, lease_ms);
    const char *keys[PROGRESS_KEY_COUNT] = {[PROGRESS_KEY_OP] = op, [PROGRESS_KEY_QUEUE] = queue};
    const char *args[PROGRESS_ARG_COUNT] = {
        [PROGRESS_ARG_WORKER_ID] = worker_id,
        [PROGRESS_ARG_DESCRIPTION] = description ? description : "",
        [PROGRESS_ARG_NOW] = now,
        [PROGRESS_ARG_LEASE] = lease,
        [PROGRESS_ARG_OPERATION_ID] = operation_id,
    };
    return store_call_new(SCRIPT_PROGRESS, keys, args, NULL, err);
}

int osbq_store_progress_result(struct osbq_store_call *call, struct osbq_error *err)
{
    return int_answer(store_call_take_reply(call, err), SCRIPT_PROGRESS, err);
}

int osbq_store_progress(struct osbq_store *store, const char *operation_id, const char *worker_id,
                        const char *description, int64_t lease_ms, struct osbq_error *err)
{
    struct osbq_store_call *call =
        osbq_store_progress_call(store, operation_id, worker_id, description, lease_ms, err);
    if (call == NULL)
        return -1;
    osbq_store_call_run(store, call);
    int rc = osbq_store_progress_result(call, err);
    osbq_store_call_free(&call);
    return rc;
}

/* How finish_op may take an operation: from its worker, from the recovery loop (abandon), from
 * an operator, or from the gateway whose synchronous request's time ran out. */
enum finish_by {
    FINISH_BY_WORKER,
    FINISH_BY_RECOVERY,
    FINISH_BY_OPERATOR,
    FINISH_BY_SYNC_LIMIT,
    FINISH_BY_HALTED, /* the worker whose step a delete halted, once the step stopped */
};

/* finish.lua's call: worker_id is who ends it, the worker (worker, halted), or for an operator
 * (FINISH_BY_OPERATOR) the OS user the audit trail names; "" for the others. */
static struct osbq_store_call *finish_call_new(struct osbq_store *store, const char *operation_id,
                                               const char *worker_id,
                                               const struct osbq_op_result *result,
                                               enum finish_by by, struct osbq_error *err);

static int finish_op(struct osbq_store *store, const char *operation_id, const char *worker_id,
                     const struct osbq_op_result *result, enum finish_by by,
                     struct osbq_error *err);

int osbq_store_finish(struct osbq_store *store, const char *operation_id, const char *worker_id,
                      const struct osbq_op_result *result, struct osbq_error *err)
{
    return finish_op(store, operation_id, worker_id, result, FINISH_BY_WORKER, err);
}

/* The outcome of an operation failed by someone other than its worker (the recovery loop, an
 * operator, a gateway at the synchronous limit): the instance stays usable and the update may
 * be repeated, since nothing of it was applied. */
static struct osbq_op_result failed_from_outside(const char *description)
{
    return (struct osbq_op_result){.succeeded = false,
                                   .description = description,
                                   .instance_usable = true,
                                   .update_repeatable = true};
}

int osbq_store_abandon(struct osbq_store *store, const char *operation_id, const char *description,
                       struct osbq_error *err)
{
    const struct osbq_op_result failed = failed_from_outside(description);
    return finish_op(store, operation_id, "", &failed, FINISH_BY_RECOVERY, err);
}

int osbq_store_halted_end(struct osbq_store *store, const char *operation_id, const char *worker_id,
                          struct osbq_error *err)
{
    const struct osbq_op_result stopped = failed_from_outside("Halted.");
    return finish_op(store, operation_id, worker_id, &stopped, FINISH_BY_HALTED, err);
}

int osbq_store_operator_fail(struct osbq_store *store, const char *operation_id,
                             const char *description, const char *by, struct osbq_error *err)
{
    const struct osbq_op_result failed = failed_from_outside(description);
    return finish_op(store, operation_id, by, &failed, FINISH_BY_OPERATOR, err);
}

/* A worker's outcome counts once replicas hold it. When the WAIT behind it ended short, WAIT
 * again, behind a durable PING (its write before the WAIT comes after the outcome, on whatever
 * connection it goes), up to a lease; past it the outcome stands on the primary alone (a
 * failover that loses it runs the operation again once its lease runs out on the promoted
 * replica). */
static void wait_for_replicas(struct osbq_store *store)
{
    int64_t until = store_monotonic_ms() + (int64_t)store->cfg->lease_ms;
    while (store_monotonic_ms() < until) {
        struct osbq_error err = {0};
        struct osbq_store_call *ping = osbq_store_ping_call(&err);
        if (ping == NULL)
            return;
        ping->durable = true;
        osbq_store_call_run(store, ping);
        bool waited = osbq_store_call_not_durable(ping);
        bool acknowledged = osbq_store_ping_result(ping, &err) == 0;
        osbq_store_call_free(&ping);
        if (acknowledged)
            return;
        if (!waited) /* Redis failed rather than WAIT: no busy loop while it is away */
            osbq_clock_sleep_ms(100);
    }
}

/* finish.lua's call for operation_id's outcome result, taken as by says. NULL with err. */
static struct osbq_store_call *finish_call_new(struct osbq_store *store, const char *operation_id,
                                               const char *worker_id,
                                               const struct osbq_op_result *result,
                                               enum finish_by by, struct osbq_error *err)
{
    static const char *const modes[] = {[FINISH_BY_WORKER] = "",
                                        [FINISH_BY_RECOVERY] = "abandon",
                                        [FINISH_BY_OPERATOR] = "operator",
                                        [FINISH_BY_SYNC_LIMIT] = "sync_limit",
                                        [FINISH_BY_HALTED] = "halted"};
    char op[STORE_KEY_MAX], queue[STORE_KEY_MAX], waiters[STORE_KEY_MAX];
    char now[24], retention[16], prefix[96], events_max[16];
    if (op_keys(store, operation_id, op, queue, err) < 0 ||
        store_id_key(store, waiters, sizeof waiters, "waiters", operation_id) < 0) {
        osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "id too long");
        return NULL;
    }
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)snprintf(retention, sizeof retention, "%u", store->cfg->retention_s);
    (void)snprintf(events_max, sizeof events_max, "%u", store->cfg->events_max);
    (void)store_key_prefix(store, prefix, sizeof prefix);
    const char *description = result->description;
    if (description == NULL || description[0] == '\0')
        description = result->succeeded ? "Succeeded." : "Failed.";
    const char *keys[FINISH_KEY_COUNT] = {
        [FINISH_KEY_OP] = op, [FINISH_KEY_QUEUE] = queue, [FINISH_KEY_WAITERS] = waiters};
    const char *args[FINISH_ARG_COUNT] = {
        [FINISH_ARG_WORKER_ID] = by == FINISH_BY_OPERATOR ? "" : worker_id,
        [FINISH_ARG_SUCCEEDED] = result->succeeded ? "1" : "0",
        [FINISH_ARG_DESCRIPTION] = description,
        [FINISH_ARG_DASHBOARD_URL] = result->dashboard_url ? result->dashboard_url : "",
        [FINISH_ARG_METADATA] = result->metadata ? result->metadata : "",
        [FINISH_ARG_INSTANCE_USABLE] = result->instance_usable ? "1" : "0",
        [FINISH_ARG_UPDATE_REPEATABLE] = result->update_repeatable ? "1" : "0",
        [FINISH_ARG_NOW] = now,
        [FINISH_ARG_RETENTION] = retention,
        [FINISH_ARG_PREFIX] = prefix,
        [FINISH_ARG_OPERATION_ID] = operation_id,
        [FINISH_ARG_BINDING] = result->binding ? result->binding : "",
        [FINISH_ARG_MODE] = modes[by],
        [FINISH_ARG_EVENTS_MAX] = events_max,
        [FINISH_ARG_BY] = by == FINISH_BY_OPERATOR ? worker_id : "",
    };
    return store_call_new(SCRIPT_FINISH, keys, args, NULL, err);
}

struct osbq_store_call *osbq_store_sync_limit_call(struct osbq_store *store,
                                                   const char *operation_id,
                                                   const char *description, struct osbq_error *err)
{
    const struct osbq_op_result failed = failed_from_outside(description);
    return finish_call_new(store, operation_id, "", &failed, FINISH_BY_SYNC_LIMIT, err);
}

int osbq_store_sync_limit_result(struct osbq_store_call *call, struct osbq_error *err)
{
    return int_answer(store_call_take_reply(call, err), SCRIPT_FINISH, err);
}

static int finish_op(struct osbq_store *store, const char *operation_id, const char *worker_id,
                     const struct osbq_op_result *result, enum finish_by by, struct osbq_error *err)
{
    struct osbq_store_call *call = finish_call_new(store, operation_id, worker_id, result, by, err);
    if (call == NULL)
        return -1;
    call->durable = by == FINISH_BY_WORKER;
    osbq_store_call_run(store, call);
    bool short_of_acks = osbq_store_call_not_durable(call);
    call->acks_short = false; /* acknowledged or not, the script ran: its answer stands */
    redisReply *reply = store_call_take_reply(call, err);
    osbq_store_call_free(&call);
    int rc = int_answer(reply, SCRIPT_FINISH, err);
    if (rc > 0 && short_of_acks)
        wait_for_replicas(store);
    return rc;
}

/* Fills *item from one entry of recover.lua's answer. Returns 1, or 0 when the entry is not
 * one (left out; *item holds nothing). */
static size_t recovery_item_read(const redisReply *e, struct osbq_recovery_item *item)
{
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 7)
        return 0;
    item->operation_id = store_element_dup(e, 0);
    item->halted = store_element_is(e, 1, "halted");
    item->abandon = item->halted || store_element_is(e, 1, "abandon");
    item->poll = store_element_is(e, 1, "poll");
    item->claims = (uint32_t)store_element_int(e, 2, 0);
    item->lease_expired = store_element_is(e, 4, "lease");
    item->revoked = store_element_is(e, 4, "revoked");
    item->kind = store_element_dup(e, 5);
    if (e->element[6]->type == REDIS_REPLY_STRING && e->element[6]->len > 0)
        item->tenant = store_element_dup(e, 6);
    if (e->element[3]->type == REDIS_REPLY_STRING && e->element[3]->len > 0) {
        item->job = malloc(e->element[3]->len);
        if (item->job != NULL) {
            memcpy(item->job, e->element[3]->str, e->element[3]->len);
            item->job_len = e->element[3]->len;
        }
    }
    if (item->operation_id == NULL) {
        free(item->job);
        free(item->kind);
        free(item->tenant);
        memset(item, 0, sizeof *item);
        return 0;
    }
    return 1;
}

/* Reads recover.lua's or revoke.lua's answer (what: its name, for an error) into *items and
 * *count, and the trailing due time into *next_due_ms when it is not NULL; frees reply. 0, or -1
 * with err. */
static int recovery_items_take(redisReply *reply, const char *what,
                               struct osbq_recovery_item **items, size_t *count,
                               int64_t *next_due_ms, struct osbq_error *err)
{
    int rc = -1;
    struct osbq_recovery_item *list = NULL;
    size_t n = 0;
    if (reply->type != REDIS_REPLY_ARRAY) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "%s: unexpected reply", what);
        goto out;
    }
    list = calloc(reply->elements + 1, sizeof *list);
    if (list == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *e = reply->element[i];
        /* The trailing score of the earliest entry left (a string; not an item). */
        if (e->type == REDIS_REPLY_STRING && next_due_ms != NULL)
            *next_due_ms = (int64_t)strtod(e->str, NULL);
        else
            n += recovery_item_read(e, &list[n]);
    }
    *items = list;
    *count = n;
    list = NULL;
    rc = 0;
out:
    osbq_recovery_free(list, n);
    freeReplyObject(reply);
    return rc;
}

int osbq_store_recover(struct osbq_store *store, unsigned limit, unsigned max_attempts,
                       int64_t claim_timeout_ms, bool can_resend, struct osbq_recovery_item **items,
                       size_t *count, int64_t *next_due_ms, struct osbq_error *err)
{
    if (next_due_ms != NULL)
        *next_due_ms = 0;
    char queue[STORE_KEY_MAX], now[24], limit_text[12], attempts[12], timeout[24], prefix[96];
    if (store_key(store, queue, sizeof queue, "queue") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)snprintf(limit_text, sizeof limit_text, "%u", limit);
    (void)snprintf(attempts, sizeof attempts, "%u", max_attempts);
    (void)snprintf(timeout, sizeof timeout, "%" PRId64, claim_timeout_ms);
    (void)store_key_prefix(store, prefix, sizeof prefix);
    const char *keys[RECOVER_KEY_COUNT] = {[RECOVER_KEY_QUEUE] = queue};
    const char *args[RECOVER_ARG_COUNT] = {
        [RECOVER_ARG_NOW] = now,
        [RECOVER_ARG_LIMIT] = limit_text,
        [RECOVER_ARG_MAX_ATTEMPTS] = attempts,
        [RECOVER_ARG_CLAIM_TIMEOUT] = timeout,
        [RECOVER_ARG_PREFIX] = prefix,
        [RECOVER_ARG_CAN_RESEND] = can_resend ? "1" : "0",
    };
    redisReply *reply = store_eval(store, SCRIPT_RECOVER, keys, args, err);
    return reply != NULL ? recovery_items_take(reply, "recover", items, count, next_due_ms, err)
                         : -1;
}

int osbq_store_revoke(struct osbq_store *store, const char *worker_id, const char *operation_ids,
                      unsigned max_attempts, int64_t claim_timeout_ms,
                      struct osbq_recovery_item **items, size_t *count, struct osbq_error *err)
{
    char queue[STORE_KEY_MAX], now[24], attempts[12], timeout[24], prefix[96];
    if (store_key(store, queue, sizeof queue, "queue") < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "key too long");
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)snprintf(attempts, sizeof attempts, "%u", max_attempts);
    (void)snprintf(timeout, sizeof timeout, "%" PRId64, claim_timeout_ms);
    (void)store_key_prefix(store, prefix, sizeof prefix);
    const char *keys[REVOKE_KEY_COUNT] = {[REVOKE_KEY_QUEUE] = queue};
    const char *args[REVOKE_ARG_COUNT] = {
        [REVOKE_ARG_WORKER_ID] = worker_id,
        [REVOKE_ARG_OPERATION_IDS] = operation_ids,
        [REVOKE_ARG_NOW] = now,
        [REVOKE_ARG_MAX_ATTEMPTS] = attempts,
        [REVOKE_ARG_CLAIM_TIMEOUT] = timeout,
        [REVOKE_ARG_PREFIX] = prefix,
    };
    redisReply *reply = store_eval(store, SCRIPT_REVOKE, keys, args, err);
    return reply != NULL ? recovery_items_take(reply, "revoke", items, count, NULL, err) : -1;
}

void osbq_recovery_free(struct osbq_recovery_item *items, size_t count)
{
    if (items == NULL)
        return;
    for (size_t i = 0; i < count; i++) {
        free(items[i].operation_id);
        free(items[i].job);
        free(items[i].kind);
        free(items[i].tenant);
    }
    free(items);
}

int osbq_store_wait(struct osbq_store *store, const char *operation_id, const char *worker_id,
                    const struct osbq_op_result *in_progress, int64_t due_ms,
                    struct osbq_error *err)
{
    char op[STORE_KEY_MAX], queue[STORE_KEY_MAX], now[24], due[24], prefix[96];
    if (op_keys(store, operation_id, op, queue, err) < 0)
        return -1;
    (void)store_key_prefix(store, prefix, sizeof prefix);
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)snprintf(due, sizeof due, "%" PRId64, due_ms);
    const char *description = in_progress->description;
    const char *keys[WAIT_KEY_COUNT] = {[WAIT_KEY_OP] = op, [WAIT_KEY_QUEUE] = queue};
    const char *args[WAIT_ARG_COUNT] = {
        [WAIT_ARG_WORKER_ID] = worker_id,
        [WAIT_ARG_DESCRIPTION] =
            description != NULL && description[0] != '\0' ? description : "In progress.",
        [WAIT_ARG_RESUME] = in_progress->resume ? in_progress->resume : "",
        [WAIT_ARG_DUE] = due,
        [WAIT_ARG_NOW] = now,
        [WAIT_ARG_OPERATION_ID] = operation_id,
        [WAIT_ARG_PREFIX] = prefix,
    };
    return op_script(store, SCRIPT_WAIT, keys, args, err);
}

int osbq_store_release(struct osbq_store *store, const char *operation_id, const char *worker_id,
                       struct osbq_error *err)
{
    char op[STORE_KEY_MAX], queue[STORE_KEY_MAX], now[24];
    if (op_keys(store, operation_id, op, queue, err) < 0)
        return -1;
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    const char *keys[RELEASE_KEY_COUNT] = {[RELEASE_KEY_OP] = op, [RELEASE_KEY_QUEUE] = queue};
    const char *args[RELEASE_ARG_COUNT] = {
        [RELEASE_ARG_WORKER_ID] = worker_id,
        [RELEASE_ARG_NOW] = now,
        [RELEASE_ARG_OPERATION_ID] = operation_id,
    };
    return op_script(store, SCRIPT_RELEASE, keys, args, err);
}

int osbq_store_operator_resend(struct osbq_store *store, const char *operation_id, const char *by,
                               struct osbq_error *err)
{
    char op[STORE_KEY_MAX], queue[STORE_KEY_MAX], now[24], prefix[96], events_max[16];
    if (op_keys(store, operation_id, op, queue, err) < 0)
        return osbq_error_set(err, OSBQ_ERR_BAD_REQUEST, "operation id too long");
    (void)snprintf(now, sizeof now, "%" PRId64, osbq_store_now_ms());
    (void)store_key_prefix(store, prefix, sizeof prefix);
    const char *keys[RESEND_KEY_COUNT] = {[RESEND_KEY_OP] = op, [RESEND_KEY_QUEUE] = queue};
    (void)snprintf(events_max, sizeof events_max, "%u", store->cfg->events_max);
    const char *args[RESEND_ARG_COUNT] = {[RESEND_ARG_NOW] = now,
                                          [RESEND_ARG_OPERATION_ID] = operation_id,
                                          [RESEND_ARG_PREFIX] = prefix,
                                          [RESEND_ARG_BY] = by,
                                          [RESEND_ARG_EVENTS_MAX] = events_max};
    redisReply *reply = store_eval(store, SCRIPT_RESEND, keys, args, err);
    if (reply == NULL)
        return -1;
    int rc = reply->type == REDIS_REPLY_INTEGER
                 ? (reply->integer >= 0 && reply->integer <= 2 ? (int)reply->integer : 0)
                 : osbq_error_set(err, OSBQ_ERR_INTERNAL, "resend: unexpected reply");
    freeReplyObject(reply);
    return rc;
}
