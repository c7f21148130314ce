/* The store: osbq's only door to Redis. It owns the connections and, as the job flow grows,
 * every key (docs/architecture.md lists them); no other file builds a key. */
#ifndef OSBQ_STORE_H
#define OSBQ_STORE_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "policy.h"

struct osbq_store;

/* Creates a store for cfg's Redis. No connection is made yet: connections open on first use
 * and reopen after a failure, so a process starts while Redis is down. cfg is borrowed and
 * must outlive the store. Caller owns the result (osbq_store_destroy); NULL when out of
 * memory. */
struct osbq_store *osbq_store_new(const struct osbq_config *cfg);

/* Closes every connection and frees the store; sets *sp to NULL; accepts NULL. */
void osbq_store_destroy(struct osbq_store **sp);

/* Checks Redis answers PING within the configured timeout. Returns 0, or -1 with err->code
 * OSBQ_ERR_UNAVAILABLE and the reason. Safe from any thread. */
int osbq_store_ping(struct osbq_store *store, struct osbq_error *err);

/* PING in two halves, for a pipeline: the call (NULL with err), then 0 or -1 with err. */
struct osbq_store_call *osbq_store_ping_call(struct osbq_error *err);
int osbq_store_ping_result(struct osbq_store_call *call, struct osbq_error *err);

/* Writes "<namespace>:<suffix>" into buf; returns its length, or -1 when it does not fit. */
int osbq_store_key(const struct osbq_store *store, char *buf, size_t size, const char *suffix);

/* ---- Calls that do not block the caller (common/store_pipeline.h sends them) ---- */

/* One call of a store script: made by an osbq_store_*_call function, sent through a pipeline
 * (or run at once by the blocking function of the same name), read by the matching
 * osbq_store_*_result function. Owned by whoever made it (osbq_store_call_free), except while
 * a pipeline holds it. */
struct osbq_store_call;

/* Called once for each call a pipeline took, from the pipeline's thread, when the call holds
 * its reply or the reason it has none. */
typedef void (*osbq_store_call_done_fn)(void *ctx);

/* Frees a call (and a reply it still holds); sets *cp to NULL; accepts NULL. */
void osbq_store_call_free(struct osbq_store_call **cp);

/* Runs call on one of the store's connections, blocking until its reply or a failure is in
 * it. */
void osbq_store_call_run(struct osbq_store *store, struct osbq_store_call *call);

/* ---- Gateway registry (the pinned bus topology) ---- */

/* Publishes endpoint as a live gateway until now + ttl_ms. Call again before it expires. */
int osbq_store_gateway_register(struct osbq_store *store, const char *endpoint, int64_t ttl_ms,
                                struct osbq_error *err);

/* Removes endpoint from the registry (clean shutdown). */
int osbq_store_gateway_unregister(struct osbq_store *store, const char *endpoint,
                                  struct osbq_error *err);

/* Lists the endpoints of live gateways. On success *out is a NULL-terminated array the caller
 * frees with osbq_store_strings_free, *count its length. Expired entries are pruned. */
int osbq_store_gateway_list(struct osbq_store *store, char ***out, size_t *count,
                            struct osbq_error *err);
void osbq_store_strings_free(char **strings);

/* ---- Instances and operations, as a gateway sees them ---- */

/* What the gateway asks for when it accepts a provision, update or deprovision. Borrowed. */
struct osbq_begin_request {
    const char *kind;                /* "provision", "update" or "deprovision" */
    const char *operation_id;        /* the new operation's id (the gateway makes it) */
    const char *instance_id;         /* from the path, decoded */
    const char *digest;              /* idempotency digest of the request */
    const char *waiting_gateway;     /* this gateway's id when the request waits (sync), or NULL */
    const char *service_id;          /* service id */
    const char *plan_id;             /* target plan (update: NULL keeps the current plan) */
    const char *parameters;          /* JSON object text, or NULL when absent */
    const char *context;             /* JSON object text, or NULL */
    const char *maintenance_version; /* maintenance_info.version, or NULL */
    const char *dashboard_url;       /* provision: decided at accept time, or NULL */
    const char *expected_plan_id;    /* update: the plan the gateway validated against, or NULL */
    const void *job;                 /* the encoded job, kept so the operation can be resent */
    size_t job_len;                  /* bytes in job */
    unsigned api_version;            /* the request's API version */
    int64_t claim_timeout_ms;        /* how long the job may wait for a worker's claim */
    const char *quotas;   /* from osbq_store_quota_spec: counters the instance must hold; NULL:
                           * none; OSBQ_STORE_QUOTAS_UNCHANGED: an update keeping its plan */
    const char *platform; /* the platform asking (records it; another's instance is not found);
                           * NULL: "default" */
};

