/* The averages a gateway read, by "<kind> <plan>", in a czmq hash table under one mutex. */
#include "averages.h"

#include <czmq.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct averages {
    pthread_mutex_t lock;
    zhashx_t *by_key; /* "<kind> <plan>" -> struct average (owned) */
};

struct average {
    int64_t ms;     /* -1: none recorded */
    double read_at; /* osbq_clock_seconds when read from Redis */
};

static void average_destroy(void **item)
{
    free(*item);
    *item = NULL;
}

struct averages *averages_new(void)
{
    struct averages *a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->by_key = zhashx_new();
    if (a->by_key == NULL || pthread_mutex_init(&a->lock, NULL) != 0) {
        zhashx_destroy(&a->by_key);
        free(a);
        return NULL;
    }
    zhashx_set_destructor(a->by_key, average_destroy);
    return a;
}

void averages_free(struct averages **ap)
{
    struct averages *a = ap ? *ap : NULL;
    if (a == NULL)
        return;
    zhashx_destroy(&a->by_key);
    pthread_mutex_destroy(&a->lock);
    free(a);
    *ap = NULL;
}

/* The table's key of kind on plan in buf; false when it does not fit (not kept then). */
static bool average_key(char *buf, size_t size, const char *plan, const char *kind)
{
    int n = snprintf(buf, size, "%s %s", kind, plan);
    return n > 0 && (size_t)n < size;
}

bool averages_get(struct averages *a, const char *plan, const char *kind, double now,
                  int64_t *average_ms)
{
    char key[512];
    if (a == NULL || !average_key(key, sizeof key, plan, kind))
        return false;
    pthread_mutex_lock(&a->lock);
    const struct average *found = zhashx_lookup(a->by_key, key);
    bool fresh =
        found != NULL && now - found->read_at < AVERAGES_MAX_AGE_S && now >= found->read_at;
    if (fresh)
        *average_ms = found->ms;
    pthread_mutex_unlock(&a->lock);
    return fresh;
}

void averages_put(struct averages *a, const char *plan, const char *kind, double now,
                  int64_t average_ms)
{
    char key[512];
    if (a == NULL || !average_key(key, sizeof key, plan, kind))
        return;
    struct average *item = malloc(sizeof *item);
    if (item == NULL)
        return;
    *item = (struct average){average_ms, now};
    pthread_mutex_lock(&a->lock);
    if (zhashx_size(a->by_key) >= AVERAGES_MAX && zhashx_lookup(a->by_key, key) == NULL)
        zhashx_purge(a->by_key);
    zhashx_update(a->by_key, key, item); /* frees the one it replaces */
    pthread_mutex_unlock(&a->lock);
}
