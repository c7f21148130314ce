/* Metrics every osbq process exposes: build, the standard process_* ones (start time, memory,
 * CPU, file descriptors), Redis errors. */
#ifndef OSBQ_PROCESS_METRICS_H
#define OSBQ_PROCESS_METRICS_H

#include <stdint.h>

#include "metrics.h"

/* The store (store/store.h), named only: common does not link it. Its error count comes
 * through the function the caller passes (osbq_store_error_count). */
struct osbq_store;
typedef uint64_t (*osbq_store_error_count_fn)(const struct osbq_store *store);

/* What the render hook reads. Lives as long as the registry; owned by the caller. */
struct osbq_process_metrics {
    const struct osbq_store *store;              /* borrowed: its error count */
    osbq_store_error_count_fn error_count;       /* reads it */
    struct osbq_series *resident_bytes;          /* process_resident_memory_bytes */
    struct osbq_series *cpu_seconds;             /* process_cpu_seconds_total */
    struct osbq_series *open_fds;                /* process_open_fds */
    struct osbq_series *max_fds;                 /* process_max_fds */
    struct osbq_series *redis_errors;            /* osbq_redis_errors_total */
    double reported_errors;                      /* what redis_errors already holds */
    double reported_cpu;                         /* what cpu_seconds already holds */
    osbq_store_error_count_fn ack_timeout_count; /* reads the store's short WAITs, or NULL */
    struct osbq_series *redis_ack_timeouts;      /* osbq_redis_ack_timeouts_total */
    double reported_ack_timeouts;                /* what redis_ack_timeouts already holds */
};

/* Adds osbq_build_info{version,role}, process_start_time_seconds,
 * process_resident_memory_bytes, process_cpu_seconds_total, process_open_fds, process_max_fds
 * and osbq_redis_errors_total to m, all but the first two read at each render (/proc/self,
 * getrusage, getrlimit, error_count(store)). role is "gateway" or "worker";
 * pm (filled here) and store must outlive m's renders. Returns 0, or -1 when out of memory. */
int osbq_process_metrics_add(struct osbq_process_metrics *pm, struct osbq_metrics *m,
                             const char *role, const char *version, const struct osbq_store *store,
                             osbq_store_error_count_fn error_count);

/* Adds osbq_redis_ack_timeouts_total to m (pm added by osbq_process_metrics_add): WAITs that
 * ended with fewer replicas than OSBQ_REDIS_MIN_ACKS, read at each render from
 * ack_timeout_count(store) (osbq_store_ack_timeout_count). Returns 0, or -1 when out of
 * memory. */
int osbq_process_metrics_add_ack_timeouts(struct osbq_process_metrics *pm, struct osbq_metrics *m,
                                          osbq_store_error_count_fn ack_timeout_count);

#endif
