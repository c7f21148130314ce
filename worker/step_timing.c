/* The timing rules of step-wise operations. */
#include "step_timing.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>

/* A result whose recording fails (Redis away) is retried with this backoff until it is
 * recorded, refused, or the worker stops past its grace. */
#define FINISH_BACKOFF_MIN_MS 100
#define FINISH_BACKOFF_MAX_MS 5000

/* Adds seconds (as ms) to an epoch ms without overflowing: far futures saturate. */
static int64_t plus_seconds(int64_t ms, int64_t seconds)
{
    if (seconds <= 0)
        return ms;
    if (seconds > (INT64_MAX - ms) / 1000)
        return INT64_MAX;
    return ms + seconds * 1000;
}

int64_t step_deadline_s(const struct osbq_plan *plan, enum osbq_job_kind kind)
{
    const char *name = osbq_job_kind_name(kind);
    int64_t s = plan != NULL && name != NULL ? osbq_plan_deadline_s(plan, name) : 0;
    /* The catalog allows 1 s to a week; anything else (an unknown kind, a value that is not an
     * integer) falls back to the default rather than abandon a backend at once or never. */
    return s >= 1 && s <= STEP_DEADLINE_S_MAX ? s : OSBQ_CATALOG_DEADLINE_S_DEFAULT;
}

int64_t step_finish_backoff_ms(int64_t previous_ms)
{
    if (previous_ms < FINISH_BACKOFF_MIN_MS)
        return FINISH_BACKOFF_MIN_MS;
    int64_t doubled = previous_ms * 2;
    return doubled < FINISH_BACKOFF_MAX_MS ? doubled : FINISH_BACKOFF_MAX_MS;
}

int64_t step_max_polling_s(const struct osbq_plan *plan)
{
    if (plan == NULL)
        return 0;
    json_int_t s = json_integer_value(json_object_get(plan->json, "maximum_polling_duration"));
    return s > 0 ? (int64_t)s : 0;
}

int64_t step_end_ms(const struct osbq_claim *claim, int64_t deadline_s, int64_t max_polling_s)
{
    int64_t end = plus_seconds(claim->started_ms, deadline_s);
    if (max_polling_s > 0 && claim->accepted_ms > 0) {
        int64_t polling_end = plus_seconds(claim->accepted_ms, max_polling_s);
        if (polling_end < end)
            end = polling_end;
    }
    return end;
}

enum step_overdue step_overdue(const struct osbq_claim *claim, int64_t now_ms, int64_t deadline_s,
                               int64_t max_polling_s)
{
    if (max_polling_s > 0 && claim->accepted_ms > 0 &&
        now_ms >= plus_seconds(claim->accepted_ms, max_polling_s))
        return STEP_PAST_POLLING;
    if (claim->steps > 0 && claim->started_ms > 0 &&
        now_ms >= plus_seconds(claim->started_ms, deadline_s))
        return STEP_PAST_DEADLINE;
    return STEP_ON_TIME;
}

void step_overdue_text(enum step_overdue why, int64_t deadline_s, int64_t max_polling_s, char *out,
                       size_t size)
{
    if (why == STEP_PAST_POLLING)
        (void)snprintf(out, size,
                       "The operation did not finish within the plan's maximum_polling_duration "
                       "of %" PRId64 " s.",
                       max_polling_s);
    else
        (void)snprintf(out, size,
                       "The operation did not finish within its deadline of %" PRId64 " s.",
                       deadline_s);
}

int64_t step_due_ms(int64_t now_ms, int64_t poll_after_ms, int64_t end_ms)
{
    int64_t due = now_ms + (poll_after_ms > 0 ? poll_after_ms : 0);
    if (end_ms > 0 && due > end_ms)
        due = end_ms > now_ms ? end_ms : now_ms;
    return due;
}
