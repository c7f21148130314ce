/* Request checks that need no I/O: the API version header, ETags, the body's media type. */
#include "validate.h"

#include <string.h>
#include <strings.h>

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
