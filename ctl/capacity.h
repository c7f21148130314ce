/* How many workers the load needs: the rule `osbq-ctl stats` applies to the statuses gateways
 * and workers publish in Redis, and the query of the Kubernetes ScaledObject
 * (deploy/kubernetes/components/keda) computes from their metrics (docs/decisions/0034).
 * No I/O. */
#ifndef OSBQ_CTL_CAPACITY_H
#define OSBQ_CTL_CAPACITY_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* The figures the rule reads, summed without counting anything twice: each gateway holds its
 * own queue of jobs (a job is queued in one gateway), each worker counts its own slots and
 * running jobs. The gateways' "free_slots" and "workers" are not read: every worker announces
 * its slots to every gateway, so their sum counts each worker once per gateway. */
struct capacity {
    int64_t queued;   /* jobs held in the gateways' dispatchers until a worker has a free slot */
    int64_t running;  /* jobs in the workers' slots, stopping workers' included */
    int64_t workers;  /* live workers */
    int64_t stopping; /* of those, workers that take no new job and finish what they run */
    int64_t sized;    /* live workers that publish their slots (above 0) */
    int64_t slots;    /* those workers' slots, summed */
};

/* The figures of the statuses (JSON arrays of objects as the processes publish them: a
 * gateway's "jobs_queued", a worker's "slots", "running" and "stopping"; a figure missing or
 * negative counts as 0, a missing "stopping" as false). Borrows both arrays; either may be
 * NULL. */
void capacity_from_statuses(const json_t *gateways, const json_t *workers, struct capacity *out);

/* The workers the load (queued + running) needs: ceil(load / slots per worker), a worker's
 * slots being the mean of the workers that publish theirs (stopping ones too: a stopping
 * worker has the size of the others). 0 without load. With load but no worker to size by,
 * 1 and *exact false: a lower bound (start one, then apply the rule again); else *exact is
 * true. */
int64_t capacity_workers_needed(const struct capacity *c, bool *exact);

#endif
