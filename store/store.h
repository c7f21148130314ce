/* The store: osbq's only door to Redis. It owns the connections and every key
 * (docs/architecture.md lists them); no other file builds a key. This header is what every
 * process shares; each audience includes its own part as well: store_requests.h (the gateway's
 * requests), store_recovery.h (the gateway's recovery loop), store_operations.h (the worker),
 * store_registry.h (live processes), store_admin.h (osbq-ctl), store_pipeline.h (the
 * gateway's calls that do not block). */
#ifndef OSBQ_STORE_H
#define OSBQ_STORE_H

#include <stdbool.h>
#include <stddef.h>
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

/* PING in two halves, for a pipeline: the call (NULL with err), then 0 or -1 with err. */
struct osbq_store_call *osbq_store_ping_call(struct osbq_error *err);
int osbq_store_ping_result(struct osbq_store_call *call, struct osbq_error *err);

/* ---- Calls that do not block the caller (store_pipeline.h sends them) ---- */

/* One call of a store script: made by an osbq_store_*_call function, sent through a pipeline
 * (or run at once by osbq_store_call_run), read by the matching osbq_store_*_result function.
 * Owned by whoever made it (osbq_store_call_free), except while a pipeline holds it. */
struct osbq_store_call;

/* Called once for each call a pipeline took, from the pipeline's thread, when the call holds
 * its reply or the reason it has none. */
typedef void (*osbq_store_call_done_fn)(void *ctx);

/* Frees a call (and a reply it still holds); sets *cp to NULL; accepts NULL. */
void osbq_store_call_free(struct osbq_store_call **cp);

/* Runs call, blocking until its reply or a failure is in it: through the pipeline the store
 * uses (osbq_store_use_pipeline), else on one of the store's pooled connections. */
void osbq_store_call_run(struct osbq_store *store, struct osbq_store_call *call);

struct osbq_store_pipeline;

/* Makes every call the store runs for a blocking caller (osbq_store_call_run, and so every
 * osbq_store_* function made of one script call) go through pipeline, so the calls of many
 * threads share one connection's writes and reads instead of a round trip each; a caller still
 * waits for its own reply. NULL goes back to pooled connections. pipeline is borrowed: set
 * NULL before freeing it, once no thread can be inside a call (a call made while the pipeline
 * is draining runs on a pooled connection). */
void osbq_store_use_pipeline(struct osbq_store *store, struct osbq_store_pipeline *pipeline);

/* Frees a NULL-terminated array of strings the store returned; accepts NULL. */
void osbq_store_strings_free(char **strings);

/* Milliseconds since the epoch (Redis records use them). */
int64_t osbq_store_now_ms(void);

/* How many Redis calls failed (I/O errors, timeouts, error replies) since the store was made:
 * for osbq_redis_errors_total. */
uint64_t osbq_store_error_count(const struct osbq_store *store);

#endif
