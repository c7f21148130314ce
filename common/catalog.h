/* The catalog: loaded once from OSBQ_CATALOG, validated against the OSB spec and the osbq
 * plan settings, and served to platforms with every "osbq" object removed. */
#ifndef OSBQ_CATALOG_H
#define OSBQ_CATALOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Default for a plan's osbq.sync_timeout_ms: below Cloud Foundry's 60 s broker client timeout. */
#define OSBQ_CATALOG_SYNC_TIMEOUT_MS_DEFAULT 50000

struct osbq_catalog;
struct osbq_service;
struct osbq_schema;

/* One plan, as the gateway and the worker need it. Borrowed from the catalog, valid until
 * osbq_catalog_destroy. Booleans already hold the effective value (plan overrides service,
 * spec defaults otherwise). */
struct osbq_plan {
    const char *id;                     /* plan id, unique across the catalog */
    const char *name;                   /* plan name, unique in its service */
    const struct osbq_service *service; /* the service this plan belongs to */
    bool bindable;                      /* plan.bindable, else service.bindable */
    bool plan_updateable;               /* plan.plan_updateable, else service's, else false */
    bool binding_rotatable;             /* plan.binding_rotatable, else false */
    const char *maintenance_version;    /* maintenance_info.version, or NULL */
    const char *backend;                /* osbq.backend: "sim", ... */
    bool async_required;                /* osbq.async_required, else false */
    int64_t sync_timeout_ms;            /* osbq.sync_timeout_ms, else the default above */
    bool bind_async_required;           /* osbq.bind_async_required: binds need async (2.14) */
    bool requires_app;                  /* osbq.requires_app: binds need an app_guid */
    bool halt_on_delete;    /* osbq.halt_on_delete, else true: a delete of an instance being
                             * provisioned (a binding being bound) halts that operation
                             * (docs/decisions/0051-delete-halts-a-creation.md) */
    int64_t binding_ttl_s;  /* osbq.binding_ttl_s: credential lifetime, 0 = none */
    const json_t *settings; /* the plan's whole "osbq" object (backend options) */
    const json_t *json;     /* the plan object as in the file, "osbq" included */
    /* schemas.*.parameters compiled (schema.h), NULL when the plan declares none */
    const struct osbq_schema *provision_schema; /* service_instance.create */
    const struct osbq_schema *update_schema;    /* service_instance.update */
    const struct osbq_schema *bind_schema;      /* service_binding.create */
};

/* One service offering. Borrowed from the catalog, valid until osbq_catalog_destroy. */
struct osbq_service {
    const char *id;                   /* service id, unique across the catalog */
    const char *name;                 /* service name, unique across the catalog */
    bool bindable;                    /* service.bindable */
    bool instances_retrievable;       /* service.instances_retrievable, else false */
    bool bindings_retrievable;        /* service.bindings_retrievable, else false */
    bool allow_context_updates;       /* service.allow_context_updates, else false */
    const char *const *requires_list; /* service.requires, NULL-terminated (may be empty) */
    const struct osbq_plan *plans;    /* the service's plans, in file order */
    size_t plan_count;                /* number of plans, >= 1 */
    const json_t *json;               /* the service object as in the file */
};

/* Reads, parses and validates the catalog file at path. On success *out owns a new catalog
 * (free with osbq_catalog_destroy). On failure returns -1 with err->code OSBQ_ERR_INVALID and
 * err->text naming the place and the rule, e.g.
 *   "services[1].plans[0].id: duplicate of services[0].plans[2].id"
 * or, for unreadable or unparsable files, what went wrong (with line and column). */
int osbq_catalog_load_file(const char *path, struct osbq_catalog **out, struct osbq_error *err);

/* Same as osbq_catalog_load_file for an in-memory JSON text of len bytes. */
int osbq_catalog_load_text(const char *text, size_t len, struct osbq_catalog **out,
                           struct osbq_error *err);

/* Frees the catalog and sets *cp to NULL; accepts NULL and *cp == NULL. */
void osbq_catalog_destroy(struct osbq_catalog **cp);

/* The public catalog response body (compact JSON, "osbq" objects removed); borrowed. */
const char *osbq_catalog_body(const struct osbq_catalog *catalog, size_t *len);

/* The strong ETag of that body, quotes included (e.g. "\"3f2a...\""); borrowed. */
const char *osbq_catalog_etag(const struct osbq_catalog *catalog);

/* Bytes of a quoted ETag as osbq_catalog_etag gives it, NUL included. */
#define OSBQ_CATALOG_ETAG_SIZE 35

/* The public body of the catalog reduced to the services i whose keep[i] is true (keep has
 * osbq_catalog_service_count entries), and its ETag: what one platform sees. Returns 0 with
 * *body (caller frees) and *len, or -1 with err. */
int osbq_catalog_body_subset(const struct osbq_catalog *catalog, const bool *keep, char **body,
                             size_t *len, char etag[OSBQ_CATALOG_ETAG_SIZE],
                             struct osbq_error *err);

/* Lookups by id; borrowed results, NULL when unknown. */
const struct osbq_service *osbq_catalog_service(const struct osbq_catalog *catalog,
                                                const char *service_id);
const struct osbq_plan *osbq_catalog_plan(const struct osbq_catalog *catalog, const char *plan_id);

/* Whether an instance of plan whose maintenance_info version is version (NULL or "" when it
 * has none) is behind the plan's: the plan has a version and the instance's is missing, not a
 * semantic version, or older (osbq-ctl instances --outdated, the osbq_instances_outdated
 * gauge). */
bool osbq_plan_outdated(const struct osbq_plan *plan, const char *version);

/* The value of the service and plan labels of a metric for anything not in the catalog. */
#define OSBQ_CATALOG_UNKNOWN_LABEL "unknown"

/* The service and plan label values of an operation's metrics: the catalog's ids, each
 * OSBQ_CATALOG_UNKNOWN_LABEL when not the catalog's (a plan only counts when it is of that
 * service; service_id NULL: the plan's own), so a metric has at most one series per catalog
 * plan, per service for an unknown plan, and one for neither. Borrowed strings, valid until
 * osbq_catalog_destroy. catalog may be NULL (then both unknown). */
void osbq_catalog_metric_labels(const struct osbq_catalog *catalog, const char *service_id,
                                const char *plan_id, const char **service, const char **plan);

/* The dashboard URL of a new instance of plan: the plan's osbq.dashboard_url_template with
 * "{instance_id}" replaced by the percent-encoded id, or the sim backend's URL when the plan sets
 * "dashboard": true. NULL when the plan has no dashboard (or out of memory). Caller frees. */
char *osbq_plan_dashboard_url(const struct osbq_plan *plan, const char *instance_id);

/* Default deadline of an operation: generous, since real provisioning can take long. */
#define OSBQ_CATALOG_DEADLINE_S_DEFAULT 3600

/* The deadline of an operation of kind ("provision", "bind", ...) on plan: the plan's
 * osbq.<kind>_deadline_s, else OSBQ_CATALOG_DEADLINE_S_DEFAULT. Past it, a worker abandons the
 * backend and gives the operation back (it is retried, then failed). */
int64_t osbq_plan_deadline_s(const struct osbq_plan *plan, const char *kind);

/* Number of services, and the i-th one (i < count) in file order. */
size_t osbq_catalog_service_count(const struct osbq_catalog *catalog);
const struct osbq_service *osbq_catalog_service_at(const struct osbq_catalog *catalog, size_t i);

#endif
