/* Operations in progress by tenant (tenant_work.h). */
#include "tenant_work.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "owned.h"

struct tenant_tally {
    json_t *index;            /* tenant -> its place in list (an integer); keys unchecked */
    json_t *seen;             /* operation id -> true: those already counted */
    struct tenant_work *list; /* every tenant met, in the order met, then sorted */
    size_t count, capacity;   /* entries used and allocated in list */
};

struct tenant_tally *tenant_tally_new(void)
{
    struct tenant_tally *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->index = json_object();
    t->seen = json_object();
    if (t->index == NULL || t->seen == NULL)
        tenant_tally_destroy(&t);
    return t;
}

void tenant_tally_destroy(struct tenant_tally **tp)
{
    OSBQ_OWNED_OR_RETURN(struct tenant_tally, t, tp);
    json_decref(t->index);
    json_decref(t->seen);
    for (size_t i = 0; i < t->count; i++)
        free(t->list[i].tenant);
    free(t->list);
    free(t);
    *tp = NULL;
}

int tenant_tally_first_sight(struct tenant_tally *t, const char *operation_id)
{
    if (json_object_get(t->seen, operation_id) != NULL)
        return 0;
    /* Ids are keys as Redis holds them: not checked for UTF-8. */
    return json_object_set_new_nocheck(t->seen, operation_id, json_true()) < 0 ? -1 : 1;
}

int tenant_tally_add(struct tenant_tally *t, const char *tenant, int64_t queued, int64_t running,
                     int64_t waiting)
{
    const char *key = tenant != NULL ? tenant : "";
    json_t *at = json_object_get(t->index, key);
    struct tenant_work *w;
    if (at != NULL) {
        w = &t->list[json_integer_value(at)];
    } else {
        if (t->count == t->capacity) {
            size_t capacity = t->capacity ? 2 * t->capacity : 64;
            struct tenant_work *list = realloc(t->list, capacity * sizeof *list);
            if (list == NULL)
                return -1;
            t->list = list;
            t->capacity = capacity;
        }
        w = &t->list[t->count];
        memset(w, 0, sizeof *w);
        w->tenant = strdup(key);
        if (w->tenant == NULL ||
            json_object_set_new_nocheck(t->index, key, json_integer((json_int_t)t->count)) < 0) {
            free(w->tenant);
            return -1;
        }
        t->count++;
    }
    w->queued += queued;
    w->running += running;
    w->waiting += waiting;
    return 0;
}

int64_t tenant_work_total(const struct tenant_work *w)
{
    return w->queued + w->running + w->waiting;
}

static int busiest_first(const void *a, const void *b)
{
    const struct tenant_work *x = a, *y = b;
    int64_t tx = tenant_work_total(x), ty = tenant_work_total(y);
    if (tx != ty)
        return tx > ty ? -1 : 1;
    return strcmp(x->tenant, y->tenant);
}

const struct tenant_work *tenant_tally_sorted(struct tenant_tally *t, size_t *n)
{
    if (t->count > 1)
        qsort(t->list, t->count, sizeof *t->list, busiest_first);
    /* The places changed: the index is no longer of use (nothing is added after). */
    json_object_clear(t->index);
    size_t busy = 0;
    while (busy < t->count && tenant_work_total(&t->list[busy]) > 0)
        busy++;
    *n = busy;
    return t->list;
}
