/* One plan through the kit (kit_plan.h): the operations in order, what a fetch would answer
 * from the results recorded so far, the clean-up a platform does after a failure, and the
 * contract's error paths under --check. */
#include "kit_plan.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lifecycle run when the command line names no operation. */
static const enum kit_op lifecycle[] = {
    KIT_OP_PROVISION, KIT_OP_FETCH, KIT_OP_UPDATE, KIT_OP_FETCH,
    KIT_OP_BIND,      KIT_OP_FETCH, KIT_OP_UNBIND, KIT_OP_DEPROVISION,
};

/* Room for an id the kit makes or one given on the command line. */
#define ID_MAX 256

/* One plan's run: its ids and what a store would hold. */
struct plan_run {
    struct kit *kit;
    const struct kit_options *o;
    const struct kit_inputs *in;
    const struct osbq_plan *plan;          /* the plan run */
    const struct osbq_plan *update_plan;   /* an update's target */
    const struct osbq_plan *instance_plan; /* the instance's plan: the last update's target */
    char instance_id[ID_MAX];              /* the lifecycle's instance */
    char binding_id[ID_MAX];               /* the lifecycle's binding */
    bool provisioned;                      /* a provision ran and no deprovision succeeded since */
    bool bound;                            /* a bind ran and no unbind succeeded since */
    bool unbind_checked;                   /* --check: the unbind of a binding never bound ran */
    struct kit_outcome instance;           /* the last provision or update that succeeded */
    struct kit_outcome binding;            /* the last bind that succeeded */
    struct kit_tally tally;
    char last_operation[ID_MAX]; /* the operation id run_op used last */
};

/* A new id: prefix and 16 random hex digits. */
static void new_id(const char *prefix, char *out, size_t size)
{
    unsigned char bytes[8];
    char hex[2 * sizeof bytes + 1];
    randombytes_buf(bytes, sizeof bytes);
    (void)sodium_bin2hex(hex, sizeof hex, bytes, sizeof bytes);
    (void)snprintf(out, size, "%s%s", prefix, hex);
}

/* Runs one operation of kind on instance (and binding) and counts it; returns its verdict.
 * The outcome goes to *kept when it succeeded and kept is not NULL. */
static enum kit_verdict run_op(struct plan_run *pr, enum osbq_job_kind kind, const char *instance,
                               const char *binding, const struct kit_mode *mode,
                               struct kit_outcome *kept)
{
    char operation_id[ID_MAX];
    new_id("kit-op-", operation_id, sizeof operation_id);
    memcpy(pr->last_operation, operation_id, sizeof pr->last_operation);
    const struct kit_inputs *in = pr->in;
    struct kit_job job = {
        .kind = kind,
        .plan = kind == OSBQ_JOB_UPDATE ? pr->update_plan : pr->plan,
        .operation_id = operation_id,
        .instance_id = instance,
        .binding_id = binding,
        .parameters = kind == OSBQ_JOB_PROVISION ? in->parameters
                      : kind == OSBQ_JOB_UPDATE  ? in->update_parameters
                      : kind == OSBQ_JOB_BIND    ? in->bind_parameters
                                                 : NULL,
        .context = in->context,
        .bind_resource = kind == OSBQ_JOB_BIND ? in->bind_resource : NULL,
        .halted_operation = mode->halted_operation,
    };
    struct kit_outcome outcome;
    kit_operation(pr->kit, &job, mode, &outcome);
    enum kit_verdict verdict = outcome.verdict;
    if (verdict == KIT_SUCCEEDED)
        pr->tally.succeeded++;
    else if (!mode->stop_at_progress)
        pr->tally.failed++;
    if (verdict == KIT_SUCCEEDED && kept != NULL) {
        kit_outcome_clear(kept);
        *kept = outcome;
    } else {
        kit_outcome_clear(&outcome);
    }
    fputc('\n', pr->kit->out);
    return verdict;
}

/* What GET of the instance and of the binding would answer from what is recorded: the plan
 * the last provision or update left, its dashboard_url and metadata; the binding as the last
 * bind recorded it. */
