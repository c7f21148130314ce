/* Service instances: provision (PUT), update (PATCH), deprovision (DELETE), fetch (GET), and
 * the answer to a synchronous request once its operation ended. docs/decisions/0003 has the
 * status table. */
#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "digest.h"
#include "handlers.h"
#include "log.h"
#include "osb_parameters.h"
#include "osb_platform.h"
#include "validate.h"

/* What OSBQ_POLICY says of a new instance of plan (or a move to it, kind update) from ctx: false
 * with policy_refusal(kind) when a deny rule refuses it; otherwise the quotas it counts against, in
 * uses (*count of them) and as *spec for the store (caller frees; NULL when there are none). */
static bool policy_admits(const struct gateway *gw, enum osbq_job_kind kind,
                          const struct osbq_plan *plan, const struct osbq_policy_context *ctx,
                          struct osbq_policy_use *uses, size_t *count, char **spec,
                          struct reply *out)
{
    char why[OSBQ_ERROR_TEXT_MAX];
    *spec = NULL;
    *count = 0;
    if (osbq_policy_denied(gw->policy, OSBQ_POLICY_PROVISION, plan, ctx, why, sizeof why)) {
        reply_error(out, policy_refusal(kind), why);
        return false;
    }
    size_t n = osbq_policy_quotas(gw->policy, plan, ctx, uses);
    if (n == 0)
        return true;
    *count = n;
    *spec = osbq_store_quota_spec(gw->store, uses, n);
    if (*spec == NULL) {
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

static const struct accept_desc instance_accept = {
    .resource = ACCEPT_INSTANCE,
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

void osb_instance_put(const struct gateway *gw, const struct request *req, struct reply *out)
{
    const char *instance_id = req->params[0];
    if (!validate_id(instance_id, "instance_id", out))
        return;
    json_t *body = validate_body(req, out);
    if (body == NULL)
        return;
    const char *service_id, *plan_id, *org, *space, *mv;
    json_t *parameters, *context, *info;
    const struct osbq_plan *plan;
    char *params_text = NULL, *context_text = NULL, *info_text = NULL, *dashboard = NULL;
    char *quota_spec = NULL;
    size_t quota_count = 0;
    struct osbq_policy_use uses[OSBQ_POLICY_QUOTAS_MAX];
    if (!validate_optional_string(body, "service_id", &service_id, out) ||
        !validate_optional_string(body, "plan_id", &plan_id, out) ||
        !validate_optional_string(body, "organization_guid", &org, out) ||
        !validate_optional_string(body, "space_guid", &space, out) ||
        !validate_optional_object(body, "parameters", &parameters, out) ||
        !validate_optional_object(body, "context", &context, out))
        goto out;
    if (service_id == NULL || plan_id == NULL) {
        reply_bad_request(out, "\"service_id\" and \"plan_id\" are required.");
        goto out;
    }
    if (context == NULL && (org == NULL || space == NULL)) {
        reply_bad_request(out, "\"organization_guid\" and \"space_guid\" are required when "
                               "\"context\" is absent.");
        goto out;
    }
    if (!find_plan(gw, req, service_id, plan_id, &plan, out))
        goto out;
    if (!osb_parameters_valid(plan->provision_schema, parameters, true, out))
        goto out;
    if (plan->async_required && !accept_async(req)) {
        reply_error(out, OSBQ_ERR_ASYNC_REQUIRED, NULL);
        goto out;
    }
    if (!check_maintenance(body, req->api_version, plan, &mv, &info, out))
        goto out;
    struct osbq_policy_context ctx;
    osbq_policy_context_from(&ctx, context, org, space, osb_platform_name(req));
    if (!policy_admits(gw, OSBQ_JOB_PROVISION, plan, &ctx, uses, &quota_count, &quota_spec, out))
        goto out;
    params_text = digest_canonical(parameters);
    context_text = digest_canonical(context);
    info_text = digest_canonical(info);
    char digest[33];
    struct digest d;
    digest_begin(&d);
    digest_json(&d, "context", context_text);
    digest_string(&d, "maintenance_version", mv);
    digest_string(&d, "organization_guid", org);
    digest_json(&d, "parameters", params_text);
    digest_string(&d, "plan_id", plan_id);
    digest_string(&d, "service_id", service_id);
    digest_string(&d, "space_guid", space);
    if (!digest_end(&d, digest)) {
        reply_error(out, OSBQ_ERR_INTERNAL, "Out of memory.");
        goto out;
    }
    dashboard = osbq_plan_dashboard_url(plan, instance_id);
    struct accept a = {
        .kind = OSBQ_JOB_PROVISION,
        .instance_id = instance_id,
        .service_id = service_id,
        .plan_id = plan_id,
        .plan = plan,
        .parameters = params_text,
        .context = context_text,
        .maintenance_info = info_text,
        .maintenance_version = mv,
        .dashboard_url = dashboard,
        .digest = digest,
        .async = accept_async(req),
        .quotas = uses,
        .quota_count = quota_count,
        .quota_spec = quota_spec,
        .organization_guid = org,
        .space_guid = space,
    };
    accept_operation(gw, req, &instance_accept, &a, out);
out:
    free(params_text);
    free(context_text);
    free(info_text);
    free(dashboard);
    free(quota_spec);
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

/* An update once the instance is read (its current plan decides what the request may do): the
 * checks that need it, then the operation. state is the request's body. */
static void instance_patch_after_read(const struct gateway *gw, const struct request *req,
                                      struct osbq_store_call *call, void *state, struct reply *out)
{
    json_t *body = state;
    const char *instance_id = req->params[0];
    const char *service_id, *plan_id, *mv;
    json_t *parameters, *context, *info;
    struct osbq_instance inst = {0};
    struct osbq_error err = {0};
    char *params_text = NULL, *context_text = NULL, *info_text = NULL, *quota_spec = NULL;
    size_t quota_count = 0;
    json_t *stored_context = NULL;
    struct osbq_policy_use uses[OSBQ_POLICY_QUOTAS_MAX];
    if (!update_members(body, &service_id, &plan_id, &parameters, &context, out))
        return;
    int found = osbq_store_instance_get_result(call, &inst, &err);
    if (found < 0) {
        reply_store_unavailable(out, &err);
        goto out;
    }
    /* update_plans sets both when it succeeds; GCC's -O2 flow analysis (the image's Release
     * build) cannot see that and fails the build on -Wmaybe-uninitialized. */
    const struct osbq_plan *current = NULL, *target = NULL;
    if (!update_plans(gw, req, found, &inst, service_id, plan_id, &current, &target, out))
        goto out;
    /* Against the plan the instance moves to: its update schema describes the result. */
    if (!osb_parameters_valid(target->update_schema, parameters, false, out))
        goto out;
    if (target->async_required && !accept_async(req)) {
        reply_error(out, OSBQ_ERR_ASYNC_REQUIRED, NULL);
        goto out;
    }
    if (!check_maintenance(body, req->api_version, target, &mv, &info, out))
        goto out;
    /* Moving to another plan is provisioning it, as far as the policy goes; the instance's
     * stored context stands in when the platform sends none. */
    if (current != target) {
        struct osbq_policy_context ctx;
        if (context == NULL && inst.context != NULL)
            stored_context = json_loads(inst.context, 0, NULL);
        osbq_policy_context_from(&ctx, context ? context : stored_context, NULL, NULL,
                                 osb_platform_name(req));
        if (!policy_admits(gw, OSBQ_JOB_UPDATE, target, &ctx, uses, &quota_count, &quota_spec, out))
            goto out;
    }
    params_text = digest_canonical(parameters);
    context_text = digest_canonical(context);
    info_text = digest_canonical(info);
    char digest[33];
    struct digest d;
    digest_begin(&d);
    digest_json(&d, "context", context_text);
    digest_string(&d, "maintenance_version", mv);
    digest_json(&d, "parameters", params_text);
    digest_string(&d, "plan_id", target->id);
    digest_string(&d, "service_id", service_id);
    if (!digest_end(&d, digest)) {
        reply_error(out, OSBQ_ERR_INTERNAL, "Out of memory.");
        goto out;
    }
    struct accept a = {
        .kind = OSBQ_JOB_UPDATE,
        .instance_id = instance_id,
        .service_id = service_id,
        .plan_id = target->id,
        .plan = target,
        .parameters = params_text,
        .context = context_text,
        .maintenance_info = info_text,
        .maintenance_version = mv,
        .expected_plan_id = inst.plan_id,
        .digest = digest,
        .async = accept_async(req),
        .quotas = uses,
        .quota_count = quota_count,
        /* A plan change holds exactly the new plan's quotas (none: ""); otherwise the
         * instance's counters stay as they are. */
        .quota_spec = current == target ? OSBQ_STORE_QUOTAS_UNCHANGED
                                        : (quota_spec != NULL ? quota_spec : ""),
    };
    accept_operation(gw, req, &instance_accept, &a, out);
out:
    free(params_text);
    free(context_text);
    free(info_text);
    free(quota_spec);
    json_decref(stored_context);
    osbq_instance_clear(&inst);
}

void osb_instance_patch(const struct gateway *gw, const struct request *req, struct reply *out)
{
    const char *instance_id = req->params[0];
    if (!validate_id(instance_id, "instance_id", out))
        return;
    json_t *body = validate_body(req, out);
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
    call = osbq_store_instance_get_call(gw->store, instance_id, &err);
    if (call == NULL) {
        reply_error_from(out, &err);
        goto out;
    }
    reply_defer(out, call, instance_patch_after_read, body, body_free);
    return;
out:
    json_decref(body);
}

void osb_instance_delete(const struct gateway *gw, const struct request *req, struct reply *out)
{
    const char *instance_id = req->params[0];
    if (!validate_id(instance_id, "instance_id", out))
        return;
    if (req->query_service_id == NULL || req->query_service_id[0] == '\0' ||
        req->query_plan_id == NULL || req->query_plan_id[0] == '\0') {
        reply_bad_request(out, "The query parameters service_id and plan_id are required.");
        return;
    }
    /* The plan may have left the catalog since the instance was made: deprovisioning must
     * still work, with the defaults. */
    const struct osbq_plan *plan = osb_platform_plan(gw, req, req->query_plan_id);
    if (plan != NULL && plan->async_required && !accept_async(req)) {
        reply_error(out, OSBQ_ERR_ASYNC_REQUIRED, NULL);
        return;
    }
    struct accept a = {
        .kind = OSBQ_JOB_DEPROVISION,
        .instance_id = instance_id,
        .service_id = req->query_service_id,
        .plan_id = req->query_plan_id,
        .plan = plan,
        .digest = "",
        .async = accept_async(req),
    };
    accept_operation(gw, req, &instance_accept, &a, out);
}

/* GET of an instance once it is read. */
static void instance_get_after_read(const struct gateway *gw, const struct request *req,
                                    struct osbq_store_call *call, void *state, struct reply *out)
{
    (void)state;
    struct osbq_instance inst = {0};
    struct osbq_error err = {0};
    int found = osbq_store_instance_get_result(call, &inst, &err);
    if (found < 0) {
        reply_store_unavailable(out, &err);
        return;
    }
    if (found == 0 || !osb_platform_owns(req, inst.platform) ||
        strcmp(inst.state, "provisioned") != 0) {
        reply_error(out, OSBQ_ERR_NOT_FOUND, "The service instance does not exist.");
        goto out;
    }
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
    if (call == NULL) {
        reply_error_from(out, &err);
        return;
    }
    reply_defer(out, call, instance_get_after_read, NULL, NULL);
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
