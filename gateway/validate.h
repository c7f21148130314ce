/* Request checks that need no I/O: the API version header, ETags and the body's media type
 * (credentials: auth.h). */
#ifndef OSBQ_GATEWAY_VALIDATE_H
#define OSBQ_GATEWAY_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* The newest API version osbq implements; newer 2.x minors are served as this one. */
#define VALIDATE_API_LATEST 217

/* Parses an X-Broker-API-Version value ("2.17") into major*100+minor, clamping minors above
 * 2.17 to 217. Returns 0, or -1 with err (OSBQ_ERR_API_VERSION) saying what is supported
 * when the header is missing (NULL), malformed, or not 2.x. */
int validate_api_version(const char *header, unsigned *out, struct osbq_error *err);

/* True when an If-None-Match header value (a list of entity tags, or "*") matches etag
 * (quoted, strong); weak tags compare by their opaque part, as RFC 7232 asks for GET. */
bool validate_etag_matches(const char *if_none_match, const char *etag);

/* True when a Content-Type value names JSON: the media type application/json (any case),
 * alone or followed by parameters ("; charset=utf-8"). "application/jsonx" is not JSON. */
bool validate_json_content_type(const char *content_type);

#endif
