/* The gateway's entry in the Redis registry of live gateways and its status, renewed by a
 * periodic thread. */
#include "registry.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "bus.h"
#include "log.h"
#include "owned.h"
#include "periodic.h"
#include "store_registry.h"

struct registry {
    const struct gateway *gw;       /* borrowed */
    bool failing;                   /* the last renewal failed (logged once) */
    struct osbq_periodic *periodic; /* the renewing thread */
};

/* The status osbq-ctl shows: who this gateway is and its load now. Caller frees; NULL when
 * out of memory. */
static char *status_json(const struct gateway *gw)
{
    struct dispatch_stats stats;
    dispatch_get_stats(gw->dispatch, &stats);
    char host[256] = "";
    (void)gethostname(host, sizeof host - 1);
    char listen[300];
    (void)snprintf(listen, sizeof listen, "%s:%u", gw->cfg->listen.host,
                   (unsigned)gw->cfg->listen.port);
    json_t *status = json_pack(
        "{s:s, s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "id", gw->gateway_id,
        "endpoint", gw->cfg->bus_advertise, "listen", listen, "pid", (json_int_t)getpid(), "host",
        host, "version", gw->version, "started_ms", (json_int_t)gw->started_ms, "http_inflight",
        (json_int_t)osbq_series_value(gw->metrics->in_flight), "jobs_queued",
        (json_int_t)stats.queued, "workers", (json_int_t)stats.workers, "free_slots",
        (json_int_t)stats.free_slots, "sync_waits", (json_int_t)waiter_table_count(gw->waiters));
    char *text = status ? json_dumps(status, JSON_COMPACT) : NULL;
    json_decref(status);
    return text;
}

static void renew(void *arg)
{
    struct registry *r = arg;
    const struct gateway *gw = r->gw;
    struct osbq_error err = {0};
    int rc = osbq_store_gateway_register(gw->store, gw->cfg->bus_advertise,
                                         OSBQ_BUS_REGISTRY_TTL_MS, &err);
    char *status = rc == 0 ? status_json(gw) : NULL;
    if (status != NULL)
        rc = osbq_store_status_publish(gw->store, "gateway", gw->gateway_id, status,
                                       OSBQ_BUS_REGISTRY_TTL_MS, &err);
    free(status);
    if (rc < 0) {
        if (!r->failing)
            log_warnx("cannot publish %s in the gateway registry (%s), retrying",
                      gw->cfg->bus_advertise, err.text);
        r->failing = true;
    } else if (r->failing) {
        log_info("published %s in the gateway registry again", gw->cfg->bus_advertise);
        r->failing = false;
    }
}

struct registry *registry_start(const struct gateway *gw, struct osbq_error *err)
{
    struct registry *r = calloc(1, sizeof *r);
    if (r == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    r->gw = gw;
    r->periodic = osbq_periodic_start(OSBQ_BUS_REGISTRY_RENEW_MS, renew, r, err);
    if (r->periodic == NULL) {
        free(r);
        return NULL;
    }
    return r;
}

void registry_stop(struct registry **rp)
{
    OSBQ_OWNED_OR_RETURN(struct registry, r, rp);
    osbq_periodic_stop(&r->periodic);
    const struct gateway *gw = r->gw;
    struct osbq_error err = {0};
    if (osbq_store_gateway_unregister(gw->store, gw->cfg->bus_advertise, &err) < 0 ||
        osbq_store_status_remove(gw->store, "gateway", gw->gateway_id, &err) < 0)
        log_warnx("cannot remove %s from the gateway registry (%s); it expires by itself",
                  gw->cfg->bus_advertise, err.text);
    free(r);
    *rp = NULL;
}
