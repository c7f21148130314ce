/* The refusals the gateway decides alone, in the audit trail (docs/events.md): a /v2 request
 * whose credentials are not its platform's (401) and one a deny rule of OSBQ_POLICY refuses
 * (403). The refusals the begin scripts decide (quotas, caps, the deletion guard, a delete's
 * ConcurrencyError) are written by those scripts. Each is one XADD on the refusing HTTP thread,
 * at most AUDIT_REFUSALS_PER_S a second per gateway: past it they are counted and the next one
 * written says how many were left out ("unrecorded"), so that a flood of bad credentials cannot
 * turn into a flood of Redis writes. */
#ifndef OSBQ_GATEWAY_AUDIT_H
#define OSBQ_GATEWAY_AUDIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "request.h"
#include "store.h"

#define AUDIT_REFUSALS_PER_S 50

/* The rate of refusal events: a window of one second and what it let through. */
struct audit {
    bool on; /* OSBQ_EVENTS_MAX is not 0: refusals are written */
    pthread_mutex_t lock;
    int64_t window_ms;   /* when the current second began (osbq_clock_ms) */
    unsigned written;    /* refusals written in it */
    uint64_t unrecorded; /* refusals left out since the last one written */
};

/* on: whether events are written at all (OSBQ_EVENTS_MAX > 0). */
int audit_init(struct audit *a, bool on);
void audit_clear(struct audit *a);

/* What a refusal says beyond the request: its HTTP status, a reason word, the platform whose
 * URL prefix it came on, the operation's kind when known, the ids, and the description the
 * platform got. NULLs are left out. */
struct audit_refusal {
    unsigned status;
    const char *reason; /* "unauthenticated", "denied" */
    const char *platform;
    const char *kind;
    const char *instance_id;
    const char *binding_id;
    const char *description;
};

/* Appends the refusal of req to the audit trail (its user, request id, method, path and the
 * client's address beside what r says), unless this gateway wrote AUDIT_REFUSALS_PER_S of them
 * this second. A failure is logged, not answered: the refusal stands. */
void audit_refusal(struct audit *a, struct osbq_store *store, const struct request *req,
                   const char *client, const struct audit_refusal *r);

#endif
