/* Broker-side policies: parsing and checking OSBQ_POLICY, and matching requests to its rules. */
#include "policy.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "owned.h"

/* Largest policy file: far above any sensible one, small enough to refuse a wrong path. */
#define POLICY_FILE_MAX (1024 * 1024)
#define NAME_MAX_LEN    64
#define LIMIT_MAX       1000000000

static const char *const field_names[OSBQ_POLICY_FIELD_COUNT_] = {
    [OSBQ_POLICY_NAMESPACE] = "namespace",
    [OSBQ_POLICY_ORGANIZATION_GUID] = "organization_guid",
    [OSBQ_POLICY_SPACE_GUID] = "space_guid",
    [OSBQ_POLICY_PLATFORM] = "platform",
};

/* The deny rules' list members, one per field, and how refusals name them. */
static const char *const field_lists[OSBQ_POLICY_FIELD_COUNT_] = {
    [OSBQ_POLICY_NAMESPACE] = "namespaces",
    [OSBQ_POLICY_ORGANIZATION_GUID] = "organization_guids",
    [OSBQ_POLICY_SPACE_GUID] = "space_guids",
    [OSBQ_POLICY_PLATFORM] = "platforms",
};
static const char *const field_words[OSBQ_POLICY_FIELD_COUNT_] = {
    [OSBQ_POLICY_NAMESPACE] = "namespace",
    [OSBQ_POLICY_ORGANIZATION_GUID] = "organization",
    [OSBQ_POLICY_SPACE_GUID] = "space",
    [OSBQ_POLICY_PLATFORM] = "platform",
};

/* A list of strings borrowed from the policy's JSON; count 0 means "not given". */
struct id_list {
    const char **items;
    size_t count;
};

/* Which plans a rule covers: listed plans, plans of listed services, or every plan when both
 * lists are absent. */
struct scope {
    struct id_list plans;
    struct id_list services;
};

struct quota {
    const char *name;
    struct scope scope;
    int field; /* counted per value of this context field, or -1 */
    int64_t limit;
};

struct deny {
    const char *name;
    struct scope scope;
    unsigned ops;                                    /* enum osbq_policy_op bits */
    struct id_list values[OSBQ_POLICY_FIELD_COUNT_]; /* refused context values per field */
};

/* in_progress_per_tenant, deletes_per_minute_per_tenant: a platform's cap on each of its
 * tenants' operations in progress, or deletes a minute. */
struct cap {
    const char *platform; /* a platform's name */
    int64_t limit;
};

/* One such setting: its caps by platform, and the other platforms'. */
struct caps {
    struct cap *by_platform;
    size_t count;
    int64_t other; /* "*", or the number form; -1: none */
};

struct osbq_policy {
    json_t *root; /* owns every string the rules borrow */
    struct quota *quotas;
    size_t quota_count;
    struct deny *denies;
    size_t deny_count;
    struct caps in_progress; /* in_progress_per_tenant */
    struct caps deletes;     /* deletes_per_minute_per_tenant */
};

#define CAP_MEMBER        "in_progress_per_tenant"
#define DELETE_CAP_MEMBER "deletes_per_minute_per_tenant"

const char *osbq_policy_field_name(int field)
{
    return field >= 0 && field < OSBQ_POLICY_FIELD_COUNT_ ? field_names[field] : "";
}

static int fail(struct osbq_error *err, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets err to "<where>: <message>" and returns -1. */
static int fail(struct osbq_error *err, const char *where, const char *fmt, ...)
{
    char text[OSBQ_ERROR_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return osbq_error_set(err, OSBQ_ERR_INVALID, "%s: %s", where, text);
}

/* Only the keys in allowed (NULL-terminated) may appear in obj. */
static int check_keys(const json_t *obj, const char *where, const char *const *allowed,
                      struct osbq_error *err)
{
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *)obj, key, value) {
        (void)value;
        bool known = false;
        for (const char *const *a = allowed; *a != NULL && !known; a++)
            known = strcmp(*a, key) == 0;
        if (!known)
            return fail(err, where, "unknown member \"%s\"", key);
    }
    return 0;
}

