/* Request checks that need no I/O: the API version header, ETags, the body's media type, the
 * body and the path's ids. */
#include "validate.h"

#include <string.h>
#include <strings.h>

/* Deeper documents are refused: parameters nest a few levels, never hundreds. */
#define BODY_MAX_DEPTH 64

static const char supported[] = "this broker supports X-Broker-API-Version 2.0 to 2.17 "
                                "(e.g. \"X-Broker-API-Version: 2.17\")";

/* Reads 1 to 4 decimal digits; returns the number of characters read, 0 when none. */
static size_t read_number(const char *s, unsigned *out)
{
    size_t n = 0;
    unsigned value = 0;
    while (s[n] >= '0' && s[n] <= '9') {
        if (n == 4)
            return 0;
        value = value * 10 + (unsigned)(s[n] - '0');
        n++;
    }
    *out = value;
    return n;
}

int validate_api_version(const char *header, unsigned *out, struct osbq_error *err)
{
    if (header == NULL)
        return osbq_error_set(err, OSBQ_ERR_API_VERSION,
                              "The X-Broker-API-Version header is missing: %s.", supported);
    unsigned major, minor;
    size_t n = read_number(header, &major);
    size_t m = n > 0 && header[n] == '.' ? read_number(header + n + 1, &minor) : 0;
    if (n == 0 || m == 0 || header[n + 1 + m] != '\0')
        return osbq_error_set(err, OSBQ_ERR_API_VERSION,
                              "The X-Broker-API-Version header must be MAJOR.MINOR: %s.",
                              supported);
    if (major != 2)
        return osbq_error_set(err, OSBQ_ERR_API_VERSION,
                              "X-Broker-API-Version %u.%u is not supported: %s.", major, minor,
                              supported);
    unsigned version = 200 + (minor > 17 ? 17 : minor);
    *out = version;
    return 0;
}

bool validate_etag_matches(const char *if_none_match, const char *etag)
{
    size_t etag_len = strlen(etag);
    const char *p = if_none_match;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '\0')
            return false;
        if (*p == '*' && (p[1] == '\0' || p[1] == ',' || p[1] == ' ' || p[1] == '\t'))
            return true;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        const char *end = *p == '"' ? strchr(p + 1, '"') : NULL;
        if (end == NULL)
            return false; /* malformed list: no match, so the full body is sent */
        size_t len = (size_t)(end - p) + 1;
        if (len == etag_len && memcmp(p, etag, len) == 0)
            return true;
        p = end + 1;
    }
}

bool validate_json_content_type(const char *content_type)
{
    static const char json[] = "application/json";
    const char *p = content_type;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncasecmp(p, json, sizeof json - 1) != 0)
        return false;
    p += sizeof json - 1;
    while (*p == ' ' || *p == '\t')
        p++;
    return *p == '\0' || *p == ';';
}

static size_t depth(const json_t *value)
{
    size_t deepest = 0;
    if (json_is_object(value)) {
        const char *key;
        json_t *member;
        json_object_foreach ((json_t *)value, key, member) {
            size_t d = depth(member);
            deepest = d > deepest ? d : deepest;
            if (deepest > BODY_MAX_DEPTH)
                break;
        }
    } else if (json_is_array(value)) {
        size_t i;
        json_t *member;
        json_array_foreach (value, i, member) {
            size_t d = depth(member);
            deepest = d > deepest ? d : deepest;
            if (deepest > BODY_MAX_DEPTH)
                break;
        }
    }
    return deepest + 1;
}

json_t *validate_body(const struct request *req, struct reply *out)
{
    if (req->content_type != NULL && !validate_json_content_type(req->content_type)) {
        reply_bad_request(out, "The request body must be JSON (Content-Type: application/json).");
        return NULL;
    }
    if (req->body == NULL || req->body_len == 0) {
        reply_bad_request(out, "The request body must be a JSON object.");
        return NULL;
    }
    json_error_t jerr;
    json_t *body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (body == NULL) {
        reply_bad_request(out, "The request body is not valid JSON: %s (line %d, column %d).",
                          jerr.text, jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(body)) {
        json_decref(body);
        reply_bad_request(out, "The request body must be a JSON object.");
        return NULL;
    }
    if (depth(body) > BODY_MAX_DEPTH) {
        json_decref(body);
        reply_bad_request(out, "The request body nests deeper than %d levels.", BODY_MAX_DEPTH);
        return NULL;
    }
    return body;
}

bool validate_id(const char *id, const char *what, struct reply *out)
{
    size_t len = strlen(id);
    if (len == 0)
        return reply_bad_request(out, "The %s must not be empty.", what);
    if (len > VALIDATE_ID_MAX)
        return reply_bad_request(out, "The %s is longer than %d bytes.", what, VALIDATE_ID_MAX);
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        if (*p < 0x20 || *p == 0x7f || *p == '/')
            return reply_bad_request(out, "The %s holds a control character or '/'.", what);
    /* Ids travel inside JSON (jobs, credentials, events): they must be UTF-8. */
    json_t *as_json = json_string(id);
    if (as_json == NULL)
        return reply_bad_request(out, "The %s is not valid UTF-8.", what);
    json_decref(as_json);
    return true;
}

bool validate_optional_string(json_t *body, const char *key, const char **value, struct reply *out)
{
    json_t *member = json_object_get(body, key);
    *value = NULL;
    if (member == NULL || json_is_null(member))
        return true;
    if (!json_is_string(member) || json_string_length(member) == 0)
        return reply_bad_request(out, "\"%s\" must be a non-empty string.", key);
    *value = json_string_value(member);
    return true;
}

bool validate_optional_object(json_t *body, const char *key, json_t **value, struct reply *out)
{
    json_t *member = json_object_get(body, key);
    *value = NULL;
    if (member == NULL || json_is_null(member))
        return true;
    if (!json_is_object(member))
        return reply_bad_request(out, "\"%s\" must be a JSON object.", key);
    *value = member;
    return true;
}
