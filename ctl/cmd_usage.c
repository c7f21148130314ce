/* usage: instance-hours and bindings made and deleted per platform, tenant and plan between two
 * times, from the audit trail (docs/events.md) and the live instances. Each instance's life is
 * cut into segments of one plan: from its provision's (or import's) end, split at each update
 * that changed its plan, to its deprovision's (or purge's) end or --to. An instance that the
 * trail does not show beginning (made before its oldest event) begins at its record's
 * created_ms when it is still live, else at --from: the answer says from when the trail
 * reaches back ("events_from"). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "format.h"
#include "store_events.h"
#include "table.h"

#define USAGE_EVENTS_STEP 1000
#define MS_PER_HOUR       3600000.0

/* The accumulators: {"<platform>\t<tenant>\t<plan>": {"instance_ms", "instances",
 * "bindings_created", "bindings_deleted"}}; and each instance the trail showed: {"<id>":
 * {"plan", "platform", "tenant", "since" (usage_event says what it holds), "counted_in"}}. */
struct usage {
    const struct ctl *ctl;
    int64_t from_ms, to_ms;
    json_t *rows;
    json_t *instances;
    bool out_of_memory;
};

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "";
}

/* The row of platform, tenant and plan, made when new. */
static json_t *row_of(struct usage *u, const char *platform, const char *tenant, const char *plan)
{
    size_t len = strlen(platform) + strlen(tenant) + strlen(plan) + 3;
    char *key = malloc(len);
    if (key == NULL) {
        u->out_of_memory = true;
        return NULL;
    }
    (void)snprintf(key, len, "%s\t%s\t%s", platform, tenant, plan);
    json_t *row = json_object_get(u->rows, key);
    if (row == NULL) {
        row =
            json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "platform", platform, "tenant", tenant,
                      "plan", plan, "instance_ms", (json_int_t)0, "instances", (json_int_t)0,
                      "bindings_created", (json_int_t)0, "bindings_deleted", (json_int_t)0);
        if (row == NULL || json_object_set_new(u->rows, key, row) < 0) {
            u->out_of_memory = true;
            row = NULL;
        }
    }
    free(key);
    return row;
}

static void row_add(json_t *row, const char *field, json_int_t n)
{
    json_t *v = json_object_get(row, field);
    if (v != NULL)
        (void)json_integer_set(v, json_integer_value(v) + n);
}

/* Counts the instance's segment under its plan from its since to end_ms, clipped to the
 * window. */
static void segment_close(struct usage *u, json_t *inst, int64_t end_ms)
{
    int64_t since = (int64_t)json_integer_value(json_object_get(inst, "since"));
    if (since < 0)
        return;
    int64_t a = since > u->from_ms ? since : u->from_ms;
    int64_t b = end_ms < u->to_ms ? end_ms : u->to_ms;
    if (b <= a)
        return;
    json_t *row = row_of(u, str(inst, "platform"), str(inst, "tenant"), str(inst, "plan"));
    if (row == NULL)
        return;
    row_add(row, "instance_ms", (json_int_t)(b - a));
    /* Once per instance and row: the segments of one plan count one instance. */
    json_t *counted = json_object_get(inst, "counted_in");
    const char *key = str(inst, "plan");
    if (json_object_get(counted, key) == NULL) {
        row_add(row, "instances", 1);
        (void)json_object_set_new(counted, key, json_true());
    }
}

/* The state of instance id, made when new ("since" 0: not seen begin), its plan the one the
 * event says it had (an update's previous plan). */
static json_t *instance_of(struct usage *u, const char *id, const struct osbq_fields *e)
{
    json_t *inst = json_object_get(u->instances, id);
    if (inst != NULL)
        return inst;
    const char *plan = osbq_fields_get(e, "prev_plan");
    if (plan == NULL)
        plan = osbq_fields_get(e, "plan");
    const char *platform = osbq_fields_get(e, "platform"), *tenant = osbq_fields_get(e, "tenant");
    inst = json_pack("{s:s, s:s, s:s, s:I, s:{}}", "plan", plan ? plan : "", "platform",
                     platform ? platform : "default", "tenant", tenant ? tenant : "", "since",
                     (json_int_t)0, "counted_in");
    if (inst == NULL || json_object_set_new(u->instances, id, inst) < 0) {
        u->out_of_memory = true;
        return NULL;
    }
    return inst;
}