/* Whether s is made of letters, digits, '-', '_' and '.' only (a rule's or a platform's name). */
static bool name_chars(const char *s)
{
    for (; *s != '\0'; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
        if (!ok)
            return false;
    }
    return true;
}

static int parse_name(const json_t *obj, const char *where, const char **out,
                      struct osbq_error *err)
{
    const json_t *v = json_object_get(obj, "name");
    if (!json_is_string(v))
        return fail(err, where, "\"name\" must be a string");
    const char *s = json_string_value(v);
    size_t len = strlen(s);
    if (len == 0 || len > NAME_MAX_LEN)
        return fail(err, where, "\"name\" must be 1 to 64 characters");
    if (!name_chars(s))
        return fail(err, where, "\"name\" \"%s\": only letters, digits, '-', '_' and '.'", s);
    *out = s;
    return 0;
}

/* Reads an optional array of non-empty strings; absent leaves list empty. */
static int parse_list(const json_t *obj, const char *member, const char *where,
                      struct id_list *list, struct osbq_error *err)
{
    const json_t *arr = json_object_get(obj, member);
    if (arr == NULL)
        return 0;
    char place[160];
    (void)snprintf(place, sizeof place, "%s.%s", where, member);
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return fail(err, place, "must be a non-empty array of strings");
    list->count = json_array_size(arr);
    list->items = calloc(list->count, sizeof *list->items);
    if (list->items == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; i < list->count; i++) {
        const json_t *item = json_array_get(arr, i);
        if (!json_is_string(item) || json_string_length(item) == 0) {
            char at[200];
            (void)snprintf(at, sizeof at, "%s[%zu]", place, i);
            return fail(err, at, "must be a non-empty string");
        }
        list->items[i] = json_string_value(item);
    }
    return 0;
}

static bool list_has(const struct id_list *list, const char *s)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i], s) == 0)
            return true;
    return false;
}

static int parse_scope(const json_t *obj, const char *where, const struct osbq_catalog *catalog,
                       struct scope *scope, struct osbq_error *err)
{
    if (parse_list(obj, "plans", where, &scope->plans, err) < 0 ||
        parse_list(obj, "services", where, &scope->services, err) < 0)
        return -1;
    if (catalog == NULL)
        return 0;
    char at[200];
    for (size_t i = 0; i < scope->plans.count; i++) {
        if (osbq_catalog_plan(catalog, scope->plans.items[i]) == NULL) {
            (void)snprintf(at, sizeof at, "%s.plans[%zu]", where, i);
            return fail(err, at, "unknown plan id \"%s\"", scope->plans.items[i]);
        }
    }
    for (size_t i = 0; i < scope->services.count; i++) {
        if (osbq_catalog_service(catalog, scope->services.items[i]) == NULL) {
            (void)snprintf(at, sizeof at, "%s.services[%zu]", where, i);
            return fail(err, at, "unknown service id \"%s\"", scope->services.items[i]);
        }
    }
    return 0;
}

static bool scope_covers(const struct scope *scope, const struct osbq_plan *plan)
{
    if (scope->plans.count == 0 && scope->services.count == 0)
        return true;
    return list_has(&scope->plans, plan->id) || list_has(&scope->services, plan->service->id);
}

