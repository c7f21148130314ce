/* The gateway's entry in the Redis registry of live gateways, renewed by a small thread. */
#include "registry.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus.h"
#include "log.h"

struct registry {
    struct osbq_store *store; /* borrowed */
    char *endpoint;           /* what workers connect to */
    pthread_mutex_t lock;     /* guards stopping, with wake */
    pthread_cond_t wake;      /* signalled to stop */
    bool stopping;            /* set by registry_stop */
    pthread_t thread;         /* the renewing thread */
};

static void *renew_thread(void *arg)
{
    struct registry *r = arg;
    bool failing = false;
    pthread_mutex_lock(&r->lock);
    while (!r->stopping) {
        pthread_mutex_unlock(&r->lock);
        struct osbq_error err = {0};
        if (osbq_store_gateway_register(r->store, r->endpoint, OSBQ_BUS_REGISTRY_TTL_MS, &err) <
            0) {
            if (!failing)
                log_warnx("cannot publish %s in the gateway registry (%s), retrying", r->endpoint,
                          err.text);
            failing = true;
        } else if (failing) {
            log_info("published %s in the gateway registry again", r->endpoint);
            failing = false;
        }
        struct timespec until;
        (void)clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += OSBQ_BUS_REGISTRY_RENEW_MS / 1000;
        pthread_mutex_lock(&r->lock);
        while (!r->stopping && pthread_cond_timedwait(&r->wake, &r->lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

struct registry *registry_start(struct osbq_store *store, const char *endpoint,
                                struct osbq_error *err)
{
    struct registry *r = calloc(1, sizeof *r);
    if (r == NULL || (r->endpoint = strdup(endpoint)) == NULL)
        goto out_free;
    r->store = store;
    if (pthread_mutex_init(&r->lock, NULL) != 0)
        goto out_free;
    if (pthread_cond_init(&r->wake, NULL) != 0)
        goto out_mutex;
    if (pthread_create(&r->thread, NULL, renew_thread, r) != 0)
        goto out_cond;
    return r;
out_cond:
    pthread_cond_destroy(&r->wake);
out_mutex:
    pthread_mutex_destroy(&r->lock);
out_free:
    if (r != NULL)
        free(r->endpoint);
    free(r);
    osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start the registry thread");
    return NULL;
}

void registry_stop(struct registry **rp)
{
    struct registry *r = rp ? *rp : NULL;
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    struct osbq_error err = {0};
    if (osbq_store_gateway_unregister(r->store, r->endpoint, &err) < 0)
        log_warnx("cannot remove %s from the gateway registry (%s); it expires by itself",
                  r->endpoint, err.text);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r->endpoint);
    free(r);
    *rp = NULL;
}
