/* instances and bindings: walks over the records in Redis, filtered, sorted and listed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "format.h"
#include "table.h"

/* Keys asked for per SCAN step. */
#define SCAN_STEP 500

int records_walk(struct ctl *ctl, enum osbq_record_kind kind, records_visit_fn visit, void *ctx,
                 bool *stopped, struct osbq_error *err)
{
    uint64_t cursor = 0;
    bool go_on = true;
    do {
        struct osbq_fields *batch = NULL;
        size_t n = 0;
        if (osbq_store_scan_records(ctl->store, kind, &cursor, SCAN_STEP, &batch, &n, err) < 0)
            return -1;
        for (size_t i = 0; i < n && go_on; i++)
            go_on = visit(&batch[i], ctx);
        osbq_fields_array_free(batch, n);
    } while (go_on && cursor != 0);
    if (stopped != NULL)
        *stopped = !go_on;
    return 0;
}

/* The records a listing keeps. */
struct listing {
    const struct ctl_options *opt; /* the filters and the limit */
    struct osbq_fields *records;   /* kept, owned */
    size_t count;                  /* kept */
    size_t cap;                    /* room in records */
    bool more;                     /* a record past the limit matched */
    bool out_of_memory;            /* the walk stopped for want of memory */
};

static bool field_is(const struct osbq_fields *record, const char *name, const char *value)
{
    const char *found = osbq_fields_get(record, name);
    return found != NULL && strcmp(found, value) == 0;
}

static bool keep_record(struct osbq_fields *record, void *ctx)
{
    struct listing *listing = ctx;
    const struct ctl_options *opt = listing->opt;
    if ((opt->state != NULL && !field_is(record, "state", opt->state)) ||
        (opt->instance != NULL && !field_is(record, "instance_id", opt->instance)))
        return true;
    if (opt->limit != 0 && listing->count == opt->limit) {
        listing->more = true;
        return false;
    }
    if (listing->count == listing->cap) {
        size_t cap = listing->cap == 0 ? 64 : listing->cap * 2;
        struct osbq_fields *grown = realloc(listing->records, cap * sizeof *grown);
        if (grown == NULL) {
            listing->out_of_memory = true;
            return false;
        }
        listing->records = grown;
        listing->cap = cap;
    }
    listing->records[listing->count++] = *record;
    memset(record, 0, sizeof *record);
    return true;
}

/* Oldest first (created_ms), then by instance and binding id, so a listing reads the same
 * twice. */
static int compare_records(const void *a, const void *b)
{
    static const char *const ids[] = {"instance_id", "binding_id"};
    const struct osbq_fields *x = a, *y = b;
    int64_t tx = 0, ty = 0;
    (void)format_parse_int(osbq_fields_get(x, "created_ms"), &tx);
    (void)format_parse_int(osbq_fields_get(y, "created_ms"), &ty);
    if (tx != ty)
        return tx < ty ? -1 : 1;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        const char *ix = osbq_fields_get(x, ids[i]), *iy = osbq_fields_get(y, ids[i]);
        int order = strcmp(ix != NULL ? ix : "", iy != NULL ? iy : "");
        if (order != 0)
            return order;
    }
    return 0;
}

/* Walks kind with the command line's filters; sorted records in *listing. */
static int list_records(struct ctl *ctl, enum osbq_record_kind kind, const char *plural,
                        struct listing *listing)
{
    struct osbq_error err = {0};
    listing->opt = &ctl->opt;
    if (records_walk(ctl, kind, keep_record, listing, NULL, &err) < 0) {
        char what[64];
        (void)snprintf(what, sizeof what, "reading %s", plural);
        return ctl_fail_store(what, &err);
    }
    if (listing->out_of_memory)
        return ctl_fail("reading %s: out of memory", plural);
    if (listing->count > 1)
        qsort(listing->records, listing->count, sizeof *listing->records, compare_records);
    return CTL_EXIT_OK;
}

