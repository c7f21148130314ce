/* operation, fail and resend: one operation, its history, and the two repairs an operator may
 * make to a stuck one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "format.h"
#include "table.h"

#define FAIL_DESCRIPTION "Failed by an operator."

/* The fields the detail view shows in its own rows, or never (keys of other records). */
static const char *const shown_fields[] = {
    "kind",         "state",           "instance",
    "binding",      "service_id",      "plan_id",
    "prev_plan_id", "worker",          "attempt",
    "claims",       "resends",         "description",
    "created_ms",   "started_ms",      "finished_ms",
    "lease_until",  "instance_usable", "update_repeatable",
    "instance_key", "binding_key",     "bindings_key",
    "steps",        "due_ms",          "halted_by",
    "after",
};

static bool field_shown(const char *name)
{
    for (size_t i = 0; i < sizeof shown_fields / sizeof shown_fields[0]; i++)
        if (strcmp(shown_fields[i], name) == 0)
            return true;
    return false;
}

static int64_t field_int(const struct osbq_fields *op, const char *name)
{
    int64_t value = -1;
    return format_parse_int(osbq_fields_get(op, name), &value) ? value : -1;
}

static bool finished(const struct osbq_fields *op)
{
    const char *state = osbq_fields_get(op, "state");
    return state == NULL || (strcmp(state, "queued") != 0 && strcmp(state, "running") != 0 &&
                             strcmp(state, "waiting") != 0);
}

/* "provision of instance I" or "bind of binding B of instance I", for messages. */
static void operation_what(const struct osbq_fields *op, char *buf, size_t size)
{
    const char *kind = osbq_fields_get(op, "kind"), *binding = osbq_fields_get(op, "binding");
    const char *instance = osbq_fields_get(op, "instance");
    if (binding != NULL)
        (void)snprintf(buf, size, "%s of binding %s of instance %s", kind ? kind : "?", binding,
                       instance ? instance : "?");
    else
        (void)snprintf(buf, size, "%s of instance %s", kind ? kind : "?",
                       instance ? instance : "?");
}

/* "running on worker W", or the state, for messages. */
static void operation_was(const struct osbq_fields *op, char *buf, size_t size)
{
    const char *state = osbq_fields_get(op, "state"), *worker = osbq_fields_get(op, "worker");
    if (state != NULL && strcmp(state, "running") == 0 && worker != NULL)
        (void)snprintf(buf, size, "running on worker %s", worker);
    else
        (void)snprintf(buf, size, "%s", state != NULL ? state : "in no state");
}

/* Reads the operation: 1 with *op and *history (the caller frees them), 0 when it is unknown,
 * -1 when Redis failed; the last two with a message printed. */
static int read_operation(struct ctl *ctl, struct osbq_fields *op, char ***history, size_t *count)
{
    struct osbq_error err = {0};
    int found =
        osbq_store_operation_get(ctl->store, ctl->opt.operation_id, op, history, count, &err);
    if (found < 0) {
        ctl_fail_store("reading the operation", &err);
        return -1;
    }
    if (found == 0)
        ctl_say("no operation %s in namespace %s (unknown, or finished more than "
                "OSBQ_RETENTION_S = %u s ago)",
                ctl->opt.operation_id, ctl->cfg->namespace_, ctl->cfg->retention_s);
    return found;
}

/* The history as a JSON array: each event an object, or its text when it is not one. */
static json_t *history_json(char **history, size_t count)
{
    json_t *array = json_array();
    for (size_t i = 0; array != NULL && i < count; i++) {
        json_t *event = json_loads(history[i], 0, NULL);
        if (!json_is_object(event)) {
            json_decref(event);
            event = format_json_string(history[i]);
        }
        if (json_array_append_new(array, event) < 0) {
            json_decref(array);
            array = NULL;
        }
    }
    return array;
}

static int print_json(struct ctl *ctl, const struct osbq_fields *op, char **history, size_t count)
{
    json_t *root = json_object(), *fields = format_fields_json(op);
    if (root == NULL || fields == NULL ||
        json_object_set_new(root, "operation_id", format_json_string(ctl->opt.operation_id)) < 0 ||
        json_object_update(root, fields) < 0 ||
        json_object_set_new(root, "history", history_json(history, count)) < 0) {
        json_decref(root);
        root = NULL;
    }
    json_decref(fields);
    return format_print_json(root) < 0 ? ctl_fail("cannot write the operation as JSON")
                                       : CTL_EXIT_OK;
}

/* The detail rows: label, value. Values live in the caller's text buffers or in op. */
struct detail {
    struct table *table;
    int rc;
};

