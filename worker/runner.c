/* The runner: OSBQ_WORKER_CONCURRENCY threads that each take one job at a time from the
 * hand-off queue, claim its operation in Redis, run one step of the plan's backend while keeping
 * the lease alive, and record what it reported: the outcome, or in progress (the operation waits
 * in Redis, held by nobody, until its next step is due); or give the operation back (release)
 * when the step passes its deadline or the worker stops before it is done. */
#include "runner.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "exec_watch.h"
#include "log.h"
#include "secrets.h"
#include "step_timing.h"

/* A result whose recording fails (Redis away) is retried with this backoff until it is
 * recorded, refused, or the worker stops past its grace. */
#define FINISH_BACKOFF_MIN_MS 100
#define FINISH_BACKOFF_MAX_MS 5000
/* Progress reports closer together than this are not written: a backend reporting every few
 * milliseconds (sim with a short duration) would cost a Redis round trip each time, for texts
 * nobody can poll that fast. The lease is renewed regardless. */
#define PROGRESS_MIN_INTERVAL_MS 100
/* After a failed lease renewal, how soon to try again (capped by a third of the lease). */
#define RENEW_RETRY_MS 1000
/* How long runner_destroy waits, on top of the Redis timeout (a release or a last finish may be
 * under way), for cancelled threads to return before it leaves them behind. */
#define EXIT_WAIT_MS 1000
/* Gateways whose notes (due times, ended jobs) one drain of the main thread collects apart;
 * past that many (a worker linked to more gateways, all of whose jobs ended at once), the due
 * times are told to every gateway and the ended jobs to none (those gateways forget them with
 * the worker). */
#define DUE_ORIGINS_MAX 16
/* Room for an operation id a gateway made (32 hex digits) and its NUL, with margin. */
#define OPERATION_ID_MAX 72

/* Why a run gave its operation up; also its job_end result. */
#define GAVE_UP_DEADLINE   "past_deadline" /* the backend ran past the plan's deadline */
#define GAVE_UP_SHUTDOWN   "released"      /* the worker stopped (or the backend did) first */
#define GAVE_UP_LEASE_LOST "lease_lost"    /* the operation is no longer this worker's */

struct run;

/* A job handed over, with the connection it came through (runner_submit). */
struct queued_job {
    struct osbq_job job;
    unsigned origin;
};

/* What the gateway of one origin is told next (runner_take_notes): the earliest due time of
 * the waits recorded for its jobs, and the jobs of it that ended. */
struct origin_note {
    unsigned origin;
    int64_t due_ms; /* 0: none */
    char *ended;    /* owned: operation ids separated by spaces, or NULL */
    size_t ended_len, ended_cap;
};

/* One runner thread. */
struct slot {
    struct runner *r; /* its runner */
    pthread_t thread; /* the thread (started when index < r->started) */
    bool done;        /* the thread returned: join it; guarded by r->lock */
    struct run *run;  /* the job it runs once claimed, or NULL; guarded by r->lock */
};

struct runner {
    const struct osbq_config *cfg;        /* borrowed: lease_ms and worker_concurrency */
    const struct osbq_catalog *catalog;   /* borrowed: plans by id */
    struct osbq_store *store;             /* borrowed, shared by every thread */
    const char *worker_id;                /* borrowed: recorded in each claimed operation */
    const struct worker_metrics *metrics; /* borrowed, or NULL: what is counted */
    const struct osbq_secrets *secrets;   /* borrowed, or NULL: bind results stored in plaintext */
    unsigned concurrency;                 /* slots, and threads */
    struct slot *slots;                   /* the pool, concurrency entries */
    unsigned started;                     /* threads actually started */
    int event_fd;                         /* counts ended jobs, for the main thread's poll */
    struct exec_watch *watch;             /* the exec programs' loop, handed to every call */
    struct runner *next_left;             /* next runner left behind (runner_destroy) */

    pthread_mutex_t lock;        /* guards the fields below */
    pthread_cond_t work;         /* a job was queued, or the runner closed or cancelled */
    pthread_cond_t wake;         /* the runner cancelled or a run gave up: sleeping backends and
                                  * retries stop */
    pthread_cond_t ended;        /* a thread returned */
    struct queued_job *queue;    /* ring of concurrency jobs handed over and not yet taken */
    unsigned head;               /* index of the oldest queued job */
    unsigned queued;             /* jobs in the ring */
    unsigned busy;               /* jobs queued or running: never more than concurrency */
    unsigned given_up;           /* of those, jobs whose operation was given up while their backend
                                  * still runs */
    unsigned alive;              /* threads started and not returned */
    bool closed;                 /* runner_submit refuses jobs */
    bool cancelled;              /* backends must stop; queued jobs are dropped */
    bool exiting;                /* the process exits: even backends ignoring cancelled() return */
    unsigned detached;           /* steps handed off by their backend (BACKEND_DETACHED), not yet
                                  * recorded: held by the runner but by no slot */
    struct step *detached_steps; /* of those, the ones still going on */
    struct step *ended_steps;    /* of those, the ones ended, oldest first, to be recorded */
    struct step *ended_steps_tail;
    struct origin_note notes[DUE_ORIGINS_MAX]; /* since runner_take_notes, by origin */
    unsigned note_count;                       /* entries of notes in use */
    int64_t due_any_ms; /* the earliest due time that found notes full; 0: none */
};

/* Runners whose threads did not all return (runner_destroy): kept, never freed, so the threads
 * left behind use valid memory until the process exits, and the leak checker finds them
 * reachable. */
static struct runner *volatile left_behind;

/* One claimed job on one runner thread: the state behind its backend_call's callbacks. Used by
 * that thread only, but for the two fields under r->lock, which runner_destroy may set. */
struct run {
    struct runner *r;           /* the runner */
    const struct osbq_job *job; /* the job; borrowed */
    unsigned origin;            /* the connection the job came through (runner_submit) */
    int64_t deadline_s;         /* the plan's deadline for the kind */
    int64_t deadline_ms;        /* monotonic time the backend is abandoned at */
    bool renew_failing;         /* a renewal failed and was logged; log again only once it works */
    int64_t next_renew_ms;      /* monotonic time the lease must be renewed by */
    int64_t last_text_ms;       /* monotonic time the last progress text was written */
    const char *gave_up;        /* GAVE_UP_*: this attempt no longer holds the operation and
                                 * records nothing; NULL while it does. Guarded by r->lock */
    bool recording;             /* the backend returned an outcome this thread records: nobody
                                 * gives the operation up any more. Guarded by r->lock */
    /* A renewal sent without waiting (renew, off the runner's threads), until renewal_settle
     * reads it; NULL when none is under way. */
    struct osbq_store_call *renewal;
    int64_t renewal_sent_ms; /* monotonic time renewal was sent */
    char *pending_text;      /* a progress text that came while renewal was under way */
};

