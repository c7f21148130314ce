/* The gateway's Prometheus metrics and the GET /metrics handler. */
#include "gateway_metrics.h"

#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "reply.h"

static const char *const request_labels[] = {"route", "method", "code"};
static const char *const route_label[] = {"route"};
static const char *const operation_labels[] = {"kind", "state", "service", "plan"};
static const char *const platform_labels[] = {"platform", "code"};
static const char *const lane_label[] = {"lane"};
static const char *const lane_platform_labels[] = {"lane", "platform"};
static const char *const read_label[] = {"read"};
/* osbq_last_operation_reads_total's read label, by enum gateway_last_op_read. */
static const char *const last_op_read_names[GATEWAY_LAST_OP_READS] = {"operation", "record"};

/* Renders the live records' count last read: every series made anew (a plan whose records
 * all went has none), osbq_instances_outdated with a 0 for each plan of the catalog that has a
 * maintenance_info version. Before the count is built, none but osbq_record_counts_built. */
static void render_record_counts(struct gateway_metrics *gm)
{
    pthread_mutex_lock(&gm->counts_lock);
    osbq_metric_clear(gm->instances);
    osbq_metric_clear(gm->instances_outdated);
    osbq_metric_clear(gm->bindings);
    osbq_series_set(gm->counts_built, gm->counts.built ? 1 : 0);
    size_t services = gm->counts.built ? osbq_catalog_service_count(gm->catalog) : 0;
    for (size_t i = 0; i < services; i++) {
        const struct osbq_service *service = osbq_catalog_service_at(gm->catalog, i);
        for (size_t p = 0; p < service->plan_count; p++)
            if (service->plans[p].maintenance_version != NULL)
                osbq_series_set(osbq_metric_series(gm->instances_outdated,
                                                   OSBQ_LABELS(service->id, service->plans[p].id)),
                                0);
    }
    for (size_t i = 0; gm->counts.built && i < gm->counts.count; i++) {
        const struct osbq_record_count *line = &gm->counts.list[i];
        const struct osbq_plan *plan = osbq_catalog_plan(gm->catalog, line->plan_id);
        const char *service_label = plan != NULL ? plan->service->id : OSBQ_CATALOG_UNKNOWN_LABEL;
        const char *plan_label = plan != NULL ? plan->id : OSBQ_CATALOG_UNKNOWN_LABEL;
        osbq_series_add(osbq_metric_series(line->binding ? gm->bindings : gm->instances,
                                           OSBQ_LABELS(service_label, plan_label, line->state)),
                        (double)line->count);
        if (!line->binding && osbq_plan_outdated(plan, line->maintenance_version[0] != '\0'
                                                           ? line->maintenance_version
                                                           : NULL))
            osbq_series_add(
                osbq_metric_series(gm->instances_outdated, OSBQ_LABELS(service_label, plan_label)),
                (double)line->count);
    }
    pthread_mutex_unlock(&gm->counts_lock);
}

/* Sets the gauges that are read rather than tracked. */
static void refresh_gauges(void *ctx)
{
    struct gateway_metrics *gm = ctx;
    render_record_counts(gm);
    if (gm->dispatch != NULL) {
        struct dispatch_stats stats;
        dispatch_get_stats(gm->dispatch, &stats);
        osbq_series_set(gm->jobs_queued, (double)stats.queued);
        osbq_series_set(gm->workers, (double)stats.workers);
        osbq_series_set(gm->free_slots, (double)stats.free_slots);
        osbq_series_set(gm->tenants_waiting, (double)stats.tenants_waiting);
        for (unsigned i = 0; i < DISPATCH_LANES; i++)
            osbq_series_set(gm->longest_waits[i],
                            dispatch_longest_wait(gm->dispatch, (enum dispatch_lane)i));
    }
    if (gm->waiters != NULL)
        osbq_series_set(gm->sync_waits, (double)waiter_table_count(gm->waiters));
}

const char *const gateway_metrics_gone_reasons[3] = {"disconnected", "silent", "unreachable"};

/* The HTTP side: requests answered (by route, and by platform), their duration, those
 * in flight. */
