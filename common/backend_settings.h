/* The backends this build has and the plan settings ("osbq" object of a catalog plan) each one
 * reads: one table that the catalog checks plans against (catalog.c) and that
 * tests/unit/test_backend_settings.c holds against the worker's backends[] (worker/backend.c),
 * so a backend added on one side only fails a test. */
#ifndef OSBQ_BACKEND_SETTINGS_H
#define OSBQ_BACKEND_SETTINGS_H

#include <jansson.h>
#include <stddef.h>

enum osbq_setting_type {
    OSBQ_SETTING_BOOL,
    OSBQ_SETTING_INT,
    OSBQ_SETTING_STRING,
    OSBQ_SETTING_STRING_ARRAY, /* a non-empty array of non-empty strings */
    OSBQ_SETTING_STRING_MAP,   /* an object whose values are strings */
};

/* One key a plan's "osbq" object may hold. */
struct osbq_setting {
    const char *key;             /* the key inside "osbq" */
    enum osbq_setting_type type; /* the JSON type its value must have */
    json_int_t min;              /* smallest allowed value (OSBQ_SETTING_INT only) */
    json_int_t max;              /* largest allowed value (OSBQ_SETTING_INT only) */
    const char *backend;         /* the backend that reads it, NULL when every backend does */
};

/* The names a plan's osbq.backend may take, in the worker's order; NULL-terminated. */
extern const char *const osbq_backend_names[];

/* Every setting: those of all backends (backend NULL) first, then each backend's own. */
extern const struct osbq_setting osbq_settings[];
extern const size_t osbq_setting_count;

#endif
