/* Every request handler, one file per endpoint family (osb_*.c, health.c). */
#ifndef OSBQ_GATEWAY_HANDLERS_H
#define OSBQ_GATEWAY_HANDLERS_H

#include "gateway.h"
#include "reply.h"
#include "request.h"

/* GET /v2/catalog: the catalog without "osbq" objects; 304 when If-None-Match matches. */
void osb_catalog_get(const struct gateway *gw, const struct request *req, struct reply *out);

/* GET /healthz: the process is alive and serving HTTP. */
void health_live(const struct gateway *gw, const struct request *req, struct reply *out);

/* GET /readyz: Redis answers, so requests can be served. */
void health_ready(const struct gateway *gw, const struct request *req, struct reply *out);

#endif
