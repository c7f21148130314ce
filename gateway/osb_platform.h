/* What a request's platform may see: its services (the catalog's others are unknown to it) and
 * the instances and bindings it made (another platform's are answered as absent). */
#ifndef OSBQ_GATEWAY_OSB_PLATFORM_H
#define OSBQ_GATEWAY_OSB_PLATFORM_H

#include <stdbool.h>

#include "gateway.h"
#include "request.h"

/* The request's platform name, as the store records it ("default" off /v2). */
const char *osb_platform_name(const struct request *req);

/* True when a record made by recorded (NULL: before platforms were recorded, so "default")
 * belongs to the request's platform. */
bool osb_platform_owns(const struct request *req, const char *recorded);

/* The plan of the catalog by id, limited to the request's platform: NULL when unknown or not
 * its. */
const struct osbq_plan *osb_platform_plan(const struct gateway *gw, const struct request *req,
                                          const char *plan_id);

#endif