/* Prints the listing as a JSON array of records, or the table; notes a cut listing. */
static int print_listing(struct ctl *ctl, const struct listing *listing, const char *plural,
                         struct table *table)
{
    int rc = CTL_EXIT_OK;
    if (ctl->opt.json) {
        json_t *array = json_array();
        for (size_t i = 0; array != NULL && i < listing->count; i++)
            if (json_array_append_new(array, format_fields_json(&listing->records[i])) < 0) {
                json_decref(array);
                array = NULL;
            }
        if (format_print_json(array) < 0)
            rc = ctl_fail("cannot write the %s as JSON", plural);
    } else {
        table_print(table, stdout);
        if (listing->count == 0)
            ctl_say("no %s found", plural);
    }
    if (listing->more)
        ctl_say("more %s than --limit %u: --limit 0 lists them all", plural, ctl->opt.limit);
    return rc;
}

/* The lock column: the operation holding the record exclusively, or "shared:N" when N binding
 * operations hold an instance in shared mode, or NULL (shown "-"). */
static const char *lock_cell(const struct osbq_fields *record, char *buf, size_t size)
{
    const char *exclusive = osbq_fields_get(record, "lock_x");
    int64_t shared = 0;
    if (exclusive != NULL && exclusive[0] != '\0')
        return exclusive;
    if (format_parse_int(osbq_fields_get(record, "lock_s"), &shared) && shared > 0) {
        (void)snprintf(buf, size, "shared:%lld", (long long)shared);
        return buf;
    }
    return NULL;
}

/* What one listing command shows. */
struct record_view {
    enum osbq_record_kind kind;         /* which records */
    const char *plural;                 /* "instances", for messages */
    const struct table_column *columns; /* the table's columns */
    size_t ncols;                       /* how many */
    const char *const *fields;          /* each column's field; "lock": lock_cell; *_ms: a time */
};

static int list_command(struct ctl *ctl, const struct record_view *view)
{
    struct listing listing = {0};
    int rc = list_records(ctl, view->kind, view->plural, &listing);
    struct table *table = table_new(view->columns, view->ncols);
    if (rc == CTL_EXIT_OK && table == NULL)
        rc = ctl_fail("out of memory");
    for (size_t i = 0; rc == CTL_EXIT_OK && !ctl->opt.json && i < listing.count; i++) {
        const struct osbq_fields *r = &listing.records[i];
        char lock[32], created[FORMAT_TEXT_MAX];
        const char *cells[TABLE_COLUMNS_MAX];
        for (size_t c = 0; c < view->ncols; c++) {
            const char *field = view->fields[c];
            if (strcmp(field, "lock") == 0)
                cells[c] = lock_cell(r, lock, sizeof lock);
            else if (strstr(field, "_ms") != NULL)
                cells[c] = format_time_field(r, field, false, created, sizeof created);
            else
                cells[c] = osbq_fields_get(r, field);
        }
        if (table_add(table, cells) < 0)
            rc = ctl_fail("out of memory");
    }
    if (rc == CTL_EXIT_OK)
        rc = print_listing(ctl, &listing, view->plural, table);
    table_destroy(&table);
    osbq_fields_array_free(listing.records, listing.count);
    return rc;
}

int cmd_instances(struct ctl *ctl)
{
    static const struct table_column columns[] = {
        {"ID", 40, false},   {"STATE", 0, false},    {"SERVICE", 40, false}, {"PLAN", 40, false},
        {"LOCK", 40, false}, {"LAST_OP", 40, false}, {"CREATED", 0, false},
    };
    static const char *const fields[] = {"instance_id", "state",   "service_id", "plan_id",
                                         "lock",        "last_op", "created_ms"};
    static const struct record_view view = {OSBQ_RECORD_INSTANCE, "instances", columns,
                                            sizeof columns / sizeof columns[0], fields};
    return list_command(ctl, &view);
}

int cmd_bindings(struct ctl *ctl)
{
    static const struct table_column columns[] = {
        {"ID", 40, false},   {"INSTANCE", 40, false}, {"STATE", 0, false},   {"PLAN", 40, false},
        {"LOCK", 40, false}, {"LAST_OP", 40, false},  {"CREATED", 0, false},
    };
    static const char *const fields[] = {"binding_id", "instance_id", "state",     "plan_id",
                                         "lock",       "last_op",     "created_ms"};
    static const struct record_view view = {OSBQ_RECORD_BINDING, "bindings", columns,
                                            sizeof columns / sizeof columns[0], fields};
    return list_command(ctl, &view);
}
