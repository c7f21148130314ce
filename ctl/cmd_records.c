/* instances, bindings and instance: walks over the records in Redis, filtered, sorted and
 * listed, with the catalog's names beside the ids. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"
#include "format.h"
#include "table.h"

/* Keys asked for per SCAN step. */
#define SCAN_STEP 500
/* A walk that takes this long (ms) says how long on stderr. */
#define WALK_SAID_MS 1000

/* records_walk reading whole only the records whose few fields filter keeps (NULL: all). */
static int records_walk_where(struct ctl *ctl, enum osbq_record_kind kind,
                              const struct osbq_scan_filter *filter, records_visit_fn visit,
                              void *ctx, bool *stopped, struct osbq_error *err)
{
    uint64_t cursor = 0;
    bool go_on = true;
    size_t seen = 0;
    int64_t started_ms = osbq_clock_ms();
    do {
        struct osbq_fields *batch = NULL;
        size_t n = 0;
        if (osbq_store_scan_records_where(ctl->store, kind, &cursor, SCAN_STEP, filter, &batch, &n,
                                          err) < 0)
            return -1;
        for (size_t i = 0; i < n && go_on; i++)
            go_on = visit(&batch[i], ctx);
        seen += n;
        osbq_fields_array_free(batch, n);
    } while (go_on && cursor != 0);
    if (stopped != NULL)
        *stopped = !go_on;
    /* A walk grows with the records: one that takes long says so, for the operator to expect. */
    int64_t took_ms = osbq_clock_ms() - started_ms;
    if (took_ms >= WALK_SAID_MS)
        ctl_say("walked %zu records in %.1f s", seen, (double)took_ms / 1000.0);
    return 0;
}

int records_walk(struct ctl *ctl, enum osbq_record_kind kind, records_visit_fn visit, void *ctx,
                 bool *stopped, struct osbq_error *err)
{
    return records_walk_where(ctl, kind, NULL, visit, ctx, stopped, err);
}