/* begin_request.quotas of an update that keeps the instance's plan (and so its counters). */
#define OSBQ_STORE_QUOTAS_UNCHANGED "-"

/* The quota counters (common/policy.h) a request counts against, as begin_instance.lua reads
 * them: "<limit> <key>" lines, keys "<ns>:quota:<name>[:<value, encoded>]". Returns a new
 * string (free), or NULL when out of memory or a key would be too long. */
char *osbq_store_quota_spec(const struct osbq_store *store, const struct osbq_policy_use *uses,
                            size_t count);

/* The counter of quota name (for value of its field, or NULL): how many instances hold it.
 * Returns 0 with *used, or -1 with err. For osbq-ctl. */
int osbq_store_quota_used(struct osbq_store *store, const char *name, const char *value,
                          int64_t *used, struct osbq_error *err);

/* Called for each counter of a per-field quota: the value as its key holds it (bytes outside
 * A-Za-z0-9-._~ percent-encoded) and its count. Returns 0 to go on, -1 to stop. */
typedef int (*osbq_store_quota_visit_fn)(const char *value, int64_t used, void *ctx);

/* Walks every counter of the per-field quota name (SCAN, about 500 keys a step); a counter
 * written meanwhile may be seen twice or not at all. Returns 0, or -1 with err (or when visit
 * stopped). For osbq-ctl. */
int osbq_store_quota_walk(struct osbq_store *store, const char *name,
                          osbq_store_quota_visit_fn visit, void *ctx, struct osbq_error *err);

/* What osbq_store_begin_instance found. */
enum osbq_begin_answer {
    OSBQ_BEGIN_ACCEPTED,        /* recorded: send the job */
    OSBQ_BEGIN_IN_PROGRESS,     /* the identical operation runs: operation_id is its id */
    OSBQ_BEGIN_DONE,            /* provision: identical instance already provisioned */
    OSBQ_BEGIN_CONFLICT,        /* provision: same id, different attributes */
    OSBQ_BEGIN_BUSY,            /* another operation holds the instance */
    OSBQ_BEGIN_NOT_FOUND,       /* update: no provisioned instance */
    OSBQ_BEGIN_GONE,            /* deprovision: no such instance */
    OSBQ_BEGIN_CHANGED,         /* update: the plan changed since the gateway read it */
    OSBQ_BEGIN_MISMATCH,        /* service or plan is not the instance's (or binding's) */
    OSBQ_BEGIN_NO_INSTANCE,     /* bind: the instance does not exist (or failed, or is gone) */
    OSBQ_BEGIN_INSTANCE_BUSY,   /* bind/unbind: an instance operation holds the instance */
    OSBQ_BEGIN_BAD_PREDECESSOR, /* bind: the predecessor is not a live binding of it */
    OSBQ_BEGIN_QUOTA,           /* a quota is full: quota_index says which, quota_used how full */
};

struct osbq_begin_reply {
    enum osbq_begin_answer answer; /* what happened */
    char *operation_id;            /* accepted or running operation, or NULL; owned */
    char *dashboard_url;           /* the instance's dashboard URL, or NULL; owned */
    char *metadata;                /* the instance's metadata JSON, or NULL; owned */
    char *binding_result;          /* bind DONE: the binding's JSON (credentials...); owned */
    size_t quota_index;            /* QUOTA: the full quota's place in the request's list */
    int64_t quota_used;            /* QUOTA: instances it counted */
};

/* Takes the instance's lock and records the operation in one round trip (see
 * common/lua/begin_instance.lua). Returns 0 with *out filled (free with
 * osbq_begin_reply_clear), or -1 with err (OSBQ_ERR_UNAVAILABLE when Redis failed). */
int osbq_store_begin_instance(struct osbq_store *store, const struct osbq_begin_request *req,
                              struct osbq_begin_reply *out, struct osbq_error *err);
void osbq_begin_reply_clear(struct osbq_begin_reply *reply);

