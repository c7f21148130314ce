/* Unit tests for gateway/route.c: matching paths and methods, Allow headers, the /v2 prefix. */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdbool.h>
#include <string.h>

#include "handlers.h"
#include "route.h"

#define COUNT(a)   (sizeof(a) / sizeof((a)[0]))
#define NO_BITS    0xdeadu
#define ALL_METHOD (HTTP_GET | HTTP_PUT | HTTP_PATCH | HTTP_DELETE | HTTP_POST | HTTP_OTHER)

static const char *result_name(enum route_result r)
{
    switch (r) {
    case ROUTE_FOUND:
        return "FOUND";
    case ROUTE_NOT_FOUND:
        return "NOT_FOUND";
    case ROUTE_METHOD_NOT_ALLOWED:
        return "METHOD_NOT_ALLOWED";
    }
    return "?";
}

/* One lookup: handler is checked for FOUND, allowed for METHOD_NOT_ALLOWED. */
struct match_case {
    const char *path;
    enum http_method method;
    enum route_result result;
    route_handler handler;
    unsigned allowed;
};

static const struct match_case match_cases[] = {
    {"/v2/catalog", HTTP_GET, ROUTE_FOUND, osb_catalog_get, 0},
    {"/healthz", HTTP_GET, ROUTE_FOUND, health_live, 0},
    {"/readyz", HTTP_GET, ROUTE_FOUND, health_ready, 0},
    {"/v2/catalog", HTTP_PUT, ROUTE_METHOD_NOT_ALLOWED, NULL, HTTP_GET},
    {"/v2/catalog", HTTP_PATCH, ROUTE_METHOD_NOT_ALLOWED, NULL, HTTP_GET},
    {"/v2/catalog", HTTP_DELETE, ROUTE_METHOD_NOT_ALLOWED, NULL, HTTP_GET},
    {"/v2/catalog", HTTP_POST, ROUTE_METHOD_NOT_ALLOWED, NULL, HTTP_GET},
    {"/v2/catalog", HTTP_OTHER, ROUTE_METHOD_NOT_ALLOWED, NULL, HTTP_GET},
    {"/healthz", HTTP_POST, ROUTE_METHOD_NOT_ALLOWED, NULL, HTTP_GET},
    {"/readyz", HTTP_DELETE, ROUTE_METHOD_NOT_ALLOWED, NULL, HTTP_GET},
    {"/v2/unknown", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/v2/unknown", HTTP_PUT, ROUTE_NOT_FOUND, NULL, 0},
    {"/", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/v2", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/v2/", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/v2/catalog/", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/v2//catalog", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"//v2/catalog", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/V2/catalog", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/v2/Catalog", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/v2/catalogs", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/v2/catalo", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/v2/catalog/x", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"v2/catalog", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/v2/%63atalog", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
    {"/healthz/", HTTP_GET, ROUTE_NOT_FOUND, NULL, 0},
};

static void test_route_match_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(match_cases); i++) {
        const struct match_case *tc = &match_cases[i];
        const struct route *route = NULL;
        struct route_params params;
        unsigned allowed = NO_BITS;
        memset(&params, 0, sizeof params);
        enum route_result got = route_match(tc->path, tc->method, &route, &params, &allowed);
        if (got != tc->result)
            fail_msg("case %zu \"%s\" method %u: %s, want %s", i, tc->path, (unsigned)tc->method,
                     result_name(got), result_name(tc->result));
        switch (got) {
        case ROUTE_FOUND:
            assert_non_null(route);
            if (route->handler != tc->handler)
                fail_msg("case %zu \"%s\": wrong handler", i, tc->path);
            assert_string_equal(route->pattern, tc->path);
            assert_true(route->methods & (unsigned)tc->method);
            assert_int_equal(params.count, 0);
            break;
        case ROUTE_METHOD_NOT_ALLOWED:
            if (allowed != tc->allowed)
                fail_msg("case %zu \"%s\": allowed %#x, want %#x", i, tc->path, allowed,
                         tc->allowed);
            assert_false(allowed & (unsigned)tc->method);
            assert_null(route);
            break;
        case ROUTE_NOT_FOUND:
            assert_null(route);
            assert_int_equal(allowed, NO_BITS);
            break;
        }
    }
}

