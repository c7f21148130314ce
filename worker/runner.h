/* The runner: a fixed pool of threads that claim, run and record jobs, fed by the main thread
 * through a hand-off queue that never holds more jobs than there are free slots. */
#ifndef OSBQ_WORKER_RUNNER_H
#define OSBQ_WORKER_RUNNER_H

#include <jansson.h>
#include <stdint.h>
#include <time.h>

#include "catalog.h"
#include "config.h"
#include "job.h"
#include "store.h"

struct runner;

/* Starts cfg->worker_concurrency threads. cfg, catalog, store and worker_id are borrowed and
 * must outlive the runner; store must be safe to use from several threads at once. Call with
 * the stop signals blocked: the threads inherit the mask. Caller owns the result
 * (runner_destroy); NULL when memory, an eventfd or a thread cannot be had (err says which). */
struct runner *runner_new(const struct osbq_config *cfg, const struct osbq_catalog *catalog,
                          struct osbq_store *store, const char *worker_id, struct osbq_error *err);

/* Cancels what still runs (runner_cancel), waits for every thread, frees the jobs still queued
 * and the runner; sets *rp to NULL; accepts NULL. */
void runner_destroy(struct runner **rp);

/* Hands job to a free slot. On success takes over the strings job owns, zeroes *job and
 * returns 0; returns -1 with *job untouched when no slot is free or the runner is closed. */
int runner_submit(struct runner *r, struct osbq_job *job);

/* Slots free for new jobs: concurrency minus the jobs queued or running; 0 once closed. */
unsigned runner_free_slots(struct runner *r);

/* Jobs queued or running. */
unsigned runner_busy(struct runner *r);

/* A file descriptor that becomes readable whenever a job ends (its slot is free again), for
 * the main thread's poll; borrowed. Call runner_drain after it polled readable. */
int runner_event_fd(const struct runner *r);
void runner_drain(struct runner *r);

/* Stops taking jobs: runner_submit fails from now on; jobs already handed over still run. */
void runner_close(struct runner *r);

/* Asks every running backend to stop and drops queued jobs without claiming them. Their
 * operations stay in Redis: leases expire and another worker takes them over. A result that
 * could not be recorded yet (Redis away) stops being retried. */
void runner_cancel(struct runner *r);

/* Gives binding (a bind's result object) a credential lifetime of ttl_s seconds from now,
 * unless its backend set one: when binding has no metadata.expires_at, sets metadata.expires_at
 * to now + ttl_s and metadata.renew_before to now + 80% of ttl_s (replacing a renew_before
 * given alone), both UTC as the spec's "yyyy-mm-ddThh:mm:ss.sZ", e.g.
 * "2026-11-22T03:40:00.0Z". Returns 0 (binding changed or left alone), or -1 when metadata is
 * not an object, a time is out of range or memory ran out (binding possibly half changed). */
int runner_add_expiry(json_t *binding, int64_t ttl_s, time_t now);

#endif
