/* The runner: a fixed pool of threads that each run one job at a time as a step (step.h: claim,
 * run, record), fed by the main thread through a hand-off queue that never holds more jobs than
 * there are free slots. A job whose backend passes the plan's deadline, or is still running
 * when the worker stops, is given back (osbq_store_release) so another worker runs it at once. */
#ifndef OSBQ_WORKER_RUNNER_H
#define OSBQ_WORKER_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"
#include "config.h"
#include "job.h"
#include "secrets.h"
#include "store_operations.h"
#include "worker_metrics.h"

struct step_handover;
struct runner;

/* Starts cfg->worker_concurrency threads and the exec watch (exec_watch.h) with
 * cfg->worker_exec_concurrency places, handed to every backend call. cfg, catalog, store, worker_id
 * and metrics are borrowed and must outlive the runner (and any thread runner_destroy leaves
 * behind); store must be safe to use from several threads at once. metrics may be NULL: nothing is
 * counted. Each thread sets its log context (osbq_log_context_set) to the job it handles, so every
 * line written meanwhile names its operation, instance, binding and request identity. Call with the
 * stop signals blocked: the threads inherit the mask. Caller owns the result (runner_destroy);
 * NULL when memory, an eventfd or a thread cannot be had (err says which). */
struct runner *runner_new(const struct osbq_config *cfg, const struct osbq_catalog *catalog,
                          struct osbq_store *store, const char *worker_id,
                          const struct worker_metrics *metrics, struct osbq_error *err);

/* Gives the runner the key ring that seals bind results (NULL: stored in plaintext). Call
 * before the first runner_submit; borrowed, it must outlive the runner. */
void runner_set_secrets(struct runner *r, const struct osbq_secrets *secrets);

/* For the process's exit: closes the runner, asks every running backend to stop (a detached
 * step's program gets SIGTERM from the exec watch within its tick), drops queued jobs without
 * claiming them (their operations stay queued in Redis and are resent), and tells backends the
 * process exits (backend_call.exiting). Each running job's operation is released by its thread
 * as soon as its backend sees the cancellation or returns. Then it waits for every thread, up to
 * the Redis timeout plus a second (a cancelled job's release or last finish may be under way). The
 * operations of backends still running then are released from here. Threads that returned are
 * joined and, when all did, the queued jobs and the runner are freed. Threads still inside a
 * backend cannot be killed: they are detached and the runner is kept, reachable and never freed,
 * until the process exits; so must be what it borrows (cfg, catalog, store). Sets *rp to NULL;
 * accepts NULL. Returns how many threads were left behind. */
unsigned runner_destroy(struct runner **rp);

/* Hands job to a free slot; origin names the connection it came through (0: none), for
 * runner_take_notes. On success takes over the strings job owns, zeroes *job and returns 0;
 * returns -1 with *job untouched when no slot is free or the runner is closed. */
int runner_submit(struct runner *r, struct osbq_job *job, unsigned origin);

/* runner_submit for a handed job, with its hand-over (taken over and zeroed on success, like
 * job): its step runs without a claim (step.c). */
int runner_submit_handed(struct runner *r, struct osbq_job *job, unsigned origin,
                         struct step_handover *handed);

/* Gives a handed job's operation back in Redis (release: queued, due at once) when it will not
 * run here: it found no slot, or the runner was cancelled before its step started. The worker
 * it is sent to next can then claim it. Waits for Redis. Returns whether it was given back
 * (not: logged; the recovery loop resends it once the hand-over's lease runs out). */
bool runner_give_back(struct runner *r, const struct osbq_job *job);

/* A gateway's word that a delete halted operation_id (docs/decisions/0051): the step running
 * it here, on a thread or detached, stops as its next lease renewal would have told it, and
 * records its end once its backend returned. Returns whether a step here ran it. */
bool runner_halt(struct runner *r, const char *operation_id);

/* Slots free for new jobs: concurrency minus the jobs queued or running on threads (detached
 * steps hold no slot); 0 once closed. */
unsigned runner_free_slots(struct runner *r);

/* Jobs queued or running, including those given up (past their deadline) whose backend has
 * not returned yet (their slots stay busy until it does) and detached steps (an exec program
 * watched by the exec loop: running, but on no slot) not yet recorded. */
unsigned runner_busy(struct runner *r);

/* Jobs queued or running whose operation this worker still holds (runner_busy minus the jobs
 * given up), detached steps included: what a stopping worker waits for. */
unsigned runner_holding(struct runner *r);

/* A file descriptor that becomes readable whenever a job ends (its slot is free again), for
 * the main thread's poll; borrowed. Call runner_drain after it polled readable. */
int runner_event_fd(const struct runner *r);
void runner_drain(struct runner *r);

/* Called by runner_take_notes, once per origin with something to tell: the earliest due time
 * (epoch ms, 0: none) of the waits recorded for jobs of that origin, and ended, the operation
 * ids (separated by spaces, borrowed for the call; NULL: none) of its jobs whose step ended or
 * never ran. origin 0 stands for jobs of any origin (a due time only). */
typedef void (*runner_note_fn)(void *ctx, unsigned origin, int64_t due_ms, const char *ended);

/* Hands what the gateways are told next (due times and ended jobs, by origin) to fn, and
 * forgets it. For the main thread, after runner_drain: each step has freed its slot or ended
 * its detached step by then. */
void runner_take_notes(struct runner *r, runner_note_fn fn, void *ctx);

/* Stops taking jobs: runner_submit fails from now on; jobs already handed over still run. */
void runner_close(struct runner *r);

#endif
