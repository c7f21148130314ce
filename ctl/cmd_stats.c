/* stats: records by state (the count the scripts keep, or a full walk), the operation queue,
 * live processes, their slots and
 * the workers their load needs, Redis itself, and the tenants with the most operations in
 * progress (a walk of the queue and of the tenants' polls). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capacity.h"
#include "clock.h"
#include "ctl.h"
#include "format.h"
#include "store_counts.h"
#include "table.h"
#include "tenant_work.h"

/* Most entries the tenants' count reads (queue members and tenants of the polls' index): past
 * it, the figures are partial and say so. */
#define TENANTS_READ_MAX 100000
/* Members asked of Redis per step of those walks. */
#define TENANTS_STEP 1000

/* Records of one kind counted by state. */
struct state_counts {
    const struct ctl *ctl; /* the catalog: instances outdated */
    json_t *by_state;      /* {"state": count}, owned */
    json_int_t total;      /* records seen */
    json_int_t outdated;   /* instances: behind their plan's maintenance_info */
    bool out_of_memory;    /* the walk stopped for want of memory */
};

static bool count_record(struct osbq_fields *record, void *ctx)
{
    struct state_counts *counts = ctx;
    const char *state = osbq_fields_get(record, "state");
    if (state == NULL || state[0] == '\0')
        state = "unknown";
    json_t *n = json_object_get(counts->by_state, state);
    int rc = n != NULL ? json_integer_set(n, json_integer_value(n) + 1)
                       : json_object_set_new(counts->by_state, state, json_integer(1));
    if (rc < 0) {
        counts->out_of_memory = true;
        return false;
    }
    counts->total++;
    if (counts->ctl != NULL && ctl_instance_outdated(counts->ctl, record))
        counts->outdated++;
    return true;
}

/* Walks every record of kind into {"total": n, "by_state": {...}} (a new reference in *out). */
static int count_records(struct ctl *ctl, enum osbq_record_kind kind, json_t **out)
{
    const char *plural = kind == OSBQ_RECORD_INSTANCE ? "instances" : "bindings";
    struct state_counts counts = {.by_state = json_object(),
                                  .ctl = kind == OSBQ_RECORD_INSTANCE ? ctl : NULL};
    struct osbq_error err = {0};
    if (counts.by_state == NULL)
        return ctl_fail("out of memory");
    if (records_walk(ctl, kind, count_record, &counts, NULL, &err) < 0) {
        json_decref(counts.by_state);
        char what[64];
        (void)snprintf(what, sizeof what, "counting %s", plural);
        return ctl_fail_store(what, &err);
    }
    /* Outdated: counted only with a catalog to compare with (null otherwise). */
    *out = json_pack("{s:I, s:o}", "total", counts.total, "by_state", counts.by_state);
    if (*out != NULL && kind == OSBQ_RECORD_INSTANCE &&
        json_object_set_new(*out, "outdated",
                            ctl->catalog != NULL ? json_integer(counts.outdated) : json_null()) <
            0) {
        json_decref(*out);
        *out = NULL;
    }
    if (counts.out_of_memory || *out == NULL) {
        json_decref(*out);
        return ctl_fail("counting %s: out of memory", plural);
    }
    return CTL_EXIT_OK;
}

/* Records of one kind counted by state from the live records' count the scripts keep
 * (store_counts.h): {"total": n, "by_state": {...}, "outdated": n} as count_records makes it,
 * without the gone records (tombstones) a walk counts. A new reference in *out. */
