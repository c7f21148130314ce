/* A backend call with recording callbacks, for the backends' tests (fake_call.h). */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include "fake_call.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"

static void fake_progress(struct backend_call *call, const char *description)
{
    struct fake_call *f = call->ctx;
    if (f->report_count < FAKE_CALL_REPORTS)
        (void)snprintf(f->reports[f->report_count], sizeof f->reports[0], "%s", description);
    (void)snprintf(f->last_report, sizeof f->last_report, "%s", description);
    f->report_count++;
    if (f->cancel_after > 0 && f->report_count == f->cancel_after)
        atomic_store(&f->cancel, true);
    if (f->on_progress != NULL)
        f->on_progress(f, description);
}

static bool fake_cancelled(struct backend_call *call)
{
    struct fake_call *f = call->ctx;
    return atomic_load(&f->cancel);
}

static bool fake_exiting(struct backend_call *call)
{
    struct fake_call *f = call->ctx;
    return atomic_load(&f->exiting);
}

/* In 1 ms slices, so that a cancellation from another thread stops it quickly; once cancelled,
 * returns false at once, as the worker's step does. */
static bool fake_wait(struct backend_call *call, int64_t ms)
{
    struct fake_call *f = call->ctx;
    atomic_fetch_add(&f->waits, 1);
    int64_t deadline = osbq_clock_ms() + ms;
    while (!atomic_load(&f->cancel) && osbq_clock_ms() < deadline)
        osbq_clock_sleep_ms(1);
    return !atomic_load(&f->cancel);
}

void fake_call_init(struct fake_call *f, enum osbq_job_kind kind, const struct osbq_plan *plan,
                    const char *parameters)
{
    memset(f, 0, sizeof *f);
    atomic_init(&f->cancel, false);
    atomic_init(&f->exiting, false);
    atomic_init(&f->waits, 0);
    assert_non_null(plan);
    f->job.operation_id = "op-1";
    f->job.kind = kind;
    f->job.instance_id = "inst-1";
    f->job.service_id = plan->service->id;
    f->job.plan_id = plan->id;
    f->job.api_version = 217;
    f->job.attempt = 1;
    if (kind == OSBQ_JOB_BIND || kind == OSBQ_JOB_UNBIND)
        f->job.binding_id = "bind-1";
    if (parameters != NULL) {
        f->parameters = json_loads(parameters, 0, NULL);
        assert_non_null(f->parameters);
    }
    f->call.job = &f->job;
    f->call.plan = plan;
    f->call.parameters = f->parameters;
    f->call.progress = fake_progress;
    f->call.cancelled = fake_cancelled;
    f->call.wait = fake_wait;
    f->call.exiting = fake_exiting;
    f->call.ctx = f;
}

const struct backend *fake_call_backend(const char *name)
{
    const struct backend *b = backend_find(name);
    assert_non_null(b);
    assert_string_equal(b->name, name);
    return b;
}

void fake_call_clear(struct fake_call *f)
{
    backend_call_clear(&f->call);
    json_decref(f->parameters);
    f->parameters = NULL;
    f->call.parameters = NULL;
    json_decref(f->resume);
    f->resume = NULL;
    f->call.resume = NULL;
}
