/* Operations in progress by tenant, for osbq-ctl stats: counted as they are read, then listed
 * the busiest first. No I/O here (unit-tested). */
#ifndef CTL_TENANT_WORK_H
#define CTL_TENANT_WORK_H

#include <stddef.h>
#include <stdint.h>

/* One tenant's operations in progress. */
struct tenant_work {
    char *tenant;    /* its key ("platform[/org[/space]]"); "" for operations that recorded none */
    int64_t queued;  /* waiting for a worker to claim them */
    int64_t running; /* a step of which a worker runs */
    int64_t waiting; /* waiting for their next step's due time */
};

/* Every tenant's counts, and the operations already counted. */
struct tenant_tally;

/* NULL when out of memory. */
struct tenant_tally *tenant_tally_new(void);

/* Frees it; sets *tp to NULL; accepts NULL. */
void tenant_tally_destroy(struct tenant_tally **tp);

/* Whether operation_id is counted here for the first time (a walk may meet an operation twice):
 * 1 the first time, 0 after, -1 when out of memory. */
int tenant_tally_first_sight(struct tenant_tally *t, const char *operation_id);

/* Adds operations of tenant (NULL or "": none recorded) to its counts. 0, or -1 when out of
 * memory. */
int tenant_tally_add(struct tenant_tally *t, const char *tenant, int64_t queued, int64_t running,
                     int64_t waiting);

/* The tenants counted, sorted by their total (queued + running + waiting), the largest first,
 * then by key; tenants whose counts are all 0 are left out. Call it once, after the last
 * tenant_tally_add. The array is t's; *n its length. */
const struct tenant_work *tenant_tally_sorted(struct tenant_tally *t, size_t *n);

/* A tenant's total. */
int64_t tenant_work_total(const struct tenant_work *w);

#endif
