/* The dispatcher: owns the ROUTER socket, learns the workers' free slots from their READY
 * messages, and sends queued jobs, taken from the lanes in turn (dispatch_lanes.h), to the
 * worker with the most room, the one sent to longest ago among equals. Jobs reach it through
 * its mailbox (common/mailbox.h). The hand-over is dispatch_handover.c's, the requests waiting
 * for a slot dispatch_slots.c's; dispatch_internal.h holds what the three share and says who
 * takes the lock. */
#include "dispatch.h"
#include "dispatch_internal.h"
#include "dispatch_monitor.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "clock.h"
#include "job.h"
#include "log.h"
#include "mailbox.h"
#include "owned.h"
#include "store.h"
#include "tenant.h"

/* Messages read from the workers per wake-up at most (the rest on the next turn). */
#define DISPATCH_READ_BATCH 1024

/* Queues buf, counted in held, at the head (a job handed back) or the tail of its lane, unless
 * its operation is queued already; takes buf. A request waiting for a slot is watched for its
 * deadline, or told at once that it gets none when it cannot wait. On the dispatcher's thread,
 * with d->lock held. */
static void enqueue_locked(struct dispatch *d, struct job_buf *buf, bool front)
{
    /* A request's wait is not in queued: its operation's job, should the wait end before its
     * turn (a deadline), is queued while the wait's entry is still in the lane. */
    if (buf->kind != JOB_SLOT_WAIT && zhashx_lookup(d->queued, buf->operation_id) != NULL) {
        dispatch_drop(d, buf);
        return;
    }
    if (dispatch_lanes_push(d->queue, buf->lane, buf->tenant, buf->weight, buf, front) < 0) {
        log_warnx("out of memory: dropping a job; recovery resends it from Redis");
        if (buf->kind == JOB_SLOT_WAIT)
            dispatch_slot_end_locked(d, buf, NULL, DISPATCH_SLOT_NONE);
        dispatch_drop(d, buf);
        return;
    }
    if (buf->kind != JOB_SLOT_WAIT)
        zhashx_insert(d->queued, buf->operation_id, d);
    else if ((buf->slot_handle = zlistx_add_end(d->slot_waits, buf)) == NULL)
        dispatch_slot_end_locked(d, buf, NULL,
                                 DISPATCH_SLOT_NONE); /* out of memory: it cannot wait */
}

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
        if (buf->kind == JOB_HANDED) {
            /* Sent below, in the order submitted, once the lock is free. */
            buf->link.next = NULL;
            *handed_end = &buf->link;
            handed_end = &buf->link.next;
        } else if (buf->kind == JOB_SLOT_WAIT && d->slots_closed) {
            dispatch_slot_taken_locked(d);
            dispatch_slot_end_locked(d, buf, NULL, DISPATCH_SLOT_STOPPING);
            dispatch_drop(d, buf);
        } else {
            if (buf->kind == JOB_SLOT_WAIT)
                dispatch_slot_taken_locked(d);
            enqueue_locked(d, buf, false);
        }
    }
    pthread_mutex_unlock(&d->lock);
    while (handed != NULL) {
        struct job_buf *buf =
            (struct job_buf *)(void *)((char *)handed - offsetof(struct job_buf, link));
        handed = handed->next;
        dispatch_send_handed(d, buf);
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
    struct job_buf *buf = dispatch_job_new(operation_id, lane, owner, job, len);
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

static void send_queued(struct dispatch *d)
{
    for (;;) {
        const struct dispatch_load load = {dispatch_running_load, d->running};
        pthread_mutex_lock(&d->lock);
        struct dispatch_worker *w = dispatch_workers_roomiest(d->workers, false);
        struct job_buf *job = w != NULL ? dispatch_lanes_pop(d->queue, NULL, &load) : NULL;
        if (job != NULL && job->kind == JOB_SLOT_WAIT) {
            dispatch_slot_turn_locked(d, job, w);
        } else if (job != NULL) {
            zhashx_delete(d->queued, job->operation_id);
            dispatch_workers_count_sent(d->workers, w);
        }
        pthread_mutex_unlock(&d->lock);
        if (job == NULL)
            return;
        atomic_fetch_sub(&d->held, 1);
        if (job->kind == JOB_SLOT_WAIT) {
            free(job);
            continue;
        }
        struct leaving_job out;
        dispatch_job_leaving(d, job, &out);
        /* Zero copy: ZeroMQ frees the buffer once it has written it. */
        if (osbq_bus_send_job(d->router, w->identity, job->data, job->len, dispatch_job_release,
                              job) < 0) {
            /* ROUTER_MANDATORY: the worker is gone. Keep the job for another one. */
            const struct dispatch_owner owner = {job->tenant, job->weight, job->platform};
            requeue_front(d, job->operation_id, job->lane, &owner, job->data, job->len);
            dispatch_forget_worker(d, w, "unreachable", NULL);
            free(job);
        } else {
            dispatch_job_running(d, &out, w);
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
            dispatch_forget_worker(d, ended, "disconnected", NULL);
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
        dispatch_forget_worker(d, silent, "silent", NULL);
    }
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
            dispatch_expire_slot_waits(d);
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
        if (job->kind == JOB_SLOT_WAIT && !job->slot_ended)
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
        zhashx_set_destructor(d->wait_series, osbq_owned_free);
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
    struct job_buf *buf = dispatch_job_new(operation_id, lane, owner, job, len);
    if (buf == NULL) {
        atomic_fetch_sub(&d->held, 1);
        return -1;
    }
    /* One wake-up carries every job posted before the thread takes them. Closed: stopping. */
    if (!osbq_mailbox_post(&d->mailbox, &buf->link)) {
        dispatch_drop(d, buf);
        return -1;
    }
    return 0;
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
    OSBQ_OWNED_OR_RETURN(struct dispatch, d, dp);
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