static int counts_from_count(const struct ctl *ctl, const struct osbq_record_counts *counts,
                             enum osbq_record_kind kind, json_t **out)
{
    json_t *by_state = json_object();
    json_int_t total = 0, outdated = 0;
    bool binding = kind == OSBQ_RECORD_BINDING, failed = by_state == NULL;
    for (size_t i = 0; !failed && i < counts->count; i++) {
        const struct osbq_record_count *line = &counts->list[i];
        if (line->binding != binding)
            continue;
        json_t *n = json_object_get(by_state, line->state);
        failed =
            (n != NULL ? json_integer_set(n, json_integer_value(n) + line->count)
                       : json_object_set_new(by_state, line->state, json_integer(line->count))) < 0;
        total += line->count;
        if (!binding && ctl->catalog != NULL &&
            osbq_plan_outdated(osbq_catalog_plan(ctl->catalog, line->plan_id),
                               line->maintenance_version[0] != '\0' ? line->maintenance_version
                                                                    : NULL))
            outdated += line->count;
    }
    *out = failed ? NULL : json_pack("{s:I, s:O}", "total", total, "by_state", by_state);
    json_decref(by_state);
    if (*out != NULL && !binding &&
        json_object_set_new(*out, "outdated",
                            ctl->catalog != NULL ? json_integer(outdated) : json_null()) < 0) {
        json_decref(*out);
        *out = NULL;
    }
    return *out != NULL ? CTL_EXIT_OK : ctl_fail("counting records: out of memory");
}

/* Instances and bindings by state into *instances and *bindings (new references): from the
 * count the scripts keep when it is built and --walk is not given (*walked false), else by a
 * walk of every record. */
static int count_instances_and_bindings(struct ctl *ctl, json_t **instances, json_t **bindings,
                                        bool *walked)
{
    struct osbq_record_counts counts = {0};
    struct osbq_error err = {0};
    *walked = true;
    if (!ctl->opt.walk && osbq_store_record_counts(ctl->store, &counts, &err) < 0)
        return ctl_fail_store("reading the count of live records", &err);
    int rc;
    if (counts.built) {
        *walked = false;
        rc = counts_from_count(ctl, &counts, OSBQ_RECORD_INSTANCE, instances);
        if (rc == CTL_EXIT_OK)
            rc = counts_from_count(ctl, &counts, OSBQ_RECORD_BINDING, bindings);
    } else {
        rc = count_records(ctl, OSBQ_RECORD_INSTANCE, instances);
        if (rc == CTL_EXIT_OK)
            rc = count_records(ctl, OSBQ_RECORD_BINDING, bindings);
    }
    osbq_record_counts_clear(&counts);
    return rc;
}

/* The sum of one figure over the statuses, null when none publishes it. */
static json_t *status_sum(const json_t *statuses, const char *key)
{
    json_int_t sum = 0;
    bool known = false;
    size_t i;
    const json_t *status;
    json_array_foreach (statuses, i, status) {
        json_t *value = json_object_get(status, key);
        if (json_is_integer(value)) {
            sum += json_integer_value(value);
            known = true;
        }
    }
    return known ? json_integer(sum) : json_null();
}

/* {"live": n, "queued": jobs} for the gateways and {"live", "stopping", "slots", "running",
 * "needed", "needed_exact"} for the workers (new references in *gateways and *workers): the
 * sums over the statuses each process publishes, and the workers the load needs
 * (capacity.h). */
static int count_processes(struct ctl *ctl, json_t **gateways, json_t **workers)
{
    struct osbq_error err = {0};
    json_t *gateway_statuses = NULL, *worker_statuses = NULL;
    if (processes_list(ctl, "gateway", &gateway_statuses, &err) < 0)
        return ctl_fail_store("reading the gateways' status", &err);
    if (processes_list(ctl, "worker", &worker_statuses, &err) < 0) {
        json_decref(gateway_statuses);
        return ctl_fail_store("reading the workers' status", &err);
    }
    struct capacity capacity;
    bool exact = false;
    capacity_from_statuses(gateway_statuses, worker_statuses, &capacity);
    int64_t needed = capacity_workers_needed(&capacity, &exact);
    *gateways = json_pack("{s:I, s:I}", "live", (json_int_t)json_array_size(gateway_statuses),
                          "queued", (json_int_t)capacity.queued);
    *workers = json_pack(
        "{s:I, s:I, s:o, s:o, s:I, s:b}", "live", (json_int_t)json_array_size(worker_statuses),
        "stopping", (json_int_t)capacity.stopping, "slots", status_sum(worker_statuses, "slots"),
        "running", status_sum(worker_statuses, "running"), "needed", (json_int_t)needed,
        "needed_exact", (int)exact);
    json_decref(gateway_statuses);
    json_decref(worker_statuses);
    if (*gateways == NULL || *workers == NULL) {
        json_decref(*gateways);
        json_decref(*workers);
        *gateways = *workers = NULL;
        return ctl_fail("out of memory");
    }
    return CTL_EXIT_OK;
}

