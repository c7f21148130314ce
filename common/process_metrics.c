/* Metrics every osbq process exposes, read at render time. */
#include "process_metrics.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Resident set size from /proc/self/statm (second field, in pages); -1 when unreadable. */
static double resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return -1;
    unsigned long size = 0, resident = 0;
    int n = fscanf(f, "%lu %lu", &size, &resident);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return n == 2 && page > 0 ? (double)resident * (double)page : -1;
}

static void process_gauges_refresh(void *ctx)
{
    struct osbq_process_metrics *g = ctx;
    double rss = resident_bytes();
    if (rss >= 0)
        osbq_series_set(g->resident_bytes, rss);
    /* Render hooks of one registry never run concurrently (metrics.c), so this is the only
     * writer of reported_errors. */
    double errors = (double)g->error_count(g->store);
    osbq_series_add(g->redis_errors, errors - g->reported_errors);
    g->reported_errors = errors;
    if (g->ack_timeout_count != NULL && g->redis_ack_timeouts != NULL) {
        double short_waits = (double)g->ack_timeout_count(g->store);
        osbq_series_add(g->redis_ack_timeouts, short_waits - g->reported_ack_timeouts);
        g->reported_ack_timeouts = short_waits;
    }
}

int osbq_process_metrics_add(struct osbq_process_metrics *pm, struct osbq_metrics *m,
                             const char *role, const char *version, const struct osbq_store *store,
                             osbq_store_error_count_fn error_count)
{
    static const char *const build_labels[] = {"version", "role"};
    struct osbq_metric *build = osbq_metrics_add(
        m, OSBQ_METRIC_GAUGE, "osbq_build_info",
        "The running build: always 1, labelled with version and role.", build_labels, 2, NULL, 0);
    struct osbq_metric *start = osbq_metrics_add(
        m, OSBQ_METRIC_GAUGE, "osbq_process_start_time_seconds",
        "When the process started, in seconds since the Unix epoch.", NULL, 0, NULL, 0);
    struct osbq_metric *rss =
        osbq_metrics_add(m, OSBQ_METRIC_GAUGE, "osbq_process_resident_memory_bytes",
                         "Resident memory of the process.", NULL, 0, NULL, 0);
    struct osbq_metric *errors = osbq_metrics_add(
        m, OSBQ_METRIC_COUNTER, "osbq_redis_errors_total",
        "Redis calls that failed: connection and I/O errors, timeouts, error replies.", NULL, 0,
        NULL, 0);
    if (build == NULL || start == NULL || rss == NULL || errors == NULL)
        return -1;
    osbq_series_set(osbq_metric_series(build, OSBQ_LABELS(version, role)), 1);
    osbq_series_set(osbq_metric_series(start, NULL), (double)time(NULL));
    *pm = (struct osbq_process_metrics){
        .store = store,
        .error_count = error_count,
        .resident_bytes = osbq_metric_series(rss, NULL),
        .redis_errors = osbq_metric_series(errors, NULL),
    };
    if (pm->resident_bytes == NULL || pm->redis_errors == NULL)
        return -1;
    return osbq_metrics_on_render(m, process_gauges_refresh, pm);
}

int osbq_process_metrics_add_ack_timeouts(struct osbq_process_metrics *pm, struct osbq_metrics *m,
                                          osbq_store_error_count_fn ack_timeout_count)
{
    struct osbq_metric *acks = osbq_metrics_add(
        m, OSBQ_METRIC_COUNTER, "osbq_redis_ack_timeouts_total",
        "Redis WAITs that ended with fewer replicas than OSBQ_REDIS_MIN_ACKS acknowledging: "
        "acceptances answered 503 (gateway), outcomes waited for again (worker).",
        NULL, 0, NULL, 0);
    pm->redis_ack_timeouts = acks ? osbq_metric_series(acks, NULL) : NULL;
    if (pm->redis_ack_timeouts == NULL)
        return -1;
    pm->ack_timeout_count = ack_timeout_count;
    return 0;
}
