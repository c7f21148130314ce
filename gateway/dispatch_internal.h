/* The dispatcher's insides, shared by the files that own its parts: dispatch.c (the thread, the
 * lanes, sending queued jobs), dispatch_handover.c (the hand-over: a worker's slot taken before
 * a begin, and the handed job sent to it) and dispatch_slots.c (requests waiting for a slot).
 * Nothing outside gateway/dispatch*.c includes it.
 *
 * The lock (struct dispatch.lock) and who takes it: the dispatcher's thread at each turn; an
 * HTTP thread only in dispatch_handover_take and dispatch_handover_cancel (a worker's slot taken
 * or given back: a few instructions), dispatch_wait_slot (counting a posted wait) and
 * dispatch_drain_slots (at shutdown); scrapes and the recovery loop to read the figures
 * (dispatch_get_stats, dispatch_longest_wait, dispatch_wait_stats). No callback a lock holder
 * makes (slot_fn, the listener) takes it again. */
#ifndef OSBQ_GATEWAY_DISPATCH_INTERNAL_H
#define OSBQ_GATEWAY_DISPATCH_INTERNAL_H

#include <czmq.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "dispatch.h"
#include "dispatch_halts.h"
#include "dispatch_running.h"
#include "dispatch_workers.h"
#include "mailbox.h"
#include "platforms.h"
#include "tenant.h"

/* How long the thread sleeps when nothing happens: it still forgets silent workers on time. */
#define DISPATCH_TICK_MS 100

/* A slot taken for a hand-over (dispatch_handover_take). */
struct dispatch_handover {
    struct dispatch *d; /* whose worker table counts it (dispatch_worker.reserved) */
    zframe_t *identity; /* the worker's ROUTER identity (a copy) */
    char *worker_id;    /* its own id (a copy) */
    int64_t until_ms;   /* the hand-over's lease end, epoch ms */
};

/* What a dispatcher's item is. */
enum job_kind {
    JOB_QUEUED,    /* a job waiting in its lane for a worker's free slot (dispatch_submit) */
    JOB_HANDED,    /* a job whose operation was handed to a worker: sent there, in no lane
                    * (dispatch_submit_handed, dispatch_handover.c) */
    JOB_SLOT_WAIT, /* a request waiting in its lane for a slot, no job (dispatch_wait_slot,
                    * dispatch_slots.c) */
};

/* One item of the dispatcher: a job, or a request waiting for a slot. */
struct job_buf {
    struct osbq_mailbox_link link;             /* in the mailbox, until the thread takes it */
    char operation_id[65];                     /* its operation: the key of the queued set */
    enum dispatch_lane lane;                   /* where it waits */
    char tenant[TENANT_KEY_MAX];               /* whose it is: its queue in the lane */
    unsigned weight;                           /* its tenant's weight */
    char platform[OSBQ_PLATFORM_NAME_MAX + 1]; /* its wait's platform label */
    double queued_at;                          /* when it was submitted (osbq_clock_seconds) */
    enum job_kind kind;                        /* what it is */
    struct dispatch_handover *handover;        /* JOB_HANDED: its worker's slot */
    dispatch_slot_fn slot_fn;                  /* JOB_SLOT_WAIT: told how its wait ended */
    void *slot_ctx;                            /* slot_fn's */
    int64_t slot_deadline_ms; /* its wait ends then at the latest (osbq_clock_ms) */
    void *slot_handle;        /* its entry in d->slot_waits; NULL once it ended */
    bool slot_ended;          /* slot_fn was called: dropped when its turn comes */
    size_t len;               /* bytes in data */
    char data[];              /* the encoded job */
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

/* What counting a job as running needs of it, copied before it is sent: ZeroMQ may free it as
 * soon as it is. */
struct leaving_job {
    char operation_id[sizeof((struct job_buf *)0)->operation_id];
    char tenant[TENANT_KEY_MAX];
    char platform[OSBQ_PLATFORM_NAME_MAX + 1];
    unsigned weight;
};

/* ---- dispatch.c ---- */

/* A new item of owner in lane, JOB_QUEUED, with a copy of len bytes of job; NULL when out of
 * memory. */
struct job_buf *dispatch_job_new(const char *operation_id, enum dispatch_lane lane,
                                 const struct dispatch_owner *owner, const void *job, size_t len);

/* Frees an item counted in held (its operation is in Redis: recovery resends it if need be). */
void dispatch_drop(struct dispatch *d, struct job_buf *buf);

/* The wait histogram's series of lane and platform; NULL without a histogram or memory. */
struct osbq_series *dispatch_wait_series(struct dispatch *d, enum dispatch_lane lane,
                                         const char *platform);

/* A job leaves for a worker: its wait is counted under its lane and platform, and what counting
 * it as running needs is copied into out. */
void dispatch_job_leaving(struct dispatch *d, const struct job_buf *job, struct leaving_job *out);

/* The job out describes runs on w from now on. */
void dispatch_job_running(struct dispatch *d, const struct leaving_job *out,
                          const struct dispatch_worker *w);

/* The worker gone went (why: dispatch_listener.gone's): forgotten, and the jobs sent to it that
 * it did not end, with operation_id (a handed job's operation that was not sent: NULL when
 * none), go to the listener, which takes them from it in Redis at once rather than when their
 * leases run out (docs/decisions/0052). */
void dispatch_forget_worker(struct dispatch *d, struct dispatch_worker *gone, const char *why,
                            const char *operation_id);

/* ZeroMQ's free function for a job sent without a copy (called from its I/O thread). */
void dispatch_job_release(void *data, void *owner);

/* ---- dispatch_handover.c ---- */

/* Takes one of w's free slots for a hand-over (w takes handed jobs and has room); NULL when out
 * of memory (d->lock held). */
struct dispatch_handover *dispatch_handover_new_locked(struct dispatch *d,
                                                       struct dispatch_worker *w);

/* Sends a JOB_HANDED item to the worker whose slot it took (the thread, lock not held). */
void dispatch_send_handed(struct dispatch *d, struct job_buf *job);

/* ---- dispatch_slots.c ---- */

/* Ends the wait of a JOB_SLOT_WAIT item not ended yet: slot_fn is told (slot: the slot taken for
 * it, or NULL), and its deadline no longer watched. It stays in its lane until its turn, then is
 * dropped (d->lock held). */
void dispatch_slot_end_locked(struct dispatch *d, struct job_buf *buf,
                              struct dispatch_handover *slot, enum dispatch_slot_end end);

/* A posted slot wait was taken by the thread (or never reached it): the last one taken wakes
 * dispatch_drain_slots (d->lock held). */
void dispatch_slot_taken_locked(struct dispatch *d);

/* The turn of a waiting request, w the roomiest worker: a slot is taken for it (d->lock held). */
void dispatch_slot_turn_locked(struct dispatch *d, struct job_buf *buf, struct dispatch_worker *w);

/* Ends the waits whose deadline passed: they begin plain, DISPATCH_SLOT_NONE (the thread). */
void dispatch_expire_slot_waits(struct dispatch *d);

#endif
