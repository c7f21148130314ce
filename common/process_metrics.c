/* Metrics every osbq process exposes, read at render time. */
#include "process_metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/resource.h>
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

/* User plus system CPU time of every thread so far, in seconds; -1 when unknown. */
static double cpu_seconds(void)
{
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0)
        return -1;
    return (double)usage.ru_utime.tv_sec + (double)usage.ru_stime.tv_sec +
           ((double)usage.ru_utime.tv_usec + (double)usage.ru_stime.tv_usec) / 1e6;
}

/* Open file descriptors: the entries of /proc/self/fd, less the one reading it; -1 when
 * unreadable. */
static double open_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL)
        return -1;
    double n = 0;
    for (struct dirent *e = readdir(dir); e != NULL; e = readdir(dir))
        if (e->d_name[0] != '.')
            n++;
    closedir(dir);
    return n - 1;
}

static double max_fds(void)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return -1;
    return (double)limit.rlim_cur;
}

static void process_gauges_refresh(void *ctx)
{
    struct osbq_process_metrics *g = ctx;
    double rss = resident_bytes();
    if (rss >= 0)
        osbq_series_set(g->resident_bytes, rss);
    double cpu = cpu_seconds();
    /* A counter only adds: the difference since the last render. */
    if (cpu > g->reported_cpu) {
        osbq_series_add(g->cpu_seconds, cpu - g->reported_cpu);
        g->reported_cpu = cpu;
    }
    double fds = open_fds();
    if (fds >= 0)
        osbq_series_set(g->open_fds, fds);
    double limit = max_fds();
    if (limit >= 0)
        osbq_series_set(g->max_fds, limit);
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
    /* The process_* names and meanings of Prometheus's client libraries, so the usual
     * dashboards and rules apply as they are. */
    struct osbq_series *start =
        osbq_metrics_add_unlabelled(m, OSBQ_METRIC_GAUGE, "process_start_time_seconds",
                                    "Start time of the process since unix epoch in seconds.");
    *pm = (struct osbq_process_metrics){
        .store = store,
        .error_count = error_count,
        .resident_bytes =
            osbq_metrics_add_unlabelled(m, OSBQ_METRIC_GAUGE, "process_resident_memory_bytes",
                                        "Resident memory size in bytes."),
        .cpu_seconds =
            osbq_metrics_add_unlabelled(m, OSBQ_METRIC_COUNTER, "process_cpu_seconds_total",
                                        "Total user and system CPU time spent in seconds."),
        .open_fds = osbq_metrics_add_unlabelled(m, OSBQ_METRIC_GAUGE, "process_open_fds",
                                                "Number of open file descriptors."),
        .max_fds = osbq_metrics_add_unlabelled(m, OSBQ_METRIC_GAUGE, "process_max_fds",
                                               "Maximum number of open file descriptors."),
        .redis_errors = osbq_metrics_add_unlabelled(
            m, OSBQ_METRIC_COUNTER, "osbq_redis_errors_total",
            "Redis calls that failed: connection and I/O errors, timeouts, error replies."),
    };
    if (build == NULL || start == NULL || pm->resident_bytes == NULL || pm->cpu_seconds == NULL ||
        pm->open_fds == NULL || pm->max_fds == NULL || pm->redis_errors == NULL)
        return -1;
    osbq_series_set(osbq_metric_series(build, OSBQ_LABELS(version, role)), 1);
    osbq_series_set(start, (double)time(NULL));
    return osbq_metrics_on_render(m, process_gauges_refresh, pm);
}

int osbq_process_metrics_add_ack_timeouts(struct osbq_process_metrics *pm, struct osbq_metrics *m,
                                          osbq_store_error_count_fn ack_timeout_count)
{
    pm->redis_ack_timeouts = osbq_metrics_add_unlabelled(
        m, OSBQ_METRIC_COUNTER, "osbq_redis_ack_timeouts_total",
        "Redis WAITs that ended with fewer replicas than OSBQ_REDIS_MIN_ACKS acknowledging: "
        "acceptances answered 503 (gateway), outcomes waited for again (worker).");
    if (pm->redis_ack_timeouts == NULL)
        return -1;
    pm->ack_timeout_count = ack_timeout_count;
    return 0;
}