/* Set on the runner's own threads. A renewal made there waits for its answer: the thread has
 * nothing else to do. One made on another thread (the exec loop's, which watches every
 * program and must not wait for Redis once per program) is sent without waiting and read
 * later (renewal_settle). */
static _Thread_local bool on_runner_thread;

static int64_t now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic time in seconds, for durations measured finer than a millisecond. */
static double now_seconds(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Waits on cond until the monotonic deadline (the conds use CLOCK_MONOTONIC), a signal, or a
 * spurious wake-up; callers re-check their condition. */
static void wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t deadline_ms)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline_ms / 1000),
                          .tv_nsec = (long)(deadline_ms % 1000) * 1000000L};
    (void)pthread_cond_timedwait(cond, lock, &ts);
}

/* Sleeps ms unless the runner gets cancelled first; returns false when it did. */
static bool sleep_unless_cancelled(struct runner *r, int64_t ms)
{
    int64_t deadline = now_ms() + ms;
    pthread_mutex_lock(&r->lock);
    while (!r->cancelled && now_ms() < deadline)
        wait_until(&r->wake, &r->lock, deadline);
    bool cancelled = r->cancelled;
    pthread_mutex_unlock(&r->lock);
    return !cancelled;
}

/* Tells the main thread a slot is free again, or that a job gave its operation up. */
static void notify(struct runner *r)
{
    uint64_t one = 1;
    /* Fails only when the counter would overflow, which a free slot count never nears. */
    (void)!write(r->event_fd, &one, sizeof one);
}

int64_t runner_deadline_s(const struct osbq_plan *plan, enum osbq_job_kind kind)
{
    const char *name = osbq_job_kind_name(kind);
    int64_t s = plan != NULL && name != NULL ? osbq_plan_deadline_s(plan, name) : 0;
    /* The catalog allows 1 s to a week; anything else (an unknown kind, a value that is not an
     * integer) falls back to the default rather than abandon a backend at once or never. */
    return s >= 1 && s <= RUNNER_DEADLINE_S_MAX ? s : OSBQ_CATALOG_DEADLINE_S_DEFAULT;
}

int64_t runner_finish_backoff_ms(int64_t previous_ms)
{
    if (previous_ms < FINISH_BACKOFF_MIN_MS)
        return FINISH_BACKOFF_MIN_MS;
    return min64(previous_ms * 2, FINISH_BACKOFF_MAX_MS);
}

/* ---- giving an operation back ---- */

/* Marks run as no longer holding its operation, for why (GAVE_UP_*), unless it already is or
 * its outcome is being recorded. Caller holds r->lock. Returns true when this call did it: the
 * caller then releases the operation (but for a lost lease). */
static bool give_up_locked(struct run *run, const char *why)
{
    struct runner *r = run->r;
    if (run->gave_up != NULL || run->recording)
        return false;
    run->gave_up = why;
    r->given_up++;
    /* The run's thread may sleep in wait; the main thread may wait for nothing held. */
    pthread_cond_broadcast(&r->wake);
    notify(r);
    return true;
}

/* Gives job's operation back (osbq_store_release: queued again and due at once, so the
 * recovery loop resends it to a worker), counts it released, and logs one job_released line; a
 * deadline's is a warning that names it. The line names the job's ids itself: it may be written
 * from a thread whose log context is another's (release_stuck). */
static void release_op(struct runner *r, const struct osbq_job *job, const char *why,
                       int64_t deadline_s)
{
    struct osbq_error err = {0};
    worker_metrics_operation(r->metrics, job, WORKER_OP_RELEASED);
    int rc = osbq_store_release(r->store, job->operation_id, r->worker_id, &err);
    bool deadline = strcmp(why, GAVE_UP_DEADLINE) == 0;
    enum osbq_log_level level = rc < 0 || deadline ? OSBQ_LOG_WARN : OSBQ_LOG_INFO;
    if (!osbq_log_enabled(level))
        return;
    struct osbq_log_line line;
    osbq_log_line_begin(&line, level, "job_released");
    osbq_log_line_str(&line, "op", job->operation_id);
    osbq_log_line_str(&line, "kind", osbq_job_kind_name(job->kind));
    osbq_log_line_str(&line, "instance", job->instance_id);
    osbq_log_line_str(&line, "binding", job->binding_id);
    osbq_log_line_str(&line, "request_id", job->request_identity);
    osbq_log_line_str(&line, "reason", deadline ? "deadline" : "shutdown");
    if (deadline) {
        osbq_log_line_int(&line, "deadline_s", deadline_s);
        osbq_log_line_str(&line, "backend", "abandoned: its thread stays busy until it returns");
    }
    osbq_log_line_str(&line, "result", rc > 0 ? "released" : rc == 0 ? "not_ours" : "failed");
    if (rc < 0)
        osbq_log_line_str(&line, "error", err.text);
    osbq_log_line_str(&line, "next",
                      rc > 0    ? "due again at once: the recovery loop resends it"
                      : rc == 0 ? "it ended, or another worker holds it"
                                : "it runs again once its lease expires");
    osbq_log_line_end(&line);
}

/* Whether the backend must stop: the lease was lost, the deadline passed, or the runner was
 * cancelled. The first call that finds the deadline passed or the runner cancelled gives the
 * operation back. */
static void renewal_settle(struct run *run, bool wait);

static bool must_stop(struct run *run, int64_t now)
{
    struct runner *r = run->r;
    const char *why = NULL;
    /* A renewal sent without waiting may have answered that the lease is lost. */
    renewal_settle(run, false);
    pthread_mutex_lock(&r->lock);
    if (run->gave_up == NULL) {
        if (now >= run->deadline_ms)
            why = GAVE_UP_DEADLINE;
        else if (r->cancelled)
            why = GAVE_UP_SHUTDOWN;
        if (why != NULL && !give_up_locked(run, why))
            why = NULL;
    }
    bool stop = run->gave_up != NULL;
    pthread_mutex_unlock(&r->lock);
    if (why != NULL)
        release_op(r, run->job, why, run->deadline_s);
    return stop;
}

/* ---- the lease and the callbacks a backend gets ---- */

/* Applies the answer rc of a renewal sent at sent_ms (err: why it failed). */
static void renew_apply(struct run *run, int rc, const struct osbq_error *err, int64_t sent_ms,
                        int64_t now)
{
    struct runner *r = run->r;
    int64_t lease = (int64_t)r->cfg->lease_ms;
    if (rc > 0) {
        if (run->renew_failing)
            log_info("operation %s: lease renewed again", run->job->operation_id);
        run->renew_failing = false;
        run->next_renew_ms = sent_ms + lease / 3;
    } else if (rc == 0) {
        log_warnx("operation %s: lease lost (the operation ended or another worker took it "
                  "over), stopping without recording a result",
                  run->job->operation_id);
        pthread_mutex_lock(&r->lock);
        bool lost = give_up_locked(run, GAVE_UP_LEASE_LOST);
        pthread_mutex_unlock(&r->lock);
        if (lost)
            worker_metrics_operation(r->metrics, run->job, WORKER_OP_LOST);
    } else {
        if (!run->renew_failing)
            log_warnx("operation %s: cannot renew the lease (%s), retrying", run->job->operation_id,
                      err->text);
        run->renew_failing = true;
        run->next_renew_ms = now + min64(RENEW_RETRY_MS, lease / 3);
    }
}

