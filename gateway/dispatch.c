/* The dispatcher: owns the ROUTER socket, learns the workers' free slots from their READY
 * messages, and sends queued jobs, taken from the lanes in turn (dispatch_lanes.h), to the
 * worker with the most room, the one sent to longest ago among equals. Jobs reach it through
 * its mailbox (common/mailbox.h). */
#include "dispatch.h"
#include "dispatch_halts.h"
#include "dispatch_monitor.h"
#include "dispatch_running.h"
#include "dispatch_workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus.h"
#include "clock.h"
#include "job.h"
#include "log.h"
#include "mailbox.h"
#include "store.h"
#include "tenant.h"

/* How long the thread sleeps when nothing happens: it still forgets silent workers on time. */
#define DISPATCH_TICK_MS 100

/* Messages read from the workers per wake-up at most (the rest on the next turn). */
#define DISPATCH_READ_BATCH 1024

/* A slot taken for a hand-over (dispatch_handover_take). */
struct dispatch_handover {
    struct dispatch *d; /* whose worker table counts it (dispatch_worker.reserved) */
    zframe_t *identity; /* the worker's ROUTER identity (a copy) */
    char *worker_id;    /* its own id (a copy) */
    int64_t until_ms;   /* the hand-over's lease end, epoch ms */
};

/* One queued job, or a request waiting for a slot (dispatch_wait_slot: slot_fn set, no job). */
struct job_buf {
    struct osbq_mailbox_link link;             /* in the mailbox, until the thread takes it */
    char operation_id[65];                     /* its operation: the key of the queued set */
    enum dispatch_lane lane;                   /* where it waits */
    char tenant[TENANT_KEY_MAX];               /* whose it is: its queue in the lane */
    unsigned weight;                           /* its tenant's weight */
    char platform[OSBQ_PLATFORM_NAME_MAX + 1]; /* its wait's platform label */
    double queued_at;                          /* when it was submitted (osbq_clock_seconds) */
    struct dispatch_handover *handover; /* a handed job's worker (sent there, in no lane); NULL:
                                         * a plain job */
    dispatch_slot_fn slot_fn;           /* a request waiting for a slot: told how its wait
                                         * ended; NULL for a job */
    void *slot_ctx;                     /* slot_fn's */
    int64_t slot_deadline_ms;           /* its wait ends then at the latest (osbq_clock_ms) */
    void *slot_handle;                  /* its entry in d->slot_waits; NULL once it ended */
    bool slot_ended;                    /* slot_fn was called: dropped when its turn comes */
    size_t len;                         /* bytes in data */
    char data[];                        /* the encoded job */
};

/* zhashx's destructor of values malloc'd here. */
static void free_value(void **item)
{
    free(*item);
    *item = NULL;
}

/* The wait histogram's series of one platform label, by lane. */
struct wait_series {
    struct osbq_series *lane[DISPATCH_LANES];
};

struct dispatch {
    zsock_t *router;                  /* owned by the thread */
    struct osbq_mailbox mailbox;      /* jobs submitted, not in the lanes yet; closed: stop */
    atomic_uint held;                 /* jobs in the mailbox or the lanes: what max_queued bounds */
    unsigned max_queued;              /* bound of held */
    pthread_mutex_t lock;             /* guards queue (scrapes read it), stats and listener */
    struct dispatch_lanes *queue;     /* struct job_buf *, by lane; written by the thread only */
    zhashx_t *queued;                 /* operation ids of the jobs in queue (values unused) */
    struct dispatch_stats stats;      /* copy for dispatch_get_stats */
    pthread_cond_t stats_published;   /* broadcast with each new copy (dispatch_wait_stats) */
    pthread_t thread;                 /* the dispatcher thread */
    struct dispatch_workers *workers; /* workers added and removed by the thread only, read and
                                       * their counts changed with lock held (hand-overs are
                                       * taken from other threads) */
    struct osbq_metric *waits;        /* borrowed: time queued, by lane and platform; may be NULL */
    zhashx_t *wait_series;            /* platform label -> struct wait_series *; thread-only */
    struct dispatch_listener listener; /* who hears due times and workers gone; guarded by
                                        * lock */
    struct dispatch_monitor *monitor;  /* the ends of the workers' connections; NULL: not
                                        * watched (silence only); thread-only */
    struct dispatch_running *running;  /* the jobs the workers run for us; thread-only */
    zlistx_t *slot_waits;       /* struct job_buf * of the requests waiting for a slot in the lanes,
                                 * oldest first (their deadlines, dispatch_drain_slots); guarded by
                                 * lock */
    bool slots_closed;          /* dispatch_drain_slots was called; guarded by lock */
    unsigned slots_posted;      /* slot waits in the mailbox, not taken by the thread yet; guarded
                                 * by lock */
    pthread_cond_t slots_taken; /* broadcast by the thread when slots_posted falls to 0 */
    struct osbq_mailbox_link wake; /* posted alone to wake the thread: a slot was given back */
    atomic_bool wake_posted;       /* wake is in the mailbox */
    struct dispatch_halts halts;   /* HALTs to send (dispatch_halt) */
};

