/* The dispatcher's table of workers: a list, walked whole by each pick (a gateway has a few
 * dozen workers at most), and the count of jobs sent that orders the workers' turns. */
#include "dispatch_workers.h"

#include <stdlib.h>

#include "owned.h"

struct dispatch_workers {
    zlistx_t *list; /* struct dispatch_worker *, in the order first heard from */
    uint64_t sent;  /* jobs sent to any worker so far */
};

struct dispatch_workers *dispatch_workers_new(void)
{
    struct dispatch_workers *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->list = zlistx_new();
    if (t->list == NULL) {
        free(t);
        return NULL;
    }
    return t;
}

void dispatch_worker_free(struct dispatch_worker **wp)
{
    OSBQ_OWNED_OR_RETURN(struct dispatch_worker, w, wp);
    zframe_destroy(&w->identity);
    free(w->id);
    free(w);
    *wp = NULL;
}

void dispatch_workers_destroy(struct dispatch_workers **tp)
{
    OSBQ_OWNED_OR_RETURN(struct dispatch_workers, t, tp);
    for (struct dispatch_worker *w = zlistx_first(t->list); w != NULL; w = zlistx_next(t->list))
        dispatch_worker_free(&w);
    zlistx_destroy(&t->list);
    free(t);
    *tp = NULL;
}

struct dispatch_worker *dispatch_workers_find(struct dispatch_workers *t, const zframe_t *identity)
{
    for (struct dispatch_worker *w = zlistx_first(t->list); w != NULL; w = zlistx_next(t->list))
        if (zframe_eq(w->identity, (zframe_t *)identity))
            return w;
    return NULL;
}

struct dispatch_worker *dispatch_workers_find_id(struct dispatch_workers *t, const char *id)
{
    for (struct dispatch_worker *w = zlistx_first(t->list); w != NULL; w = zlistx_next(t->list))
        if (strcmp(w->id, id) == 0)
            return w;
    return NULL;
}

struct dispatch_worker *dispatch_workers_add(struct dispatch_workers *t, zframe_t **identity,
                                             char **id)
{
    struct dispatch_worker *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    if (zlistx_add_end(t->list, w) == NULL) {
        free(w);
        return NULL;
    }
    w->identity = *identity;
    *identity = NULL;
    w->id = *id;
    *id = NULL;
    w->fd = -1;
    return w;
}

bool dispatch_workers_unlink(struct dispatch_workers *t, const struct dispatch_worker *w)
{
    for (struct dispatch_worker *each = zlistx_first(t->list); each != NULL;
         each = zlistx_next(t->list))
        if (each == w) {
            zlistx_delete(t->list, zlistx_cursor(t->list));
            return true;
        }
    return false;
}

void dispatch_worker_heard(struct dispatch_worker *w, const struct osbq_bus_ready_received *ready,
                           int64_t now_ms)
{
    w->handover_lease_ms = ready->handover_lease_ms;
    w->free = ready->counts_received
                  ? osbq_bus_ready_credit(ready->free_slots, w->sent, ready->received)
                  : ready->free_slots;
    w->last_seen = now_ms;
}

void dispatch_worker_full(struct dispatch_worker *w, int64_t now_ms)
{
    w->free = 0;
    w->last_seen = now_ms;
}

unsigned dispatch_worker_available(const struct dispatch_worker *w)
{
    return w->free > w->reserved ? w->free - w->reserved : 0;
}

struct dispatch_worker *dispatch_workers_roomiest(struct dispatch_workers *t, bool handover_only)
{
    struct dispatch_worker *best = NULL;
    unsigned best_room = 0;
    for (struct dispatch_worker *w = zlistx_first(t->list); w != NULL; w = zlistx_next(t->list)) {
        unsigned room = dispatch_worker_available(w);
        if (room > 0 && (!handover_only || w->handover_lease_ms > 0) &&
            (best == NULL || room > best_room ||
             (room == best_room && w->last_sent < best->last_sent))) {
            best = w;
            best_room = room;
        }
    }
    return best;
}

void dispatch_workers_count_sent(struct dispatch_workers *t, struct dispatch_worker *w)
{
    if (w->free > 0)
        w->free--;
    w->sent++;
    w->last_sent = ++t->sent;
}

struct dispatch_worker *dispatch_workers_on_fd(struct dispatch_workers *t, int fd)
{
    struct dispatch_worker *found = NULL;
    for (struct dispatch_worker *w = zlistx_first(t->list); w != NULL; w = zlistx_next(t->list))
        if (w->fd == fd && (found == NULL || w->last_seen < found->last_seen))
            found = w;
    return found;
}

struct dispatch_worker *dispatch_workers_silent(struct dispatch_workers *t, int64_t seen_before_ms)
{
    for (struct dispatch_worker *w = zlistx_first(t->list); w != NULL; w = zlistx_next(t->list))
        if (w->last_seen < seen_before_ms)
            return w;
    return NULL;
}

void dispatch_workers_totals(struct dispatch_workers *t, size_t *workers, size_t *available)
{
    size_t count = 0, room = 0;
    for (struct dispatch_worker *w = zlistx_first(t->list); w != NULL; w = zlistx_next(t->list)) {
        count++;
        room += dispatch_worker_available(w);
    }
    *workers = count;
    *available = room;
}