static void renew(struct run *run, const char *description, int64_t now);

/* Reads the answer of the renewal sent without waiting, if it came (wait: waits for it; the
 * pipeline answers within the Redis timeout), and applies it; then sends the progress text
 * that came meanwhile, unless waiting (the step is ending). */
static void renewal_settle(struct run *run, bool wait)
{
    if (run->renewal == NULL)
        return;
    if (wait)
        osbq_store_call_wait(run->renewal);
    else if (!osbq_store_call_answered(run->renewal))
        return;
    struct osbq_error err = {0};
    int rc = osbq_store_progress_result(run->renewal, &err);
    osbq_store_call_free(&run->renewal);
    int64_t now = now_ms();
    renew_apply(run, rc, &err, run->renewal_sent_ms, now);
    char *text = run->pending_text;
    run->pending_text = NULL;
    if (text != NULL && !wait && rc > 0)
        renew(run, text, now);
    free(text);
}

/* Sends the renewal without waiting (off the runner's threads). Returns true when it went (or
 * one already under way takes description along), false to renew the blocking way (no
 * pipeline, or out of memory). */
static bool renew_unwaited(struct run *run, const char *description, int64_t now)
{
    struct runner *r = run->r;
    if (run->renewal != NULL) {
        /* One at a time: the one under way renews the lease; the latest text follows it. */
        if (description != NULL) {
            char *text = strdup(description);
            if (text != NULL) {
                free(run->pending_text);
                run->pending_text = text;
            }
        }
        return true;
    }
    struct osbq_error err = {0};
    struct osbq_store_call *call =
        osbq_store_progress_call(r->store, run->job->operation_id, r->worker_id, description,
                                 (int64_t)r->cfg->lease_ms, &err);
    if (call == NULL)
        return false;
    if (osbq_store_call_start(r->store, call) < 0) {
        osbq_store_call_free(&call);
        return false;
    }
    run->renewal = call;
    run->renewal_sent_ms = now;
    if (description != NULL)
        run->last_text_ms = now;
    /* Not due again before its answer is read (renewal_settle sets the next time). */
    run->next_renew_ms = now + (int64_t)r->cfg->lease_ms / 3;
    return true;
}

/* Writes description (NULL: none) into the operation and renews its lease. */
static void renew(struct run *run, const char *description, int64_t now)
{
    struct runner *r = run->r;
    if (!on_runner_thread) {
        renewal_settle(run, false);
        if (renew_unwaited(run, description, now))
            return;
    }
    struct osbq_error err = {0};
    int rc = osbq_store_progress(r->store, run->job->operation_id, r->worker_id, description,
                                 (int64_t)r->cfg->lease_ms, &err);
    /* Counted even when the write failed, so a Redis outage costs one attempt per interval. */
    if (description != NULL)
        run->last_text_ms = now;
    renew_apply(run, rc, &err, now, now);
}

static void call_progress(struct backend_call *call, const char *description)
{
    struct run *run = call->ctx;
    int64_t now = now_ms();
    /* Past the deadline or given up: the lease is not renewed any more. */
    if (must_stop(run, now))
        return;
    if (now - run->last_text_ms < PROGRESS_MIN_INTERVAL_MS && now < run->next_renew_ms)
        return;
    renew(run, description, now);
}

static bool call_cancelled(struct backend_call *call)
{
    struct run *run = call->ctx;
    return must_stop(run, now_ms());
}

static bool call_wait(struct backend_call *call, int64_t ms)
{
    struct run *run = call->ctx;
    struct runner *r = run->r;
    int64_t until = now_ms() + (ms > 0 ? ms : 0);
    for (;;) {
        int64_t now = now_ms();
        if (must_stop(run, now))
            return false;
        if (now >= run->next_renew_ms) {
            /* A long quiet step must not let the lease expire under it; a wait of 0 ms is how
             * a step that does not sleep here (a program watched by the exec loop) renews. */
            renew(run, NULL, now);
            continue;
        }
        if (now >= until)
            return true;
        pthread_mutex_lock(&r->lock);
        /* Checked under the lock the cancellation takes, so its wake-up is not missed. */
        if (!r->cancelled && run->gave_up == NULL)
            wait_until(&r->wake, &r->lock,
                       min64(min64(until, run->next_renew_ms), run->deadline_ms));
        pthread_mutex_unlock(&r->lock);
    }
}

static bool call_exiting(struct backend_call *call)
{
    struct run *run = call->ctx;
    pthread_mutex_lock(&run->r->lock);
    bool exiting = run->r->exiting;
    pthread_mutex_unlock(&run->r->lock);
    return exiting;
}

/* ---- one job ---- */

/* Writes the job's start or end line: event "job_start" or "job_end"; result, description,
 * duration_ms and due_in_ms (each when >= 0; due_in_ms: a step that ended in progress) only on
 * the end line, late_ms (>= 0: how long after its due time a poll was claimed) on the start
 * line. step: the step the job runs (0: the first). */
static void log_job(const struct osbq_job *job, const char *event, uint32_t step,
                    const char *result, const char *description, int64_t duration_ms,
                    int64_t due_in_ms, int64_t late_ms)
{
    /* A failed operation is what an on-call person looks for: a warning, with its gist. */
    bool failed = result != NULL && strcmp(result, "failed") == 0;
    enum osbq_log_level level = failed ? OSBQ_LOG_WARN : OSBQ_LOG_INFO;
    if (!osbq_log_enabled(level))
        return;
    struct osbq_log_line line;
    osbq_log_line_begin(&line, level, event);
    osbq_log_line_str(&line, "op", job->operation_id);
    osbq_log_line_str(&line, "kind", osbq_job_kind_name(job->kind));
    osbq_log_line_str(&line, "instance", job->instance_id);
    osbq_log_line_str(&line, "binding", job->binding_id);
    osbq_log_line_str(&line, "plan", job->plan_id);
    osbq_log_line_int(&line, "attempt", job->attempt);
    if (step > 0)
        osbq_log_line_int(&line, "step", step);
    osbq_log_line_str(&line, "request_id", job->request_identity);
    osbq_log_line_str(&line, "trace", job->trace);
    osbq_log_line_str(&line, "result", result);
    if (failed && description != NULL) {
        char detail[96];
        osbq_log_first_words(description, 8, detail, sizeof detail);
        osbq_log_line_str(&line, "detail", detail);
    }
    osbq_log_line_str(&line, "description", description);
    if (duration_ms >= 0)
        osbq_log_line_int(&line, "duration_ms", duration_ms);
    if (due_in_ms >= 0)
        osbq_log_line_int(&line, "due_in_ms", due_in_ms);
    if (late_ms >= 0)
        osbq_log_line_int(&line, "late_ms", late_ms);
    osbq_log_line_end(&line);
}

