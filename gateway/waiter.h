/* Waiters: synchronous requests suspended until their operation ends. A thread subscribed to
 * this gateway's Redis event channel wakes them; a deadline wakes them otherwise. */
#ifndef OSBQ_GATEWAY_WAITER_H
#define OSBQ_GATEWAY_WAITER_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "store_requests.h"

struct waiter_table;

/* How a wait ended. */
enum waiter_outcome {
    WAITER_FINISHED, /* the operation ended: see the result fields */
    WAITER_TIMEOUT,  /* the deadline passed first */
    WAITER_SHUTDOWN, /* the gateway is stopping */
};

/* What a woken waiter learns; owned by the request that waited (waiter_result_clear). */
struct waiter_result {
    enum waiter_outcome outcome; /* how the wait ended */
    bool succeeded;              /* WAITER_FINISHED: the operation succeeded */
    char *description;           /* the operation's description, or NULL */
    char *dashboard_url;         /* the instance's dashboard URL, or NULL */
    char *metadata;              /* JSON text of the instance's metadata, or NULL */
    bool instance_usable;        /* failed update/deprovision */
    bool update_repeatable;      /* failed update */
};

/* Called with the table locked: suspend the request (it cannot be woken before this returns).
 * Then called later, from the event thread, to resume it once *result is filled. */
typedef void (*waiter_fn)(void *request);

/* Starts the table and its event thread, subscribed to "<ns>:events:<gateway_id>" through
 * store (which reconnects it while Redis is away). store and cfg are borrowed. NULL with err on
 * failure. */
struct waiter_table *waiter_table_start(struct osbq_store *store, const struct osbq_config *cfg,
                                        const char *gateway_id, struct osbq_error *err);

/* Wakes every waiter with WAITER_SHUTDOWN and refuses new ones; the table stays valid, so the
 * HTTP server can answer the woken requests before it stops. */
void waiter_table_drain(struct waiter_table *table);

/* Drains, stops the thread, frees; sets *tp to NULL. */
void waiter_table_stop(struct waiter_table **tp);

/* Registers request as waiting for operation_id until deadline_ms (CLOCK_MONOTONIC ms):
 * calls suspend(request) under the table lock, and later fills *result and calls
 * resume(request) exactly once. Returns 0, or -1 when the table is full (OSBQ_MAX_WAITERS) or
 * stopping (nothing was called). */
int waiter_add(struct waiter_table *table, const char *operation_id, int64_t deadline_ms,
               void *request, struct waiter_result *result, waiter_fn suspend, waiter_fn resume);

/* Requests waiting now. */
size_t waiter_table_count(struct waiter_table *table);

/* Frees the strings of a result and zeroes it. */
void waiter_result_clear(struct waiter_result *result);

#endif
