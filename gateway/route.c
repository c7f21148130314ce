/* The routing table and its matcher. */
#include "route.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "handlers.h"

/* Every endpoint of the gateway. Order does not matter: patterns do not overlap. */
static const struct route routes[] = {
    {HTTP_GET, "/v2/catalog", osb_catalog_get},
    {HTTP_PUT, "/v2/service_instances/:instance_id", osb_instance_put},
    {HTTP_PATCH, "/v2/service_instances/:instance_id", osb_instance_patch},
    {HTTP_DELETE, "/v2/service_instances/:instance_id", osb_instance_delete},
    {HTTP_GET, "/v2/service_instances/:instance_id", osb_instance_get},
    {HTTP_GET, "/v2/service_instances/:instance_id/last_operation", osb_last_operation_get},
    {HTTP_PUT, "/v2/service_instances/:instance_id/service_bindings/:binding_id", osb_binding_put},
    {HTTP_DELETE, "/v2/service_instances/:instance_id/service_bindings/:binding_id",
     osb_binding_delete},
    {HTTP_GET, "/v2/service_instances/:instance_id/service_bindings/:binding_id", osb_binding_get},
    {HTTP_GET, "/v2/service_instances/:instance_id/service_bindings/:binding_id/last_operation",
     osb_binding_last_operation_get},
    {HTTP_GET, "/healthz", health_live},
    {HTTP_GET, "/readyz", health_ready},
    {HTTP_GET, "/metrics", metrics_get},
};

/* Matches path against pattern; captures ":name" segments decoded into params. */
static bool pattern_matches(const char *pattern, const char *path, struct route_params *params)
{
    size_t used = 0;
    params->count = 0;
    while (*pattern != '\0' && *path != '\0') {
        if (*pattern != '/' || *path != '/')
            return false;
        pattern++;
        path++;
        size_t plen = strcspn(pattern, "/");
        size_t slen = strcspn(path, "/");
        if (pattern[0] == ':') {
            if (slen == 0 || params->count == ROUTE_MAX_PARAMS ||
                used + slen + 1 > sizeof params->buf)
                return false;
            char *value = params->buf + used;
            memcpy(value, path, slen);
            value[slen] = '\0';
            /* libmicrohttpd's decoder: the raw path reaches us undecoded so that an encoded
             * '/' stays inside its segment. */
            size_t decoded = MHD_http_unescape(value);
            /* An encoded NUL (%00) would cut the id short as a C string, and the request would
             * act on another id than it named: it becomes DEL, a control character, which the
             * id checks refuse with a 400 that says so. */
            for (char *nul = memchr(value, '\0', decoded); nul != NULL;
                 nul = memchr(nul, '\0', decoded - (size_t)(nul - value)))
                *nul = 0x7f;
            params->values[params->count++] = value;
            used += decoded + 1;
        } else if (plen != slen || memcmp(pattern, path, plen) != 0) {
            return false;
        }
        pattern += plen;
        path += slen;
    }
    return *pattern == '\0' && *path == '\0';
}

enum route_result route_match(const char *path, enum http_method method, const struct route **route,
                              struct route_params *params, unsigned *allowed)
{
    unsigned methods = 0;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        struct route_params captured;
        if (!pattern_matches(routes[i].pattern, path, &captured))
            continue;
        if (routes[i].methods & (unsigned)method) {
            *route = &routes[i];
            *params = captured;
            /* Re-point values into the caller's copy of the buffer. */
            for (size_t k = 0; k < captured.count; k++)
                params->values[k] = params->buf + (captured.values[k] - captured.buf);
            return ROUTE_FOUND;
        }
        methods |= routes[i].methods;
    }
    if (methods == 0)
        return ROUTE_NOT_FOUND;
    *allowed = methods;
    return ROUTE_METHOD_NOT_ALLOWED;
}

void route_allow_header(unsigned bits, char *buf, size_t size)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {{HTTP_GET, "GET, HEAD"},
                 {HTTP_PUT, "PUT"},
                 {HTTP_PATCH, "PATCH"},
                 {HTTP_DELETE, "DELETE"},
                 {HTTP_POST, "POST"}};
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(bits & names[i].bit))
            continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", names[i].name);
        if (n < 0 || (size_t)n >= size - used)
            return;
        used += (size_t)n;
    }
}

/* The methods by name; HEAD arrives as HTTP_GET (libmicrohttpd drops its body), after GET so that
 * GET stays HTTP_GET's label. */
static const struct {
    const char *name;
    enum http_method method;
} method_names[] = {{"GET", HTTP_GET},     {"HEAD", HTTP_GET},      {"PUT", HTTP_PUT},
                    {"PATCH", HTTP_PATCH}, {"DELETE", HTTP_DELETE}, {"POST", HTTP_POST}};

enum http_method route_method_parse(const char *name)
{
    for (size_t i = 0; i < sizeof method_names / sizeof method_names[0]; i++)
        if (strcmp(name, method_names[i].name) == 0)
            return method_names[i].method;
    return HTTP_OTHER;
}

const char *route_method_label(enum http_method method)
{
    for (size_t i = 0; i < sizeof method_names / sizeof method_names[0]; i++)
        if (method_names[i].method == method)
            return method_names[i].name;
    return "OTHER";
}