/* Finds the plan and backend, parses the parameters and runs the backend. Returns 0 with the
 * outcome in call->result (a failure when something is missing), -1 when cancelled. */
static int run_backend(struct runner *r, struct backend_call *call, json_t **parameters)
{
    const struct osbq_job *job = call->job;
    char text[BACKEND_DESCRIPTION_MAX];
    const struct osbq_plan *plan = osbq_catalog_plan(r->catalog, job->plan_id);
    if (plan == NULL) {
        (void)snprintf(text, sizeof text, "The plan %s is no longer in the broker's catalog.",
                       job->plan_id);
        backend_call_fail(call, text, true, false);
        return 0;
    }
    const struct backend *backend = backend_find(plan->backend);
    if (backend == NULL) {
        /* The catalog only names known backends, so only a build mismatch gets here. */
        (void)snprintf(text, sizeof text, "The %s backend is not available in this broker.",
                       plan->backend);
        backend_call_fail(call, text, true, false);
        return 0;
    }
    if (job->parameters != NULL) {
        json_error_t jerr;
        *parameters = json_loads(job->parameters, 0, &jerr);
        /* The gateway checked them: an object that does not parse here is a broker bug. */
        if (!json_is_object(*parameters)) {
            log_warnx("operation %s: parameters are not a JSON object (%s)", job->operation_id,
                      jerr.text);
            backend_call_fail(call, "The broker could not read the operation's parameters.", true,
                              false);
            return 0;
        }
    }
    call->plan = plan;
    call->parameters = *parameters;
    return backend_run(backend, call);
}

int runner_add_expiry(json_t *binding, int64_t ttl_s, time_t now)
{
    if (!json_is_object(binding))
        return -1;
    if (ttl_s <= 0)
        return 0;
    json_t *metadata = json_object_get(binding, "metadata");
    if (metadata == NULL) {
        metadata = json_object();
        if (json_object_set_new(binding, "metadata", metadata) < 0)
            return -1;
    } else if (!json_is_object(metadata)) {
        return -1;
    }
    /* The backend knows best when its credentials really stop working. */
    if (json_object_get(metadata, "expires_at") != NULL)
        return 0;
    if ((int64_t)now < 0 || ttl_s > INT64_MAX - (int64_t)now)
        return -1;
    /* Renewing at 80% leaves a fifth of the lifetime (at least 12 s of the 60 s minimum, hours
     * for real lifetimes) to rotate the credentials before the old ones stop working. */
    time_t times[2] = {(time_t)((int64_t)now + ttl_s), (time_t)((int64_t)now + ttl_s * 8 / 10)};
    static const char *const keys[2] = {"expires_at", "renew_before"};
    for (size_t i = 0; i < 2; i++) {
        struct tm tm;
        char text[64];
        /* The spec's "yyyy-mm-ddThh:mm:ss.sZ": one fractional digit, always 0 here. */
        if (gmtime_r(&times[i], &tm) == NULL ||
            strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S.0Z", &tm) == 0 ||
            json_object_set_new(metadata, keys[i], json_string(text)) < 0)
            return -1;
    }
    return 0;
}

void runner_add_plan_expiry(struct backend_call *call)
{
    json_t *binding =
        call->result.binding != NULL ? json_loads(call->result.binding, 0, NULL) : json_object();
    if (runner_add_expiry(binding, call->plan->binding_ttl_s, time(NULL)) == 0) {
        if (backend_call_set_binding(call, binding) == 0)
            return;
    } else {
        json_decref(binding);
    }
    log_warnx("operation %s: cannot add the plan's binding_ttl_s to the binding (out of memory "
              "or the backend's metadata is not an object)",
              call->job->operation_id);
    backend_call_fail(call, "The broker could not set the binding's expiry.", true, false);
}

/* Seals a successful bind's result under the first key of OSBQ_SECRET_KEY_FILE, bound to its
 * binding (docs/decisions/0007): Redis only ever receives the envelope. Returns the envelope
 * (caller frees; the plaintext stays in the call, which zeroes it) or NULL when there is
 * nothing to seal; a bind that cannot be sealed fails rather than store plaintext. */
static char *seal_binding(const struct runner *r, const struct osbq_job *job,
                          struct backend_call *call)
{
    if (r->secrets == NULL || job->kind != OSBQ_JOB_BIND || !call->result.succeeded ||
        call->result.binding == NULL)
        return NULL;
    const struct osbq_secret_place place = {r->cfg->namespace_, job->instance_id, job->binding_id};
    char *sealed =
        osbq_secrets_seal(r->secrets, &place, call->result.binding, strlen(call->result.binding));
    if (sealed != NULL) {
        call->result.binding = sealed;
        return sealed;
    }
    log_warnx("operation %s: cannot seal the binding's credentials (out of memory)",
              job->operation_id);
    backend_call_fail(call, "The broker could not encrypt the binding's credentials.", true, false);
    return NULL;
}

/* Records the outcome (osbq_store_finish) or, for a step that ended in progress, the wait for
 * the next step due at due_ms (osbq_store_wait), retrying with backoff while Redis fails: until
 * it is recorded (1) or refused because the operation is no longer this worker's (0), or the
 * runner is cancelled (the worker stopping past its grace: one last try, then -1). A report
 * that timed out may still have been recorded; the retry is then refused (0), never recorded
 * twice. */
static int record(struct run *run, const struct osbq_op_result *result, int64_t due_ms)
{
    struct runner *r = run->r;
    const char *op = run->job->operation_id;
    int64_t backoff = FINISH_BACKOFF_MIN_MS;
    unsigned failures = 0;
    bool last = false;
    for (;;) {
        struct osbq_error err = {0};
        int rc = result->in_progress
                     ? osbq_store_wait(r->store, op, r->worker_id, result, due_ms, &err)
                     : osbq_store_finish(r->store, op, r->worker_id, result, &err);
        if (rc > 0 && failures > 0)
            log_info("operation %s: result recorded after %u failed attempts", op, failures);
        if (rc == 0)
            log_warnx("operation %s: no longer this worker's (recorded by an earlier report that "
                      "timed out, ended otherwise, or taken over after its lease ran out); "
                      "result dropped",
                      op);
        if (rc >= 0)
            return rc;
        failures++;
        if (last) {
            log_errorx("operation %s: the worker is stopping and still cannot record the result "
                       "(%s); the operation runs again once its lease expires",
                       op, err.text);
            return -1;
        }
        if (failures == 1)
            log_warnx("operation %s: cannot record the result (%s), retrying with backoff until "
                      "Redis answers",
                      op, err.text);
        last = !sleep_unless_cancelled(r, backoff);
        backoff = runner_finish_backoff_ms(backoff);
        worker_metrics_finish_retry(r->metrics);
    }
}