static void fetch(struct plan_run *pr)
{
    FILE *out = pr->kit->out;
    fprintf(out, "fetch: what GET answers from the recorded results (no program runs)\n");
    if (!pr->provisioned) {
        fprintf(out, "  instance: none (no provision ran, or it was deprovisioned)\n");
    } else {
        const struct kit_outcome *i = &pr->instance;
        json_t *body = json_pack("{s:s, s:s}", "service_id", pr->plan->service->id, "plan_id",
                                 pr->instance_plan->id);
        if (body != NULL && i->dashboard_url != NULL)
            (void)json_object_set_new(body, "dashboard_url", json_string(i->dashboard_url));
        if (body != NULL && i->metadata != NULL)
            (void)json_object_set_new(body, "metadata", json_loads(i->metadata, 0, NULL));
        char *text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
        fprintf(out, "  instance %s\n", text != NULL ? text : "(out of memory)");
        free(text);
        json_decref(body);
    }
    if (pr->bound && pr->binding.verdict == KIT_SUCCEEDED)
        fprintf(out, "  binding %s\n", pr->binding.binding != NULL ? pr->binding.binding : "{}");
    else
        fprintf(out, "  binding: none\n");
    fputc('\n', out);
}

/* --check: an unbind of a binding that was never bound must succeed ("already gone"). */
static void unbind_never_bound(struct plan_run *pr)
{
    char never[ID_MAX];
    new_id("kit-never-bound-", never, sizeof never);
    const struct kit_mode mode = {.label = "[check: a binding never bound]"};
    if (run_op(pr, OSBQ_JOB_UNBIND, pr->instance_id, never, &mode, NULL) != KIT_SUCCEEDED)
        kit_violation(pr->kit, "an unbind of a binding that was never bound must succeed");
    pr->unbind_checked = true;
}

/* Runs op of the list; returns false when it failed (the caller stops or cleans up). */
static bool run_listed(struct plan_run *pr, enum kit_op op)
{
    if (op == KIT_OP_FETCH) {
        fetch(pr);
        return true;
    }
    /* The other operations are named as their job kinds. */
    enum osbq_job_kind kind = osbq_job_kind_from_name(kit_op_name(op));
    if ((kind == OSBQ_JOB_BIND || kind == OSBQ_JOB_UNBIND) && !pr->plan->bindable) {
        fprintf(pr->kit->out, "%s: skipped, the plan is not bindable\n\n", kit_op_name(op));
        return true;
    }
    const struct kit_mode mode = {.rerun = pr->o->check};
    struct kit_outcome *kept = kind == OSBQ_JOB_BIND ? &pr->binding
                               : kind == OSBQ_JOB_PROVISION || kind == OSBQ_JOB_UPDATE
                                   ? &pr->instance
                                   : NULL;
    const char *binding = kind == OSBQ_JOB_BIND || kind == OSBQ_JOB_UNBIND ? pr->binding_id : NULL;
    if (kind == OSBQ_JOB_PROVISION)
        pr->provisioned = true;
    if (kind == OSBQ_JOB_BIND)
        pr->bound = true;
    enum kit_verdict verdict = run_op(pr, kind, pr->instance_id, binding, &mode, kept);
    if (verdict != KIT_SUCCEEDED)
        return false;
    if (kind == OSBQ_JOB_DEPROVISION)
        pr->provisioned = false;
    if (kind == OSBQ_JOB_UPDATE)
        pr->instance_plan = pr->update_plan;
    if (kind == OSBQ_JOB_UNBIND) {
        pr->bound = false;
        if (pr->o->check && !pr->unbind_checked)
            unbind_never_bound(pr);
    }
    return true;
}

/* After a failure in the lifecycle, what a platform does (orphan mitigation): unbind what a
 * bind may have left, deprovision what a provision may have left. */
static void clean_up(struct plan_run *pr)
{
    const struct kit_mode mode = {.label = "[clean-up]"};
    if (pr->bound && pr->plan->bindable &&
        run_op(pr, OSBQ_JOB_UNBIND, pr->instance_id, pr->binding_id, &mode, NULL) == KIT_SUCCEEDED)
        pr->bound = false;
    if (pr->provisioned &&
        run_op(pr, OSBQ_JOB_DEPROVISION, pr->instance_id, NULL, &mode, NULL) == KIT_SUCCEEDED)
        pr->provisioned = false;
}

