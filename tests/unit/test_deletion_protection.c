/* Unit tests of the deletion guard's protection flag (gateway/deletion_protection.c): a
 * provision's from its parameters or context; an update's from what it sends, else what is in
 * force; only a JSON true protects. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include "deletion_protection.h"
#include "json_text.h"
#include "test_main.h"

static void test_provision(void **state)
{
    (void)state;
    json_t *on = json_from_text("{\"osbq_deletion_protection\": true}");
    json_t *off = json_from_text("{\"osbq_deletion_protection\": false}");
    json_t *text = json_from_text("{\"osbq_deletion_protection\": \"true\"}");
    json_t *other = json_from_text("{\"size\": 1}");
    assert_int_equal(deletion_protection_of(NULL, NULL), OSBQ_DELETION_PROTECTION_OFF);
    assert_int_equal(deletion_protection_of(on, NULL), OSBQ_DELETION_PROTECTION_ON);
    assert_int_equal(deletion_protection_of(NULL, on), OSBQ_DELETION_PROTECTION_ON);
    assert_int_equal(deletion_protection_of(other, on), OSBQ_DELETION_PROTECTION_ON);
    assert_int_equal(deletion_protection_of(off, other), OSBQ_DELETION_PROTECTION_OFF);
    /* Only a JSON true: a string is no flag. */
    assert_int_equal(deletion_protection_of(text, NULL), OSBQ_DELETION_PROTECTION_OFF);
    json_decref(on);
    json_decref(off);
    json_decref(text);
    json_decref(other);
}

static void test_update(void **state)
{
    (void)state;
    const char *protected_text = "{\"osbq_deletion_protection\":true,\"size\":1}";
    json_t *off = json_from_text("{\"osbq_deletion_protection\": false}");
    json_t *other = json_from_text("{\"size\": 2}");
    json_t *on = json_from_text("{\"osbq_deletion_protection\": true}");
    const struct {
        const json_t *parameters, *context;                 /* the update sends */
        const char *parameters_in_force, *context_in_force; /* stored */
        enum osbq_deletion_protection want;
    } cases[] = {
        /* Sends nothing: what is in force stays. */
        {NULL, NULL, protected_text, NULL, OSBQ_DELETION_PROTECTION_ON},
        {NULL, NULL, NULL, protected_text, OSBQ_DELETION_PROTECTION_ON},
        {NULL, NULL, NULL, NULL, OSBQ_DELETION_PROTECTION_OFF},
        /* Its parameters replace those in force: cleared, explicitly or by leaving the flag out. */
        {off, NULL, protected_text, NULL, OSBQ_DELETION_PROTECTION_OFF},
        {other, NULL, protected_text, NULL, OSBQ_DELETION_PROTECTION_OFF},
        /* The context in force still protects when the update sends only parameters. */
        {other, NULL, NULL, protected_text, OSBQ_DELETION_PROTECTION_ON},
        {NULL, on, NULL, NULL, OSBQ_DELETION_PROTECTION_ON},
        /* Stored text that does not parse protects nothing. */
        {NULL, NULL, "{not json", NULL, OSBQ_DELETION_PROTECTION_OFF},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum osbq_deletion_protection got = deletion_protection_after_update(
            cases[i].parameters, cases[i].context, cases[i].parameters_in_force,
            cases[i].context_in_force);
        if (got != cases[i].want)
            fail_msg("case %zu: %d, want %d", i, (int)got, (int)cases[i].want);
    }
    json_decref(off);
    json_decref(other);
    json_decref(on);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_provision), cmocka_unit_test(test_update))
