/* Request checks that need no I/O: the API version header, ETags, the body's media type, the
 * body itself, its members and the path's ids (credentials: auth.h). The body checks answer a
 * 400 in the reply when they fail. */
#ifndef OSBQ_GATEWAY_VALIDATE_H
#define OSBQ_GATEWAY_VALIDATE_H

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "reply.h"
#include "request.h"

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

/* Longest id accepted in a path (bytes, decoded), as the spec's guidance on string lengths. */
#define VALIDATE_ID_MAX 255

/* Parses the request body as a JSON object (duplicate keys rejected). Returns a new reference,
 * or NULL with a 400 in out. */
json_t *validate_body(const struct request *req, struct reply *out);

/* Checks an id from the path; false with a 400 in out. */
bool validate_id(const char *id, const char *what, struct reply *out);

/* Reads body[key] when present: it must be a non-empty string (*value borrowed) or, for the
 * object variant, an object (*value borrowed). Absent or JSON null: *value = NULL and true
 * (clients generated from the OpenAPI document, Korifi's among them, send null for every unset
 * optional field; docs/conformance.md). Wrong: false with a 400 in out. */
bool validate_optional_string(json_t *body, const char *key, const char **value, struct reply *out);
bool validate_optional_object(json_t *body, const char *key, json_t **value, struct reply *out);

#endif
