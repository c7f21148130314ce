/* A thread that calls one function every interval, or when it asks to be called again, until
 * it is stopped. */
#include "periodic.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "owned.h"

struct osbq_periodic {
    /* What to call: fn_at, which says when to be called again, or fn every interval_ms. */
    int64_t (*fn_at)(void *arg, int64_t told_ms);
    void (*fn)(void *arg);
    unsigned interval_ms;
    void *arg;              /* the argument: borrowed, or freed at the stop when owns_arg */
    bool owns_arg;          /* started by an _owning start */
    pthread_mutex_t lock;   /* guards the fields below, with wake */
    pthread_cond_t wake;    /* signalled to stop, or when an earlier time is told */
    bool stopping;          /* set by osbq_periodic_stop */
    int64_t sleep_until_ms; /* epoch ms the thread sleeps until; 0: it is not asleep */
    int64_t told_ms;        /* the earliest time osbq_periodic_sooner gave, or 0 */
    pthread_t thread;       /* the thread */
};

/* Epoch ms on CLOCK_REALTIME, the clock of the condition variable's deadlines. */
static int64_t realtime_ms(void)
{
    struct timespec now;
    (void)clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* One call; returns the epoch ms of the next. */
static int64_t call(struct osbq_periodic *p, int64_t told_ms)
{
    if (p->fn_at != NULL)
        return p->fn_at(p->arg, told_ms);
    p->fn(p->arg);
    return realtime_ms() + p->interval_ms;
}

static void *periodic_thread(void *data)
{
    struct osbq_periodic *p = data;
    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        int64_t told = p->told_ms;
        p->told_ms = 0;
        pthread_mutex_unlock(&p->lock);
        int64_t wake = call(p, told);
        pthread_mutex_lock(&p->lock);
        /* Until then, unless osbq_periodic_sooner tells an earlier time (it signals only then). */
        p->sleep_until_ms = wake;
        struct timespec until = {.tv_sec = (time_t)(wake / 1000),
                                 .tv_nsec = (long)(wake % 1000) * 1000000L};
        while (!p->stopping && p->told_ms == 0 &&
               pthread_cond_timedwait(&p->wake, &p->lock, &until) == 0)
            ;
        p->sleep_until_ms = 0;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static struct osbq_periodic *start(struct osbq_periodic *p, struct osbq_error *err)
{
    if (p == NULL)
        goto out_fail;
    if (pthread_mutex_init(&p->lock, NULL) != 0)
        goto out_free;
    if (pthread_cond_init(&p->wake, NULL) != 0)
        goto out_mutex;
    if (pthread_create(&p->thread, NULL, periodic_thread, p) != 0)
        goto out_cond;
    return p;
out_cond:
    pthread_cond_destroy(&p->wake);
out_mutex:
    pthread_mutex_destroy(&p->lock);
out_free:
    if (p->owns_arg)
        free(p->arg);
    free(p);
out_fail:
    osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start a thread");
    return NULL;
}

struct osbq_periodic *osbq_periodic_start(unsigned interval_ms, void (*fn)(void *arg), void *arg,
                                          struct osbq_error *err)
{
    struct osbq_periodic *p = calloc(1, sizeof *p);
    if (p != NULL)
        *p = (struct osbq_periodic){.fn = fn, .interval_ms = interval_ms, .arg = arg};
    return start(p, err);
}

struct osbq_periodic *osbq_periodic_start_at(int64_t (*fn)(void *arg, int64_t told_ms), void *arg,
                                             struct osbq_error *err)
{
    struct osbq_periodic *p = calloc(1, sizeof *p);
    if (p != NULL)
        *p = (struct osbq_periodic){.fn_at = fn, .arg = arg};
    return start(p, err);
}

struct osbq_periodic *osbq_periodic_start_owning(unsigned interval_ms, void (*fn)(void *arg),
                                                 int64_t (*fn_at)(void *arg, int64_t told_ms),
                                                 void *arg, struct osbq_error *err)
{
    if (arg == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    struct osbq_periodic *p = calloc(1, sizeof *p);
    if (p == NULL) {
        free(arg);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    *p = (struct osbq_periodic){
        .fn = fn, .fn_at = fn_at, .interval_ms = interval_ms, .arg = arg, .owns_arg = true};
    return start(p, err);
}

void osbq_periodic_sooner(struct osbq_periodic *p, int64_t at_ms)
{
    pthread_mutex_lock(&p->lock);
    if (p->told_ms == 0 || at_ms < p->told_ms) {
        p->told_ms = at_ms;
        /* A thread asleep past it wakes to sleep until it instead; one awake reads it next. */
        if (p->sleep_until_ms > at_ms)
            pthread_cond_signal(&p->wake);
    }
    pthread_mutex_unlock(&p->lock);
}

void osbq_periodic_stop(struct osbq_periodic **pp)
{
    OSBQ_OWNED_OR_RETURN(struct osbq_periodic, p, pp);
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    if (p->owns_arg)
        free(p->arg);
    free(p);
    *pp = NULL;
}
