/* Service bindings: bind (PUT), unbind (DELETE), fetch (GET), and the answer to a synchronous
 * bind or unbind. docs/decisions/0004 has the status table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "digest.h"
#include "handlers.h"
#include "log.h"
#include "osb_parameters.h"
#include "osb_platform.h"
#include "sealed_fields.h"
#include "validate.h"

/* API versions that added binding fields. */
#define API_ROUTE_SERVICES 208
#define API_VOLUME_MOUNTS  210
#define API_ENDPOINTS      215
#define API_ROTATION       217

static bool requires(const struct osbq_service *service, const char *permission)
{
    if (service == NULL)
        return false;
    for (const char *const *p = service->requires_list; *p != NULL; p++)
        if (strcmp(*p, permission) == 0)
            return true;
    return false;
}

/* Copies result[key] into body when the version has the field and the catalog allows it. */
static void copy_field(json_t *body, json_t *result, const char *key, bool allowed)
{
    json_t *value = json_object_get(result, key);
    if (allowed && value != NULL)
        json_object_set(body, key, value);
}

/* Where a binding's result is stored, for opening it. */
struct binding_ref {
    const char *instance_id;
    const char *binding_id;
    const char *service_id;
};

/* The binding as a platform of this version may see it: credentials always; the other fields
 * when the version knows them and the service's `requires` allows them. stored is the result
 * as read from Redis, sealed (docs/decisions/0007) or plaintext from before the keys. New
 * reference, or NULL after answering 500 when the result cannot be opened. */
static json_t *binding_body(const struct gateway *gw, const struct binding_ref *ref,
                            const char *stored, unsigned api_version, struct reply *out)
{
    json_t *result = NULL;
    if (stored != NULL) {
        const struct osbq_secret_place place = {gw->cfg->namespace_, ref->instance_id,
                                                ref->binding_id, NULL};
        char *plain = NULL;
        struct osbq_error err = {0};
        if (osbq_secrets_open(gw->secrets, &place, stored, &plain, &err) < 0) {
            log_warnx("cannot open the stored result of binding %s of instance %s: %s",
                      ref->binding_id, ref->instance_id, err.text);
            char description[OSBQ_ERROR_TEXT_MAX + 64];
            (void)snprintf(description, sizeof description,
                           "The binding's credentials cannot be decrypted: %s.", err.text);
            reply_error(out, OSBQ_ERR_INTERNAL, description);
            return NULL;
        }
        result = json_loads(plain, 0, NULL);
        osbq_secrets_free_text(plain);
    }
    const struct osbq_service *service = osbq_catalog_service(gw->catalog, ref->service_id);
    json_t *body = json_object();
    copy_field(body, result, "credentials", true);
    copy_field(body, result, "syslog_drain_url", requires(service, "syslog_drain"));
    copy_field(body, result, "route_service_url",
               api_version >= API_ROUTE_SERVICES && requires(service, "route_forwarding"));
    copy_field(body, result, "volume_mounts",
               api_version >= API_VOLUME_MOUNTS && requires(service, "volume_mount"));
    copy_field(body, result, "endpoints", api_version >= API_ENDPOINTS);
    copy_field(body, result, "metadata", api_version >= API_METADATA);
    json_decref(result);
    return body;
}

/* Answers status with the binding, or 500 when its result cannot be opened. */
static void reply_binding(const struct gateway *gw, const struct binding_ref *ref,
                          const char *stored, unsigned api_version, unsigned status,
                          struct reply *out)
{
    json_t *body = binding_body(gw, ref, stored, api_version, out);
    if (body != NULL)
        reply_json(out, status, body);
}

/* The identical bind is done already: 200 with the binding. */
static void binding_done(const struct gateway *gw, const struct request *req,
                         const char *service_id, const struct osbq_begin_reply *got,
                         struct reply *out)
{
    const struct binding_ref ref = {req->params[0], req->params[1], service_id};
    reply_binding(gw, &ref, got->binding_result, req->api_version, 200, out);
}

/* The idempotency digest of a bind. */
static bool bind_digest(const struct accept *a, const struct accept_texts *t, char digest[33])
{
    struct digest d;
    digest_begin(&d);
    digest_string(&d, "app_guid", a->app_guid);
    digest_json(&d, "bind_resource", t->bind_resource);
    digest_json(&d, "context", t->context);
    digest_json(&d, "parameters", t->parameters);
    digest_string(&d, "plan_id", a->begin.plan_id);
    digest_string(&d, "predecessor", a->begin.binding.predecessor_binding_id);
    digest_string(&d, "service_id", a->begin.service_id);
    return digest_end(&d, digest);
}