/* The note for origin, made when there is room; NULL when DUE_ORIGINS_MAX origins have notes.
 * Called with r->lock held. */
static struct origin_note *note_of(struct runner *r, unsigned origin)
{
    for (unsigned i = 0; i < r->note_count; i++)
        if (r->notes[i].origin == origin)
            return &r->notes[i];
    if (r->note_count == DUE_ORIGINS_MAX)
        return NULL;
    struct origin_note *n = &r->notes[r->note_count++];
    *n = (struct origin_note){.origin = origin};
    return n;
}

/* Keeps due_ms for the gateway the job came from (runner_take_notes): it sends the next step
 * then, rather than when its next full scan finds it. */
static void note_due(struct runner *r, unsigned origin, int64_t due_ms)
{
    pthread_mutex_lock(&r->lock);
    struct origin_note *n = note_of(r, origin);
    if (n != NULL) {
        if (n->due_ms == 0 || due_ms < n->due_ms)
            n->due_ms = due_ms;
    } else if (r->due_any_ms == 0 || due_ms < r->due_any_ms) {
        r->due_any_ms = due_ms;
    }
    pthread_mutex_unlock(&r->lock);
}

/* Tells the gateway the job came from that its step ended (or never ran), so it counts the
 * running steps of each tenant (docs/reliability.md, fairness). A job of no origin, or of an
 * origin that finds the notes full, is not told: that gateway forgets it with the worker. */
static void note_ended(struct runner *r, unsigned origin, const char *operation_id)
{
    if (origin == 0 || operation_id == NULL)
        return;
    size_t len = strlen(operation_id);
    pthread_mutex_lock(&r->lock);
    struct origin_note *n = note_of(r, origin);
    if (n != NULL && n->ended_len + len + 2 > n->ended_cap) {
        size_t cap = (n->ended_cap ? n->ended_cap : 256) * 2 + len;
        char *grown = realloc(n->ended, cap);
        if (grown != NULL) {
            n->ended = grown;
            n->ended_cap = cap;
        }
    }
    if (n != NULL && n->ended_len + len + 2 <= n->ended_cap) {
        if (n->ended_len > 0)
            n->ended[n->ended_len++] = ' ';
        memcpy(n->ended + n->ended_len, operation_id, len + 1);
        n->ended_len += len;
    }
    pthread_mutex_unlock(&r->lock);
}

/* Records what the backend's step reported (call->result): the outcome, or in progress the wait
 * for its next step, due by step_due_ms but never after end_ms. Counts it and returns the
 * job_end result; *due_in_ms is set for a wait recorded, else -1. */
static const char *record_step(struct run *run, struct backend_call *call, int64_t end_ms,
                               double backend_seconds, int64_t *due_in_ms)
{
    struct runner *r = run->r;
    const struct osbq_job *job = run->job;
    *due_in_ms = -1;
    if (call->result.in_progress) {
        int64_t now = osbq_store_now_ms();
        int64_t due = step_due_ms(now, call->result.poll_after_ms, end_ms);
        int recorded = record(run, &call->result, due);
        if (recorded > 0) {
            /* A step, not an outcome: the operation goes on, held by nobody. */
            worker_metrics_step(r->metrics);
            note_due(r, run->origin, due);
            *due_in_ms = due - now;
            return "waiting";
        }
        worker_metrics_operation(r->metrics, job,
                                 recorded == 0 ? WORKER_OP_LOST : WORKER_OP_RELEASED);
        return recorded == 0 ? "dropped" : "not_recorded";
    }
    if (call->result.succeeded && job->kind == OSBQ_JOB_BIND && call->plan != NULL &&
        call->plan->binding_ttl_s > 0)
        runner_add_plan_expiry(call);
    char *sealed = seal_binding(r, job, call);
    int recorded = record(run, &call->result, 0);
    if (sealed != NULL) {
        /* The envelope goes; the plaintext stays in the call until it is cleared. */
        call->result.binding = NULL;
        free(sealed);
    }
    /* Not recorded (the worker stopping while Redis is away) counts as released: another
     * worker runs it once its lease expires. */
    worker_metrics_operation(r->metrics, job,
                             recorded > 0
                                 ? (call->result.succeeded ? WORKER_OP_SUCCEEDED : WORKER_OP_FAILED)
                             : recorded == 0 ? WORKER_OP_LOST
                                             : WORKER_OP_RELEASED);
    if (recorded > 0)
        worker_metrics_duration(r->metrics, job->kind, backend_seconds);
    if (recorded > 0)
        return call->result.succeeded ? "succeeded" : "failed";
    return recorded == 0 ? "dropped" : "not_recorded";
}

/* Runs the claimed step: the backend, unless the operation ran out of time as a whole
 * (step_overdue: then it fails without running), with the state its previous step saved.
 * Returns what run_backend returns. */
static int run_step(struct runner *r, struct backend_call *call, const struct osbq_claim *claim,
                    int64_t deadline_s, int64_t max_polling_s, json_t **parameters, json_t **resume)
{
    enum step_overdue overdue = step_overdue(claim, osbq_store_now_ms(), deadline_s, max_polling_s);
    if (overdue != STEP_ON_TIME) {
        char text[BACKEND_DESCRIPTION_MAX];
        step_overdue_text(overdue, deadline_s, max_polling_s, text, sizeof text);
        backend_call_fail(call, text, true, true);
        return 0;
    }
    if (claim->resume != NULL) {
        *resume = json_loads(claim->resume, 0, NULL);
        /* Written by backend_call_wait_for: one that does not parse is a broker bug. */
        if (!json_is_object(*resume)) {
            backend_call_fail(call, "The broker could not read the state its previous step saved.",
                              true, false);
            return 0;
        }
    }
    call->resume = *resume;
    call->step = claim->steps;
    return run_backend(r, call, parameters);
}

/* One job from its claim to its recording. On the heap: a detached step (BACKEND_DETACHED)
 * outlives the runner thread that started it, and is recorded by whichever runner thread takes
 * it once its backend ends it. */
struct step {
    struct osbq_job job; /* owned */
    unsigned origin;     /* the connection it came through (runner_submit) */
    struct run run;
    struct backend_call call;
    json_t *parameters;      /* the parsed parameters the call borrows */
    json_t *resume;          /* the parsed state the previous step saved, the call borrows */
    int64_t max_polling_s;   /* the plan's maximum_polling_duration (step_max_polling_s) */
    struct osbq_claim claim; /* what the claim returned (the saved state of a poll step) */
    int64_t started_ms;      /* monotonic time of the claim */
    double backend_started;  /* now_seconds() when the backend was called */
    /* Guarded by r->lock: */
    bool detached; /* its runner thread returned; in r->detached_steps or r->ended_steps */
    bool ended;    /* the backend ended it (detached_end) */
    int end_rc;    /* what the backend ended it with */
    struct step *prev, *next; /* in r->detached_steps, then (next only) in r->ended */
};

