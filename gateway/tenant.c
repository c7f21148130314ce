/* Tenant keys and weights (tenant.h). */
#include "tenant.h"

#include <jansson.h>
#include <string.h>

/* The value of a non-empty string member of context, or NULL. */
static const char *member(const json_t *context, const char *name)
{
    const json_t *v = json_object_get(context, name);
    return json_is_string(v) && json_string_length(v) > 0 ? json_string_value(v) : NULL;
}

/* Appends "/" and at most TENANT_PART_MAX bytes of part to out (used bytes so far). */
static size_t append_part(char *out, size_t used, const char *part)
{
    size_t len = strnlen(part, TENANT_PART_MAX);
    out[used++] = '/';
    memcpy(out + used, part, len);
    used += len;
    out[used] = '\0';
    return used;
}

void tenant_key(enum osbq_tenant_scope scope, const char *platform, const char *context,
                const char *organization_guid, const char *space_guid, char *out)
{
    size_t used = strnlen(platform, OSBQ_PLATFORM_NAME_MAX);
    memcpy(out, platform, used);
    out[used] = '\0';
    if (scope == OSBQ_TENANT_PLATFORM)
        return;
    json_t *parsed = context != NULL ? json_loads(context, 0, NULL) : NULL;
    const char *org = member(parsed, "organization_guid");
    if (org == NULL)
        org = member(parsed, "namespace");
    if (org == NULL && organization_guid != NULL && organization_guid[0] != '\0')
        org = organization_guid;
    const char *space = member(parsed, "space_guid");
    if (space == NULL && space_guid != NULL && space_guid[0] != '\0')
        space = space_guid;
    if (org != NULL) {
        used = append_part(out, used, org);
        if (scope == OSBQ_TENANT_SPACE && space != NULL)
            (void)append_part(out, used, space);
    }
    json_decref(parsed);
}

/* The platform of tenant (the key's part before the first '/') in set, or NULL. */
static const struct osbq_platform *tenant_platform(const struct osbq_platforms *set,
                                                   const char *tenant)
{
    if (set == NULL || tenant == NULL || tenant[0] == '\0')
        return NULL;
    char name[OSBQ_PLATFORM_NAME_MAX + 1];
    size_t len = strcspn(tenant, "/");
    if (len > OSBQ_PLATFORM_NAME_MAX)
        return NULL;
    memcpy(name, tenant, len);
    name[len] = '\0';
    return osbq_platforms_find(set, name);
}

unsigned tenant_weight(const struct osbq_platforms *set, const char *tenant)
{
    const struct osbq_platform *p = tenant_platform(set, tenant);
    return p != NULL && p->weight > 0 ? p->weight : 1;
}

const char *tenant_platform_label(const struct osbq_platforms *set, const char *tenant)
{
    const struct osbq_platform *p = tenant_platform(set, tenant);
    if (p != NULL)
        return p->name;
    size_t len = tenant != NULL ? strcspn(tenant, "/") : 0;
    if (len == strlen(OSBQ_PLATFORM_DEFAULT) && strncmp(tenant, OSBQ_PLATFORM_DEFAULT, len) == 0)
        return OSBQ_PLATFORM_DEFAULT;
    return TENANT_PLATFORM_UNKNOWN;
}
