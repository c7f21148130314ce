/* A gateway's memo (memo.h): each value a malloc'd copy with its size. */
#include "memo.h"

#include <czmq.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct memo {
    pthread_mutex_t lock;
    zhashx_t *by_key; /* key -> struct memo_value (owned) */
    size_t max;       /* the most entries kept */
};

struct memo_value {
    size_t size;
    unsigned char bytes[];
};

static void value_destroy(void **item)
{
    free(*item);
    *item = NULL;
}

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
    zhashx_set_destructor(m->by_key, value_destroy);
    return m;
}

void memo_free(struct memo **mp)
{
    struct memo *m = mp ? *mp : NULL;
    if (m == NULL)
        return;
    zhashx_destroy(&m->by_key);
    pthread_mutex_destroy(&m->lock);
    free(m);
    *mp = NULL;
}

bool memo_get(struct memo *m, const char *key, void *out, size_t size)
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

void memo_put(struct memo *m, const char *key, const void *value, size_t size)
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
