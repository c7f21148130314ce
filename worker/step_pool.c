/* The step pool's lock and what it guards (step_pool.h): each step's give-up state, where each
 * step is (running, detached going on, detached ended), the counts and the cancellation. */
#include "step_pool.h"

#include <string.h>

#include "clock.h"
#include "step_internal.h"

int step_pool_init(struct step_pool *pool)
{
    TAILQ_INIT(&pool->running);
    TAILQ_INIT(&pool->going_on);
    TAILQ_INIT(&pool->ended);
    if (pthread_mutex_init(&pool->lock, NULL) != 0)
        return -1;
    if (osbq_clock_cond_init(&pool->wake) != 0) {
        pthread_mutex_destroy(&pool->lock);
        return -1;
    }
    return 0;
}

void step_pool_fini(struct step_pool *pool)
{
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
}

void step_pool_set_secrets(struct step_pool *pool, const struct osbq_secrets *secrets)
{
    pthread_mutex_lock(&pool->lock);
    pool->secrets = secrets;
    pthread_mutex_unlock(&pool->lock);
}

void step_pool_cancel(struct step_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->cancelled = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
}

bool step_pool_cancelled(struct step_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    bool cancelled = pool->cancelled;
    pthread_mutex_unlock(&pool->lock);
    return cancelled;
}

struct step *step_pool_take_ended(struct step_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    struct step *st = TAILQ_FIRST(&pool->ended);
    if (st != NULL)
        TAILQ_REMOVE(&pool->ended, st, link);
    pthread_mutex_unlock(&pool->lock);
    return st;
}

bool step_pool_holds_detached(struct step_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    bool holds = pool->detached > 0;
    pthread_mutex_unlock(&pool->lock);
    return holds;
}

bool step_pool_forget(struct step_pool *pool, bool gave_up, bool detached)
{
    pthread_mutex_lock(&pool->lock);
    if (gave_up)
        pool->given_up--;
    if (detached)
        pool->detached--;
    bool none = pool->detached == 0;
    pthread_mutex_unlock(&pool->lock);
    return none;
}

void step_pool_counts(struct step_pool *pool, unsigned *detached, unsigned *given_up)
{
    pthread_mutex_lock(&pool->lock);
    *detached = pool->detached;
    *given_up = pool->given_up;
    pthread_mutex_unlock(&pool->lock);
}

/* step_pool_give_up with the lock held. */
static bool give_up_locked(struct step *st, const char *why)
{
    struct step_pool *pool = st->pool;
    if (st->gave_up != NULL || st->recording)
        return false;
    st->gave_up = why;
    pool->given_up++;
    /* The step's thread may sleep in step_pool_wait. */
    pthread_cond_broadcast(&pool->wake);
    return true;
}

bool step_pool_give_up(struct step *st, const char *why)
{
    pthread_mutex_lock(&st->pool->lock);
    bool did = give_up_locked(st, why);
    pthread_mutex_unlock(&st->pool->lock);
    return did;
}

/* The first step of list that runs operation_id and holds it, now given up as halted; NULL
 * when none. */
static struct step *halt_in(struct step_list *list, const char *operation_id)
{
    struct step *st;
    TAILQ_FOREACH(st, list, link)
    if (strcmp(st->job.operation_id, operation_id) == 0 && give_up_locked(st, GAVE_UP_HALTED))
        return st;
    return NULL;
}

bool step_pool_halt(struct step_pool *pool, const char *operation_id)
{
    pthread_mutex_lock(&pool->lock);
    struct step *st = halt_in(&pool->running, operation_id);
    if (st == NULL)
        st = halt_in(&pool->going_on, operation_id);
    if (st != NULL)
        worker_metrics_operation(pool->metrics, &st->job, WORKER_OP_HALTED);
    pthread_mutex_unlock(&pool->lock);
    if (st != NULL)
        pool->gave_up(pool);
    return st != NULL;
}

/* The first step of list that holds its operation and does not record it, or NULL. */
static struct step *holding_in(struct step_list *list)
{
    struct step *st;
    TAILQ_FOREACH(st, list, link)
    if (st->gave_up == NULL && !st->recording)
        return st;
    return NULL;
}

