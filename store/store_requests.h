/* The store as the gateway's requests use it: start an operation on an instance or a binding,
 * and hear of finished operations a request waits for (store_requests.c); read records and the
 * last operation (store_reads.c). */
#ifndef OSBQ_STORE_REQUESTS_H
#define OSBQ_STORE_REQUESTS_H

#include <hiredis/hiredis.h>

#include "policy.h"
#include "store.h"

/* The binding part of a begin request: a bind's or an unbind's; all NULL for an operation on the
 * instance itself. Borrowed. */
struct osbq_begin_binding {
    const char *binding_id;    /* from the path, decoded; NULL: an instance operation */
    const char *bind_resource; /* bind: JSON object text, or NULL */
    const char
        *predecessor_binding_id; /* bind, rotation: a live binding of the instance, or NULL */
};

/* Whether an instance may be deleted (OSBQ_POLICY's deletion guard, docs/policies.md): what a
 * provision or an update says of the parameters and context in force after it. */
enum osbq_deletion_protection {
    OSBQ_DELETION_PROTECTION_UNSAID, /* not said (a delete; an update keeps what the instance has)
                                      */
    OSBQ_DELETION_PROTECTION_OFF,    /* deletes are allowed */
    OSBQ_DELETION_PROTECTION_ON,     /* "osbq_deletion_protection": true: deletes are refused */
};

/* What the gateway asks for when it accepts a provision, update, deprovision, bind or unbind.
 * Borrowed. The members an operation does not have are NULL. */
struct osbq_begin_request {
    const char *kind;            /* "provision", "update", "deprovision", "bind" or "unbind" */
    const char *operation_id;    /* the new operation's id (the gateway makes it) */
    const char *instance_id;     /* from the path, decoded */
    const char *digest;          /* idempotency digest of the request ("" for deletes) */
    const char *waiting_gateway; /* this gateway's id when the request waits (sync), or NULL */
    const char *service_id;      /* service id (bind, unbind: must be the instance's, binding's) */
    const char *plan_id;         /* target plan (update: NULL keeps the current plan; bind,
                                  * unbind: must be the instance's, binding's) */
    const char *parameters;      /* JSON object text, or NULL when absent */
    const char *context;         /* JSON object text, or NULL */
    const void *job;             /* the encoded job, kept so the operation can be resent */
    size_t job_len;              /* bytes in job */
    unsigned api_version;        /* the request's API version */
    int64_t claim_timeout_ms;    /* how long the job may wait for a worker's claim */
    const char *platform; /* the platform asking (records it; another's instance or binding is
                           * not found); NULL: "default" */
    const char *tenant;   /* whose work it is, or NULL: "": recorded on a new instance; an
                           * operation of an instance with a tenant recorded is its tenant's */
    const int64_t *in_progress_cap; /* the most operations its tenant (the instance's) may have
                                     * in progress (OSBQ_POLICY in_progress_per_tenant), or NULL:
                                     * no cap, nothing counted */
    const char *handed_worker;      /* the worker id the operation is handed to (claimed for it at
                                     * begin), or NULL: queued for any worker's claim */
    int64_t handed_until;           /* with handed_worker: the hand-over's lease end, epoch ms */
    bool halt; /* deprovision, unbind: halt a provision (bind) that holds the record instead of
                * refusing (the plan's halt_on_delete); the new operation then waits for it */
    int64_t delete_cap; /* deprovision, unbind: the most deletes of usable records its tenant may
                         * make a minute (OSBQ_POLICY deletes_per_minute_per_tenant), or 0: none */
    const char *user;   /* who asked, for the audit trail: the decoded
                         * X-Broker-API-Originating-Identity, or NULL */
    const char *request_id; /* X-Broker-API-Request-Identity, or NULL */
    /* Instance operations only. */
    const char *maintenance_version; /* maintenance_info.version, or NULL */
    const char *dashboard_url;       /* provision: decided at accept time, or NULL */
    const char *expected_plan_id;    /* update: the plan the gateway validated against, or NULL */
    const char *quotas; /* from osbq_store_quota_spec: counters the instance must hold; NULL:
                         * none; OSBQ_STORE_QUOTAS_UNCHANGED: an update keeping its plan */
    enum osbq_deletion_protection deletion_protection; /* provision, update */
    struct osbq_begin_binding binding;                 /* bind, unbind: the binding */
};

