/* Requests waiting for a worker's slot (docs/decisions/0045-wait-for-a-slot-first.md): a
 * synchronous request with no slot free waits in the dispatcher's waiting lane, as a JOB_SLOT_WAIT
 * item, until its turn takes a slot for it, its deadline passes, or the gateway stops
 * (dispatch_drain_slots); it is told how on the dispatcher's thread, under its lock. */
#include <stdatomic.h>

#include "clock.h"
#include "dispatch_internal.h"

void dispatch_slot_end_locked(struct dispatch *d, struct job_buf *buf,
                              struct dispatch_handover *slot, enum dispatch_slot_end end)
{
    if (buf->slot_handle != NULL)
        zlistx_delete(d->slot_waits, buf->slot_handle);
    buf->slot_handle = NULL;
    buf->slot_ended = true;
    buf->slot_fn(buf->slot_ctx, slot, end);
}

void dispatch_slot_taken_locked(struct dispatch *d)
{
    if (--d->slots_posted == 0)
        pthread_cond_broadcast(&d->slots_taken);
}

/* The turn of a request waiting for a slot, w the roomiest worker: a slot is taken for it, of w
 * or, when w takes no handed jobs, of the roomiest worker that does. Its wait counts as a job's
 * time queued. With d->lock held. */
void dispatch_slot_turn_locked(struct dispatch *d, struct job_buf *buf, struct dispatch_worker *w)
{
    if (buf->slot_ended)
        return;
    osbq_series_observe(dispatch_wait_series(d, buf->lane, buf->platform),
                        osbq_clock_seconds() - buf->queued_at);
    struct dispatch_worker *taker =
        w->handover_lease_ms > 0 ? w : dispatch_workers_roomiest(d->workers, true);
    struct dispatch_handover *slot = taker != NULL ? dispatch_handover_new_locked(d, taker) : NULL;
    dispatch_slot_end_locked(d, buf, slot, slot != NULL ? DISPATCH_SLOT_TAKEN : DISPATCH_SLOT_NONE);
}

void dispatch_expire_slot_waits(struct dispatch *d)
{
    int64_t now = osbq_clock_ms();
    pthread_mutex_lock(&d->lock);
    for (;;) {
        struct job_buf *late = NULL;
        for (struct job_buf *buf = zlistx_first(d->slot_waits); buf != NULL;
             buf = zlistx_next(d->slot_waits))
            if (buf->slot_deadline_ms <= now) {
                late = buf;
                break;
            }
        if (late == NULL)
            break;
        dispatch_slot_end_locked(d, late, NULL, DISPATCH_SLOT_NONE);
    }
    pthread_mutex_unlock(&d->lock);
}

int dispatch_wait_slot(struct dispatch *d, const char *operation_id, enum dispatch_lane lane,
                       const struct dispatch_owner *owner, int64_t deadline_ms, dispatch_slot_fn fn,
                       void *ctx)
{
    if (atomic_fetch_add(&d->held, 1) >= d->max_queued) {
        atomic_fetch_sub(&d->held, 1);
        return -1;
    }
    struct job_buf *buf = dispatch_job_new(operation_id, lane, owner, NULL, 0);
    if (buf == NULL) {
        atomic_fetch_sub(&d->held, 1);
        return -1;
    }
    buf->kind = JOB_SLOT_WAIT;
    buf->slot_fn = fn;
    buf->slot_ctx = ctx;
    buf->slot_deadline_ms = deadline_ms;
    /* Counted under the lock that dispatch_drain_slots closes them with: it then knows how many
     * it must see taken. */
    pthread_mutex_lock(&d->lock);
    bool closed = d->slots_closed;
    if (!closed)
        d->slots_posted++;
    pthread_mutex_unlock(&d->lock);
    if (closed) {
        dispatch_drop(d, buf);
        return -1;
    }
    if (!osbq_mailbox_post(&d->mailbox, &buf->link)) {
        pthread_mutex_lock(&d->lock);
        dispatch_slot_taken_locked(d);
        pthread_mutex_unlock(&d->lock);
        dispatch_drop(d, buf);
        return -1;
    }
    return 0;
}

void dispatch_drain_slots(struct dispatch *d)
{
    pthread_mutex_lock(&d->lock);
    d->slots_closed = true;
    struct job_buf *buf;
    while ((buf = zlistx_first(d->slot_waits)) != NULL)
        dispatch_slot_end_locked(d, buf, NULL, DISPATCH_SLOT_STOPPING);
    /* Those still in the mailbox are ended by the thread when it takes them, within a turn: it
     * tells them under the lock and says when the last is taken. */
    int64_t until = osbq_clock_ms() + 10 * DISPATCH_TICK_MS;
    while (d->slots_posted > 0 && osbq_clock_ms() < until)
        osbq_clock_wait_until(&d->slots_taken, &d->lock, until);
    pthread_mutex_unlock(&d->lock);
}
