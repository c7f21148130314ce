/* The runner: a pool of OSBQ_WORKER_CONCURRENCY threads that each take one job at a time from
 * the hand-off queue and run it as a step (step.c), and record the detached steps whose
 * backend ended them; what the gateways are told next (due times, ended jobs) is kept here for
 * the main thread. */
#include "runner.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "backend.h"
#include "clock.h"
#include "exec_watch.h"
#include "log.h"
#include "step.h"

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

/* A job handed over, with the connection it came through (runner_submit). */
struct queued_job {
    struct osbq_job job;
    unsigned origin;
    struct step_handover handed; /* its hand-over (runner_submit_handed), or none */
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
};

struct runner {
    struct step_pool pool;    /* what its steps share with it: settings, their state under the
                               * pool's own lock (step_pool.c), hooks */
    unsigned concurrency;     /* slots, and threads */
    struct slot *slots;       /* the threads, concurrency entries */
    unsigned started;         /* threads actually started */
    int event_fd;             /* counts ended jobs, for the main thread's poll */
    struct runner *next_left; /* next runner left behind (runner_destroy) */

    pthread_mutex_t lock;     /* guards the fields below; taken before the pool's, if both */
    pthread_cond_t work;      /* a job was queued, a detached step ended, or the runner closed
                               * or cancelled */
    pthread_cond_t ended;     /* a thread returned */
    struct queued_job *queue; /* ring of concurrency jobs handed over and not yet taken */
    unsigned head;            /* index of the oldest queued job */
    unsigned queued;          /* jobs in the ring */
    unsigned busy;            /* jobs queued or running: never more than concurrency */
    unsigned alive;           /* threads started and not returned */
    bool closed;              /* runner_submit refuses jobs */
    struct origin_note notes[DUE_ORIGINS_MAX]; /* since runner_take_notes, by origin */
    unsigned note_count;                       /* entries of notes in use */
    int64_t due_any_ms; /* the earliest due time that found notes full; 0: none */
};

/* Runners whose threads did not all return (runner_destroy): kept, never freed, so the threads
 * left behind use valid memory until the process exits, and the leak checker finds them
 * reachable. */
static struct runner *volatile left_behind;

static struct runner *runner_of(struct step_pool *pool)
{
    return (struct runner *)(void *)((char *)pool - offsetof(struct runner, pool));
}

/* Tells the main thread a slot is free again, or that a job gave its operation up. */
static void notify(struct runner *r)
{
    uint64_t one = 1;
    /* Fails only when the counter would overflow, which a free slot count never nears. */
    (void)!write(r->event_fd, &one, sizeof one);
}

/* ---- what the gateways are told next ---- */

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

/* ---- the hooks its steps report through ---- */

static void on_gave_up(struct step_pool *pool)
{
    notify(runner_of(pool));
}

static void on_waiting(struct step_pool *pool, unsigned origin, int64_t due_ms)
{
    note_due(runner_of(pool), origin, due_ms);
}

static void on_detached_ended(struct step_pool *pool)
{
    struct runner *r = runner_of(pool);
    /* Under the lock its threads wait with, so the wake-up is not missed. */
    pthread_mutex_lock(&r->lock);
    pthread_cond_signal(&r->work);
    pthread_mutex_unlock(&r->lock);
}

/* ---- the pool ---- */

void runner_set_secrets(struct runner *r, const struct osbq_secrets *secrets)
{
    step_pool_set_secrets(&r->pool, secrets);
}

/* Records a detached step its backend ended, on the calling runner thread, and frees it. */
static void record_detached(struct runner *r, struct step *st)
{
    const struct osbq_job *job = step_job(st);
    backend_log_context_set(job);
    bool gave_up = step_record_ended(st);
    osbq_log_context_set(NULL);
    note_ended(r, step_origin(st), job->operation_id);
    step_destroy(&st);
    /* The last one lets the threads of a closed runner return. */
    if (step_pool_forget(&r->pool, gave_up, true)) {
        pthread_mutex_lock(&r->lock);
        pthread_cond_broadcast(&r->work);
        pthread_mutex_unlock(&r->lock);
    }
    notify(r);
}

bool runner_give_back(struct runner *r, const struct osbq_job *job)
{
    struct osbq_error err = {0};
    int released = osbq_store_release(r->pool.store, job->operation_id, r->pool.worker_id, &err);
    if (released <= 0)
        log_warnx("operation %s: handed to this worker and not run, %s; the recovery loop resends "
                  "it once the hand-over's lease runs out",
                  job->operation_id,
                  released == 0 ? "and no longer its own" : "and it cannot be given back");
    return released > 0;
}

