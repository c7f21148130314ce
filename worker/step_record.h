/* What a step leaves behind: what its backend reported, recorded in Redis (the outcome, or the
 * wait for the next step) while Redis fails, and its job_start and job_end lines. For step.c. */
#ifndef OSBQ_WORKER_STEP_RECORD_H
#define OSBQ_WORKER_STEP_RECORD_H

#include <stdint.h>

#include "backend.h"
#include "job.h"
#include "step.h"

/* Records the end of job's step that a delete halted, once it stopped (osbq_store_halted_end,
 * docs/decisions/0051), and tells the pool (its waiting hook) that the delete which waited for
 * it is due now, so origin's gateway sends it at once. Returns what osbq_store_halted_end
 * returned (-1 logged). */
int step_record_halted_end(struct step_pool *pool, const struct osbq_job *job, unsigned origin);

/* Records what the backend's step reported (call->result, for call->job, which came through
 * origin): the outcome, or in progress the wait for its next step, due by step_due_ms but never
 * after end_ms (epoch), told to the pool (its waiting hook). Retries with backoff while Redis
 * fails: until it is recorded or refused (the operation is no longer this worker's), or the
 * pool is cancelled (the worker stopping past its grace: one last try). A report that timed out
 * may still have been recorded; the retry is then refused, never recorded twice. A successful
 * bind gets its plan's credential lifetime and is sealed first (bind_result.h). Counts it
 * (backend_seconds: how long the backend ran) and returns the job_end result ("waiting",
 * "succeeded", "failed", "halted", "dropped" or "not_recorded"); *due_in_ms is set for a wait
 * recorded, else -1. */
const char *step_record(struct step_pool *pool, struct backend_call *call, unsigned origin,
                        int64_t end_ms, double backend_seconds, int64_t *due_in_ms);

/* Writes the job's start or end line: event "job_start" or "job_end"; result, description,
 * duration_ms and due_in_ms (each when >= 0; due_in_ms: a step that ended in progress) only on
 * the end line, late_ms (>= 0: how long after its due time a poll was claimed) on the start
 * line. step: the step the job runs (0: the first). */
void step_record_log(const struct osbq_job *job, const char *event, uint32_t step,
                     const char *result, const char *description, int64_t duration_ms,
                     int64_t due_in_ms, int64_t late_ms);

#endif
