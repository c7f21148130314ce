/* The platforms file: strict parsing (every error names its place), credentials hashed as soon
 * as they are read, per-platform catalog bodies, and the reference-counted set. */
#include "platforms.h"

#include <jansson.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "platform_files.h"

/* Bearer tokens: long enough to be unguessable when made as the docs say, short enough for a
 * header. */
#define TOKEN_MIN 16
#define TOKEN_MAX 4096

static void set_free(struct osbq_platforms *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->count; i++) {
        free(set->list[i].sees);
        free(set->list[i].catalog_body);
        client_cert_free(set->list[i].client_cert);
    }
    if (set->list != NULL)
        sodium_memzero(set->list, set->count * sizeof set->list[0]);
    free(set->list);
    sodium_memzero(set->token_key, sizeof set->token_key);
    free(set);
}

void osbq_platforms_release(struct osbq_platforms *set)
{
    if (set != NULL && atomic_fetch_sub(&set->refs, 1) == 1)
        set_free(set);
}

/* A new set with room for n platforms and a fresh token key. */
static struct osbq_platforms *set_new(const struct osbq_catalog *catalog, size_t n,
                                      struct osbq_error *err)
{
    if (sodium_init() < 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "libsodium cannot start");
        return NULL;
    }
    struct osbq_platforms *set = calloc(1, sizeof *set);
    if (set != NULL)
        set->list = calloc(n, sizeof set->list[0]);
    if (set == NULL || set->list == NULL) {
        free(set);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    atomic_init(&set->refs, 1);
    set->catalog = catalog;
    randombytes_buf(set->token_key, sizeof set->token_key);
    return set;
}

static int add_default(struct osbq_platforms *set, const struct osbq_platform_basic *dflt,
                       struct osbq_error *err)
{
    struct osbq_platform *p = &set->list[set->count];
    memcpy(p->name, OSBQ_PLATFORM_DEFAULT, sizeof OSBQ_PLATFORM_DEFAULT);
    p->basic = true;
    p->index = set->count;
    p->weight = 1;
    if (osbq_auth_init(&p->basic_auth, dflt->username, dflt->password) < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "libsodium cannot start");
    set->count++;
    return 0;
}

int osbq_platforms_default(const struct osbq_catalog *catalog,
                           const struct osbq_platform_basic *dflt, struct osbq_platforms **out,
                           struct osbq_error *err)
{
    struct osbq_platforms *set = set_new(catalog, 1, err);
    if (set == NULL)
        return -1;
    if (add_default(set, dflt, err) < 0) {
        set_free(set);
        return -1;
    }
    *out = set;
    return 0;
}

static bool valid_name(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > OSBQ_PLATFORM_NAME_MAX)
        return false;
    return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == len;
}