static int parse_quota(const json_t *obj, const char *where, const struct osbq_catalog *catalog,
                       struct quota *q, struct osbq_error *err)
{
    static const char *const keys[] = {"name", "max_instances", "plans", "services", "per", NULL};
    if (!json_is_object(obj))
        return fail(err, where, "must be an object");
    if (check_keys(obj, where, keys, err) < 0 || parse_name(obj, where, &q->name, err) < 0 ||
        parse_scope(obj, where, catalog, &q->scope, err) < 0)
        return -1;
    const json_t *max = json_object_get(obj, "max_instances");
    if (!json_is_integer(max) || json_integer_value(max) < 0 || json_integer_value(max) > LIMIT_MAX)
        return fail(err, where, "\"max_instances\" must be an integer from 0 to 1000000000");
    q->limit = (int64_t)json_integer_value(max);
    q->field = -1;
    const json_t *per = json_object_get(obj, "per");
    if (per != NULL) {
        for (int f = 0; f < OSBQ_POLICY_FIELD_COUNT_ && json_is_string(per); f++)
            if (strcmp(json_string_value(per), field_names[f]) == 0)
                q->field = f;
        if (q->field < 0)
            return fail(err, where,
                        "\"per\" must be \"namespace\", \"organization_guid\", \"space_guid\" or "
                        "\"platform\"");
    }
    return 0;
}

static int parse_deny(const json_t *obj, const char *where, const struct osbq_catalog *catalog,
                      struct deny *d, struct osbq_error *err)
{
    static const char *const keys[] = {"name",        "plans",      "services",
                                       "operations",  "namespaces", "organization_guids",
                                       "space_guids", "platforms",  NULL};
    if (!json_is_object(obj))
        return fail(err, where, "must be an object");
    if (check_keys(obj, where, keys, err) < 0 || parse_name(obj, where, &d->name, err) < 0 ||
        parse_scope(obj, where, catalog, &d->scope, err) < 0)
        return -1;
    bool any = false;
    for (int f = 0; f < OSBQ_POLICY_FIELD_COUNT_; f++) {
        if (parse_list(obj, field_lists[f], where, &d->values[f], err) < 0)
            return -1;
        any |= d->values[f].count > 0;
    }
    if (!any)
        return fail(err, where,
                    "name at least one of \"namespaces\", \"organization_guids\", \"space_guids\", "
                    "\"platforms\"");
    struct id_list ops = {0};
    int rc = parse_list(obj, "operations", where, &ops, err);
    d->ops = ops.count == 0 ? OSBQ_POLICY_PROVISION | OSBQ_POLICY_BIND : 0;
    for (size_t i = 0; rc == 0 && i < ops.count; i++) {
        if (strcmp(ops.items[i], "provision") == 0) {
            d->ops |= OSBQ_POLICY_PROVISION;
        } else if (strcmp(ops.items[i], "bind") == 0) {
            d->ops |= OSBQ_POLICY_BIND;
        } else {
            char at[200];
            (void)snprintf(at, sizeof at, "%s.operations[%zu]", where, i);
            rc = fail(err, at, "\"%s\" is not \"provision\" or \"bind\"", ops.items[i]);
        }
    }
    free(ops.items);
    return rc;
}

static void free_scope(struct scope *s)
{
    free(s->plans.items);
    free(s->services.items);
}

void osbq_policy_destroy(struct osbq_policy **pp)
{
    OSBQ_OWNED_OR_RETURN(struct osbq_policy, p, pp);
    for (size_t i = 0; i < p->quota_count; i++)
        free_scope(&p->quotas[i].scope);
    for (size_t i = 0; i < p->deny_count; i++) {
        free_scope(&p->denies[i].scope);
        for (int f = 0; f < OSBQ_POLICY_FIELD_COUNT_; f++)
            free(p->denies[i].values[f].items);
    }
    free(p->quotas);
    free(p->denies);
    free(p->in_progress.by_platform);
    free(p->deletes.by_platform);
    json_decref(p->root);
    free(p);
    *pp = NULL;
}

/* The array member name of root, or an empty array when absent. */
static int member_array(const json_t *root, const char *name, const json_t **out,
                        struct osbq_error *err)
{
    *out = json_object_get(root, name);
    if (*out != NULL && !json_is_array(*out))
        return fail(err, name, "must be an array");
    return 0;
}