static int add_http_families(struct gateway_metrics *gm, struct osbq_metrics *m)
{
    const struct osbq_metric_row rows[] = {
        {OSBQ_METRIC_COUNTER, "osbq_http_requests_total",
         "HTTP requests answered, by route pattern, method and status.", request_labels, 3, NULL, 0,
         0, &gm->requests, NULL},
        {OSBQ_METRIC_COUNTER, "osbq_platform_requests_total",
         "Broker API requests answered, by the platform their URL prefix names and status.",
         platform_labels, 2, NULL, 0, 0, &gm->platform_requests, NULL},
        {OSBQ_METRIC_HISTOGRAM, "osbq_http_request_duration_seconds",
         "Time from a request's first byte to its answer (synchronous waits included).",
         route_label, 1, NULL, 0, 1, &gm->duration, NULL},
        {OSBQ_METRIC_GAUGE, "osbq_http_requests_in_flight",
         "Requests received and not answered yet (synchronous waits included).", NULL, 0, NULL, 0,
         0, NULL, &gm->in_flight},
    };
    return osbq_metrics_add_rows(m, rows, sizeof rows / sizeof rows[0]);
}

/* What this gateway did with operations, and the synchronous requests waiting for one. */
static int add_operation_families(struct gateway_metrics *gm, struct osbq_metrics *m)
{
    const struct osbq_metric_row rows[] = {
        {OSBQ_METRIC_COUNTER, "osbq_gateway_operations_total",
         "Operations by kind, service, plan and what this gateway did: accepted (recorded and "
         "sent), joined (an identical request joined the running one), not_durable (recorded, "
         "too few replicas acknowledged it: answered 503), abandoned (failed after its "
         "attempts), capped (refused with a 422: its tenant's operations in progress reached "
         "OSBQ_POLICY's cap), unchanged (an update that changed nothing, answered 200 without an "
         "operation).",
         operation_labels, 4, NULL, 0, 0, &gm->operations, NULL},
        {OSBQ_METRIC_GAUGE, "osbq_sync_waits_in_flight",
         "Synchronous requests suspended until their operation ends.", NULL, 0, NULL, 0, 0, NULL,
         &gm->sync_waits},
        {OSBQ_METRIC_COUNTER, "osbq_last_operation_reads_total",
         "Redis reads of last_operation polls, by what was read: operation (the operation the "
         "poll names, one plain read), record (last_operation.lua: the poll names no operation, "
         "or the operation alone could not answer it).",
         read_label, 1, last_op_read_names, GATEWAY_LAST_OP_READS, 0, NULL, gm->last_op_reads},
    };
    return osbq_metrics_add_rows(m, rows, sizeof rows / sizeof rows[0]);
}

/* The dispatcher: jobs waiting for a worker's free slot (by lane, tenant and platform),
 * the workers and their free slots. */
static int add_dispatch_families(struct gateway_metrics *gm, struct osbq_metrics *m)
{
    const char *lanes[DISPATCH_LANES];
    for (unsigned i = 0; i < DISPATCH_LANES; i++)
        lanes[i] = dispatch_lane_name((enum dispatch_lane)i);
    const struct osbq_metric_row rows[] = {
        {OSBQ_METRIC_GAUGE, "osbq_jobs_queued",
         "Jobs this gateway holds until a worker has a free slot, and synchronous requests "
         "waiting there for a slot before they begin.",
         NULL, 0, NULL, 0, 0, NULL, &gm->jobs_queued},
        {OSBQ_METRIC_HISTOGRAM, "osbq_dispatch_wait_seconds",
         "Time jobs waited in this gateway's dispatcher for a worker's free slot, by lane "
         "(waiting: a synchronous request's; due: polls and resends; new: first steps of "
         "asynchronous operations) and by the platform of the job's tenant (an OSBQ_PLATFORMS "
         "name, default, or unknown).",
         lane_platform_labels, 2, NULL, 0, 1, &gm->dispatch_waits, NULL},
        {OSBQ_METRIC_GAUGE, "osbq_dispatch_tenants_waiting",
         "Tenants with jobs waiting in this gateway's dispatcher, counted once per lane they "
         "wait in (OSBQ_TENANT_KEY says what a tenant is).",
         NULL, 0, NULL, 0, 0, NULL, &gm->tenants_waiting},
        {OSBQ_METRIC_GAUGE, "osbq_dispatch_longest_wait_seconds",
         "By lane, how long the oldest job of any tenant has waited in this gateway's dispatcher "
         "so far (0: none waits): a tenant's queue that does not move shows here.",
         lane_label, 1, lanes, DISPATCH_LANES, 0, NULL, gm->longest_waits},
        {OSBQ_METRIC_GAUGE, "osbq_workers_live", "Workers connected to this gateway's bus socket.",
         NULL, 0, NULL, 0, 0, NULL, &gm->workers},
        {OSBQ_METRIC_GAUGE, "osbq_worker_free_slots",
         "Free job slots those workers last announced, less those this gateway took for "
         "hand-overs not sent yet, summed.",
         NULL, 0, NULL, 0, 0, NULL, &gm->free_slots},
    };
    return osbq_metrics_add_rows(m, rows, sizeof rows / sizeof rows[0]);
}

