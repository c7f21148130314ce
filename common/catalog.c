/* The catalog loader: parses the file, checks it against the OSB spec and osbq's plan settings,
 * and prepares the public body, its ETag and the id lookups. */
#include "catalog.h"

#include <curl/curl.h>
#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_settings.h"
#include "schema.h"
#include "semver.h"

/* Spec: "Schemas MUST NOT be larger than 64kB". */
#define SCHEMA_MAX_BYTES 65536
/* 128 bits of BLAKE2b: plenty to tell catalog versions apart, short enough for a header. */
#define ETAG_HASH_BYTES 16
_Static_assert(2 * ETAG_HASH_BYTES + 3 == OSBQ_CATALOG_ETAG_SIZE, "ETag size");

struct osbq_catalog {
    json_t *root;                       /* the parsed file; everything borrowed points into it */
    struct osbq_service *services;      /* the services, in file order */
    size_t service_count;               /* number of services */
    struct osbq_plan *plans;            /* the plans of all services, in file order */
    size_t plan_count;                  /* number of plans */
    const char **requires_lists;        /* the services' NULL-terminated lists, back to back */
    json_t *service_index;              /* service id -> index into services */
    json_t *plan_index;                 /* plan id -> index into plans */
    char *body;                         /* the public body, compact JSON without "osbq" */
    size_t body_len;                    /* strlen(body) */
    char etag[2 * ETAG_HASH_BYTES + 3]; /* the quoted hex digest of body */
    struct osbq_schema **schemas;       /* the plans' compiled parameter schemas, to free */
    size_t schema_count;                /* number of schemas */
};

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
        size_t i;
        json_t *child;
        json_array_foreach (v, i, child) {
            size_t mark = path_index(&c->path, i);
            if (check_refs(c, child) < 0)
                return -1;
            path_pop(&c->path, mark);
        }
    }
    return 0;
}

/* One input parameters schema object ({"parameters": {...}}). */
static int check_input_schema(struct check *c, json_t *schema)
{
    if (!json_is_object(schema))
        return fail(c, "must be an object");
    json_t *params;
    if (field(c, schema, "parameters", KIND_OBJECT, false, &params) < 0)
        return -1;
    if (params == NULL)
        return 0;
    size_t mark = path_key(&c->path, "parameters");
    if (field(c, params, "$schema", KIND_STRING, true, NULL) < 0)
        return -1;
    /* Measured as served: compact, like the body. */
    if (json_dumpb(params, NULL, 0, JSON_COMPACT | JSON_PRESERVE_ORDER) > SCHEMA_MAX_BYTES)
        return fail(c, "larger than 64 kB");
    if (check_refs(c, params) < 0)
        return -1;
    path_pop(&c->path, mark);
    return 0;
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

    json_t *maintenance;
    if (field(c, plan, "maintenance_info", KIND_OBJECT, false, &maintenance) < 0)
        return -1;
    if (maintenance != NULL) {
        size_t mark = path_key(&c->path, "maintenance_info");
        json_t *version;
        if (field(c, maintenance, "version", KIND_STRING, true, &version) < 0 ||
            field(c, maintenance, "description", KIND_STRING, false, NULL) < 0)
            return -1;
        if (!osbq_semver_valid(json_string_value(version))) {
            path_key(&c->path, "version");
            return fail(c, "\"%s\" is not a semantic version 2.0.0", json_string_value(version));
        }
        path_pop(&c->path, mark);
    }
    return check_osbq(c, plan);
}

static int check_dashboard_client(struct check *c, json_t *service)
{
    json_t *client;
    if (field(c, service, "dashboard_client", KIND_OBJECT, false, &client) < 0)
        return -1;
    if (client == NULL)
        return 0;
    size_t mark = path_key(&c->path, "dashboard_client");
    if (field(c, client, "id", KIND_NAME, true, NULL) < 0 ||
        field(c, client, "secret", KIND_NAME, true, NULL) < 0 ||
        field(c, client, "redirect_uri", KIND_STRING, false, NULL) < 0)
        return -1;
    path_pop(&c->path, mark);
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
        check_dashboard_client(c, service) < 0)
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
    size_t i;
    json_t *plan;
    json_array_foreach (plans, i, plan) {
        size_t plan_mark = path_index(&c->path, i);
        if (check_plan(c, plan) < 0)
            return -1;
        path_pop(&c->path, plan_mark);
    }
    path_pop(&c->path, mark);
    return 0;
}