/* osbq_store_begin_instance in two halves, for a pipeline: the call (NULL with err), then,
 * once it is answered, what it found (the same returns; the call's reply is consumed). */
struct osbq_store_call *osbq_store_begin_instance_call(struct osbq_store *store,
                                                       const struct osbq_begin_request *req,
                                                       struct osbq_error *err);
int osbq_store_begin_result(struct osbq_store_call *call, struct osbq_begin_reply *out,
                            struct osbq_error *err);

/* What the gateway asks for when it accepts a bind or unbind. Borrowed. */
struct osbq_bind_request {
    const char *kind;                   /* "bind" or "unbind" */
    const char *operation_id;           /* the new operation's id */
    const char *instance_id;            /* from the path, decoded */
    const char *binding_id;             /* from the path, decoded */
    const char *digest;                 /* idempotency digest of the request ("" for unbind) */
    const char *waiting_gateway;        /* this gateway's id when the request waits, or NULL */
    const char *service_id;             /* must be the instance's (binding's) service */
    const char *plan_id;                /* must be the instance's (binding's) plan */
    const char *parameters;             /* JSON object text, or NULL */
    const char *context;                /* JSON object text, or NULL */
    const char *bind_resource;          /* JSON object text, or NULL */
    const char *predecessor_binding_id; /* rotation: a live binding of the instance, or NULL */
    const void *job;                    /* the encoded job */
    size_t job_len;                     /* bytes in job */
    unsigned api_version;               /* the request's API version */
    int64_t claim_timeout_ms;           /* how long the job may wait for a worker's claim */
    const char *platform; /* the platform asking (records it; another's instance or binding is
                           * not found); NULL: "default" */
};

/* Holds the instance shared and the binding exclusively, and records the operation, in one
 * round trip (common/lua/begin_binding.lua). Returns 0 with *out, or -1 with err. */
int osbq_store_begin_binding(struct osbq_store *store, const struct osbq_bind_request *req,
                             struct osbq_begin_reply *out, struct osbq_error *err);

/* Its call, for a pipeline; osbq_store_begin_result reads the answer. */
struct osbq_store_call *osbq_store_begin_binding_call(struct osbq_store *store,
                                                      const struct osbq_bind_request *req,
                                                      struct osbq_error *err);

/* A binding record. Strings owned (osbq_binding_clear); absent ones are NULL. */
struct osbq_binding {
    char *state;       /* binding, bound, failed, gone */
    char *service_id;  /* service id */
    char *plan_id;     /* plan id */
    char *parameters;  /* JSON text of the bind parameters */
    char *result;      /* JSON text: credentials, endpoints, syslog_drain_url, ... */
    char *lock_holder; /* operation running on it, or NULL */
    char *platform;    /* the platform that made it; NULL: recorded before platforms, "default" */
};

/* Reads a binding. Returns 1 with *out, 0 when there is no record, -1 with err. */
int osbq_store_binding_get(struct osbq_store *store, const char *instance_id,
                           const char *binding_id, struct osbq_binding *out,
                           struct osbq_error *err);

/* osbq_store_binding_get in two halves, for a pipeline (the same returns). */
struct osbq_store_call *osbq_store_binding_get_call(struct osbq_store *store,
                                                    const char *instance_id, const char *binding_id,
                                                    struct osbq_error *err);
int osbq_store_binding_get_result(struct osbq_store_call *call, struct osbq_binding *out,
                                  struct osbq_error *err);
void osbq_binding_clear(struct osbq_binding *binding);

/* An instance record. Strings are owned (osbq_instance_clear); absent ones are NULL. */
struct osbq_instance {
    char *state;               /* provisioning, provisioned, failed, gone */
    char *service_id;          /* service id */
    char *plan_id;             /* current plan id */
    char *parameters;          /* JSON text of the parameters in force */
    char *context;             /* JSON text of the last context */
    char *maintenance_version; /* maintenance version in force */
    char *dashboard_url;       /* dashboard URL */
    char *metadata;            /* JSON text {labels, attributes} */
    char *lock_holder;         /* operation holding the instance exclusively, or NULL */
    long shared_holders;       /* binding operations holding it in shared mode */
    char *platform;            /* the platform that made it; NULL: recorded before platforms,
                                * "default" */
};