/* A cap's value, 0 to LIMIT_MAX, into *out; false when it is not one. */
static bool cap_limit(const json_t *v, int64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > LIMIT_MAX)
        return false;
    *out = (int64_t)json_integer_value(v);
    return true;
}

/* member (in_progress_per_tenant, deletes_per_minute_per_tenant): a number (every platform's
 * tenants), or an object of numbers by platform name, "*" for the platforms it does not name;
 * each at least min. */
static int parse_caps(struct osbq_policy *p, const char *member, int64_t min, struct caps *out,
                      struct osbq_error *err)
{
    out->other = -1;
    const json_t *caps = json_object_get(p->root, member);
    if (caps == NULL)
        return 0;
    char range[64];
    (void)snprintf(range, sizeof range, "must be an integer from %" PRId64 " to 1000000000", min);
    if (json_is_integer(caps)) {
        if (!cap_limit(caps, &out->other) || out->other < min)
            return fail(err, member, "%s", range);
        return 0;
    }
    if (!json_is_object(caps) || json_object_size(caps) == 0)
        return fail(err, member,
                    "must be an integer, or a non-empty object of integers by platform name "
                    "(\"*\": the other platforms)");
    out->by_platform = calloc(json_object_size(caps), sizeof *out->by_platform);
    if (out->by_platform == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    const char *platform;
    json_t *value;
    json_object_foreach ((json_t *)caps, platform, value) {
        char where[160];
        (void)snprintf(where, sizeof where, "%s.%s", member, platform);
        bool other = strcmp(platform, "*") == 0;
        size_t len = strlen(platform);
        if (!other && (len == 0 || len > NAME_MAX_LEN || !name_chars(platform)))
            return fail(err, member,
                        "\"%s\" is not a platform name (1 to 64 letters, digits, '-', '_' and "
                        "'.') nor \"*\"",
                        platform);
        int64_t limit;
        if (!cap_limit(value, &limit) || limit < min)
            return fail(err, where, "%s", range);
        if (other)
            out->other = limit;
        else
            out->by_platform[out->count++] = (struct cap){platform, limit};
    }
    return 0;
}

int osbq_policy_load_text(const char *text, size_t len, const struct osbq_catalog *catalog,
                          struct osbq_policy **out, struct osbq_error *err)
{
    static const char *const keys[] = {"quotas", "deny", CAP_MEMBER, DELETE_CAP_MEMBER, NULL};
    json_error_t jerr;
    struct osbq_policy *p = calloc(1, sizeof *p);
    if (p == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    p->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    const json_t *quotas = NULL, *denies = NULL;
    int rc = -1;
    if (p->root == NULL) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "not valid JSON: %s (line %d, column %d)", jerr.text,
                       jerr.line, jerr.column);
        goto out;
    }
    if (!json_is_object(p->root)) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "must be a JSON object");
        goto out;
    }
    if (check_keys(p->root, "policy", keys, err) < 0 ||
        member_array(p->root, "quotas", &quotas, err) < 0 ||
        member_array(p->root, "deny", &denies, err) < 0 ||
        parse_caps(p, CAP_MEMBER, 0, &p->in_progress, err) < 0 ||
        parse_caps(p, DELETE_CAP_MEMBER, 1, &p->deletes, err) < 0)
        goto out;
    size_t nq = json_array_size(quotas), nd = json_array_size(denies);
    if (nq > OSBQ_POLICY_QUOTAS_MAX) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "quotas: at most %d quotas", OSBQ_POLICY_QUOTAS_MAX);
        goto out;
    }
    p->quotas = calloc(nq ? nq : 1, sizeof *p->quotas);
    p->denies = calloc(nd ? nd : 1, sizeof *p->denies);
    if (p->quotas == NULL || p->denies == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out;
    }
    char where[64];
    for (size_t i = 0; i < nq; i++) {
        (void)snprintf(where, sizeof where, "quotas[%zu]", i);
        p->quota_count++;
        if (parse_quota(json_array_get(quotas, i), where, catalog, &p->quotas[i], err) < 0)
            goto out;
        for (size_t j = 0; j < i; j++)
            if (strcmp(p->quotas[j].name, p->quotas[i].name) == 0) {
                fail(err, where, "the name \"%s\" is used twice", p->quotas[i].name);
                goto out;
            }
    }
    for (size_t i = 0; i < nd; i++) {
        (void)snprintf(where, sizeof where, "deny[%zu]", i);
        p->deny_count++;
        if (parse_deny(json_array_get(denies, i), where, catalog, &p->denies[i], err) < 0)
            goto out;
        for (size_t j = 0; j < i; j++)
            if (strcmp(p->denies[j].name, p->denies[i].name) == 0) {
                fail(err, where, "the name \"%s\" is used twice", p->denies[i].name);
                goto out;
            }
    }
    *out = p;
    p = NULL;
    rc = 0;