/* The recovery loop: jobs sent again, leases that ran out, steps revoked, polls; workers
 * gone. */
static int add_recovery_families(struct gateway_metrics *gm, struct osbq_metrics *m)
{
    static const char *const gone_label[] = {"reason"};
    const struct osbq_metric_row rows[] = {
        {OSBQ_METRIC_COUNTER, "osbq_job_retries_total",
         "Jobs this gateway's recovery loop sent again: never claimed in time, or their worker's "
         "lease ran out.",
         NULL, 0, NULL, 0, 0, NULL, &gm->retries},
        {OSBQ_METRIC_COUNTER, "osbq_lease_expiries_total",
         "Of those, the operations whose worker's lease ran out (it died or hung).", NULL, 0, NULL,
         0, 0, NULL, &gm->lease_expiries},
        {OSBQ_METRIC_COUNTER, "osbq_polls_total",
         "Jobs this gateway's recovery loop sent for the next step of a waiting operation (a "
         "poll): not retries.",
         NULL, 0, NULL, 0, 0, NULL, &gm->polls},
        {OSBQ_METRIC_COUNTER, "osbq_steps_revoked_total",
         "Of the jobs sent again, the running steps taken from a worker this gateway saw go, at "
         "once rather than when their lease ran out.",
         NULL, 0, NULL, 0, 0, NULL, &gm->revoked},
        {OSBQ_METRIC_COUNTER, "osbq_workers_gone_total",
         "Workers this gateway saw go, by how: their connection ended (disconnected), their "
         "READYs stopped (silent), or a send to them failed (unreachable).",
         gone_label, 1, gateway_metrics_gone_reasons, 3, 0, NULL, gm->workers_gone},
    };
    return osbq_metrics_add_rows(m, rows, sizeof rows / sizeof rows[0]);
}

/* The live records' count (record_gauges.c reads it, render_record_counts renders it). */
static int add_record_families(struct gateway_metrics *gm, struct osbq_metrics *m)
{
    static const char *const plan_state_labels[] = {"service", "plan", "state"};
    static const char *const plan_labels[] = {"service", "plan"};
    const struct osbq_metric_row rows[] = {
        {OSBQ_METRIC_GAUGE, "osbq_instances",
         "Live service instances (not deleted) by service, plan and state, from the count the "
         "scripts keep in Redis, read every OSBQ_COUNTS_REFRESH_S (the same in every gateway).",
         plan_state_labels, 3, NULL, 0, 0, &gm->instances, NULL},
        {OSBQ_METRIC_GAUGE, "osbq_instances_outdated",
         "Of those, the instances whose maintenance_info version is behind their plan's in this "
         "gateway's catalog (osbq-ctl instances --outdated lists them).",
         plan_labels, 2, NULL, 0, 0, &gm->instances_outdated, NULL},
        {OSBQ_METRIC_GAUGE, "osbq_bindings",
         "Live service bindings by service, plan and state, from the same count.",
         plan_state_labels, 3, NULL, 0, 0, &gm->bindings, NULL},
        {OSBQ_METRIC_GAUGE, "osbq_record_counts_built",
         "1 once the count of live records is built (the three gauges above hold every record); "
         "0 while the gateways' walk builds it (after an upgrade, or osbq-ctl recount).",
         NULL, 0, NULL, 0, 0, NULL, &gm->counts_built},
    };
    return osbq_metrics_add_rows(m, rows, sizeof rows / sizeof rows[0]);
}

