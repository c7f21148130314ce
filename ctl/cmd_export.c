/* osbq-ctl export: writes the namespace's instances (or one tenant's, or one instance) with their
 * bindings and finished operations as JSON Lines, one instance a line between a header and a
 * trailer, for osbq-ctl import into another namespace or Redis (docs/ctl.md, "export and
 * import"; docs/decisions/0055). It streams: instances are found with SCAN a step at a time and
 * each one's line is written as soon as it is read, so memory does not grow with the namespace
 * (only the list of instances skipped does). An instance an operation runs on is skipped and
 * named in the trailer: it cannot move while it changes. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "format.h"
#include "store.h"
#include "store_admin.h"

/* One export under way. */
struct export_run {
    struct ctl *ctl;          /* the command line, the store */
    FILE *out;                /* the file, or stdout */
    unsigned long instances;  /* lines written */
    unsigned long bindings;   /* bindings in them */
    unsigned long not_found;  /* --instance: no such instance (or gone) */
    json_t *skipped;          /* [{"instance_id", "operation_id", "reason"}] */
    bool failed;              /* Redis or the output failed: the walk stopped, no trailer */
    struct osbq_error err;    /* why, when failed */
    const char *failed_doing; /* what failed */
};

/* A record's fields as a JSON object of strings; NULL when a value is not UTF-8 (JSON cannot
 * carry it) or out of memory. */
static json_t *fields_object(const struct osbq_fields *fields)
{
    json_t *object = json_object();
    for (size_t i = 0; object != NULL && i < fields->count; i++) {
        json_t *value = json_string(fields->values[i]);
        if (value == NULL || json_object_set_new(object, fields->names[i], value) < 0) {
            json_decref(object);
            return NULL;
        }
    }
    return object;
}

/* An array of {"<id_name>": id, "record": {...}}; NULL as above. */
static json_t *records_array(const struct osbq_export_record *records, size_t count,
                             const char *id_name)
{
    json_t *array = json_array();
    for (size_t i = 0; array != NULL && i < count; i++) {
        json_t *fields = fields_object(&records[i].fields);
        json_t *id = fields != NULL ? json_string(records[i].id) : NULL;
        json_t *entry = id != NULL ? json_pack("{s:o, s:o}", id_name, id, "record", fields) : NULL;
        if (id == NULL)
            json_decref(fields);
        if (entry == NULL || json_array_append_new(array, entry) < 0) {
            json_decref(array);
            return NULL;
        }
    }
    return array;
}

/* The line of one instance, as docs/export-line.schema.json describes it; NULL as above. */
static json_t *instance_line(const char *instance_id, const struct osbq_export_instance *inst)
{
    json_t *id = json_string(instance_id);
    json_t *record = fields_object(&inst->record);
    json_t *bindings = records_array(inst->bindings, inst->binding_count, "binding_id");
    json_t *ops = records_array(inst->operations, inst->operation_count, "operation_id");
    if (id == NULL || record == NULL || bindings == NULL || ops == NULL) {
        json_decref(id);
        json_decref(record);
        json_decref(bindings);
        json_decref(ops);
        return NULL;
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "instance_id", id, "record", record, "bindings",
                     bindings, "operations", ops);
}

/* Writes one JSON value as a line. 0, or -1 (failed, said in run). */
static int write_line(struct export_run *run, json_t *line)
{
    if (json_dumpf(line, run->out, JSON_COMPACT) < 0 || fputc('\n', run->out) == EOF) {
        run->failed = true;
        run->failed_doing = "writing the export";
        osbq_error_set(&run->err, OSBQ_ERR_INTERNAL, "the output could not be written");
        return -1;
    }
    return 0;
}

/* Records an instance left out of the file, with a warning on stderr. */
static void skip(struct export_run *run, const char *instance_id, const char *operation,
                 const char *reason, const char *why)
{
    bool later = strcmp(reason, "operation_in_progress") == 0;
    ctl_say("instance %s skipped: %s%s", instance_id, why,
            later ? "; export it again later with --instance" : "");
    json_t *entry =
        json_pack("{s:s, s:s?, s:s}", "instance_id", instance_id, "operation_id",
                  operation != NULL && operation[0] != '\0' ? operation : NULL, "reason", reason);
    if (entry == NULL || json_array_append_new(run->skipped, entry) < 0) {
        run->failed = true;
        run->failed_doing = "listing the instances skipped";
        osbq_error_set(&run->err, OSBQ_ERR_INTERNAL, "out of memory");
    }
}