static void test_path_ids_are_decoded_per_segment(void **state)
{
    (void)state;
    const struct route *route = NULL;
    struct route_params params;
    unsigned allowed = NO_BITS;
    assert_int_equal(route_match("/v2/service_instances/a%2Fb/service_bindings/c%3Ad", HTTP_PUT,
                                 &route, &params, &allowed),
                     ROUTE_FOUND);
    assert_int_equal(params.count, 2);
    assert_string_equal(params.values[0], "a/b"); /* an encoded '/' stays inside its id */
    assert_string_equal(params.values[1], "c:d");
    /* An encoded NUL must not shorten the id: it shows as a control character (refused). */
    assert_int_equal(
        route_match("/v2/service_instances/ab%00cd", HTTP_GET, &route, &params, &allowed),
        ROUTE_FOUND);
    assert_int_equal(strlen(params.values[0]), 5);
    assert_memory_equal(params.values[0],
                        "ab\x7f"
                        "cd",
                        5);
}

static void test_put_catalog_allow_header_is_get_head(void **state)
{
    (void)state;
    const struct route *route = NULL;
    struct route_params params;
    unsigned allowed = 0;
    char buf[64];
    assert_int_equal(route_match("/v2/catalog", HTTP_PUT, &route, &params, &allowed),
                     ROUTE_METHOD_NOT_ALLOWED);
    assert_true(allowed & HTTP_GET);
    route_allow_header(allowed, buf, sizeof buf);
    assert_string_equal(buf, "GET, HEAD");
}

static void test_allow_header_lists_methods_in_order(void **state)
{
    (void)state;
    static const struct {
        unsigned bits;
        const char *expected;
    } cases[] = {
        {0, ""},
        {HTTP_GET, "GET, HEAD"},
        {HTTP_PUT, "PUT"},
        {HTTP_PATCH, "PATCH"},
        {HTTP_DELETE, "DELETE"},
        {HTTP_POST, "POST"},
        {HTTP_OTHER, ""},
        {HTTP_GET | HTTP_PUT, "GET, HEAD, PUT"},
        {HTTP_PUT | HTTP_DELETE, "PUT, DELETE"},
        {HTTP_DELETE | HTTP_PUT | HTTP_PATCH | HTTP_GET, "GET, HEAD, PUT, PATCH, DELETE"},
        {ALL_METHOD, "GET, HEAD, PUT, PATCH, DELETE, POST"},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        char buf[64];
        memset(buf, 'x', sizeof buf);
        route_allow_header(cases[i].bits, buf, sizeof buf);
        if (strcmp(buf, cases[i].expected) != 0)
            fail_msg("bits %#x: \"%s\", want \"%s\"", cases[i].bits, buf, cases[i].expected);
    }
}

static void test_allow_header_never_overflows(void **state)
{
    (void)state;
    /* The guard byte after the buffer must survive every size. */
    for (size_t size = 1; size <= 40; size++) {
        char buf[48];
        memset(buf, '#', sizeof buf);
        route_allow_header(ALL_METHOD, buf, size);
        assert_int_equal(buf[size], '#');
        assert_non_null(memchr(buf, '\0', size));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_match_table),
        cmocka_unit_test(test_path_ids_are_decoded_per_segment),
        cmocka_unit_test(test_put_catalog_allow_header_is_get_head),
        cmocka_unit_test(test_allow_header_lists_methods_in_order),
        cmocka_unit_test(test_allow_header_never_overflows),
    };
    return cmocka_run_group_tests_name("route", tests, NULL, NULL);
}
