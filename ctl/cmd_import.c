/* osbq-ctl import FILE: writes the instances of an export file (osbq-ctl export, or another
 * broker's migration tool writing the same format) into this configuration's namespace and Redis
 * (docs/ctl.md, "export and import"; docs/decisions/0055). Two passes over the file, one line in
 * memory at a time: the first checks all of it (its version, every line, the trailer and its
 * counts, every sealed value (a binding's result; parameters, context, bind_resource) opening
 * with this side's keys) and writes nothing; the second writes each instance in one script call
 * (whole or not at all), its sealed values resealed for this namespace under this side's current
 * key. Without --yes only the first pass
 * runs. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "format.h"
#include "secrets.h"
#include "store_admin.h"

/* The longest line read (an instance with its bindings and operations), and the longest id. */
#define IMPORT_LINE_MAX         (64UL * 1024 * 1024)
#define IMPORT_ID_MAX           1024
#define IMPORT_OPERATION_ID_MAX 128

/* Room for a reason, with an id or two in it, and for a message that puts a line number
 * before one. */
#define REASON_MAX 2500
#define WHY_MAX    2600

/* One import under way. */
struct import_run {
    struct ctl *ctl;                  /* the command line, the store, the target's namespace */
    struct osbq_secrets *ring;        /* the target's keys (OSBQ_SECRET_KEY_FILE), or NULL */
    FILE *file;                       /* FILE, read twice */
    char *line;                       /* the line read (owned, grown up to IMPORT_LINE_MAX) */
    size_t line_cap;                  /* bytes allocated for line */
    unsigned long line_no;            /* 1-based number of the line read */
    char *source_namespace;           /* the header's namespace: sealed values are bound to it */
    int64_t exported_ms;              /* the header's time */
    unsigned long instances;          /* first pass: instance lines */
    unsigned long bindings;           /* first pass: bindings in them */
    unsigned long operations;         /* first pass: operations in them */
    unsigned long sealed;             /* first pass: sealed values (each opened) */
    unsigned long written;            /* second pass: instances written */
    unsigned long same;               /* second pass: the same instance was there already */
    unsigned long bindings_written;   /* second pass: bindings of the instances written */
    char by[256];                     /* the OS user, for the audit trail */
    unsigned long operations_written; /* second pass: operations of the instances written */
    json_t *refused;                  /* second pass: [{"instance_id", "state"}], ids taken */
};

/* Reads the next line into run->line, without its newline. 1, 0 at the end of the file, or -1
 * with why (a line over IMPORT_LINE_MAX, a read error). */
static int read_line(struct import_run *run, size_t *len, char *why, size_t size)
{
    size_t used = 0;
    for (;;) {
        if (used + 2 > run->line_cap) {
            size_t grown = run->line_cap == 0 ? 65536 : run->line_cap * 2;
            char *more = grown <= IMPORT_LINE_MAX + 2 ? realloc(run->line, grown) : NULL;
            if (more == NULL) {
                (void)snprintf(why, size, "line %lu: longer than %lu bytes", run->line_no + 1,
                               IMPORT_LINE_MAX);
                return -1;
            }
            run->line = more;
            run->line_cap = grown;
        }
        if (fgets(run->line + used, (int)(run->line_cap - used), run->file) == NULL) {
            if (ferror(run->file)) {
                (void)snprintf(why, size, "cannot read it: %s", strerror(errno));
                return -1;
            }
            if (used == 0)
                return 0;
            break;
        }
        used += strlen(run->line + used);
        if (used > 0 && run->line[used - 1] == '\n') {
            run->line[--used] = '\0';
            break;
        }
    }
    run->line_no++;
    *len = used;
    return 1;
}

/* An object of strings as fields, into *out (empty first). what names it for why. 0, or -1. */
static int fields_from_object(const json_t *object, const char *what, struct osbq_fields *out,
                              char *why, size_t size)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(object) || json_object_size(object) == 0) {
        (void)snprintf(why, size, "%s is not an object of fields", what);
        return -1;
    }
    const char *name;
    const json_t *value;
    struct osbq_error err = {0};
    json_object_foreach ((json_t *)object, name, value) {
        if (!json_is_string(value) || name[0] == '\0') {
            (void)snprintf(why, size, "%s: field \"%s\" is not a string", what, name);
            return -1;
        }
        if (strlen(json_string_value(value)) != json_string_length(value)) {
            (void)snprintf(why, size, "%s: field \"%s\" holds a NUL byte", what, name);
            return -1;
        }
        if (osbq_fields_add(out, name, json_string_value(value), &err) < 0) {
            (void)snprintf(why, size, "%s", err.text);
            return -1;
        }
    }
    return 0;
}

