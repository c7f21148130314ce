/* Fuzz target: what the gateway checks of a request before any I/O: the router
 * (gateway/route.c), the header and body checks every handler calls (gateway/validate.c:
 * headers, body parsing, path ids, optional fields) and the request digest (gateway/digest.c:
 * canonical JSON and digests). The handlers themselves (osb_instance.c, osb_binding.c) interleave
 * their remaining checks with Redis and catalog look-ups and are covered by the integration tests.
 *
 * Input, as readable text so the corpus is plain requests:
 *   line 1: "<METHOD> <path>"
 *   line 2: X-Broker-API-Version value     line 3: If-None-Match value
 *   line 4: Content-Type value             rest: the body
 * An empty header line means the header is absent. */
#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "fuzz_target.h"
#include "route.h"
#include "validate.h"

/* Body members the handlers read as strings and as objects. */
static const char *const string_fields[] = {
    "service_id", "plan_id",  "organization_guid",
    "space_guid", "app_guid", "predecessor_binding_id",
};
static const char *const object_fields[] = {
    "parameters", "context", "previous_values", "maintenance_info", "bind_resource",
};

/* Splits off the next line of *data (at most *size bytes) as a new NUL-terminated string. */
static char *next_line(const uint8_t **data, size_t *size)
{
    const uint8_t *nl = memchr(*data, '\n', *size);
    size_t len = nl != NULL ? (size_t)(nl - *data) : *size;
    char *line = malloc(len + 1);
    FUZZ_CHECK(line != NULL);
    memcpy(line, *data, len);
    line[len] = '\0';
    *data += nl != NULL ? len + 1 : len;
    *size -= nl != NULL ? len + 1 : len;
    return line;
}

static enum http_method method_named(const char *line, const char **path)
{
    static const struct {
        const char *name;
        enum http_method method;
    } methods[] = {{"GET ", HTTP_GET},       {"PUT ", HTTP_PUT},   {"PATCH ", HTTP_PATCH},
                   {"DELETE ", HTTP_DELETE}, {"POST ", HTTP_POST}, {"HEAD ", HTTP_GET}};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        size_t n = strlen(methods[i].name);
        if (strncmp(line, methods[i].name, n) == 0) {
            *path = line + n;
            return methods[i].method;
        }
    }
    const char *space = strchr(line, ' ');
    *path = space != NULL ? space + 1 : line;
    return HTTP_OTHER;
}

/* A reply that must be an error: a status of 4xx and a JSON object with a description. */
static void check_error_reply(struct reply *out)
{
    FUZZ_CHECK(out->status >= 400 && out->status < 500 && out->body != NULL);
    json_t *body = json_loadb(out->body, out->body_len, 0, NULL);
    FUZZ_CHECK(json_is_string(json_object_get(body, "description")));
    json_decref(body);
    reply_clear(out);
}

static void check_route(const char *path, enum http_method method)
{
    const struct route *route = NULL;
    struct route_params params;
    unsigned allowed = 0;
    switch (route_match(path, method, &route, &params, &allowed)) {
    case ROUTE_FOUND:
        FUZZ_CHECK(route != NULL && (route->methods & (unsigned)method) != 0);
        FUZZ_CHECK(params.count <= ROUTE_MAX_PARAMS);
        for (size_t i = 0; i < params.count; i++) {
            FUZZ_CHECK(params.values[i] >= params.buf &&
                       params.values[i] < params.buf + sizeof params.buf);
            struct reply out = {0};
            if (!validate_id(params.values[i], "id", &out))
                check_error_reply(&out);
            else
                FUZZ_CHECK(out.status == 0 && out.body == NULL);
        }
        break;
    case ROUTE_METHOD_NOT_ALLOWED: {
        FUZZ_CHECK(allowed != 0 && (allowed & (unsigned)method) == 0);
        char allow[64];
        route_allow_header(allowed, allow, sizeof allow);
        FUZZ_CHECK(allow[0] != '\0' && memchr(allow, '\0', sizeof allow) != NULL);
        break;
    }
    case ROUTE_NOT_FOUND:
        break;
    }
}

