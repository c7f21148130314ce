/* The store: osbq's only door to Redis. It owns the connections and, as the job flow grows,
 * every key (docs/architecture.md lists them); no other file builds a key. */
#ifndef OSBQ_STORE_H
#define OSBQ_STORE_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

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

/* Writes "<namespace>:<suffix>" into buf; returns its length, or -1 when it does not fit. */
int osbq_store_key(const struct osbq_store *store, char *buf, size_t size, const char *suffix);

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
int osbq_store_progress(struct osbq_store *store, const char *operation_id,
                        const char *worker_id, const char *description, int64_t lease_ms,
                        struct osbq_error *err);

/* The outcome of an operation, as a backend reports it. Strings are borrowed. */
struct osbq_op_result {
    bool succeeded;             /* true: succeeded; false: failed */
    const char *description;    /* user-facing text for last_operation; NULL for a default */
    const char *dashboard_url;  /* provision/update: the instance's dashboard, or NULL */
    const char *metadata;       /* provision/update: JSON object {labels, attributes}, or NULL */
    bool instance_usable;       /* failed update or deprovision: is the instance still usable */
    bool update_repeatable;     /* failed update: may the same update succeed later */
};

/* Records the outcome atomically: the operation's state and description, the instance's new
 * state and attributes (applied on success), the lock freed, synchronous waiters woken, the
 * operation kept for OSBQ_RETENTION_S. Returns 1, 0 when the operation is no longer this
 * worker's (the result is dropped: another attempt owns it), -1 with err. */
int osbq_store_finish(struct osbq_store *store, const char *operation_id, const char *worker_id,
                      const struct osbq_op_result *result, struct osbq_error *err);

#endif
