/* Runs exec operations the way a worker does (kit_run.h). A step is one backend_run of the
 * worker's exec backend on this thread, without detaching (backend_call.detached_end NULL): the
 * backend hands the program to the exec watch and waits for its end. The callbacks are the
 * kit's own, with no lease or pool behind them (docs/decisions/0064-kit-keeps-its-own-host.md):
 * cancelled() is the step's deadline, a stop asked for, or an interrupt. */
#include "kit_run.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bind_result.h"
#include "clock.h"
#include "kit_lines.h"
#include "secrets.h"
#include "step_timing.h"
#include "store.h"

/* How often a wait looks at its cancellation. */
#define WAIT_SLICE_MS 10

const char *kit_verdict_name(enum kit_verdict verdict)
{
    switch (verdict) {
    case KIT_SUCCEEDED:
        return "succeeded";
    case KIT_FAILED:
        return "failed";
    case KIT_REFUSED:
        return "REFUSED";
    case KIT_IN_PROGRESS:
        return "in progress";
    case KIT_CANCELLED:
        return "cancelled";
    }
    return "?";
}

enum kit_verdict kit_verdict_of(int rc, const struct osbq_op_result *result,
                                const struct exec_watch_end *end)
{
    if (rc < 0)
        return KIT_CANCELLED;
    if (result->in_progress)
        return KIT_IN_PROGRESS;
    if (result->succeeded)
        return KIT_SUCCEEDED;
    /* The program had its say and said success: the failure is the worker's refusal. */
    if (end != NULL && (end->stop == EXEC_WATCH_TIMEOUT ||
                        (end->stop == EXEC_WATCH_EXITED && !end->lost && WIFEXITED(end->status) &&
                         WEXITSTATUS(end->status) == 0)))
        return KIT_REFUSED;
    return KIT_FAILED;
}

void kit_outcome_clear(struct kit_outcome *o)
{
    osbq_secrets_free_text(o->binding);
    free(o->dashboard_url);
    free(o->metadata);
    memset(o, 0, sizeof *o);
}

/* The keys of an object, sorted and comma-separated, into out: of text's member obj_key, or of
 * text itself when obj_key is NULL; "" when it is not an object. The first 64 keys count. */
static void keys_of(const char *text, const char *obj_key, char *out, size_t size)
{
    out[0] = '\0';
    json_t *root = text != NULL ? json_loads(text, 0, NULL) : NULL;
    json_t *object = obj_key != NULL ? json_object_get(root, obj_key) : root;
    if (json_is_object(object)) {
        const char *keys[64];
        size_t n = 0;
        const char *key;
        json_t *value;
        json_object_foreach (object, key, value) {
            if (n < sizeof keys / sizeof keys[0])
                keys[n++] = key;
        }
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
                const char *t = keys[j];
                keys[j] = keys[j - 1];
                keys[j - 1] = t;
            }
        size_t used = 0;
        for (size_t i = 0; i < n && used < size; i++)
            used += (size_t)snprintf(out + used, size - used, "%s%s", i > 0 ? "," : "", keys[i]);
    }
    json_decref(root);
}

bool kit_rerun_agrees(enum osbq_job_kind kind, const struct kit_outcome *first,
                      const struct kit_outcome *second, char *why, size_t why_size)
{
    if (second->verdict == KIT_REFUSED) {
        (void)snprintf(why, why_size, "run again, the step was refused: %s", second->description);
        return false;
    }
    if (first->verdict != KIT_SUCCEEDED && first->verdict != KIT_FAILED)
        return true;
    if (second->verdict != first->verdict) {
        (void)snprintf(why, why_size,
                       "run again, the step that %s the first time ended %s: a step must "
                       "converge when it runs twice",
                       kit_verdict_name(first->verdict), kit_verdict_name(second->verdict));
        return false;
    }
    if (kind != OSBQ_JOB_BIND || first->verdict != KIT_SUCCEEDED)
        return true;
    static const char *const parts[] = {NULL, "credentials"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char a[1024], b[1024];
        keys_of(first->binding, parts[i], a, sizeof a);
        keys_of(second->binding, parts[i], b, sizeof b);
        if (strcmp(a, b) != 0) {
            (void)snprintf(why, why_size,
                           "run again, the bind gave %s {%s} instead of {%s}: a rerun must give "
                           "the same kind of binding",
                           parts[i] != NULL ? "credentials" : "a binding", b, a);
            return false;
        }
    }
    return true;
}

