/* The runner: OSBQ_WORKER_CONCURRENCY threads that each take one job at a time from the
 * hand-off queue, claim its operation in Redis, run the plan's backend while keeping the lease
 * alive, and record the outcome. */
#include "runner.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "log.h"

/* How long a result whose recording fails (Redis away) is retried before it is given up. */
#define FINISH_RETRY_MS       30000
#define FINISH_BACKOFF_MIN_MS 100
#define FINISH_BACKOFF_MAX_MS 5000
/* Progress reports closer together than this are not written: a backend reporting every few
 * milliseconds (sim with a short duration) would cost a Redis round trip each time, for texts
 * nobody can poll that fast. The lease is renewed regardless. */
#define PROGRESS_MIN_INTERVAL_MS 100
/* After a failed lease renewal, how soon to try again (capped by a third of the lease). */
#define RENEW_RETRY_MS 1000

struct runner {
    const struct osbq_config *cfg;      /* borrowed: lease_ms and worker_concurrency */
    const struct osbq_catalog *catalog; /* borrowed: plans by id */
    struct osbq_store *store;           /* borrowed, shared by every thread */
    const char *worker_id;              /* borrowed: recorded in each claimed operation */
    unsigned concurrency;               /* slots, and threads */
    pthread_t *threads;                 /* the pool, concurrency entries */
    unsigned started;                   /* threads actually started, to join */
    int event_fd;                       /* counts ended jobs, for the main thread's poll */

    pthread_mutex_t lock;   /* guards the fields below */
    pthread_cond_t work;    /* a job was queued, or the runner closed or cancelled */
    pthread_cond_t wake;    /* the runner cancelled: sleeping backends and retries stop */
    struct osbq_job *queue; /* ring of concurrency jobs handed over and not yet taken */
    unsigned head;          /* index of the oldest queued job */
    unsigned queued;        /* jobs in the ring */
    unsigned busy;          /* jobs queued or running: never more than concurrency */
    bool closed;            /* runner_submit refuses jobs */
    bool cancelled;         /* backends must stop; queued jobs are dropped */
};

/* One job on one runner thread: the state behind its backend_call's callbacks. Used by that
 * thread only, so it needs no lock. */
