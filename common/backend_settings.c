/* The backend names and their plan settings (backend_settings.h). A new backend adds its name
 * and its keys here, and itself to backends[] in worker/backend.c. */
#include "backend_settings.h"

#define HOUR_MS 3600000
#define DAY_MS  86400000

const char *const osbq_backend_names[] = {"sim", "redis", "exec", NULL};

const struct osbq_setting osbq_settings[] = {
    {.key = "backend", .type = OSBQ_SETTING_STRING},
    {.key = "async_required", .type = OSBQ_SETTING_BOOL},
    {.key = "sync_timeout_ms", .type = OSBQ_SETTING_INT, .min = 1, .max = HOUR_MS},
    {.key = "dashboard_url_template", .type = OSBQ_SETTING_STRING},
    {.key = "bind_async_required", .type = OSBQ_SETTING_BOOL},
    {.key = "requires_app", .type = OSBQ_SETTING_BOOL},
    {.key = "halt_on_delete", .type = OSBQ_SETTING_BOOL},
    {.key = "binding_ttl_s", .type = OSBQ_SETTING_INT, .min = 60, .max = 315360000},
    {.key = "provision_deadline_s", .type = OSBQ_SETTING_INT, .min = 1, .max = 604800},
    {.key = "update_deadline_s", .type = OSBQ_SETTING_INT, .min = 1, .max = 604800},
    {.key = "deprovision_deadline_s", .type = OSBQ_SETTING_INT, .min = 1, .max = 604800},
    {.key = "bind_deadline_s", .type = OSBQ_SETTING_INT, .min = 1, .max = 604800},
    {.key = "unbind_deadline_s", .type = OSBQ_SETTING_INT, .min = 1, .max = 604800},
    {.key = "provision_ms", .type = OSBQ_SETTING_INT, .max = DAY_MS, .backend = "sim"},
    {.key = "update_ms", .type = OSBQ_SETTING_INT, .max = DAY_MS, .backend = "sim"},
    {.key = "deprovision_ms", .type = OSBQ_SETTING_INT, .max = DAY_MS, .backend = "sim"},
    {.key = "bind_ms", .type = OSBQ_SETTING_INT, .max = DAY_MS, .backend = "sim"},
    {.key = "unbind_ms", .type = OSBQ_SETTING_INT, .max = DAY_MS, .backend = "sim"},
    {.key = "poll_ms", .type = OSBQ_SETTING_INT, .max = DAY_MS, .backend = "sim"},
    {.key = "blocking", .type = OSBQ_SETTING_BOOL, .backend = "sim"},
    {.key = "cpu_ms", .type = OSBQ_SETTING_INT, .max = HOUR_MS, .backend = "sim"},
    {.key = "dashboard", .type = OSBQ_SETTING_BOOL, .backend = "sim"},
    {.key = "fail_on", .type = OSBQ_SETTING_STRING, .backend = "sim"},
    {.key = "crash_on", .type = OSBQ_SETTING_STRING, .backend = "sim"},
    {.key = "hang_on", .type = OSBQ_SETTING_STRING, .backend = "sim"},
    {.key = "target_url_env", .type = OSBQ_SETTING_STRING, .backend = "redis"},
    {.key = "acl", .type = OSBQ_SETTING_STRING, .backend = "redis"},
    {.key = "command", .type = OSBQ_SETTING_STRING_ARRAY, .backend = "exec"},
    {.key = "timeout_ms", .type = OSBQ_SETTING_INT, .min = 1, .max = 7 * DAY_MS, .backend = "exec"},
    {.key = "env", .type = OSBQ_SETTING_STRING_MAP, .backend = "exec"},
};

const size_t osbq_setting_count = sizeof osbq_settings / sizeof osbq_settings[0];