static const struct accept_desc binding_accept = {
    .resource = ACCEPT_BINDING,
    .digest = bind_digest,
    .done = binding_done,
};

/* OSBQ_POLICY's deny rules for a bind: they look at the bind's context, or at the instance's
 * when the platform sends none (read only when a rule could need it). False with the reply
 * set. */
static bool binding_allowed(const struct gateway *gw, const struct request *req,
                            const struct osbq_plan *plan, const char *instance_id,
                            const json_t *context, struct reply *out)
{
    if (!osbq_policy_denies_by_context(gw->policy, OSBQ_POLICY_BIND, plan))
        return true;
    struct osbq_instance inst = {0};
    json_t *stored = NULL;
    if (context == NULL) {
        struct osbq_error err = {0};
        int found = osbq_store_instance_get(gw->store, instance_id, &inst, &err);
        if (found < 0) {
            reply_store_unavailable(out, &err);
            return false;
        }
        /* Another platform's instance is refused by the begin script as absent. */
        if (found > 0 && inst.context != NULL && osb_platform_owns(req, inst.platform)) {
            if (!sealed_open_instance(gw, instance_id, &inst, out)) {
                osbq_instance_clear(&inst);
                return false;
            }
            stored = json_loads(inst.context, 0, NULL);
        }
    }
    struct osbq_policy_context ctx;
    osbq_policy_context_from(&ctx, context ? context : stored, NULL, NULL, osb_platform_name(req));
    char why[OSBQ_ERROR_TEXT_MAX];
    bool denied = osbq_policy_denied(gw->policy, OSBQ_POLICY_BIND, plan, &ctx, why, sizeof why);
    if (denied) {
        reply_error(out, OSBQ_ERR_FORBIDDEN, why);
        audit_refusal(gw->audit, gw->store, req, NULL,
                      &(struct audit_refusal){.status = out->status,
                                              .reason = "denied",
                                              .platform = osb_platform_name(req),
                                              .kind = "bind",
                                              .instance_id = instance_id,
                                              .binding_id = req->params[1],
                                              .description = why});
    }
    json_decref(stored);
    osbq_instance_clear(&inst);
    return !denied;
}

/* The plan a bind names, *plan: a bindable plan of service_id; false with a 400 otherwise. */
static bool bind_plan(const struct gateway *gw, const struct request *req, const char *service_id,
                      const char *plan_id, const struct osbq_plan **plan, struct reply *out)
{
    *plan = osb_platform_plan(gw, req, plan_id);
    if (*plan == NULL || strcmp((*plan)->service->id, service_id) != 0)
        return reply_bad_request(out, "The plan \"%s\" is not a plan of the service \"%s\".",
                                 plan_id, service_id);
    if (!(*plan)->bindable)
        return reply_bad_request(out, "The plan \"%s\" is not bindable.", (*plan)->name);
    return true;
}

/* The binding a bind rotates: *predecessor, dropped for platforms before 2.17 (rotation is
 * theirs only). False with a 400 when the plan cannot rotate or it names the binding itself. */
static bool check_predecessor(const struct request *req, const struct osbq_plan *plan,
                              const char *binding_id, const char **predecessor, struct reply *out)
{
    if (req->api_version < API_ROTATION)
        *predecessor = NULL;
    if (*predecessor != NULL && !plan->binding_rotatable)
        return reply_bad_request(out,
                                 "The plan \"%s\" does not support binding rotation "
                                 "(binding_rotatable): predecessor_binding_id cannot be used.",
                                 plan->name);
    if (*predecessor != NULL && strcmp(*predecessor, binding_id) == 0)
        return reply_bad_request(out, "A binding cannot be its own predecessor.");
    return true;
}

/* The members of a bind's body. */
struct bind_members {
    const char *service_id, *plan_id;
    const char *app_guid;                    /* the top-level one, or NULL */
    const char *predecessor;                 /* predecessor_binding_id, or NULL */
    const char *bound_app;                   /* bind_resource.app_guid, or NULL */
    json_t *parameters, *context, *resource; /* borrowed from the body, or NULL */
};

/* Reads them into *m; false with a 400 when one is wrong. service_id and plan_id may be absent
 * here: a rotation takes them from its instance (rotating_bind). */