/* The records a listing keeps. */
struct listing {
    const struct ctl *ctl;         /* the catalog (--outdated) */
    const struct ctl_options *opt; /* the filters and the limit */
    const char *instance_field;    /* the field --instance filters on */
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

/* Whether record passes the listing's filters (--state, --instance, --outdated). */
static bool record_matches(const struct listing *listing, const struct osbq_fields *record)
{
    const struct ctl_options *opt = listing->opt;
    return (opt->state == NULL || field_is(record, "state", opt->state)) &&
           (opt->instance == NULL || field_is(record, listing->instance_field, opt->instance)) &&
           (!opt->outdated || ctl_instance_outdated(listing->ctl, record));
}

/* The fields record_matches reads: a listing with a filter reads them of every record and
 * the whole record only of those that pass (osbq_store_scan_records_where). */
static const char *const filter_fields[] = {"state", "plan_id", "maintenance_version",
                                            "instance_id"};

static bool few_match(const struct osbq_fields *few, void *ctx)
{
    return record_matches(ctx, few);
}

/* The walk's filter for listing's options in *filter; NULL when it has none (the records are
 * read whole at once) or filters on a field not in filter_fields. */
static const struct osbq_scan_filter *listing_filter(const struct listing *listing,
                                                     struct osbq_scan_filter *filter)
{
    const struct ctl_options *opt = listing->opt;
    if (opt->state == NULL && opt->instance == NULL && !opt->outdated)
        return NULL;
    if (strcmp(listing->instance_field, "instance_id") != 0)
        return NULL;
    *filter = (struct osbq_scan_filter){
        .fields = filter_fields,
        .count = sizeof filter_fields / sizeof filter_fields[0],
        .keep = few_match,
        .ctx = (void *)listing,
    };
    return filter;
}

static bool keep_record(struct osbq_fields *record, void *ctx)
{
    struct listing *listing = ctx;
    const struct ctl_options *opt = listing->opt;
    if (!record_matches(listing, record))
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
    listing->ctl = ctl;
    listing->opt = &ctl->opt;
    /* An operation names its instance in "instance"; the records in "instance_id". */
    listing->instance_field = kind == OSBQ_RECORD_OPERATION ? "instance" : "instance_id";
    struct osbq_scan_filter filter;
    if (records_walk_where(ctl, kind, listing_filter(listing, &filter), keep_record, listing, NULL,
                           &err) < 0) {
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

/* The listing's records as a JSON array, with the catalog's names; NULL when out of memory. */
static json_t *listing_json(const struct ctl *ctl, const struct listing *listing)
{
    json_t *array = json_array();
    for (size_t i = 0; array != NULL && i < listing->count; i++) {
        json_t *record = format_fields_json(&listing->records[i]);
        ctl_add_names(ctl, &listing->records[i], record);
        if (json_array_append_new(array, record) < 0) {
            json_decref(array);
            array = NULL;
        }
    }
    return array;
}

/* Prints the listing as a JSON array of records, or the table; notes a cut listing. */
static int print_listing(struct ctl *ctl, const struct listing *listing, const char *plural,
                         struct table *table)
{
    int rc = CTL_EXIT_OK;
    if (ctl->opt.json) {
        json_t *array = listing_json(ctl, listing);
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
    const char *const *fields;          /* each column's field; "lock": lock_cell; "offering": the
                                         * service/plan names; *_ms: a time */
};

/* The table of view with the listing's records; NULL with a message when out of memory. */
static struct table *listing_table(const struct ctl *ctl, const struct record_view *view,
                                   const struct listing *listing)
{
    struct table *table = table_new(view->columns, view->ncols);
    for (size_t i = 0; table != NULL && i < listing->count; i++) {
        const struct osbq_fields *r = &listing->records[i];
        char lock[32], times[2][FORMAT_TEXT_MAX], offering[256];
        size_t time_cells = 0;
        const char *cells[TABLE_COLUMNS_MAX];
        for (size_t c = 0; c < view->ncols; c++) {
            const char *field = view->fields[c];
            if (strcmp(field, "lock") == 0)
                cells[c] = lock_cell(r, lock, sizeof lock);
            else if (strcmp(field, "offering") == 0)
                cells[c] = ctl_offering_cell(ctl, r, offering, sizeof offering);
            else if (strstr(field, "_ms") != NULL && time_cells < 2)
                cells[c] = format_time_field(r, field, false, times[time_cells++], FORMAT_TEXT_MAX);
            else
                cells[c] = osbq_fields_get(r, field);
        }
        if (table_add(table, cells) < 0)
            table_destroy(&table);
    }
    if (table == NULL)
        ctl_say("out of memory");
    return table;
}

/* Rows of a streamed table printed at a time: each chunk is aligned on its own widest cells. */
#define STREAM_CHUNK 1000

/* A listing without a limit, printed as it is walked (streamed, in the walk's order). */
struct stream {
    struct ctl *ctl;
    const struct record_view *view;
    struct listing filter; /* its filters only: records, count and cap stay unused */
    struct listing chunk;  /* the table's rows not printed yet */
    size_t shown;          /* records printed */
    bool failed;           /* output or memory failed: the walk stopped */
};

/* Prints the chunk's rows as a table (the header with the first one) and empties it. */
static bool stream_flush(struct stream *st)
{
    if (st->chunk.count == 0)
        return true;
    struct table_column headless[TABLE_COLUMNS_MAX];
    struct record_view view = *st->view;
    if (st->shown > st->chunk.count) {
        for (size_t c = 0; c < view.ncols && c < TABLE_COLUMNS_MAX; c++) {
            headless[c] = view.columns[c];
            headless[c].header = NULL;
        }
        view.columns = headless;
    }
    struct table *table = listing_table(st->ctl, &view, &st->chunk);
    bool ok = table != NULL;
    if (ok)
        table_print(table, stdout);
    table_destroy(&table);
    osbq_fields_array_free(st->chunk.records, st->chunk.count);
    st->chunk.records = NULL;
    st->chunk.count = st->chunk.cap = 0;
    return ok;
}

static bool stream_record(struct osbq_fields *record, void *ctx)
{
    struct stream *st = ctx;
    if (!record_matches(&st->filter, record))
        return true;
    if (st->ctl->opt.json) {
        json_t *object = format_fields_json(record);
        ctl_add_names(st->ctl, record, object);
        bool ok = object != NULL && fputs(st->shown == 0 ? "[\n" : ",\n", stdout) != EOF &&
                  json_dumpf(object, stdout, JSON_INDENT(2)) == 0;
        json_decref(object);
        st->failed = !ok;
    } else {
        if (!keep_record(record, &st->chunk) || st->chunk.out_of_memory)
            st->failed = true;
        else if (st->chunk.count == STREAM_CHUNK)
            st->failed = !stream_flush(st);
    }
    st->shown++;
    return !st->failed;
}

/* --limit 0: every record, printed as the walk finds it rather than sorted, so that osbq-ctl's
 * memory stays the same whatever the number of records (a chunk of rows at most). */
static int stream_command(struct ctl *ctl, const struct record_view *view)
{
    struct stream st = {.ctl = ctl, .view = view};
    st.filter.ctl = st.chunk.ctl = ctl;
    st.filter.opt = st.chunk.opt = &ctl->opt;
    st.filter.instance_field = st.chunk.instance_field = "instance_id";
    struct ctl_options unlimited = ctl->opt;
    unlimited.state = NULL;
    unlimited.instance = NULL;
    unlimited.outdated = false;
    unlimited.limit = 0;
    st.chunk.opt = &unlimited; /* the stream filters already */
    struct osbq_error err = {0};
    int rc = CTL_EXIT_OK;
    struct osbq_scan_filter filter;
    if (records_walk_where(ctl, view->kind, listing_filter(&st.filter, &filter), stream_record, &st,
                           NULL, &err) < 0)
        rc = ctl_fail_store(
            view->kind == OSBQ_RECORD_INSTANCE ? "reading instances" : "reading bindings", &err);
    if (rc == CTL_EXIT_OK && !st.failed && !ctl->opt.json && !stream_flush(&st))
        st.failed = true;
    osbq_fields_array_free(st.chunk.records, st.chunk.count);
    if (rc == CTL_EXIT_OK && st.failed)
        rc = ctl_fail("cannot write the %s", view->plural);
    if (rc == CTL_EXIT_OK && ctl->opt.json &&
        fputs(st.shown == 0 ? "[]\n" : "\n]\n", stdout) == EOF)
        rc = ctl_fail("cannot write the %s as JSON", view->plural);
    if (rc == CTL_EXIT_OK && !ctl->opt.json && st.shown == 0)
        ctl_say("no %s found", view->plural);
    return rc;
}

static int list_command(struct ctl *ctl, const struct record_view *view)
{
    if (ctl->opt.limit == 0)
        return stream_command(ctl, view);
    struct listing listing = {0};
    int rc = list_records(ctl, view->kind, view->plural, &listing);
    struct table *table = NULL;
    if (rc == CTL_EXIT_OK && !ctl->opt.json && (table = listing_table(ctl, view, &listing)) == NULL)
        rc = CTL_EXIT_FAILURE;
    if (rc == CTL_EXIT_OK)
        rc = print_listing(ctl, &listing, view->plural, table);
    table_destroy(&table);
    osbq_fields_array_free(listing.records, listing.count);
    return rc;
}

int cmd_instances(struct ctl *ctl)
{
    static const struct table_column columns[] = {
        {"ID", 40, false},    {"STATE", 0, false}, {"SERVICE", 40, false}, {"PLAN", 40, false},
        {"NAMES", 40, false}, {"LOCK", 40, false}, {"LAST_OP", 40, false}, {"CREATED", 0, false},
    };
    static const char *const fields[] = {"instance_id", "state", "service_id", "plan_id",
                                         "offering",    "lock",  "last_op",    "created_ms"};
    static const struct record_view view = {OSBQ_RECORD_INSTANCE, "instances", columns,
                                            sizeof columns / sizeof columns[0], fields};
    if (ctl->opt.outdated && ctl->catalog == NULL)
        return ctl_fail("--outdated compares each instance with its plan in OSBQ_CATALOG, which "
                        "cannot be read");
    return list_command(ctl, &view);
}

/* The bindings' view, shared by bindings and instance. */
static const struct table_column binding_columns[] = {
    {"ID", 40, false},    {"INSTANCE", 40, false}, {"STATE", 0, false},    {"PLAN", 40, false},
    {"NAMES", 40, false}, {"LOCK", 40, false},     {"LAST_OP", 40, false}, {"CREATED", 0, false},
};
static const char *const binding_fields[] = {"binding_id", "instance_id", "state",   "plan_id",
                                             "offering",   "lock",        "last_op", "created_ms"};

/* "name (id)", or the id alone when the catalog does not know it, in buf. */
static const char *named_id(const struct ctl *ctl, const char *id, char *buf, size_t size)
{
    const char *name = id != NULL ? ctl_catalog_name(ctl, id) : NULL;
    if (name == NULL)
        return id;
    (void)snprintf(buf, size, "%s (%s)", name, id);
    return buf;
}

/* The instance's record as label/value rows, then its bindings and operations as tables. */
static int print_instance(const struct ctl *ctl, const struct osbq_fields *instance,
                          const struct record_view *bindings_view, const struct listing *bindings,
                          const struct record_view *ops_view, const struct listing *ops)
{
    static const struct table_column detail_columns[] = {{NULL, 0, false}, {NULL, 0, false}};
    char service[512], plan[512], lock[32], created[FORMAT_TEXT_MAX];
    const char *rows[][2] = {
        {"instance", osbq_fields_get(instance, "instance_id")},
        {"state", osbq_fields_get(instance, "state")},
        {"service",
         named_id(ctl, osbq_fields_get(instance, "service_id"), service, sizeof service)},
        {"plan", named_id(ctl, osbq_fields_get(instance, "plan_id"), plan, sizeof plan)},
        {"platform", osbq_fields_get(instance, "platform")},
        {"last_op", osbq_fields_get(instance, "last_op")},
        {"lock", lock_cell(instance, lock, sizeof lock)},
        {"dashboard_url", osbq_fields_get(instance, "dashboard_url")},
        {"created", format_time_field(instance, "created_ms", false, created, sizeof created)},
    };
    struct table *detail = table_new(detail_columns, 2);
    for (size_t i = 0; detail != NULL && i < sizeof rows / sizeof rows[0]; i++)
        if (table_add(detail, rows[i]) < 0)
            table_destroy(&detail);
    struct table *bindings_table = listing_table(ctl, bindings_view, bindings);
    struct table *ops_table = listing_table(ctl, ops_view, ops);
    int rc = CTL_EXIT_OK;
    if (detail == NULL || bindings_table == NULL || ops_table == NULL) {
        rc = ctl_fail("out of memory");
    } else {
        table_print(detail, stdout);
        printf("\nBindings (%zu):\n", bindings->count);
        if (bindings->count > 0)
            table_print(bindings_table, stdout);
        printf("\nOperations (%zu, the last OSBQ_RETENTION_S kept; osbq-ctl operation ID for "
               "one's history):\n",
               ops->count);
        if (ops->count > 0)
            table_print(ops_table, stdout);
    }
    table_destroy(&detail);
    table_destroy(&bindings_table);
    table_destroy(&ops_table);
    return rc;
}

int cmd_bindings(struct ctl *ctl)
{
    static const struct record_view view = {OSBQ_RECORD_BINDING, "bindings", binding_columns,
                                            sizeof binding_columns / sizeof binding_columns[0],
                                            binding_fields};
    return list_command(ctl, &view);
}

/* One instance: its record (the catalog's names beside the ids), then its bindings and the
 * operations still kept (OSBQ_RETENTION_S), each a walk over all of their kind. */
int cmd_instance(struct ctl *ctl)
{
    static const struct table_column op_columns[] = {
        {"OPERATION", 40, false}, {"KIND", 0, false},    {"BINDING", 40, false},
        {"STATE", 0, false},      {"WORKER", 40, false}, {"CREATED", 0, false},
        {"FINISHED", 0, false},
    };
    static const char *const op_fields[] = {"operation_id", "kind",       "binding",    "state",
                                            "worker",       "created_ms", "finished_ms"};
    static const struct record_view bindings_view = {
        OSBQ_RECORD_BINDING, "bindings", binding_columns,
        sizeof binding_columns / sizeof binding_columns[0], binding_fields};
    static const struct record_view ops_view = {OSBQ_RECORD_OPERATION, "operations", op_columns,
                                                sizeof op_columns / sizeof op_columns[0],
                                                op_fields};
    struct osbq_error err = {0};
    struct osbq_fields instance = {0};
    int found = osbq_store_instance_record(ctl->store, ctl->opt.instance, &instance, &err);
    if (found < 0)
        return ctl_fail_store("reading the instance", &err);
    if (found == 0) {
        ctl_say("no instance %s in namespace %s (unknown, or gone more than OSBQ_RETENTION_S = "
                "%u s ago)",
                ctl->opt.instance, ctl->cfg->namespace_, ctl->cfg->retention_s);
        return CTL_EXIT_NOT_FOUND;
    }
    /* Read by id (its bindings set, its operations' chain), not by walking every record: as
     * fast with a million instances as with ten. */
    struct listing bindings = {0}, ops = {0};
    int rc = CTL_EXIT_OK;
    if (osbq_store_instance_related(ctl->store, ctl->opt.instance,
                                    osbq_fields_get(&instance, "last_op"), &bindings.records,
                                    &bindings.count, &ops.records, &ops.count, &err) < 0)
        rc = ctl_fail_store("reading the instance's bindings and operations", &err);
    if (bindings.count > 1)
        qsort(bindings.records, bindings.count, sizeof *bindings.records, compare_records);
    if (ops.count > 1)
        qsort(ops.records, ops.count, sizeof *ops.records, compare_records);
    if (rc == CTL_EXIT_OK && ctl->opt.json) {
        json_t *root = json_object(), *record = format_fields_json(&instance);
        ctl_add_names(ctl, &instance, record);
        if (root == NULL || json_object_set_new(root, "instance", record) < 0 ||
            json_object_set_new(root, "bindings", listing_json(ctl, &bindings)) < 0 ||
            json_object_set_new(root, "operations", listing_json(ctl, &ops)) < 0) {
            json_decref(root);
            root = NULL;
        }
        if (format_print_json(root) < 0)
            rc = ctl_fail("cannot write the instance as JSON");
    } else if (rc == CTL_EXIT_OK) {
        rc = print_instance(ctl, &instance, &bindings_view, &bindings, &ops_view, &ops);
    }
    osbq_fields_clear(&instance);
    osbq_fields_array_free(bindings.records, bindings.count);
    osbq_fields_array_free(ops.records, ops.count);
    return rc;
}
