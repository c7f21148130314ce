/* The catalog's checks: every service and plan against the OSB spec (required fields, unique
 * ids and names, the schemas' shape, no external $ref) and osbq's plan settings
 * (backend_settings.c), each error naming the JSON path of what broke the rule. */
#include "catalog_check.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "backend_settings.h"
#include "semver.h"

/* Spec: "Schemas MUST NOT be larger than 64kB". */
#define SCHEMA_MAX_BYTES 65536

/* Spec: "The only permissions currently supported are ...". */
static const char *const permissions[] = {"syslog_drain", "route_forwarding", "volume_mount", NULL};

/* Only these keys may appear in the schema objects: a typo there would silently drop the
 * platform's parameter validation. */
static const char *const schema_groups[] = {"service_instance", "service_binding", NULL};
static const char *const instance_actions[] = {"create", "update", NULL};
static const char *const binding_actions[] = {"create", NULL};

/* ---- the error path ---- */

/* The JSON path of the value being checked ("services[1].plans[0].id"). Truncation only
 * shortens an error message, which is bounded by OSBQ_ERROR_TEXT_MAX anyway. */
struct path {
    char buf[OSBQ_ERROR_TEXT_MAX]; /* the path text, NUL-terminated */
    size_t len;                    /* strlen(buf) */
};

/* The state of one validation run. */
struct check {
    struct path path;       /* where the checker is */
    struct osbq_error *err; /* the caller's error, may be NULL */
    json_t *ids;            /* every service and plan id so far -> path of its first use */
    json_t *service_names;  /* service name -> path of its first use */
    json_t *plan_names;     /* plan name -> path of its first use, in the current service */
};