struct run {
    struct runner *r;           /* the runner */
    const struct osbq_job *job; /* the job; borrowed */
    bool lease_lost;            /* the operation is no longer this worker's: stop, record nothing */
    bool renew_failing;         /* a renewal failed and was logged; log again only once it works */
    int64_t next_renew_ms;      /* monotonic time the lease must be renewed by */
    int64_t last_text_ms;       /* monotonic time the last progress text was written */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

static bool runner_cancelled(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    bool cancelled = r->cancelled;
    pthread_mutex_unlock(&r->lock);
    return cancelled;
}

/* ---- the lease and the callbacks a backend gets ---- */

/* Writes description (NULL: none) into the operation and renews its lease. */
static void renew(struct run *run, const char *description, int64_t now)
{
    struct runner *r = run->r;
    int64_t lease = (int64_t)r->cfg->lease_ms;
    struct osbq_error err = {0};
    int rc = osbq_store_progress(r->store, run->job->operation_id, r->worker_id, description, lease,
                                 &err);
    /* Counted even when the write failed, so a Redis outage costs one attempt per interval. */
    if (description != NULL)
        run->last_text_ms = now;
    if (rc > 0) {
        if (run->renew_failing)
            log_info("operation %s: lease renewed again", run->job->operation_id);
        run->renew_failing = false;
        run->next_renew_ms = now + lease / 3;
    } else if (rc == 0) {
        log_warnx("operation %s: lease lost (the operation ended or another worker took it "
                  "over), stopping without recording a result",
                  run->job->operation_id);
        run->lease_lost = true;
    } else {
        if (!run->renew_failing)
            log_warnx("operation %s: cannot renew the lease (%s), retrying", run->job->operation_id,
                      err.text);
        run->renew_failing = true;
        run->next_renew_ms = now + min64(RENEW_RETRY_MS, lease / 3);
    }
}

static void call_progress(struct backend_call *call, const char *description)
{
    struct run *run = call->ctx;
    if (run->lease_lost)
        return;
    int64_t now = now_ms();
    if (now - run->last_text_ms < PROGRESS_MIN_INTERVAL_MS && now < run->next_renew_ms)
        return;
    renew(run, description, now);
}

static bool call_cancelled(struct backend_call *call)
{
    struct run *run = call->ctx;
    return run->lease_lost || runner_cancelled(run->r);
}

static bool call_wait(struct backend_call *call, int64_t ms)
{
    struct run *run = call->ctx;
    struct runner *r = run->r;
    int64_t deadline = now_ms() + (ms > 0 ? ms : 0);
    pthread_mutex_lock(&r->lock);
    while (!r->cancelled && !run->lease_lost) {
        int64_t now = now_ms();
        if (now >= deadline)
            break;
        if (now >= run->next_renew_ms) {
            /* A long quiet step must not let the lease expire under it. */
            pthread_mutex_unlock(&r->lock);
            renew(run, NULL, now);
            pthread_mutex_lock(&r->lock);
            continue;
        }
        wait_until(&r->wake, &r->lock, min64(deadline, run->next_renew_ms));
    }
    bool stopped = r->cancelled || run->lease_lost;
    pthread_mutex_unlock(&r->lock);
    return !stopped;
}

/* ---- one job ---- */

/* Writes the job's start or end line: event "job_start" or "job_end"; result, description
 * and duration_ms (when >= 0) only on the end line. */
static void log_job(const struct osbq_job *job, const char *event, const char *result,
                    const char *description, int64_t duration_ms)
{
    if (!osbq_log_enabled(OSBQ_LOG_INFO))
        return;
    struct osbq_log_line line;
    osbq_log_line_begin(&line, OSBQ_LOG_INFO, event);
    osbq_log_line_str(&line, "op", job->operation_id);
    osbq_log_line_str(&line, "kind", osbq_job_kind_name(job->kind));
    osbq_log_line_str(&line, "instance", job->instance_id);
    osbq_log_line_str(&line, "binding", job->binding_id);
    osbq_log_line_str(&line, "plan", job->plan_id);
    osbq_log_line_int(&line, "attempt", job->attempt);
    osbq_log_line_str(&line, "request_id", job->request_identity);
    osbq_log_line_str(&line, "trace", job->trace);
    osbq_log_line_str(&line, "result", result);
    osbq_log_line_str(&line, "description", description);
    if (duration_ms >= 0)
        osbq_log_line_int(&line, "duration_ms", duration_ms);
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

/* Gives a successful bind the plan's credential lifetime (runner_add_expiry). A bind that
 * cannot get it fails: credentials the platform believes never expire would outlive what the
 * plan promises. Logs nothing of the binding: it holds credentials. */
static void add_plan_expiry(struct backend_call *call)
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

/* Records the outcome, retrying with backoff while Redis fails, for FINISH_RETRY_MS at most
 * and only until the runner is cancelled. Returns what osbq_store_finish last returned. */
static int finish(struct run *run, const struct osbq_op_result *result)
{
    struct runner *r = run->r;
    const char *op = run->job->operation_id;
    int64_t give_up = now_ms() + FINISH_RETRY_MS;
    int64_t backoff = FINISH_BACKOFF_MIN_MS;
    bool warned = false;
    for (;;) {
        struct osbq_error err = {0};
        int rc = osbq_store_finish(r->store, op, r->worker_id, result, &err);
        if (rc >= 0)
            return rc;
        int64_t now = now_ms();
        if (now >= give_up) {
            log_errorx("operation %s: cannot record the result (%s), giving up after %d s; "
                       "the operation runs again once its lease expires",
                       op, err.text, FINISH_RETRY_MS / 1000);
            return -1;
        }
        if (!warned)
            log_warnx("operation %s: cannot record the result (%s), retrying", op, err.text);
        warned = true;
        if (!sleep_unless_cancelled(r, min64(backoff, give_up - now))) {
            log_errorx("operation %s: stopping before the result could be recorded (%s); the "
                       "operation runs again once its lease expires",
                       op, err.text);
            return -1;
        }
        backoff = min64(backoff * 2, FINISH_BACKOFF_MAX_MS);
    }
}

static void run_job(struct runner *r, const struct osbq_job *job)
{
    int64_t started = now_ms();
    int64_t lease = (int64_t)r->cfg->lease_ms;
    struct osbq_error err = {0};
    int claimed =
        osbq_store_claim(r->store, job->operation_id, r->worker_id, job->attempt, lease, &err);
    if (claimed == 0) {
        log_debug("operation %s: finished or held by another worker, dropping the job",
                  job->operation_id);
        return;
    }
    if (claimed < 0) {
        log_warnx("operation %s: cannot claim it (%s), dropping the job; it will be resent",
                  job->operation_id, err.text);
        return;
    }
    log_job(job, "job_start", NULL, NULL, -1);

    struct run run = {
        .r = r,
        .job = job,
        .next_renew_ms = started + lease / 3,
        .last_text_ms = started,
    };
    struct backend_call call = {
        .job = job,
        .progress = call_progress,
        .cancelled = call_cancelled,
        .wait = call_wait,
        .ctx = &run,
    };
    json_t *parameters = NULL;
    const char *outcome;
    if (run_backend(r, &call, &parameters) < 0 || run.lease_lost) {
        /* A lost lease means another attempt owns the operation; a cancelled runner leaves it
         * to the lease's expiry. Either way this attempt records nothing. */
        outcome = run.lease_lost ? "lease_lost" : "cancelled";
    } else {
        if (call.result.succeeded && job->kind == OSBQ_JOB_BIND && call.plan != NULL &&
            call.plan->binding_ttl_s > 0)
            add_plan_expiry(&call);
        int rc = finish(&run, &call.result);
        if (rc > 0)
            outcome = call.result.succeeded ? "succeeded" : "failed";
        else
            outcome = rc == 0 ? "dropped" : "not_recorded";
    }
    log_job(job, "job_end", outcome, call.result.description, now_ms() - started);
    json_decref(parameters);
    backend_call_clear(&call);
}

/* ---- the pool ---- */

/* Tells the main thread a slot is free again. */
static void notify(struct runner *r)
{
    uint64_t one = 1;
    /* Fails only when the counter would overflow, which a free slot count never nears. */
    (void)!write(r->event_fd, &one, sizeof one);
}

static void *thread_main(void *arg)
{
    struct runner *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        while (r->queued == 0 && !r->closed && !r->cancelled)
            pthread_cond_wait(&r->work, &r->lock);
        if (r->queued == 0) {
            pthread_mutex_unlock(&r->lock);
            break;
        }
        struct osbq_job job = r->queue[r->head];
        memset(&r->queue[r->head], 0, sizeof r->queue[r->head]);
        r->head = (r->head + 1) % r->concurrency;
        r->queued--;
        bool cancelled = r->cancelled;
        pthread_mutex_unlock(&r->lock);

        if (cancelled)
            log_debug("operation %s: stopping, job dropped before its claim", job.operation_id);
        else
            run_job(r, &job);
        osbq_job_clear(&job);

        pthread_mutex_lock(&r->lock);
        r->busy--;
        pthread_mutex_unlock(&r->lock);
        notify(r);
    }
    return NULL;
}

/* Initialises the lock and the two conds, the conds on the monotonic clock. 0 or -1. */
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
    rc = 0;
    goto out_attr;
out_work:
    pthread_cond_destroy(&r->work);
out_lock:
    pthread_mutex_destroy(&r->lock);
out_attr:
    pthread_condattr_destroy(&attr);
    return rc;
}

