/* The worker's Prometheus metrics. */
#include "worker_metrics.h"

#include <string.h>

static const char *const operation_labels[] = {"kind", "state", "service", "plan"};
static const char *const kind_label[] = {"kind"};
static const char *const result_label[] = {"result"};

/* Label values, in enum order. */
static const char *const state_names[WORKER_OP_STATES] = {"succeeded", "failed", "released", "lost",
                                                          "halted"};
static const char *const claim_names[WORKER_CLAIM_RESULTS] = {"claimed", "skipped", "error"};

/* The index of kind in the per-kind arrays, or -1 when it is not one of the five. */
static int kind_index(enum osbq_job_kind kind)
{
    int i = (int)kind - (int)OSBQ_JOB_PROVISION;
    return i >= 0 && i < WORKER_METRICS_KINDS ? i : -1;
}

/* Sets the gauges that are read rather than tracked. */
static void refresh_gauges(void *ctx)
{
    struct worker_metrics *wm = ctx;
    if (wm->running_jobs != NULL)
        osbq_series_set(wm->running, (double)wm->running_jobs(wm->running_ctx));
    osbq_series_set(wm->gateways_connected, (double)atomic_load(&wm->gateways));
}

/* The series of kind (an index) and state for a service and plan label pair. */
static struct osbq_series *operation_series(const struct worker_metrics *wm, int kind,
                                            enum worker_op_state state, const char *service,
                                            const char *plan)
{
    const char *name = osbq_job_kind_name((enum osbq_job_kind)(kind + (int)OSBQ_JOB_PROVISION));
    return osbq_metric_series(wm->operations, OSBQ_LABELS(name, state_names[state], service, plan));
}

/* Creates the series of every kind and state for one label pair. */
static int operation_series_all(const struct worker_metrics *wm, const char *service,
                                const char *plan)
{
    for (int k = 0; k < WORKER_METRICS_KINDS; k++)
        for (int s = 0; s < WORKER_OP_STATES; s++)
            if (operation_series(wm, k, (enum worker_op_state)s, service, plan) == NULL)
                return -1;
    return 0;
}

/* The operations' series, made up front so a scrape lists every one at 0: per catalog plan, and
 * the unknown plan. */
static int operations_series(struct worker_metrics *wm, const struct osbq_catalog *catalog)
{
    size_t services = catalog != NULL ? osbq_catalog_service_count(catalog) : 0;
    for (size_t i = 0; i < services; i++) {
        const struct osbq_service *service = osbq_catalog_service_at(catalog, i);
        for (size_t j = 0; j < service->plan_count; j++)
            if (operation_series_all(wm, service->id, service->plans[j].id) < 0)
                return -1;
    }
    return operation_series_all(wm, OSBQ_CATALOG_UNKNOWN_LABEL, OSBQ_CATALOG_UNKNOWN_LABEL);
}