void kit_violation(struct kit *kit, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("  VIOLATION: ", kit->out);
    vfprintf(kit->out, fmt, ap);
    fputc('\n', kit->out);
    va_end(ap);
    kit->violations++;
}

/* ---- one step ---- */

/* The state behind one step's callbacks and trace. The trace's output and ended, and the
 * progress and keep-running callbacks, come on the exec watch's thread while this thread waits
 * in backend_run; the backend's lock orders them before its return. */
struct step {
    struct kit *kit;
    const struct kit_mode *mode;
    int64_t deadline_ms;    /* monotonic: the worker's deadline for one step */
    atomic_bool stop;       /* mode->stop_at_progress and progress came */
    atomic_bool overdue;    /* cancelled() found the deadline passed */
    struct kit_lines input; /* the job line */
    struct kit_lines out;   /* stdout */
    struct kit_lines err;   /* stderr */
    int64_t input_ms;       /* monotonic: the job was written (the program about to start) */
    int64_t ended_ms;       /* monotonic: the program was reaped */
    bool ended;             /* it was (end holds how) */
    struct exec_watch_end end;
};

static struct step *step_of(struct backend_call *call)
{
    return call->ctx;
}

static bool interrupted(const struct kit *kit, int times)
{
    return kit->interrupts != NULL && *kit->interrupts >= times;
}

static bool call_cancelled(struct backend_call *call)
{
    struct step *s = step_of(call);
    if (osbq_clock_ms() >= s->deadline_ms)
        atomic_store(&s->overdue, true);
    return atomic_load(&s->overdue) || atomic_load(&s->stop) || interrupted(s->kit, 1);
}

static void call_progress(struct backend_call *call, const char *description)
{
    struct step *s = step_of(call);
    (void)description; /* printed as the stdout line it came from */
    if (s->mode->stop_at_progress)
        atomic_store(&s->stop, true);
}

static bool call_wait(struct backend_call *call, int64_t ms)
{
    int64_t until = osbq_clock_ms() + (ms > 0 ? ms : 0);
    for (;;) {
        if (call_cancelled(call))
            return false;
        int64_t left = until - osbq_clock_ms();
        if (left <= 0)
            return true;
        osbq_clock_sleep_ms(left < WAIT_SLICE_MS ? left : WAIT_SLICE_MS);
    }
}

static bool call_exiting(struct backend_call *call)
{
    return interrupted(step_of(call)->kit, 2);
}

static void trace_input(void *ctx, const char *line, size_t n)
{
    struct step *s = ctx;
    s->input_ms = osbq_clock_ms();
    kit_lines_feed(&s->input, line, n);
    kit_lines_end(&s->input);
}

static void trace_output(void *ctx, int stream, const char *data, size_t n)
{
    struct step *s = ctx;
    struct kit_lines *l = stream == 1 ? &s->out : &s->err;
    if (n == 0)
        kit_lines_end(l);
    else
        kit_lines_feed(l, data, n);
}

static void trace_ended(void *ctx, const struct exec_watch_end *end)
{
    struct step *s = ctx;
    s->ended_ms = osbq_clock_ms();
    s->ended = true;
    s->end = *end;
}