/* Reads an instance. Returns 1 with *out filled, 0 when there is no record, -1 with err. */
int osbq_store_instance_get(struct osbq_store *store, const char *instance_id,
                            struct osbq_instance *out, struct osbq_error *err);

/* osbq_store_instance_get in two halves, for a pipeline (the same returns). */
struct osbq_store_call *osbq_store_instance_get_call(struct osbq_store *store,
                                                     const char *instance_id,
                                                     struct osbq_error *err);
int osbq_store_instance_get_result(struct osbq_store_call *call, struct osbq_instance *out,
                                   struct osbq_error *err);
void osbq_instance_clear(struct osbq_instance *instance);

/* What last_operation reports. Strings owned (osbq_last_op_clear). */
struct osbq_last_op {
    char *instance_state;  /* provisioning, provisioned, failed, gone */
    char *kind;            /* provision, update, deprovision */
    char *state;           /* queued, running, succeeded, failed */
    char *description;     /* latest progress or outcome text, or NULL */
    int instance_usable;   /* failed update/deprovision: 1 or 0; -1 when not recorded */
    int update_repeatable; /* failed update: 1 or 0; -1 when not recorded */
    int64_t created_ms;    /* when the operation was accepted */
    int64_t average_ms;    /* the plan's average duration for this kind; -1 unknown */
};

/* Reads the last operation of an instance (binding_id NULL) or of one of its bindings, or the
 * named one (operation_id not NULL), as platform sees it (NULL: any platform). Returns 1 with
 * *out, 0 when the instance (binding) is unknown or another platform's, 2 when the named
 * operation is not one of its operations, -1 with err. One round trip. */
int osbq_store_last_operation(struct osbq_store *store, const char *instance_id,
                              const char *binding_id, const char *operation_id,
                              const char *platform, struct osbq_last_op *out,
                              struct osbq_error *err);
void osbq_last_op_clear(struct osbq_last_op *op);

/* osbq_store_last_operation in two halves, for a pipeline: the call (NULL with err), then what
 * it found (the same returns; the call's reply is consumed). */
struct osbq_store_call *
osbq_store_last_operation_call(struct osbq_store *store, const char *instance_id,
                               const char *binding_id, const char *operation_id,
                               const char *platform, struct osbq_error *err);
int osbq_store_last_operation_result(struct osbq_store_call *call, struct osbq_last_op *out,
                                     struct osbq_error *err);

/* Opens a new connection (not from the pool) subscribed to "<ns>:events:<gateway_id>", where
 * finished operations that this gateway waits for are announced. Caller owns it (redisFree)
 * and reads messages from it. NULL with err. */
redisContext *osbq_store_subscribe_events(struct osbq_store *store, const char *gateway_id,
                                          struct osbq_error *err);

/* Milliseconds since the epoch (Redis records use them). */
int64_t osbq_store_now_ms(void);

/* ---- Operations, as a worker sees them ---- */

/* Claims an operation before running it: queued -> running, or a running operation whose lease
 * expired taken over. Records worker_id, attempt and a lease until now + lease_ms.
 * Returns 1 when claimed (run it), 0 when it is not this worker's to run (finished, or held by
 * a live lease: drop the job), -1 with err when Redis failed. */
int osbq_store_claim(struct osbq_store *store, const char *operation_id, const char *worker_id,
                     uint32_t attempt, int64_t lease_ms, struct osbq_error *err);

/* Records progress (a user-facing description, e.g. "Provisioning (40%)", or NULL to keep the
 * current one) and renews the lease. Returns 1, 0 when the operation is no longer this
 * worker's (stop working on it), -1 with err. */
int osbq_store_progress(struct osbq_store *store, const char *operation_id, const char *worker_id,
                        const char *description, int64_t lease_ms, struct osbq_error *err);

/* The outcome of an operation, as a backend reports it. Strings are borrowed. */
struct osbq_op_result {
    bool succeeded;            /* true: succeeded; false: failed */
    const char *description;   /* user-facing text for last_operation; NULL for a default */
    const char *dashboard_url; /* provision/update: the instance's dashboard, or NULL */
    const char *metadata;      /* provision/update: JSON object {labels, attributes}, or NULL */
    const char *binding;       /* bind: JSON object with credentials, endpoints, syslog_drain_url,
                                * route_service_url, volume_mounts and metadata (expires_at,
                                * renew_before), or NULL */
    bool instance_usable;      /* failed update or deprovision: is the instance still usable */
    bool update_repeatable;    /* failed update: may the same update succeed later */
};

