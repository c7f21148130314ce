/* The lease a step holds on its operation: renewed (with the progress text the platform polls)
 * before it runs out, by a call that waits for Redis or one that does not, as the caller
 * chooses; each answer read gives a verdict. Knows only the store. */
#ifndef OSBQ_WORKER_LEASE_H
#define OSBQ_WORKER_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* Progress texts closer together than this are not written: a backend reporting every few
 * milliseconds (sim with a short duration) would cost a Redis round trip each time, for texts
 * nobody can poll that fast. The lease is renewed regardless. */
#define LEASE_TEXT_MIN_INTERVAL_MS 100

/* What the answers read so far say of the lease. */
enum lease_verdict {
    LEASE_HELD,    /* renewed, or no answer came yet: the operation is still this worker's */
    LEASE_FAILING, /* Redis did not renew it (logged once): tried again soon */
    LEASE_LOST,    /* the operation ended or another worker took it over: stop, record nothing */
    LEASE_HALTED,  /* a delete halted the operation (docs/decisions/0051): stop, then record
                    * the end (the store fails it, whatever the step reports) */
};

/* One operation's lease. Used by one thread at a time (the step's, then the exec watch's for a
 * detached step). */
struct lease {
    struct osbq_store *store;        /* borrowed */
    const char *operation_id;        /* borrowed: the operation held */
    const char *worker_id;           /* borrowed: this worker, as the claim recorded it */
    int64_t lease_ms;                /* how long a renewal holds it (OSBQ_LEASE_MS) */
    int64_t renew_by_ms;             /* monotonic time the lease must be renewed by */
    int64_t text_ms;                 /* monotonic time the last progress text was written */
    bool failing;                    /* a renewal failed and was logged: log again once it works */
    struct osbq_store_call *renewal; /* a renewal sent without waiting, not read yet; or NULL */
    int64_t renewal_sent_ms;         /* monotonic time renewal was sent */
    char *pending_text;              /* owned: a progress text that came while renewal was out */
};

/* Starts the lease of a claim made at now (monotonic ms): due for renewal after a third of
 * lease_ms. store, operation_id and worker_id are borrowed and must outlive the lease. */
void lease_init(struct lease *lease, struct osbq_store *store, const char *operation_id,
                const char *worker_id, int64_t lease_ms, int64_t now);

/* Whether the lease must be renewed at now. */
bool lease_due(const struct lease *lease, int64_t now);

/* Whether a progress text given at now is worth writing: the last one is older than
 * LEASE_TEXT_MIN_INTERVAL_MS, or the lease is due anyway. */
bool lease_text_due(const struct lease *lease, int64_t now);

/* Writes description (NULL: none) into the operation and renews the lease, waiting for Redis's
 * answer (and first for a renewal still out). */
enum lease_verdict lease_renew(struct lease *lease, const char *description, int64_t now);

/* The same without waiting, for a thread that drives many steps and must not wait for Redis
 * once per step (the exec watch's): reads the answer of the renewal sent before if it came
 * (lease_poll), then sends this one; while one is out, it renews the lease and description (the
 * latest) follows it once it is answered. Waits after all when the store cannot send without
 * waiting (no pipeline, or out of memory). */
enum lease_verdict lease_renew_start(struct lease *lease, const char *description, int64_t now);

/* Reads the answer of a renewal sent without waiting, if it came, and sends the progress text
 * that came meanwhile. LEASE_HELD when none was out or it has not answered yet. */
enum lease_verdict lease_poll(struct lease *lease, int64_t now);

/* Waits for the answer of a renewal sent without waiting, if one is out, and reads it; a
 * progress text that came meanwhile is dropped (the step is ending). */
enum lease_verdict lease_settle(struct lease *lease);

/* Waits for a renewal still out (the pipeline's thread must be done with it) and frees it
 * unread, and the pending text. */
void lease_clear(struct lease *lease);

#endif