/* Prints how the program ended (rc: what the backend returned). */
static void print_exit(const struct step *s, const struct backend_call *call, int rc)
{
    FILE *out = s->kit->out;
    if (!s->ended) {
        /* Not cancelled first: it could not start, and the backend logged why. */
        fprintf(out, "  exit    the program did not run%s\n",
                rc < 0 ? "" : " (the log line above says why)");
        return;
    }
    long long ms = (long long)(s->ended_ms - s->input_ms);
    const struct exec_watch_end *e = &s->end;
    if (e->stop == EXEC_WATCH_TIMEOUT) {
        json_int_t timeout =
            json_integer_value(json_object_get(call->plan->settings, "timeout_ms"));
        fprintf(out,
                "  exit    ran past the plan's timeout_ms (%lld): its process group got SIGTERM "
                "(SIGKILL 2 s later if still there); reaped after %lld ms\n",
                (long long)timeout, ms);
    } else if (e->stop == EXEC_WATCH_CANCELLED) {
        fprintf(out, "  exit    stopped by the kit (SIGTERM to its process group) after %lld ms\n",
                ms);
    } else if (e->lost) {
        fprintf(out, "  exit    unknown (reaped elsewhere) after %lld ms\n", ms);
    } else if (WIFSIGNALED(e->status)) {
        fprintf(out, "  exit    killed by signal %d after %lld ms\n", WTERMSIG(e->status), ms);
    } else {
        fprintf(out, "  exit    status %d after %lld ms\n", WEXITSTATUS(e->status), ms);
    }
}

static char *dup_or_null(const char *text)
{
    return text != NULL ? strdup(text) : NULL;
}

/* Copies the call's outcome into *out. */
static void take_outcome(const struct backend_call *call, enum kit_verdict verdict,
                         struct kit_outcome *out)
{
    kit_outcome_clear(out);
    out->verdict = verdict;
    const struct osbq_op_result *r = &call->result;
    (void)snprintf(out->description, sizeof out->description, "%s",
                   r->description != NULL ? r->description : "");
    out->instance_usable = r->instance_usable;
    out->update_repeatable = r->update_repeatable;
    if (verdict == KIT_SUCCEEDED) {
        out->dashboard_url = dup_or_null(r->dashboard_url);
        out->metadata = dup_or_null(r->metadata);
        out->binding = dup_or_null(r->binding);
    }
}

/* Prints the step's verdict and what a worker would record. */
static void print_verdict(const struct step *s, const struct backend_call *call,
                          const struct kit_outcome *o, int64_t due_in_ms)
{
    FILE *out = s->kit->out;
    const struct osbq_op_result *r = &call->result;
    switch (o->verdict) {
    case KIT_CANCELLED:
        fprintf(out, "  verdict cancelled: %s\n",
                atomic_load(&s->overdue)
                    ? "past the plan's deadline for this kind; a worker gives the operation back "
                      "and it runs again"
                : atomic_load(&s->stop) ? "stopped on purpose, part-way"
                                        : "interrupted");
        return;
    case KIT_IN_PROGRESS:
        fprintf(out, "  verdict in progress: %s; next step due in %" PRId64 " ms; resume %s\n",
                o->description, due_in_ms, r->resume != NULL ? r->resume : "none");
        return;
    case KIT_SUCCEEDED:
        fprintf(out, "  verdict succeeded: %s\n", o->description);
        if (o->dashboard_url != NULL)
            fprintf(out, "  dashboard_url %s\n", o->dashboard_url);
        if (o->metadata != NULL)
            fprintf(out, "  metadata %s\n", o->metadata);
        if (o->binding != NULL)
            fprintf(out, "  binding %s\n", o->binding);
        return;
    case KIT_FAILED:
    case KIT_REFUSED:
        fprintf(out, "  verdict %s: %s (instance_usable %s, update_repeatable %s)\n",
                o->verdict == KIT_REFUSED ? "REFUSED by the worker" : "failed", o->description,
                o->instance_usable ? "true" : "false", o->update_repeatable ? "true" : "false");
        return;
    }
}