/* Records the outcome atomically: the operation's state and description, the instance's new
 * state and attributes (applied on success), the lock freed, synchronous waiters woken, the
 * operation kept for OSBQ_RETENTION_S. Returns 1, 0 when the operation is no longer this
 * worker's (the result is dropped: another attempt owns it), -1 with err. */
int osbq_store_finish(struct osbq_store *store, const char *operation_id, const char *worker_id,
                      const struct osbq_op_result *result, struct osbq_error *err);

/* Gives a running operation back without an outcome (the worker is stopping, or the operation
 * passed its deadline): it is queued again and due at once, so the recovery loop resends it.
 * Returns 1, 0 when it is not this worker's, -1 with err. */
int osbq_store_release(struct osbq_store *store, const char *operation_id, const char *worker_id,
                       struct osbq_error *err);

/* ---- Recovery ---- */

/* One operation the recovery loop must act on. Owned by the array (osbq_recovery_free). */
struct osbq_recovery_item {
    char *operation_id; /* the operation */
    bool abandon;       /* true: it used up its attempts, fail it; false: send its job again */
    uint32_t claims;    /* how many times a worker claimed it */
    bool lease_expired; /* resend: it was running and its worker's lease ran out */
    char *kind;         /* the operation's kind, or NULL when unknown */
    char *job;          /* resend: the encoded job as accepted */
    size_t job_len;     /* bytes in job */
};

/* Takes up to limit operations whose claim never came (claim_timeout_ms after they were
 * accepted or last sent) or whose lease ran out, moving each one's due time forward so no
 * other process takes it too. Operations claimed max_attempts times are marked for abandon;
 * the others are taken only when can_resend (a worker has room). Returns 0 with *items (count
 * *count; free with osbq_recovery_free), or -1 with err. */
int osbq_store_recover(struct osbq_store *store, unsigned limit, unsigned max_attempts,
                       int64_t claim_timeout_ms, bool can_resend, struct osbq_recovery_item **items,
                       size_t *count, struct osbq_error *err);
void osbq_recovery_free(struct osbq_recovery_item *items, size_t count);

/* Fails an operation whose attempts are used up, as osbq_store_finish would, whoever held it.
 * Returns 1, 0 when it ended or was claimed again meanwhile, -1 with err. */
int osbq_store_abandon(struct osbq_store *store, const char *operation_id, const char *description,
                       struct osbq_error *err);

/* ---- Process status: what osbq-ctl shows of live gateways and workers ---- */

/* Publishes status (a JSON object's text: load, version, start time...) of process id in role
 * ("gateway" or "worker") until now + ttl_ms. Call again before it expires. */
int osbq_store_status_publish(struct osbq_store *store, const char *role, const char *id,
                              const char *status_json, int64_t ttl_ms, struct osbq_error *err);

/* Removes the status of process id in role (clean shutdown). */
int osbq_store_status_remove(struct osbq_store *store, const char *role, const char *id,
                             struct osbq_error *err);

/* Lists the status texts of live processes of role, the least recently renewed first (the
 * order of their expiry); expired ones are pruned.
 * *out is a NULL-terminated array freed with osbq_store_strings_free, *count its length. */
int osbq_store_status_list(struct osbq_store *store, const char *role, char ***out, size_t *count,
                           struct osbq_error *err);

/* ---- Administration (osbq-ctl) ---- */

/* A record's fields as name/value pairs, as read for an operator. Owned (osbq_fields_clear). */
struct osbq_fields {
    size_t count;  /* pairs */
    char **names;  /* field names */
    char **values; /* their values */
};

/* The value of field name, or NULL when the record has none. */
const char *osbq_fields_get(const struct osbq_fields *fields, const char *name);
void osbq_fields_clear(struct osbq_fields *fields);
void osbq_fields_array_free(struct osbq_fields *records, size_t count);

/* What osbq_store_scan_records walks. */
enum osbq_record_kind {
    OSBQ_RECORD_INSTANCE, /* ns:instance:* (fields as in docs/architecture.md) */
    OSBQ_RECORD_BINDING,  /* ns:binding:* */
};

