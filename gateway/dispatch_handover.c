/* The hand-over (docs/decisions/0042-handover.md): a worker's free slot taken by an HTTP thread
 * before an operation's begin script runs, so that the script claims the operation for that
 * worker; given back when the operation is not begun; and the handed job sent to it by the
 * dispatcher's thread, in no lane. The slot is counted in the worker's `reserved` under the
 * dispatcher's lock from its taking to its sending (dispatch_internal.h says who takes the lock).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "dispatch_internal.h"
#include "log.h"
#include "owned.h"
#include "store.h"

static void handover_free(struct dispatch_handover **hp)
{
    if (*hp == NULL)
        return;
    zframe_destroy(&(*hp)->identity);
    free((*hp)->worker_id);
    free(*hp);
    *hp = NULL;
}

/* The slot h took is no longer taken for it: its job is being sent, or its operation was not
 * begun. Returns its worker, or NULL when that worker left. With d->lock held. */
static struct dispatch_worker *handover_settle_locked(struct dispatch *d,
                                                      const struct dispatch_handover *h)
{
    struct dispatch_worker *w = dispatch_workers_find(d->workers, h->identity);
    if (w != NULL && w->reserved > 0)
        w->reserved--;
    return w;
}

struct dispatch_handover *dispatch_handover_new_locked(struct dispatch *d,
                                                       struct dispatch_worker *w)
{
    struct dispatch_handover *h = calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    h->d = d;
    h->identity = zframe_dup(w->identity);
    h->worker_id = strdup(w->id);
    h->until_ms = osbq_store_now_ms() + (int64_t)w->handover_lease_ms;
    if (h->identity == NULL || h->worker_id == NULL) {
        handover_free(&h);
        return NULL;
    }
    w->reserved++;
    return h;
}

void dispatch_send_handed(struct dispatch *d, struct job_buf *job)
{
    struct dispatch_handover *h = job->handover;
    job->handover = NULL;
    /* The thread alone removes workers: w stays valid after the lock is let go. The slot goes
     * from taken for the hand-over to sent in one step. */
    pthread_mutex_lock(&d->lock);
    struct dispatch_worker *w = handover_settle_locked(d, h);
    if (w != NULL)
        dispatch_workers_count_sent(d->workers, w);
    pthread_mutex_unlock(&d->lock);
    struct leaving_job out;
    dispatch_job_leaving(d, job, &out);
    if (w == NULL) {
        log_info("operation %s: worker %s left before its handed job was sent; taken from it",
                 out.operation_id, h->worker_id);
        pthread_mutex_lock(&d->lock);
        if (d->listener.gone != NULL)
            d->listener.gone(d->listener.ctx, h->worker_id, out.operation_id, NULL);
        pthread_mutex_unlock(&d->lock);
        handover_free(&h);
        free(job);
        return;
    }
    int64_t until_ms = h->until_ms;
    handover_free(&h);
    if (osbq_bus_send_handed_job(d->router, w->identity, job->data, job->len, dispatch_job_release,
                                 job, until_ms, out.tenant) < 0) {
        dispatch_forget_worker(d, w, "unreachable", out.operation_id);
        free(job);
        return;
    }
    dispatch_job_running(d, &out, w);
}

struct dispatch_handover *dispatch_handover_take(struct dispatch *d)
{
    /* Jobs wait in the lanes: the next slot is theirs (fairness), not a new operation's. */
    if (d == NULL || atomic_load(&d->held) > 0)
        return NULL;
    pthread_mutex_lock(&d->lock);
    struct dispatch_worker *w = dispatch_workers_roomiest(d->workers, true);
    struct dispatch_handover *h = w != NULL ? dispatch_handover_new_locked(d, w) : NULL;
    pthread_mutex_unlock(&d->lock);
    return h;
}

const char *dispatch_handover_worker(const struct dispatch_handover *h)
{
    return h->worker_id;
}

int64_t dispatch_handover_until(const struct dispatch_handover *h)
{
    return h->until_ms;
}

void dispatch_handover_cancel(struct dispatch_handover **hp)
{
    OSBQ_OWNED_OR_RETURN(struct dispatch_handover, h, hp);
    struct dispatch *d = h->d;
    pthread_mutex_lock(&d->lock);
    (void)handover_settle_locked(d, h);
    pthread_mutex_unlock(&d->lock);
    handover_free(hp);
    /* Work waits for that slot (a request waiting for one took it, then did not begin): wake the
     * thread now rather than at its next tick. */
    if (atomic_load(&d->held) > 0 && !atomic_exchange(&d->wake_posted, true) &&
        !osbq_mailbox_post(&d->mailbox, &d->wake))
        atomic_store(&d->wake_posted, false);
}

int dispatch_submit_handed(struct dispatch *d, struct dispatch_handover **hp,
                           const char *operation_id, enum dispatch_lane lane,
                           const struct dispatch_owner *owner, const void *job, size_t len)
{
    /* Not counted in held: it waits for no slot, it has one. */
    struct job_buf *buf = dispatch_job_new(operation_id, lane, owner, job, len);
    if (buf == NULL) {
        dispatch_handover_cancel(hp);
        return -1;
    }
    buf->kind = JOB_HANDED;
    buf->handover = *hp;
    *hp = NULL;
    if (!osbq_mailbox_post(&d->mailbox, &buf->link)) {
        dispatch_handover_cancel(&buf->handover);
        free(buf);
        return -1;
    }
    return 0;
}
