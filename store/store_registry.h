/* Live processes: the gateways workers connect to (the pinned bus topology), and the status
 * every gateway and worker publishes for osbq-ctl. */
#ifndef OSBQ_STORE_REGISTRY_H
#define OSBQ_STORE_REGISTRY_H

#include "store.h"

/* ---- Gateway registry ---- */

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

#endif