static void check_headers(const char *api_version, const char *if_none_match)
{
    unsigned version = 0;
    struct osbq_error err = {0};
    if (validate_api_version(api_version[0] != '\0' ? api_version : NULL, &version, &err) == 0)
        FUZZ_CHECK(version >= 200 && version <= VALIDATE_API_LATEST);
    else
        FUZZ_CHECK(err.text[0] != '\0');
    if (if_none_match[0] != '\0') {
        (void)validate_etag_matches(if_none_match, "\"5d41402abc4b2a76b9719d911017c592\"");
        (void)validate_etag_matches(if_none_match, "\"\"");
    }
}

/* The body as a handler reads it; every accepted document has a canonical form that reads
 * back as the same JSON. */
static int compare_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The digest streamed member by member (sorted keys, strings as strings, the rest as their
 * canonical text) is the hash of the object's canonical text, as the handlers rely on. Keys
 * the handlers never use (ones a dump would escape) are left out of the check. */
static void check_digest(json_t *body, const char *canonical)
{
    enum { KEYS_MAX = 64 };
    const char *keys[KEYS_MAX];
    size_t n = 0;
    const char *key;
    json_t *value;
    json_object_foreach (body, key, value) {
        if (n == KEYS_MAX)
            return;
        for (const char *c = key; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == '"' || *c == '\\')
                return;
        keys[n++] = key;
    }
    qsort(keys, n, sizeof keys[0], compare_keys);
    struct digest d;
    digest_begin(&d);
    for (size_t i = 0; i < n; i++) {
        value = json_object_get(body, keys[i]);
        if (json_is_string(value)) {
            digest_string(&d, keys[i], json_string_value(value));
        } else {
            char *text = digest_canonical(value);
            FUZZ_CHECK(text != NULL);
            digest_json(&d, keys[i], text);
            free(text);
        }
    }
    char digest[33], want[33];
    unsigned char hash[16];
    FUZZ_CHECK(digest_end(&d, digest));
    crypto_generichash(hash, sizeof hash, (const unsigned char *)canonical, strlen(canonical), NULL,
                       0);
    sodium_bin2hex(want, sizeof want, hash, sizeof hash);
    FUZZ_CHECK(strcmp(digest, want) == 0);
}

static void check_body(const char *content_type, const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1); /* request bodies arrive NUL-terminated */
    FUZZ_CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    struct request req = {
        .method = HTTP_PUT,
        .content_type = content_type[0] != '\0' ? content_type : NULL,
        .body = size > 0 ? text : NULL,
        .body_len = size,
    };
    struct reply out = {0};
    json_t *body = validate_body(&req, &out);
    if (body == NULL) {
        check_error_reply(&out);
        free(text);
        return;
    }
    for (size_t i = 0; i < sizeof string_fields / sizeof string_fields[0]; i++) {
        const char *value = NULL;
        if (!validate_optional_string(body, string_fields[i], &value, &out))
            check_error_reply(&out);
        else if (value != NULL)
            FUZZ_CHECK(value[0] != '\0');
    }
    for (size_t i = 0; i < sizeof object_fields / sizeof object_fields[0]; i++) {
        json_t *value = NULL;
        if (!validate_optional_object(body, object_fields[i], &value, &out))
            check_error_reply(&out);
        else if (value != NULL)
            FUZZ_CHECK(json_is_object(value));
    }
    char *canonical = digest_canonical(body);
    FUZZ_CHECK(canonical != NULL);
    json_t *back = json_loads(canonical, JSON_REJECT_DUPLICATES, NULL);
    FUZZ_CHECK(back != NULL && json_equal(back, body));
    check_digest(body, canonical);
    json_decref(back);
    free(canonical);
    json_decref(body);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *request_line = next_line(&data, &size);
    char *api_version = next_line(&data, &size);
    char *if_none_match = next_line(&data, &size);
    char *content_type = next_line(&data, &size);
    const char *path = NULL;
    enum http_method method = method_named(request_line, &path);
    check_route(path, method);
    check_headers(api_version, if_none_match);
    check_body(content_type, data, size);
    free(request_line);
    free(api_version);
    free(if_none_match);
    free(content_type);
    return 0;
}
