/* Service instances: provision (PUT), update (PATCH), deprovision (DELETE), fetch (GET), and
 * the answer to a synchronous request once its operation ended. docs/decisions/0003 has the
 * status table. */
#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "deletion_protection.h"
#include "digest.h"
#include "handlers.h"
#include "log.h"
#include "osb_parameters.h"
#include "osb_platform.h"
#include "sealed_fields.h"
#include "update_change.h"
#include "validate.h"

/* What OSBQ_POLICY counts an instance against: the quotas, for a refusal's text, and their
 * counters for the store. The quotas' values borrow from the context the policy read. */
struct instance_quotas {
    struct osbq_policy_use uses[OSBQ_POLICY_QUOTAS_MAX];
    size_t count;           /* entries in uses */
    char *spec;             /* osbq_store_quota_spec's, or NULL when there are none; owned */
    json_t *stored_context; /* update: the instance's context read in place of the request's,
                             * or NULL; owned */
};

static void instance_quotas_clear(struct instance_quotas *q)
{
    free(q->spec);
    json_decref(q->stored_context);
}

/* What OSBQ_POLICY says of a new instance of plan (or a move to it, kind update) from ctx: false
 * with policy_refusal(kind) when a deny rule refuses it; otherwise the quotas it counts against,
 * in q. */
static bool policy_admits(const struct gateway *gw, const struct request *req,
                          enum osbq_job_kind kind, const struct osbq_plan *plan,
                          const struct osbq_policy_context *ctx, struct instance_quotas *q,
                          struct reply *out)
{
    char why[OSBQ_ERROR_TEXT_MAX];
    if (osbq_policy_denied(gw->policy, OSBQ_POLICY_PROVISION, plan, ctx, why, sizeof why)) {
        reply_error(out, policy_refusal(kind), why);
        audit_refusal(gw->audit, gw->store, req, NULL,
                      &(struct audit_refusal){.status = out->status,
                                              .reason = "denied",
                                              .platform = osb_platform_name(req),
                                              .kind = osbq_job_kind_name(kind),
                                              .instance_id = req->params[0],
                                              .description = why});
        return false;
    }
    q->count = osbq_policy_quotas(gw->policy, plan, ctx, q->uses);
    if (q->count == 0)
        return true;
    q->spec = osbq_store_quota_spec(gw->store, q->uses, q->count);
    if (q->spec == NULL) {
        reply_error(out, OSBQ_ERR_INTERNAL, "Cannot build the quota counters' keys.");
        return false;
    }
    return true;
}

/* The metadata object a version may see: labels from 2.16, attributes from 2.17. */
static json_t *metadata_for(const char *text, unsigned api_version)
{
    if (text == NULL || api_version < API_METADATA)
        return NULL;
    json_t *metadata = json_loads(text, 0, NULL);
    if (!json_is_object(metadata)) {
        json_decref(metadata);
        return NULL;
    }
    if (api_version < API_ATTRIBUTES)
        json_object_del(metadata, "attributes");
    return metadata;
}

static void set_string(json_t *body, const char *key, const char *value)
{
    if (value != NULL && value[0] != '\0')
        json_object_set_new(body, key, json_string(value));
}

/* The identical provision is done already: 200 with what it made. */
static void instance_done(const struct gateway *gw, const struct request *req,
                          const char *service_id, const struct osbq_begin_reply *got,
                          struct reply *out)
{
    (void)gw;
    (void)service_id;
    json_t *body = json_object();
    set_string(body, "dashboard_url", got->dashboard_url);
    json_t *metadata = metadata_for(got->metadata, req->api_version);
    if (metadata != NULL)
        json_object_set_new(body, "metadata", metadata);
    reply_json(out, 200, body);
}

/* The idempotency digest of a provision or an update (an update's body has no organization or
 * space). */
static bool instance_digest(const struct accept *a, const struct accept_texts *t, char digest[33])
{
    bool provision = a->kind == OSBQ_JOB_PROVISION;
    struct digest d;
    digest_begin(&d);
    digest_json(&d, "context", t->context);
    digest_string(&d, "maintenance_version", a->begin.maintenance_version);
    if (provision)
        digest_string(&d, "organization_guid", a->organization_guid);
    digest_json(&d, "parameters", t->parameters);
    digest_string(&d, "plan_id", a->begin.plan_id);
    digest_string(&d, "service_id", a->begin.service_id);
    if (provision)
        digest_string(&d, "space_guid", a->space_guid);
    return digest_end(&d, digest);
}

