/* The workers a gateway's dispatcher knows, from their READY messages: each one's free slots
 * less the jobs on their way to it and the slots taken for hand-overs, when it was last heard
 * from and last sent a job; and the rule that picks the worker a job goes to. Not locked: the
 * dispatcher holds its lock around every call (hand-overs are taken from other threads). */
#ifndef OSBQ_GATEWAY_DISPATCH_WORKERS_H
#define OSBQ_GATEWAY_DISPATCH_WORKERS_H

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bus.h"

/* One worker as the dispatcher knows it. */
struct dispatch_worker {
    zframe_t *identity;         /* the worker's ROUTER identity */
    char *id;                   /* the worker's own id (from READY) */
    unsigned free;              /* free slots it announced, minus jobs sent since */
    int64_t last_seen;          /* osbq_clock_ms of its last message */
    uint64_t last_sent;         /* the table's count of jobs sent when it was last sent one; 0:
                                 * never */
    uint64_t sent;              /* jobs sent to it (its READY says how many it received) */
    unsigned handover_lease_ms; /* the hand-over lease its READY says; 0: hand it nothing */
    unsigned reserved;          /* its slots taken for hand-overs whose job is not sent yet */
    int fd;                     /* the descriptor of its connection, as its last message said
                                 * (osbq_bus_msg.source_fd); -1: unknown */
};

struct dispatch_workers;

/* An empty table, or NULL when memory ran out. */
struct dispatch_workers *dispatch_workers_new(void);

/* Frees the table and every worker in it; sets *tp to NULL; accepts NULL and *tp NULL. */
void dispatch_workers_destroy(struct dispatch_workers **tp);

/* The worker of identity, or NULL. */
struct dispatch_worker *dispatch_workers_find(struct dispatch_workers *t, const zframe_t *identity);

/* The worker whose own id (its READY's) is id, or NULL. */
struct dispatch_worker *dispatch_workers_find_id(struct dispatch_workers *t, const char *id);

/* A worker first heard from: added with no free slot and no known connection (dispatch_worker_heard
 * gives it its READY's); takes *identity and *id (set to NULL) when it returns the worker, NULL
 * when memory ran out. */
struct dispatch_worker *dispatch_workers_add(struct dispatch_workers *t, zframe_t **identity,
                                             char **id);

/* Takes w out of the table, if it is there (then the caller frees it: dispatch_worker_free).
 * Returns whether it was. */
bool dispatch_workers_unlink(struct dispatch_workers *t, const struct dispatch_worker *w);

/* Frees a worker taken out of its table; sets *wp to NULL; accepts NULL and *wp NULL. */
void dispatch_worker_free(struct dispatch_worker **wp);

/* w's READY, heard at now_ms: its hand-over lease, and its free slots less the jobs sent to it
 * after it counted them (osbq_bus_ready_credit; a READY that does not count the jobs it received
 * is taken as it says). Without that, a fast stream of jobs over-fills a worker, and it hands the
 * excess back (REJECT) to be sent again. */
void dispatch_worker_heard(struct dispatch_worker *w, const struct osbq_bus_ready_received *ready,
                           int64_t now_ms);

/* w's REJECT, heard at now_ms: it has no free slot after all. */
void dispatch_worker_full(struct dispatch_worker *w, int64_t now_ms);

/* The slots w can take plain jobs in: those free less those taken for hand-overs. */
unsigned dispatch_worker_available(const struct dispatch_worker *w);

/* The worker with the most slots available; among equals, the one sent a job longest ago, so
 * workers with equal room take turns (with sequential traffic every worker is idle again before
 * the next job, and the first in the table would otherwise take them all). Only workers that
 * take handed jobs (a hand-over lease) when handover_only. NULL when none has room. */
struct dispatch_worker *dispatch_workers_roomiest(struct dispatch_workers *t, bool handover_only);

/* A job is about to be sent to w: one of its free slots is on its way, to be counted by its
 * next READY, and w becomes the worker sent a job last. The dispatcher counts it with its lock
 * held since the slot was found (or its hand-over settled), before the send: a hand-over taken
 * from another thread in between would find the slot free. */
void dispatch_workers_count_sent(struct dispatch_workers *t, struct dispatch_worker *w);

/* The worker whose connection had descriptor fd (dispatch_monitor.h: it ended), or NULL. Of two
 * (the descriptor of an ended connection was reused by a new one before the end was read), the
 * one heard from longest ago: the one that ended first. */
struct dispatch_worker *dispatch_workers_on_fd(struct dispatch_workers *t, int fd);

/* A worker last heard from before seen_before_ms (the first such one), or NULL. */
struct dispatch_worker *dispatch_workers_silent(struct dispatch_workers *t, int64_t seen_before_ms);

/* How many workers the table holds, and their slots available in all. */
void dispatch_workers_totals(struct dispatch_workers *t, size_t *workers, size_t *available);

#endif