/* "/seg[/seg...]", segments of unreserved characters, none "v2" (the API starts there). */
static const char *prefix_problem(const char *prefix)
{
    size_t len = strlen(prefix);
    if (len > OSBQ_PLATFORM_PREFIX_MAX)
        return "longer than 128 characters";
    if (prefix[0] != '/')
        return "must start with '/'";
    for (const char *seg = prefix; *seg == '/';) {
        seg++;
        size_t n = strcspn(seg, "/");
        if (n == 0)
            return "has an empty segment (or ends with '/')";
        if (strspn(seg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~") < n)
            return "segments take only letters, digits and -._~";
        if (n == 2 && memcmp(seg, "v2", 2) == 0)
            return "cannot contain a \"v2\" segment";
        seg += n;
    }
    /* /healthz, /readyz and /metrics stay where they are; a prefix equal to one would not
     * clash (the API is below it) but would confuse anyone reading the URLs. */
    if (strcmp(prefix, "/healthz") == 0 || strcmp(prefix, "/readyz") == 0 ||
        strcmp(prefix, "/metrics") == 0)
        return "names an endpoint of the gateway";
    return NULL;
}

/* RFC 6750 token68: letters, digits, -._~+/ then optional '='. */
static bool valid_token(const char *token, size_t len)
{
    if (len < TOKEN_MIN || len > TOKEN_MAX)
        return false;
    size_t body =
        strspn(token, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~+/");
    if (body == 0)
        return false;
    while (body < len && token[body] == '=')
        body++;
    return body == len;
}

static void token_digest(const unsigned char key[32], const char *token, size_t len,
                         unsigned char digest[32])
{
    crypto_generichash(digest, 32, (const unsigned char *)token, len, key, 32);
}

/* Reads a tokens file: one token a line; blank lines and lines starting with '#' are skipped. */
static int load_tokens(struct osbq_platforms *set, struct osbq_platform *p, const char *path,
                       const char *place, struct osbq_error *err)
{
    size_t len = 0;
    char *text = platform_file_read(path, &len, err);
    if (text == NULL)
        return osbq_error_prefix(err, "%s.tokens_file", place);
    int rc = 0;
    unsigned line_no = 0;
    for (char *line = text, *next; rc == 0 && line < text + len; line = next) {
        line_no++;
        size_t n = strcspn(line, "\n");
        next = line + n + (line[n] == '\n');
        if (n > 0 && line[n - 1] == '\r')
            n--;
        if (n == 0 || line[0] == '#')
            continue;
        line[n] = '\0';
        if (!valid_token(line, n))
            rc = osbq_error_set(err, OSBQ_ERR_INVALID,
                                "%s.tokens_file: line %u: a token is 16 to 4096 characters of "
                                "letters, digits and -._~+/ (then '=' padding)",
                                place, line_no);
        else if (p->token_count == OSBQ_PLATFORM_TOKENS_MAX)
            rc = osbq_error_set(err, OSBQ_ERR_INVALID, "%s.tokens_file: more than %d tokens", place,
                                OSBQ_PLATFORM_TOKENS_MAX);
        else
            token_digest(set->token_key, line, n, p->token_digests[p->token_count++]);
    }
    platform_file_wipe_free(text, len);
    if (rc == 0 && p->token_count == 0)
        rc =
            osbq_error_set(err, OSBQ_ERR_INVALID, "%s.tokens_file: %s holds no token", place, path);
    return rc;
}

/* The member names an object may have; false with err naming the first other one. */
static bool only_members(json_t *obj, const char *const *allowed, const char *place,
                         struct osbq_error *err)
{
    const char *key;
    json_t *value;
    json_object_foreach (obj, key, value) {
        bool known = false;
        for (const char *const *a = allowed; *a != NULL && !known; a++)
            known = strcmp(*a, key) == 0;
        if (!known) {
            bool secret = strcmp(key, "password") == 0 || strcmp(key, "tokens") == 0;
            osbq_error_set(err, OSBQ_ERR_INVALID, "%s.%s: %s", place, key,
                           secret ? "secrets are given only by file (password_file, tokens_file)"
                                  : "unknown member");
            return false;
        }
    }
    return true;
}

static int parse_basic(json_t *basic, const char *base_dir, struct osbq_platform *p,
                       const char *place, struct osbq_error *err)
{
    static const char *const members[] = {"username", "password_file", NULL};
    if (!json_is_object(basic))
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s: must be an object", place);
    if (!only_members(basic, members, place, err))
        return -1;
    const char *username = json_string_value(json_object_get(basic, "username"));
    const char *file = json_string_value(json_object_get(basic, "password_file"));
    if (username == NULL || username[0] == '\0' || strchr(username, ':') != NULL)
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "%s.username: a non-empty string without ':' is required", place);
    if (file == NULL || file[0] == '\0')
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.password_file: a path is required", place);
    char path[PATH_MAX];
    if (platform_file_path(base_dir, file, path, sizeof path) < 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.password_file: path too long", place);
    size_t len = 0;
    char *password = platform_file_read(path, &len, err);
    if (password == NULL)
        return osbq_error_prefix(err, "%s.password_file", place);
    /* As OSBQ_BROKER_PASSWORD_FILE: one trailing line end is not part of the password. */
    size_t n = len;
    if (n > 0 && password[n - 1] == '\n')
        password[--n] = '\0';
    if (n > 0 && password[n - 1] == '\r')
        password[--n] = '\0';
    int rc = 0;
    if (n == 0 || strlen(password) != n)
        rc = osbq_error_set(err, OSBQ_ERR_INVALID, "%s.password_file: %s: empty, or holds a NUL",
                            place, path);
    else if (osbq_auth_init(&p->basic_auth, username, password) < 0)
        rc = osbq_error_set(err, OSBQ_ERR_INTERNAL, "libsodium cannot start");
    else
        p->basic = true;
    platform_file_wipe_free(password, len);
    return rc;
}

static int parse_bearer(struct osbq_platforms *set, json_t *bearer, const char *base_dir,
                        struct osbq_platform *p, const char *place, struct osbq_error *err)
{
    static const char *const members[] = {"tokens_file", NULL};
    if (!json_is_object(bearer))
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s: must be an object", place);
    if (!only_members(bearer, members, place, err))
        return -1;
    const char *file = json_string_value(json_object_get(bearer, "tokens_file"));
    if (file == NULL || file[0] == '\0')
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.tokens_file: a path is required", place);
    char path[PATH_MAX];
    if (platform_file_path(base_dir, file, path, sizeof path) < 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.tokens_file: path too long", place);
    return load_tokens(set, p, path, place, err);
}

static int parse_services(const struct osbq_catalog *catalog, json_t *services,
                          struct osbq_platform *p, const char *place, struct osbq_error *err)
{
    if (!json_is_array(services) || json_array_size(services) == 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s: must be a non-empty array of service ids",
                              place);
    size_t count = osbq_catalog_service_count(catalog);
    p->sees = calloc(count ? count : 1, sizeof p->sees[0]);
    if (p->sees == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    size_t i;
    json_t *id;
    json_array_foreach (services, i, id) {
        const char *text = json_string_value(id);
        if (text == NULL)
            return osbq_error_set(err, OSBQ_ERR_INVALID, "%s[%zu]: must be a service id string",
                                  place, i);
        size_t k = 0;
        while (k < count && strcmp(osbq_catalog_service_at(catalog, k)->id, text) != 0)
            k++;
        if (k == count)
            return osbq_error_set(err, OSBQ_ERR_INVALID,
                                  "%s[%zu]: \"%s\" is not a service id of the catalog", place, i,
                                  text);
        if (p->sees[k])
            return osbq_error_set(err, OSBQ_ERR_INVALID, "%s[%zu]: \"%s\" is listed twice", place,
                                  i, text);
        p->sees[k] = true;
    }
    return osbq_catalog_body_subset(catalog, p->sees, &p->catalog_body, &p->catalog_len, p->etag,
                                    err);
}

static int parse_name_and_prefix(json_t *entry, struct osbq_platform *p, const char *place,
                                 struct osbq_error *err)
{
    const char *name = json_string_value(json_object_get(entry, "name"));
    if (name == NULL || !valid_name(name))
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "%s.name: 1 to 64 letters, digits or -_. are required", place);
    memcpy(p->name, name, strlen(name) + 1);
    json_t *prefix = json_object_get(entry, "prefix");
    if (prefix != NULL) {
        const char *text = json_string_value(prefix);
        const char *problem = text ? prefix_problem(text) : "must be a string";
        if (text != NULL && text[0] == '\0')
            problem = NULL; /* "" is the same as no prefix */
        if (problem != NULL)
            return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.prefix: %s", place, problem);
        memcpy(p->prefix, text, strlen(text) + 1);
    }
    return 0;
}

/* Neither p's name nor its prefix may be another platform's of set (the default platform, when
 * there is one, is set's first). */
static int check_not_taken(const struct osbq_platforms *set, const struct osbq_platform *p,
                           const char *place, struct osbq_error *err)
{
    for (size_t k = 0; k < set->count; k++) {
        const struct osbq_platform *other = &set->list[k];
        /* The default platform is no entry of the file: say where it comes from. */
        char other_place[64];
        if (k == 0 && set->env_default)
            (void)snprintf(other_place, sizeof other_place, "OSBQ_BROKER_USERNAME's platform");
        else
            (void)snprintf(other_place, sizeof other_place, "platforms[%zu]",
                           k - (set->env_default ? 1 : 0));
        if (strcmp(other->name, p->name) == 0)
            return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.name: \"%s\" is taken by %s", place,
                                  p->name, other_place);
        if (strcmp(other->prefix, p->prefix) == 0)
            return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.prefix: \"%s\" is taken by %s", place,
                                  p->prefix, other_place);
    }
    return 0;
}

static int parse_weight(json_t *entry, struct osbq_platform *p, const char *place,
                        struct osbq_error *err)
{
    json_t *weight = json_object_get(entry, "weight");
    p->weight = 1;
    if (weight == NULL)
        return 0;
    if (!json_is_integer(weight) || json_integer_value(weight) < 1 ||
        json_integer_value(weight) > OSBQ_PLATFORM_WEIGHT_MAX)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s.weight: an integer from 1 to %d", place,
                              OSBQ_PLATFORM_WEIGHT_MAX);
    p->weight = (unsigned)json_integer_value(weight);
    return 0;
}

/* A token accepted by two platforms would be a copy-paste mistake, and a leaked one would open
 * both; one listed twice is a mistake too. */
static int check_tokens_unique(const struct osbq_platforms *set, const struct osbq_platform *p,
                               const char *place, struct osbq_error *err)
{
    for (size_t t = 0; t < p->token_count; t++)
        for (size_t k = 0; k < set->count; k++)
            for (size_t u = 0; u < set->list[k].token_count; u++)
                if (sodium_memcmp(p->token_digests[t], set->list[k].token_digests[u], 32) == 0)
                    return osbq_error_set(err, OSBQ_ERR_INVALID,
                                          "%s.bearer.tokens_file: a token is also one of "
                                          "platform \"%s\"",
                                          place, set->list[k].name);
    for (size_t t = 0; t < p->token_count; t++)
        for (size_t u = t + 1; u < p->token_count; u++)
            if (sodium_memcmp(p->token_digests[t], p->token_digests[u], 32) == 0)
                return osbq_error_set(err, OSBQ_ERR_INVALID,
                                      "%s.bearer.tokens_file: a token is listed twice", place);
    return 0;
}

/* basic, bearer, a client certificate, or several: at least one. */
static int parse_credentials(struct osbq_platforms *set, json_t *entry, const char *base_dir,
                             struct osbq_platform *p, const char *place, struct osbq_error *err)
{
    json_t *basic = json_object_get(entry, "basic");
    json_t *bearer = json_object_get(entry, "bearer");
    json_t *cert = json_object_get(entry, "client_certificate");
    if (basic == NULL && bearer == NULL && cert == NULL)
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "%s: credentials are required (\"basic\", \"bearer\", "
                              "\"client_certificate\")",
                              place);
    char sub[96]; /* place (48) and the longest member name */
    (void)snprintf(sub, sizeof sub, "%s.client_certificate", place);
    if (cert != NULL && (p->client_cert = client_cert_parse(cert, base_dir, sub, err)) == NULL)
        return -1;
    (void)snprintf(sub, sizeof sub, "%s.basic", place);
    if (basic != NULL && parse_basic(basic, base_dir, p, sub, err) < 0)
        return -1;
    (void)snprintf(sub, sizeof sub, "%s.bearer", place);
    if (bearer != NULL && parse_bearer(set, bearer, base_dir, p, sub, err) < 0)
        return -1;
    return check_tokens_unique(set, p, place, err);
}

