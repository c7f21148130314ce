/* The gateway's entry in the Redis registry of live gateways, renewed by a small thread, so
 * workers find and connect to it (the pinned bus topology). */
#ifndef OSBQ_GATEWAY_REGISTRY_H
#define OSBQ_GATEWAY_REGISTRY_H

#include "error.h"
#include "store.h"

struct registry;

/* Publishes endpoint now (a failure is logged, not fatal: Redis may come later) and keeps it
 * fresh every OSBQ_BUS_REGISTRY_RENEW_MS. store is borrowed. NULL with err on failure. */
struct registry *registry_start(struct osbq_store *store, const char *endpoint,
                                struct osbq_error *err);

/* Stops renewing and removes the entry, so workers drop this gateway at once; frees. */
void registry_stop(struct registry **rp);

#endif