static const struct accept_desc instance_accept = {
    .resource = ACCEPT_INSTANCE,
    .digest = instance_digest,
    .done = instance_done,
};

/* Checks a maintenance_info member against plan; false with the reply set. Before 2.15 the
 * field did not exist, so it is ignored; an empty object, which generated clients send for an
 * unset field, is as good as absent. */
static bool check_maintenance(json_t *body, unsigned api_version, const struct osbq_plan *plan,
                              const char **version, json_t **info, struct reply *out)
{
    *version = NULL;
    *info = NULL;
    if (api_version < API_RETRY_AFTER)
        return true;
    if (!validate_optional_object(body, "maintenance_info", info, out))
        return false;
    if (*info != NULL && json_object_size(*info) == 0)
        *info = NULL;
    if (*info == NULL)
        return true;
    json_t *v = json_object_get(*info, "version");
    if (!json_is_string(v) || json_string_length(v) == 0)
        return reply_bad_request(out, "\"maintenance_info.version\" must be a non-empty string.");
    *version = json_string_value(v);
    if (plan->maintenance_version == NULL || strcmp(plan->maintenance_version, *version) != 0) {
        reply_error(out, OSBQ_ERR_MAINTENANCE_INFO, NULL);
        return false;
    }
    return true;
}

/* Finds the plan (among the platform's services) and checks it belongs to service_id; false
 * with a 400. */
static bool find_plan(const struct gateway *gw, const struct request *req, const char *service_id,
                      const char *plan_id, const struct osbq_plan **plan, struct reply *out)
{
    *plan = osb_platform_plan(gw, req, plan_id);
    if (*plan == NULL)
        return reply_bad_request(out, "Unknown plan_id \"%s\".", plan_id);
    if (strcmp((*plan)->service->id, service_id) != 0)
        return reply_bad_request(out, "The plan \"%s\" is not a plan of the service \"%s\".",
                                 plan_id, service_id);
    return true;
}

/* The checks against the plan an instance is made with (provision) or moves to (update): the
 * parameters against the plan's schema for the kind, an asynchronous answer when it requires
 * one, and the body's maintenance_info (*version, *info). False with the reply set. */
static bool plan_allows(const struct request *req, const struct osbq_plan *plan,
                        enum osbq_job_kind kind, json_t *body, const json_t *parameters,
                        const char **version, json_t **info, struct reply *out)
{
    /* An update's schema describes the result, and absent parameters change nothing. */
    bool provision = kind == OSBQ_JOB_PROVISION;
    if (!osb_parameters_valid(provision ? plan->provision_schema : plan->update_schema, parameters,
                              provision, out))
        return false;
    return accept_async_check(req, &instance_accept, plan, out) &&
           check_maintenance(body, req->api_version, plan, version, info, out);
}

/* The members of a provision's body. */
struct provision_members {
    const char *service_id, *plan_id;
    const char *organization_guid, *space_guid; /* required without a context */
    json_t *parameters, *context;               /* borrowed from the body, or NULL */
};

/* Reads them into *m; false with a 400 when one is wrong or missing. */
static bool provision_members(json_t *body, struct provision_members *m, struct reply *out)
{
    if (!validate_optional_string(body, "service_id", &m->service_id, out) ||
        !validate_optional_string(body, "plan_id", &m->plan_id, out) ||
        !validate_optional_string(body, "organization_guid", &m->organization_guid, out) ||
        !validate_optional_string(body, "space_guid", &m->space_guid, out) ||
        !validate_optional_object(body, "parameters", &m->parameters, out) ||
        !validate_optional_object(body, "context", &m->context, out))
        return false;
    if (m->service_id == NULL || m->plan_id == NULL)
        return reply_bad_request(out, "\"service_id\" and \"plan_id\" are required.");
    if (m->context == NULL && (m->organization_guid == NULL || m->space_guid == NULL))
        return reply_bad_request(out, "\"organization_guid\" and \"space_guid\" are required "
                                      "when \"context\" is absent.");
    return true;
}

/* The body of a PUT or PATCH of the instance the path names, its id checked: a new reference,
 * or NULL with a 400 in out. */
static json_t *instance_request_body(const struct request *req, struct reply *out)
{
    return validate_id(req->params[0], "instance_id", out) ? validate_body(req, out) : NULL;
}

