/* The store as osbq-ctl uses it: walks over records, an operation and its history, the
 * operator's repairs, figures of the queue, binding results at rest, quota counters, an
 * instance exported and imported. */
#ifndef OSBQ_STORE_ADMIN_H
#define OSBQ_STORE_ADMIN_H

#include <stdbool.h>

#include "store.h"
#include "store_fields.h"

/* What osbq_store_scan_records walks. */
enum osbq_record_kind {
    OSBQ_RECORD_INSTANCE,  /* ns:instance:* (fields as in docs/architecture.md) */
    OSBQ_RECORD_BINDING,   /* ns:binding:* */
    OSBQ_RECORD_OPERATION, /* ns:op:*, each with its id as the field "operation_id" (the key
                            * holds it) and without its history */
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

/* A filter a walk applies in Redis's replies before reading whole records: fields (count of
 * them, at most OSBQ_SCAN_FILTER_FIELDS) are read of each key a step finds, and only the
 * records whose few fields keep accepts (given as an osbq_fields of those present) are read
 * whole. A listing that keeps one record in a hundred reads a tenth of the bytes. */
#define OSBQ_SCAN_FILTER_FIELDS 8
struct osbq_scan_filter {
    const char *const *fields;
    size_t count;
    bool (*keep)(const struct osbq_fields *few, void *ctx);
    void *ctx;
};

/* osbq_store_scan_records of instances or bindings through filter (NULL: every record). */
int osbq_store_scan_records_where(struct osbq_store *store, enum osbq_record_kind kind,
                                  uint64_t *cursor, unsigned count,
                                  const struct osbq_scan_filter *filter,
                                  struct osbq_fields **records, size_t *n, struct osbq_error *err);

/* Reads the record of instance_id (fields as osbq_store_scan_records gives them). Returns 1
 * with *record (free with osbq_fields_clear), 0 when there is none, -1 with err. */
int osbq_store_instance_record(struct osbq_store *store, const char *instance_id,
                               struct osbq_fields *record, struct osbq_error *err);

/* The most operations osbq_store_instance_related reads. */
#define OSBQ_STORE_RELATED_OPS_MAX 1000

/* Reads what belongs to the instance instance_id, by id, whatever the number of records: its
 * live bindings (its bindings set) and the operations of it and of them still kept, from
 * last_op (the instance's, or NULL) and each binding's last one back along their prev_op links
 * (operations begun by an earlier release have none: the chain stops there), at most
 * OSBQ_STORE_RELATED_OPS_MAX. Fields as osbq_store_scan_records gives them. Returns 0 with
 * *bindings and *ops (free with osbq_fields_array_free; NULL when none), or -1 with err. */
int osbq_store_instance_related(struct osbq_store *store, const char *instance_id,
                                const char *last_op, struct osbq_fields **bindings,
                                size_t *binding_count, struct osbq_fields **ops, size_t *op_count,
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
 * outcome would (lock freed, waiters woken, instance usable), with description; its end in the
 * audit trail names by (the OS user). A worker still running it finds it no longer its own.
 * Returns 1, 0 when it is finished or unknown, -1. */
int osbq_store_operator_fail(struct osbq_store *store, const char *operation_id,
                             const char *description, const char *by, struct osbq_error *err);

/* Operator: sends an unfinished operation again: a queued one, or a running one whose worker's
 * lease ran out (that worker's late outcome will be refused), gets its claims count restarted
 * at 0 and is due at once, so the next recovery pass of any gateway sends its job to a worker.
 * Returns 1, 0 when it is finished or unknown, 2 when it runs under a live lease (its worker is
 * alive: resending would run it twice at once; it is left alone), -1. */
int osbq_store_operator_resend(struct osbq_store *store, const char *operation_id, const char *by,
                               struct osbq_error *err);

/* What osbq_store_purge found. */
struct osbq_purge {
    size_t bindings;         /* 1: the bindings purged with the instance */
    char *running_operation; /* 2: the operation that runs (free it) */
};

/* Operator: forgets the instance instance_id with its bindings (binding_id NULL), or its
 * binding binding_id, without calling any backend (store/lua/purge.lua): quotas given back, each
 * record left gone (purged_ms, purged_by = by) until OSBQ_RETENTION_S, so a platform's DELETE
 * gets 410 and its GET 404. Returns 1 (*out's bindings), 0 when there is no such record or it is
 * gone already, 2 when an operation of it runs (*out's running_operation: fail it first, or
 * wait), -1 with err. */
int osbq_store_purge(struct osbq_store *store, const char *instance_id, const char *binding_id,
                     const char *by, struct osbq_purge *out, struct osbq_error *err);

/* Figures of the operation queue and of Redis itself, for osbq-ctl stats. */
struct osbq_store_stats {
    int64_t unfinished;              /* operations queued or running (ns:queue) */
    int64_t overdue;                 /* of those, whose claim or lease has run out (recovery's) */
    int64_t used_memory;             /* Redis INFO memory used_memory, bytes; -1 unknown */
    struct osbq_store_server server; /* which server and its version (INFO server) */
};
int osbq_store_stats_get(struct osbq_store *store, struct osbq_store_stats *out,
                         struct osbq_error *err);

/* ---- Work in progress by tenant (osbq-ctl stats; store_work.c) ---- */

/* Where an operation in progress is. */
enum osbq_work_state {
    OSBQ_WORK_QUEUED,  /* waits for a worker to claim it (first step, or resent) */
    OSBQ_WORK_RUNNING, /* a worker runs a step of it */
    OSBQ_WORK_WAITING, /* waits for its next step's due time (a poll) */
    OSBQ_WORK_OTHER,   /* its record is gone or ended meanwhile: in progress no longer */
};

/* One member of the operation queue ("<ns>:queue") and its operation. */
struct osbq_queue_entry {
    char *operation_id;         /* the member */
    char *tenant;               /* its operation's tenant; NULL when it recorded none */
    enum osbq_work_state state; /* its operation's state */
    bool in_polls;              /* waiting, and in its tenant's polls too ("<ns>:polls:<tenant>"),
                                 * where osbq_store_polls_scan counts it */
};

/* One step of a walk over the operation queue: ZSCAN from *cursor (0 to start) asking for about
 * count members, then every member's operation (state, tenant) read in one pipeline, and, for
 * those waiting with a tenant, whether their tenant's polls hold them in another. Sets *cursor
 * to where the next step starts (0: the walk is over). A member may be seen twice in one walk
 * (ZSCAN's guarantee); the steps are not one instant, so an operation that moves meanwhile may
 * be seen in two places or none. On success *entries (free with osbq_queue_entries_free; NULL
 * when the step found none) holds *n entries. */
int osbq_store_queue_scan(struct osbq_store *store, uint64_t *cursor, unsigned count,
                          struct osbq_queue_entry **entries, size_t *n, struct osbq_error *err);
void osbq_queue_entries_free(struct osbq_queue_entry *entries, size_t n);

/* One tenant with operations waiting in its polls, and how many (ZCARD). */
struct osbq_tenant_polls {
    char *tenant;    /* as "<ns>:poll_tenants" lists it */
    int64_t waiting; /* members of "<ns>:polls:<tenant>" */
};

/* One step of a walk over the tenants whose waiting operations wait in polls of their own
 * ("<ns>:poll_tenants"; a store that has none is walked at once): ZSCAN from *cursor (0 to
 * start), about count tenants, each one's polls counted in one pipeline. Sets *cursor as above.
 * On success *polls (free with osbq_tenant_polls_free; NULL when none) holds *n entries. */
int osbq_store_polls_scan(struct osbq_store *store, uint64_t *cursor, unsigned count,
                          struct osbq_tenant_polls **polls, size_t *n, struct osbq_error *err);
void osbq_tenant_polls_free(struct osbq_tenant_polls *polls, size_t n);

/* ---- Values sealed at rest (osbq-ctl reencrypt, docs/decisions/0007, 0058) ---- */

/* The fields a record may hold sealed. */
enum osbq_sealed_field {
    OSBQ_SEALED_RESULT,        /* a binding's result */
    OSBQ_SEALED_PARAMETERS,    /* an instance's or a binding's, or an update's operation's */
    OSBQ_SEALED_CONTEXT,       /* the same */
    OSBQ_SEALED_BIND_RESOURCE, /* a binding's */
    OSBQ_SEALED_RESUME,        /* an operation's: the state its next step resumes from */
    OSBQ_SEALED_COUNT
};

/* The Redis field name of each. */
extern const char *const osbq_sealed_field_names[OSBQ_SEALED_COUNT];

/* The name a field's seal is bound to (struct osbq_secret_place.field): NULL for a binding's
 * result (sealed before the others were), else its Redis name. */
const char *osbq_sealed_field_place(enum osbq_sealed_field field);

/* The records a walk reads. */
enum osbq_sealed_records { OSBQ_SEALED_INSTANCES, OSBQ_SEALED_BINDINGS, OSBQ_SEALED_OPERATIONS };

/* One record's values that may be sealed, as read. Owned (osbq_sealed_values_free). */
struct osbq_sealed_values {
    char *key;         /* the record's key, opaque: give it back to osbq_store_sealed_replace */
    char *instance_id; /* its instance */
    char *binding_id;  /* its binding, "" for an instance or an instance's operation */
    bool in_flight;    /* an operation not ended yet: its job keeps the key it was sealed with */
    char *values[OSBQ_SEALED_COUNT]; /* each stored value (sealed, or plaintext from before the
                                      * keys), NULL where the record has none */
};

/* One step of a walk over every record of which (with the ids its values are bound to): SCAN
 * from *cursor (0 to start) asking for about count keys, their ids and values read in the same
 * pipeline. Sets *cursor to where the next step starts (0: the walk is over). *records (free
 * with osbq_sealed_values_free; NULL when the step found none) holds *n entries. */
int osbq_store_scan_sealed(struct osbq_store *store, enum osbq_sealed_records which,
                           uint64_t *cursor, unsigned count, struct osbq_sealed_values **records,
                           size_t *n, struct osbq_error *err);
void osbq_sealed_values_free(struct osbq_sealed_values *records, size_t n);

/* Replaces field of the record at key (as osbq_store_scan_sealed gave it) with replacement,
 * only while it still is expected (store/lua/reseal.lua). Returns 1 replaced, 0 changed
 * meanwhile (left alone), -1 with err. */
int osbq_store_sealed_replace(struct osbq_store *store, const char *key,
                              enum osbq_sealed_field field, const char *expected,
                              const char *replacement, struct osbq_error *err);

/* ---- Quota counters ---- */

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

/* ---- Export and import (osbq-ctl export, import; store_export.c, docs/decisions/0055) ---- */

/* One binding or operation of an exported instance. Owned (osbq_export_instance_clear). */
struct osbq_export_record {
    char *id;                  /* the binding's id, or the operation's */
    struct osbq_fields fields; /* every field as stored (a binding's result as stored: sealed,
                                * or plaintext from before the keys) */
};

/* One instance as export reads it and import writes it: every field of its records as stored
 * but the instance's locks (lock_x, lock_s); the fields that name Redis keys (the instance's
 * quota_keys; an operation's instance_key, binding_key, bindings_key, quota_keys, quota_taken,
 * quotas_held, in_progress_key) hold them without the "<ns>:" prefix, so the records fit any
 * namespace. Owned (osbq_export_instance_clear). */
struct osbq_export_instance {
    struct osbq_fields record;             /* the instance hash */
    struct osbq_export_record *bindings;   /* its live bindings (its bindings set) */
    size_t binding_count;                  /* entries in bindings */
    struct osbq_export_record *operations; /* its and its bindings' finished operations still
                                            * kept, newest first along each record's chain */
    size_t operation_count;                /* entries in operations */
};

/* Frees what *instance holds (a binding's result zeroed first) and zeroes it; accepts an empty
 * one. */
void osbq_export_instance_clear(struct osbq_export_instance *instance);

/* Reads the instance instance_id with its live bindings and its finished operations (from its
 * and each binding's last_op back along prev_op, at most OSBQ_STORE_RELATED_OPS_MAX) in one
 * step (store/lua/export.lua), so the records are one instant of it. Returns 1 with *out, 0 when
 * there is no such instance or it is gone, 2 when an operation of it or of a binding runs (its
 * lock is held: *running_operation names it, "" when no record does; free it), -1 with err
 * (OSBQ_ERR_INVALID: a binding record without its binding_id). */
int osbq_store_export_instance(struct osbq_store *store, const char *instance_id,
                               struct osbq_export_instance *out, char **running_operation,
                               struct osbq_error *err);

/* Writes the instance instance_id as in describes it (bindings and operations by their ids, the
 * keys of the fields that name keys put in this store's namespace) in one step
 * (store/lua/import.lua): its hash, its bindings and their set, its operations (expiring after
 * OSBQ_RETENTION_S, as finished ones do), one more instance on each of its quota counters.
 * Returns 1 written; 2 the same instance record is there already (nothing written); 0 the id is
 * taken (nothing written; *existing_state says the state of the record there, free it); -1 with
 * err (OSBQ_ERR_INVALID: an id too long or a value that is not UTF-8). The audit trail names
 * by (the OS user). */
int osbq_store_import_instance(struct osbq_store *store, const char *instance_id,
                               const struct osbq_export_instance *in, const char *by,
                               char **existing_state, struct osbq_error *err);

#endif