static bool bind_members(json_t *body, struct bind_members *m, struct reply *out)
{
    m->bound_app = NULL;
    return validate_optional_string(body, "service_id", &m->service_id, out) &&
           validate_optional_string(body, "plan_id", &m->plan_id, out) &&
           validate_optional_string(body, "app_guid", &m->app_guid, out) &&
           validate_optional_string(body, "predecessor_binding_id", &m->predecessor, out) &&
           validate_optional_object(body, "parameters", &m->parameters, out) &&
           validate_optional_object(body, "context", &m->context, out) &&
           validate_optional_object(body, "bind_resource", &m->resource, out);
}

/* Checks bind_resource's members and reads its app_guid into m->bound_app; false with a 400. */
static bool bind_resource_members(struct bind_members *m, struct reply *out)
{
    const char *route = NULL; /* checked only: backends read it in bind_resource */
    m->bound_app = NULL;
    return m->resource == NULL ||
           (validate_optional_string(m->resource, "app_guid", &m->bound_app, out) &&
            validate_optional_string(m->resource, "route", &route, out));
}

/* The checks against the plan a bind names: the parameters against its bind schema, an
 * asynchronous answer when it requires one, an app when it requires one, and the predecessor
 * (check_predecessor, which may drop it). False with the reply set. */
static bool plan_allows_bind(const struct request *req, const struct osbq_plan *plan,
                             const char *binding_id, struct bind_members *m, struct reply *out)
{
    if (!check_predecessor(req, plan, binding_id, &m->predecessor, out))
        return false;
    if (!osb_parameters_valid(plan->bind_schema, m->parameters, true, out))
        return false;
    if (!accept_async_check(req, &binding_accept, plan, out))
        return false;
    if (plan->requires_app && m->app_guid == NULL && m->bound_app == NULL) {
        reply_error(out, OSBQ_ERR_REQUIRES_APP, NULL);
        return false;
    }
    return true;
}

/* A bind whose members are read (and, for a rotation, completed): the checks against its plan
 * and the broker's policy, then the operation. */
static void bind_checked_members(const struct gateway *gw, const struct request *req,
                                 struct bind_members *m, struct reply *out)
{
    const char *instance_id = req->params[0], *binding_id = req->params[1];
    const struct osbq_plan *plan = NULL;
    json_t *own_resource = NULL;
    if (!bind_resource_members(m, out) ||
        !bind_plan(gw, req, m->service_id, m->plan_id, &plan, out) ||
        !plan_allows_bind(req, plan, binding_id, m, out) ||
        !binding_allowed(gw, req, plan, instance_id, m->context, out))
        return;
    /* Platforms before 2.8 send only the top-level app_guid: backends read bind_resource. */
    if (m->resource == NULL && m->app_guid != NULL)
        m->resource = own_resource = json_pack("{s:s}", "app_guid", m->app_guid);
    struct accept a = {
        .kind = OSBQ_JOB_BIND,
        .begin = {.instance_id = instance_id,
                  .service_id = m->service_id,
                  .plan_id = m->plan_id,
                  .binding = {.binding_id = binding_id, .predecessor_binding_id = m->predecessor}},
        .plan = plan,
        .parameters = m->parameters,
        .context = m->context,
        .bind_resource = m->resource,
        .app_guid = m->app_guid,
    };
    accept_operation(gw, req, &binding_accept, &a, out);
    json_decref(own_resource);
}

/* A rotation (2.17, Request (Rotating a Service Binding)): its body may be
 * predecessor_binding_id alone, since "Platforms do not necessarily store these parameter
 * values". What it leaves out comes from its instance (service_id, plan_id: the plan it has now)
 * and from the predecessor (parameters, context, bind_resource), read first, one call each;
 * what it names stands (docs/decisions/0047-rotation-as-written.md). */
struct rotation {
    json_t *body;               /* the request's (owned) */
    char *service_id, *plan_id; /* the instance's (owned), once read */
    json_t *inherited[3];       /* the predecessor's parameters, context, bind_resource, or NULL
                                 * (owned) */
};

static void rotation_free(void *state)
{
    struct rotation *r = state;
    if (r == NULL)
        return;
    json_decref(r->body);
    free(r->service_id);
    free(r->plan_id);
    for (size_t i = 0; i < 3; i++)
        json_decref(r->inherited[i]);
    free(r);
}

/* A new rotation state owning what r owned (r is left empty, for its call's state_free): the
 * state moves on to the next call. NULL when out of memory (r keeps it all). */
static struct rotation *rotation_move(struct rotation *r)
{
    struct rotation *next = malloc(sizeof *next);
    if (next != NULL) {
        *next = *r;
        memset(r, 0, sizeof *r);
    }
    return next;
}