void osb_instance_put(const struct gateway *gw, const struct request *req, struct reply *out)
{
    json_t *body = instance_request_body(req, out);
    if (body == NULL)
        return;
    struct provision_members m;
    const struct osbq_plan *plan = NULL;
    const char *mv = NULL;
    json_t *info = NULL;
    struct instance_quotas quotas = {.count = 0};
    struct osbq_policy_context ctx;
    if (!provision_members(body, &m, out) ||
        !find_plan(gw, req, m.service_id, m.plan_id, &plan, out) ||
        !plan_allows(req, plan, OSBQ_JOB_PROVISION, body, m.parameters, &mv, &info, out))
        goto out;
    osbq_policy_context_from(&ctx, m.context, m.organization_guid, m.space_guid,
                             osb_platform_name(req));
    if (!policy_admits(gw, req, OSBQ_JOB_PROVISION, plan, &ctx, &quotas, out))
        goto out;
    char *dashboard = osbq_plan_dashboard_url(plan, req->params[0]);
    struct accept a = {
        .kind = OSBQ_JOB_PROVISION,
        .begin = {.instance_id = req->params[0],
                  .service_id = m.service_id,
                  .plan_id = m.plan_id,
                  .maintenance_version = mv,
                  .dashboard_url = dashboard,
                  .quotas = quotas.spec,
                  .deletion_protection = deletion_protection_of(m.parameters, m.context)},
        .plan = plan,
        .parameters = m.parameters,
        .context = m.context,
        .maintenance_info = info,
        .quotas = quotas.uses,
        .quota_count = quotas.count,
        .organization_guid = m.organization_guid,
        .space_guid = m.space_guid,
    };
    accept_operation(gw, req, &instance_accept, &a, out);
    free(dashboard);
out:
    instance_quotas_clear(&quotas);
    json_decref(body);
}

static void body_free(void *state)
{
    json_decref(state);
}

/* The members of an update's body the handler reads; false with a 400 when one is wrong. */
static bool update_members(json_t *body, const char **service_id, const char **plan_id,
                           json_t **parameters, json_t **context, struct reply *out)
{
    json_t *previous;
    return validate_optional_string(body, "service_id", service_id, out) &&
           validate_optional_string(body, "plan_id", plan_id, out) &&
           validate_optional_object(body, "parameters", parameters, out) &&
           validate_optional_object(body, "context", context, out) &&
           validate_optional_object(body, "previous_values", &previous, out);
}

/* The plans of an update of inst (found: what the read gave): the one it has (*current, NULL
 * when no longer offered) and the one it moves to (*target). False with the reply set when
 * the instance cannot be updated so. */
static bool update_plans(const struct gateway *gw, const struct request *req, int found,
                         const struct osbq_instance *inst, const char *service_id,
                         const char *plan_id, const struct osbq_plan **current,
                         const struct osbq_plan **target, struct reply *out)
{
    if (found == 0 || !osb_platform_owns(req, inst->platform) ||
        strcmp(inst->state, "failed") == 0 || strcmp(inst->state, "gone") == 0) {
        reply_error(out, OSBQ_ERR_NOT_FOUND, "The service instance does not exist.");
        return false;
    }
    if (strcmp(inst->state, "provisioned") != 0) {
        reply_error(out, OSBQ_ERR_CONCURRENCY, NULL);
        return false;
    }
    if (strcmp(inst->service_id, service_id) != 0)
        return reply_bad_request(out, "The instance belongs to the service \"%s\", not \"%s\".",
                                 inst->service_id, service_id);
    *current = osb_platform_plan(gw, req, inst->plan_id);
    *target = *current;
    if (plan_id != NULL && !find_plan(gw, req, service_id, plan_id, target, out))
        return false;
    if (*target == NULL) {
        reply_error(out, OSBQ_ERR_UNPROCESSABLE,
                    "The instance's plan is no longer offered: name a plan to move to.");
        return false;
    }
    if (*current != *target && (*current == NULL || !(*current)->plan_updateable)) {
        reply_error(out, OSBQ_ERR_UNPROCESSABLE,
                    "The instance's plan does not allow changing plans (plan_updateable).");
        return false;
    }
    return true;
}

/* OSBQ_POLICY's say on an update that moves inst to target: the same as on provisioning it,
 * the instance's stored context standing in when the request sends none. False with the reply
 * set. */