/* The tenants' polls: each tenant's waiting operations there (once per tenant, however often
 * the walk meets it). Counts the entries it reads in *read, and stops with *complete false once
 * TENANTS_READ_MAX are read. Returns an enum ctl_exit. */
static int count_polls(struct ctl *ctl, struct tenant_tally *tally, json_t *tenants_seen,
                       size_t *read, bool *complete)
{
    struct osbq_error err = {0};
    uint64_t cursor = 0;
    do {
        struct osbq_tenant_polls *polls = NULL;
        size_t n = 0;
        if (osbq_store_polls_scan(ctl->store, &cursor, TENANTS_STEP, &polls, &n, &err) < 0)
            return ctl_fail_store("reading the tenants' polls", &err);
        int rc = CTL_EXIT_OK;
        for (size_t i = 0; rc == CTL_EXIT_OK && i < n && *complete; i++) {
            if (*read >= TENANTS_READ_MAX) {
                *complete = false;
                break;
            }
            ++*read;
            if (json_object_get(tenants_seen, polls[i].tenant) != NULL)
                continue;
            if (json_object_set_new_nocheck(tenants_seen, polls[i].tenant, json_true()) < 0 ||
                tenant_tally_add(tally, polls[i].tenant, 0, 0, polls[i].waiting) < 0)
                rc = ctl_fail("out of memory");
        }
        osbq_tenant_polls_free(polls, n);
        if (rc != CTL_EXIT_OK)
            return rc;
    } while (cursor != 0 && *complete);
    return CTL_EXIT_OK;
}

/* The queue: each operation in progress once, by its state, but the waiting ones its tenant's
 * polls hold (count_polls counted them). */
static int count_queue(struct ctl *ctl, struct tenant_tally *tally, size_t *read, bool *complete)
{
    struct osbq_error err = {0};
    uint64_t cursor = 0;
    do {
        struct osbq_queue_entry *entries = NULL;
        size_t n = 0;
        if (osbq_store_queue_scan(ctl->store, &cursor, TENANTS_STEP, &entries, &n, &err) < 0)
            return ctl_fail_store("reading the operation queue", &err);
        int rc = CTL_EXIT_OK;
        for (size_t i = 0; rc == CTL_EXIT_OK && i < n; i++) {
            const struct osbq_queue_entry *e = &entries[i];
            if (*read >= TENANTS_READ_MAX) {
                *complete = false;
                break;
            }
            ++*read;
            if (e->state == OSBQ_WORK_OTHER || (e->state == OSBQ_WORK_WAITING && e->in_polls))
                continue;
            int first = tenant_tally_first_sight(tally, e->operation_id);
            if (first > 0)
                first =
                    tenant_tally_add(tally, e->tenant, e->state == OSBQ_WORK_QUEUED,
                                     e->state == OSBQ_WORK_RUNNING, e->state == OSBQ_WORK_WAITING);
            if (first < 0)
                rc = ctl_fail("out of memory");
        }
        osbq_queue_entries_free(entries, n);
        if (rc != CTL_EXIT_OK)
            return rc;
    } while (cursor != 0 && *complete);
    return CTL_EXIT_OK;
}

/* {"with_work": n, "complete": bool, "read": entries, "top": [{"tenant", "queued", "running",
 * "waiting", "total"}, ...]} (a new reference in *out): the tenants with operations in progress,
 * the ctl->opt.top busiest (all with 0), counted from the queue and the tenants' polls. */