static int parse_platform(struct osbq_platforms *set, json_t *entry, size_t i, const char *base_dir,
                          struct osbq_error *err)
{
    static const char *const members[] = {
        "name", "prefix", "basic", "bearer", "client_certificate", "services", "weight", NULL};
    char place[48];
    (void)snprintf(place, sizeof place, "platforms[%zu]", i);
    if (!json_is_object(entry))
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s: must be an object", place);
    if (!only_members(entry, members, place, err))
        return -1;
    struct osbq_platform *p = &set->list[set->count];
    p->index = set->count;
    char sub[64];
    (void)snprintf(sub, sizeof sub, "%s.services", place);
    json_t *services = json_object_get(entry, "services");
    if (parse_name_and_prefix(entry, p, place, err) < 0 ||
        check_not_taken(set, p, place, err) < 0 || parse_weight(entry, p, place, err) < 0 ||
        parse_credentials(set, entry, base_dir, p, place, err) < 0 ||
        (services != NULL && parse_services(set->catalog, services, p, sub, err) < 0)) {
        /* Not counted, so set_free would not see it. */
        client_cert_free(p->client_cert);
        p->client_cert = NULL;
        return -1;
    }
    set->count++;
    return 0;
}

int osbq_platforms_load_text(const char *text, const char *base_dir,
                             const struct osbq_catalog *catalog,
                             const struct osbq_platform_basic *dflt, struct osbq_platforms **out,
                             struct osbq_error *err)
{
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "line %d, column %d: %s", jerr.line,
                              jerr.column, jerr.text);
    static const char *const members[] = {"platforms", NULL};
    json_t *list = json_object_get(root, "platforms");
    int rc = -1;
    struct osbq_platforms *set = NULL;
    if (!json_is_object(root)) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "the file must hold an object {\"platforms\": [...]}");
        goto out;
    }
    if (!only_members(root, members, "the file", err))
        goto out;
    bool with_default = dflt != NULL && dflt->username != NULL && dflt->password != NULL;
    size_t n = json_array_size(list);
    if (!json_is_array(list) || (n == 0 && !with_default) || n > OSBQ_PLATFORMS_MAX) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "platforms: must be an array of 1 to %d platforms",
                       OSBQ_PLATFORMS_MAX);
        goto out;
    }
    set = set_new(catalog, n + 1, err);
    if (set == NULL)
        goto out;
    if (with_default && add_default(set, dflt, err) < 0)
        goto out;
    set->env_default = with_default;
    for (size_t i = 0; i < n; i++) {
        if (parse_platform(set, json_array_get(list, i), i, base_dir, err) < 0) {
            /* The entry that failed is not counted yet: free what it got. */
            free(set->list[set->count].sees);
            free(set->list[set->count].catalog_body);
            memset(&set->list[set->count], 0, sizeof set->list[0]);
            goto out;
        }
    }
    *out = set;
    set = NULL;
    rc = 0;
