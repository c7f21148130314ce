/* The tenants of instances, as a gateway learned them from its begin scripts' answers (an
 * operation is its instance's tenant's): where a synchronous request waits for a worker's slot
 * before its begin (docs/decisions/0045) when the request itself does not say its tenant (a
 * DELETE has no body). Thread-safe. */
#ifndef OSBQ_GATEWAY_INSTANCE_TENANTS_H
#define OSBQ_GATEWAY_INSTANCE_TENANTS_H

#include <stdbool.h>

#include "tenant.h"

/* The most instances remembered; past it, all are forgotten and learned again from the next
 * answers (a lookup that misses only costs the request its wait: it begins at once). */
#define INSTANCE_TENANTS_MAX 16384

struct instance_tenants;

/* A new, empty table; NULL when out of memory. */
struct instance_tenants *instance_tenants_new(void);
void instance_tenants_free(struct instance_tenants **tp);

/* The tenant key recorded for instance_id, copied into out: true, or false when unknown. */
bool instance_tenants_get(struct instance_tenants *t, const char *instance_id,
                          char out[TENANT_KEY_MAX]);

/* Remembers tenant (a key of at most TENANT_KEY_MAX - 1 bytes; longer is not kept) as
 * instance_id's. */
void instance_tenants_put(struct instance_tenants *t, const char *instance_id, const char *tenant);

#endif
