/* The sim backend: pretends to do each operation, taking the time the plan's settings say, so
 * platforms and tests can exercise every flow without real infrastructure. */
#include <stdio.h>

#include "backend.h"

/* Progress reports per operation: one every tenth of its duration. */
#define SIM_STEPS 10

#define SIM_FAIL_TEXT     "Simulated failure requested by the sim_fail parameter."
#define SIM_DASHBOARD_FMT "https://sim.osbq.invalid/dashboard/%s"

/* What sim says about one kind of operation. */
struct sim_kind {
    const char *duration_key; /* the plan setting holding its duration in ms */
    const char *doing;        /* progress text before the percentage */
    const char *done;         /* description of a success */
    bool usable_if_failed;    /* instance_usable of a failure: a failed provision leaves no
                               * instance; any other failed sim operation changed nothing */
};

static const struct sim_kind provisioning = {"provision_ms", "Provisioning", "Provisioned.", false};
static const struct sim_kind updating = {"update_ms", "Updating", "Updated.", true};
static const struct sim_kind deprovisioning = {"deprovision_ms", "Deprovisioning", "Deprovisioned.",
                                               true};
static const struct sim_kind binding = {"bind_ms", "Binding", "Bound.", true};
static const struct sim_kind unbinding = {"unbind_ms", "Unbinding", "Unbound.", true};

/* The plan's duration setting in ms; 0 when absent (the catalog checked its range). */
static int64_t duration_ms(const struct backend_call *call, const char *key)
{
    json_int_t ms = json_integer_value(json_object_get(call->plan->settings, key));
    return ms > 0 ? (int64_t)ms : 0;
}

/* Spends the operation's duration in SIM_STEPS waits, reporting progress after each, then
 * succeeds or, when the parameters ask for it, fails. Returns 0 with the outcome in
 * call->result, or -1 as soon as the call is cancelled. */
static int simulate(struct backend_call *call, const struct sim_kind *kind)
{
    int64_t total = duration_ms(call, kind->duration_key);
    int64_t elapsed = 0;
    for (int step = 1; step <= SIM_STEPS; step++) {
        /* Each step ends at its share of the total, so the integer steps add up to it exactly. */
        int64_t until = total * step / SIM_STEPS;
        if (!call->wait(call, until - elapsed))
            return -1;
        elapsed = until;
        char text[64];
        (void)snprintf(text, sizeof text, "%s (%d%%)", kind->doing, step * 100 / SIM_STEPS);
        call->progress(call, text);
    }
    /* The last progress report may have found the lease lost. */
    if (call->cancelled(call))
        return -1;
    if (json_is_true(json_object_get(call->parameters, "sim_fail"))) {
        /* Repeating the same request fails the same way: never repeatable. */
        backend_call_fail(call, SIM_FAIL_TEXT, kind->usable_if_failed, false);
        return 0;
    }
    backend_call_succeed(call, kind->done);
    return 0;
}

static int sim_provision(struct backend_call *call)
{
    if (simulate(call, &provisioning) < 0)
        return -1;
    if (call->result.succeeded &&
        json_is_true(json_object_get(call->plan->settings, "dashboard")) &&
        backend_call_set_dashboard_url(call, SIM_DASHBOARD_FMT, call->job->instance_id) < 0)
        backend_call_fail(call, "The broker ran out of memory.", false, false);
    return 0;
}

static int sim_update(struct backend_call *call)
{
    return simulate(call, &updating);
}

static int sim_deprovision(struct backend_call *call)
{
    return simulate(call, &deprovisioning);
}

/* Bindings carry no credentials yet: a binding that succeeds gives none. */
static int sim_bind(struct backend_call *call)
{
    return simulate(call, &binding);
}

static int sim_unbind(struct backend_call *call)
{
    return simulate(call, &unbinding);
}

/* sim keeps no state of its own: running an operation twice gives the same outcome, which is
 * all its idempotency takes. */
const struct backend backend_sim = {
    .name = "sim",
    .provision = sim_provision,
    .update = sim_update,
    .deprovision = sim_deprovision,
    .bind = sim_bind,
    .unbind = sim_unbind,
};