/* begin_request.quotas of an update that keeps the instance's plan (and so its counters). */
#define OSBQ_STORE_QUOTAS_UNCHANGED "-"

/* The quota counters (common/policy.h) a request counts against, as begin_instance.lua reads
 * them: "<limit> <key>" lines, keys "<ns>:quota:<name>[:<value, encoded>]". Returns a new
 * string (free), or NULL when out of memory or a key would be too long. */
char *osbq_store_quota_spec(const struct osbq_store *store, const struct osbq_policy_use *uses,
                            size_t count);

/* What a begin call found (osbq_store_begin_result). */
enum osbq_begin_answer {
    OSBQ_BEGIN_ACCEPTED,        /* recorded: send the job */
    OSBQ_BEGIN_HALTING,         /* a delete recorded after halting the creation that held the
                                 * record (req.halt): its job is sent once that operation stopped
                                 * (by the recovery loop); halted_worker names the worker that runs
                                 * its step, if any */
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
    OSBQ_BEGIN_CAPPED,          /* the tenant has in_progress_cap operations in progress, or more:
                                 * tenant says whose, in_progress how many */
    OSBQ_BEGIN_PROTECTED,       /* deprovision: the instance's parameters or context protect it */
    OSBQ_BEGIN_DELETE_CAPPED,   /* deprovision, unbind: the tenant deleted delete_cap usable
                                 * records this minute: tenant says whose, in_progress how many */
};

struct osbq_begin_reply {
    enum osbq_begin_answer answer; /* what happened */
    char *operation_id;            /* accepted or running operation, or NULL; owned */
    char *dashboard_url;           /* the instance's dashboard URL, or NULL; owned */
    char *metadata;                /* the instance's metadata JSON, or NULL; owned */
    char *binding_result;          /* bind DONE: the binding's JSON (credentials...); owned */
    char *tenant;                  /* ACCEPTED, HALTING, CAPPED, DELETE_CAPPED: the operation's
                                    * tenant (its instance's), or NULL */
    char *halted_operation;        /* HALTING: the creation it halted; owned */
    char *halted_worker;           /* HALTING: the worker running its step, or NULL; owned */
    size_t quota_index;            /* QUOTA: the full quota's place in the request's list */
    int64_t quota_used;            /* QUOTA: instances it counted */
    int64_t in_progress;           /* CAPPED: the tenant's operations in progress; DELETE_CAPPED:
                                    * its deletes this minute */
};

/* Records the operation in one round trip, holding what it works on: an instance operation
 * takes the instance's lock (store/lua/begin_instance.lua); a binding's holds the instance
 * shared and the binding exclusively (store/lua/begin_binding.lua). With req->handed_worker, an
 * accepted operation is recorded as claimed for that worker until req->handed_until (a
 * hand-over, docs/decisions/0042); any other answer ignores them. The call (NULL with err),
 * for a pipeline or osbq_store_call_run. osbq_store_begin_result reads what it found: 0 with
 * *out filled (free with osbq_begin_reply_clear), or -1 with err (OSBQ_ERR_UNAVAILABLE when
 * Redis failed); the call's reply is consumed. */
struct osbq_store_call *osbq_store_begin_call(struct osbq_store *store,
                                              const struct osbq_begin_request *req,
                                              struct osbq_error *err);
int osbq_store_begin_result(struct osbq_store_call *call, struct osbq_begin_reply *out,
                            struct osbq_error *err);
void osbq_begin_reply_clear(struct osbq_begin_reply *reply);

/* A binding record. Strings owned (osbq_binding_clear); absent ones are NULL. */
struct osbq_binding {
    char *state;         /* binding, bound, failed, gone */
    char *service_id;    /* service id */
    char *plan_id;       /* plan id */
    char *parameters;    /* JSON text of the bind parameters */
    char *result;        /* JSON text: credentials, endpoints, syslog_drain_url, ... */
    char *lock_holder;   /* operation running on it, or NULL */
    char *platform;      /* the platform that made it; NULL: recorded before platforms, "default" */
    char *context;       /* JSON text of the bind's context, or NULL */
    char *bind_resource; /* JSON text of the bind's bind_resource, or NULL */
};

