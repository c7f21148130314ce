/* The gateway's Prometheus metrics: its families, the series handlers update, the gauges read
 * at each scrape, and the GET /metrics handler (docs/metrics.md lists them all). */
#ifndef OSBQ_GATEWAY_GATEWAY_METRICS_H
#define OSBQ_GATEWAY_GATEWAY_METRICS_H

#include <pthread.h>

#include "catalog.h"
#include "dispatch.h"
#include "metrics.h"
#include "platforms.h"
#include "process_metrics.h"
#include "store.h"
#include "store_counts.h"
#include "waiter.h"

/* What a last_operation poll read in Redis (osbq_last_operation_reads_total's read label). */
enum gateway_last_op_read {
    GATEWAY_LAST_OP_READ_OPERATION, /* the operation it names, alone (docs/decisions/0043) */
    GATEWAY_LAST_OP_READ_RECORD,    /* last_operation.lua: the record, then the operation */
    GATEWAY_LAST_OP_READS
};

/* osbq_workers_gone_total's reasons: dispatch_listener.gone's why, in the order of
 * gateway_metrics.workers_gone. */
extern const char *const gateway_metrics_gone_reasons[3];

/* Made in main.c before any thread that updates it starts; freed after they all stopped. */
struct gateway_metrics {
    struct osbq_metrics *registry;         /* owned: the process's registry */
    struct osbq_process_metrics process;   /* build, start time, memory, Redis errors */
    struct osbq_metric *requests;          /* osbq_http_requests_total{route,method,code} */
    struct osbq_metric *platform_requests; /* osbq_platform_requests_total{platform,code} */
    struct osbq_metric *duration;          /* osbq_http_request_duration_seconds{route} */
    struct osbq_metric *operations;     /* osbq_gateway_operations_total{kind,state,service,plan} */
    struct osbq_series *in_flight;      /* osbq_http_requests_in_flight */
    struct osbq_series *retries;        /* osbq_job_retries_total */
    struct osbq_series *lease_expiries; /* osbq_lease_expiries_total */
    struct osbq_series *polls;          /* osbq_polls_total */
    struct osbq_series *revoked;        /* osbq_steps_revoked_total */
    struct osbq_series *workers_gone[3]; /* osbq_workers_gone_total{reason}, by
                                          * gateway_metrics_gone_reasons */
    struct osbq_series *jobs_queued;     /* osbq_jobs_queued (read at scrape) */
    struct osbq_series *workers;         /* osbq_workers_live (read at scrape) */
    struct osbq_series *free_slots;      /* osbq_worker_free_slots (read at scrape) */
    struct osbq_series *sync_waits;      /* osbq_sync_waits_in_flight (read at scrape) */
    struct osbq_series *last_op_reads[GATEWAY_LAST_OP_READS]; /* osbq_last_operation_reads_total */
    struct osbq_metric *dispatch_waits;  /* osbq_dispatch_wait_seconds{lane,platform} */
    struct osbq_series *tenants_waiting; /* osbq_dispatch_tenants_waiting (read at scrape) */
    struct osbq_series *longest_waits[DISPATCH_LANES]; /* osbq_dispatch_longest_wait_seconds */
    struct osbq_metric *instances;                     /* osbq_instances{service,plan,state} */
    struct osbq_metric *instances_outdated;            /* osbq_instances_outdated{service,plan} */
    struct osbq_metric *bindings;                      /* osbq_bindings{service,plan,state} */
    struct osbq_series *counts_built;                  /* osbq_record_counts_built */
    pthread_mutex_t counts_lock;                       /* guards counts and catalog */
    struct osbq_record_counts counts;   /* the live records' count last read, rendered at
                                         * scrape into the four above (owned) */
    const struct osbq_catalog *catalog; /* borrowed: the counts' plans as labels */
    struct dispatch *dispatch;          /* borrowed, read at scrape; NULL until attached */
    struct waiter_table *waiters;       /* borrowed, read at scrape; NULL until attached */
};

/* Creates the registry and every family; version labels osbq_build_info. Returns 0, or -1 when out
 * of memory. */
int gateway_metrics_init(struct gateway_metrics *gm, struct osbq_store *store, const char *version);

/* Lets scrapes read the dispatcher's and the waiters' figures. Call before the HTTP server
 * starts (nothing renders before then). */
void gateway_metrics_attach(struct gateway_metrics *gm, struct dispatch *dispatch,
                            struct waiter_table *waiters);

/* Makes osbq_dispatch_wait_seconds' series of every platform of set, in every lane, so that they
 * are served from the first scrape (the dispatcher makes the others, "default" and "unknown",
 * when a job of theirs first leaves). Call at start and after each reload of the platforms. */
void gateway_metrics_platforms(struct gateway_metrics *gm, const struct osbq_platforms *set);

/* Hands the live records' count just read (record_gauges.c) to the scrapes, which render it
 * into osbq_instances, osbq_instances_outdated and osbq_bindings by catalog's plans; takes
 * *counts (zeroed). From any thread. */
void gateway_metrics_record_counts(struct gateway_metrics *gm, const struct osbq_catalog *catalog,
                                   struct osbq_record_counts *counts);

/* Frees the registry; gm is zeroed. */
void gateway_metrics_clear(struct gateway_metrics *gm);

/* Counts one answered request: route is the matched pattern ("unmatched" otherwise), method
 * one of the names http.c knows, status the HTTP status, seconds from first byte to answer. */
void gateway_metrics_request(struct gateway_metrics *gm, const char *route, const char *method,
                             unsigned status, double seconds);

/* Counts one Redis read of a last_operation poll (gm NULL: nothing). */
void gateway_metrics_last_operation_read(struct gateway_metrics *gm,
                                         enum gateway_last_op_read read);

/* Counts one answered broker API request of platform (a name from OSBQ_PLATFORMS, so the
 * label's values stay few). */
void gateway_metrics_platform_request(struct gateway_metrics *gm, const char *platform,
                                      unsigned status);

/* Counts an operation event: state "accepted" (recorded and sent), "joined" (an identical
 * request joined the running one) or "abandoned" (failed by recovery after its attempts).
 * service and plan are label values bounded by the catalog (osbq_catalog_metric_labels). */
void gateway_metrics_operation(struct gateway_metrics *gm, const char *kind, const char *state,
                               const char *service, const char *plan);

#endif