static size_t path_push(struct path *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends to the path and returns the length to restore with path_pop. */
static size_t path_push(struct path *p, const char *fmt, ...)
{
    size_t saved = p->len;
    size_t room = sizeof p->buf - p->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(p->buf + p->len, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        p->len += (size_t)n < room ? (size_t)n : room - 1;
    return saved;
}

static size_t path_key(struct path *p, const char *key)
{
    return p->len == 0 ? path_push(p, "%s", key) : path_push(p, ".%s", key);
}

static size_t path_index(struct path *p, size_t i)
{
    return path_push(p, "[%zu]", i);
}

static void path_pop(struct path *p, size_t saved)
{
    p->len = saved;
    p->buf[saved] = '\0';
}

/* Runs check on each element of array, the path naming the element's index. */
static int check_each(struct check *c, json_t *array, int (*check)(struct check *, json_t *))
{
    size_t i;
    json_t *item;
    json_array_foreach (array, i, item) {
        size_t mark = path_index(&c->path, i);
        if (check(c, item) < 0)
            return -1;
        path_pop(&c->path, mark);
    }
    return 0;
}

static int fail(struct check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets "<path>: <rule>" and returns -1. */
static int fail(struct check *c, const char *fmt, ...)
{
    char rule[OSBQ_ERROR_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(rule, sizeof rule, fmt, ap);
    va_end(ap);
    return osbq_error_set(c->err, OSBQ_ERR_INVALID, "%s: %s", c->path.buf, rule);
}

static int out_of_memory(struct osbq_error *err)
{
    return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
}

/* Writes "a, b, c" for a NULL-terminated list, for messages that name the allowed values. */
static void join(char *out, size_t size, const char *const *list)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; list[i] != NULL && used < size; i++) {
        int n = snprintf(out + used, size - used, "%s%s", i > 0 ? ", " : "", list[i]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}

static bool in_list(const char *s, const char *const *list)
{
    for (size_t i = 0; list[i] != NULL; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

/* ---- field checks ---- */

enum kind {
    KIND_STRING,
    KIND_NAME, /* a non-empty string */
    KIND_BOOL,
    KIND_OBJECT,
    KIND_ARRAY,
};

static const char *const kind_text[] = {
    [KIND_STRING] = "a string",  [KIND_NAME] = "a non-empty string", [KIND_BOOL] = "a boolean",
    [KIND_OBJECT] = "an object", [KIND_ARRAY] = "an array",
};

static bool kind_matches(const json_t *v, enum kind kind)
{
    switch (kind) {
    case KIND_STRING:
    case KIND_NAME:
        return json_is_string(v);
    case KIND_BOOL:
        return json_is_boolean(v);
    case KIND_OBJECT:
        return json_is_object(v);
    case KIND_ARRAY:
        return json_is_array(v);
    }
    return false;
}

/* Checks obj[key] against kind; *out gets the value, NULL when absent and optional. */
static int field(struct check *c, json_t *obj, const char *key, enum kind kind, bool required,
                 json_t **out)
{
    json_t *v = json_object_get(obj, key);
    if (out != NULL)
        *out = v;
    if (v == NULL && !required)
        return 0;
    size_t mark = path_key(&c->path, key);
    int rc = 0;
    if (v == NULL)
        rc = fail(c, "required");
    else if (!kind_matches(v, kind))
        rc = fail(c, "must be %s", kind_text[kind]);
    else if (kind == KIND_NAME && json_string_length(v) == 0)
        rc = fail(c, "must not be empty");
    path_pop(&c->path, mark);
    return rc;
}

static int optional_bools(struct check *c, json_t *obj, const char *const *keys)
{
    for (size_t i = 0; keys[i] != NULL; i++)
        if (field(c, obj, keys[i], KIND_BOOL, false, NULL) < 0)
            return -1;
    return 0;
}

/* obj[key], when present: an object, checked by check with the path naming key. */
static int optional_object(struct check *c, json_t *obj, const char *key,
                           int (*check)(struct check *, json_t *))
{
    json_t *v;
    if (field(c, obj, key, KIND_OBJECT, false, &v) < 0)
        return -1;
    if (v == NULL)
        return 0;
    size_t mark = path_key(&c->path, key);
    if (check(c, v) < 0)
        return -1;
    path_pop(&c->path, mark);
    return 0;
}

/* A required non-empty string that must not repeat a value recorded in seen. */
static int unique_name(struct check *c, json_t *obj, const char *key, json_t *seen)
{
    json_t *v;
    if (field(c, obj, key, KIND_NAME, true, &v) < 0)
        return -1;
    size_t mark = path_key(&c->path, key);
    const char *value = json_string_value(v);
    json_t *first = json_object_get(seen, value);
    if (first != NULL)
        return fail(c, "duplicate of %s", json_string_value(first));
    if (json_object_set_new(seen, value, json_string_nocheck(c->path.buf)) < 0)
        return out_of_memory(c->err);
    path_pop(&c->path, mark);
    return 0;
}

/* An optional array whose elements are strings, from allowed when that is not NULL. */
static int string_list(struct check *c, json_t *obj, const char *key, const char *const *allowed)
{
    json_t *list;
    if (field(c, obj, key, KIND_ARRAY, false, &list) < 0)
        return -1;
    if (list == NULL)
        return 0;
    size_t mark = path_key(&c->path, key);
    size_t i;
    json_t *item;
    json_array_foreach (list, i, item) {
        size_t item_mark = path_index(&c->path, i);
        if (!json_is_string(item))
            return fail(c, "must be a string");
        if (allowed != NULL && !in_list(json_string_value(item), allowed)) {
            char known[256];
            join(known, sizeof known, allowed);
            return fail(c, "unknown permission \"%s\" (known: %s)", json_string_value(item), known);
        }
        path_pop(&c->path, item_mark);
    }
    path_pop(&c->path, mark);
    return 0;
}

/* ---- schemas ---- */

/* Spec: "Schemas MUST NOT contain any external references". Only string values count: an
 * object under "$ref" is a property that happens to have that name. */
static int check_refs(struct check *c, json_t *v)
{
    if (json_is_object(v)) {
        const char *key;
        json_t *child;
        json_object_foreach (v, key, child) {
            size_t mark = path_key(&c->path, key);
            if (strcmp(key, "$ref") == 0 && json_is_string(child) &&
                json_string_value(child)[0] != '#')
                return fail(c, "external $ref \"%s\" not allowed", json_string_value(child));
            if (check_refs(c, child) < 0)
                return -1;
            path_pop(&c->path, mark);
        }
    } else if (json_is_array(v)) {
        return check_each(c, v, check_refs);
    }
    return 0;
}

/* One input parameters schema object ({"parameters": {...}}). */
/* The parameters of an input schema: a JSON Schema of at most 64 kB, no external $ref. */
static int check_parameters(struct check *c, json_t *params)
{
    if (field(c, params, "$schema", KIND_STRING, true, NULL) < 0)
        return -1;
    /* Measured as served: compact, like the body. */
    if (json_dumpb(params, NULL, 0, JSON_COMPACT | JSON_PRESERVE_ORDER) > SCHEMA_MAX_BYTES)
        return fail(c, "larger than 64 kB");
    return check_refs(c, params);
}

static int check_input_schema(struct check *c, json_t *schema)
{
    if (!json_is_object(schema))
        return fail(c, "must be an object");
    return optional_object(c, schema, "parameters", check_parameters);
}

/* obj must be an object whose keys all come from allowed. */
static int known_keys(struct check *c, json_t *obj, const char *const *allowed)
{
    if (!json_is_object(obj))
        return fail(c, "must be an object");
    const char *key;
    json_t *value;
    json_object_foreach (obj, key, value) {
        if (!in_list(key, allowed)) {
            char expected[128];
            join(expected, sizeof expected, allowed);
            path_key(&c->path, key);
            return fail(c, "unknown key (expected %s)", expected);
        }
    }
    return 0;
}

/* schemas.service_instance or schemas.service_binding, with the actions it may describe. */
static int check_schema_group(struct check *c, json_t *schemas, const char *group,
                              const char *const *actions)
{
    json_t *actions_obj = json_object_get(schemas, group);
    if (actions_obj == NULL)
        return 0;
    size_t mark = path_key(&c->path, group);
    if (known_keys(c, actions_obj, actions) < 0)
        return -1;
    for (size_t i = 0; actions[i] != NULL; i++) {
        json_t *schema = json_object_get(actions_obj, actions[i]);
        if (schema == NULL)
            continue;
        size_t action_mark = path_key(&c->path, actions[i]);
        if (check_input_schema(c, schema) < 0)
            return -1;
        path_pop(&c->path, action_mark);
    }
    path_pop(&c->path, mark);
    return 0;
}

static int check_schemas(struct check *c, json_t *plan)
{
    json_t *schemas = json_object_get(plan, "schemas");
    if (schemas == NULL)
        return 0;
    size_t mark = path_key(&c->path, "schemas");
    if (known_keys(c, schemas, schema_groups) < 0 ||
        check_schema_group(c, schemas, "service_instance", instance_actions) < 0 ||
        check_schema_group(c, schemas, "service_binding", binding_actions) < 0)
        return -1;
    path_pop(&c->path, mark);
    return 0;
}

/* ---- osbq settings ---- */

static const struct osbq_setting *find_setting(const char *key, const char *backend)
{
    for (size_t i = 0; i < osbq_setting_count; i++)
        if (strcmp(osbq_settings[i].key, key) == 0 &&
            (osbq_settings[i].backend == NULL || strcmp(osbq_settings[i].backend, backend) == 0))
            return &osbq_settings[i];
    return NULL;
}

static int check_setting(struct check *c, const struct osbq_setting *s, json_t *v)
{
    switch (s->type) {
    case OSBQ_SETTING_BOOL:
        if (!json_is_boolean(v))
            return fail(c, "must be a boolean");
        break;
    case OSBQ_SETTING_STRING:
        if (!json_is_string(v))
            return fail(c, "must be a string");
        break;
    case OSBQ_SETTING_STRING_ARRAY: {
        size_t i;
        json_t *item;
        if (!json_is_array(v) || json_array_size(v) == 0)
            return fail(c, "must be a non-empty array of strings");
        json_array_foreach (v, i, item)
            if (!json_is_string(item) || json_string_length(item) == 0)
                return fail(c, "must be a non-empty array of non-empty strings");
        break;
    }
    case OSBQ_SETTING_STRING_MAP: {
        const char *name;
        json_t *item;
        if (!json_is_object(v))
            return fail(c, "must be an object of strings");
        json_object_foreach (v, name, item)
            if (!json_is_string(item))
                return fail(c, "must be an object of strings (\"%s\" is not)", name);
        break;
    }
    case OSBQ_SETTING_INT:
        if (!json_is_integer(v) || json_integer_value(v) < s->min || json_integer_value(v) > s->max)
            return fail(c,
                        "must be an integer from %" JSON_INTEGER_FORMAT " to %" JSON_INTEGER_FORMAT,
                        s->min, s->max);
        break;
    }
    return 0;
}

static int check_osbq(struct check *c, json_t *plan)
{
    json_t *osbq = json_object_get(plan, "osbq");
    size_t mark = path_key(&c->path, "osbq");
    if (osbq == NULL)
        return fail(c, "required (an object with at least \"backend\")");
    if (!json_is_object(osbq))
        return fail(c, "must be an object");
    /* The backend first: it decides which other keys exist. */
    json_t *backend;
    if (field(c, osbq, "backend", KIND_STRING, true, &backend) < 0)
        return -1;
    const char *name = json_string_value(backend);
    if (!in_list(name, osbq_backend_names)) {
        char known[128];
        join(known, sizeof known, osbq_backend_names);
        path_key(&c->path, "backend");
        return fail(c, "unknown backend \"%s\" (known: %s)", name, known);
    }
    const char *key;
    json_t *value;
    json_object_foreach (osbq, key, value) {
        size_t key_mark = path_key(&c->path, key);
        const struct osbq_setting *s = find_setting(key, name);
        if (s == NULL)
            return fail(c, "unknown setting for backend %s", name);
        if (check_setting(c, s, value) < 0)
            return -1;
        path_pop(&c->path, key_mark);
    }
    path_pop(&c->path, mark);
    return 0;
}

/* ---- services and plans ---- */

static int check_maintenance_info(struct check *c, json_t *maintenance)
{
    json_t *version;
    if (field(c, maintenance, "version", KIND_STRING, true, &version) < 0 ||
        field(c, maintenance, "description", KIND_STRING, false, NULL) < 0)
        return -1;
    if (!osbq_semver_valid(json_string_value(version))) {
        path_key(&c->path, "version");
        return fail(c, "\"%s\" is not a semantic version 2.0.0", json_string_value(version));
    }
    return 0;
}

static int check_plan(struct check *c, json_t *plan)
{
    static const char *const bools[] = {"free", "bindable", "binding_rotatable", "plan_updateable",
                                        NULL};
    if (!json_is_object(plan))
        return fail(c, "must be an object");
    if (unique_name(c, plan, "id", c->ids) < 0 || unique_name(c, plan, "name", c->plan_names) < 0 ||
        field(c, plan, "description", KIND_NAME, true, NULL) < 0 ||
        field(c, plan, "metadata", KIND_OBJECT, false, NULL) < 0 ||
        optional_bools(c, plan, bools) < 0)
        return -1;

    if (check_schemas(c, plan) < 0)
        return -1;

    json_t *polling = json_object_get(plan, "maximum_polling_duration");
    if (polling != NULL && (!json_is_integer(polling) || json_integer_value(polling) < 0)) {
        path_key(&c->path, "maximum_polling_duration");
        return fail(c, "must be a non-negative integer");
    }

    if (optional_object(c, plan, "maintenance_info", check_maintenance_info) < 0)
        return -1;
    return check_osbq(c, plan);
}

static int check_dashboard_client(struct check *c, json_t *client)
{
    if (field(c, client, "id", KIND_NAME, true, NULL) < 0 ||
        field(c, client, "secret", KIND_NAME, true, NULL) < 0 ||
        field(c, client, "redirect_uri", KIND_STRING, false, NULL) < 0)
        return -1;
    return 0;
}

/* A binding made asynchronously can be read only by fetching it (spec, Polling Last Operation
 * for Service Bindings: "it can then immediately be fetched"), so a plan that binds only
 * asynchronously needs its service's bindings_retrievable; elsewhere an asynchronous bind is
 * answered synchronously (docs/conformance.md). 0, or -1 naming the plan's setting. */
static int check_async_binds_retrievable(struct check *c, json_t *plans, json_t *retrievable)
{
    if (json_is_true(retrievable))
        return 0;
    size_t i;
    json_t *plan;
    json_array_foreach (plans, i, plan) {
        json_t *osbq = json_object_get(plan, "osbq");
        if (!json_is_true(json_object_get(osbq, "bind_async_required")))
            continue;
        path_index(&c->path, i);
        path_key(&c->path, "osbq");
        path_key(&c->path, "bind_async_required");
        return fail(c, "needs the service's \"bindings_retrievable\": true: a platform reads "
                       "an asynchronous binding's credentials only by fetching it");
    }
    return 0;
}

static int check_service(struct check *c, json_t *service)
{
    static const char *const bools[] = {"instances_retrievable", "bindings_retrievable",
                                        "allow_context_updates", "plan_updateable", NULL};
    if (!json_is_object(service))
        return fail(c, "must be an object");
    if (unique_name(c, service, "name", c->service_names) < 0 ||
        unique_name(c, service, "id", c->ids) < 0 ||
        field(c, service, "description", KIND_NAME, true, NULL) < 0 ||
        string_list(c, service, "tags", NULL) < 0 ||
        string_list(c, service, "requires", permissions) < 0 ||
        field(c, service, "bindable", KIND_BOOL, true, NULL) < 0 ||
        optional_bools(c, service, bools) < 0 ||
        field(c, service, "metadata", KIND_OBJECT, false, NULL) < 0 ||
        optional_object(c, service, "dashboard_client", check_dashboard_client) < 0)
        return -1;
    /* One place to look for a plan's settings, so no inheritance from the service. */
    if (json_object_get(service, "osbq") != NULL) {
        path_key(&c->path, "osbq");
        return fail(c, "settings belong on plans");
    }

    json_t *plans;
    if (field(c, service, "plans", KIND_ARRAY, true, &plans) < 0)
        return -1;
    size_t mark = path_key(&c->path, "plans");
    if (json_array_size(plans) == 0)
        return fail(c, "must contain at least one plan");
    json_object_clear(c->plan_names);
    if (check_each(c, plans, check_plan) < 0 ||
        check_async_binds_retrievable(c, plans, json_object_get(service, "bindings_retrievable")))
        return -1;
    path_pop(&c->path, mark);
    return 0;
}

int osbq_catalog_check(json_t *root, struct osbq_error *err)
{
    if (!json_is_object(root))
        return osbq_error_set(err, OSBQ_ERR_INVALID, "top level: must be an object");
    struct check c = {.err = err};
    int rc = -1;
    c.ids = json_object();
    c.service_names = json_object();
    c.plan_names = json_object();
    if (c.ids == NULL || c.service_names == NULL || c.plan_names == NULL) {
        out_of_memory(err);
        goto cleanup;
    }
    json_t *services;
    if (field(&c, root, "services", KIND_ARRAY, true, &services) < 0)
        goto cleanup;
    path_key(&c.path, "services");
    if (check_each(&c, services, check_service) < 0)
        goto cleanup;
    rc = 0;
cleanup:
    json_decref(c.ids);
    json_decref(c.service_names);
    json_decref(c.plan_names);
    return rc;
}