out:
    osbq_policy_destroy(&p);
    return rc;
}

int osbq_policy_load_file(const char *path, const struct osbq_catalog *catalog,
                          struct osbq_policy **out, struct osbq_error *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "cannot read %s", path);
    char *text = malloc(POLICY_FILE_MAX + 1);
    size_t n = text ? fread(text, 1, POLICY_FILE_MAX + 1, f) : 0;
    bool failed = text == NULL || ferror(f) || n > POLICY_FILE_MAX;
    fclose(f);
    int rc = -1;
    if (failed)
        osbq_error_set(err, OSBQ_ERR_INVALID, "%s: unreadable or larger than 1 MiB", path);
    else if (osbq_policy_load_text(text, n, catalog, out, err) < 0)
        osbq_error_prefix(err, "%s", path);
    else
        rc = 0;
    free(text);
    return rc;
}

static const char *string_member(const json_t *obj, const char *name)
{
    const json_t *v = json_object_get(obj, name);
    return json_is_string(v) && json_string_length(v) > 0 ? json_string_value(v) : NULL;
}

void osbq_policy_context_from(struct osbq_policy_context *ctx, const json_t *context,
                              const char *organization_guid, const char *space_guid,
                              const char *platform)
{
    memset(ctx, 0, sizeof *ctx);
    if (json_is_object(context)) {
        for (int f = 0; f < OSBQ_POLICY_PLATFORM; f++)
            ctx->values[f] = string_member(context, field_names[f]);
    }
    ctx->values[OSBQ_POLICY_PLATFORM] = platform;
    if (ctx->values[OSBQ_POLICY_ORGANIZATION_GUID] == NULL)
        ctx->values[OSBQ_POLICY_ORGANIZATION_GUID] = organization_guid;
    if (ctx->values[OSBQ_POLICY_SPACE_GUID] == NULL)
        ctx->values[OSBQ_POLICY_SPACE_GUID] = space_guid;
}

bool osbq_policy_denies_by_context(const struct osbq_policy *policy, enum osbq_policy_op op,
                                   const struct osbq_plan *plan)
{
    for (size_t i = 0; policy != NULL && i < policy->deny_count; i++)
        if ((policy->denies[i].ops & (unsigned)op) && scope_covers(&policy->denies[i].scope, plan))
            return true;
    return false;
}

bool osbq_policy_denied(const struct osbq_policy *policy, enum osbq_policy_op op,
                        const struct osbq_plan *plan, const struct osbq_policy_context *ctx,
                        char *description, size_t size)
{
    for (size_t i = 0; policy != NULL && i < policy->deny_count; i++) {
        const struct deny *d = &policy->denies[i];
        if (!(d->ops & (unsigned)op) || !scope_covers(&d->scope, plan))
            continue;
        for (int f = 0; f < OSBQ_POLICY_FIELD_COUNT_; f++) {
            const char *value = ctx->values[f];
            if (value == NULL || !list_has(&d->values[f], value))
                continue;
            (void)snprintf(description, size,
                           "Policy \"%s\" does not allow %s the plan \"%s\" of the service "
                           "\"%s\" in the %s \"%s\".",
                           d->name, op == OSBQ_POLICY_BIND ? "binding" : "provisioning", plan->name,
                           plan->service->name, field_words[f], value);
            return true;
        }
    }
    return false;
}