/* The label the dispatcher counts an owner's wait under. */
static const char *owner_platform(const char *platform)
{
    return platform != NULL && platform[0] != '\0' ? platform : TENANT_PLATFORM_UNKNOWN;
}

/* The wait histogram's series of lane and platform: found once per platform label, then kept
 * (the labels are few: tenant_platform_label). NULL without a histogram or memory. */
static struct osbq_series *wait_series_of(struct dispatch *d, enum dispatch_lane lane,
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

/* The worker gone went (why: dispatch_listener.gone's): forgotten, and the jobs sent to it that
 * it did not end, with handed (a handed job's operation that was not sent: NULL when none), go
 * to the listener, which takes them from it in Redis at once rather than when their leases run
 * out (docs/decisions/0052). */
static void worker_gone(struct dispatch *d, struct dispatch_worker *gone, const char *why,
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

/* Takes one of w's free slots for a hand-over (w takes handed jobs and has room); NULL when
 * memory ran out. With d->lock held. */
static struct dispatch_handover *handover_new_locked(struct dispatch *d, struct dispatch_worker *w)
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

static struct job_buf *job_buf_new(const char *operation_id, enum dispatch_lane lane,
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

/* Frees a job counted in held (its operation is in Redis: recovery resends it if need be). */
static void drop(struct dispatch *d, struct job_buf *buf)
{
    atomic_fetch_sub(&d->held, 1);
    free(buf);
}

/* Ends the wait of the request buf stands for, not ended yet: slot_fn is told (slot: the slot
 * taken for it, or NULL), and its deadline no longer watched. buf stays in its lane until its
 * turn, then is dropped. With d->lock held. */
static void slot_end_locked(struct dispatch *d, struct job_buf *buf, struct dispatch_handover *slot,
                            enum dispatch_slot_end end)
{
    if (buf->slot_handle != NULL)
        zlistx_delete(d->slot_waits, buf->slot_handle);
    buf->slot_handle = NULL;
    buf->slot_ended = true;
    buf->slot_fn(buf->slot_ctx, slot, end);
}

/* Queues buf, counted in held, at the head (a job handed back) or the tail of its lane, unless
 * its operation is queued already; takes buf. A request waiting for a slot is watched for its
 * deadline, or told at once that it gets none when it cannot wait. On the dispatcher's thread,
 * with d->lock held. */
static void enqueue_locked(struct dispatch *d, struct job_buf *buf, bool front)
{
    /* A request's wait is not in queued: its operation's job, should the wait end before its
     * turn (a deadline), is queued while the wait's entry is still in the lane. */
    if (buf->slot_fn == NULL && zhashx_lookup(d->queued, buf->operation_id) != NULL) {
        drop(d, buf);
        return;
    }
    if (dispatch_lanes_push(d->queue, buf->lane, buf->tenant, buf->weight, buf, front) < 0) {
        log_warnx("out of memory: dropping a job; recovery resends it from Redis");
        if (buf->slot_fn != NULL)
            slot_end_locked(d, buf, NULL, DISPATCH_SLOT_NONE);
        drop(d, buf);
        return;
    }
    if (buf->slot_fn == NULL)
        zhashx_insert(d->queued, buf->operation_id, d);
    else if ((buf->slot_handle = zlistx_add_end(d->slot_waits, buf)) == NULL)
        slot_end_locked(d, buf, NULL, DISPATCH_SLOT_NONE); /* out of memory: it cannot wait */
}

/* A slot wait posted to the mailbox was taken (or never reached it): the last one taken wakes
 * dispatch_drain_slots. Lock held. */
static void slot_taken_locked(struct dispatch *d)
{
    if (--d->slots_posted == 0)
        pthread_cond_broadcast(&d->slots_taken);
}

static void send_handed(struct dispatch *d, struct job_buf *job);

/* Moves the jobs submitted since the last turn into their lanes, oldest first. Returns true
 * once the mailbox is closed (dispatch_stop): nothing comes after these. */
static bool take_submitted(struct dispatch *d)
{
    bool closed = false;
    struct osbq_mailbox_link *link = osbq_mailbox_take(&d->mailbox, &closed);
    struct osbq_mailbox_link *handed = NULL, **handed_end = &handed;
    pthread_mutex_lock(&d->lock);
    while (link != NULL) {
        if (link == &d->wake) {
            /* Nothing to queue: the turn below sends to the slot given back. */
            link = link->next;
            atomic_store(&d->wake_posted, false);
            continue;
        }
        struct job_buf *buf =
            (struct job_buf *)(void *)((char *)link - offsetof(struct job_buf, link));
        link = link->next;
        if (buf->handover != NULL) {
            /* Sent below, in the order submitted, once the lock is free. */
            buf->link.next = NULL;
            *handed_end = &buf->link;
            handed_end = &buf->link.next;
        } else if (buf->slot_fn != NULL && d->slots_closed) {
            slot_taken_locked(d);
            slot_end_locked(d, buf, NULL, DISPATCH_SLOT_STOPPING);
            drop(d, buf);
        } else {
            if (buf->slot_fn != NULL)
                slot_taken_locked(d);
            enqueue_locked(d, buf, false);
        }
    }
    pthread_mutex_unlock(&d->lock);
    while (handed != NULL) {
        struct job_buf *buf =
            (struct job_buf *)(void *)((char *)handed - offsetof(struct job_buf, link));
        handed = handed->next;
        send_handed(d, buf);
    }
    return closed;
}

/* Puts a job back at the head of its tenant's queue in its lane (a worker handed it back, or
 * could not take it), unless the queue is full. */
static void requeue_front(struct dispatch *d, const char *operation_id, enum dispatch_lane lane,
                          const struct dispatch_owner *owner, const void *job, size_t len)
{
    if (atomic_fetch_add(&d->held, 1) >= d->max_queued) {
        atomic_fetch_sub(&d->held, 1);
        return;
    }
    struct job_buf *buf = job_buf_new(operation_id, lane, owner, job, len);
    if (buf == NULL) {
        atomic_fetch_sub(&d->held, 1);
        log_warnx("out of memory: dropping a job; recovery resends it from Redis");
        return;
    }
    pthread_mutex_lock(&d->lock);
    enqueue_locked(d, buf, true);
    pthread_mutex_unlock(&d->lock);
}

/* A worker's READY: it is alive, and has this many free slots less the jobs on their way to it;
 * the jobs it lists ended; the due time it carries goes to the recovery loop. */
static void on_ready(struct dispatch *d, struct osbq_bus_msg *m)
{
    const struct osbq_bus_ready_received *ready = &m->ready;
    pthread_mutex_lock(&d->lock);
    struct dispatch_worker *w = dispatch_workers_find(d->workers, m->identity);
    if (w == NULL &&
        (w = dispatch_workers_add(d->workers, &m->identity, &m->ready.worker_id)) != NULL)
        log_info("worker %s connected (%u free slots)", w->id, ready->free_slots);
    if (w != NULL) {
        dispatch_worker_heard(w, ready, osbq_clock_ms());
        if (m->source_fd >= 0)
            w->fd = m->source_fd;
    }
    pthread_mutex_unlock(&d->lock);
    dispatch_running_end_listed(d->running, m->ready.ended);
    if (ready->due_ms > 0) {
        /* Called under the lock, so dispatch_listen knows when it is no longer used. */
        pthread_mutex_lock(&d->lock);
        if (d->listener.due != NULL)
            d->listener.due(d->listener.ctx, ready->due_ms);
        pthread_mutex_unlock(&d->lock);
    }
}

/* A worker's REJECT: it has no free slot after all, and the job it hands back goes first in
 * the new lane again. */
static void on_reject(struct dispatch *d, const struct osbq_bus_msg *m)
{
    pthread_mutex_lock(&d->lock);
    struct dispatch_worker *w = dispatch_workers_find(d->workers, m->identity);
    if (w != NULL) {
        dispatch_worker_full(w, osbq_clock_ms());
        if (m->source_fd >= 0)
            w->fd = m->source_fd;
    }
    pthread_mutex_unlock(&d->lock);
    /* The frame holds the job only: its operation id is inside, its lane is not. The head of
     * the new lane: it goes before the burst of new work it may belong to, and after at most
     * one job of each other lane. */
    struct osbq_job decoded = {0};
    if (m->job != NULL && osbq_job_decode((const char *)zframe_data(m->job), zframe_size(m->job),
                                          &decoded, NULL, 0) == 0) {
        /* Its owner is known while it counts as running here. */
        const struct dispatch_running_job *sent =
            dispatch_running_find(d->running, decoded.operation_id);
        char tenant[TENANT_KEY_MAX] = "", platform[OSBQ_PLATFORM_NAME_MAX + 1] = "";
        unsigned weight = sent != NULL ? sent->weight : 1;
        if (sent != NULL) {
            memcpy(tenant, sent->tenant, sizeof tenant);
            memcpy(platform, sent->platform, sizeof platform);
        }
        dispatch_running_end(d->running, decoded.operation_id);
        const struct dispatch_owner owner = {tenant, weight, platform};
        requeue_front(d, decoded.operation_id, DISPATCH_LANE_NEW, &owner, zframe_data(m->job),
                      zframe_size(m->job));
    }
    osbq_job_clear(&decoded);
}

/* Reads and handles one message; false when none is waiting (the ROUTER's receive timeout
 * is 0, so this never blocks). */
static bool handle_message(struct dispatch *d)
{
    struct osbq_bus_msg m;
    if (osbq_bus_recv(d->router, OSBQ_BUS_AT_GATEWAY, &m) < 0)
        return false;
    char command[17]; /* for a log line */
    switch (m.kind) {
    case OSBQ_BUS_MSG_READY:
        on_ready(d, &m);
        break;
    case OSBQ_BUS_MSG_REJECT:
        on_reject(d, &m);
        break;
    case OSBQ_BUS_MSG_MALFORMED:
        osbq_bus_msg_command(&m, command, sizeof command);
        log_warnx("ignoring a malformed %s message", command);
        break;
    case OSBQ_BUS_MSG_JOB: /* gateways' commands: unknown coming from a worker */
    case OSBQ_BUS_MSG_HALT:
    case OSBQ_BUS_MSG_UNKNOWN:
        /* A message without even a command word has nothing to say. */
        if (m.command == NULL)
            break;
        osbq_bus_msg_command(&m, command, sizeof command);
        log_warnx("ignoring unknown bus command \"%s\"", command);
        break;
    }
    osbq_bus_msg_clear(&m);
    return true;
}

/* ZeroMQ's free function for a job sent without a copy (called from its I/O thread). */
static void job_buf_release(void *data, void *owner)
{
    (void)data;
    free(owner);
}

/* A job about to be sent to w: one of its free slots is on its way, to be counted by its next
 * READY. Counted with the lock held since the slot was found (or its hand-over settled), before
 * the send: a hand-over taken from another thread in between would find the slot free. */
static void count_sent_locked(struct dispatch *d, struct dispatch_worker *w)
{
    dispatch_workers_count_sent(d->workers, w);
}

/* What counting a job as running needs of it, copied before it is sent: ZeroMQ may free it as
 * soon as it is. */
struct leaving_job {
    char operation_id[sizeof((struct job_buf *)0)->operation_id];
    char tenant[TENANT_KEY_MAX];
    char platform[OSBQ_PLATFORM_NAME_MAX + 1];
    unsigned weight;
};

/* A job leaves for a worker: its wait is counted under its lane and platform, and what counting
 * it as running needs is copied into out. */
static void job_leaving(struct dispatch *d, const struct job_buf *job, struct leaving_job *out)
{
    osbq_series_observe(wait_series_of(d, job->lane, job->platform),
                        osbq_clock_seconds() - job->queued_at);
    memcpy(out->operation_id, job->operation_id, sizeof out->operation_id);
    memcpy(out->tenant, job->tenant, sizeof out->tenant);
    memcpy(out->platform, job->platform, sizeof out->platform);
    out->weight = job->weight;
}

/* The job out describes runs on w from now on, for its owner. */
static void running_add(struct dispatch *d, const struct leaving_job *out,
                        const struct dispatch_worker *w)
{
    const struct dispatch_owner owner = {out->tenant, out->weight, out->platform};
    dispatch_running_add(d->running, out->operation_id, &owner, w);
}

/* Sends a handed job to the worker its operation was handed to, whose slot it took. */
static void send_handed(struct dispatch *d, struct job_buf *job)
{
    struct dispatch_handover *h = job->handover;
    job->handover = NULL;
    /* The thread alone removes workers: w stays valid after the lock is let go. The slot goes
     * from taken for the hand-over to sent in one step. */
    pthread_mutex_lock(&d->lock);
    struct dispatch_worker *w = handover_settle_locked(d, h);
    if (w != NULL)
        count_sent_locked(d, w);
    pthread_mutex_unlock(&d->lock);
    struct leaving_job out;
    job_leaving(d, job, &out);
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
    if (osbq_bus_send_handed_job(d->router, w->identity, job->data, job->len, job_buf_release, job,
                                 until_ms, out.tenant) < 0) {
        worker_gone(d, w, "unreachable", out.operation_id);
        free(job);
        return;
    }
    running_add(d, &out, w);
}

/* The turn of a request waiting for a slot, w the roomiest worker: a slot is taken for it, of w
 * or, when w takes no handed jobs, of the roomiest worker that does. Its wait counts as a job's
 * time queued. With d->lock held. */
static void slot_turn_locked(struct dispatch *d, struct job_buf *buf, struct dispatch_worker *w)
{
    if (buf->slot_ended)
        return;
    osbq_series_observe(wait_series_of(d, buf->lane, buf->platform),
                        osbq_clock_seconds() - buf->queued_at);
    struct dispatch_worker *taker =
        w->handover_lease_ms > 0 ? w : dispatch_workers_roomiest(d->workers, true);
    struct dispatch_handover *slot = taker != NULL ? handover_new_locked(d, taker) : NULL;
    slot_end_locked(d, buf, slot, slot != NULL ? DISPATCH_SLOT_TAKEN : DISPATCH_SLOT_NONE);
}

static void send_queued(struct dispatch *d)
{
    for (;;) {
        const struct dispatch_load load = {dispatch_running_load, d->running};
        pthread_mutex_lock(&d->lock);
        struct dispatch_worker *w = dispatch_workers_roomiest(d->workers, false);
        struct job_buf *job = w != NULL ? dispatch_lanes_pop(d->queue, NULL, &load) : NULL;
        if (job != NULL && job->slot_fn != NULL) {
            slot_turn_locked(d, job, w);
        } else if (job != NULL) {
            zhashx_delete(d->queued, job->operation_id);
            count_sent_locked(d, w);
        }
        pthread_mutex_unlock(&d->lock);
        if (job == NULL)
            return;
        atomic_fetch_sub(&d->held, 1);
        if (job->slot_fn != NULL) {
            free(job);
            continue;
        }
        struct leaving_job out;
        job_leaving(d, job, &out);
        /* Zero copy: ZeroMQ frees the buffer once it has written it. */
        if (osbq_bus_send_job(d->router, w->identity, job->data, job->len, job_buf_release, job) <
            0) {
            /* ROUTER_MANDATORY: the worker is gone. Keep the job for another one. */
            const struct dispatch_owner owner = {job->tenant, job->weight, job->platform};
            requeue_front(d, job->operation_id, job->lane, &owner, job->data, job->len);
            worker_gone(d, w, "unreachable", NULL);
            free(job);
        } else {
            running_add(d, &out, w);
        }
    }
}

/* The workers whose connections ended (dispatch_monitor.h) are gone. */
static void forget_ended(struct dispatch *d)
{
    if (d->monitor == NULL)
        return;
    int fd;
    while ((fd = dispatch_monitor_next_end(d->monitor)) >= 0) {
        pthread_mutex_lock(&d->lock);
        struct dispatch_worker *ended = dispatch_workers_on_fd(d->workers, fd);
        pthread_mutex_unlock(&d->lock);
        /* Not a worker's: a connection that never said READY (a failed handshake). */
        if (ended != NULL)
            worker_gone(d, ended, "disconnected", NULL);
    }
}

static void expire_workers(struct dispatch *d)
{
    int64_t limit = osbq_clock_ms() - OSBQ_BUS_WORKER_EXPIRY_MS;
    for (;;) {
        pthread_mutex_lock(&d->lock);
        struct dispatch_worker *silent = dispatch_workers_silent(d->workers, limit);
        pthread_mutex_unlock(&d->lock);
        if (silent == NULL)
            return;
        worker_gone(d, silent, "silent", NULL);
    }
}

/* Ends the waits for a slot whose deadline passed: they begin plain (DISPATCH_SLOT_NONE). */
static void expire_slot_waits(struct dispatch *d)
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
        slot_end_locked(d, late, NULL, DISPATCH_SLOT_NONE);
    }
    pthread_mutex_unlock(&d->lock);
}

static void publish_stats(struct dispatch *d)
{
    struct dispatch_stats s = {0};
    pthread_mutex_lock(&d->lock);
    dispatch_workers_totals(d->workers, &s.workers, &s.free_slots);
    s.queued = dispatch_lanes_total(d->queue);
    s.queued_due = dispatch_lanes_size(d->queue, DISPATCH_LANE_DUE);
    for (unsigned lane = 0; lane < DISPATCH_LANES; lane++)
        s.tenants_waiting += dispatch_lanes_tenants(d->queue, (enum dispatch_lane)lane);
    d->stats = s;
    pthread_cond_broadcast(&d->stats_published);
    pthread_mutex_unlock(&d->lock);
}

static void *dispatch_thread(void *arg)
{
    struct dispatch *d = arg;
    zmq_pollitem_t items[4] = {
        {.socket = zsock_resolve(d->router), .events = ZMQ_POLLIN},
        {.fd = osbq_mailbox_fd(&d->mailbox), .events = ZMQ_POLLIN},
        {.fd = dispatch_halts_fd(&d->halts), .events = ZMQ_POLLIN},
        {.socket = d->monitor != NULL ? dispatch_monitor_socket(d->monitor) : NULL,
         .events = ZMQ_POLLIN},
    };
    int polled = d->monitor != NULL ? 4 : 3;
    int64_t next_expiry = osbq_clock_ms() + 500;
    int64_t next_slot_check = osbq_clock_ms() + DISPATCH_TICK_MS;
    /* Closed: this turn is the last. */
    bool closed = false;
    while (!closed) {
        int rc = zmq_poll(items, polled, DISPATCH_TICK_MS);
        if (rc < 0 && zmq_errno() != EINTR) {
            log_warnx("zmq_poll: %s", zmq_strerror(zmq_errno()));
            continue;
        }
        if (items[1].revents & ZMQ_POLLIN)
            closed = take_submitted(d);
        if (items[2].revents & ZMQ_POLLIN)
            dispatch_halts_send(&d->halts, d->router, d->workers);
        /* Read everything pending so the credits are current before sending. Non-blocking
         * receives until none is left: asking ZMQ_EVENTS before each one costs a poll(2)
         * and a getpid(2) per message. Bounded so sending is never starved. */
        if (items[0].revents & ZMQ_POLLIN || items[3].revents & ZMQ_POLLIN) {
            /* Ends first: a message on a descriptor reused after an end came after it. */
            forget_ended(d);
            for (int i = 0; i < DISPATCH_READ_BATCH && handle_message(d); i++)
                ;
        }
        if (osbq_clock_ms() >= next_expiry) {
            expire_workers(d);
            next_expiry = osbq_clock_ms() + 500;
        }
        if (osbq_clock_ms() >= next_slot_check) {
            expire_slot_waits(d);
            next_slot_check = osbq_clock_ms() + DISPATCH_TICK_MS;
        }
        send_queued(d);
        publish_stats(d);
    }
    return NULL;
}

/* Frees d with its tables and mailbox (any of them may be missing: a start that failed), and
 * the jobs and workers left in them. Its router and lock are the caller's to close. */
static void dispatch_free(struct dispatch *d)
{
    struct job_buf *job;
    while (d->queue != NULL && (job = dispatch_lanes_pop(d->queue, NULL, NULL)) != NULL) {
        /* Stopped without dispatch_drain_slots: no request stays suspended. */
        if (job->slot_fn != NULL && !job->slot_ended)
            job->slot_fn(job->slot_ctx, NULL, DISPATCH_SLOT_STOPPING);
        free(job);
    }
    zlistx_destroy(&d->slot_waits);
    dispatch_lanes_destroy(&d->queue);
    zhashx_destroy(&d->queued);
    dispatch_workers_destroy(&d->workers);
    dispatch_running_destroy(&d->running);
    zhashx_destroy(&d->wait_series);
    osbq_mailbox_clear(&d->mailbox);
    dispatch_halts_clear(&d->halts);
    free(d);
}

struct dispatch *dispatch_start(zsock_t **routerp, unsigned max_queued, struct osbq_metric *waits,
                                struct osbq_error *err)
{
    struct dispatch *d = calloc(1, sizeof *d);
    if (d == NULL)
        goto out_fail;
    d->waits = waits;
    d->mailbox.fd = -1;
    d->halts.mailbox.fd = -1;
    atomic_init(&d->held, 0);
    d->queue = dispatch_lanes_new();
    d->queued = zhashx_new();
    d->workers = dispatch_workers_new();
    d->running = dispatch_running_new();
    d->wait_series = zhashx_new();
    d->slot_waits = zlistx_new();
    atomic_init(&d->wake_posted, false);
    if (d->wait_series != NULL)
        zhashx_set_destructor(d->wait_series, free_value);
    d->max_queued = max_queued;
    if (d->queue == NULL || d->queued == NULL || d->workers == NULL || d->running == NULL ||
        d->wait_series == NULL || d->slot_waits == NULL ||
        osbq_mailbox_init(&d->mailbox, NULL) < 0 || dispatch_halts_init(&d->halts) < 0)
        goto out_free;
    if (pthread_mutex_init(&d->lock, NULL) != 0)
        goto out_free;
    if (osbq_clock_cond_init(&d->slots_taken) != 0) {
        pthread_mutex_destroy(&d->lock);
        goto out_free;
    }
    if (osbq_clock_cond_init(&d->stats_published) != 0) {
        pthread_cond_destroy(&d->slots_taken);
        pthread_mutex_destroy(&d->lock);
        goto out_free;
    }
    d->router = *routerp;
    /* A send to a worker that vanished must fail, not vanish silently. */
    zsock_set_router_mandatory(d->router, 1);
    /* Receives never block: the thread waits in zmq_poll only. */
    zsock_set_rcvtimeo(d->router, 0);
    d->monitor = dispatch_monitor_start(d->router);
    if (pthread_create(&d->thread, NULL, dispatch_thread, d) != 0) {
        dispatch_monitor_stop(&d->monitor, d->router);
        pthread_cond_destroy(&d->stats_published);
        pthread_cond_destroy(&d->slots_taken);
        pthread_mutex_destroy(&d->lock);
        goto out_free;
    }
    *routerp = NULL;
    return d;
out_free:
    dispatch_free(d);
out_fail:
    osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start the dispatcher");
    return NULL;
}

int dispatch_submit(struct dispatch *d, const char *operation_id, enum dispatch_lane lane,
                    const struct dispatch_owner *owner, const void *job, size_t len)
{
    /* Counted before it is posted, so the bound holds however many threads submit at once.
     * The thread drops a job whose operation is queued already when it takes it. */
    if (atomic_fetch_add(&d->held, 1) >= d->max_queued) {
        atomic_fetch_sub(&d->held, 1);
        return -1;
    }
    struct job_buf *buf = job_buf_new(operation_id, lane, owner, job, len);
    if (buf == NULL) {
        atomic_fetch_sub(&d->held, 1);
        return -1;
    }
    /* One wake-up carries every job posted before the thread takes them. Closed: stopping. */
    if (!osbq_mailbox_post(&d->mailbox, &buf->link)) {
        drop(d, buf);
        return -1;
    }
    return 0;
}

struct dispatch_handover *dispatch_handover_take(struct dispatch *d)
{
    /* Jobs wait in the lanes: the next slot is theirs (fairness), not a new operation's. */
    if (d == NULL || atomic_load(&d->held) > 0)
        return NULL;
    pthread_mutex_lock(&d->lock);
    struct dispatch_worker *w = dispatch_workers_roomiest(d->workers, true);
    struct dispatch_handover *h = w != NULL ? handover_new_locked(d, w) : NULL;
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
    if (hp == NULL || *hp == NULL)
        return;
    struct dispatch *d = (*hp)->d;
    pthread_mutex_lock(&d->lock);
    (void)handover_settle_locked(d, *hp);
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
    struct job_buf *buf = job_buf_new(operation_id, lane, owner, job, len);
    if (buf == NULL) {
        dispatch_handover_cancel(hp);
        return -1;
    }
    buf->handover = *hp;
    *hp = NULL;
    if (!osbq_mailbox_post(&d->mailbox, &buf->link)) {
        dispatch_handover_cancel(&buf->handover);
        free(buf);
        return -1;
    }
    return 0;
}

int dispatch_wait_slot(struct dispatch *d, const char *operation_id, enum dispatch_lane lane,
                       const struct dispatch_owner *owner, int64_t deadline_ms, dispatch_slot_fn fn,
                       void *ctx)
{
    if (atomic_fetch_add(&d->held, 1) >= d->max_queued) {
        atomic_fetch_sub(&d->held, 1);
        return -1;
    }
    struct job_buf *buf = job_buf_new(operation_id, lane, owner, NULL, 0);
    if (buf == NULL) {
        atomic_fetch_sub(&d->held, 1);
        return -1;
    }
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
        drop(d, buf);
        return -1;
    }
    if (!osbq_mailbox_post(&d->mailbox, &buf->link)) {
        pthread_mutex_lock(&d->lock);
        slot_taken_locked(d);
        pthread_mutex_unlock(&d->lock);
        drop(d, buf);
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
        slot_end_locked(d, buf, NULL, DISPATCH_SLOT_STOPPING);
    /* Those still in the mailbox are ended by the thread when it takes them, within a turn: it
     * tells them under the lock and says when the last is taken. */
    int64_t until = osbq_clock_ms() + 10 * DISPATCH_TICK_MS;
    while (d->slots_posted > 0 && osbq_clock_ms() < until)
        osbq_clock_wait_until(&d->slots_taken, &d->lock, until);
    pthread_mutex_unlock(&d->lock);
}

void dispatch_listen(struct dispatch *d, const struct dispatch_listener *listener)
{
    pthread_mutex_lock(&d->lock);
    d->listener = listener != NULL ? *listener : (struct dispatch_listener){0};
    pthread_mutex_unlock(&d->lock);
}

static bool waited_longer(const void *a, const void *b)
{
    return ((const struct job_buf *)a)->queued_at < ((const struct job_buf *)b)->queued_at;
}

double dispatch_longest_wait(struct dispatch *d, enum dispatch_lane lane)
{
    pthread_mutex_lock(&d->lock);
    const struct job_buf *oldest = dispatch_lanes_oldest(d->queue, lane, waited_longer);
    double seconds = oldest != NULL ? osbq_clock_seconds() - oldest->queued_at : 0;
    pthread_mutex_unlock(&d->lock);
    return seconds;
}

int dispatch_halt(struct dispatch *d, const char *worker_id, const char *operation_id)
{
    return dispatch_halts_post(&d->halts, worker_id, operation_id);
}

void dispatch_get_stats(struct dispatch *d, struct dispatch_stats *out)
{
    pthread_mutex_lock(&d->lock);
    *out = d->stats;
    pthread_mutex_unlock(&d->lock);
}

bool dispatch_wait_stats(struct dispatch *d, bool (*enough)(const struct dispatch_stats *stats),
                         int64_t deadline_ms)
{
    pthread_mutex_lock(&d->lock);
    bool met;
    while (!(met = enough(&d->stats)) && osbq_clock_ms() < deadline_ms)
        osbq_clock_wait_until(&d->stats_published, &d->lock, deadline_ms);
    pthread_mutex_unlock(&d->lock);
    return met;
}

void dispatch_stop(struct dispatch **dp)
{
    struct dispatch *d = dp ? *dp : NULL;
    if (d == NULL)
        return;
    osbq_mailbox_close(&d->mailbox);
    pthread_join(d->thread, NULL);
    dispatch_monitor_stop(&d->monitor, d->router);
    zsock_destroy(&d->router);
    pthread_cond_destroy(&d->stats_published);
    pthread_cond_destroy(&d->slots_taken);
    pthread_mutex_destroy(&d->lock);
    /* The thread's last turn took what the mailbox held: every job left is in the lanes (and
     * in Redis, for the other gateways' recovery). */
    dispatch_free(d);
    *dp = NULL;
}