/* Runs the queued job (cleared whatever happens) on slot's thread as a step, unless the runner
 * was cancelled since it was queued or memory ran out: then it is dropped before its claim
 * (its operation stays queued in Redis and is resent; a handed one is given back). Returns
 * what became of it. */
static enum step_fate run_queued(struct slot *slot, struct queued_job *queued, bool cancelled)
{
    struct osbq_job *job = &queued->job;
    /* Every line written about this job, here and in its backend, names its ids. */
    backend_log_context_set(job);
    enum step_fate fate = STEP_RECORDED;
    struct step *st = NULL;
    if (cancelled) {
        log_debug("operation %s: stopping, job dropped before its claim", job->operation_id);
        if (queued->handed.until_ms > 0)
            (void)runner_give_back(slot->r, job);
    } else if ((st = step_new(&slot->r->pool, job, queued->origin, &queued->handed)) == NULL) {
        log_warnx("operation %s: out of memory, job dropped before its claim; it will be "
                  "resent",
                  job->operation_id);
    } else {
        /* The context's strings now live in the step. */
        backend_log_context_set(step_job(st));
        fate = step_run(st);
    }
    osbq_log_context_set(NULL);
    if (st == NULL) {
        osbq_job_clear(job);
        step_handover_clear(&queued->handed);
    } else if (fate != STEP_DETACHED)
        step_destroy(&st);
    return fate;
}