size_t osbq_policy_quotas(const struct osbq_policy *policy, const struct osbq_plan *plan,
                          const struct osbq_policy_context *ctx, struct osbq_policy_use *uses)
{
    size_t n = 0;
    for (size_t i = 0; policy != NULL && i < policy->quota_count; i++) {
        const struct quota *q = &policy->quotas[i];
        if (!scope_covers(&q->scope, plan))
            continue;
        const char *value = q->field >= 0 ? ctx->values[q->field] : NULL;
        if (q->field >= 0 && value == NULL)
            continue;
        uses[n++] = (struct osbq_policy_use){q->name, q->field, value, q->limit};
    }
    return n;
}

void osbq_policy_quota_description(const struct osbq_policy_use *use, int64_t used,
                                   char *description, size_t size)
{
    if (use->field >= 0)
        (void)snprintf(description, size,
                       "Quota \"%s\" exceeded: the %s \"%s\" has %" PRId64 " of at most %" PRId64
                       " instances.",
                       use->name, field_words[use->field], use->value, used, use->limit);
    else
        (void)snprintf(description, size,
                       "Quota \"%s\" exceeded: %" PRId64 " of at most %" PRId64 " instances exist.",
                       use->name, used, use->limit);
}

/* The cap of platform in caps, or -1 when it has none. */
static int64_t cap_of(const struct caps *caps, const char *platform)
{
    for (size_t i = 0; platform != NULL && i < caps->count; i++)
        if (strcmp(caps->by_platform[i].platform, platform) == 0)
            return caps->by_platform[i].limit;
    return caps->other;
}

int64_t osbq_policy_in_progress_cap(const struct osbq_policy *policy, const char *platform)
{
    return policy != NULL ? cap_of(&policy->in_progress, platform) : -1;
}

int64_t osbq_policy_delete_cap(const struct osbq_policy *policy, const char *platform)
{
    return policy != NULL ? cap_of(&policy->deletes, platform) : -1;
}

void osbq_policy_delete_cap_description(const char *tenant, int64_t deleted, int64_t limit,
                                        char *description, size_t size)
{
    (void)snprintf(description, size,
                   "The tenant \"%s\" deleted %" PRId64 " service instance%s or binding%s in the "
                   "last minute, and this broker's policy allows at most %" PRId64
                   " a minute per tenant (OSBQ_POLICY deletes_per_minute_per_tenant); retry in a "
                   "minute.",
                   tenant, deleted, deleted == 1 ? "" : "s", deleted == 1 ? "" : "s", limit);
}

void osbq_policy_cap_description(const char *tenant, int64_t in_progress, int64_t limit,
                                 char *description, size_t size)
{
    (void)snprintf(description, size,
                   "The tenant \"%s\" already has %" PRId64 " operation%s in progress, and this "
                   "broker's policy allows at most %" PRId64
                   " per tenant (OSBQ_POLICY in_progress_per_tenant); retry when some have ended.",
                   tenant, in_progress, in_progress == 1 ? "" : "s", limit);
}

size_t osbq_policy_quota_count(const struct osbq_policy *policy)
{
    return policy ? policy->quota_count : 0;
}

void osbq_policy_quota_at(const struct osbq_policy *policy, size_t i, struct osbq_policy_use *out)
{
    const struct quota *q = &policy->quotas[i];
    *out = (struct osbq_policy_use){q->name, q->field, NULL, q->limit};
}