static void detail_add(struct detail *d, const char *label, const char *value)
{
    const char *cells[] = {label, value};
    if (d->rc == CTL_EXIT_OK && table_add(d->table, cells) < 0)
        d->rc = ctl_fail("out of memory");
}

/* A row for the moment ms (none when < 0): its time, and how far it is from now; past_word
 * comes before the duration of a moment already past ("ran out 3s ago"). */
static void detail_moment(struct detail *d, const char *label, int64_t ms, int64_t now,
                          const char *past_word)
{
    if (ms < 0)
        return;
    char time_text[FORMAT_TEXT_MAX], span[FORMAT_TEXT_MAX], line[160];
    format_time(ms, true, time_text, sizeof time_text);
    if (ms >= now)
        (void)snprintf(line, sizeof line, "%s (in %s)", time_text,
                       format_duration(ms - now, span, sizeof span));
    else
        (void)snprintf(line, sizeof line, "%s (%s%s ago)", time_text, past_word,
                       format_duration(now - ms, span, sizeof span));
    detail_add(d, label, line);
}

/* The times and durations rows. */
static void detail_times(struct detail *d, const struct osbq_fields *op)
{
    char time_text[FORMAT_TEXT_MAX], span[3][FORMAT_TEXT_MAX], line[160];
    int64_t created = field_int(op, "created_ms"), started = field_int(op, "started_ms");
    int64_t ended = field_int(op, "finished_ms"), lease = field_int(op, "lease_until");
    int64_t now = osbq_store_now_ms();
    detail_add(d, "created", format_time(created, true, time_text, sizeof time_text));
    if (started >= 0) {
        (void)snprintf(
            line, sizeof line, "%s (after %s in the queue)",
            format_time(started, true, time_text, sizeof time_text),
            format_duration(created >= 0 ? started - created : -1, span[0], sizeof span[0]));
        detail_add(d, "started", line);
    } else {
        detail_add(d, "started", NULL);
    }
    if (ended >= 0) {
        (void)snprintf(
            line, sizeof line, "%s (ran %s; %s in all)",
            format_time(ended, true, time_text, sizeof time_text),
            format_duration(started >= 0 ? ended - started : -1, span[0], sizeof span[0]),
            format_duration(created >= 0 ? ended - created : -1, span[1], sizeof span[1]));
        detail_add(d, "finished", line);
    } else {
        detail_add(d, "finished", NULL);
        detail_add(d, "age",
                   format_duration(created >= 0 ? now - created : -1, span[2], sizeof span[2]));
    }
    /* A waiting operation: when its next step is due. */
    const char *state = osbq_fields_get(op, "state");
    if (state != NULL && strcmp(state, "waiting") == 0)
        detail_moment(d, "next step", field_int(op, "due_ms"), now, "");
    detail_moment(d, "lease until", lease, now, "ran out ");
}

static void detail_history(struct detail *d, char **history, size_t count)
{
    static const struct table_column columns[] = {
        {"TIME", 0, false},   {"EVENT", 0, false},       {"WORKER", 40, false},
        {"ATTEMPT", 0, true}, {"DESCRIPTION", 0, false},
    };
    struct table *events = table_new(columns, sizeof columns / sizeof columns[0]);
    if (events == NULL) {
        d->rc = ctl_fail("out of memory");
        return;
    }
    for (size_t i = 0; d->rc == CTL_EXIT_OK && i < count; i++) {
        json_t *event = json_loads(history[i], 0, NULL);
        char time_text[FORMAT_TEXT_MAX], attempt[FORMAT_TEXT_MAX];
        json_t *ms = json_object_get(event, "ms");
        const char *cells[] = {
            format_time(json_is_integer(ms) ? (int64_t)json_integer_value(ms) : -1, true, time_text,
                        sizeof time_text),
            json_string_value(json_object_get(event, "event")),
            json_string_value(json_object_get(event, "worker")),
            format_json_cell(json_object_get(event, "attempt"), attempt, sizeof attempt),
            /* An event that is not a JSON object is shown as it is. */
            json_is_object(event) ? json_string_value(json_object_get(event, "description"))
                                  : history[i],
        };
        if (table_add(events, cells) < 0)
            d->rc = ctl_fail("out of memory");
        json_decref(event);
    }
    if (d->rc == CTL_EXIT_OK) {
        printf("\nhistory (%zu event%s, oldest first):\n", count, count == 1 ? "" : "s");
        if (count > 0)
            table_print(events, stdout);
    }
    table_destroy(&events);
}

