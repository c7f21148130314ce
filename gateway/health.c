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

/* Ready once Redis answers on the connection the requests use (the pipeline's). */
static void health_ready_after_ping(const struct gateway *gw, const struct request *req,
                                    struct osbq_store_call *call, void *state, struct reply *out)
{
    (void)gw;
    (void)req;
    (void)state;
    struct osbq_error err = {0};
    if (osbq_store_ping_result(call, &err) < 0) {
        reply_error_from(out, &err);
        return;
    }
    reply_static(out, 200, ready_body, sizeof ready_body - 1);
}

/* With OSBQ_REDIS_MIN_ACKS: ready once Redis answers and has that many replicas online, since
 * every acceptance gets 503 until it has. */
static void health_ready_after_info(const struct gateway *gw, const struct request *req,
                                    struct osbq_store_call *call, void *state, struct reply *out)
{
    (void)req;
    (void)state;
    struct osbq_error err = {0};
    struct osbq_store_replication r;
    if (osbq_store_replication_result(call, &r, &err) < 0) {
        reply_error_from(out, &err);
        return;
    }
    if (r.online < gw->cfg->redis_min_acks) {
        reply_errorf(out, OSBQ_ERR_UNAVAILABLE,
                     "Redis (%s) has %zu replica(s) online, fewer than OSBQ_REDIS_MIN_ACKS=%u: "
                     "operations cannot be made durable.",
                     r.role, r.online, gw->cfg->redis_min_acks);
        return;
    }
    reply_static(out, 200, ready_body, sizeof ready_body - 1);
}

void health_ready(const struct gateway *gw, const struct request *req, struct reply *out)
{
    (void)req;
    struct osbq_error err = {0};
    bool replicas = gw->cfg->redis_min_acks > 0;
    struct osbq_store_call *call =
        replicas ? osbq_store_replication_call(&err) : osbq_store_ping_call(&err);
    reply_defer_call(out, call, &err, replicas ? health_ready_after_info : health_ready_after_ping,
                     NULL, NULL);
}
