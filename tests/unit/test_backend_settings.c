/* Unit tests of common/backend_settings.c against the worker's backends[]: the catalog accepts
 * exactly the backends a worker can run, in the same order, and every backend-specific setting
 * belongs to one of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "backend.h"
#include "backend_settings.h"
#include "test_main.h"

static void test_names_match_the_workers_backends(void **state)
{
    (void)state;
    size_t i = 0;
    for (; osbq_backend_names[i] != NULL && backends[i] != NULL; i++)
        assert_string_equal(osbq_backend_names[i], backends[i]->name);
    /* Both lists end together: a backend added on one side only stops here. */
    assert_null(osbq_backend_names[i]);
    assert_null(backends[i]);
    assert_true(i > 0);
}

static void test_every_name_finds_its_backend(void **state)
{
    (void)state;
    for (size_t i = 0; osbq_backend_names[i] != NULL; i++) {
        const struct backend *b = backend_find(osbq_backend_names[i]);
        assert_non_null(b);
        assert_string_equal(b->name, osbq_backend_names[i]);
    }
}

static bool known_backend(const char *name)
{
    for (size_t i = 0; osbq_backend_names[i] != NULL; i++)
        if (strcmp(osbq_backend_names[i], name) == 0)
            return true;
    return false;
}

static void test_settings_name_known_backends(void **state)
{
    (void)state;
    assert_true(osbq_setting_count > 0);
    for (size_t i = 0; i < osbq_setting_count; i++) {
        const struct osbq_setting *s = &osbq_settings[i];
        if (s->backend != NULL && !known_backend(s->backend))
            fail_msg("setting \"%s\" names an unknown backend \"%s\"", s->key, s->backend);
    }
}

static void test_keys_unique_per_backend(void **state)
{
    (void)state;
    /* A key shared by all backends and also listed for one, or listed twice for the same
     * backend, would leave the catalog's check to whichever comes first. */
    for (size_t i = 0; i < osbq_setting_count; i++)
        for (size_t j = i + 1; j < osbq_setting_count; j++) {
            const struct osbq_setting *a = &osbq_settings[i], *b = &osbq_settings[j];
            if (strcmp(a->key, b->key) != 0)
                continue;
            bool overlap =
                a->backend == NULL || b->backend == NULL || strcmp(a->backend, b->backend) == 0;
            if (overlap)
                fail_msg("setting \"%s\" is listed twice for the same backend", a->key);
        }
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_names_match_the_workers_backends),
               cmocka_unit_test(test_every_name_finds_its_backend),
               cmocka_unit_test(test_settings_name_known_backends),
               cmocka_unit_test(test_keys_unique_per_backend))
