/* The timing rules of step-wise operations (docs/reliability.md, deadlines across steps): when
 * an operation that answered in progress is due again, and when one has run out of time as a
 * whole. Pure functions of the claim and the plan, so they are unit-tested alone. */
#ifndef OSBQ_WORKER_STEP_TIMING_H
#define OSBQ_WORKER_STEP_TIMING_H

#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "job.h"
#include "store_operations.h"

/* The longest deadline a plan may set (the catalog's limit for <kind>_deadline_s): a week. */
#define STEP_DEADLINE_S_MAX 604800

/* Why an operation fails before its next step runs. */
enum step_overdue {
    STEP_ON_TIME,       /* run the step */
    STEP_PAST_DEADLINE, /* a later step claimed past its first claim + the plan's deadline */
    STEP_PAST_POLLING,  /* past its accept + the plan's maximum_polling_duration: the platform
                         * stopped polling */
};

/* The deadline of an operation of kind on plan, in seconds after its claim: the plan's
 * <kind>_deadline_s (osbq_plan_deadline_s), or OSBQ_CATALOG_DEADLINE_S_DEFAULT when plan is
 * NULL (gone from the catalog), the kind unknown or the value outside 1..STEP_DEADLINE_S_MAX.
 * Past it, a backend still running is abandoned and the operation released. */
int64_t step_deadline_s(const struct osbq_plan *plan, enum osbq_job_kind kind);

/* The wait before the next try to record a result, after waiting previous_ms: doubles from
 * 100 ms up to 5 s (100 ms when previous_ms is below that). */
int64_t step_finish_backoff_ms(int64_t previous_ms);

/* The plan's maximum_polling_duration in seconds, or 0 when it has none (or plan is NULL). */
int64_t step_max_polling_s(const struct osbq_plan *plan);

/* The epoch ms the operation must have ended by: its first claim (claim->started_ms) +
 * deadline_s, and no later than its accept + max_polling_s when both are known (> 0). */
int64_t step_end_ms(const struct osbq_claim *claim, int64_t deadline_s, int64_t max_polling_s);

/* Whether the operation just claimed (claim) may run its step at now_ms (epoch). The deadline
 * counts across steps only once the operation went through one (claim->steps > 0): a first
 * step's own deadline (step_deadline_s) is kept while it runs. */
enum step_overdue step_overdue(const struct osbq_claim *claim, int64_t now_ms, int64_t deadline_s,
                               int64_t max_polling_s);

/* The user-facing description of an overdue operation's failure, written into out. */
void step_overdue_text(enum step_overdue why, int64_t deadline_s, int64_t max_polling_s, char *out,
                       size_t size);

/* When the next step of an operation whose step ended in progress at now_ms (epoch) is due:
 * now + poll_after_ms (negative counts as 0), but never after end_ms (when > 0), so the step
 * that finds the operation out of time runs as soon as it is. */
int64_t step_due_ms(int64_t now_ms, int64_t poll_after_ms, int64_t end_ms);

#endif
