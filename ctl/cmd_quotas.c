/* quotas: how full each quota of OSBQ_POLICY is; per-field quotas one row per value seen. */
#include <stdio.h>

#include "ctl.h"
#include "format.h"
#include "policy.h"
#include "table.h"

/* Rows collected for one quota. */
struct quota_rows {
    json_t *rows; /* array of row objects; borrowed */
    const struct osbq_policy_use *quota;
};

static int add_row(json_t *rows, const struct osbq_policy_use *q, const char *value, int64_t used)
{
    json_t *row =
        json_pack("{s:s, s:o, s:o, s:I, s:I}", "quota", q->name, "per",
                  q->field >= 0 ? json_string(osbq_policy_field_name(q->field)) : json_null(),
                  "value", value ? format_json_string(value) : json_null(), "used",
                  (json_int_t)used, "limit", (json_int_t)q->limit);
    return row != NULL && json_array_append_new(rows, row) == 0 ? 0 : -1;
}

static int visit_counter(const char *value, int64_t used, void *ctx)
{
    struct quota_rows *r = ctx;
    return add_row(r->rows, r->quota, value, used);
}

static int print_text(const json_t *rows)
{
    static const struct table_column columns[] = {{"QUOTA", 32, false},
                                                  {"PER", 0, false},
                                                  {"VALUE", 40, false},
                                                  {"USED", 0, true},
                                                  {"LIMIT", 0, true}};
    struct table *table = table_new(columns, 5);
    int rc = table != NULL ? CTL_EXIT_OK : ctl_fail("out of memory");
    size_t i;
    json_t *row;
    json_array_foreach ((json_t *)rows, i, row) {
        char used[24], limit[24];
        const json_t *per = json_object_get(row, "per"), *value = json_object_get(row, "value");
        (void)snprintf(used, sizeof used, "%" JSON_INTEGER_FORMAT,
                       json_integer_value(json_object_get(row, "used")));
        (void)snprintf(limit, sizeof limit, "%" JSON_INTEGER_FORMAT,
                       json_integer_value(json_object_get(row, "limit")));
        const char *cells[] = {json_string_value(json_object_get(row, "quota")),
                               json_is_string(per) ? json_string_value(per) : "-",
                               json_is_string(value) ? json_string_value(value) : "-", used, limit};
        if (rc == CTL_EXIT_OK && table_add(table, cells) < 0)
            rc = ctl_fail("out of memory");
    }
    if (rc == CTL_EXIT_OK)
        table_print(table, stdout);
    table_destroy(&table);
    return rc;
}

int cmd_quotas(struct ctl *ctl)
{
    if (ctl->cfg->policy_path == NULL)
        return ctl_fail("no policy: set OSBQ_POLICY to the gateways' policy file");
    struct osbq_error err = {0};
    struct osbq_policy *policy = NULL;
    if (osbq_policy_load_file(ctl->cfg->policy_path, NULL, &policy, &err) < 0)
        return ctl_fail("OSBQ_POLICY: %s", err.text);
    json_t *rows = json_array();
    int rc = rows != NULL ? CTL_EXIT_OK : ctl_fail("out of memory");
    for (size_t i = 0; rc == CTL_EXIT_OK && i < osbq_policy_quota_count(policy); i++) {
        struct osbq_policy_use q;
        osbq_policy_quota_at(policy, i, &q);
        if (q.field < 0) {
            int64_t used = 0;
            if (osbq_store_quota_used(ctl->store, q.name, NULL, &used, &err) < 0)
                rc = ctl_fail_store("reading a quota", &err);
            else if (add_row(rows, &q, NULL, used) < 0)
                rc = ctl_fail("out of memory");
            continue;
        }
        struct quota_rows r = {rows, &q};
        if (osbq_store_quota_walk(ctl->store, q.name, visit_counter, &r, &err) < 0)
            rc = ctl_fail_store("reading a quota's counters", &err);
    }
    if (rc == CTL_EXIT_OK)
        rc = ctl->opt.json ? (format_print_json(json_incref(rows)) < 0
                                  ? ctl_fail("cannot write the quotas as JSON")
                                  : CTL_EXIT_OK)
                           : print_text(rows);
    json_decref(rows);
    osbq_policy_destroy(&policy);
    return rc;
}