/* Whether the records are what import takes (docs/export-line.schema.json): an instance
 * provisioned or failed with its ids, service and plan, bindings bound or failed with their
 * ids. Records osbq wrote always are once no lock is held; one written by hand may not be, and
 * would make import refuse the whole file. NULL, or what is wrong. */
static const char *records_unusable(const char *instance_id,
                                    const struct osbq_export_instance *inst)
{
    const char *state = osbq_fields_get(&inst->record, "state");
    const char *iid = osbq_fields_get(&inst->record, "instance_id");
    if (state == NULL || (strcmp(state, "provisioned") != 0 && strcmp(state, "failed") != 0))
        return "its state is neither provisioned nor failed, with no operation running";
    if (iid == NULL || strcmp(iid, instance_id) != 0 ||
        osbq_fields_get(&inst->record, "service_id") == NULL ||
        osbq_fields_get(&inst->record, "plan_id") == NULL)
        return "its record lacks its instance_id, service_id or plan_id";
    for (size_t i = 0; i < inst->binding_count; i++) {
        const struct osbq_fields *b = &inst->bindings[i].fields;
        const char *bstate = osbq_fields_get(b, "state");
        const char *biid = osbq_fields_get(b, "instance_id");
        if (bstate == NULL || (strcmp(bstate, "bound") != 0 && strcmp(bstate, "failed") != 0) ||
            biid == NULL || strcmp(biid, instance_id) != 0)
            return "a binding's state is neither bound nor failed, or it lacks its instance_id";
    }
    return NULL;
}

/* Exports one instance: its line, or an entry in skipped. */
static void export_instance(struct export_run *run, const char *instance_id)
{
    struct osbq_export_instance inst = {0};
    char *running = NULL;
    struct osbq_error err = {0};
    int found = osbq_store_export_instance(run->ctl->store, instance_id, &inst, &running, &err);
    if (found < 0 && err.code == OSBQ_ERR_INVALID) {
        skip(run, instance_id, NULL, "unreadable", err.text);
    } else if (found < 0) {
        run->failed = true;
        run->failed_doing = "reading an instance";
        run->err = err;
    } else if (found == 0) {
        run->not_found++;
    } else if (found == 2) {
        char why[1200];
        (void)snprintf(why, sizeof why, "operation %s of it is running",
                       running[0] != '\0' ? running : "(a binding's)");
        skip(run, instance_id, running, "operation_in_progress", why);
    } else if (records_unusable(instance_id, &inst) != NULL) {
        skip(run, instance_id, NULL, "unusable", records_unusable(instance_id, &inst));
    } else {
        json_t *line = instance_line(instance_id, &inst);
        if (line == NULL) {
            skip(run, instance_id, NULL, "unreadable",
                 "a field's value is not UTF-8 text, which JSON cannot carry");
        } else if (write_line(run, line) == 0) {
            run->instances++;
            run->bindings += inst.binding_count;
        }
        json_decref(line);
    }
    free(running);
    osbq_export_instance_clear(&inst);
}

/* records_walk's visit: the instances of the scope, gone ones left out (tombstones). */
static bool visit_instance(struct osbq_fields *record, void *ctx)
{
    struct export_run *run = ctx;
    const char *id = osbq_fields_get(record, "instance_id");
    const char *state = osbq_fields_get(record, "state");
    const char *tenant = osbq_fields_get(record, "tenant");
    if (id == NULL || (state != NULL && strcmp(state, "gone") == 0))
        return true;
    if (run->ctl->opt.tenant != NULL &&
        (tenant == NULL || strcmp(tenant, run->ctl->opt.tenant) != 0))
        return true;
    export_instance(run, id);
    return !run->failed;
}

/* The file's first line: what it is and where it comes from. */
static json_t *header_line(const struct ctl *ctl)
{
    json_t *scope = ctl->opt.instance != NULL ? json_pack("{s:s, s:s}", "kind", "instance",
                                                          "instance_id", ctl->opt.instance)
                    : ctl->opt.tenant != NULL
                        ? json_pack("{s:s, s:s}", "kind", "tenant", "tenant", ctl->opt.tenant)
                        : json_pack("{s:s}", "kind", "namespace");
    return json_pack("{s:i, s:s, s:I, s:o, s:s}", "osbq_export", CTL_EXPORT_VERSION, "namespace",
                     ctl->cfg->namespace_, "exported_ms", (json_int_t)osbq_store_now_ms(), "scope",
                     scope, "producer", CTL_PROG " " OSBQ_VERSION);
}