static int count_tenants(struct ctl *ctl, json_t **out)
{
    struct tenant_tally *tally = tenant_tally_new();
    json_t *tenants_seen = json_object();
    size_t read = 0;
    bool complete = true;
    int rc = tally != NULL && tenants_seen != NULL ? CTL_EXIT_OK : ctl_fail("out of memory");
    if (rc == CTL_EXIT_OK)
        rc = count_polls(ctl, tally, tenants_seen, &read, &complete);
    if (rc == CTL_EXIT_OK && complete)
        rc = count_queue(ctl, tally, &read, &complete);
    json_decref(tenants_seen);
    json_t *top = rc == CTL_EXIT_OK ? json_array() : NULL;
    size_t busy = 0;
    const struct tenant_work *list = rc == CTL_EXIT_OK ? tenant_tally_sorted(tally, &busy) : NULL;
    for (size_t i = 0; top != NULL && i < busy && (ctl->opt.top == 0 || i < ctl->opt.top); i++) {
        const struct tenant_work *w = &list[i];
        json_t *one =
            json_pack("{s:o, s:I, s:I, s:I, s:I}", "tenant",
                      w->tenant[0] != '\0' ? format_json_string(w->tenant) : json_null(), "queued",
                      (json_int_t)w->queued, "running", (json_int_t)w->running, "waiting",
                      (json_int_t)w->waiting, "total", (json_int_t)tenant_work_total(w));
        if (one == NULL || json_array_append_new(top, one) < 0) {
            json_decref(top);
            top = NULL;
        }
    }
    tenant_tally_destroy(&tally);
    if (rc != CTL_EXIT_OK)
        return rc;
    *out = top != NULL ? json_pack("{s:I, s:b, s:I, s:o}", "with_work", (json_int_t)busy,
                                   "complete", (int)complete, "read", (json_int_t)read, "top", top)
                       : NULL;
    return *out != NULL ? CTL_EXIT_OK : ctl_fail("out of memory");
}

/* One state and its count, for the text. */
struct state_count {
    const char *state;
    json_int_t count;
};

static int by_count(const void *a, const void *b)
{
    const struct state_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->state, y->state);
}

/* "12 (provisioned 10, failed 1, provisioning 1)": the most common state first. */
static void counts_text(const json_t *counts, char *buf, size_t size)
{
    const json_t *by_state = json_object_get(counts, "by_state");
    struct state_count states[16];
    size_t n = 0;
    const char *state;
    json_t *count;
    json_object_foreach ((json_t *)by_state, state, count) {
        if (n < sizeof states / sizeof states[0])
            states[n++] = (struct state_count){state, json_integer_value(count)};
    }
    qsort(states, n, sizeof states[0], by_count);
    size_t len = (size_t)snprintf(buf, size, "%" JSON_INTEGER_FORMAT,
                                  json_integer_value(json_object_get(counts, "total")));
    for (size_t i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s %" JSON_INTEGER_FORMAT,
                                i == 0 ? " (" : ", ", states[i].state, states[i].count);
    if (n > 0 && len < size)
        len += (size_t)snprintf(buf + len, size - len, ")");
    const json_t *outdated = json_object_get(counts, "outdated");
    if (json_is_integer(outdated) && json_integer_value(outdated) > 0 && len < size)
        (void)snprintf(buf + len, size - len, ", %" JSON_INTEGER_FORMAT " outdated",
                       json_integer_value(outdated));
}

static const char *integer_text(const json_t *value, char *buf, size_t size)
{
    if (!json_is_integer(value))
        return "-";
    (void)snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(value));
    return buf;
}