/* Reads a binding in two halves, for a pipeline: the call (NULL with err), then 1 with *out,
 * 0 when there is no record, -1 with err. */
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
    char *instance_state;    /* provisioning, provisioned, failed, gone */
    char *kind;              /* provision, update, deprovision */
    char *state;             /* queued, running, succeeded, failed */
    char *description;       /* latest progress or outcome text, or NULL */
    int instance_usable;     /* failed update/deprovision: 1 or 0; -1 when not recorded */
    int update_repeatable;   /* failed update: 1 or 0; -1 when not recorded */
    int64_t created_ms;      /* when the operation was accepted */
    int64_t average_ms;      /* the plan's average duration for this kind; -1 unknown */
    char *average_plan;      /* the plan whose average that is (an update's previous plan) */
    char *last_operation_id; /* when the named operation is not the record's: the record's last
                              * operation, or NULL */
};

/* Reads the last operation of an instance (binding_id NULL) or of one of its bindings, or the
 * named one (operation_id not NULL), as platform sees it (NULL: any platform), in one round
 * trip. In two halves, for a pipeline: the call (NULL with err), then what it found: 1 with
 * *out, 0 when the instance (binding) is unknown or another platform's, 2 when the named
 * operation is not one of its operations (with only out->last_operation_id set), -1 with err
 * (the call's reply is consumed). */
struct osbq_store_call *
osbq_store_last_operation_call(struct osbq_store *store, const char *instance_id,
                               const char *binding_id, const char *operation_id,
                               const char *platform, struct osbq_error *err);
int osbq_store_last_operation_result(struct osbq_store_call *call, struct osbq_last_op *out,
                                     struct osbq_error *err);

/* A synchronous request's time ran out while its operation was unfinished: the gateway fails
 * it, as an operator's osbq-ctl fail does (lock freed, waiters woken, nothing applied, the
 * instance usable; a worker still running it finds it no longer its own), with description.
 * docs/decisions/0048-sync-limit-halts-the-operation.md. In two halves, for the gateway's
 * pipeline (the call is finish.lua's, built in store_operations.c): the call (NULL with err), then
 * 1 when it failed the operation, 0 when the operation had ended (its outcome stands), -1 with err.
 */
struct osbq_store_call *osbq_store_sync_limit_call(struct osbq_store *store,
                                                   const char *operation_id,
                                                   const char *description, struct osbq_error *err);
int osbq_store_sync_limit_result(struct osbq_store_call *call, struct osbq_error *err);

/* A poll that names its operation, answered from the operation alone: one HMGET, no script
 * (docs/decisions/0043). In two halves, for a pipeline: the call (NULL with err), then 1 with
 * *out (average_ms -1: the caller knows the average, or asks last_operation.lua) when the
 * operation is there, is instance_id's (binding_id's; NULL: the instance's own) and platform's
 * (NULL or "": any; an operation names its platform unless it is "default"); 0 when the
 * operation alone cannot answer (not there, another record's or platform's, begun by the
 * previous release, whose operations name no platform but a service_id, or a binding's whose
 * record went with its instance, record_gone): ask
 * last_operation.lua, which tells those apart; -1 with err (the call's reply is consumed). */
struct osbq_store_call *osbq_store_poll_call(struct osbq_store *store, const char *operation_id,
                                             struct osbq_error *err);
int osbq_store_poll_result(struct osbq_store_call *call, const char *instance_id,
                           const char *binding_id, const char *platform, struct osbq_last_op *out,
                           struct osbq_error *err);
void osbq_last_op_clear(struct osbq_last_op *op);

/* Opens a new connection (not from the pool) subscribed to "<ns>:events:<gateway_id>", where
 * finished operations that this gateway waits for are announced. Caller owns it (redisFree)
 * and reads messages from it. NULL with err. */
redisContext *osbq_store_subscribe_events(struct osbq_store *store, const char *gateway_id,
                                          struct osbq_error *err);

#endif