out:
    if (set != NULL)
        set_free(set);
    json_decref(root);
    return rc;
}

int osbq_platforms_load_file(const char *path, const struct osbq_catalog *catalog,
                             const struct osbq_platform_basic *dflt, struct osbq_platforms **out,
                             struct osbq_error *err)
{
    size_t len = 0;
    char *text = platform_file_read(path, &len, err);
    if (text == NULL)
        return -1;
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        (void)snprintf(dir, sizeof dir, ".");
    else
        (void)snprintf(dir, sizeof dir, "%.*s", (int)(slash != path ? slash - path : 1), path);
    int rc = osbq_platforms_load_text(text, dir, catalog, dflt, out, err);
    free(text);
    return rc;
}

bool osbq_platforms_route(const struct osbq_platforms *set, const char *path,
                          const struct osbq_platform **platform, const char **rest)
{
    /* The first "v2" segment starts the API; what is before it is the prefix. */
    const char *v2 = NULL;
    for (const char *p = path; p != NULL && *p == '/'; p = strchr(p + 1, '/')) {
        if (strncmp(p, "/v2", 3) == 0 && (p[3] == '/' || p[3] == '\0')) {
            v2 = p;
            break;
        }
    }
    if (v2 == NULL)
        return false;
    size_t prefix_len = (size_t)(v2 - path);
    *platform = NULL;
    *rest = v2;
    for (size_t i = 0; i < set->count; i++) {
        const struct osbq_platform *p = &set->list[i];
        if (strlen(p->prefix) == prefix_len && memcmp(p->prefix, path, prefix_len) == 0) {
            *platform = p;
            break;
        }
    }
    return true;
}