/* The state of one step, its lines shown unless the kit is quiet; NULL when out of memory. */
static struct step *step_new(struct kit *kit, const struct kit_mode *mode, int64_t deadline_s)
{
    struct step *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->kit = kit;
    s->mode = mode;
    s->deadline_ms = osbq_clock_ms() + deadline_s * 1000;
    atomic_init(&s->stop, false);
    atomic_init(&s->overdue, false);
    FILE *shown = kit->quiet ? NULL : kit->out;
    kit_lines_init(&s->input, shown, "  stdin   ");
    kit_lines_init(&s->out, shown, "  stdout  ");
    kit_lines_init(&s->err, shown, "  stderr  ");
    return s;
}

/* What a step's backend returned (rc, call->result), as a worker takes it: a bind's credential
 * lifetime, the verdict into *out, and for a step in progress the resume it saved
 * (*resume_text, caller frees) and the epoch ms its next step is due (*due_ms, by step_due_ms,
 * never after end_ms); printed. */
static void step_outcome(struct step *s, struct backend_call *call, int rc, int64_t end_ms,
                         struct kit_outcome *out, char **resume_text, int64_t *due_ms)
{
    /* As a worker's step does before it records a bind's outcome. */
    if (call->result.succeeded && !call->result.in_progress && call->job->kind == OSBQ_JOB_BIND &&
        call->plan->binding_ttl_s > 0)
        bind_result_add_plan_expiry(call);
    enum kit_verdict verdict = kit_verdict_of(rc, &call->result, s->ended ? &s->end : NULL);
    take_outcome(call, verdict, out);
    int64_t due_in = 0;
    if (verdict == KIT_IN_PROGRESS) {
        int64_t now = osbq_store_now_ms();
        *due_ms = step_due_ms(now, call->result.poll_after_ms, end_ms);
        due_in = *due_ms - now;
        *resume_text = dup_or_null(call->result.resume);
    }
    print_exit(s, call, rc);
    print_verdict(s, call, out, due_in);
    fflush(s->kit->out);
}

/* Runs one step (step: its number; resume: what the previous saved, borrowed), prints it and
 * fills *out; *resume_text and *due_ms as step_outcome sets them. */
static void run_step(struct kit *kit, const struct kit_job *job, const struct kit_mode *mode,
                     uint32_t step, uint32_t attempt, const json_t *resume, int64_t end_ms,
                     struct kit_outcome *out, char **resume_text, int64_t *due_ms)
{
    const struct osbq_plan *plan = job->plan;
    *resume_text = NULL;
    *due_ms = 0;
    struct step *s = step_new(kit, mode, step_deadline_s(plan, job->kind));
    if (s == NULL) {
        kit_outcome_clear(out);
        out->verdict = KIT_FAILED;
        (void)snprintf(out->description, sizeof out->description, "out of memory");
        return;
    }
    json_t *parameters = job->parameters != NULL ? json_loads(job->parameters, 0, NULL) : NULL;
    const struct exec_trace trace = {trace_input, trace_output, trace_ended, s};
    struct osbq_job j = {
        .operation_id = job->operation_id,
        .kind = job->kind,
        .instance_id = job->instance_id,
        .binding_id = job->binding_id,
        .service_id = plan->service->id,
        .plan_id = plan->id,
        .parameters = job->parameters,
        .context = job->context,
        .bind_resource = job->bind_resource,
        .api_version = 217,
        .attempt = attempt,
    };
    struct backend_call call = {
        .job = &j,
        .plan = plan,
        .parameters = parameters,
        .resume = resume,
        .step = step,
        .halted_operation = job->halted_operation,
        .progress = call_progress,
        .cancelled = call_cancelled,
        .wait = call_wait,
        .exiting = call_exiting,
        .ctx = s,
        .exec_watch = kit->watch,
        .exec_trace = &trace,
    };
    fprintf(kit->out, "%s%s%s: step %" PRIu32 "%s, attempt %" PRIu32 " (operation %s)\n",
            mode->label != NULL ? mode->label : "", mode->label != NULL ? " " : "",
            osbq_job_kind_name(job->kind), step, step > 0 ? " (a poll)" : "", attempt,
            job->operation_id);
    fflush(kit->out);
    int rc = backend_run(&backend_exec, &call);
    step_outcome(s, &call, rc, end_ms, out, resume_text, due_ms);
    backend_call_clear(&call);
    json_decref(parameters);
    free(s);
}