int worker_metrics_init(struct worker_metrics *wm, struct osbq_metrics *registry,
                        const struct osbq_catalog *catalog, unsigned slots)
{
    memset(wm, 0, sizeof *wm);
    atomic_init(&wm->gateways, 0);
    wm->catalog = catalog;
    const char *kinds[WORKER_METRICS_KINDS];
    for (int k = 0; k < WORKER_METRICS_KINDS; k++)
        kinds[k] = osbq_job_kind_name((enum osbq_job_kind)(k + (int)OSBQ_JOB_PROVISION));
    const struct osbq_metric_row rows[] = {
        {OSBQ_METRIC_COUNTER, "osbq_worker_operations_total",
         "Jobs this worker claimed, by kind, service, plan and how they ended: succeeded or "
         "failed (outcome recorded), released (given back without an outcome: past the plan's "
         "deadline, or the worker stopped), lost (no longer this worker's: lease lost or outcome "
         "refused).",
         operation_labels, 4, NULL, 0, 0, &wm->operations, NULL},
        {OSBQ_METRIC_HISTOGRAM, "osbq_operation_duration_seconds",
         "Backend run time of the jobs whose outcome this worker recorded, by kind.", kind_label, 1,
         kinds, WORKER_METRICS_KINDS, 1, NULL, wm->duration},
        {OSBQ_METRIC_GAUGE, "osbq_jobs_running",
         "Jobs queued or running in this worker's slots (including backends abandoned past their "
         "deadline that have not returned yet).",
         NULL, 0, NULL, 0, 0, NULL, &wm->running},
        {OSBQ_METRIC_GAUGE, "osbq_worker_slots",
         "Jobs this worker runs at once (OSBQ_WORKER_CONCURRENCY).", NULL, 0, NULL, 0, 0, NULL,
         &wm->slots},
        {OSBQ_METRIC_COUNTER, "osbq_jobs_rejected_total",
         "Jobs handed back to their gateway because no slot was free (or the worker was "
         "stopping).",
         NULL, 0, NULL, 0, 0, NULL, &wm->rejected},
        {OSBQ_METRIC_COUNTER, "osbq_jobs_handed_total",
         "Jobs whose operation the gateway's begin claimed for this worker (a hand-over): run "
         "without a claim call, and counted as claimed too.",
         NULL, 0, NULL, 0, 0, NULL, &wm->handed},
        {OSBQ_METRIC_COUNTER, "osbq_claims_total",
         "Attempts to claim a received job's operation: claimed (it runs), skipped (finished or "
         "held by another worker), error (Redis failed; it is resent later).",
         result_label, 1, claim_names, WORKER_CLAIM_RESULTS, 0, NULL, wm->claims},
        {OSBQ_METRIC_COUNTER, "osbq_finish_retries_total",
         "Retries of recording an operation's outcome after Redis failed.", NULL, 0, NULL, 0, 0,
         NULL, &wm->finish_retries},
        {OSBQ_METRIC_COUNTER, "osbq_steps_waiting_total",
         "Steps this worker ran that ended with their operation still in progress: each recorded "
         "as waiting, its next step (a poll) due later on any worker.",
         NULL, 0, NULL, 0, 0, NULL, &wm->steps_waiting},
        {OSBQ_METRIC_HISTOGRAM, "osbq_step_lateness_seconds",
         "How long after its due time this worker claimed the next step (a poll) of a waiting "
         "operation: the recovery loop's precision, plus the wait for a free slot when every "
         "worker is busy.",
         NULL, 0, NULL, 0, 1, NULL, &wm->step_lateness},
        {OSBQ_METRIC_GAUGE, "osbq_gateways_connected",
         "Gateways this worker is linked to (from the registry).", NULL, 0, NULL, 0, 0, NULL,
         &wm->gateways_connected},
    };
    if (osbq_metrics_add_rows(registry, rows, sizeof rows / sizeof rows[0]) < 0 ||
        operations_series(wm, catalog) < 0)
        return -1;
    osbq_series_set(wm->slots, (double)slots);
    return osbq_metrics_on_render(registry, refresh_gauges, wm);
}

void worker_metrics_attach(struct worker_metrics *wm, size_t (*running_jobs)(void *ctx), void *ctx)
{
    if (wm == NULL)
        return;
    wm->running_jobs = running_jobs;
    wm->running_ctx = ctx;
}

void worker_metrics_set_gateways(struct worker_metrics *wm, size_t count)
{
    if (wm != NULL)
        atomic_store(&wm->gateways, (unsigned)count);
}

void worker_metrics_operation(const struct worker_metrics *wm, const struct osbq_job *job,
                              enum worker_op_state state)
{
    int k = kind_index(job->kind);
    if (wm == NULL || k < 0 || state >= WORKER_OP_STATES)
        return;
    const char *service, *plan;
    osbq_catalog_metric_labels(wm->catalog, job->service_id, job->plan_id, &service, &plan);
    osbq_series_add(operation_series(wm, k, state, service, plan), 1);
}

double worker_metrics_operation_count(const struct worker_metrics *wm, enum osbq_job_kind kind,
                                      const char *plan_id, enum worker_op_state state)
{
    int k = kind_index(kind);
    if (wm == NULL || k < 0 || state >= WORKER_OP_STATES)
        return 0;
    const char *service, *plan;
    osbq_catalog_metric_labels(wm->catalog, NULL, plan_id, &service, &plan);
    return osbq_series_value(operation_series(wm, k, state, service, plan));
}

void worker_metrics_duration(const struct worker_metrics *wm, enum osbq_job_kind kind,
                             double seconds)
{
    int k = kind_index(kind);
    if (wm != NULL && k >= 0)
        osbq_series_observe(wm->duration[k], seconds);
}

void worker_metrics_claim(const struct worker_metrics *wm, enum worker_claim_result result)
{
    if (wm != NULL && result < WORKER_CLAIM_RESULTS)
        osbq_series_add(wm->claims[result], 1);
}

void worker_metrics_rejected(const struct worker_metrics *wm)
{
    if (wm != NULL)
        osbq_series_add(wm->rejected, 1);
}

void worker_metrics_handed(const struct worker_metrics *wm)
{
    if (wm != NULL)
        osbq_series_add(wm->handed, 1);
}

void worker_metrics_step(const struct worker_metrics *wm)
{
    if (wm != NULL)
        osbq_series_add(wm->steps_waiting, 1);
}

void worker_metrics_step_lateness(const struct worker_metrics *wm, double seconds)
{
    if (wm != NULL)
        osbq_series_observe(wm->step_lateness, seconds);
}

void worker_metrics_finish_retry(const struct worker_metrics *wm)
{
    if (wm != NULL)
        osbq_series_add(wm->finish_retries, 1);
}