const struct osbq_platform *osbq_platforms_find(const struct osbq_platforms *set, const char *name)
{
    for (size_t i = 0; i < set->count; i++)
        if (strcmp(set->list[i].name, name) == 0)
            return &set->list[i];
    return NULL;
}

/* The credentials after "<scheme> " when authorization uses scheme (case-insensitive). */
static const char *credentials_of(const char *authorization, const char *scheme)
{
    size_t n = strlen(scheme);
    if (strncasecmp(authorization, scheme, n) != 0 || authorization[n] != ' ')
        return NULL;
    const char *value = authorization + n;
    while (*value == ' ')
        value++;
    return value;
}

static bool basic_matches(const struct osbq_platform *platform, const char *encoded)
{
    size_t len = strlen(encoded);
    while (len > 0 && encoded[len - 1] == ' ')
        len--;
    char decoded[1024];
    size_t decoded_len = 0;
    if (len == 0 ||
        sodium_base642bin((unsigned char *)decoded, sizeof decoded - 1, encoded, len, NULL,
                          &decoded_len, NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
        return false;
    decoded[decoded_len] = '\0';
    char *colon = memchr(decoded, ':', decoded_len);
    /* A NUL inside would end the user name or password early. */
    bool ok = colon != NULL && strlen(decoded) == decoded_len;
    if (ok) {
        *colon = '\0';
        ok = osbq_auth_check(&platform->basic_auth, decoded, colon + 1);
    }
    sodium_memzero(decoded, sizeof decoded);
    return ok;
}

static bool bearer_matches(const struct osbq_platforms *set, const struct osbq_platform *platform,
                           const char *token)
{
    size_t len = strlen(token);
    while (len > 0 && token[len - 1] == ' ')
        len--;
    if (len == 0 || len > TOKEN_MAX)
        return false;
    unsigned char digest[32];
    token_digest(set->token_key, token, len, digest);
    /* Every token is compared, so the time does not tell which one (or whether one) matched. */
    int matched = 0;
    for (size_t i = 0; i < platform->token_count; i++)
        matched |= sodium_memcmp(digest, platform->token_digests[i], sizeof digest) == 0;
    sodium_memzero(digest, sizeof digest);
    return matched != 0;
}

bool osbq_platform_authenticate(const struct osbq_platforms *set,
                                const struct osbq_platform *platform, const char *authorization)
{
    if (platform == NULL || authorization == NULL)
        return false;
    const char *value;
    if (platform->basic && (value = credentials_of(authorization, "Basic")) != NULL)
        return basic_matches(platform, value);
    if (platform->token_count > 0 && (value = credentials_of(authorization, "Bearer")) != NULL)
        return bearer_matches(set, platform, value);
    return false;
}

bool osbq_platform_sees(const struct osbq_platform *platform, const struct osbq_catalog *catalog,
                        const char *service_id)
{
    if (platform == NULL || platform->sees == NULL)
        return true;
    size_t count = osbq_catalog_service_count(catalog);
    for (size_t k = 0; k < count; k++)
        if (strcmp(osbq_catalog_service_at(catalog, k)->id, service_id) == 0)
            return platform->sees[k];
    return false;
}

const char *osbq_platform_catalog(const struct osbq_platform *platform,
                                  const struct osbq_catalog *catalog, size_t *len,
                                  const char **etag)
{
    if (platform == NULL || platform->catalog_body == NULL) {
        *etag = osbq_catalog_etag(catalog);
        return osbq_catalog_body(catalog, len);
    }
    *etag = platform->etag;
    *len = platform->catalog_len;
    return platform->catalog_body;
}

int osbq_platforms_holder_init(struct osbq_platforms_holder *holder, struct osbq_platforms *set)
{
    if (pthread_mutex_init(&holder->lock, NULL) != 0)
        return -1;
    holder->current = set;
    return 0;
}

struct osbq_platforms *osbq_platforms_acquire(struct osbq_platforms_holder *holder)
{
    pthread_mutex_lock(&holder->lock);
    struct osbq_platforms *set = holder->current;
    atomic_fetch_add(&set->refs, 1);
    pthread_mutex_unlock(&holder->lock);
    return set;
}

void osbq_platforms_swap(struct osbq_platforms_holder *holder, struct osbq_platforms *set)
{
    pthread_mutex_lock(&holder->lock);
    struct osbq_platforms *old = holder->current;
    holder->current = set;
    pthread_mutex_unlock(&holder->lock);
    osbq_platforms_release(old);
}

void osbq_platforms_holder_clear(struct osbq_platforms_holder *holder)
{
    osbq_platforms_release(holder->current);
    holder->current = NULL;
    pthread_mutex_destroy(&holder->lock);
}