/* Validates root, stopping at the first error. */
static int check_catalog(json_t *root, struct osbq_error *err)
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
    size_t i;
    json_t *service;
    json_array_foreach (services, i, service) {
        size_t mark = path_index(&c.path, i);
        if (check_service(&c, service) < 0)
            goto cleanup;
        path_pop(&c.path, mark);
    }
    rc = 0;
cleanup:
    json_decref(c.ids);
    json_decref(c.service_names);
    json_decref(c.plan_names);
    return rc;
}

/* ---- building the catalog ---- */

static void fill_plan(struct osbq_plan *p, json_t *plan, const struct osbq_service *service)
{
    json_t *osbq = json_object_get(plan, "osbq");
    json_t *bindable = json_object_get(plan, "bindable");
    json_t *updateable = json_object_get(plan, "plan_updateable");
    json_t *timeout = json_object_get(osbq, "sync_timeout_ms");

    p->id = json_string_value(json_object_get(plan, "id"));
    p->name = json_string_value(json_object_get(plan, "name"));
    p->service = service;
    p->bindable = bindable != NULL ? json_is_true(bindable) : service->bindable;
    p->plan_updateable = updateable != NULL
                             ? json_is_true(updateable)
                             : json_is_true(json_object_get(service->json, "plan_updateable"));
    p->binding_rotatable = json_is_true(json_object_get(plan, "binding_rotatable"));
    p->maintenance_version =
        json_string_value(json_object_get(json_object_get(plan, "maintenance_info"), "version"));
    p->backend = json_string_value(json_object_get(osbq, "backend"));
    p->async_required = json_is_true(json_object_get(osbq, "async_required"));
    p->sync_timeout_ms =
        timeout != NULL ? json_integer_value(timeout) : OSBQ_CATALOG_SYNC_TIMEOUT_MS_DEFAULT;
    p->bind_async_required = json_is_true(json_object_get(osbq, "bind_async_required"));
    p->requires_app = json_is_true(json_object_get(osbq, "requires_app"));
    p->binding_ttl_s = json_integer_value(json_object_get(osbq, "binding_ttl_s"));
    p->settings = osbq;
    p->json = plan;
}

/* Compiles one schemas.<group>.<action>.parameters of plan (services[si].plans[pi]) into *out;
 * the catalog owns it. Checked here rather than in check_catalog so each is compiled once. */
static int compile_schema(struct osbq_catalog *cat, const json_t *plan, size_t si, size_t pi,
                          const char *group, const char *action, const struct osbq_schema **out,
                          struct osbq_error *err)
{
    json_t *params = json_object_get(
        json_object_get(json_object_get(json_object_get(plan, "schemas"), group), action),
        "parameters");
    *out = NULL;
    if (params == NULL)
        return 0;
    char where[160];
    (void)snprintf(where, sizeof where, "services[%zu].plans[%zu].schemas.%s.%s.parameters", si, pi,
                   group, action);
    char msg[OSBQ_ERROR_TEXT_MAX];
    enum osbq_schema_status status;
    struct osbq_schema *schema =
        osbq_schema_compile(params, OSBQ_SCHEMA_DRAFT4, where, &status, msg, sizeof msg);
    if (schema == NULL)
        return status == OSBQ_SCHEMA_NO_MEMORY ? out_of_memory(err)
                                               : osbq_error_set(err, OSBQ_ERR_INVALID, "%s", msg);
    cat->schemas[cat->schema_count++] = schema;
    *out = schema;
    return 0;
}

static int compile_plan_schemas(struct osbq_catalog *cat, struct osbq_plan *p, size_t si, size_t pi,
                                struct osbq_error *err)
{
    return compile_schema(cat, p->json, si, pi, "service_instance", "create", &p->provision_schema,
                          err) < 0 ||
                   compile_schema(cat, p->json, si, pi, "service_instance", "update",
                                  &p->update_schema, err) < 0 ||
                   compile_schema(cat, p->json, si, pi, "service_binding", "create",
                                  &p->bind_schema, err) < 0
               ? -1
               : 0;
}

