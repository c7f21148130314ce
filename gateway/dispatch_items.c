/* The dispatcher's items (dispatch_internal.h): made, dropped, and on their way to a worker
 * (counted sent, their wait observed, counted running, freed by ZeroMQ); and a worker gone
 * forgotten. What dispatch.c, dispatch_handover.c and dispatch_slots.c share, calling nothing
 * of theirs. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dispatch_internal.h"
#include "log.h"

/* The wait histogram's series of one platform label, by lane. */
struct wait_series {
    struct osbq_series *lane[DISPATCH_LANES];
};

/* The label the dispatcher counts an owner's wait under. */
static const char *owner_platform(const char *platform)
{
    return platform != NULL && platform[0] != '\0' ? platform : TENANT_PLATFORM_UNKNOWN;
}

/* The wait histogram's series of lane and platform: found once per platform label, then kept
 * (the labels are few: tenant_platform_label). NULL without a histogram or memory. */
struct osbq_series *dispatch_wait_series(struct dispatch *d, enum dispatch_lane lane,
                                         const char *platform)
{
    if (d->waits == NULL)
        return NULL;
    struct wait_series *w = zhashx_lookup(d->wait_series, platform);
    if (w == NULL) {
        w = calloc(1, sizeof *w);
        if (w == NULL)
            return NULL;
        for (unsigned i = 0; i < DISPATCH_LANES; i++)
            w->lane[i] = osbq_metric_series(
                d->waits, OSBQ_LABELS(dispatch_lane_name((enum dispatch_lane)i), platform));
        if (zhashx_insert(d->wait_series, platform, w) != 0) {
            free(w);
            return NULL;
        }
    }
    return w->lane[lane];
}

void dispatch_forget_worker(struct dispatch *d, struct dispatch_worker *gone, const char *why,
                            const char *handed)
{
    char *ids = dispatch_running_end_worker(d->running, gone);
    if (handed != NULL) {
        size_t len = ids != NULL ? strlen(ids) : 0, size = len + strlen(handed) + 2;
        char *more = realloc(ids, size);
        if (more != NULL) {
            (void)snprintf(more + len, size - len, "%s%s", len > 0 ? " " : "", handed);
            ids = more;
        }
    }
    pthread_mutex_lock(&d->lock);
    bool found = dispatch_workers_unlink(d->workers, gone);
    /* Called under the lock, so dispatch_listen knows when it is no longer used. */
    if (found && d->listener.gone != NULL)
        d->listener.gone(d->listener.ctx, gone->id, ids, why);
    pthread_mutex_unlock(&d->lock);
    if (found) {
        log_info("worker %s %s, forgetting it%s", gone->id, why,
                 ids != NULL ? "; its steps run elsewhere now" : "");
        dispatch_worker_free(&gone);
    }
    free(ids);
}

struct job_buf *dispatch_job_new(const char *operation_id, enum dispatch_lane lane,
                                 const struct dispatch_owner *owner, const void *job, size_t len)
{
    struct job_buf *buf = malloc(sizeof *buf + len);
    if (buf == NULL)
        return NULL;
    (void)snprintf(buf->operation_id, sizeof buf->operation_id, "%s", operation_id);
    (void)snprintf(buf->tenant, sizeof buf->tenant, "%s", owner->tenant ? owner->tenant : "");
    buf->weight = owner->weight;
    (void)snprintf(buf->platform, sizeof buf->platform, "%s", owner_platform(owner->platform));
    buf->lane = lane;
    buf->queued_at = osbq_clock_seconds();
    buf->kind = JOB_QUEUED;
    buf->handover = NULL;
    buf->slot_fn = NULL;
    buf->slot_ctx = NULL;
    buf->slot_deadline_ms = 0;
    buf->slot_handle = NULL;
    buf->slot_ended = false;
    buf->len = len;
    if (len > 0)
        memcpy(buf->data, job, len);
    return buf;
}

void dispatch_drop(struct dispatch *d, struct job_buf *buf)
{
    atomic_fetch_sub(&d->held, 1);
    free(buf);
}

void dispatch_job_release(void *data, void *owner)
{
    (void)data;
    free(owner);
}

void dispatch_job_leaving(struct dispatch *d, const struct job_buf *job, struct leaving_job *out)
{
    osbq_series_observe(dispatch_wait_series(d, job->lane, job->platform),
                        osbq_clock_seconds() - job->queued_at);
    memcpy(out->operation_id, job->operation_id, sizeof out->operation_id);
    memcpy(out->tenant, job->tenant, sizeof out->tenant);
    memcpy(out->platform, job->platform, sizeof out->platform);
    out->weight = job->weight;
}

void dispatch_job_running(struct dispatch *d, const struct leaving_job *out,
                          const struct dispatch_worker *w)
{
    const struct dispatch_owner owner = {out->tenant, out->weight, out->platform};
    dispatch_running_add(d->running, out->operation_id, &owner, w);
}
