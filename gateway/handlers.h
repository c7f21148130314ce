/* Every request handler, one file per endpoint family (osb_*.c, health.c).
 *
 * A handler that needs Redis answers in two halves: the first returns a deferred reply
 * (reply_defer) and its continuation, a reply_resume_fn, answers once the call is answered.
 * Continuations are named <handler>_after_<what it waited for>, the handler (or the function
 * that deferred) without its osb_ prefix: instance_get_after_read, instance_patch_after_read,
 * accept_operation_after_begin (accept.c), sync_reply_after_read, health_ready_after_ping.
 * Operations start through accept.h. */
#ifndef OSBQ_GATEWAY_HANDLERS_H
#define OSBQ_GATEWAY_HANDLERS_H

#include "gateway.h"
#include "reply.h"
#include "request.h"

/* GET /v2/catalog: the catalog without "osbq" objects; 304 when If-None-Match matches. */
void osb_catalog_get(const struct gateway *gw, const struct request *req, struct reply *out);

/* PUT, PATCH, DELETE and GET /v2/service_instances/:instance_id. */
void osb_instance_put(const struct gateway *gw, const struct request *req, struct reply *out);
void osb_instance_patch(const struct gateway *gw, const struct request *req, struct reply *out);
void osb_instance_delete(const struct gateway *gw, const struct request *req, struct reply *out);
void osb_instance_get(const struct gateway *gw, const struct request *req, struct reply *out);

/* The answer to a synchronous request whose wait ended (result), for http.c: reads the outcome
 * once more after a timeout (a deferred reply; wait must outlive it: the exchange holds it),
 * then answers through the two functions below. */
void osb_sync_reply(const struct gateway *gw, const struct reply_wait *wait,
                    const struct waiter_result *result, struct reply *out);

/* The answer to a finished synchronous instance operation. */
void osb_instance_finished(const struct reply_wait *wait, const struct waiter_result *result,
                           struct reply *out);

/* The answer to a finished synchronous bind or unbind (a bind reads the stored binding: a
 * deferred reply). */
void osb_binding_finished(const struct gateway *gw, const struct reply_wait *wait,
                          const struct waiter_result *result, struct reply *out);

/* PUT, DELETE and GET /v2/service_instances/:instance_id/service_bindings/:binding_id, and
 * its last_operation. */
void osb_binding_put(const struct gateway *gw, const struct request *req, struct reply *out);
void osb_binding_delete(const struct gateway *gw, const struct request *req, struct reply *out);
void osb_binding_get(const struct gateway *gw, const struct request *req, struct reply *out);
void osb_binding_last_operation_get(const struct gateway *gw, const struct request *req,
                                    struct reply *out);

/* GET /v2/service_instances/:instance_id/last_operation. */
void osb_last_operation_get(const struct gateway *gw, const struct request *req, struct reply *out);

/* GET /metrics: the gateway's metrics in Prometheus text format (gateway_metrics.c). Basic
 * auth, when OSBQ_METRICS_USERNAME is set, is checked by http.c before routing. */
void metrics_get(const struct gateway *gw, const struct request *req, struct reply *out);

/* GET /healthz: the process is alive and serving HTTP. */
void health_live(const struct gateway *gw, const struct request *req, struct reply *out);

/* GET /readyz: Redis answers, so requests can be served. */
void health_ready(const struct gateway *gw, const struct request *req, struct reply *out);

#endif
