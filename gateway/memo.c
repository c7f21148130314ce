/* A gateway's memos (memo.h): each value a malloc'd copy with its size; the averages and the
 * instances' tenants kept in them. */
#include "memo.h"

#include <czmq.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "owned.h"

struct memo {
    pthread_mutex_t lock;
    zhashx_t *by_key; /* key -> struct memo_value (owned) */
    size_t max;       /* the most entries kept */
};

struct memo_value {
    size_t size;
    unsigned char bytes[];
};

struct memo *memo_new(size_t max)
{
    struct memo *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->max = max;
    m->by_key = zhashx_new();
    if (m->by_key == NULL || pthread_mutex_init(&m->lock, NULL) != 0) {
        zhashx_destroy(&m->by_key);
        free(m);
        return NULL;
    }
    zhashx_set_destructor(m->by_key, osbq_owned_free);
    return m;
}

void memo_free(struct memo **mp)
{
    OSBQ_OWNED_OR_RETURN(struct memo, m, mp);
    zhashx_destroy(&m->by_key);
    pthread_mutex_destroy(&m->lock);
    free(m);
    *mp = NULL;
}

/* The value remembered for key, copied into out (size bytes at most): true, or false when none
 * is, or it does not fit. NULL m: none. */
static bool memo_get(struct memo *m, const char *key, void *out, size_t size)
{
    if (m == NULL || key == NULL)
        return false;
    pthread_mutex_lock(&m->lock);
    const struct memo_value *found = zhashx_lookup(m->by_key, key);
    bool fits = found != NULL && found->size <= size;
    if (fits)
        memcpy(out, found->bytes, found->size);
    pthread_mutex_unlock(&m->lock);
    return fits;
}

/* Remembers size bytes of value for key, replacing what was there. NULL m: nothing. */
static void memo_put(struct memo *m, const char *key, const void *value, size_t size)
{
    if (m == NULL || key == NULL)
        return;
    pthread_mutex_lock(&m->lock);
    const struct memo_value *known = zhashx_lookup(m->by_key, key);
    /* The same value again (a tenant learned once more): no allocation. */
    if (known == NULL || known->size != size || memcmp(known->bytes, value, size) != 0) {
        struct memo_value *copy = malloc(sizeof *copy + size);
        if (copy != NULL) {
            copy->size = size;
            memcpy(copy->bytes, value, size);
            if (known == NULL && zhashx_size(m->by_key) >= m->max)
                zhashx_purge(m->by_key);
            zhashx_update(m->by_key, key, copy); /* frees the one it replaces */
        }
    }
    pthread_mutex_unlock(&m->lock);
}

/* ---- The plans' averages, by "<kind> <plan>" ---- */

struct average {
    int64_t ms;     /* -1: none recorded */
    double read_at; /* osbq_clock_seconds when read from Redis */
};

/* The memo's key of kind on plan in buf; false when it does not fit (not kept then). */
static bool average_key(char *buf, size_t size, const char *plan, const char *kind)
{
    int n = snprintf(buf, size, "%s %s", kind, plan);
    return n > 0 && (size_t)n < size;
}

bool averages_get(struct memo *averages, const char *plan, const char *kind, double now,
                  int64_t *average_ms)
{
    char key[512];
    struct average found;
    if (!average_key(key, sizeof key, plan, kind) || !memo_get(averages, key, &found, sizeof found))
        return false;
    bool fresh = now - found.read_at < AVERAGES_MAX_AGE_S && now >= found.read_at;
    if (fresh)
        *average_ms = found.ms;
    return fresh;
}

void averages_put(struct memo *averages, const char *plan, const char *kind, double now,
                  int64_t average_ms)
{
    char key[512];
    const struct average item = {average_ms, now};
    if (average_key(key, sizeof key, plan, kind))
        memo_put(averages, key, &item, sizeof item);
}

/* ---- The instances' tenants: instance id -> its tenant key, with its NUL ---- */

bool instance_tenants_get(struct memo *tenants, const char *instance_id, char out[TENANT_KEY_MAX])
{
    return memo_get(tenants, instance_id, out, TENANT_KEY_MAX);
}

void instance_tenants_put(struct memo *tenants, const char *instance_id, const char *tenant)
{
    size_t len = tenant != NULL ? strnlen(tenant, TENANT_KEY_MAX) : TENANT_KEY_MAX;
    if (len < TENANT_KEY_MAX)
        memo_put(tenants, instance_id, tenant, len + 1);
}