static struct step *step_of(struct backend_call *call)
{
    struct run *run = call->ctx;
    return (struct step *)(void *)((char *)run - offsetof(struct step, run));
}

/* Ends the step with what the backend answered (rc: 0 a result, -1 none): records it, or
 * gives the operation back, and writes the job's end line. Returns true when its operation was
 * given up (counted in r->given_up until the caller takes it off). */
static bool end_step(struct step *st, int rc)
{
    struct runner *r = st->run.r;
    const struct osbq_job *job = &st->job;
    double backend_seconds = now_seconds() - st->backend_started;
    /* The answer of a renewal still under way decides whether the lease is still ours. */
    renewal_settle(&st->run, true);
    /* A backend that stopped without an outcome and without being told to (or told only that
     * the process exits) still leaves an operation to give back. */
    const char *release_why = NULL;
    pthread_mutex_lock(&r->lock);
    if (rc < 0 && give_up_locked(&st->run, GAVE_UP_SHUTDOWN))
        release_why = GAVE_UP_SHUTDOWN;
    const char *gave_up = st->run.gave_up;
    st->run.recording = gave_up == NULL;
    pthread_mutex_unlock(&r->lock);
    if (release_why != NULL)
        release_op(r, job, release_why, st->run.deadline_s);

    const char *outcome = gave_up;
    int64_t due_in_ms = -1;
    if (gave_up == NULL)
        outcome = record_step(&st->run, &st->call,
                              step_end_ms(&st->claim, st->run.deadline_s, st->max_polling_s),
                              backend_seconds, &due_in_ms);
    /* Past its deadline, whatever the backend finally reported was dropped: not its text. */
    log_job(job, "job_end", st->claim.steps, outcome,
            gave_up == NULL ? st->call.result.description : NULL, now_ms() - st->started_ms,
            due_in_ms, -1);
    return gave_up != NULL;
}

static void free_step(struct step *st)
{
    /* The pipeline's thread must be done with the run before it goes (normally end_step
     * settled it already). */
    renewal_settle(&st->run, true);
    free(st->run.pending_text);
    json_decref(st->parameters);
    json_decref(st->resume);
    backend_call_clear(&st->call);
    osbq_claim_clear(&st->claim);
    osbq_job_clear(&st->job);
    free(st);
}

/* The backend ended a detached step, on its own thread: the step waits for a runner thread to
 * record it. Before its runner thread came back from the backend, that thread records it. */
static void step_detached_end(struct backend_call *call, int rc)
{
    struct step *st = step_of(call);
    struct runner *r = st->run.r;
    pthread_mutex_lock(&r->lock);
    st->ended = true;
    st->end_rc = rc;
    if (st->detached) {
        if (st->prev != NULL)
            st->prev->next = st->next;
        else
            r->detached_steps = st->next;
        if (st->next != NULL)
            st->next->prev = st->prev;
        st->prev = st->next = NULL;
        if (r->ended_steps_tail != NULL)
            r->ended_steps_tail->next = st;
        else
            r->ended_steps = st;
        r->ended_steps_tail = st;
        pthread_cond_signal(&r->work);
    }
    pthread_mutex_unlock(&r->lock);
}

/* What run_job did with its step. */
enum step_fate {
    STEP_RECORDED, /* ended and recorded (or dropped before its claim): free it */
    STEP_GAVE_UP,  /* ended, its operation given up: free it and take it off r->given_up */
    STEP_DETACHED, /* goes on elsewhere: the runner keeps it */
};

/* Claims and runs st's job on slot's thread. */
static enum step_fate run_job(struct slot *slot, struct step *st)
{
    struct runner *r = slot->r;
    const struct osbq_job *job = &st->job;
    int64_t lease = (int64_t)r->cfg->lease_ms;
    struct osbq_error err = {0};
    int claimed = osbq_store_claim(r->store, job->operation_id, r->worker_id, job->attempt, lease,
                                   &st->claim, &err);
    if (claimed == 0) {
        worker_metrics_claim(r->metrics, WORKER_CLAIM_SKIPPED);
        log_debug("operation %s: finished, held by another worker or not due, dropping the job",
                  job->operation_id);
        return STEP_RECORDED;
    }
    if (claimed < 0) {
        worker_metrics_claim(r->metrics, WORKER_CLAIM_ERROR);
        log_warnx("operation %s: cannot claim it (%s), dropping the job; it will be resent",
                  job->operation_id, err.text);
        return STEP_RECORDED;
    }
    worker_metrics_claim(r->metrics, WORKER_CLAIM_CLAIMED);
    int64_t started = now_ms();
    const struct osbq_plan *plan = osbq_catalog_plan(r->catalog, job->plan_id);
    int64_t deadline_s = runner_deadline_s(plan, job->kind);
    st->max_polling_s = step_max_polling_s(plan);
    int64_t late_ms = -1;
    if (st->claim.due_ms > 0) {
        int64_t late = osbq_store_now_ms() - st->claim.due_ms;
        late_ms = late > 0 ? late : 0;
        worker_metrics_step_lateness(r->metrics, (double)late_ms / 1000.0);
    }
    log_job(job, "job_start", st->claim.steps, NULL, NULL, -1, -1, late_ms);

    st->started_ms = started;
    st->run = (struct run){
        .r = r,
        .job = job,
        .origin = st->origin,
        .deadline_s = deadline_s,
        .deadline_ms = started + deadline_s * 1000,
        .next_renew_ms = started + lease / 3,
        .last_text_ms = started,
    };
    st->call = (struct backend_call){
        .job = job,
        .tenant = st->claim.tenant,
        .progress = call_progress,
        .cancelled = call_cancelled,
        .wait = call_wait,
        .exiting = call_exiting,
        .ctx = &st->run,
        .detached_end = step_detached_end,
        .exec_watch = r->watch,
    };
    pthread_mutex_lock(&r->lock);
    slot->run = &st->run;
    pthread_mutex_unlock(&r->lock);

    st->backend_started = now_seconds();
    int rc = run_step(r, &st->call, &st->claim, deadline_s, st->max_polling_s, &st->parameters,
                      &st->resume);
    pthread_mutex_lock(&r->lock);
    slot->run = NULL;
    if (rc == BACKEND_DETACHED) {
        if (!st->ended) {
            /* The thread goes back to the pool; the step's end brings it to another. */
            st->detached = true;
            st->prev = NULL;
            st->next = r->detached_steps;
            if (st->next != NULL)
                st->next->prev = st;
            r->detached_steps = st;
            r->detached++;
            pthread_mutex_unlock(&r->lock);
            return STEP_DETACHED;
        }
        rc = st->end_rc;
    }
    pthread_mutex_unlock(&r->lock);
    return end_step(st, rc) ? STEP_GAVE_UP : STEP_RECORDED;
}