static const char bad_predecessor[] = "predecessor_binding_id must name a live binding of this "
                                      "service instance.";

/* The member a rotation's body left out, from the predecessor's stored JSON text (kept in
 * *slot): the body's own when it has one. */
static json_t *inherit(json_t *own, const char *stored, json_t **slot)
{
    if (own != NULL || stored == NULL)
        return own;
    *slot = json_loads(stored, 0, NULL);
    if (!json_is_object(*slot)) {
        json_decref(*slot);
        *slot = NULL;
    }
    return *slot;
}

/* A rotation once its predecessor is read: the bind, completed from it. */
static void rotation_after_predecessor(const struct gateway *gw, const struct request *req,
                                       struct osbq_store_call *call, void *state, struct reply *out)
{
    struct rotation *r = state;
    struct osbq_binding pred = {0};
    struct osbq_error err = {0};
    struct bind_members m;
    int found = osbq_store_binding_get_result(call, &pred, &err);
    if (found < 0) {
        reply_store_unavailable(out, &err);
        goto out;
    }
    if (found == 0 || !osb_platform_owns(req, pred.platform) || strcmp(pred.state, "bound") != 0) {
        reply_bad_request(out, "%s", bad_predecessor);
        goto out;
    }
    const char *predecessor = json_string_value(json_object_get(r->body, "predecessor_binding_id"));
    if (!sealed_open_binding(gw, req->params[0], predecessor, &pred, out) ||
        !bind_members(r->body, &m, out))
        goto out;
    if (m.service_id == NULL)
        m.service_id = r->service_id;
    if (m.plan_id == NULL)
        m.plan_id = r->plan_id;
    m.parameters = inherit(m.parameters, pred.parameters, &r->inherited[0]);
    m.context = inherit(m.context, pred.context, &r->inherited[1]);
    m.resource = inherit(m.resource, pred.bind_resource, &r->inherited[2]);
    bind_checked_members(gw, req, &m, out);
out:
    osbq_binding_clear(&pred);
}

/* A rotation once its instance is read: its service and plan, then the predecessor's read. */
static void rotation_after_instance(const struct gateway *gw, const struct request *req,
                                    struct osbq_store_call *call, void *state, struct reply *out)
{
    struct rotation *r = state;
    struct osbq_instance inst = {0};
    struct osbq_error err = {0};
    int found = osbq_store_instance_get_result(call, &inst, &err);
    bool hidden =
        found > 0 && (!osb_platform_owns(req, inst.platform) || strcmp(inst.state, "failed") == 0 ||
                      strcmp(inst.state, "gone") == 0);
    if (reply_read_missing(out, found, hidden, "service instance", &err))
        goto out;
    r->service_id = inst.service_id != NULL ? strdup(inst.service_id) : NULL;
    r->plan_id = inst.plan_id != NULL ? strdup(inst.plan_id) : NULL;
    const char *predecessor = json_string_value(json_object_get(r->body, "predecessor_binding_id"));
    struct rotation *next = r->service_id && r->plan_id ? rotation_move(r) : NULL;
    if (next == NULL) {
        reply_error(out, OSBQ_ERR_INTERNAL, "Out of memory.");
        goto out;
    }
    call = osbq_store_binding_get_call(gw->store, req->params[0], predecessor, &err);
    reply_defer_call(out, call, &err, rotation_after_predecessor, next, rotation_free);
out:
    osbq_instance_clear(&inst);
}

/* Starts a rotation's reads; takes body. */
static void rotating_bind(const struct gateway *gw, const struct request *req, json_t *body,
                          struct reply *out)
{
    struct rotation *r = calloc(1, sizeof *r);
    if (r == NULL) {
        json_decref(body);
        reply_error(out, OSBQ_ERR_INTERNAL, "Out of memory.");
        return;
    }
    r->body = body;
    struct osbq_error err = {0};
    struct osbq_store_call *call = osbq_store_instance_get_call(gw->store, req->params[0], &err);
    reply_defer_call(out, call, &err, rotation_after_instance, r, rotation_free);
}

