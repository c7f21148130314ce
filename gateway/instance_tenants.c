/* The instances' tenants a gateway learned, in a memo (memo.h). */
#include "instance_tenants.h"

#include <stdlib.h>
#include <string.h>

#include "memo.h"

struct instance_tenants {
    struct memo *by_instance; /* instance id -> its tenant key, with its NUL */
};

struct instance_tenants *instance_tenants_new(void)
{
    struct instance_tenants *t = calloc(1, sizeof *t);
    if (t != NULL && (t->by_instance = memo_new(INSTANCE_TENANTS_MAX)) == NULL) {
        free(t);
        t = NULL;
    }
    return t;
}

void instance_tenants_free(struct instance_tenants **tp)
{
    if (tp == NULL || *tp == NULL)
        return;
    memo_free(&(*tp)->by_instance);
    free(*tp);
    *tp = NULL;
}

bool instance_tenants_get(struct instance_tenants *t, const char *instance_id,
                          char out[TENANT_KEY_MAX])
{
    return t != NULL && memo_get(t->by_instance, instance_id, out, TENANT_KEY_MAX);
}

void instance_tenants_put(struct instance_tenants *t, const char *instance_id, const char *tenant)
{
    size_t len = tenant != NULL ? strnlen(tenant, TENANT_KEY_MAX) : TENANT_KEY_MAX;
    if (t != NULL && len < TENANT_KEY_MAX)
        memo_put(t->by_instance, instance_id, tenant, len + 1);
}