/* Sleeps until the epoch ms due, unless interrupted first (false). */
static bool wait_until_due(struct kit *kit, int64_t due)
{
    for (;;) {
        if (interrupted(kit, 1))
            return false;
        int64_t left = due - osbq_store_now_ms();
        if (left <= 0)
            return true;
        osbq_clock_sleep_ms(left < WAIT_SLICE_MS ? left : WAIT_SLICE_MS);
    }
}

void kit_operation(struct kit *kit, const struct kit_job *job, const struct kit_mode *mode,
                   struct kit_outcome *out)
{
    int64_t deadline_s = step_deadline_s(job->plan, job->kind);
    int64_t max_polling_s = step_max_polling_s(job->plan);
    int64_t accepted = osbq_store_now_ms();
    /* What a claim holds: the first step's start, the accept, the steps so far. */
    struct osbq_claim claim = {.started_ms = accepted, .accepted_ms = accepted};
    json_t *resume = NULL;
    memset(out, 0, sizeof *out);
    for (uint32_t step = 0;; step++) {
        if (step == KIT_STEPS_MAX) {
            kit_outcome_clear(out);
            out->verdict = KIT_FAILED;
            (void)snprintf(out->description, sizeof out->description,
                           "The operation did not end within %d steps (the kit's limit).",
                           KIT_STEPS_MAX);
            fprintf(kit->out, "  %s\n", out->description);
            break;
        }
        claim.steps = step;
        enum step_overdue overdue =
            step_overdue(&claim, osbq_store_now_ms(), deadline_s, max_polling_s);
        if (overdue != STEP_ON_TIME) {
            kit_outcome_clear(out);
            out->verdict = KIT_FAILED;
            step_overdue_text(overdue, deadline_s, max_polling_s, out->description,
                              sizeof out->description);
            fprintf(kit->out, "%s: step %" PRIu32 " not run: %s\n", osbq_job_kind_name(job->kind),
                    step, out->description);
            break;
        }
        int64_t end_ms = step_end_ms(&claim, deadline_s, max_polling_s);
        char *saved = NULL;
        int64_t due = 0;
        run_step(kit, job, mode, step, 1, resume, end_ms, out, &saved, &due);
        if (mode->rerun && out->verdict != KIT_CANCELLED) {
            /* The same step again, as after a lost lease or a resend: what it ends with goes
             * on, as the worker records the last holder's result. */
            struct kit_outcome again = {0};
            char *saved_again = NULL;
            int64_t due_again = 0;
            run_step(kit, job, mode, step, 2, resume, end_ms, &again, &saved_again, &due_again);
            char why[BACKEND_DESCRIPTION_MAX + 256];
            if (again.verdict != KIT_CANCELLED &&
                !kit_rerun_agrees(job->kind, out, &again, why, sizeof why))
                kit_violation(kit, "%s", why);
            kit_outcome_clear(out);
            *out = again;
            free(saved);
            saved = saved_again;
            due = due_again;
        }
        if (out->verdict != KIT_IN_PROGRESS || mode->stop_at_progress) {
            free(saved);
            break;
        }
        json_decref(resume);
        /* Written by backend_call_wait_for: an object, or nothing saved. */
        resume = saved != NULL ? json_loads(saved, 0, NULL) : NULL;
        free(saved);
        if (!wait_until_due(kit, due)) {
            kit_outcome_clear(out);
            out->verdict = KIT_CANCELLED;
            (void)snprintf(out->description, sizeof out->description, "interrupted");
            break;
        }
    }
    json_decref(resume);
}