/* Fills the service and plan arrays and the id indexes from the validated root. */
static int build_tables(struct osbq_catalog *cat, struct osbq_error *err)
{
    json_t *services = json_object_get(cat->root, "services");
    size_t n = json_array_size(services);
    size_t plan_total = 0;
    size_t requires_total = 0;
    size_t i;
    json_t *service;
    json_array_foreach (services, i, service) {
        plan_total += json_array_size(json_object_get(service, "plans"));
        requires_total += json_array_size(json_object_get(service, "requires"));
    }

    /* +1: calloc(0) may return NULL, which would read as a failure. */
    cat->services = calloc(n + 1, sizeof *cat->services);
    cat->plans = calloc(plan_total + 1, sizeof *cat->plans);
    cat->requires_lists = calloc(requires_total + n + 1, sizeof *cat->requires_lists);
    cat->schemas = calloc(3 * plan_total + 1, sizeof *cat->schemas); /* 3 schemas per plan */
    cat->service_index = json_object();
    cat->plan_index = json_object();
    if (cat->services == NULL || cat->plans == NULL || cat->requires_lists == NULL ||
        cat->service_index == NULL || cat->plan_index == NULL || cat->schemas == NULL)
        return out_of_memory(err);

    const char **next_require = cat->requires_lists;
    json_array_foreach (services, i, service) {
        struct osbq_service *s = &cat->services[i];
        json_t *plans = json_object_get(service, "plans");
        s->id = json_string_value(json_object_get(service, "id"));
        s->name = json_string_value(json_object_get(service, "name"));
        s->bindable = json_is_true(json_object_get(service, "bindable"));
        s->instances_retrievable = json_is_true(json_object_get(service, "instances_retrievable"));
        s->bindings_retrievable = json_is_true(json_object_get(service, "bindings_retrievable"));
        s->allow_context_updates = json_is_true(json_object_get(service, "allow_context_updates"));
        s->json = service;

        s->requires_list = next_require;
        size_t j;
        json_t *item;
        json_array_foreach (json_object_get(service, "requires"), j, item)
            *next_require++ = json_string_value(item);
        *next_require++ = NULL;

        s->plans = &cat->plans[cat->plan_count];
        s->plan_count = json_array_size(plans);
        json_array_foreach (plans, j, item) {
            fill_plan(&cat->plans[cat->plan_count], item, s);
            if (compile_plan_schemas(cat, &cat->plans[cat->plan_count], i, j, err) < 0)
                return -1;
            if (json_object_set_new(cat->plan_index, cat->plans[cat->plan_count].id,
                                    json_integer((json_int_t)cat->plan_count)) < 0)
                return out_of_memory(err);
            cat->plan_count++;
        }
        if (json_object_set_new(cat->service_index, s->id, json_integer((json_int_t)i)) < 0)
            return out_of_memory(err);
        cat->service_count++;
    }
    return 0;
}

/* 15 significant digits print any decimal a person writes as written (0.99 stays 0.99 instead
 * of 0.98999999999999999); when some number needs all 17 to round-trip, the whole body gets 17,
 * as jansson has one precision per dump. */
static char *dump_body(const json_t *doc)
{
    const size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER;
    char *text = json_dumps(doc, flags | JSON_REAL_PRECISION(15));
    if (text == NULL)
        return NULL;
    json_t *back = json_loads(text, 0, NULL);
    bool exact = back != NULL && json_equal(back, doc);
    json_decref(back);
    if (exact)
        return text;
    free(text);
    return json_dumps(doc, flags | JSON_REAL_PRECISION(17));
}

