/* Unit tests of X-Broker-API-Originating-Identity decoded for the audit trail
 * (gateway/originating_identity.c): a platform and a base64 JSON object become "<platform>
 * <compact JSON>"; anything else is kept as sent; a long one is cut. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "originating_identity.h"
#include "test_main.h"

static void assert_decoded(const char *header, const char *expected)
{
    char *got = originating_identity_decode(header);
    assert_non_null(got);
    assert_string_equal(got, expected);
    free(got);
}

static void test_cloud_foundry_and_kubernetes(void **state)
{
    (void)state;
    /* {"user_id": "683ea748-3092-4ff4-b656-39cacc4d5a9e"}, the spec's example */
    assert_decoded("cloudfoundry eyAidXNlcl9pZCI6ICI2ODNlYTc0OC0zMDkyLTRmZjQtYjY1Ni0zOWNhY2M0ZDVh"
                   "OWUiIH0=",
                   "cloudfoundry {\"user_id\":\"683ea748-3092-4ff4-b656-39cacc4d5a9e\"}");
    /* {"username": "duke", "uid": "c2dde242-5ce4-11e7-988c-000c2946f14f", "groups": ["admin",
     * "dev"], "extra": {"mydata": ["data1", "data3"]}}, the spec's Kubernetes example */
    assert_decoded(
        "kubernetes eyAidXNlcm5hbWUiOiAiZHVrZSIsICJ1aWQiOiAiYzJkZGUyNDItNWNlNC0xMWU3"
        "LTk4OGMtMDAwYzI5NDZmMTRmIiwgImdyb3VwcyI6IFsiYWRtaW4iLCAiZGV2Il0sICJleHRyYSI6IH"
        "sgIm15ZGF0YSI6IFsiZGF0YTEiLCAiZGF0YTMiXSB9IH0=",
        "kubernetes {\"extra\":{\"mydata\":[\"data1\",\"data3\"]},\"groups\":[\"admin\","
        "\"dev\"],\"uid\":\"c2dde242-5ce4-11e7-988c-000c2946f14f\",\"username\":\"duke\"}");
}

static void test_what_does_not_decode_is_kept(void **state)
{
    (void)state;
    assert_null(originating_identity_decode(NULL));
    assert_null(originating_identity_decode(""));
    assert_decoded("cloudfoundry", "cloudfoundry");
    assert_decoded("cloudfoundry not-base64!", "cloudfoundry not-base64!");
    /* "[1]" is JSON but not an object */
    assert_decoded("cloudfoundry WzFd", "cloudfoundry WzFd");
    assert_decoded(" eyJhIjoxfQ==", " eyJhIjoxfQ==");
}

static void test_a_long_one_is_cut(void **state)
{
    (void)state;
    char header[4000];
    memset(header, 'x', sizeof header - 1);
    header[sizeof header - 1] = '\0';
    char *got = originating_identity_decode(header);
    assert_non_null(got);
    assert_int_equal(strlen(got), ORIGINATING_IDENTITY_MAX - 1);
    free(got);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_cloud_foundry_and_kubernetes),
               cmocka_unit_test(test_what_does_not_decode_is_kept),
               cmocka_unit_test(test_a_long_one_is_cut))
