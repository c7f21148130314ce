/* Request admission: what the gateway checks of a request before a handler sees it. On the
 * request's first callback, before any of its body is read, the size of its request line and
 * headers and of the body it announces; once it is routed, who sends it (a platform's
 * credentials on /v2, the metrics credentials on /metrics) and, on /v2, the API version it
 * speaks. Each check answers true when the request may go on, or false with the answer in *out
 * (reply.h). */
#ifndef OSBQ_GATEWAY_ADMISSION_H
#define OSBQ_GATEWAY_ADMISSION_H

#include <microhttpd.h>
#include <stdbool.h>

#include "config.h"
#include "gateway.h"
#include "platforms.h"
#include "reply.h"
#include "request.h"

/* The request line (method, url, version) and headers against OSBQ_MAX_HEADER_BYTES (431), then
 * an announced Content-Length against OSBQ_MAX_BODY_BYTES (413). Checked before authentication:
 * a client without credentials cannot make the gateway hold more than the limits either. */
bool admission_check_sizes(const struct osbq_config *cfg, struct MHD_Connection *conn,
                           const char *method, const char *url, const char *version,
                           struct reply *out);

/* A request under a platform's "<prefix>/v2": platform is the one of its prefix (NULL: no
 * platform has it, 404), of the set it uses; its credentials must be that platform's (401, the
 * challenge naming the schemes it accepts), and its X-Broker-API-Version one the broker speaks
 * (412, or 400). Sets req->platform and req->api_version. set and platform are borrowed. */
bool admission_check_broker(const struct osbq_platforms *set, const struct osbq_platform *platform,
                            struct MHD_Connection *conn, struct request *req, struct reply *out);

/* A request for /metrics: with OSBQ_METRICS_USERNAME set, its basic credentials must be those
 * (401); without, every request may go on. */
bool admission_check_metrics(const struct gateway *gw, struct MHD_Connection *conn,
                             struct reply *out);

#endif
