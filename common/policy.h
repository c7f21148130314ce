/* Broker-side policies (OSBQ_POLICY, docs/policies.md): instance quotas by plan, service, in
 * total or per platform context (a Kubernetes namespace, a Cloud Foundry organization or
 * space), deny rules that keep plans out of given namespaces, organizations or spaces, and a
 * cap on each tenant's operations in progress. Loaded once, read-only afterwards: any number of
 * threads may evaluate it at once. Counting happens in Redis (store/lua/begin_instance.lua,
 * begin_binding.lua); this module only says which counters a request touches and what their
 * limits are. */
#ifndef OSBQ_POLICY_H
#define OSBQ_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "error.h"

/* The context fields a rule can name. */
enum osbq_policy_field {
    OSBQ_POLICY_NAMESPACE,         /* Kubernetes: context.namespace */
    OSBQ_POLICY_ORGANIZATION_GUID, /* Cloud Foundry: context.organization_guid */
    OSBQ_POLICY_SPACE_GUID,        /* Cloud Foundry: context.space_guid */
    OSBQ_POLICY_PLATFORM,          /* the OSBQ_PLATFORMS platform that made the request (not
                                    * the context's "platform", which names its kind) */
    OSBQ_POLICY_FIELD_COUNT_
};

/* Where a request comes from: each field borrowed, NULL when the request does not say. */
struct osbq_policy_context {
    const char *values[OSBQ_POLICY_FIELD_COUNT_];
};

/* The operations deny rules apply to. Changing an instance's plan counts as provisioning the
 * new plan. */
enum osbq_policy_op {
    OSBQ_POLICY_PROVISION = 1 << 0,
    OSBQ_POLICY_BIND = 1 << 1,
};

/* Quotas a request is counted against: at most this many per request. */
#define OSBQ_POLICY_QUOTAS_MAX 32

/* One quota a request counts against. */
struct osbq_policy_use {
    const char *name;  /* the quota's name; borrowed from the policy */
    int field;         /* the context field counted per value, or -1 for one counter */
    const char *value; /* that field's value in the request (borrowed), or NULL */
    int64_t limit;     /* max_instances */
};

struct osbq_policy;

/* Parses a policy from text (JSON). With catalog, every plan and service id it names must be
 * in it. On failure returns -1 with err naming the place, e.g.
 * "quotas[2].plans[0]: unknown plan id \"x\"". *out is owned by the caller. */
int osbq_policy_load_text(const char *text, size_t len, const struct osbq_catalog *catalog,
                          struct osbq_policy **out, struct osbq_error *err);

/* Same for a file; errors name the path. */
int osbq_policy_load_file(const char *path, const struct osbq_catalog *catalog,
                          struct osbq_policy **out, struct osbq_error *err);

void osbq_policy_destroy(struct osbq_policy **pp);

/* Fills ctx from a request's context object (either platform's shape) and, for platforms that
 * send no context (API < 2.12), its top-level organization_guid/space_guid (NULL when
 * absent), and the name of the platform that made it (NULL: none). Borrows every string. */
void osbq_policy_context_from(struct osbq_policy_context *ctx, const json_t *context,
                              const char *organization_guid, const char *space_guid,
                              const char *platform);

/* Whether any deny rule names a context field for op on plan: only then does a request
 * without a context need the instance's. */
bool osbq_policy_denies_by_context(const struct osbq_policy *policy, enum osbq_policy_op op,
                                   const struct osbq_plan *plan);

/* The first deny rule refusing op on plan from ctx: writes "Policy \"<name>\" does not allow
 * ..." into description and returns true; false when allowed. */
bool osbq_policy_denied(const struct osbq_policy *policy, enum osbq_policy_op op,
                        const struct osbq_plan *plan, const struct osbq_policy_context *ctx,
                        char *description, size_t size);

/* The quotas an instance of plan with ctx counts against, in policy order, into uses (at most
 * OSBQ_POLICY_QUOTAS_MAX). Per-field quotas whose field ctx lacks are skipped. Returns the
 * count. */
size_t osbq_policy_quotas(const struct osbq_policy *policy, const struct osbq_plan *plan,
                          const struct osbq_policy_context *ctx, struct osbq_policy_use *uses);

/* The refusal for a full quota: "Quota \"<name>\" exceeded: ..." with the count found. */
void osbq_policy_quota_description(const struct osbq_policy_use *use, int64_t used,
                                   char *description, size_t size);

/* For osbq-ctl: the quotas in policy order; name, field (-1: none) and limit of quota i. */
size_t osbq_policy_quota_count(const struct osbq_policy *policy);
void osbq_policy_quota_at(const struct osbq_policy *policy, size_t i, struct osbq_policy_use *out);

/* in_progress_per_tenant: the most operations in progress a tenant of platform (its name) may
 * have, or -1 when its platform has none (no cap for it and no "*" one). */
int64_t osbq_policy_in_progress_cap(const struct osbq_policy *policy, const char *platform);

/* deletes_per_minute_per_tenant: the most deprovisions and unbinds of usable records a tenant of
 * platform may make a minute, or -1 when its platform has none. */
int64_t osbq_policy_delete_cap(const struct osbq_policy *policy, const char *platform);

/* The refusal when a tenant's deletes this minute reached that cap, naming the setting. */
void osbq_policy_delete_cap_description(const char *tenant, int64_t deleted, int64_t limit,
                                        char *description, size_t size);

/* The refusal when a tenant's operations in progress reached its cap: "The tenant \"<tenant>\"
 * already has <in_progress> operations in progress, ..." naming the limit and the setting. */
void osbq_policy_cap_description(const char *tenant, int64_t in_progress, int64_t limit,
                                 char *description, size_t size);

/* The wire name of a field ("namespace", "organization_guid", "space_guid"). */
const char *osbq_policy_field_name(int field);

#endif
