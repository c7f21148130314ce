/* Unit tests of the platforms file: parsing and its errors (each names its place), credentials
 * (Basic, Bearer, both), prefixes and routing, the services a platform sees and its catalog
 * body, the default platform, and the holder's reference counting. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_text.h"
#include "platforms.h"
#include "string_cases.h"
#include "tenant.h"
#include "test_main.h"

/* Two services: "db" and "cache". */
static const char catalog_text[] =
    "{\"services\": ["
    " {\"name\": \"db\", \"id\": \"db-id\", \"description\": \"d\", \"bindable\": true,"
    "  \"plans\": [{\"id\": \"small-id\", \"name\": \"small\", \"description\": \"d\","
    "               \"osbq\": {\"backend\": \"sim\"}}]},"
    " {\"name\": \"cache\", \"id\": \"cache-id\", \"description\": \"d\", \"bindable\": true,"
    "  \"plans\": [{\"id\": \"tiny-id\", \"name\": \"tiny\", \"description\": \"d\","
    "               \"osbq\": {\"backend\": \"sim\"}}]}]}";

#define TOKEN_A "tokenAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define TOKEN_B "tokenBBBBBBBBBBBBBBBBBBBBBBBBBBB"

/* A CA certificate (self-signed, valid for a century) for the client_certificate members. */
static const char test_ca_pem[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBjzCCATWgAwIBAgIUU+fL+9g7L/H9nrfRtkNTe2GrLvEwCgYIKoZIzj0EAwIw\n"
    "HDEaMBgGA1UEAwwRb3NicS11bml0LXRlc3QtY2EwIBcNMjYxMjAyMDY0NjUyWhgP\n"
    "MjEyNjExMDgwNjQ2NTJaMBwxGjAYBgNVBAMMEW9zYnEtdW5pdC10ZXN0LWNhMFkw\n"
    "EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEUpEXmOdq/ZOIw4O3mVuwGD8RQaa2Gio6\n"
    "naGKaIyzI+zB487vLw8cK71i5RRIlVAbqApaDgHMTUWQCxs3VgGDz6NTMFEwHQYD\n"
    "VR0OBBYEFMfRlmvlHe+cj3PvxVwXPK1mpm64MB8GA1UdIwQYMBaAFMfRlmvlHe+c\n"
    "j3PvxVwXPK1mpm64MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIg\n"
    "DacfLRvj+/Dpc3aCSt0j2aViBmfWeDrWaCNxIAFsXRUCIQDYQDbFmTMyBtPfGvjC\n"
    "K2n3RJvpmBf9mu+p9rLnCSaYHg==\n"
    "-----END CERTIFICATE-----\n";

struct fixture {
    struct osbq_catalog *catalog;
    char dir[64]; /* temporary directory of the credential files */
};

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[128];
    (void)snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->catalog = catalog_from_text(catalog_text, sizeof catalog_text - 1);
    assert_non_null(f->catalog);
    (void)snprintf(f->dir, sizeof f->dir, "/tmp/osbq-platforms-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    write_file(f->dir, "cf-password", "s3cret\n");
    write_file(f->dir, "k8s-tokens", "# rotated monthly\n" TOKEN_A "\n\n" TOKEN_B "\r\n");
    write_file(f->dir, "bad-tokens", "short\n");
    write_file(f->dir, "empty-tokens", "# none\n");
    write_file(f->dir, "ca.pem", test_ca_pem);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    static const char *const names[] = {"cf-password", "k8s-tokens", "bad-tokens", "empty-tokens",
                                        "ca.pem"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[128];
        (void)snprintf(path, sizeof path, "%s/%s", f->dir, names[i]);
        (void)unlink(path);
    }
    (void)rmdir(f->dir);
    osbq_catalog_destroy(&f->catalog);
    free(f);
    return 0;
}

static const char two_platforms[] =
    "{\"platforms\": ["
    " {\"name\": \"cf\", \"prefix\": \"/cf-prod\","
    "  \"basic\": {\"username\": \"cf\", \"password_file\": \"cf-password\"}},"
    " {\"name\": \"k8s\", \"prefix\": \"/k8s/east\", \"bearer\": {\"tokens_file\": \"k8s-tokens\"},"
    "  \"services\": [\"cache-id\"]}]}";

static struct osbq_platforms *load(struct fixture *f, const char *text,
                                   const struct osbq_platform_basic *dflt)
{
    struct osbq_platforms *set = NULL;
    struct osbq_error err = {0};
    if (osbq_platforms_load_text(text, f->dir, f->catalog, dflt, &set, &err) < 0)
        fail_msg("platforms: %s", err.text);
    return set;
}

/* Loads text expecting an error that contains want. */
static void expect_error(struct fixture *f, const char *text,
                         const struct osbq_platform_basic *dflt, const char *want)
{
    struct osbq_platforms *set = NULL;
    struct osbq_error err = {0};
    assert_int_equal(osbq_platforms_load_text(text, f->dir, f->catalog, dflt, &set, &err), -1);
    assert_null(set);
    if (strstr(err.text, want) == NULL)
        fail_msg("error \"%s\" does not contain \"%s\"", err.text, want);
}

/* expect_error for each of the count values put between before and after. */
static void expect_error_each(struct fixture *f, const char *before, const char *const *values,
                              size_t count, const char *after, const char *want)
{
    for (size_t i = 0; i < count; i++) {
        char text[512];
        (void)snprintf(text, sizeof text, "%s%s%s", before, values[i], after);
        expect_error(f, text, NULL, want);
    }
}

static char *basic_header(const char *user, const char *password)
{
    char plain[256], encoded[400];
    int n = snprintf(plain, sizeof plain, "%s:%s", user, password);
    sodium_bin2base64(encoded, sizeof encoded, (const unsigned char *)plain, (size_t)n,
                      sodium_base64_VARIANT_ORIGINAL);
    size_t size = strlen(encoded) + 7;
    char *header = malloc(size);
    assert_non_null(header);
    (void)snprintf(header, size, "Basic %s", encoded);
    return header;
}

static void test_two_platforms_authenticate(void **state)
{
    struct fixture *f = *state;
    struct osbq_platforms *set = load(f, two_platforms, NULL);
    assert_int_equal(set->count, 2);
    const struct osbq_platform *cf = osbq_platforms_find(set, "cf");
    const struct osbq_platform *k8s = osbq_platforms_find(set, "k8s");
    assert_non_null(cf);
    assert_non_null(k8s);
    assert_null(osbq_platforms_find(set, "default"));

    char *good = basic_header("cf", "s3cret");
    char *wrong = basic_header("cf", "s3cret2");
    char *other_user = basic_header("cfx", "s3cret");
    assert_true(osbq_platform_authenticate(set, cf, good));
    assert_false(osbq_platform_authenticate(set, cf, wrong));
    assert_false(osbq_platform_authenticate(set, cf, other_user));
    assert_false(osbq_platform_authenticate(set, cf, NULL));
    assert_false(osbq_platform_authenticate(set, cf, "Bearer " TOKEN_A));
    /* The scheme is case-insensitive (RFC 7235). */
    good[0] = 'b';
    assert_true(osbq_platform_authenticate(set, cf, good));
    assert_false(osbq_platform_authenticate(set, cf, "Basic !!!notbase64"));
    assert_false(osbq_platform_authenticate(set, cf, "Basic "));
    /* A NUL hidden in the decoded text does not cut the user name short. */
    char nul_header[64] = "Basic ";
    const unsigned char with_nul[] = {'c', 'f', 0, 'x', ':', 's', '3', 'c', 'r', 'e', 't'};
    sodium_bin2base64(nul_header + 6, sizeof nul_header - 6, with_nul, sizeof with_nul,
                      sodium_base64_VARIANT_ORIGINAL);
    assert_false(osbq_platform_authenticate(set, cf, nul_header));

    assert_true(osbq_platform_authenticate(set, k8s, "Bearer " TOKEN_A));
    assert_true(osbq_platform_authenticate(set, k8s, "bearer  " TOKEN_B));
    assert_false(osbq_platform_authenticate(set, k8s, "Bearer " TOKEN_A "x"));
    assert_false(osbq_platform_authenticate(set, k8s, "Bearer tokenAAAAAAAAAAAAAAAAAAAAAAAAAA"));
    assert_false(osbq_platform_authenticate(set, k8s, "Bearer "));
    assert_false(osbq_platform_authenticate(set, k8s, good));
    assert_int_equal(k8s->token_count, 2);
    assert_false(k8s->basic);
    free(good);
    free(wrong);
    free(other_user);
    osbq_platforms_release(set);
}

/* A platform's weight: 1 unless the file says 1 to 100; tenant_weight finds it by the tenant
 * key's platform part, and gives 1 to a platform no longer in the set. tenant_platform_label
 * names the platform only when the set has it (or it is "default"). */
static void test_weights(void **state)
{
    struct fixture *f = *state;
    static const char weighted[] =
        "{\"platforms\": ["
        " {\"name\": \"cf\", \"prefix\": \"/cf-prod\", \"weight\": 3,"
        "  \"basic\": {\"username\": \"cf\", \"password_file\": \"cf-password\"}},"
        " {\"name\": \"k8s\", \"prefix\": \"/k8s/east\", \"bearer\": {\"tokens_file\": "
        "\"k8s-tokens\"}}]}";
    const struct osbq_platform_basic dflt = {"osbq", "pw"};
    struct osbq_platforms *set = load(f, weighted, &dflt);
    assert_int_equal(osbq_platforms_find(set, "cf")->weight, 3);
    assert_int_equal(osbq_platforms_find(set, "k8s")->weight, 1);
    assert_int_equal(osbq_platforms_find(set, "default")->weight, 1);
    assert_int_equal(tenant_weight(set, "cf/org-1/space-1"), 3);
    assert_int_equal(tenant_weight(set, "cf"), 3);
    assert_int_equal(tenant_weight(set, "k8s/ns"), 1);
    assert_int_equal(tenant_weight(set, "gone/org"), 1);
    assert_int_equal(tenant_weight(set, ""), 1);
    assert_int_equal(tenant_weight(set, NULL), 1);
    assert_int_equal(tenant_weight(NULL, "cf/org"), 1);
    /* The metrics' platform label: the set's names, "default", else "unknown" (bounded). */
    assert_string_equal(tenant_platform_label(set, "cf/org-1/space-1"), "cf");
    assert_string_equal(tenant_platform_label(set, "k8s"), "k8s");
    assert_string_equal(tenant_platform_label(set, "default/org"), "default");
    assert_string_equal(tenant_platform_label(set, "gone/org"), "unknown");
    assert_string_equal(tenant_platform_label(set, "cfx/org"), "unknown");
    assert_string_equal(tenant_platform_label(set, ""), "unknown");
    assert_string_equal(tenant_platform_label(set, NULL), "unknown");
    assert_string_equal(tenant_platform_label(NULL, "default/org"), "default");
    assert_string_equal(tenant_platform_label(NULL, "defaults/org"), "unknown");
    osbq_platforms_release(set);
    static const char *const bad[] = {"0", "101", "1.5", "\"3\"", "-2"};
    expect_error_each(f, "{\"platforms\": [{\"name\": \"cf\", \"weight\": ", bad,
                      sizeof bad / sizeof bad[0],
                      ", \"basic\": {\"username\": \"cf\", \"password_file\": \"cf-password\"}}]}",
                      "platforms[0].weight: an integer from 1 to 100");
}

static void test_routing(void **state)
{
    struct fixture *f = *state;
    const struct osbq_platform_basic dflt = {"osbq", "pw"};
    struct osbq_platforms *set = load(f, two_platforms, &dflt);
    assert_int_equal(set->count, 3);
    const struct osbq_platform *p = NULL;
    const char *rest = NULL;
    assert_true(osbq_platforms_route(set, "/cf-prod/v2/catalog", &p, &rest));
    assert_string_equal(p->name, "cf");
    assert_string_equal(rest, "/v2/catalog");
    assert_true(osbq_platforms_route(set, "/k8s/east/v2/service_instances/v2", &p, &rest));
    assert_string_equal(p->name, "k8s");
    assert_string_equal(rest, "/v2/service_instances/v2");
    assert_true(osbq_platforms_route(set, "/v2/catalog", &p, &rest));
    assert_string_equal(p->name, "default");
    assert_true(osbq_platforms_route(set, "/v2", &p, &rest));
    assert_string_equal(p->name, "default");
    /* A prefix no platform has is still the broker API, without a platform. */
    assert_true(osbq_platforms_route(set, "/k8s/v2/catalog", &p, &rest));
    assert_null(p);
    assert_true(osbq_platforms_route(set, "/cf-prod2/v2/catalog", &p, &rest));
    assert_null(p);
    /* Not the API: stay where they are. */
    assert_false(osbq_platforms_route(set, "/healthz", &p, &rest));
    assert_false(osbq_platforms_route(set, "/metrics", &p, &rest));
    assert_false(osbq_platforms_route(set, "/cf-prod/v2x/catalog", &p, &rest));
    assert_false(osbq_platforms_route(set, "/cf-prod", &p, &rest));
    osbq_platforms_release(set);

    /* Without a platform lacking a prefix, "/v2/..." has none. */
    set = load(f, two_platforms, NULL);
    /* What is the broker API at all: "/v2" and below, exactly. */
    static const struct {
        const char *path;
        bool api;
    } paths[] = {
        {"/v2/catalog", true},  {"/v2", true},
        {"/v2/", true},         {"/v2/service_instances/x", true},
        {"/v2x", false},        {"/v20/catalog", false},
        {"/healthz", false},    {"/readyz", false},
        {"/", false},           {"", false},
        {"/V2/catalog", false}, {"v2/catalog", false},
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (osbq_platforms_route(set, paths[i].path, &p, &rest) != paths[i].api)
            fail_msg("\"%s\": want %s", paths[i].path, paths[i].api ? "the API" : "not the API");
    assert_true(osbq_platforms_route(set, "/v2/catalog", &p, &rest));
    assert_null(p);
    osbq_platforms_release(set);
}

static void test_services_and_catalog(void **state)
{
    struct fixture *f = *state;
    struct osbq_platforms *set = load(f, two_platforms, NULL);
    const struct osbq_platform *cf = osbq_platforms_find(set, "cf");
    const struct osbq_platform *k8s = osbq_platforms_find(set, "k8s");
    assert_true(osbq_platform_sees(cf, f->catalog, "db-id"));
    assert_true(osbq_platform_sees(cf, f->catalog, "cache-id"));
    assert_false(osbq_platform_sees(k8s, f->catalog, "db-id"));
    assert_true(osbq_platform_sees(k8s, f->catalog, "cache-id"));
    assert_false(osbq_platform_sees(k8s, f->catalog, "nope"));

    size_t len = 0;
    const char *etag = NULL;
    const char *body = osbq_platform_catalog(cf, f->catalog, &len, &etag);
    assert_ptr_equal(body, osbq_catalog_body(f->catalog, NULL));
    assert_string_equal(etag, osbq_catalog_etag(f->catalog));
    body = osbq_platform_catalog(k8s, f->catalog, &len, &etag);
    assert_int_equal(strlen(body), len);
    assert_non_null(strstr(body, "\"cache-id\""));
    assert_null(strstr(body, "\"db-id\""));
    assert_null(strstr(body, "osbq"));
    assert_string_not_equal(etag, osbq_catalog_etag(f->catalog));
    assert_int_equal(strlen(etag), OSBQ_CATALOG_ETAG_SIZE - 1);
    osbq_platforms_release(set);
}

static void test_default_platform(void **state)
{
    struct fixture *f = *state;
    const struct osbq_platform_basic dflt = {"osbq", "pw"};
    struct osbq_platforms *set = NULL;
    struct osbq_error err = {0};
    assert_int_equal(osbq_platforms_default(f->catalog, &dflt, &set, &err), 0);
    assert_int_equal(set->count, 1);
    assert_string_equal(set->list[0].name, OSBQ_PLATFORM_DEFAULT);
    assert_string_equal(set->list[0].prefix, "");
    char *good = basic_header("osbq", "pw");
    assert_true(osbq_platform_authenticate(set, &set->list[0], good));
    free(good);
    osbq_platforms_release(set);

    /* The file's platforms plus the default one; an empty list leaves the default alone. */
    set = load(f, "{\"platforms\": []}", &dflt);
    assert_int_equal(set->count, 1);
    osbq_platforms_release(set);
}

static void test_errors(void **state)
{
    struct fixture *f = *state;
    const struct osbq_platform_basic dflt = {"osbq", "pw"};
    expect_error(f, "[]", NULL, "must hold an object");
    expect_error(f, "{\"platforms\": []}", NULL, "platforms: must be an array of 1 to 64");
    expect_error(f, "{\"platforms\": [], \"x\": 1}", NULL, "the file.x: unknown member");
    expect_error(
        f, "{\"platforms\": [{\"name\": \"a b\", \"bearer\": {\"tokens_file\": \"k8s-tokens\"}}]}",
        NULL, "platforms[0].name: 1 to 64 letters");
    expect_error(f, "{\"platforms\": [{\"name\": \"a\"}]}", NULL,
                 "platforms[0]: credentials are required");
    expect_error(f,
                 "{\"platforms\": [{\"name\": \"a\", \"basic\": {\"username\": \"u\", "
                 "\"password\": \"inline\"}}]}",
                 NULL, "platforms[0].basic.password: secrets are given only by file");
    expect_error(f, "{\"platforms\": [{\"name\": \"a\", \"bearer\": {\"tokens\": [\"x\"]}}]}", NULL,
                 "platforms[0].bearer.tokens: secrets are given only by file");
    expect_error(f,
                 "{\"platforms\": [{\"name\": \"a\", \"basic\": {\"username\": \"u\", "
                 "\"password_file\": \"missing\"}}]}",
                 NULL, "platforms[0].basic.password_file: cannot read");
    expect_error(
        f, "{\"platforms\": [{\"name\": \"a\", \"bearer\": {\"tokens_file\": \"bad-tokens\"}}]}",
        NULL, "platforms[0].bearer.tokens_file: line 1: a token is 16 to 4096");
    expect_error(
        f, "{\"platforms\": [{\"name\": \"a\", \"bearer\": {\"tokens_file\": \"empty-tokens\"}}]}",
        NULL, "holds no token");
    static const char *const bad_prefixes[] = {"cf",    "/cf/", "/a//b",   "/v2",
                                               "/x/v2", "/a b", "/metrics"};
    expect_error_each(f, "{\"platforms\": [{\"name\": \"a\", \"prefix\": \"", bad_prefixes,
                      sizeof bad_prefixes / sizeof bad_prefixes[0],
                      "\", \"bearer\": {\"tokens_file\": \"k8s-tokens\"}}]}",
                      "platforms[0].prefix: ");
    expect_error(
        f,
        "{\"platforms\": [{\"name\": \"a\", \"prefix\": \"/p\", \"bearer\": {\"tokens_file\": "
        "\"k8s-tokens\"}}, {\"name\": \"a\", \"prefix\": \"/q\", \"basic\": {\"username\": "
        "\"u\", \"password_file\": \"cf-password\"}}]}",
        NULL, "platforms[1].name: \"a\" is taken by platforms[0]");
    expect_error(
        f,
        "{\"platforms\": [{\"name\": \"a\", \"prefix\": \"/p\", \"bearer\": {\"tokens_file\": "
        "\"k8s-tokens\"}}, {\"name\": \"b\", \"prefix\": \"/p\", \"basic\": {\"username\": "
        "\"u\", \"password_file\": \"cf-password\"}}]}",
        NULL, "platforms[1].prefix: \"/p\" is taken by platforms[0]");
    /* The default platform holds the name "default" and the empty prefix. */
    expect_error(f,
                 "{\"platforms\": [{\"name\": \"b\", \"basic\": {\"username\": \"u\", "
                 "\"password_file\": \"cf-password\"}}]}",
                 &dflt, "platforms[0].prefix: \"\" is taken by OSBQ_BROKER_USERNAME's platform");
    expect_error(f,
                 "{\"platforms\": [{\"name\": \"default\", \"prefix\": \"/d\", \"basic\": "
                 "{\"username\": \"u\", \"password_file\": \"cf-password\"}}]}",
                 &dflt, "platforms[0].name: \"default\" is taken by OSBQ_BROKER_USERNAME's");
    expect_error(
        f,
        "{\"platforms\": [{\"name\": \"a\", \"prefix\": \"/p\", \"bearer\": {\"tokens_file\": "
        "\"k8s-tokens\"}}, {\"name\": \"b\", \"prefix\": \"/q\", \"bearer\": "
        "{\"tokens_file\": \"k8s-tokens\"}}]}",
        NULL, "platforms[1].bearer.tokens_file: a token is also one of platform \"a\"");
    expect_error(
        f,
        "{\"platforms\": [{\"name\": \"a\", \"bearer\": {\"tokens_file\": \"k8s-tokens\"}, "
        "\"services\": [\"db-id\", \"nope\"]}]}",
        NULL, "platforms[0].services[1]: \"nope\" is not a service id of the catalog");
    expect_error(
        f,
        "{\"platforms\": [{\"name\": \"a\", \"bearer\": {\"tokens_file\": \"k8s-tokens\"}, "
        "\"services\": [\"db-id\", \"db-id\"]}]}",
        NULL, "platforms[0].services[1]: \"db-id\" is listed twice");
    expect_error(
        f,
        "{\"platforms\": [{\"name\": \"a\", \"bearer\": {\"tokens_file\": \"k8s-tokens\"}, "
        "\"services\": []}]}",
        NULL, "platforms[0].services: must be a non-empty array");
    expect_error(f, "{\"platforms\": [{\"name\": \"a\", \"name\": \"b\"}]}", NULL, "line 1");
}

/* client_certificate (decision 0059): alone or beside a password; its CA and what it names. */
static void test_client_certificate(void **state)
{
    struct fixture *f = *state;
    struct osbq_platforms *set = load(
        f,
        "{\"platforms\": [{\"name\": \"sm\", \"prefix\": \"/sm\", \"client_certificate\":"
        " {\"ca_file\": \"ca.pem\", \"subject\": \"CN=sm,O=Example\"}},"
        " {\"name\": \"both\", \"prefix\": \"/both\","
        "  \"basic\": {\"username\": \"cf\", \"password_file\": \"cf-password\"},"
        "  \"client_certificate\": {\"ca_file\": \"ca.pem\", \"sha256\":"
        "   \"AB:cd:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:"
        "99:aa:bb:cc:dd\"}}]}",
        NULL);
    assert_non_null(set->list[0].client_cert);
    assert_false(set->list[0].basic);
    assert_int_equal(set->list[0].token_count, 0);
    assert_non_null(set->list[1].client_cert);
    assert_true(set->list[1].basic);
    /* Without a TLS session (plain HTTP) nothing is accepted. */
    char why[200];
    assert_false(client_cert_accepts(set->list[0].client_cert, NULL, why, sizeof why));
    assert_non_null(strstr(why, "needs HTTPS"));
    osbq_platforms_release(set);
    /* given: the client_certificate member; want: a part of the error. */
    static const struct string_case bad[] = {
        {"{\"subject\": \"CN=x\"}", "client_certificate.ca_file: a CA file is required"},
        {"{\"ca_file\": \"missing.pem\", \"san\": \"x\"}", "client_certificate.ca_file: "},
        {"{\"ca_file\": \"cf-password\", \"san\": \"x\"}", "cf-password: No certificate"},
        {"{\"ca_file\": \"ca.pem\"}", "name what the certificate must say"},
        {"{\"ca_file\": \"ca.pem\", \"sha256\": \"abcd\"}", "sha256: must be 64 hex digits"},
        {"{\"ca_file\": \"ca.pem\", \"san\": \"\"}", "san: must be a string"},
        {"{\"ca_file\": \"ca.pem\", \"cn\": \"x\"}", "unknown member \"cn\""},
        {"\"ca.pem\"", "client_certificate: must be an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        (void)snprintf(text, sizeof text,
                       "{\"platforms\": [{\"name\": \"a\", \"client_certificate\": %s}]}",
                       bad[i].given);
        expect_error(f, text, NULL, bad[i].want);
    }
    /* Parsed, then another member fails: nothing leaks (ASan). */
    expect_error(f,
                 "{\"platforms\": [{\"name\": \"a\", \"client_certificate\": {\"ca_file\": "
                 "\"ca.pem\", \"san\": \"a.example\"}, \"services\": [\"nope\"]}]}",
                 NULL, "platforms[0].services[0]");
}

static void test_holder_keeps_old_set_while_referenced(void **state)
{
    struct fixture *f = *state;
    struct osbq_platforms_holder holder;
    assert_int_equal(osbq_platforms_holder_init(&holder, load(f, two_platforms, NULL)), 0);
    struct osbq_platforms *in_flight = osbq_platforms_acquire(&holder);
    const struct osbq_platform *cf = osbq_platforms_find(in_flight, "cf");
    osbq_platforms_swap(&holder,
                        load(f,
                             "{\"platforms\": [{\"name\": \"new\", \"bearer\": {\"tokens_file\": "
                             "\"k8s-tokens\"}}]}",
                             NULL));
    /* The request that started before the swap still reads its set (ASan would object). */
    assert_string_equal(cf->name, "cf");
    assert_int_equal(in_flight->count, 2);
    osbq_platforms_release(in_flight);
    struct osbq_platforms *now = osbq_platforms_acquire(&holder);
    assert_non_null(osbq_platforms_find(now, "new"));
    assert_null(osbq_platforms_find(now, "cf"));
    osbq_platforms_release(now);
    osbq_platforms_holder_clear(&holder);
}

OSBQ_TEST_MAIN(setup, teardown, cmocka_unit_test(test_two_platforms_authenticate),
               cmocka_unit_test(test_routing), cmocka_unit_test(test_weights),
               cmocka_unit_test(test_services_and_catalog), cmocka_unit_test(test_default_platform),
               cmocka_unit_test(test_errors), cmocka_unit_test(test_client_certificate),
               cmocka_unit_test(test_holder_keeps_old_set_while_referenced))
