/* The timing rules of step-wise operations. */
#include "step_timing.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>

/* Adds seconds (as ms) to an epoch ms without overflowing: far futures saturate. */
static int64_t plus_seconds(int64_t ms, int64_t seconds)
{
    if (seconds <= 0)
        return ms;
    if (seconds > (INT64_MAX - ms) / 1000)
        return INT64_MAX;
    return ms + seconds * 1000;
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
