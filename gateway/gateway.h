/* The gateway's shared, read-only context: what every handler may use. */
#ifndef OSBQ_GATEWAY_GATEWAY_H
#define OSBQ_GATEWAY_GATEWAY_H

#include "audit.h"
#include "auth.h"
#include "catalog.h"
#include "config.h"
#include "dispatch.h"
#include "gateway_metrics.h"
#include "memo.h"
#include "platforms.h"
#include "policy.h"
#include "secrets.h"
#include "store_pipeline.h"
#include "store_requests.h"
#include "validate.h"
#include "waiter.h"

/* Built once in main.c before the HTTP threads start; never written afterwards (the platforms
 * holder swaps its set, and the averages and instance tenants tables their entries, under their
 * own locks). */
struct gateway {
    const struct osbq_config *cfg;           /* the configuration */
    const struct osbq_catalog *catalog;      /* the validated catalog */
    const struct osbq_policy *policy;        /* OSBQ_POLICY, or NULL: no quotas, nothing denied */
    struct osbq_store *store;                /* Redis (its own locking makes it thread-safe) */
    struct osbq_store_pipeline *pipeline;    /* the requests' Redis calls (thread-safe submit) */
    const struct osbq_secrets *secrets;      /* opens stored binding results; NULL: no key file */
    struct osbq_platforms_holder *platforms; /* the platforms served (swapped on SIGHUP) */
    struct dispatch *dispatch;               /* sends jobs to workers (thread-safe submit) */
    struct waiter_table *waiters;            /* suspended synchronous requests */
    struct memo *averages;                   /* the plans' average durations polls read (memo.h) */
    struct memo *instance_tenants;           /* instances' tenants, learned from begins (memo.h) */
    struct gateway_metrics *metrics;         /* its series are updated from any thread */
    struct audit *audit;                     /* the rate of refusals in the audit trail */
    struct osbq_auth metrics_auth;           /* OSBQ_METRICS_USERNAME/PASSWORD, hashed */
    bool metrics_auth_on;                    /* /metrics asks for them */
    char gateway_id[33];                     /* random id: this gateway's event channel */
    const char *version;                     /* the build's version (static) */
    int64_t started_ms;                      /* when it started, ms since the epoch */
};

#endif
