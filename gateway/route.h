/* The routing table: method and path pattern to handler, and the matcher. */
#ifndef OSBQ_GATEWAY_ROUTE_H
#define OSBQ_GATEWAY_ROUTE_H

#include <stddef.h>

#include "gateway.h"
#include "reply.h"
#include "request.h"

typedef void (*route_handler)(const struct gateway *gw, const struct request *req,
                              struct reply *out);

/* One route. Patterns are literal segments and ":name" segments that capture one segment. */
struct route {
    unsigned methods;      /* HTTP_* bits this route answers */
    const char *pattern;   /* e.g. "/v2/catalog" */
    route_handler handler; /* what answers it */
};

enum route_result {
    ROUTE_FOUND,
    ROUTE_NOT_FOUND,
    ROUTE_METHOD_NOT_ALLOWED,
};

/* Captured, percent-decoded path parameters; the pointers point into buf. */
struct route_params {
    char buf[1024];                       /* decoded segments, NUL-separated */
    const char *values[ROUTE_MAX_PARAMS]; /* in pattern order */
    size_t count;                         /* captured parameters */
};

/* The method as a label of metrics and of the audit trail: a fixed set ("GET", ..., "OTHER"),
 * whatever a client sends. */
const char *route_method_label(enum http_method method);

/* The method a request line names; HTTP_OTHER for any other. */
enum http_method route_method_parse(const char *name);

/* Finds the route for method and raw path (query string excluded). ROUTE_FOUND sets *route
 * and params; ROUTE_METHOD_NOT_ALLOWED sets *allowed to the HTTP_* bits the path accepts. */

enum route_result route_match(const char *path, enum http_method method, const struct route **route,
                              struct route_params *params, unsigned *allowed);

/* Writes the methods in bits as an Allow header value ("GET, PUT"). */
void route_allow_header(unsigned bits, char *buf, size_t size);

#endif
