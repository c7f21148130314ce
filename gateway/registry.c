/* The gateway's entry in the Redis registry of live gateways, renewed by a periodic thread. */
#include "registry.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "log.h"
#include "periodic.h"

struct registry {
    struct osbq_store *store;       /* borrowed */
    char *endpoint;                 /* what workers connect to */
    bool failing;                   /* the last renewal failed (logged once) */
    struct osbq_periodic *periodic; /* the renewing thread */
};

static void renew(void *arg)
{
    struct registry *r = arg;
    struct osbq_error err = {0};
    if (osbq_store_gateway_register(r->store, r->endpoint, OSBQ_BUS_REGISTRY_TTL_MS, &err) < 0) {
        if (!r->failing)
            log_warnx("cannot publish %s in the gateway registry (%s), retrying", r->endpoint,
                      err.text);
        r->failing = true;
    } else if (r->failing) {
        log_info("published %s in the gateway registry again", r->endpoint);
        r->failing = false;
    }
}

struct registry *registry_start(struct osbq_store *store, const char *endpoint,
                                struct osbq_error *err)
{
    struct registry *r = calloc(1, sizeof *r);
    if (r == NULL || (r->endpoint = strdup(endpoint)) == NULL) {
        free(r);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    r->store = store;
    r->periodic = osbq_periodic_start(OSBQ_BUS_REGISTRY_RENEW_MS, renew, r, err);
    if (r->periodic == NULL) {
        free(r->endpoint);
        free(r);
        return NULL;
    }
    return r;
}

void registry_stop(struct registry **rp)
{
    struct registry *r = rp ? *rp : NULL;
    if (r == NULL)
        return;
    osbq_periodic_stop(&r->periodic);
    struct osbq_error err = {0};
    if (osbq_store_gateway_unregister(r->store, r->endpoint, &err) < 0)
        log_warnx("cannot remove %s from the gateway registry (%s); it expires by itself",
                  r->endpoint, err.text);
    free(r->endpoint);
    free(r);
    *rp = NULL;
}