void runner_set_secrets(struct runner *r, const struct osbq_secrets *secrets)
{
    pthread_mutex_lock(&r->lock);
    r->secrets = secrets;
    pthread_mutex_unlock(&r->lock);
}

/* ---- the pool ---- */

/* Records a detached step its backend ended, on the calling runner thread, and frees it. */
static void record_detached(struct runner *r, struct step *st)
{
    struct osbq_log_context context = {.operation_id = st->job.operation_id,
                                       .instance_id = st->job.instance_id,
                                       .binding_id = st->job.binding_id,
                                       .request_id = st->job.request_identity};
    osbq_log_context_set(&context);
    bool gave_up = end_step(st, st->end_rc);
    osbq_log_context_set(NULL);
    note_ended(r, st->origin, st->job.operation_id);
    free_step(st);
    pthread_mutex_lock(&r->lock);
    r->detached--;
    if (gave_up)
        r->given_up--;
    /* The last one lets the threads of a closed runner return. */
    if (r->detached == 0)
        pthread_cond_broadcast(&r->work);
    pthread_mutex_unlock(&r->lock);
    notify(r);
}

static void *thread_main(void *arg)
{
    struct slot *slot = arg;
    struct runner *r = slot->r;
    on_runner_thread = true;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        /* A closed runner's threads stay while detached steps may still need recording. */
        while (r->queued == 0 && r->ended_steps == NULL &&
               (r->detached > 0 || (!r->closed && !r->cancelled)))
            pthread_cond_wait(&r->work, &r->lock);
        /* Ended steps first: their programs are done and their operations wait for it. */
        if (r->ended_steps != NULL) {
            struct step *st = r->ended_steps;
            r->ended_steps = st->next;
            if (r->ended_steps == NULL)
                r->ended_steps_tail = NULL;
            st->next = NULL;
            pthread_mutex_unlock(&r->lock);
            record_detached(r, st);
            continue;
        }
        if (r->queued == 0) {
            pthread_mutex_unlock(&r->lock);
            break;
        }
        struct step *st = calloc(1, sizeof *st);
        struct osbq_job job = r->queue[r->head].job;
        unsigned origin = r->queue[r->head].origin;
        char operation_id[OPERATION_ID_MAX];
        (void)snprintf(operation_id, sizeof operation_id, "%s",
                       job.operation_id ? job.operation_id : "");
        memset(&r->queue[r->head], 0, sizeof r->queue[r->head]);
        r->head = (r->head + 1) % r->concurrency;
        r->queued--;
        bool cancelled = r->cancelled;
        pthread_mutex_unlock(&r->lock);

        /* Every line written about this job, here and in its backend, names its ids. */
        struct osbq_log_context context = {.operation_id = job.operation_id,
                                           .instance_id = job.instance_id,
                                           .binding_id = job.binding_id,
                                           .request_id = job.request_identity};
        osbq_log_context_set(&context);
        enum step_fate fate = STEP_RECORDED;
        if (cancelled) {
            log_debug("operation %s: stopping, job dropped before its claim", job.operation_id);
            osbq_job_clear(&job);
        } else if (st == NULL) {
            log_warnx("operation %s: out of memory, job dropped before its claim; it will be "
                      "resent",
                      job.operation_id);
            osbq_job_clear(&job);
        } else {
            st->job = job;
            st->origin = origin;
            /* The context's strings now live in the step. */
            context = (struct osbq_log_context){.operation_id = st->job.operation_id,
                                                .instance_id = st->job.instance_id,
                                                .binding_id = st->job.binding_id,
                                                .request_id = st->job.request_identity};
            osbq_log_context_set(&context);
            fate = run_job(slot, st);
        }
        osbq_log_context_set(NULL);
        /* A detached step is told when it is recorded (record_detached). */
        if (fate != STEP_DETACHED)
            note_ended(r, origin, operation_id);
        if (fate != STEP_DETACHED && st != NULL) {
            if (cancelled)
                free(st);
            else
                free_step(st);
        }

        pthread_mutex_lock(&r->lock);
        r->busy--;
        if (fate == STEP_GAVE_UP)
            r->given_up--;
        pthread_mutex_unlock(&r->lock);
        notify(r);
    }
    pthread_mutex_lock(&r->lock);
    slot->done = true;
    r->alive--;
    pthread_cond_broadcast(&r->ended);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* Initialises the lock and the three conds, the conds on the monotonic clock. 0 or -1. */
static int init_sync(struct runner *r)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return -1;
    int rc = -1;
    if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0)
        goto out_attr;
    if (pthread_mutex_init(&r->lock, NULL) != 0)
        goto out_attr;
    if (pthread_cond_init(&r->work, &attr) != 0)
        goto out_lock;
    if (pthread_cond_init(&r->wake, &attr) != 0)
        goto out_work;
    if (pthread_cond_init(&r->ended, &attr) != 0)
        goto out_wake;
    rc = 0;
    goto out_attr;
out_wake:
    pthread_cond_destroy(&r->wake);
out_work:
    pthread_cond_destroy(&r->work);
out_lock:
    pthread_mutex_destroy(&r->lock);
out_attr:
    pthread_condattr_destroy(&attr);
    return rc;
}

struct runner *runner_new(const struct osbq_config *cfg, const struct osbq_catalog *catalog,
                          struct osbq_store *store, const char *worker_id,
                          const struct worker_metrics *metrics, struct osbq_error *err)
{
    struct runner *r = calloc(1, sizeof *r);
    if (r == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    r->cfg = cfg;
    r->catalog = catalog;
    r->store = store;
    r->worker_id = worker_id;
    r->metrics = metrics;
    r->concurrency = cfg->worker_concurrency > 0 ? cfg->worker_concurrency : 1;
    r->event_fd = -1;
    r->queue = calloc(r->concurrency, sizeof *r->queue);
    r->slots = calloc(r->concurrency, sizeof *r->slots);
    if (r->queue == NULL || r->slots == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out_free;
    }
    r->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (r->event_fd < 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "eventfd: %s", strerror(errno));
        goto out_free;
    }
    if (init_sync(r) < 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot initialise the runner's locks");
        goto out_free;
    }
    r->watch = exec_watch_new(cfg->worker_exec_concurrency, err);
    if (r->watch == NULL) {
        pthread_cond_destroy(&r->ended);
        pthread_cond_destroy(&r->wake);
        pthread_cond_destroy(&r->work);
        pthread_mutex_destroy(&r->lock);
        goto out_free;
    }
    for (; r->started < r->concurrency; r->started++) {
        struct slot *slot = &r->slots[r->started];
        slot->r = r;
        pthread_mutex_lock(&r->lock);
        r->alive++;
        pthread_mutex_unlock(&r->lock);
        int rc = pthread_create(&slot->thread, NULL, thread_main, slot);
        if (rc != 0) {
            pthread_mutex_lock(&r->lock);
            r->alive--;
            pthread_mutex_unlock(&r->lock);
            osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start runner thread %u: %s",
                           r->started + 1, strerror(rc));
            /* The destructor stops and joins the threads already started. */
            (void)runner_destroy(&r);
            return NULL;
        }
    }
    return r;