static int print_text(struct ctl *ctl, const struct osbq_fields *op, char **history, size_t count)
{
    static const struct table_column columns[] = {{NULL, 0, false}, {NULL, 0, false}};
    struct detail d = {.table = table_new(columns, 2), .rc = CTL_EXIT_OK};
    if (d.table == NULL)
        return ctl_fail("out of memory");
    char plan[256], flag[2][8];
    const char *plan_id = osbq_fields_get(op, "plan_id");
    const char *prev = osbq_fields_get(op, "prev_plan_id");
    if (prev != NULL && prev[0] != '\0' && plan_id != NULL && strcmp(prev, plan_id) != 0) {
        (void)snprintf(plan, sizeof plan, "%s (was %s)", plan_id, prev);
        plan_id = plan;
    }
    detail_add(&d, "operation", ctl->opt.operation_id);
    detail_add(&d, "kind", osbq_fields_get(op, "kind"));
    detail_add(&d, "state", osbq_fields_get(op, "state"));
    detail_add(&d, "instance", osbq_fields_get(op, "instance"));
    if (osbq_fields_get(op, "binding") != NULL)
        detail_add(&d, "binding", osbq_fields_get(op, "binding"));
    detail_add(&d, "service", osbq_fields_get(op, "service_id"));
    detail_add(&d, "plan", plan_id);
    detail_add(&d, "worker", osbq_fields_get(op, "worker"));
    detail_add(&d, "attempt", osbq_fields_get(op, "attempt"));
    detail_add(&d, "claims", osbq_fields_get(op, "claims"));
    detail_add(&d, "resends", osbq_fields_get(op, "resends"));
    detail_add(&d, "steps", osbq_fields_get(op, "steps"));
    detail_add(&d, "description", osbq_fields_get(op, "description"));
    /* A creation a delete halted, and the delete that waits for it (docs/decisions/0051). */
    if (osbq_fields_get(op, "halted_by") != NULL)
        detail_add(&d, "halted by", osbq_fields_get(op, "halted_by"));
    if (osbq_fields_get(op, "after") != NULL)
        detail_add(&d, "after", osbq_fields_get(op, "after"));
    detail_times(&d, op);
    const char *flags[] = {"instance_usable", "update_repeatable"};
    for (size_t i = 0; i < 2; i++) {
        const char *value = osbq_fields_get(op, flags[i]);
        if (value != NULL) {
            (void)snprintf(flag[i], sizeof flag[i], "%s", strcmp(value, "1") == 0 ? "yes" : "no");
            detail_add(&d, i == 0 ? "usable" : "repeatable", flag[i]);
        }
    }
    for (size_t i = 0; i < op->count; i++)
        if (!field_shown(op->names[i]))
            detail_add(&d, op->names[i], op->values[i]);
    if (d.rc == CTL_EXIT_OK)
        table_print(d.table, stdout);
    table_destroy(&d.table);
    if (d.rc == CTL_EXIT_OK)
        detail_history(&d, history, count);
    return d.rc;
}

int cmd_operation(struct ctl *ctl)
{
    struct osbq_fields op = {0};
    char **history = NULL;
    size_t count = 0;
    int found = read_operation(ctl, &op, &history, &count);
    if (found <= 0)
        return found < 0 ? CTL_EXIT_FAILURE : CTL_EXIT_NOT_FOUND;
    int rc =
        ctl->opt.json ? print_json(ctl, &op, history, count) : print_text(ctl, &op, history, count);
    osbq_fields_clear(&op);
    osbq_store_strings_free(history);
    return rc;
}

/* Prints the outcome of fail or resend: {"result", "operation_id", and state or
 * previous_state, description} in JSON, else text on stdout (success) or stderr (nothing
 * done). Returns rc. */
static int report(struct ctl *ctl, int rc, const char *result, const char *state,
                  const char *description, const char *text)
{
    if (ctl->opt.json) {
        /* "o*" leaves a key out when its value is NULL. */
        json_t *root = json_pack("{s:s, s:o, s:o*, s:o*}", "result", result, "operation_id",
                                 format_json_string(ctl->opt.operation_id),
                                 rc == CTL_EXIT_OK ? "previous_state" : "state",
                                 state != NULL ? format_json_string(state) : NULL, "description",
                                 description != NULL ? format_json_string(description) : NULL);
        if (format_print_json(root) < 0)
            return ctl_fail("cannot write the result as JSON");
    }
    if (text != NULL) {
        if (rc == CTL_EXIT_OK && !ctl->opt.json)
            printf("%s\n", text);
        else if (rc != CTL_EXIT_OK)
            ctl_say("%s", text);
    }
    return rc;
}