bool step_pool_give_up_one(struct step_pool *pool, struct osbq_job *copy)
{
    pthread_mutex_lock(&pool->lock);
    struct step *st = holding_in(&pool->running);
    if (st == NULL)
        st = holding_in(&pool->going_on);
    if (st != NULL) {
        (void)give_up_locked(st, GAVE_UP_SHUTDOWN);
        /* The step's strings may go as soon as the lock is dropped; zeroed when out of memory. */
        (void)osbq_job_copy(&st->job, copy);
    }
    pthread_mutex_unlock(&pool->lock);
    return st != NULL;
}

void step_pool_running(struct step *st)
{
    pthread_mutex_lock(&st->pool->lock);
    TAILQ_INSERT_TAIL(&st->pool->running, st, link);
    pthread_mutex_unlock(&st->pool->lock);
}

bool step_pool_returned(struct step *st, int *rc)
{
    struct step_pool *pool = st->pool;
    bool detached = false;
    pthread_mutex_lock(&pool->lock);
    TAILQ_REMOVE(&pool->running, st, link);
    if (*rc == BACKEND_DETACHED && !st->ended) {
        /* The thread goes back to the pool; the step's end brings it to another. */
        st->detached = detached = true;
        TAILQ_INSERT_HEAD(&pool->going_on, st, link);
        pool->detached++;
    } else if (*rc == BACKEND_DETACHED) {
        *rc = st->end_rc;
    }
    pthread_mutex_unlock(&pool->lock);
    return detached;
}

void step_pool_ended(struct step *st, int rc)
{
    struct step_pool *pool = st->pool;
    pthread_mutex_lock(&pool->lock);
    st->ended = true;
    st->end_rc = rc;
    bool detached = st->detached;
    if (detached) {
        TAILQ_REMOVE(&pool->going_on, st, link);
        TAILQ_INSERT_TAIL(&pool->ended, st, link);
    }
    pthread_mutex_unlock(&pool->lock);
    if (detached)
        pool->detached_ended(pool);
}

const char *step_pool_settle(struct step *st, bool stopped, bool *released)
{
    pthread_mutex_lock(&st->pool->lock);
    *released = stopped && give_up_locked(st, GAVE_UP_SHUTDOWN);
    const char *gave_up = st->gave_up;
    st->recording = gave_up == NULL;
    pthread_mutex_unlock(&st->pool->lock);
    return gave_up;
}

bool step_pool_must_stop(struct step *st, int64_t now, const char **why)
{
    struct step_pool *pool = st->pool;
    *why = NULL;
    pthread_mutex_lock(&pool->lock);
    if (st->gave_up == NULL) {
        if (now >= st->deadline_ms)
            *why = GAVE_UP_DEADLINE;
        else if (pool->cancelled)
            *why = GAVE_UP_SHUTDOWN;
        if (*why != NULL && !give_up_locked(st, *why))
            *why = NULL;
    }
    bool stop = st->gave_up != NULL;
    pthread_mutex_unlock(&pool->lock);
    return stop;
}

void step_pool_wait(struct step *st, int64_t until_ms)
{
    struct step_pool *pool = st->pool;
    pthread_mutex_lock(&pool->lock);
    /* Checked under the lock the cancellation takes, so its wake-up is not missed. */
    if (!pool->cancelled && st->gave_up == NULL)
        osbq_clock_wait_until(&pool->wake, &pool->lock, until_ms);
    pthread_mutex_unlock(&pool->lock);
}

bool step_pool_sleep(struct step_pool *pool, int64_t ms)
{
    int64_t deadline = osbq_clock_ms() + ms;
    pthread_mutex_lock(&pool->lock);
    while (!pool->cancelled && osbq_clock_ms() < deadline)
        osbq_clock_wait_until(&pool->wake, &pool->lock, deadline);
    bool cancelled = pool->cancelled;
    pthread_mutex_unlock(&pool->lock);
    return !cancelled;
}
