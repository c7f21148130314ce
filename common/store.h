/* The store: osbq's only door to Redis. It owns the connections and, as the job flow grows,
 * every key (docs/architecture.md lists them); no other file builds a key. */
#ifndef OSBQ_STORE_H
#define OSBQ_STORE_H

#include <hiredis/hiredis.h>

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

#endif