static bool plan_change_admitted(const struct gateway *gw, const struct request *req,
                                 const struct osbq_instance *inst, const struct osbq_plan *target,
                                 const json_t *context, struct instance_quotas *q,
                                 struct reply *out)
{
    if (context == NULL && inst->context != NULL)
        context = q->stored_context = json_loads(inst->context, 0, NULL);
    struct osbq_policy_context ctx;
    osbq_policy_context_from(&ctx, context, NULL, NULL, osb_platform_name(req));
    return policy_admits(gw, req, OSBQ_JOB_UPDATE, target, &ctx, q, out);
}

/* An update that changes nothing (update_change.h) of an instance no operation holds: 200 at
 * once, as a synchronous update that succeeded answers (the dashboard from 2.14), with no
 * operation. False, answering nothing, when it changes something or an operation holds the
 * instance (the begin script then answers as for any update). */
static bool answered_unchanged(const struct gateway *gw, const struct request *req,
                               const struct osbq_instance *inst, const struct osbq_plan *target,
                               const struct update_change *change, struct reply *out)
{
    const struct update_instance in_force = {inst->plan_id, inst->parameters, inst->context,
                                             inst->maintenance_version};
    if (inst->lock_holder != NULL || inst->shared_holders > 0 ||
        !update_changes_nothing(change, &in_force))
        return false;
    json_t *body = json_object();
    if (req->api_version >= API_FETCH)
        set_string(body, "dashboard_url", inst->dashboard_url);
    reply_json(out, 200, body);
    const char *service, *plan;
    osbq_catalog_metric_labels(gw->catalog, target->service->id, target->id, &service, &plan);
    gateway_metrics_operation(gw->metrics, "update", "unchanged", service, plan);
    return true;
}

/* An update once the instance is read (its current plan decides what the request may do): the
 * checks that need it, then the operation. state is the request's body. */
static void instance_patch_after_read(const struct gateway *gw, const struct request *req,
                                      struct osbq_store_call *call, void *state, struct reply *out)
{
    json_t *body = state;
    const char *service_id, *plan_id, *mv = NULL;
    json_t *parameters, *context, *info = NULL;
    struct osbq_instance inst = {0};
    struct osbq_error err = {0};
    struct instance_quotas quotas = {.count = 0};
    if (!update_members(body, &service_id, &plan_id, &parameters, &context, out))
        return;
    int found = osbq_store_instance_get_result(call, &inst, &err);
    if (found < 0) {
        reply_store_unavailable(out, &err);
        goto out;
    }
    if (found > 0 && !sealed_open_instance(gw, req->params[0], &inst, out))
        goto out;
    /* update_plans sets both when it succeeds; GCC's -O2 flow analysis (the image's Release
     * build) cannot see that and fails the build on -Wmaybe-uninitialized. */
    const struct osbq_plan *current = NULL, *target = NULL;
    if (!update_plans(gw, req, found, &inst, service_id, plan_id, &current, &target, out) ||
        !plan_allows(req, target, OSBQ_JOB_UPDATE, body, parameters, &mv, &info, out))
        goto out;
    const struct update_change change = {target->id, parameters, context, mv,
                                         target->service->allow_context_updates};
    if (answered_unchanged(gw, req, &inst, target, &change, out))
        goto out;
    /* Moving to another plan is provisioning it, as far as the policy goes. */
    if (current != target && !plan_change_admitted(gw, req, &inst, target, context, &quotas, out))
        goto out;
    struct accept a = {
        .kind = OSBQ_JOB_UPDATE,
        .begin = {.instance_id = req->params[0],
                  .service_id = service_id,
                  .plan_id = target->id,
                  .maintenance_version = mv,
                  .expected_plan_id = inst.plan_id,
                  /* A plan change holds exactly the new plan's quotas (none: ""); otherwise the
                   * instance's counters stay as they are. */
                  .quotas = current == target ? OSBQ_STORE_QUOTAS_UNCHANGED
                                              : (quotas.spec != NULL ? quotas.spec : ""),
                  .deletion_protection = deletion_protection_after_update(
                      parameters, context, inst.parameters, inst.context)},
        .plan = target,
        .parameters = parameters,
        .context = context,
        .maintenance_info = info,
        .quotas = quotas.uses,
        .quota_count = quotas.count,
    };
    accept_operation(gw, req, &instance_accept, &a, out);
out:
    instance_quotas_clear(&quotas);
    osbq_instance_clear(&inst);
}

