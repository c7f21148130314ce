/* Metrics every osbq process exposes: build, start time, memory, Redis errors. */
#ifndef OSBQ_PROCESS_METRICS_H
#define OSBQ_PROCESS_METRICS_H

#include "metrics.h"
#include "store.h"

/* What the render hook reads. Lives as long as the registry; owned by the caller. */
struct osbq_process_metrics {
    struct osbq_store *store;           /* borrowed: its error count */
    struct osbq_series *resident_bytes; /* osbq_process_resident_memory_bytes */
    struct osbq_series *redis_errors;   /* osbq_redis_errors_total */
    double reported_errors;             /* what redis_errors already holds */
};

/* Adds osbq_build_info{version,role}, osbq_process_start_time_seconds,
 * osbq_process_resident_memory_bytes and osbq_redis_errors_total to m, the last two read at
 * each render (from /proc/self/statm and osbq_store_error_count). role is "gateway" or
 * "worker"; pm (filled here) and store must outlive m's renders. Returns 0, or -1 when out of
 * memory. */
int osbq_process_metrics_add(struct osbq_process_metrics *pm, struct osbq_metrics *m,
                             const char *role, const char *version, struct osbq_store *store);

#endif
