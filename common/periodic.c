/* A thread that calls one function every interval until it is stopped. */
#include "periodic.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

struct osbq_periodic {
    unsigned interval_ms;  /* pause between calls */
    void (*fn)(void *arg); /* what to call */
    void *arg;             /* borrowed argument */
    pthread_mutex_t lock;  /* guards stopping, with wake */
    pthread_cond_t wake;   /* signalled to stop */
    bool stopping;         /* set by osbq_periodic_stop */
    pthread_t thread;      /* the thread */
};

static void *periodic_thread(void *data)
{
    struct osbq_periodic *p = data;
    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        pthread_mutex_unlock(&p->lock);
        p->fn(p->arg);
        struct timespec until;
        (void)clock_gettime(CLOCK_REALTIME, &until);
        long ns = until.tv_nsec + (long)(p->interval_ms % 1000) * 1000000L;
        until.tv_sec += (time_t)(p->interval_ms / 1000) + ns / 1000000000L;
        until.tv_nsec = ns % 1000000000L;
        pthread_mutex_lock(&p->lock);
        while (!p->stopping && pthread_cond_timedwait(&p->wake, &p->lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

struct osbq_periodic *osbq_periodic_start(unsigned interval_ms, void (*fn)(void *arg), void *arg,
                                          struct osbq_error *err)
{
    struct osbq_periodic *p = calloc(1, sizeof *p);
    if (p == NULL)
        goto out_fail;
    p->interval_ms = interval_ms;
    p->fn = fn;
    p->arg = arg;
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
    free(p);
out_fail:
    osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start a thread");
    return NULL;
}

void osbq_periodic_stop(struct osbq_periodic **pp)
{
    struct osbq_periodic *p = pp ? *pp : NULL;
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
    *pp = NULL;
}