void osb_instance_patch(const struct gateway *gw, const struct request *req, struct reply *out)
{
    json_t *body = instance_request_body(req, out);
    if (body == NULL)
        return;
    const char *service_id, *plan_id;
    json_t *parameters, *context;
    struct osbq_error err = {0};
    struct osbq_store_call *call = NULL;
    if (!update_members(body, &service_id, &plan_id, &parameters, &context, out))
        goto out;
    if (service_id == NULL) {
        reply_bad_request(out, "\"service_id\" is required.");
        goto out;
    }
    call = osbq_store_instance_get_call(gw->store, req->params[0], &err);
    reply_defer_call(out, call, &err, instance_patch_after_read, body, body_free);
    return;
out:
    json_decref(body);
}

void osb_instance_delete(const struct gateway *gw, const struct request *req, struct reply *out)
{
    if (validate_id(req->params[0], "instance_id", out))
        accept_delete(gw, req, &instance_accept, out);
}

/* GET of an instance once it is read. */
static void instance_get_after_read(const struct gateway *gw, const struct request *req,
                                    struct osbq_store_call *call, void *state, struct reply *out)
{
    (void)state;
    struct osbq_instance inst = {0};
    struct osbq_error err = {0};
    int found = osbq_store_instance_get_result(call, &inst, &err);
    bool hidden = found > 0 && (!osb_platform_owns(req, inst.platform) ||
                                strcmp(inst.state, "provisioned") != 0);
    if (reply_read_missing(out, found, hidden, "service instance", &err))
        goto out;
    if (inst.lock_holder != NULL) {
        reply_error(out, OSBQ_ERR_CONCURRENCY, NULL);
        goto out;
    }
    const struct osbq_service *service = osbq_catalog_service(gw->catalog, inst.service_id);
    if (service != NULL && !service->instances_retrievable) {
        reply_bad_request(out, "The service does not allow fetching instances "
                               "(instances_retrievable).");
        goto out;
    }
    if (!sealed_open_instance(gw, req->params[0], &inst, out))
        goto out;
    json_t *body = json_object();
    set_string(body, "service_id", inst.service_id);
    set_string(body, "plan_id", inst.plan_id);
    set_string(body, "dashboard_url", inst.dashboard_url);
    json_t *parameters = inst.parameters ? json_loads(inst.parameters, 0, NULL) : NULL;
    if (parameters != NULL)
        json_object_set_new(body, "parameters", parameters);
    if (inst.maintenance_version != NULL && req->api_version >= API_RETRY_AFTER)
        json_object_set_new(body, "maintenance_info",
                            json_pack("{s:s}", "version", inst.maintenance_version));
    json_t *metadata = metadata_for(inst.metadata, req->api_version);
    if (metadata != NULL)
        json_object_set_new(body, "metadata", metadata);
    reply_json(out, 200, body);
out:
    osbq_instance_clear(&inst);
}

void osb_instance_get(const struct gateway *gw, const struct request *req, struct reply *out)
{
    const char *instance_id = req->params[0];
    if (req->api_version < API_FETCH) {
        reply_error(out, OSBQ_ERR_NOT_FOUND, "Fetching a service instance needs API 2.14.");
        return;
    }
    if (!validate_id(instance_id, "instance_id", out))
        return;
    struct osbq_error err = {0};
    struct osbq_store_call *call = osbq_store_instance_get_call(gw->store, instance_id, &err);
    reply_defer_call(out, call, &err, instance_get_after_read, NULL, NULL);
}

void osb_instance_finished(const struct reply_wait *wait, const struct waiter_result *result,
                           struct reply *out)
{
    if (!result->succeeded) {
        bool flags = wait->api_version >= API_METADATA;
        int usable = flags && wait->kind != OSBQ_JOB_PROVISION ? result->instance_usable : -1;
        int repeatable = flags && wait->kind == OSBQ_JOB_UPDATE ? result->update_repeatable : -1;
        reply_error_flags(out, OSBQ_ERR_BACKEND, result->description, usable, repeatable);
        return;
    }
    json_t *body = json_object();
    const char *dashboard = result->dashboard_url ? result->dashboard_url : wait->dashboard_url;
    if (wait->kind == OSBQ_JOB_PROVISION ||
        (wait->kind == OSBQ_JOB_UPDATE && wait->api_version >= API_FETCH))
        set_string(body, "dashboard_url", dashboard);
    json_t *metadata = wait->kind != OSBQ_JOB_DEPROVISION
                           ? metadata_for(result->metadata, wait->api_version)
                           : NULL;
    if (metadata != NULL)
        json_object_set_new(body, "metadata", metadata);
    reply_json(out, wait->kind == OSBQ_JOB_PROVISION ? 201 : 200, body);
}