/* "role master, 1 online: 10.0.0.2:6379 online lag 0 s" from the redis object's replication. */
static void replicas_text(const json_t *redis, char *buf, size_t size)
{
    const json_t *replicas = json_object_get(redis, "replicas");
    const json_t *role = json_object_get(redis, "role");
    size_t online = 0, index = 0;
    const json_t *r = NULL;
    json_array_foreach (replicas, index, r) {
        const char *state = json_string_value(json_object_get(r, "state"));
        online += state != NULL && strcmp(state, "online") == 0;
    }
    int n = snprintf(buf, size, "role %s, %zu of %zu online",
                     json_is_string(role) ? json_string_value(role) : "-", online,
                     json_array_size(replicas));
    size_t at = n > 0 ? (size_t)n : 0;
    json_array_foreach (replicas, index, r) {
        if (at >= size)
            break;
        char lag[24];
        n = snprintf(buf + at, size - at, "%s %s %s, lag %s s", index == 0 ? ":" : ";",
                     json_string_value(json_object_get(r, "address")),
                     json_string_value(json_object_get(r, "state")),
                     integer_text(json_object_get(r, "lag_s"), lag, sizeof lag));
        at += n > 0 ? (size_t)n : 0;
    }
}

/* The replicas as JSON: an array of {address, state, offset, lag_s}. */
static json_t *replicas_json(const struct osbq_store_replication *r)
{
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < r->replica_count; i++) {
        const struct osbq_store_replica *rep = &r->replicas[i];
        json_t *one = json_pack("{s:o, s:o, s:o, s:o}", "address", format_json_string(rep->address),
                                "state", format_json_string(rep->state), "offset",
                                rep->offset >= 0 ? json_integer(rep->offset) : json_null(), "lag_s",
                                rep->lag_s >= 0 ? json_integer(rep->lag_s) : json_null());
        if (one == NULL || json_array_append_new(list, one) < 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* "3 with operations in progress", and why the figures are partial when they are. */
static void tenants_text(const json_t *tenants, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%" JSON_INTEGER_FORMAT " with operations in progress",
                     json_integer_value(json_object_get(tenants, "with_work")));
    size_t at = n > 0 ? (size_t)n : 0;
    if (at < size && !json_is_true(json_object_get(tenants, "complete")))
        (void)snprintf(buf + at, size - at,
                       " (partial: counting stopped after %" JSON_INTEGER_FORMAT " entries)",
                       json_integer_value(json_object_get(tenants, "read")));
}

/* The busiest tenants, under the figures: TENANT QUEUED RUNNING WAITING TOTAL. */
static int print_tenants(const json_t *top)
{
    static const struct table_column columns[] = {
        {"TENANT", 0, false}, {"QUEUED", 0, true}, {"RUNNING", 0, true},
        {"WAITING", 0, true}, {"TOTAL", 0, true},
    };
    static const char *const fields[] = {"queued", "running", "waiting", "total"};
    if (json_array_size(top) == 0)
        return CTL_EXIT_OK;
    struct table *table = table_new(columns, 5);
    int rc = table != NULL ? CTL_EXIT_OK : ctl_fail("out of memory");
    size_t i;
    const json_t *row;
    json_array_foreach (top, i, row) {
        char numbers[4][24];
        const char *cells[5] = {json_string_value(json_object_get(row, "tenant"))};
        for (size_t k = 0; k < 4; k++)
            cells[k + 1] =
                integer_text(json_object_get(row, fields[k]), numbers[k], sizeof numbers[k]);
        if (rc == CTL_EXIT_OK && table_add(table, cells) < 0)
            rc = ctl_fail("out of memory");
    }
    if (rc == CTL_EXIT_OK) {
        fputc('\n', stdout);
        table_print(table, stdout);
    }
    table_destroy(&table);
    return rc;
}

static int print_text(const json_t *stats)
{
    static const struct table_column columns[] = {{NULL, 0, false}, {NULL, 0, false}};
    const json_t *ops = json_object_get(stats, "operations");
    const json_t *workers = json_object_get(stats, "workers");
    const json_t *redis = json_object_get(stats, "redis");
    char instances[512], bindings[512], operations[96], gateways[80], worker_text[192];
    char slots[24], running[24], redis_text[96], memory[FORMAT_TEXT_MAX], replicas[512];
    char tenants[128], took[80];
    const json_t *tenant_counts = json_object_get(stats, "tenants");
    bool walked = strcmp(json_string_value(json_object_get(stats, "records_from")), "walk") == 0;
    (void)snprintf(took, sizeof took, "%.2f s (%s)",
                   (double)json_integer_value(json_object_get(stats, "took_ms")) / 1000.0,
                   walked ? "every record walked" : "live records from their count");
    tenants_text(tenant_counts, tenants, sizeof tenants);
    counts_text(json_object_get(stats, "instances"), instances, sizeof instances);
    counts_text(json_object_get(stats, "bindings"), bindings, sizeof bindings);
    (void)snprintf(operations, sizeof operations,
                   "%" JSON_INTEGER_FORMAT " unfinished, %" JSON_INTEGER_FORMAT " overdue",
                   json_integer_value(json_object_get(ops, "unfinished")),
                   json_integer_value(json_object_get(ops, "overdue")));
    const json_t *gateway_counts = json_object_get(stats, "gateways");
    (void)snprintf(gateways, sizeof gateways,
                   "%" JSON_INTEGER_FORMAT " live, %" JSON_INTEGER_FORMAT " jobs queued",
                   json_integer_value(json_object_get(gateway_counts, "live")),
                   json_integer_value(json_object_get(gateway_counts, "queued")));
    (void)snprintf(worker_text, sizeof worker_text,
                   "%" JSON_INTEGER_FORMAT " live, %" JSON_INTEGER_FORMAT
                   " stopping, %s slots, %s running, %s%" JSON_INTEGER_FORMAT " needed",
                   json_integer_value(json_object_get(workers, "live")),
                   json_integer_value(json_object_get(workers, "stopping")),
                   integer_text(json_object_get(workers, "slots"), slots, sizeof slots),
                   integer_text(json_object_get(workers, "running"), running, sizeof running),
                   json_is_true(json_object_get(workers, "needed_exact")) ? "" : "at least ",
                   json_integer_value(json_object_get(workers, "needed")));
    const json_t *server = json_object_get(redis, "server");
    const json_t *version = json_object_get(redis, "version");
    const json_t *used = json_object_get(redis, "used_memory");
    (void)snprintf(redis_text, sizeof redis_text, "%s %s, %s used",
                   json_is_string(server) ? json_string_value(server) : "server",
                   json_is_string(version) ? json_string_value(version) : "unknown",
                   format_bytes(json_is_integer(used) ? (int64_t)json_integer_value(used) : -1,
                                memory, sizeof memory));
    replicas_text(redis, replicas, sizeof replicas);
    const char *rows[][2] = {
        {"instances", instances}, {"bindings", bindings},   {"operations", operations},
        {"gateways", gateways},   {"workers", worker_text}, {"redis", redis_text},
        {"replicas", replicas},   {"tenants", tenants},     {"read in", took},
    };
    struct table *table = table_new(columns, 2);
    int rc = table != NULL ? CTL_EXIT_OK : ctl_fail("out of memory");
    for (size_t i = 0; rc == CTL_EXIT_OK && i < sizeof rows / sizeof rows[0]; i++)
        if (table_add(table, rows[i]) < 0)
            rc = ctl_fail("out of memory");
    if (rc == CTL_EXIT_OK)
        table_print(table, stdout);
    table_destroy(&table);
    return rc == CTL_EXIT_OK ? print_tenants(json_object_get(tenant_counts, "top")) : rc;
}

int cmd_stats(struct ctl *ctl)
{
    struct osbq_store_stats queue;
    struct osbq_store_replication replication;
    struct osbq_error err = {0};
    json_t *instances = NULL, *bindings = NULL, *gateways = NULL, *workers = NULL, *tenants = NULL;
    /* Said with the figures: the walks grow with the records (docs/ctl.md). */
    int64_t started_ms = osbq_clock_ms();
    bool walked = true;
    int rc = count_instances_and_bindings(ctl, &instances, &bindings, &walked);
    if (rc == CTL_EXIT_OK)
        rc = count_processes(ctl, &gateways, &workers);
    if (rc == CTL_EXIT_OK && osbq_store_stats_get(ctl->store, &queue, &err) < 0)
        rc = ctl_fail_store("reading the queue and Redis figures", &err);
    if (rc == CTL_EXIT_OK && osbq_store_replication(ctl->store, &replication, &err) < 0)
        rc = ctl_fail_store("reading Redis's replication", &err);
    if (rc == CTL_EXIT_OK)
        rc = count_tenants(ctl, &tenants);
    if (rc != CTL_EXIT_OK) {
        json_decref(instances);
        json_decref(bindings);
        json_decref(gateways);
        json_decref(workers);
        json_decref(tenants);
        return rc;
    }
    json_t *stats = json_pack(
        "{s:o, s:o, s:{s:I, s:I}, s:o, s:o, s:{s:o, s:o, s:o, s:o, s:o}, s:o}", "instances",
        instances, "bindings", bindings, "operations", "unfinished", (json_int_t)queue.unfinished,
        "overdue", (json_int_t)queue.overdue, "gateways", gateways, "workers", workers, "redis",
        "server",
        queue.server.name[0] != '\0' ? format_json_string(queue.server.name) : json_null(),
        "version",
        queue.server.version[0] != '\0' ? format_json_string(queue.server.version) : json_null(),
        "used_memory", queue.used_memory >= 0 ? json_integer(queue.used_memory) : json_null(),
        "role", format_json_string(replication.role), "replicas", replicas_json(&replication),
        "tenants", tenants);
    if (stats == NULL ||
        json_object_set_new(stats, "took_ms", json_integer(osbq_clock_ms() - started_ms)) < 0 ||
        json_object_set_new(stats, "records_from", json_string(walked ? "walk" : "count")) < 0) {
        json_decref(stats);
        return ctl_fail("out of memory");
    }
    if (ctl->opt.json)
        return format_print_json(stats) < 0 ? ctl_fail("cannot write the statistics as JSON")
                                            : CTL_EXIT_OK;
    rc = print_text(stats);
    json_decref(stats);
    return rc;
}

/* Every RECOUNT_PROGRESS_MS of its walk, recount says how far it got on stderr. */
#define RECOUNT_PROGRESS_MS 5000

int cmd_recount(struct ctl *ctl)
{
    struct osbq_error err = {0};
    if (osbq_store_record_counts_drop(ctl->store, &err) < 0)
        return ctl_fail_store("dropping the count of live records", &err);
    /* The walk in the foreground, paced as the gateways pace theirs; they join it once they
     * read the count again (OSBQ_COUNTS_REFRESH_S), and each step moves the one walk on. */
    int64_t started_ms = osbq_clock_ms(), said_ms = started_ms, counted = 0;
    for (int built = 0; built == 0;) {
        int64_t step_ms = osbq_clock_ms(), step_counted = 0;
        built =
            osbq_store_count_records_step(ctl->store, OSBQ_COUNT_WALK_BATCH, &step_counted, &err);
        if (built < 0)
            return ctl_fail_store("counting the live records (the gateways go on with it)", &err);
        counted += step_counted;
        int64_t now_ms = osbq_clock_ms();
        if (now_ms - said_ms >= RECOUNT_PROGRESS_MS) {
            ctl_say("counted %lld records so far in %.0f s", (long long)counted,
                    (double)(now_ms - started_ms) / 1000.0);
            said_ms = now_ms;
        }
        if (built == 0)
            /* A signal may cut the pause short: the walk only goes on sooner. */
            osbq_clock_sleep_ms(osbq_count_walk_pause_ms(now_ms - step_ms));
    }
    int64_t took_ms = osbq_clock_ms() - started_ms;
    if (ctl->opt.json)
        return format_print_json(json_pack("{s:b, s:I, s:I}", "built", 1, "counted",
                                           (json_int_t)counted, "took_ms", (json_int_t)took_ms)) < 0
                   ? ctl_fail("cannot write the answer as JSON")
                   : CTL_EXIT_OK;
    printf("counted the live records again in %.1f s (%lld by this command; gateways may have "
           "counted others)\n",
           (double)took_ms / 1000.0, (long long)counted);
    return CTL_EXIT_OK;
}