/* Opens --output, readable by its owner only (binding results in it may be plaintext, from
 * before the keys), or takes stdout. NULL when it cannot be opened (said). */
static FILE *open_output(const struct ctl *ctl)
{
    if (ctl->opt.output == NULL)
        return stdout;
    int fd = open(ctl->opt.output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (out == NULL) {
        int why = errno;
        if (fd >= 0)
            (void)close(fd);
        ctl_say("cannot write %s: %s", ctl->opt.output, strerror(why));
    }
    return out;
}

/* What the export did: on stdout with --output (in JSON with --json), else on stderr. */
static void report(const struct export_run *run)
{
    const struct ctl *ctl = run->ctl;
    size_t skipped = json_array_size(run->skipped);
    if (ctl->opt.json && ctl->opt.output != NULL) {
        json_t *doc = json_pack("{s:s, s:s, s:I, s:I, s:O}", "file", ctl->opt.output, "namespace",
                                ctl->cfg->namespace_, "instances", (json_int_t)run->instances,
                                "bindings", (json_int_t)run->bindings, "skipped", run->skipped);
        if (format_print_json(doc) < 0)
            ctl_say("cannot write the result as JSON");
        return;
    }
    FILE *to = ctl->opt.output != NULL ? stdout : stderr;
    fprintf(to, "%s%lu instance(s) with %lu binding(s) exported from namespace %s to %s",
            ctl->opt.output != NULL ? "" : CTL_PROG ": ", run->instances, run->bindings,
            ctl->cfg->namespace_, ctl->opt.output != NULL ? ctl->opt.output : "stdout");
    if (skipped > 0)
        fprintf(to, "; %zu skipped (an operation of each runs): the file is partial", skipped);
    fputc('\n', to);
}

int cmd_export(struct ctl *ctl)
{
    struct export_run run = {.ctl = ctl, .skipped = json_array()};
    if (run.skipped == NULL)
        return ctl_fail("out of memory");
    run.out = open_output(ctl);
    if (run.out == NULL) {
        json_decref(run.skipped);
        return CTL_EXIT_FAILURE;
    }
    json_t *header = header_line(ctl);
    if (header == NULL) {
        run.failed = true;
        run.failed_doing = "writing the header";
        osbq_error_set(&run.err, OSBQ_ERR_INTERNAL,
                       "--instance or --tenant is not UTF-8 text, or out of memory");
    } else {
        (void)write_line(&run, header);
    }
    json_decref(header);
    if (!run.failed && ctl->opt.instance != NULL) {
        export_instance(&run, ctl->opt.instance);
    } else if (!run.failed) {
        struct osbq_error err = {0};
        if (records_walk(ctl, OSBQ_RECORD_INSTANCE, visit_instance, &run, NULL, &err) < 0) {
            run.failed = true;
            run.failed_doing = "reading the instances";
            run.err = err;
        }
    }
    /* The trailer says the file is whole: written only when the walk ended. */
    if (!run.failed) {
        json_t *trailer =
            json_pack("{s:b, s:I, s:I, s:O}", "end", 1, "instances", (json_int_t)run.instances,
                      "bindings", (json_int_t)run.bindings, "skipped", run.skipped);
        if (trailer == NULL) {
            run.failed = true;
            run.failed_doing = "writing the trailer";
            osbq_error_set(&run.err, OSBQ_ERR_INTERNAL, "out of memory");
        } else {
            (void)write_line(&run, trailer);
        }
        json_decref(trailer);
    }
    bool closed = run.out == stdout ? fflush(stdout) == 0 && !ferror(stdout)
                                    : !ferror(run.out) && fclose(run.out) == 0;
    int rc;
    if (run.failed) {
        rc = ctl_fail("%s: %s; the file has no trailer, import refuses it", run.failed_doing,
                      run.err.text);
    } else if (!closed) {
        rc = ctl_fail("cannot write %s", ctl->opt.output != NULL ? ctl->opt.output : "stdout");
    } else {
        report(&run);
        if (ctl->opt.instance != NULL && run.not_found > 0) {
            ctl_say("no instance %s in namespace %s (unknown, or gone)", ctl->opt.instance,
                    ctl->cfg->namespace_);
            rc = CTL_EXIT_NOT_FOUND;
        } else {
            rc = json_array_size(run.skipped) > 0 ? CTL_EXIT_REFUSED : CTL_EXIT_OK;
        }
    }
    json_decref(run.skipped);
    return rc;
}