/* Reads the operation for a repair: CTL_EXIT_OK with *op when it is unfinished, else the exit
 * status, its report printed. */
static int read_unfinished(struct ctl *ctl, struct osbq_fields *op)
{
    char **history = NULL;
    size_t count = 0;
    int found = read_operation(ctl, op, &history, &count);
    osbq_store_strings_free(history);
    if (found < 0)
        return CTL_EXIT_FAILURE;
    if (found == 0)
        return report(ctl, CTL_EXIT_NOT_FOUND, "not_found", NULL, NULL, NULL);
    if (finished(op)) {
        char text[256];
        const char *state = osbq_fields_get(op, "state");
        (void)snprintf(text, sizeof text, "nothing to do: operation %s already finished (%s)",
                       ctl->opt.operation_id, state ? state : "no state");
        int rc = report(ctl, CTL_EXIT_NOT_FOUND, "already_finished", state, NULL, text);
        osbq_fields_clear(op);
        return rc;
    }
    return CTL_EXIT_OK;
}

/* The answer to a repair the store did not apply (done < 1): it failed while doing it, or the
 * operation finished meanwhile (the store answered 0). */
static int not_repaired(struct ctl *ctl, int done, const char *doing, const struct osbq_error *err)
{
    if (done < 0)
        return ctl_fail_store(doing, err);
    char text[256];
    (void)snprintf(text, sizeof text, "nothing to do: operation %s finished meanwhile",
                   ctl->opt.operation_id);
    return report(ctl, CTL_EXIT_NOT_FOUND, "already_finished", NULL, NULL, text);
}

/* The report of a repair the store applied to op: "operation <id> (<what>) was <state>; " and
 * outcome, as result, with description. */
static int repaired(struct ctl *ctl, const struct osbq_fields *op, const char *result,
                    const char *description, const char *outcome)
{
    char what[512], was[128], text[2800];
    operation_what(op, what, sizeof what);
    operation_was(op, was, sizeof was);
    (void)snprintf(text, sizeof text, "operation %s (%s) was %s; %s", ctl->opt.operation_id, what,
                   was, outcome);
    return report(ctl, CTL_EXIT_OK, result, osbq_fields_get(op, "state"), description, text);
}

int cmd_fail(struct ctl *ctl)
{
    struct osbq_fields op = {0};
    struct osbq_error err = {0};
    int rc = read_unfinished(ctl, &op);
    if (rc != CTL_EXIT_OK)
        return rc;
    const char *description = ctl->opt.description ? ctl->opt.description : FAIL_DESCRIPTION;
    char by[256];
    ctl_operator_name(by, sizeof by);
    int done = osbq_store_operator_fail(ctl->store, ctl->opt.operation_id, description, by, &err);
    if (done < 1) {
        rc = not_repaired(ctl, done, "failing the operation", &err);
    } else {
        char outcome[2000];
        (void)snprintf(outcome, sizeof outcome,
                       "it is now failed: %s\n"
                       "Its lock is free and the requests waiting for it were answered.",
                       description);
        rc = repaired(ctl, &op, "failed", description, outcome);
    }
    osbq_fields_clear(&op);
    return rc;
}

int cmd_resend(struct ctl *ctl)
{
    struct osbq_fields op = {0};
    struct osbq_error err = {0};
    int rc = read_unfinished(ctl, &op);
    if (rc != CTL_EXIT_OK)
        return rc;
    char by[256];
    ctl_operator_name(by, sizeof by);
    int done = osbq_store_operator_resend(ctl->store, ctl->opt.operation_id, by, &err);
    if (done < 1) {
        rc = not_repaired(ctl, done, "resending the operation", &err);
    } else if (done == 2) {
        char text[600];
        (void)snprintf(text, sizeof text,
                       "refused: operation %s is running and its worker renews its lease, so "
                       "resending it would run it twice at once. Wait for the lease to run out (a "
                       "dead worker's does, and the recovery loop resends it by itself), or fail "
                       "it.",
                       ctl->opt.operation_id);
        rc = report(ctl, CTL_EXIT_REFUSED, "refused", osbq_fields_get(&op, "state"), NULL, text);
    } else {
        rc = repaired(ctl, &op, "resent", NULL,
                      "it is queued again with its claims reset.\n"
                      "The next recovery pass of a gateway sends it to a worker with a free slot.");
    }
    osbq_fields_clear(&op);
    return rc;
}