static bool is(const struct osbq_fields *e, const char *name, const char *value)
{
    const char *v = osbq_fields_get(e, name);
    return v != NULL && strcmp(v, value) == 0;
}

/* A binding made or deleted in the window: counted on its own event's platform, tenant and
 * plan (a binding's plan is its instance's). */
static void usage_binding(struct usage *u, const struct osbq_event *event, bool made)
{
    if (event->ms < u->from_ms || event->ms >= u->to_ms)
        return;
    const struct osbq_fields *e = &event->fields;
    const char *platform = osbq_fields_get(e, "platform"), *tenant = osbq_fields_get(e, "tenant");
    const char *plan = osbq_fields_get(e, "plan");
    json_t *row =
        row_of(u, platform ? platform : "default", tenant ? tenant : "", plan ? plan : "");
    if (row != NULL)
        row_add(row, made ? "bindings_created" : "bindings_deleted", 1);
}

/* One event of the trail, in time order. An instance's state: "since" > 0 while live, 0 when
 * the trail has not shown it yet (it may be from before the trail), -1 once known not live (its
 * provision failed, or it was deleted). */
static void usage_event(struct usage *u, const struct osbq_event *event)
{
    const struct osbq_fields *e = &event->fields;
    if (osbq_fields_get(e, "instance") == NULL)
        return;
    bool ended = is(e, "event", "ended"), ok = ended && is(e, "outcome", "succeeded");
    bool purged = is(e, "event", "operator") && is(e, "action", "purge");
    if (osbq_fields_get(e, "binding") != NULL) {
        if ((ok && is(e, "kind", "bind")) || (ok && is(e, "kind", "unbind")) || purged)
            usage_binding(u, event, ok && is(e, "kind", "bind"));
        return;
    }
    bool provision = ended && is(e, "kind", "provision");
    bool begins = (provision && ok) || (is(e, "event", "operator") && is(e, "action", "import"));
    bool changes = ok && is(e, "kind", "update") && osbq_fields_get(e, "prev_plan") != NULL;
    bool ends = (ok && is(e, "kind", "deprovision")) || purged;
    if (!provision && !begins && !changes && !ends)
        return;
    json_t *inst = instance_of(u, osbq_fields_get(e, "instance"), e);
    if (inst == NULL)
        return;
    int64_t since = (int64_t)json_integer_value(json_object_get(inst, "since"));
    /* Live, or not seen begin (it was there since before the trail, since 0): its segment
     * ends here. */
    if ((changes || ends) && since >= 0)
        segment_close(u, inst, event->ms);
    int64_t next = since;
    if (begins || (changes && since >= 0)) {
        const char *plan = osbq_fields_get(e, "plan");
        (void)json_object_set_new(inst, "plan", json_string(plan ? plan : ""));
        next = event->ms;
    }
    if (ends || (provision && !ok))
        next = -1;
    (void)json_object_set_new(inst, "since", json_integer((json_int_t)next));
}