int gateway_metrics_init(struct gateway_metrics *gm, struct osbq_store *store, const char *version)
{
    memset(gm, 0, sizeof *gm);
    if (pthread_mutex_init(&gm->counts_lock, NULL) != 0)
        return -1;
    struct osbq_metrics *m = osbq_metrics_new();
    if (m == NULL) {
        pthread_mutex_destroy(&gm->counts_lock);
        return -1;
    }
    gm->registry = m;
    if (osbq_process_metrics_add(&gm->process, m, "gateway", version, store,
                                 osbq_store_error_count) < 0 ||
        osbq_process_metrics_add_ack_timeouts(&gm->process, m, osbq_store_ack_timeout_count) < 0 ||
        add_http_families(gm, m) < 0 || add_operation_families(gm, m) < 0 ||
        add_dispatch_families(gm, m) < 0 || add_recovery_families(gm, m) < 0 ||
        add_record_families(gm, m) < 0 || osbq_metrics_on_render(m, refresh_gauges, gm) < 0) {
        gateway_metrics_clear(gm);
        return -1;
    }
    return 0;
}

void gateway_metrics_attach(struct gateway_metrics *gm, struct dispatch *dispatch,
                            struct waiter_table *waiters)
{
    gm->dispatch = dispatch;
    gm->waiters = waiters;
}

void gateway_metrics_platforms(struct gateway_metrics *gm, const struct osbq_platforms *set)
{
    for (size_t p = 0; set != NULL && p < set->count; p++)
        for (unsigned i = 0; i < DISPATCH_LANES; i++)
            (void)osbq_metric_series(
                gm->dispatch_waits,
                OSBQ_LABELS(dispatch_lane_name((enum dispatch_lane)i), set->list[p].name));
}

void gateway_metrics_record_counts(struct gateway_metrics *gm, const struct osbq_catalog *catalog,
                                   struct osbq_record_counts *counts)
{
    struct osbq_record_counts old;
    pthread_mutex_lock(&gm->counts_lock);
    old = gm->counts;
    gm->counts = *counts;
    gm->catalog = catalog;
    pthread_mutex_unlock(&gm->counts_lock);
    memset(counts, 0, sizeof *counts);
    osbq_record_counts_clear(&old);
}

void gateway_metrics_clear(struct gateway_metrics *gm)
{
    if (gm->registry == NULL)
        return;
    osbq_metrics_destroy(&gm->registry);
    osbq_record_counts_clear(&gm->counts);
    pthread_mutex_destroy(&gm->counts_lock);
    memset(gm, 0, sizeof *gm);
}

void gateway_metrics_request(struct gateway_metrics *gm, const char *route, const char *method,
                             unsigned status, double seconds)
{
    char code[8];
    (void)snprintf(code, sizeof code, "%u", status);
    osbq_series_add(osbq_metric_series(gm->requests, OSBQ_LABELS(route, method, code)), 1);
    osbq_series_observe(osbq_metric_series(gm->duration, OSBQ_LABELS(route)), seconds);
}

void gateway_metrics_last_operation_read(struct gateway_metrics *gm, enum gateway_last_op_read read)
{
    if (gm != NULL && read < GATEWAY_LAST_OP_READS)
        osbq_series_add(gm->last_op_reads[read], 1);
}

void gateway_metrics_platform_request(struct gateway_metrics *gm, const char *platform,
                                      unsigned status)
{
    char code[8];
    (void)snprintf(code, sizeof code, "%u", status);
    osbq_series_add(osbq_metric_series(gm->platform_requests, OSBQ_LABELS(platform, code)), 1);
}

void gateway_metrics_operation(struct gateway_metrics *gm, const char *kind, const char *state,
                               const char *service, const char *plan)
{
    osbq_series_add(osbq_metric_series(gm->operations, OSBQ_LABELS(kind, state, service, plan)), 1);
}

void metrics_get(const struct gateway *gw, const struct request *req, struct reply *out)
{
    (void)req;
    size_t len = 0;
    char *text = osbq_metrics_render(gw->metrics->registry, &len);
    if (text == NULL) {
        reply_error(out, OSBQ_ERR_INTERNAL, "Out of memory while rendering the metrics.");
        return;
    }
    reply_clear(out);
    out->status = 200;
    out->body = text;
    out->body_len = len;
    out->content_type = OSBQ_METRICS_CONTENT_TYPE;
}
