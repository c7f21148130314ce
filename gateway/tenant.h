/* Tenants: whose work an operation is, so that the workers are shared fairly between them
 * (docs/reliability.md, fairness). No I/O here. */
#ifndef OSBQ_GATEWAY_TENANT_H
#define OSBQ_GATEWAY_TENANT_H

#include "config.h"
#include "platforms.h"

/* Room for a tenant key and its NUL: the platform's name, and an organization and a space
 * identifier of at most TENANT_PART_MAX bytes each. */
#define TENANT_PART_MAX 80
#define TENANT_KEY_MAX  (OSBQ_PLATFORM_NAME_MAX + 2 * (TENANT_PART_MAX + 1) + 1)

/* The tenant of a request of platform (its name) with the given context (compact JSON text, or
 * NULL) and top-level organization_guid and space_guid (provision's, or NULL), as scope says:
 * "<platform>", "<platform>/<organization>" or "<platform>/<organization>/<space>". The
 * organization is the context's organization_guid (Cloud Foundry), else its namespace
 * (Kubernetes), else the top-level organization_guid; the space the context's space_guid, else
 * the top-level one. A part that is missing ends the key there; a longer one is cut to
 * TENANT_PART_MAX bytes. out holds at least TENANT_KEY_MAX bytes. */
void tenant_key(enum osbq_tenant_scope scope, const char *platform, const char *context,
                const char *organization_guid, const char *space_guid, char *out);

/* The weight of tenant's platform (the key's part before the first '/') in set: 1 when the
 * platform is not in it (removed by a reload) or tenant is NULL or empty. */
unsigned tenant_weight(const struct osbq_platforms *set, const char *tenant);

/* The platform label of tenant's work in the metrics (osbq_dispatch_wait_seconds): its
 * platform's name when set has it (the string is set's), OSBQ_PLATFORM_DEFAULT for "default",
 * and TENANT_PLATFORM_UNKNOWN for anything else (a platform removed by a reload, a tenant NULL
 * or empty), so the label's values stay the platforms of OSBQ_PLATFORMS and two more. */
#define TENANT_PLATFORM_UNKNOWN "unknown"
const char *tenant_platform_label(const struct osbq_platforms *set, const char *tenant);

#endif