/* Whether the record has the field name, equal to value. */
static bool field_is(const struct osbq_fields *fields, const char *name, const char *value)
{
    const char *found = osbq_fields_get(fields, name);
    return found != NULL && strcmp(found, value) == 0;
}

/* Whether the record's field name is one of values (NULL-terminated). */
static bool field_in(const struct osbq_fields *fields, const char *name, const char *const *values)
{
    for (size_t i = 0; values[i] != NULL; i++)
        if (field_is(fields, name, values[i]))
            return true;
    return false;
}

/* An id: a string of 1 to max bytes; an operation's also only of A-Za-z0-9-._~ (its key is
 * built from it as it is). */
static const char *id_of(const json_t *value, size_t max, bool plain)
{
    const char *id = json_string_value(value);
    if (id == NULL || id[0] == '\0' || strlen(id) > max || strlen(id) != json_string_length(value))
        return NULL;
    if (plain && strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") !=
                     strlen(id))
        return NULL;
    return id;
}

/* The entries of array, each {"<id_name>": id, "record": {...}}, into *records. 0, or -1. */
static int records_from_array(const json_t *array, const char *id_name, bool plain,
                              struct osbq_export_record **records, size_t *count, char *why,
                              size_t size)
{
    if (!json_is_array(array)) {
        (void)snprintf(why, size, "\"%ss\" is not an array", id_name);
        return -1;
    }
    size_t n = json_array_size(array);
    if (n > 0 && (*records = calloc(n, sizeof **records)) == NULL) {
        (void)snprintf(why, size, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *entry = json_array_get(array, i);
        const char *id = id_of(json_object_get(entry, id_name),
                               plain ? IMPORT_OPERATION_ID_MAX : IMPORT_ID_MAX, plain);
        if (!json_is_object(entry) || json_object_size(entry) != 2 || id == NULL) {
            (void)snprintf(why, size,
                           "entry %zu of \"%ss\": not {\"%s\": an id, \"record\": {...}}", i + 1,
                           id_name, id_name);
            return -1;
        }
        struct osbq_export_record *r = &(*records)[(*count)++];
        if ((r->id = strdup(id)) == NULL) {
            (void)snprintf(why, size, "out of memory");
            return -1;
        }
        char what[IMPORT_ID_MAX + 64];
        (void)snprintf(what, sizeof what, "the record of %s %s", id_name, id);
        if (fields_from_object(json_object_get(entry, "record"), what, &r->fields, why, size) < 0)
            return -1;
    }
    return 0;
}

/* An instance line into *out and *instance_id (owned), checked as the format says
 * (docs/export-line.schema.json): final states only, no locks, ids that agree. 0, or -1. */
static int instance_from_line(const json_t *line, struct osbq_export_instance *out,
                              char **instance_id, char *why, size_t size)
{
    static const char *const instance_states[] = {"provisioned", "failed", NULL};
    static const char *const binding_states[] = {"bound", "failed", NULL};
    static const char *const operation_states[] = {"succeeded", "failed", NULL};
    static const char *const operation_kinds[] = {"provision", "update", "deprovision",
                                                  "bind",      "unbind", NULL};
    const char *iid = id_of(json_object_get(line, "instance_id"), IMPORT_ID_MAX, false);
    if (iid == NULL || json_object_size(line) != 4) {
        (void)snprintf(why, size,
                       "not an instance line: it needs exactly \"instance_id\" (1 to "
                       "%d bytes), \"record\", \"bindings\" and \"operations\"",
                       IMPORT_ID_MAX);
        return -1;
    }
    if ((*instance_id = strdup(iid)) == NULL) {
        (void)snprintf(why, size, "out of memory");
        return -1;
    }
    if (fields_from_object(json_object_get(line, "record"), "the instance record", &out->record,
                           why, size) < 0 ||
        records_from_array(json_object_get(line, "bindings"), "binding_id", false, &out->bindings,
                           &out->binding_count, why, size) < 0 ||
        records_from_array(json_object_get(line, "operations"), "operation_id", true,
                           &out->operations, &out->operation_count, why, size) < 0)
        return -1;
    /* A lock or an unfinished state would hold the instance for an operation that never runs
     * here; the gateway reads the ids, the service and the plan. */
    if (osbq_fields_get(&out->record, "lock_x") != NULL ||
        osbq_fields_get(&out->record, "lock_s") != NULL ||
        !field_in(&out->record, "state", instance_states) ||
        !field_is(&out->record, "instance_id", iid) ||
        osbq_fields_get(&out->record, "service_id") == NULL ||
        osbq_fields_get(&out->record, "plan_id") == NULL) {
        (void)snprintf(why, size,
                       "instance %s: its record needs state provisioned or failed, its own "
                       "instance_id, a service_id and a plan_id, and no lock_x or lock_s",
                       iid);
        return -1;
    }
    for (size_t i = 0; i < out->binding_count; i++) {
        const struct osbq_export_record *b = &out->bindings[i];
        if (osbq_fields_get(&b->fields, "lock_x") != NULL ||
            !field_in(&b->fields, "state", binding_states) ||
            !field_is(&b->fields, "binding_id", b->id) ||
            !field_is(&b->fields, "instance_id", iid)) {
            (void)snprintf(why, size,
                           "binding %s of instance %s: its record needs state bound or failed, "
                           "its own instance_id and binding_id, and no lock_x",
                           b->id, iid);
            return -1;
        }
    }
    for (size_t i = 0; i < out->operation_count; i++) {
        const struct osbq_fields *op = &out->operations[i].fields;
        if (!field_in(op, "state", operation_states) || !field_in(op, "kind", operation_kinds)) {
            (void)snprintf(why, size,
                           "operation %s of instance %s: not a finished operation (state "
                           "succeeded or failed; kind provision, update, deprovision, bind or "
                           "unbind)",
                           out->operations[i].id, iid);
            return -1;
        }
    }
    return 0;
}

/* The header (line 1): the format's version, the source namespace and time. 0, or -1 with why;
 * *unknown_version when the version is not this one. */
static int header_read(struct import_run *run, const json_t *line, bool *unknown_version, char *why,
                       size_t size)
{
    const json_t *version = json_object_get(line, "osbq_export");
    const char *ns = json_string_value(json_object_get(line, "namespace"));
    const json_t *exported = json_object_get(line, "exported_ms");
    if (!json_is_integer(version)) {
        (void)snprintf(why, size,
                       "line 1: not the header of an osbq export (no \"osbq_export\" "
                       "version)");
        return -1;
    }
    if (json_integer_value(version) != CTL_EXPORT_VERSION) {
        *unknown_version = true;
        (void)snprintf(why, size,
                       "export format version %lld is not known to this osbq-ctl, "
                       "which reads version %d",
                       (long long)json_integer_value(version), CTL_EXPORT_VERSION);
        return -1;
    }
    if (ns == NULL || ns[0] == '\0' || !json_is_integer(exported) ||
        !json_is_object(json_object_get(line, "scope"))) {
        (void)snprintf(why, size,
                       "line 1: the header needs \"namespace\", \"exported_ms\" and "
                       "\"scope\"");
        return -1;
    }
    if (run->source_namespace == NULL && (run->source_namespace = strdup(ns)) == NULL) {
        (void)snprintf(why, size, "out of memory");
        return -1;
    }
    run->exported_ms = (int64_t)json_integer_value(exported);
    return 0;
}

/* A record as the file names it: its instance, its binding ("" for the instance's own record
 * and its operations), its fields. */
struct sealed_record {
    const char *instance_id;
    const char *binding_id;
    struct osbq_fields *fields;
};

/* Opens field k (enum osbq_sealed_field) of rec as the file holds it (bound to the source
 * namespace): *plain (free with osbq_secrets_free_text), NULL for none. 1 opened, 0 plaintext or
 * none, -1 with why. */
static int field_open(const struct import_run *run, const struct sealed_record *rec, size_t k,
                      char **plain, char *why, size_t size)
{
    *plain = NULL;
    const char *stored = osbq_fields_get(rec->fields, osbq_sealed_field_names[k]);
    if (stored == NULL || !osbq_secrets_is_sealed(stored))
        return 0;
    char whose[OSBQ_ERROR_TEXT_MAX];
    if (rec->binding_id[0] != '\0')
        (void)snprintf(whose, sizeof whose, "binding %s of instance %s", rec->binding_id,
                       rec->instance_id);
    else
        (void)snprintf(whose, sizeof whose, "instance %s", rec->instance_id);
    if (run->ring == NULL) {
        (void)snprintf(why, size,
                       "%s: its %s is sealed and OSBQ_SECRET_KEY_FILE is not set (import "
                       "needs a key file holding the key that sealed it)",
                       whose, osbq_sealed_field_names[k]);
        return -1;
    }
    const struct osbq_secret_place from = {run->source_namespace, rec->instance_id, rec->binding_id,
                                           osbq_sealed_field_place((enum osbq_sealed_field)k)};
    struct osbq_error err = {0};
    if (osbq_secrets_open(run->ring, &from, stored, plain, &err) < 0) {
        (void)snprintf(why, size, "%s: its %s does not open with OSBQ_SECRET_KEY_FILE's keys: %s",
                       whose, osbq_sealed_field_names[k], err.text);
        return -1;
    }
    return 1;
}

/* Calls each(run, rec, state) for inst's own record, its bindings and its operations (an
 * update's keeps the parameters and context it applied). Stops at the first that fails. */
static int
each_record(struct import_run *run, const char *instance_id, struct osbq_export_instance *inst,
            int (*each)(struct import_run *, const struct sealed_record *, char *, size_t),
            char *why, size_t size)
{
    const struct sealed_record own = {instance_id, "", &inst->record};
    if (each(run, &own, why, size) < 0)
        return -1;
    for (size_t i = 0; i < inst->binding_count; i++) {
        const struct sealed_record b = {instance_id, inst->bindings[i].id,
                                        &inst->bindings[i].fields};
        if (each(run, &b, why, size) < 0)
            return -1;
    }
    for (size_t i = 0; i < inst->operation_count; i++) {
        const struct sealed_record op = {instance_id, "", &inst->operations[i].fields};
        if (each(run, &op, why, size) < 0)
            return -1;
    }
    return 0;
}

/* Checks that rec's sealed fields open, counting them. */
static int fields_check(struct import_run *run, const struct sealed_record *rec, char *why,
                        size_t size)
{
    for (size_t k = 0; k < OSBQ_SEALED_COUNT; k++) {
        char *plain = NULL;
        int opened = field_open(run, rec, k, &plain, why, size);
        osbq_secrets_free_text(plain);
        if (opened < 0)
            return -1;
        run->sealed += opened > 0;
    }
    return 0;
}

/* Reads the next line as JSON. 1 with *line, 0 at the end, -1 with why. */
static int next_json(struct import_run *run, json_t **line, char *why, size_t size)
{
    size_t len = 0;
    int got = read_line(run, &len, why, size);
    if (got <= 0)
        return got;
    json_error_t jerr;
    *line = json_loadb(run->line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (*line == NULL || !json_is_object(*line)) {
        (void)snprintf(why, size, "line %lu: %s", run->line_no,
                       *line == NULL ? jerr.text : "not a JSON object");
        json_decref(*line);
        *line = NULL;
        return -1;
    }
    return 1;
}

/* The trailer: {"end": true, "instances", "bindings", "skipped"} with the counts of the lines
 * before it. 0, or -1 with why. */
static int trailer_check(const struct import_run *run, const json_t *line, char *why, size_t size)
{
    const json_t *instances = json_object_get(line, "instances");
    const json_t *bindings = json_object_get(line, "bindings");
    if (!json_is_true(json_object_get(line, "end")) || !json_is_integer(instances) ||
        !json_is_integer(bindings) || !json_is_array(json_object_get(line, "skipped"))) {
        (void)snprintf(why, size,
                       "line %lu: the trailer needs \"end\": true, \"instances\", "
                       "\"bindings\" and \"skipped\"",
                       run->line_no);
        return -1;
    }
    if (json_integer_value(instances) != (json_int_t)run->instances ||
        json_integer_value(bindings) != (json_int_t)run->bindings) {
        (void)snprintf(why, size,
                       "line %lu: the trailer counts %lld instance(s) and %lld "
                       "binding(s), the file holds %lu and %lu",
                       run->line_no, (long long)json_integer_value(instances),
                       (long long)json_integer_value(bindings), run->instances, run->bindings);
        return -1;
    }
    return 0;
}

/* The first pass: the whole file checked, nothing written. 0, or -1 with why (*unknown_version
 * when the header's version is another). */
static int check_file(struct import_run *run, bool *unknown_version, char *why, size_t size)
{
    json_t *line = NULL;
    int got = next_json(run, &line, why, size);
    if (got == 0)
        (void)snprintf(why, size, "line 1: the file is empty");
    if (got <= 0)
        return -1;
    int rc = header_read(run, line, unknown_version, why, size);
    json_decref(line);
    bool ended = false;
    while (rc == 0 && (got = next_json(run, &line, why, size)) > 0) {
        if (ended) {
            (void)snprintf(why, size, "line %lu: a line after the trailer", run->line_no);
            rc = -1;
        } else if (json_object_get(line, "end") != NULL) {
            rc = trailer_check(run, line, why, size);
            ended = true;
        } else {
            struct osbq_export_instance inst = {0};
            char *iid = NULL, reason[REASON_MAX];
            rc = instance_from_line(line, &inst, &iid, reason, sizeof reason);
            if (rc == 0)
                rc = each_record(run, iid, &inst, fields_check, reason, sizeof reason);
            if (rc < 0)
                (void)snprintf(why, size, "line %lu: %s", run->line_no, reason);
            run->instances++;
            run->bindings += inst.binding_count;
            run->operations += inst.operation_count;
            free(iid);
            osbq_export_instance_clear(&inst);
        }
        json_decref(line);
    }
    if (rc == 0 && got < 0)
        rc = -1;
    if (rc == 0 && !ended) {
        (void)snprintf(why, size,
                       "line %lu: no trailer after it (the export did not finish, or "
                       "the file was cut)",
                       run->line_no);
        rc = -1;
    }
    return rc;
}

/* Replaces each sealed field of rec with the same value sealed for this namespace under this
 * side's current key. 0, or -1 with why. */
static int fields_reseal(struct import_run *run, const struct sealed_record *rec, char *why,
                         size_t size)
{
    for (size_t k = 0; k < OSBQ_SEALED_COUNT; k++) {
        char *plain = NULL;
        int opened = field_open(run, rec, k, &plain, why, size);
        if (opened <= 0) {
            if (opened < 0)
                return -1;
            continue;
        }
        const struct osbq_secret_place to = {run->ctl->cfg->namespace_, rec->instance_id,
                                             rec->binding_id,
                                             osbq_sealed_field_place((enum osbq_sealed_field)k)};
        char *sealed = osbq_secrets_seal(run->ring, &to, plain, strlen(plain));
        osbq_secrets_free_text(plain);
        if (sealed == NULL) {
            (void)snprintf(why, size, "out of memory");
            return -1;
        }
        struct osbq_fields *f = rec->fields;
        for (size_t i = 0; i < f->count; i++) {
            if (strcmp(f->names[i], osbq_sealed_field_names[k]) == 0) {
                memset(f->values[i], 0, strlen(f->values[i]));
                free(f->values[i]);
                f->values[i] = sealed;
                sealed = NULL;
            }
        }
        free(sealed);
    }
    return 0;
}

/* Writes one instance line. 0, or -1 with why (Redis failed: the instances before it are
 * written, this one is not). */
static int import_instance(struct import_run *run, const json_t *line, char *why, size_t size)
{
    struct osbq_export_instance inst = {0};
    char *iid = NULL, *existing = NULL;
    int rc = instance_from_line(line, &inst, &iid, why, size);
    if (rc == 0)
        rc = each_record(run, iid, &inst, fields_reseal, why, size);
    if (rc == 0) {
        struct osbq_error err = {0};
        int done =
            osbq_store_import_instance(run->ctl->store, iid, &inst, run->by, &existing, &err);
        if (done < 0) {
            (void)snprintf(why, size, "instance %s: %s", iid, err.text);
            rc = -1;
        } else if (done == 1) {
            run->written++;
            run->bindings_written += inst.binding_count;
            run->operations_written += inst.operation_count;
        } else if (done == 2) {
            run->same++;
        } else {
            ctl_say("instance %s refused: namespace %s has an instance with that id (state %s); "
                    "nothing of it was written",
                    iid, run->ctl->cfg->namespace_, existing[0] != '\0' ? existing : "unknown");
            json_t *entry = json_pack("{s:s, s:s}", "instance_id", iid, "state", existing);
            if (entry == NULL || json_array_append_new(run->refused, entry) < 0) {
                (void)snprintf(why, size, "out of memory");
                rc = -1;
            }
        }
    }
    free(existing);
    free(iid);
    osbq_export_instance_clear(&inst);
    return rc;
}

/* The second pass: from the top again, each instance line written. 0, or -1 with why. */
static int write_file(struct import_run *run, char *why, size_t size)
{
    if (fseek(run->file, 0, SEEK_SET) != 0) {
        (void)snprintf(why, size, "cannot read it again: %s", strerror(errno));
        return -1;
    }
    run->line_no = 0;
    json_t *line = NULL;
    int got = next_json(run, &line, why, size); /* the header, checked by the first pass */
    json_decref(line);
    int rc = got > 0 ? 0 : -1;
    while (rc == 0 && (got = next_json(run, &line, why, size)) > 0) {
        bool trailer = json_object_get(line, "end") != NULL;
        char reason[REASON_MAX];
        if (!trailer && import_instance(run, line, reason, sizeof reason) < 0) {
            (void)snprintf(why, size, "line %lu: %s", run->line_no, reason);
            rc = -1;
        }
        json_decref(line);
        if (trailer)
            break;
    }
    return rc == 0 && got >= 0 ? 0 : -1;
}

/* What the import did (or, without --yes, would do). Returns the exit status. */
static int report(const struct import_run *run, const char *path)
{
    const struct ctl *ctl = run->ctl;
    const char *ns = ctl->cfg->namespace_;
    size_t refused = json_array_size(run->refused);
    if (!ctl->opt.yes) {
        ctl_say("%s holds %lu instance(s) with %lu binding(s) and %lu operation(s) from "
                "namespace %s; the file is whole and each of its %lu sealed value(s) opens. "
                "import writes them into namespace %s: add --yes to do it.",
                path, run->instances, run->bindings, run->operations, run->source_namespace,
                run->sealed, ns);
        return CTL_EXIT_USAGE;
    }
    if (ctl->opt.json) {
        json_t *doc = json_pack(
            "{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:O}", "result",
            refused > 0 ? "partial" : "imported", "namespace", ns, "source_namespace",
            run->source_namespace, "written", (json_int_t)run->written, "bindings",
            (json_int_t)run->bindings_written, "operations", (json_int_t)run->operations_written,
            "already_present", (json_int_t)run->same, "refused", run->refused);
        if (format_print_json(doc) < 0)
            return ctl_fail("cannot write the result as JSON");
    } else {
        printf("imported into namespace %s from namespace %s (%s):\n"
               "written: %lu instance(s) with %lu binding(s) and %lu operation(s)\n"
               "already there, the same record: %lu\n"
               "refused, the id is taken: %zu\n",
               ns, run->source_namespace, path, run->written, run->bindings_written,
               run->operations_written, run->same, refused);
    }
    return refused > 0 ? CTL_EXIT_REFUSED : CTL_EXIT_OK;
}

int cmd_import(struct ctl *ctl)
{
    const char *path = ctl->opt.path;
    struct import_run run = {.ctl = ctl, .refused = json_array()};
    ctl_operator_name(run.by, sizeof run.by);
    struct osbq_error err = {0};
    char why[WHY_MAX] = "";
    int rc = CTL_EXIT_FAILURE;
    if (run.refused == NULL)
        return ctl_fail("out of memory");
    if (ctl->cfg->secret_key_file != NULL &&
        (run.ring = osbq_secrets_load(ctl->cfg->secret_key_file, &err)) == NULL) {
        rc = ctl_fail("OSBQ_SECRET_KEY_FILE (%s): %s", ctl->cfg->secret_key_file, err.text);
        goto out;
    }
    /* Read twice: a pipe would be gone after the first pass. */
    struct stat st;
    run.file = fopen(path, "re");
    if (run.file == NULL || fstat(fileno(run.file), &st) < 0 || !S_ISREG(st.st_mode)) {
        rc = ctl_fail("%s: %s", path,
                      run.file == NULL ? strerror(errno)
                                       : "not a regular file (import reads it twice)");
        goto out;
    }
    bool unknown_version = false;
    if (check_file(&run, &unknown_version, why, sizeof why) < 0) {
        rc = unknown_version
                 ? ctl_fail("%s: %s; nothing was written", path, why)
                 : ctl_fail("%s: truncated or corrupt file: %s; nothing was written", path, why);
        goto out;
    }
    if (ctl->opt.yes && write_file(&run, why, sizeof why) < 0) {
        rc = ctl_fail("%s: %s; the %lu instance(s) before it were written (importing the file "
                      "again reports them already there)",
                      path, why, run.written);
        goto out;
    }
    rc = report(&run, path);
out:
    if (run.file != NULL)
        (void)fclose(run.file);
    free(run.line);
    free(run.source_namespace);
    json_decref(run.refused);
    osbq_secrets_destroy(&run.ring);
    return rc;
}