/* Dumps copy (osbq objects already removed) as a served body and computes its quoted ETag. */
static int body_and_etag(const json_t *copy, char **body, size_t *len,
                         char etag[2 * ETAG_HASH_BYTES + 3], struct osbq_error *err)
{
    *body = dump_body(copy);
    if (*body == NULL)
        return out_of_memory(err);
    *len = strlen(*body);
    unsigned char hash[ETAG_HASH_BYTES];
    char hex[2 * ETAG_HASH_BYTES + 1];
    if (crypto_generichash(hash, sizeof hash, (const unsigned char *)*body, *len, NULL, 0) != 0) {
        free(*body);
        *body = NULL;
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot hash the catalog body");
    }
    sodium_bin2hex(hex, sizeof hex, hash, sizeof hash);
    etag[0] = '"';
    memcpy(etag + 1, hex, 2 * ETAG_HASH_BYTES);
    etag[2 * ETAG_HASH_BYTES + 1] = '"';
    etag[2 * ETAG_HASH_BYTES + 2] = '\0';
    return 0;
}

/* A deep copy of the catalog without "osbq" objects and, when keep is not NULL, without the
 * services whose keep[i] is false. */
static json_t *public_copy(const struct osbq_catalog *cat, const bool *keep)
{
    json_t *copy = json_deep_copy(cat->root);
    if (copy == NULL)
        return NULL;
    json_t *services = json_object_get(copy, "services");
    for (size_t i = json_array_size(services), k = cat->service_count; i > 0; i--) {
        if (keep != NULL && i <= k && !keep[i - 1]) {
            json_array_remove(services, i - 1);
            continue;
        }
        size_t j;
        json_t *plan;
        json_array_foreach (json_object_get(json_array_get(services, i - 1), "plans"), j, plan)
            json_object_del(plan, "osbq");
    }
    return copy;
}

static int build_body(struct osbq_catalog *cat, struct osbq_error *err)
{
    json_t *copy = public_copy(cat, NULL);
    if (copy == NULL)
        return out_of_memory(err);
    int rc = body_and_etag(copy, &cat->body, &cat->body_len, cat->etag, err);
    json_decref(copy);
    return rc;
}

int osbq_catalog_body_subset(const struct osbq_catalog *catalog, const bool *keep, char **body,
                             size_t *len, char etag[OSBQ_CATALOG_ETAG_SIZE], struct osbq_error *err)
{
    json_t *copy = public_copy(catalog, keep);
    if (copy == NULL)
        return out_of_memory(err);
    int rc = body_and_etag(copy, body, len, etag, err);
    json_decref(copy);
    return rc;
}

/* Takes ownership of root whatever the outcome. */
static int load_root(json_t *root, struct osbq_catalog **out, struct osbq_error *err)
{
    struct osbq_catalog *cat = NULL;
    int rc = -1;
    if (check_catalog(root, err) < 0)
        goto cleanup;
    if (sodium_init() < 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot initialize libsodium");
        goto cleanup;
    }
    cat = calloc(1, sizeof *cat);
    if (cat == NULL) {
        out_of_memory(err);
        goto cleanup;
    }
    cat->root = root;
    root = NULL;
    if (build_tables(cat, err) < 0 || build_body(cat, err) < 0)
        goto cleanup;
    *out = cat;
    cat = NULL;
    rc = 0;
cleanup:
    json_decref(root);
    osbq_catalog_destroy(&cat);
    return rc;
}

static int parse_error(const json_error_t *jerr, struct osbq_error *err)
{
    return osbq_error_set(err, OSBQ_ERR_INVALID, "line %d, column %d: %s", jerr->line, jerr->column,
                          jerr->text);
}

int osbq_catalog_load_file(const char *path, struct osbq_catalog **out, struct osbq_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "cannot read %s: %s", path, strerror(errno));
    json_error_t jerr;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    int read_errno = errno;
    /* A read error (a directory, an I/O error) would otherwise look like truncated JSON. */
    bool read_failed = ferror(f) != 0;
    fclose(f);
    if (root == NULL && read_failed)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "cannot read %s: %s", path,
                              strerror(read_errno));
    if (root == NULL)
        return parse_error(&jerr, err);
    return load_root(root, out, err);
}

int osbq_catalog_load_text(const char *text, size_t len, struct osbq_catalog **out,
                           struct osbq_error *err)
{
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return parse_error(&jerr, err);
    return load_root(root, out, err);
}