void osb_binding_put(const struct gateway *gw, const struct request *req, struct reply *out)
{
    const char *instance_id = req->params[0], *binding_id = req->params[1];
    if (!validate_id(instance_id, "instance_id", out) ||
        !validate_id(binding_id, "binding_id", out))
        return;
    json_t *body = validate_body(req, out);
    if (body == NULL)
        return;
    struct bind_members m;
    if (!bind_members(body, &m, out))
        goto out;
    if (m.predecessor != NULL && req->api_version >= API_ROTATION) {
        if (strcmp(m.predecessor, binding_id) == 0) {
            reply_bad_request(out, "A binding cannot be its own predecessor.");
            goto out;
        }
        rotating_bind(gw, req, body, out);
        return;
    }
    if (m.service_id == NULL || m.plan_id == NULL) {
        reply_bad_request(out, "\"service_id\" and \"plan_id\" are required.");
        goto out;
    }
    bind_checked_members(gw, req, &m, out);
out:
    json_decref(body);
}

void osb_binding_delete(const struct gateway *gw, const struct request *req, struct reply *out)
{
    if (validate_id(req->params[0], "instance_id", out) &&
        validate_id(req->params[1], "binding_id", out))
        accept_delete(gw, req, &binding_accept, out);
}

/* GET of a binding once it is read. */
static void binding_get_after_read(const struct gateway *gw, const struct request *req,
                                   struct osbq_store_call *call, void *state, struct reply *out)
{
    (void)state;
    const char *instance_id = req->params[0], *binding_id = req->params[1];
    struct osbq_binding b = {0};
    struct osbq_error err = {0};
    int found = osbq_store_binding_get_result(call, &b, &err);
    bool hidden =
        found > 0 && (!osb_platform_owns(req, b.platform) || strcmp(b.state, "bound") != 0);
    if (reply_read_missing(out, found, hidden, "service binding", &err))
        goto out;
    const struct osbq_service *service = osbq_catalog_service(gw->catalog, b.service_id);
    if (service != NULL && !service->bindings_retrievable) {
        reply_bad_request(out, "The service does not allow fetching bindings "
                               "(bindings_retrievable).");
        goto out;
    }
    const struct binding_ref ref = {instance_id, binding_id, b.service_id};
    if (!sealed_open_binding(gw, instance_id, binding_id, &b, out))
        goto out;
    json_t *body = binding_body(gw, &ref, b.result, req->api_version, out);
    if (body == NULL)
        goto out;
    json_t *parameters = b.parameters ? json_loads(b.parameters, 0, NULL) : NULL;
    if (parameters != NULL)
        json_object_set_new(body, "parameters", parameters);
    reply_json(out, 200, body);
out:
    osbq_binding_clear(&b);
}

void osb_binding_get(const struct gateway *gw, const struct request *req, struct reply *out)
{
    const char *instance_id = req->params[0], *binding_id = req->params[1];
    if (req->api_version < API_FETCH) {
        reply_error(out, OSBQ_ERR_NOT_FOUND, "Fetching a service binding needs API 2.14.");
        return;
    }
    if (!validate_id(instance_id, "instance_id", out) ||
        !validate_id(binding_id, "binding_id", out))
        return;
    struct osbq_error err = {0};
    struct osbq_store_call *call =
        osbq_store_binding_get_call(gw->store, instance_id, binding_id, &err);
    reply_defer_call(out, call, &err, binding_get_after_read, NULL, NULL);
}

/* A synchronous bind that succeeded, once its binding is read: 201 with it. */
static void binding_finished_after_read(const struct gateway *gw, const struct request *req,
                                        struct osbq_store_call *call, void *state,
                                        struct reply *out)
{
    (void)state;
    struct osbq_binding b = {0};
    struct osbq_error err = {0};
    int found = osbq_store_binding_get_result(call, &b, &err);
    const struct binding_ref ref = {req->params[0], req->params[1], b.service_id};
    if (found == 1 && strcmp(b.state, "bound") == 0)
        reply_binding(gw, &ref, b.result, req->api_version, 201, out);
    else
        reply_error(out, OSBQ_ERR_UNAVAILABLE,
                    "The binding was made but cannot be read now; retry the same request.");
    osbq_binding_clear(&b);
}

void osb_binding_finished(const struct gateway *gw, const struct reply_wait *wait,
                          const struct waiter_result *result, struct reply *out)
{
    if (!result->succeeded) {
        reply_error(out, OSBQ_ERR_BACKEND, result->description);
        return;
    }
    if (wait->kind == OSBQ_JOB_UNBIND) {
        reply_json(out, 200, json_object());
        return;
    }
    /* Credentials are read from the one place they are stored, never from the event. */
    struct osbq_error err = {0};
    struct osbq_store_call *call =
        osbq_store_binding_get_call(gw->store, wait->instance_id, wait->binding_id, &err);
    reply_defer_call(out, call, &err, binding_finished_after_read, NULL, NULL);
}