/* --check: the deprovision of an instance whose provision never finished (stopped part-way, or
 * never polled to its end: a provision a delete halted, whose deprovision names it, decision
 * 0051) and of an instance never provisioned must both succeed. */
static void error_paths(struct plan_run *pr)
{
    char unfinished[ID_MAX], never[ID_MAX];
    new_id("kit-unfinished-", unfinished, sizeof unfinished);
    new_id("kit-never-provisioned-", never, sizeof never);
    const struct kit_mode stop = {.stop_at_progress = true,
                                  .label = "[check: a provision that never finishes]"};
    enum kit_verdict verdict = run_op(pr, OSBQ_JOB_PROVISION, unfinished, NULL, &stop, NULL);
    char halted[ID_MAX];
    memcpy(halted, pr->last_operation, sizeof halted);
    if (verdict == KIT_SUCCEEDED || verdict == KIT_FAILED || verdict == KIT_REFUSED)
        fprintf(pr->kit->out,
                "  (the provision ended before it could be stopped: it reports no progress "
                "before its work, or ends within 100 ms)\n\n");
    const struct kit_mode after = {.label = "[check: an instance that never finished]",
                                   .halted_operation = halted};
    if (run_op(pr, OSBQ_JOB_DEPROVISION, unfinished, NULL, &after, NULL) != KIT_SUCCEEDED)
        kit_violation(pr->kit, "a deprovision of an instance whose provision never finished "
                               "must succeed");
    const struct kit_mode gone = {.label = "[check: an instance never provisioned]"};
    if (run_op(pr, OSBQ_JOB_DEPROVISION, never, NULL, &gone, NULL) != KIT_SUCCEEDED)
        kit_violation(pr->kit, "a deprovision of an instance that was never provisioned must "
                               "succeed");
}

static bool interrupted(const struct kit *kit)
{
    return kit->interrupts != NULL && *kit->interrupts > 0;
}

struct kit_tally kit_plan_run(struct kit *kit, const struct kit_options *o,
                              const struct kit_inputs *in, const struct osbq_plan *plan,
                              const struct osbq_plan *update_plan)
{
    struct plan_run pr = {
        .kit = kit,
        .o = o,
        .in = in,
        .plan = plan,
        .update_plan = update_plan != NULL ? update_plan : plan,
        .instance_plan = plan,
    };
    if (o->instance_id != NULL)
        (void)snprintf(pr.instance_id, sizeof pr.instance_id, "%s", o->instance_id);
    else
        new_id("kit-", pr.instance_id, sizeof pr.instance_id);
    if (o->binding_id != NULL)
        (void)snprintf(pr.binding_id, sizeof pr.binding_id, "%s", o->binding_id);
    else
        new_id("kit-", pr.binding_id, sizeof pr.binding_id);
    unsigned violations = kit->violations;

    const json_t *command = json_object_get(plan->settings, "command");
    char *argv = json_dumps(command, JSON_COMPACT);
    fprintf(kit->out, "plan %s/%s (%s): command %s\ninstance %s, binding %s%s\n\n",
            plan->service->name, plan->name, plan->id, argv != NULL ? argv : "none", pr.instance_id,
            pr.binding_id, o->check ? "; --check: every step runs twice" : "");
    free(argv);

    const enum kit_op *ops = o->op_count > 0 ? o->ops : lifecycle;
    size_t count = o->op_count > 0 ? o->op_count : sizeof lifecycle / sizeof lifecycle[0];
    bool failed = false;
    for (size_t i = 0; i < count && !failed && !interrupted(kit); i++)
        failed = !run_listed(&pr, ops[i]);
    if (failed && o->op_count == 0 && !interrupted(kit))
        clean_up(&pr);
    if (o->check && !interrupted(kit))
        error_paths(&pr);

    fprintf(kit->out, "plan %s/%s: %u operations succeeded, %u failed", plan->service->name,
            plan->name, pr.tally.succeeded, pr.tally.failed);
    if (o->check)
        fprintf(kit->out, "; %u contract violations", kit->violations - violations);
    fprintf(kit->out, "%s\n\n", interrupted(kit) ? "; interrupted" : "");
    kit_outcome_clear(&pr.instance);
    kit_outcome_clear(&pr.binding);
    return pr.tally;
}