static void *thread_main(void *arg)
{
    struct slot *slot = arg;
    struct runner *r = slot->r;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        /* Ended steps first: their programs are done and their operations wait for it. A
         * closed runner's threads stay while detached steps may still need recording. */
        struct step *ended;
        while (
            (ended = step_pool_take_ended(&r->pool)) == NULL && r->queued == 0 &&
            (step_pool_holds_detached(&r->pool) || (!r->closed && !step_pool_cancelled(&r->pool))))
            pthread_cond_wait(&r->work, &r->lock);
        if (ended != NULL) {
            pthread_mutex_unlock(&r->lock);
            record_detached(r, ended);
            continue;
        }
        if (r->queued == 0) {
            pthread_mutex_unlock(&r->lock);
            break;
        }
        struct queued_job taken = r->queue[r->head];
        memset(&r->queue[r->head], 0, sizeof r->queue[r->head]);
        r->head = (r->head + 1) % r->concurrency;
        r->queued--;
        bool cancelled = step_pool_cancelled(&r->pool);
        pthread_mutex_unlock(&r->lock);

        char operation_id[OPERATION_ID_MAX];
        (void)snprintf(operation_id, sizeof operation_id, "%s",
                       taken.job.operation_id ? taken.job.operation_id : "");
        enum step_fate fate = run_queued(slot, &taken, cancelled);
        /* A detached step is told when it is recorded (record_detached). */
        if (fate != STEP_DETACHED)
            note_ended(r, taken.origin, operation_id);

        /* Off given up first: runner_holding never finds more given up than held. */
        if (fate == STEP_GAVE_UP)
            (void)step_pool_forget(&r->pool, true, false);
        pthread_mutex_lock(&r->lock);
        r->busy--;
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

/* Initialises the lock, the two conds (on the monotonic clock) and the pool's. 0 or -1. */
static int init_sync(struct runner *r)
{
    if (pthread_mutex_init(&r->lock, NULL) != 0)
        return -1;
    if (osbq_clock_cond_init(&r->work) != 0)
        goto out_lock;
    if (osbq_clock_cond_init(&r->ended) != 0)
        goto out_work;
    if (step_pool_init(&r->pool) != 0)
        goto out_ended;
    return 0;
out_ended:
    pthread_cond_destroy(&r->ended);
out_work:
    pthread_cond_destroy(&r->work);
out_lock:
    pthread_mutex_destroy(&r->lock);
    return -1;
}

static void fini_sync(struct runner *r)
{
    step_pool_fini(&r->pool);
    pthread_cond_destroy(&r->ended);
    pthread_cond_destroy(&r->work);
    pthread_mutex_destroy(&r->lock);
}

/* Starts a thread a slot: 0, or -1 with err (those started, r->started, are runner_destroy's). */
static int start_threads(struct runner *r, struct osbq_error *err)
{
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
            return osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start runner thread %u: %s",
                                  r->started + 1, strerror(rc));
        }
    }
    return 0;
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
    r->pool = (struct step_pool){
        .cfg = cfg,
        .catalog = catalog,
        .store = store,
        .worker_id = worker_id,
        .metrics = metrics,
        .gave_up = on_gave_up,
        .waiting = on_waiting,
        .detached_ended = on_detached_ended,
    };
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
    r->pool.watch = exec_watch_new(cfg->worker_exec_concurrency, err);
    if (r->pool.watch == NULL) {
        fini_sync(r);
        goto out_free;
    }
    if (start_threads(r, err) < 0) {
        /* The destructor stops and joins the threads already started. */
        (void)runner_destroy(&r);
        return NULL;
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

unsigned runner_destroy(struct runner **rp)
{
    if (rp == NULL || *rp == NULL)
        return 0;
    struct runner *r = *rp;
    *rp = NULL;
    pthread_mutex_lock(&r->lock);
    r->closed = true;
    step_pool_cancel(&r->pool);
    pthread_cond_broadcast(&r->work);
    /* Cancelled backends give their operations back and return; a last finish or release may
     * take up to the Redis timeout. */
    int64_t until = osbq_clock_ms() + (int64_t)r->pool.cfg->redis_timeout_ms + EXIT_WAIT_MS;
    while (r->alive > 0 && osbq_clock_ms() < until)
        osbq_clock_wait_until(&r->ended, &r->lock, until);
    pthread_mutex_unlock(&r->lock);
    /* From this thread, the operations of steps whose backend has not returned (nor noticed
     * the cancellation in a callback): a backend stuck in a long call. */
    step_release_all(&r->pool);

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
    exec_watch_destroy(&r->pool.watch);
    /* With every thread gone the queue is empty, unless none ever started. */
    for (unsigned i = 0; i < r->concurrency; i++) {
        osbq_job_clear(&r->queue[i].job);
        step_handover_clear(&r->queue[i].handed);
    }
    fini_sync(r);
    close(r->event_fd);
    for (unsigned i = 0; i < r->note_count; i++)
        free(r->notes[i].ended);
    free(r->slots);
    free(r->queue);
    free(r);
    return 0;
}

/* Queues job, with its hand-over when handed is not NULL, on a free slot. */
static int submit(struct runner *r, struct osbq_job *job, unsigned origin,
                  struct step_handover *handed)
{
    pthread_mutex_lock(&r->lock);
    if (r->closed || step_pool_cancelled(&r->pool) || r->busy >= r->concurrency) {
        pthread_mutex_unlock(&r->lock);
        return -1;
    }
    unsigned tail = (r->head + r->queued) % r->concurrency;
    r->queue[tail] = (struct queued_job){.job = *job, .origin = origin};
    memset(job, 0, sizeof *job);
    if (handed != NULL) {
        r->queue[tail].handed = *handed;
        *handed = (struct step_handover){0};
    }
    r->queued++;
    r->busy++;
    pthread_mutex_unlock(&r->lock);
    /* Signalled once the lock is free: the thread it wakes takes the job at once instead of
     * waking to sleep again on the lock. The cond outlives the call; the job is in the queue. */
    pthread_cond_signal(&r->work);
    return 0;
}

int runner_submit(struct runner *r, struct osbq_job *job, unsigned origin)
{
    return submit(r, job, origin, NULL);
}

int runner_submit_handed(struct runner *r, struct osbq_job *job, unsigned origin,
                         struct step_handover *handed)
{
    return submit(r, job, origin, handed);
}

bool runner_halt(struct runner *r, const char *operation_id)
{
    return step_pool_halt(&r->pool, operation_id);
}

unsigned runner_free_slots(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    unsigned free_slots = r->closed || step_pool_cancelled(&r->pool) ? 0 : r->concurrency - r->busy;
    pthread_mutex_unlock(&r->lock);
    return free_slots;
}

/* runner_busy, and of those the steps that gave their operation up, read at one instant. */
static unsigned busy_steps(struct runner *r, unsigned *given_up)
{
    unsigned detached;
    pthread_mutex_lock(&r->lock);
    step_pool_counts(&r->pool, &detached, given_up);
    unsigned busy = r->busy + detached;
    pthread_mutex_unlock(&r->lock);
    return busy;
}

unsigned runner_busy(struct runner *r)
{
    unsigned given_up;
    return busy_steps(r, &given_up);
}

unsigned runner_holding(struct runner *r)
{
    unsigned given_up;
    unsigned busy = busy_steps(r, &given_up);
    return busy - given_up;
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