/* The live instances the trail did not show: from their record's creation to --to. */
static bool live_record(struct osbq_fields *record, void *ctx)
{
    struct usage *u = ctx;
    const char *id = osbq_fields_get(record, "instance_id");
    const char *state = osbq_fields_get(record, "state");
    if (id == NULL || state == NULL || strcmp(state, "provisioned") != 0 ||
        json_object_get(u->instances, id) != NULL)
        return true;
    int64_t created = 0;
    (void)format_parse_int(osbq_fields_get(record, "created_ms"), &created);
    const char *plan = osbq_fields_get(record, "plan_id");
    const char *platform = osbq_fields_get(record, "platform");
    const char *tenant = osbq_fields_get(record, "tenant");
    json_t *inst = json_pack("{s:s, s:s, s:s, s:I, s:{}}", "plan", plan ? plan : "", "platform",
                             platform ? platform : "default", "tenant", tenant ? tenant : "",
                             "since", (json_int_t)created, "counted_in");
    if (inst == NULL) {
        u->out_of_memory = true;
        return false;
    }
    segment_close(u, inst, u->to_ms);
    json_decref(inst);
    return !u->out_of_memory;
}

/* Reads the trail up to --to; *oldest_ms the first event's time (0: none). 0, or an exit. */
static int read_trail(struct usage *u, int64_t *oldest_ms)
{
    char after[48] = "0";
    struct osbq_error err = {0};
    *oldest_ms = 0;
    for (;;) {
        struct osbq_event *events = NULL;
        size_t n = 0;
        if (osbq_store_events_read(u->ctl->store, after, u->to_ms, USAGE_EVENTS_STEP, 0, &events,
                                   &n, &err) < 0)
            return ctl_fail_store("reading the events", &err);
        for (size_t i = 0; i < n && !u->out_of_memory; i++) {
            if (*oldest_ms == 0)
                *oldest_ms = events[i].ms;
            usage_event(u, &events[i]);
            (void)snprintf(after, sizeof after, "%s", events[i].id);
        }
        osbq_events_free(events, n);
        if (u->out_of_memory)
            return ctl_fail("counting usage: out of memory");
        if (n < USAGE_EVENTS_STEP)
            return CTL_EXIT_OK;
    }
}

static int print_usage(const struct usage *u, json_t *answer)
{
    if (u->ctl->opt.json)
        return format_print_json(answer) < 0 ? ctl_fail("cannot write the usage as JSON")
                                             : CTL_EXIT_OK;
    static const struct table_column columns[] = {
        {"PLATFORM", 24, false},       {"TENANT", 40, false},  {"PLAN", 40, false},
        {"INSTANCE-HOURS", 0, true},   {"INSTANCES", 0, true}, {"BINDINGS-MADE", 0, true},
        {"BINDINGS-DELETED", 0, true},
    };
    struct table *table = table_new(columns, sizeof columns / sizeof columns[0]);
    int rc = table != NULL ? CTL_EXIT_OK : ctl_fail("out of memory");
    size_t i;
    json_t *row;
    json_array_foreach (json_object_get(answer, "rows"), i, row) {
        char hours[32], count[3][24], plan[256];
        (void)snprintf(hours, sizeof hours, "%.2f",
                       json_real_value(json_object_get(row, "instance_hours")));
        const char *fields[] = {"instances", "bindings_created", "bindings_deleted"};
        for (size_t k = 0; k < 3; k++)
            (void)snprintf(count[k], sizeof count[k], "%" JSON_INTEGER_FORMAT,
                           json_integer_value(json_object_get(row, fields[k])));
        const char *name = ctl_catalog_name(u->ctl, str(row, "plan"));
        (void)snprintf(plan, sizeof plan, "%s", name != NULL ? name : str(row, "plan"));
        const char *cells[] = {
            str(row, "platform"), str(row, "tenant"), plan, hours, count[0], count[1], count[2]};
        if (rc == CTL_EXIT_OK && table_add(table, cells) < 0)
            rc = ctl_fail("out of memory");
    }
    if (rc == CTL_EXIT_OK) {
        printf("from %s to %s (events from %s)\n", str(answer, "from"), str(answer, "to"),
               str(answer, "events_from"));
        table_print(table, stdout);
    }
    table_destroy(&table);
    json_decref(answer);
    return rc;
}

static int row_order(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    static const char *const keys[] = {"platform", "tenant", "plan"};
    for (size_t i = 0; i < 3; i++) {
        int order = strcmp(str(x, keys[i]), str(y, keys[i]));
        if (order != 0)
            return order;
    }
    return 0;
}

