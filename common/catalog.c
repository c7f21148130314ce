/* The catalog loader: parses the file, has it checked (catalog_check.c), builds the tables of
 * services and plans with their compiled schemas and the public body (catalog_body.c), and
 * answers lookups by id. */
#include "catalog.h"

#include <curl/curl.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_body.h"
#include "catalog_check.h"
#include "owned.h"
#include "schema.h"
#include "semver.h"

struct osbq_catalog {
    json_t *root;                      /* the parsed file; everything borrowed points into it */
    struct osbq_service *services;     /* the services, in file order */
    size_t service_count;              /* number of services */
    struct osbq_plan *plans;           /* the plans of all services, in file order */
    size_t plan_count;                 /* number of plans */
    const char **requires_lists;       /* the services' NULL-terminated lists, back to back */
    json_t *service_index;             /* service id -> index into services */
    json_t *plan_index;                /* plan id -> index into plans */
    char *body;                        /* the public body, compact JSON without "osbq" */
    size_t body_len;                   /* strlen(body) */
    char etag[OSBQ_CATALOG_ETAG_SIZE]; /* the quoted hex digest of body */
    struct osbq_schema **schemas;      /* the plans' compiled parameter schemas, to free */
    size_t schema_count;               /* number of schemas */
};

static int out_of_memory(struct osbq_error *err)
{
    return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
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
    p->halt_on_delete = !json_is_false(json_object_get(osbq, "halt_on_delete"));
    p->binding_ttl_s = json_integer_value(json_object_get(osbq, "binding_ttl_s"));
    p->settings = osbq;
    p->json = plan;
}

/* Compiles one schemas.<group>.<action>.parameters of plan (services[si].plans[pi]) into *out;
 * the catalog owns it. Checked here rather than in osbq_catalog_check so each is compiled once. */
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
int osbq_catalog_body_subset(const struct osbq_catalog *catalog, const bool *keep, char **body,
                             size_t *len, char etag[OSBQ_CATALOG_ETAG_SIZE], struct osbq_error *err)
{
    return osbq_catalog_public_body(catalog->root, keep, catalog->service_count, body, len, etag,
                                    err);
}

/* Takes ownership of root whatever the outcome. */
static int load_root(json_t *root, struct osbq_catalog **out, struct osbq_error *err)
{
    struct osbq_catalog *cat = NULL;
    int rc = -1;
    if (osbq_catalog_check(root, err) < 0)
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
    if (build_tables(cat, err) < 0 || osbq_catalog_public_body(cat->root, NULL, 0, &cat->body,
                                                               &cat->body_len, cat->etag, err) < 0)
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
    OSBQ_OWNED_OR_RETURN(struct osbq_catalog, cat, cp);
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

bool osbq_plan_outdated(const struct osbq_plan *plan, const char *version)
{
    if (plan == NULL || plan->maintenance_version == NULL)
        return false;
    return version == NULL || !osbq_semver_valid(version) ||
           osbq_semver_compare(version, plan->maintenance_version) < 0;
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