/* One step of a walk over every record of kind: SCAN from *cursor (0 to start) asking for
 * about count keys, then each record found read in the same pipeline. Sets *cursor to where
 * the next step starts (0: the walk is over). A record may be seen twice in one walk (SCAN's
 * guarantee); a binding's result (its credentials) and an instance's digest are never
 * returned. On success *records (free with osbq_fields_array_free; NULL when the step found no
 * key) holds *n records. */
int osbq_store_scan_records(struct osbq_store *store, enum osbq_record_kind kind, uint64_t *cursor,
                            unsigned count, struct osbq_fields **records, size_t *n,
                            struct osbq_error *err);

/* Reads an operation (every field but its encoded job and its digest) and its history: what
 * happened to it, oldest first, one JSON object text per event ({"ms", "event", and
 * "worker", "attempt", "description" where they apply}; events: claimed, released,
 * lease_expired, resent, succeeded, failed, abandoned, failed_by_operator,
 * resent_by_operator). Returns 1 with *op and *history (NULL-terminated, free with
 * osbq_store_strings_free; *history_count its length), 0 when there is no such operation,
 * -1 with err. */
int osbq_store_operation_get(struct osbq_store *store, const char *operation_id,
                             struct osbq_fields *op, char ***history, size_t *history_count,
                             struct osbq_error *err);

/* Operator: fails an unfinished operation whoever holds it, exactly as a worker's failed
 * outcome would (lock freed, waiters woken, instance usable), with description. A worker still
 * running it finds it no longer its own. Returns 1, 0 when it is finished or unknown, -1. */
int osbq_store_operator_fail(struct osbq_store *store, const char *operation_id,
                             const char *description, struct osbq_error *err);

/* Operator: sends an unfinished operation again: a queued one, or a running one whose worker's
 * lease ran out (that worker's late outcome will be refused), gets its claims count restarted
 * at 0 and is due at once, so the next recovery pass of any gateway sends its job to a worker.
 * Returns 1, 0 when it is finished or unknown, 2 when it runs under a live lease (its worker is
 * alive: resending would run it twice at once; it is left alone), -1. */
int osbq_store_operator_resend(struct osbq_store *store, const char *operation_id,
                               struct osbq_error *err);

/* Figures of the operation queue and of Redis itself, for osbq-ctl stats. */
struct osbq_store_stats {
    int64_t unfinished;     /* operations queued or running (ns:queue) */
    int64_t overdue;        /* of those, whose claim or lease has run out (recovery's) */
    int64_t used_memory;    /* Redis INFO memory used_memory, bytes; -1 unknown */
    char redis_version[32]; /* Redis INFO server redis_version, or empty */
};
int osbq_store_stats_get(struct osbq_store *store, struct osbq_store_stats *out,
                         struct osbq_error *err);

/* ---- Binding results at rest (osbq-ctl reencrypt, docs/decisions/0007) ---- */

/* One binding's stored result as read. Owned (osbq_stored_results_free). */
struct osbq_stored_result {
    char *key;         /* the record's key, opaque: give it back to osbq_store_result_replace */
    char *instance_id; /* its instance */
    char *binding_id;  /* the binding */
    char *result;      /* the stored result (sealed, or plaintext from before the keys) */
};

/* One step of a walk over every binding that has a result (and its ids): SCAN from *cursor (0 to
 * start) asking for about count keys, their ids and results read in the same pipeline. Sets *cursor
 * to where the next step starts (0: the walk is over). *results (free with
 * osbq_stored_results_free; NULL when the step found no key) holds *n entries. */
int osbq_store_scan_results(struct osbq_store *store, uint64_t *cursor, unsigned count,
                            struct osbq_stored_result **results, size_t *n, struct osbq_error *err);
void osbq_stored_results_free(struct osbq_stored_result *results, size_t n);

/* Replaces the result of the binding at key (as osbq_store_scan_results gave it) with
 * replacement, only while it still is expected (common/lua/reseal.lua). Returns 1 replaced,
 * 0 changed meanwhile (left alone), -1 with err. */
int osbq_store_result_replace(struct osbq_store *store, const char *key, const char *expected,
                              const char *replacement, struct osbq_error *err);

/* How many Redis calls failed (I/O errors, timeouts, error replies) since the store was made:
 * for osbq_redis_errors_total. */
uint64_t osbq_store_error_count(const struct osbq_store *store);

#endif