struct runner *runner_new(const struct osbq_config *cfg, const struct osbq_catalog *catalog,
                          struct osbq_store *store, const char *worker_id, struct osbq_error *err)
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
    r->concurrency = cfg->worker_concurrency > 0 ? cfg->worker_concurrency : 1;
    r->event_fd = -1;
    r->queue = calloc(r->concurrency, sizeof *r->queue);
    r->threads = calloc(r->concurrency, sizeof *r->threads);
    if (r->queue == NULL || r->threads == NULL) {
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
    for (; r->started < r->concurrency; r->started++) {
        int rc = pthread_create(&r->threads[r->started], NULL, thread_main, r);
        if (rc != 0) {
            osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start runner thread %u: %s",
                           r->started + 1, strerror(rc));
            /* The destructor stops and joins the threads already started. */
            runner_destroy(&r);
            return NULL;
        }
    }
    return r;

out_free:
    if (r->event_fd >= 0)
        close(r->event_fd);
    free(r->threads);
    free(r->queue);
    free(r);
    return NULL;
}

void runner_destroy(struct runner **rp)
{
    if (rp == NULL || *rp == NULL)
        return;
    struct runner *r = *rp;
    runner_close(r);
    runner_cancel(r);
    for (unsigned i = 0; i < r->started; i++)
        pthread_join(r->threads[i], NULL);
    /* With every thread gone the queue is empty, unless none ever started. */
    for (unsigned i = 0; i < r->concurrency; i++)
        osbq_job_clear(&r->queue[i]);
    pthread_cond_destroy(&r->wake);
    pthread_cond_destroy(&r->work);
    pthread_mutex_destroy(&r->lock);
    close(r->event_fd);
    free(r->threads);
    free(r->queue);
    free(r);
    *rp = NULL;
}

int runner_submit(struct runner *r, struct osbq_job *job)
{
    pthread_mutex_lock(&r->lock);
    if (r->closed || r->cancelled || r->busy >= r->concurrency) {
        pthread_mutex_unlock(&r->lock);
        return -1;
    }
    unsigned tail = (r->head + r->queued) % r->concurrency;
    r->queue[tail] = *job;
    memset(job, 0, sizeof *job);
    r->queued++;
    r->busy++;
    pthread_cond_signal(&r->work);
    pthread_mutex_unlock(&r->lock);
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
    unsigned busy = r->busy;
    pthread_mutex_unlock(&r->lock);
    return busy;
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