out_free:
    if (r->event_fd >= 0)
        close(r->event_fd);
    free(r->slots);
    free(r->queue);
    free(r);
    return NULL;
}

/* Gives back, from the calling thread, the operations of runs whose backend has not returned
 * (nor noticed the cancellation in a callback): a backend stuck in a long call. */
static void release_stuck(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    for (unsigned i = 0; i < r->started; i++) {
        struct run *run = r->slots[i].run;
        if (run == NULL || !give_up_locked(run, GAVE_UP_SHUTDOWN))
            continue;
        /* The run's strings may go as soon as the lock is dropped: copy what the release needs. */
        struct osbq_job copy;
        int copied = osbq_job_copy(run->job, &copy);
        pthread_mutex_unlock(&r->lock);
        if (copied == 0)
            release_op(r, &copy, GAVE_UP_SHUTDOWN, 0);
        osbq_job_clear(&copy);
        pthread_mutex_lock(&r->lock);
    }
    /* Detached steps whose backend has not ended them: the same, one at a time, since the list
     * may change while the lock is dropped. */
    for (;;) {
        struct step *st = r->detached_steps;
        while (st != NULL && (st->run.gave_up != NULL || st->run.recording))
            st = st->next;
        if (st == NULL || !give_up_locked(&st->run, GAVE_UP_SHUTDOWN))
            break;
        struct osbq_job copy;
        int copied = osbq_job_copy(&st->job, &copy);
        pthread_mutex_unlock(&r->lock);
        if (copied == 0)
            release_op(r, &copy, GAVE_UP_SHUTDOWN, 0);
        osbq_job_clear(&copy);
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
}

unsigned runner_destroy(struct runner **rp)
{
    if (rp == NULL || *rp == NULL)
        return 0;
    struct runner *r = *rp;
    *rp = NULL;
    pthread_mutex_lock(&r->lock);
    r->closed = true;
    r->cancelled = true;
    r->exiting = true;
    pthread_cond_broadcast(&r->work);
    pthread_cond_broadcast(&r->wake);
    /* Cancelled backends give their operations back and return; a last finish or release may
     * take up to the Redis timeout. */
    int64_t until = now_ms() + (int64_t)r->cfg->redis_timeout_ms + EXIT_WAIT_MS;
    while (r->alive > 0 && now_ms() < until)
        wait_until(&r->ended, &r->lock, until);
    pthread_mutex_unlock(&r->lock);
    release_stuck(r);

    unsigned left = 0;
    for (unsigned i = 0; i < r->started; i++) {
        pthread_mutex_lock(&r->lock);
        bool done = r->slots[i].done;
        pthread_mutex_unlock(&r->lock);
        if (done) {
            pthread_join(r->slots[i].thread, NULL);
        } else {
            (void)pthread_detach(r->slots[i].thread);
            left++;
        }
    }
    if (left > 0) {
        /* Threads cannot be killed: they keep this runner (and what it borrows) until the
         * process exits, so it is kept, reachable, and never freed. */
        log_warnx("%u runner threads are still inside their backend after the cancellation; "
                  "leaving them behind",
                  left);
        r->next_left = left_behind;
        left_behind = r;
        return left;
    }
    /* With every thread gone no step is detached: the watch has nothing left to end. */
    exec_watch_destroy(&r->watch);
    /* With every thread gone the queue is empty, unless none ever started. */
    for (unsigned i = 0; i < r->concurrency; i++)
        osbq_job_clear(&r->queue[i].job);
    pthread_cond_destroy(&r->ended);
    pthread_cond_destroy(&r->wake);
    pthread_cond_destroy(&r->work);
    pthread_mutex_destroy(&r->lock);
    close(r->event_fd);
    for (unsigned i = 0; i < r->note_count; i++)
        free(r->notes[i].ended);
    free(r->slots);
    free(r->queue);
    free(r);
    return 0;
}

int runner_submit(struct runner *r, struct osbq_job *job, unsigned origin)
{
    pthread_mutex_lock(&r->lock);
    if (r->closed || r->cancelled || r->busy >= r->concurrency) {
        pthread_mutex_unlock(&r->lock);
        return -1;
    }
    unsigned tail = (r->head + r->queued) % r->concurrency;
    r->queue[tail] = (struct queued_job){.job = *job, .origin = origin};
    memset(job, 0, sizeof *job);
    r->queued++;
    r->busy++;
    pthread_mutex_unlock(&r->lock);
    /* Signalled once the lock is free: the thread it wakes takes the job at once instead of
     * waking to sleep again on the lock. The cond outlives the call; the job is in the queue. */
    pthread_cond_signal(&r->work);
    return 0;
}

unsigned runner_free_slots(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    unsigned free_slots = r->closed || r->cancelled ? 0 : r->concurrency - r->busy;
    pthread_mutex_unlock(&r->lock);
    return free_slots;
}

unsigned runner_busy(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    unsigned busy = r->busy + r->detached;
    pthread_mutex_unlock(&r->lock);
    return busy;
}

unsigned runner_holding(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    unsigned holding = r->busy + r->detached - r->given_up;
    pthread_mutex_unlock(&r->lock);
    return holding;
}

int runner_event_fd(const struct runner *r)
{
    return r->event_fd;
}

void runner_drain(struct runner *r)
{
    uint64_t count;
    /* Non-blocking: fails with EAGAIN when nothing ended since the last drain. */
    (void)!read(r->event_fd, &count, sizeof count);
}

void runner_take_notes(struct runner *r, runner_note_fn fn, void *ctx)
{
    struct origin_note notes[DUE_ORIGINS_MAX];
    pthread_mutex_lock(&r->lock);
    unsigned count = r->note_count;
    memcpy(notes, r->notes, count * sizeof notes[0]);
    int64_t any = r->due_any_ms;
    r->note_count = 0;
    r->due_any_ms = 0;
    pthread_mutex_unlock(&r->lock);
    for (unsigned i = 0; i < count; i++) {
        fn(ctx, notes[i].origin, notes[i].due_ms, notes[i].ended);
        free(notes[i].ended);
    }
    if (any != 0)
        fn(ctx, 0, any, NULL);
}

void runner_close(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    r->closed = true;
    pthread_cond_broadcast(&r->work);
    pthread_mutex_unlock(&r->lock);
}

void runner_cancel(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    r->cancelled = true;
    pthread_cond_broadcast(&r->work);
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
}
