/* The idempotency digest streamed from a request's members (gateway/digest.c) is the
 * digest of the sorted dump of the same members as one object: the digests stored before it
 * was streamed still match. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

/* The digest as it was computed before streaming: the object, dumped sorted, hashed. */
static void reference_digest(const json_t *object, char out[33])
{
    unsigned char hash[16];
    char *text = json_dumps(object, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    assert_non_null(text);
    crypto_generichash(hash, sizeof hash, (const unsigned char *)text, strlen(text), NULL, 0);
    free(text);
    sodium_bin2hex(out, 33, hash, sizeof hash);
}

/* Strings a platform may send: plain, and everything a dump escapes or might. */
static const char *const strings[] = {
    "plain-id-123",
    "",
    "quote \" and backslash \\",
    "new\nline, tab\t, cr\r, bell\x07, unit separator\x1f",
    "DEL \x7f and slash /",
    "caf\xc3\xa9, line separator \xe2\x80\xa8, emoji \xf0\x9f\x98\x80",
    NULL,
};

static const char *const objects[] = {
    "{}",
    "{\"size\":3,\"b\":[1,2,{\"z\":null,\"a\":true}],\"a\":\"x\\\"y\"}",
    "{\"\xc3\xa9t\xc3\xa9\":\"\\u0001\",\"k\":1.5e300}",
    NULL,
};

/* A provision's members, both ways, for every string in each string member and every object
 * in each object member. */
static void test_provision_digest_matches_the_sorted_dump(void **state)
{
    (void)state;
    size_t ns = sizeof strings / sizeof strings[0], no = sizeof objects / sizeof objects[0];
    size_t checked = 0;
    for (size_t i = 0; i < ns; i++) {
        for (size_t j = 0; j < no; j++) {
            const char *s = strings[i], *o = objects[j];
            json_t *object = o ? json_loads(o, 0, NULL) : NULL;
            assert_true(o == NULL || object != NULL);
            char *canonical = digest_canonical(object);
            /* the members as the handler packs them (NULL strings and objects are null) */
            json_t *identity =
                json_pack("{s:s, s:s, s:O?, s:O?, s:s?, s:s?, s:s?}", "service_id", s ? s : "svc",
                          "plan_id", "plan", "parameters", object, "context", object,
                          "organization_guid", s, "space_guid", s, "maintenance_version", s);
            assert_non_null(identity);
            char want[33], got[33];
            reference_digest(identity, want);
            struct digest d;
            digest_begin(&d);
            digest_json(&d, "context", canonical);
            digest_string(&d, "maintenance_version", s);
            digest_string(&d, "organization_guid", s);
            digest_json(&d, "parameters", canonical);
            digest_string(&d, "plan_id", "plan");
            digest_string(&d, "service_id", s ? s : "svc");
            digest_string(&d, "space_guid", s);
            assert_true(digest_end(&d, got));
            assert_string_equal(got, want);
            json_decref(identity);
            json_decref(object);
            free(canonical);
            checked++;
        }
    }
    assert_int_equal(checked, ns * no);
}

/* A digest is of its members: one byte changed in any value changes it; an empty object is
 * "{}". */
static void test_digest_tells_members_apart(void **state)
{
    (void)state;
    char a[33], b[33], empty[33], want[33];
    struct digest d;
    digest_begin(&d);
    digest_string(&d, "plan_id", "p1");
    digest_string(&d, "service_id", "s");
    assert_true(digest_end(&d, a));
    digest_begin(&d);
    digest_string(&d, "plan_id", "p2");
    digest_string(&d, "service_id", "s");
    assert_true(digest_end(&d, b));
    assert_string_not_equal(a, b);
    digest_begin(&d);
    assert_true(digest_end(&d, empty));
    json_t *none = json_object();
    reference_digest(none, want);
    json_decref(none);
    assert_string_equal(empty, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_provision_digest_matches_the_sorted_dump),
        cmocka_unit_test(test_digest_tells_members_apart),
    };
    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
