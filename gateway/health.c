/* Liveness and readiness probes for compose and Kubernetes; no authentication. */
#include "handlers.h"

static const char live_body[] = "{\"status\":\"ok\"}";
static const char ready_body[] = "{\"status\":\"ready\"}";

void health_live(const struct gateway *gw, const struct request *req, struct reply *out)
{
    (void)gw;
    (void)req;
    reply_static(out, 200, live_body, sizeof live_body - 1);
}

void health_ready(const struct gateway *gw, const struct request *req, struct reply *out)
{
    (void)req;
    struct osbq_error err = {0};
    if (osbq_store_ping(gw->store, &err) < 0) {
        reply_error_from(out, &err);
        return;
    }
    reply_static(out, 200, ready_body, sizeof ready_body - 1);
}
