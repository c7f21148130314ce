/* osbq-ctl purge: the broker forgets an instance (with its bindings) or a binding without
 * calling any backend (docs/ctl.md, docs/decisions/0053). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "format.h"
#include "store_admin.h"

/* How often --force fails an operation and asks again: a platform may begin another meanwhile
 * (a halted creation's delete, a new bind). */
#define PURGE_FORCE_ROUNDS 4

#define PURGE_DESCRIPTION                                                                          \
    "Failed: an operator purged the records (osbq-ctl purge --force); the backend was not "        \
    "called."

struct binding_search {
    const char *binding_id;
    char *instance_id; /* found: the binding's instance (owned) */
};

static bool find_binding(struct osbq_fields *record, void *ctx)
{
    struct binding_search *s = ctx;
    const char *bid = osbq_fields_get(record, "binding_id");
    const char *iid = osbq_fields_get(record, "instance_id");
    if (bid == NULL || iid == NULL || strcmp(bid, s->binding_id) != 0)
        return true;
    s->instance_id = strdup(iid);
    return false;
}

/* The instance of the binding to purge: --instance, or found by walking the bindings (a scan:
 * seconds at a million records). CTL_EXIT_OK with *iid (owned), else the exit status. */
static int binding_instance(struct ctl *ctl, char **iid)
{
    if (ctl->opt.instance != NULL) {
        *iid = strdup(ctl->opt.instance);
        return *iid != NULL ? CTL_EXIT_OK : ctl_fail("out of memory");
    }
    struct binding_search search = {.binding_id = ctl->opt.record_id};
    struct osbq_error err = {0};
    if (records_walk(ctl, OSBQ_RECORD_BINDING, find_binding, &search, NULL, &err) < 0)
        return ctl_fail_store("looking for the binding", &err);
    *iid = search.instance_id;
    return CTL_EXIT_OK;
}

/* Prints the outcome: {"result", "kind", "id", "instance_id", "bindings", "operation_id",
 * "failed_operations"} in JSON, else text on stdout (done) or stderr. Returns rc. */
static int report(struct ctl *ctl, int rc, const char *result, const char *iid, size_t bindings,
                  const char *operation, json_t *failed, const char *text)
{
    if (ctl->opt.json) {
        json_t *root =
            json_pack("{s:s, s:s, s:o, s:o*, s:o*, s:o*, s:O}", "result", result, "kind",
                      ctl->opt.record_kind, "id", format_json_string(ctl->opt.record_id),
                      "instance_id", iid != NULL ? format_json_string(iid) : NULL, "bindings",
                      rc == CTL_EXIT_OK && strcmp(ctl->opt.record_kind, "instance") == 0
                          ? json_integer((json_int_t)bindings)
                          : NULL,
                      "operation_id", operation != NULL ? format_json_string(operation) : NULL,
                      "failed_operations", failed);
        if (format_print_json(root) < 0)
            rc = ctl_fail("cannot write the result as JSON");
    }
    if (rc == CTL_EXIT_OK && !ctl->opt.json)
        printf("%s\n", text);
    else if (rc != CTL_EXIT_OK)
        ctl_say("%s", text);
    return rc;
}

/* --force: fails operation (and the creation it waits for, a halted one) as operator by, adding
 * their ids to failed. 0, or -1 (said). */
static int fail_running(struct ctl *ctl, const char *operation, const char *by, json_t *failed)
{
    struct osbq_fields op = {0};
    char **history = NULL;
    size_t count = 0;
    struct osbq_error err = {0};
    if (osbq_store_operation_get(ctl->store, operation, &op, &history, &count, &err) < 0) {
        (void)ctl_fail_store("reading the operation that runs", &err);
        return -1;
    }
    osbq_store_strings_free(history);
    const char *ids[2] = {osbq_fields_get(&op, "after"), operation};
    int rc = 0;
    for (size_t i = 0; i < 2 && rc == 0; i++) {
        if (ids[i] == NULL)
            continue;
        int done = osbq_store_operator_fail(ctl->store, ids[i], PURGE_DESCRIPTION, by, &err);
        if (done < 0) {
            (void)ctl_fail_store("failing the operation that runs", &err);
            rc = -1;
        } else if (done > 0) {
            (void)json_array_append_new(failed, json_string(ids[i]));
        }
    }
    osbq_fields_clear(&op);
    return rc;
}

int cmd_purge(struct ctl *ctl)
{
    bool binding = strcmp(ctl->opt.record_kind, "binding") == 0;
    char *iid = NULL;
    if (binding) {
        int rc = binding_instance(ctl, &iid);
        if (rc != CTL_EXIT_OK)
            return rc;
    } else if ((iid = strdup(ctl->opt.record_id)) == NULL) {
        return ctl_fail("out of memory");
    }
    json_t *failed = json_array();
    char by[256], text[3000];
    ctl_operator_name(by, sizeof by);
    struct osbq_purge purge = {0};
    struct osbq_error err = {0};
    int found = iid != NULL ? 2 : 0;
    for (unsigned round = 0; iid != NULL && failed != NULL && round < PURGE_FORCE_ROUNDS; round++) {
        free(purge.running_operation);
        found = osbq_store_purge(ctl->store, iid, binding ? ctl->opt.record_id : NULL, by, &purge,
                                 &err);
        if (found != 2 || !ctl->opt.force ||
            fail_running(ctl, purge.running_operation, by, failed) < 0)
            break;
    }
    int rc;
    if (failed == NULL) {
        rc = ctl_fail("out of memory");
    } else if (found < 0) {
        rc = ctl_fail_store("purging", &err);
    } else if (found == 0) {
        (void)snprintf(text, sizeof text,
                       "nothing to purge: no %s %s in namespace %s (unknown, gone already, or gone "
                       "more than OSBQ_RETENTION_S = %u s ago)",
                       ctl->opt.record_kind, ctl->opt.record_id, ctl->cfg->namespace_,
                       ctl->cfg->retention_s);
        rc = report(ctl, CTL_EXIT_NOT_FOUND, "not_found", iid, 0, NULL, failed, text);
    } else if (found == 2) {
        (void)snprintf(text, sizeof text,
                       "refused: operation %s of %s %s is running. Wait for it to end, or add "
                       "--force to fail it first (its worker stops the step at its next lease "
                       "renewal; the backend is not called to undo it).",
                       purge.running_operation, ctl->opt.record_kind, ctl->opt.record_id);
        rc =
            report(ctl, CTL_EXIT_REFUSED, "refused", iid, 0, purge.running_operation, failed, text);
    } else {
        if (binding)
            (void)snprintf(text, sizeof text,
                           "binding %s of instance %s purged: no backend was called (its "
                           "credentials, if any, still work where the backend made them).\n"
                           "A platform's DELETE of it now gets 410, a GET 404.",
                           ctl->opt.record_id, iid);
        else
            (void)snprintf(text, sizeof text,
                           "instance %s purged with its %zu binding(s): no backend was called; "
                           "its quotas were given back.\n"
                           "A platform's DELETE of it now gets 410, a GET 404.",
                           iid, purge.bindings);
        rc = report(ctl, CTL_EXIT_OK, "purged", iid, purge.bindings, NULL, failed, text);
    }
    free(purge.running_operation);
    json_decref(failed);
    free(iid);
    return rc;
}