/* The rows as an array sorted by platform, tenant and plan, instance_ms as hours too; NULL
 * when out of memory. */
static json_t *rows_sorted(json_t *rows)
{
    size_t n = json_object_size(rows), i = 0;
    json_t **list = calloc(n > 0 ? n : 1, sizeof *list);
    json_t *out = json_array();
    const char *key;
    json_t *row;
    json_object_foreach (rows, key, row) {
        (void)key;
        if (list != NULL)
            list[i++] = row;
    }
    if (list != NULL)
        qsort(list, n, sizeof *list, row_order);
    bool ok = list != NULL && out != NULL;
    for (i = 0; ok && i < n; i++) {
        json_int_t ms = json_integer_value(json_object_get(list[i], "instance_ms"));
        ok = json_object_set_new(list[i], "instance_hours", json_real((double)ms / MS_PER_HOUR)) ==
                 0 &&
             json_array_append(out, list[i]) == 0;
    }
    free(list);
    if (!ok) {
        json_decref(out);
        return NULL;
    }
    return out;
}

int cmd_usage(struct ctl *ctl)
{
    int64_t now_ms = osbq_store_now_ms();
    struct usage u = {.ctl = ctl, .to_ms = now_ms};
    if (ctl->opt.since == NULL || format_parse_time(ctl->opt.since, now_ms, &u.from_ms) < 0 ||
        (ctl->opt.until != NULL && format_parse_time(ctl->opt.until, now_ms, &u.to_ms) < 0) ||
        u.to_ms <= u.from_ms) {
        ctl_say("usage needs --from T (and --to T after it, default now): RFC 3339 UTC, epoch "
                "ms, or an age such as 30d");
        return CTL_EXIT_USAGE;
    }
    u.rows = json_object();
    u.instances = json_object();
    int64_t oldest_ms = 0;
    int rc = u.rows != NULL && u.instances != NULL ? read_trail(&u, &oldest_ms)
                                                   : ctl_fail("out of memory");
    /* The instances live as the trail last saw them, to --to (one the trail saw only through a
     * binding or a failed update is from before it: its record, below, says since when). */
    const char *id;
    json_t *inst;
    json_object_foreach (u.instances, id, inst) {
        (void)id;
        if (rc == CTL_EXIT_OK && json_integer_value(json_object_get(inst, "since")) > 0)
            segment_close(&u, inst, u.to_ms);
    }
    struct osbq_error err = {0};
    if (rc == CTL_EXIT_OK &&
        records_walk(ctl, OSBQ_RECORD_INSTANCE, live_record, &u, NULL, &err) < 0)
        rc = ctl_fail_store("reading the instances", &err);
    if (rc == CTL_EXIT_OK && u.out_of_memory)
        rc = ctl_fail("counting usage: out of memory");
    json_t *rows = rc == CTL_EXIT_OK ? rows_sorted(u.rows) : NULL;
    json_decref(u.rows);
    json_decref(u.instances);
    if (rc != CTL_EXIT_OK)
        return rc;
    char from[FORMAT_TEXT_MAX], to[FORMAT_TEXT_MAX], oldest[FORMAT_TEXT_MAX];
    (void)format_time(u.from_ms, true, from, sizeof from);
    (void)format_time(u.to_ms, true, to, sizeof to);
    (void)format_time(oldest_ms > 0 ? oldest_ms : -1, true, oldest, sizeof oldest);
    if (oldest_ms == 0 || oldest_ms > u.from_ms)
        ctl_say("the audit trail begins at %s, after --from: instances deleted before then are "
                "not counted",
                oldest);
    json_t *answer = rows != NULL ? json_pack("{s:s, s:s, s:s, s:o}", "from", from, "to", to,
                                              "events_from", oldest, "rows", rows)
                                  : NULL;
    if (answer == NULL)
        return ctl_fail("out of memory");
    return print_usage(&u, answer);
}