void osbq_catalog_destroy(struct osbq_catalog **cp)
{
    if (cp == NULL || *cp == NULL)
        return;
    struct osbq_catalog *cat = *cp;
    free(cat->services);
    free(cat->plans);
    free(cat->requires_lists);
    for (size_t i = 0; i < cat->schema_count; i++)
        osbq_schema_free(cat->schemas[i]);
    free(cat->schemas);
    json_decref(cat->service_index);
    json_decref(cat->plan_index);
    free(cat->body);
    json_decref(cat->root);
    free(cat);
    *cp = NULL;
}

const char *osbq_catalog_body(const struct osbq_catalog *catalog, size_t *len)
{
    if (len != NULL)
        *len = catalog->body_len;
    return catalog->body;
}

const char *osbq_catalog_etag(const struct osbq_catalog *catalog)
{
    return catalog->etag;
}

const struct osbq_service *osbq_catalog_service(const struct osbq_catalog *catalog,
                                                const char *service_id)
{
    if (catalog == NULL || service_id == NULL)
        return NULL;
    json_t *i = json_object_get(catalog->service_index, service_id);
    return i != NULL ? &catalog->services[json_integer_value(i)] : NULL;
}

const struct osbq_plan *osbq_catalog_plan(const struct osbq_catalog *catalog, const char *plan_id)
{
    if (catalog == NULL || plan_id == NULL)
        return NULL;
    json_t *i = json_object_get(catalog->plan_index, plan_id);
    return i != NULL ? &catalog->plans[json_integer_value(i)] : NULL;
}

void osbq_catalog_metric_labels(const struct osbq_catalog *catalog, const char *service_id,
                                const char *plan_id, const char **service, const char **plan)
{
    const struct osbq_plan *found = osbq_catalog_plan(catalog, plan_id);
    const struct osbq_service *known = service_id != NULL
                                           ? osbq_catalog_service(catalog, service_id)
                                       : found != NULL ? found->service
                                                       : NULL;
    *service = known != NULL ? known->id : OSBQ_CATALOG_UNKNOWN_LABEL;
    *plan = found != NULL && found->service == known ? found->id : OSBQ_CATALOG_UNKNOWN_LABEL;
}

size_t osbq_catalog_service_count(const struct osbq_catalog *catalog)
{
    return catalog->service_count;
}

const struct osbq_service *osbq_catalog_service_at(const struct osbq_catalog *catalog, size_t i)
{
    return i < catalog->service_count ? &catalog->services[i] : NULL;
}

char *osbq_plan_dashboard_url(const struct osbq_plan *plan, const char *instance_id)
{
    const char *tmpl = json_string_value(json_object_get(plan->settings, "dashboard_url_template"));
    if (tmpl == NULL && json_is_true(json_object_get(plan->settings, "dashboard")) &&
        strcmp(plan->backend, "sim") == 0)
        tmpl = "https://sim.osbq.invalid/dashboard/{instance_id}";
    if (tmpl == NULL)
        return NULL;
    /* curl's encoder: the id may hold any byte and must stay inside its URL segment. */
    char *escaped = curl_easy_escape(NULL, instance_id, 0);
    if (escaped == NULL)
        return NULL;
    static const char marker[] = "{instance_id}";
    const char *at = strstr(tmpl, marker);
    size_t len = strlen(tmpl) + (at ? strlen(escaped) : 0) + 1;
    char *url = malloc(len);
    if (url != NULL) {
        if (at != NULL)
            (void)snprintf(url, len, "%.*s%s%s", (int)(at - tmpl), tmpl, escaped,
                           at + sizeof marker - 1);
        else
            (void)snprintf(url, len, "%s", tmpl);
    }
    curl_free(escaped);
    return url;
}

int64_t osbq_plan_deadline_s(const struct osbq_plan *plan, const char *kind)
{
    char key[40];
    (void)snprintf(key, sizeof key, "%s_deadline_s", kind);
    json_t *value = json_object_get(plan->settings, key);
    return value != NULL ? json_integer_value(value) : OSBQ_CATALOG_DEADLINE_S_DEFAULT;
}
