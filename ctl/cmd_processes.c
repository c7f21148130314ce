/* gateways and workers: the status each live process publishes in Redis, one row per process. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "format.h"
#include "log.h"
#include "table.h"

int processes_list(struct ctl *ctl, const char *role, json_t **out, struct osbq_error *err)
{
    char **texts = NULL;
    size_t count = 0;
    if (osbq_store_status_list(ctl->store, role, &texts, &count, err) < 0)
        return -1;
    json_t *array = json_array();
    for (size_t i = 0; array != NULL && i < count; i++) {
        json_t *status = json_loads(texts[i], 0, NULL);
        if (!json_is_object(status)) {
            log_warnx("a %s published a status that is not a JSON object, ignoring", role);
            json_decref(status);
            continue;
        }
        if (json_array_append_new(array, status) < 0) {
            json_decref(array);
            array = NULL;
        }
    }
    osbq_store_strings_free(texts);
    if (array == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    *out = array;
    return 0;
}

/* What one process command shows. */
struct process_view {
    const char *role;                   /* "gateway" or "worker" */
    const char *plural;                 /* "gateways", for messages */
    const struct table_column *columns; /* the table's columns */
    size_t ncols;                       /* how many */
    const char *const *keys;            /* each column's status key; started_ms shows uptime */
};

static int list_processes(struct ctl *ctl, const struct process_view *view)
{
    struct osbq_error err = {0};
    json_t *statuses = NULL;
    if (processes_list(ctl, view->role, &statuses, &err) < 0) {
        char what[64];
        (void)snprintf(what, sizeof what, "reading the %s' status", view->plural);
        return ctl_fail_store(what, &err);
    }
    if (ctl->opt.json)
        return format_print_json(statuses) < 0
                   ? ctl_fail("cannot write the %s as JSON", view->plural)
                   : CTL_EXIT_OK;
    int rc = CTL_EXIT_OK;
    struct table *table = table_new(view->columns, view->ncols);
    if (table == NULL)
        rc = ctl_fail("out of memory");
    int64_t now = osbq_store_now_ms();
    size_t i;
    json_t *status;
    json_array_foreach (statuses, i, status) {
        if (rc != CTL_EXIT_OK)
            break;
        char text[TABLE_COLUMNS_MAX][FORMAT_TEXT_MAX];
        const char *cells[TABLE_COLUMNS_MAX];
        for (size_t c = 0; c < view->ncols; c++) {
            json_t *value = json_object_get(status, view->keys[c]);
            if (strcmp(view->keys[c], "started_ms") == 0)
                cells[c] = json_is_integer(value)
                               ? format_duration(now - (int64_t)json_integer_value(value), text[c],
                                                 sizeof text[c])
                               : NULL;
            else
                cells[c] = format_json_cell(value, text[c], sizeof text[c]);
        }
        if (table_add(table, cells) < 0)
            rc = ctl_fail("out of memory");
    }
    if (rc == CTL_EXIT_OK) {
        table_print(table, stdout);
        if (table_rows(table) == 0)
            ctl_say("no live %s", view->plural);
    }
    table_destroy(&table);
    json_decref(statuses);
    return rc;
}

int cmd_gateways(struct ctl *ctl)
{
    static const struct table_column columns[] = {
        {"ID", 40, false},      {"PID", 0, true},        {"HOST", 32, false},
        {"VERSION", 16, false}, {"UPTIME", 0, true},     {"ENDPOINT", 40, false},
        {"LISTEN", 40, false},  {"INFLIGHT", 0, true},   {"QUEUED", 0, true},
        {"WORKERS", 0, true},   {"FREE_SLOTS", 0, true}, {"SYNC_WAITS", 0, true},
    };
    static const char *const keys[] = {
        "id",     "pid",           "host",        "version", "started_ms", "endpoint",
        "listen", "http_inflight", "jobs_queued", "workers", "free_slots", "sync_waits",
    };
    static const struct process_view view = {"gateway", "gateways", columns,
                                             sizeof columns / sizeof columns[0], keys};
    return list_processes(ctl, &view);
}

int cmd_workers(struct ctl *ctl)
{
    static const struct table_column columns[] = {
        {"ID", 40, false},   {"PID", 0, true},   {"HOST", 32, false},  {"VERSION", 16, false},
        {"UPTIME", 0, true}, {"SLOTS", 0, true}, {"RUNNING", 0, true}, {"GATEWAYS", 0, true},
    };
    static const char *const keys[] = {"id",         "pid",   "host",    "version",
                                       "started_ms", "slots", "running", "gateways"};
    static const struct process_view view = {"worker", "workers", columns,
                                             sizeof columns / sizeof columns[0], keys};
    return list_processes(ctl, &view);
}
