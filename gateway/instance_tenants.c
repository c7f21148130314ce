/* The instances' tenants a gateway learned, in a czmq hash table under one mutex. */
#include "instance_tenants.h"

#include <czmq.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct instance_tenants {
    pthread_mutex_t lock;
    zhashx_t *by_instance; /* instance id -> its tenant key (owned copies) */
};

static void tenant_destroy(void **item)
{
    free(*item);
    *item = NULL;
}

struct instance_tenants *instance_tenants_new(void)
{
    struct instance_tenants *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->by_instance = zhashx_new();
    if (t->by_instance == NULL || pthread_mutex_init(&t->lock, NULL) != 0) {
        zhashx_destroy(&t->by_instance);
        free(t);
        return NULL;
    }
    zhashx_set_destructor(t->by_instance, tenant_destroy);
    return t;
}

void instance_tenants_free(struct instance_tenants **tp)
{
    struct instance_tenants *t = tp ? *tp : NULL;
    if (t == NULL)
        return;
    zhashx_destroy(&t->by_instance);
    pthread_mutex_destroy(&t->lock);
    free(t);
    *tp = NULL;
}

bool instance_tenants_get(struct instance_tenants *t, const char *instance_id,
                          char out[TENANT_KEY_MAX])
{
    if (t == NULL || instance_id == NULL)
        return false;
    pthread_mutex_lock(&t->lock);
    const char *found = zhashx_lookup(t->by_instance, instance_id);
    if (found != NULL)
        memcpy(out, found, strlen(found) + 1);
    pthread_mutex_unlock(&t->lock);
    return found != NULL;
}

void instance_tenants_put(struct instance_tenants *t, const char *instance_id, const char *tenant)
{
    if (t == NULL || instance_id == NULL || tenant == NULL ||
        strnlen(tenant, TENANT_KEY_MAX) >= TENANT_KEY_MAX)
        return;
    pthread_mutex_lock(&t->lock);
    const char *known = zhashx_lookup(t->by_instance, instance_id);
    if (known == NULL || strcmp(known, tenant) != 0) {
        char *copy = strdup(tenant);
        if (copy != NULL) {
            if (known == NULL && zhashx_size(t->by_instance) >= INSTANCE_TENANTS_MAX)
                zhashx_purge(t->by_instance);
            zhashx_update(t->by_instance, instance_id, copy); /* frees the one it replaces */
        }
    }
    pthread_mutex_unlock(&t->lock);
}
