/* The worker's Prometheus metrics: its families and series, created once in main.c in the
 * process's registry and handed to the runner, which counts claims, outcomes and retries; the
 * gauges read at each scrape (running jobs, linked gateways). docs/metrics.md lists them all.
 * Every function accepts a NULL struct worker_metrics (a runner made without metrics) and then
 * does nothing. */
#ifndef OSBQ_WORKER_WORKER_METRICS_H
#define OSBQ_WORKER_WORKER_METRICS_H

#include <stdatomic.h>
#include <stddef.h>

#include "catalog.h"
#include "job.h"
#include "metrics.h"

/* The kinds counted: osbq_job_kind values OSBQ_JOB_PROVISION..OSBQ_JOB_UNBIND. */
#define WORKER_METRICS_KINDS 5

/* What became of a claimed job: the state label of osbq_worker_operations_total. Each claimed job
 * ends in exactly one of them. */
enum worker_op_state {
    WORKER_OP_SUCCEEDED, /* its success was recorded */
    WORKER_OP_FAILED,    /* its failure was recorded */
    WORKER_OP_RELEASED,  /* given back without an outcome: past its deadline, or the worker
                          * stopped first */
    WORKER_OP_LOST,      /* no longer this worker's: its lease was lost, or the outcome refused */
    WORKER_OP_HALTED,    /* a delete of its instance or binding halted it (its step stopped) */
    WORKER_OP_STATES,
};

/* The result label of osbq_claims_total. */
enum worker_claim_result {
    WORKER_CLAIM_CLAIMED, /* claimed: the job runs */
    WORKER_CLAIM_SKIPPED, /* finished, or held by another worker's live lease: dropped */
    WORKER_CLAIM_ERROR,   /* Redis failed: dropped, resent later */
    WORKER_CLAIM_RESULTS,
};

/* The series, made by worker_metrics_init and owned by the registry. Updates are lock-free and
 * safe from any thread. */
struct worker_metrics {
    struct osbq_metric *operations;     /* osbq_worker_operations_total{kind,state,service,plan} */
    const struct osbq_catalog *catalog; /* borrowed: the service and plan label values */
    struct osbq_series *duration[WORKER_METRICS_KINDS]; /* osbq_operation_duration_seconds */
    struct osbq_series *claims[WORKER_CLAIM_RESULTS];   /* osbq_claims_total{result} */
    struct osbq_series *running;            /* osbq_jobs_running (read at each render) */
    struct osbq_series *slots;              /* osbq_worker_slots */
    struct osbq_series *rejected;           /* osbq_jobs_rejected_total */
    struct osbq_series *handed;             /* osbq_jobs_handed_total */
    struct osbq_series *finish_retries;     /* osbq_finish_retries_total */
    struct osbq_series *steps_waiting;      /* osbq_steps_waiting_total */
    struct osbq_series *step_lateness;      /* osbq_step_lateness_seconds */
    struct osbq_series *gateways_connected; /* osbq_gateways_connected (read at each render) */
    size_t (*running_jobs)(void *ctx);      /* read by the render hook; NULL until
                                             * worker_metrics_attach */
    void *running_ctx;                      /* borrowed: running_jobs' argument */
    atomic_uint gateways;                   /* linked gateways: written by the main thread (which
                                             * owns the bus link), read by the render hook */
};

/* Adds the worker's families to registry (made by the caller, which keeps owning it), creates
 * every series, those of each catalog plan included (so each starts at 0 and shows in the
 * first scrape), sets osbq_worker_slots to slots and registers the render hook. wm and catalog
 * must outlive the registry's renders. Returns 0, or -1 when out of memory. */
int worker_metrics_init(struct worker_metrics *wm, struct osbq_metrics *registry,
                        const struct osbq_catalog *catalog, unsigned slots);

/* Lets renders read running_jobs(ctx) (the jobs holding a slot) into osbq_jobs_running. Call
 * before the metrics server starts; ctx must outlive it. */
void worker_metrics_attach(struct worker_metrics *wm, size_t (*running_jobs)(void *ctx), void *ctx);

/* Records how many gateways the worker is linked to (main thread, after each registry sync). */
void worker_metrics_set_gateways(struct worker_metrics *wm, size_t count);

/* Counts one claimed job ending in state, by its kind, service and plan (a plan not in the
 * catalog counts as "unknown"). Unknown kinds are ignored. */
void worker_metrics_operation(const struct worker_metrics *wm, const struct osbq_job *job,
                              enum worker_op_state state);

/* The count of jobs of kind on plan_id that ended in state (tests). */
double worker_metrics_operation_count(const struct worker_metrics *wm, enum osbq_job_kind kind,
                                      const char *plan_id, enum worker_op_state state);

/* Observes the backend run time, in seconds, of a job of kind whose outcome was recorded. */
void worker_metrics_duration(const struct worker_metrics *wm, enum osbq_job_kind kind,
                             double seconds);

/* Counts one claim attempt. */
void worker_metrics_claim(const struct worker_metrics *wm, enum worker_claim_result result);

/* Counts one job handed back because no slot was free (or the worker was stopping). */
void worker_metrics_rejected(const struct worker_metrics *wm);

/* Counts a job run without a claim call: the begin script claimed its operation for this worker
 * (a hand-over, decision 0042). */
void worker_metrics_handed(const struct worker_metrics *wm);

/* Counts one step that ended with its operation still in progress (recorded as waiting). */
void worker_metrics_step(const struct worker_metrics *wm);

/* Counts how long after its due time a waiting operation's next step was claimed here. */
void worker_metrics_step_lateness(const struct worker_metrics *wm, double seconds);

/* Counts one more try to record an outcome after Redis failed. */
void worker_metrics_finish_retry(const struct worker_metrics *wm);

#endif
