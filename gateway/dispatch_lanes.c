/* The dispatcher's lanes: one FIFO list per lane and the lane whose turn came last. */
#include "dispatch_lanes.h"

#include <czmq.h>
#include <stdlib.h>

struct dispatch_lanes {
    zlistx_t *lane[DISPATCH_LANES]; /* items, oldest first */
    unsigned last;                  /* the lane served last */
    size_t total;                   /* items in all lanes */
};

const char *dispatch_lane_name(enum dispatch_lane lane)
{
    static const char *const names[DISPATCH_LANES] = {"waiting", "due", "new"};
    return (unsigned)lane < DISPATCH_LANES ? names[lane] : "unknown";
}

struct dispatch_lanes *dispatch_lanes_new(void)
{
    struct dispatch_lanes *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    /* The first turn goes to the first lane: waiting clients first. */
    l->last = DISPATCH_LANES - 1;
    for (unsigned i = 0; i < DISPATCH_LANES; i++) {
        l->lane[i] = zlistx_new();
        if (l->lane[i] == NULL) {
            dispatch_lanes_destroy(&l);
            return NULL;
        }
    }
    return l;
}

void dispatch_lanes_destroy(struct dispatch_lanes **lp)
{
    struct dispatch_lanes *l = lp ? *lp : NULL;
    if (l == NULL)
        return;
    for (unsigned i = 0; i < DISPATCH_LANES; i++)
        zlistx_destroy(&l->lane[i]);
    free(l);
    *lp = NULL;
}

int dispatch_lanes_push(struct dispatch_lanes *l, enum dispatch_lane lane, void *item, bool front)
{
    zlistx_t *list = l->lane[lane];
    if ((front ? zlistx_add_start(list, item) : zlistx_add_end(list, item)) == NULL)
        return -1;
    l->total++;
    return 0;
}

void *dispatch_lanes_pop(struct dispatch_lanes *l, enum dispatch_lane *lane)
{
    for (unsigned step = 1; step <= DISPATCH_LANES; step++) {
        unsigned i = (l->last + step) % DISPATCH_LANES;
        void *item = zlistx_first(l->lane[i]);
        if (item == NULL)
            continue;
        zlistx_detach_cur(l->lane[i]);
        l->last = i;
        l->total--;
        if (lane != NULL)
            *lane = (enum dispatch_lane)i;
        return item;
    }
    return NULL;
}

size_t dispatch_lanes_size(const struct dispatch_lanes *l, enum dispatch_lane lane)
{
    return zlistx_size(l->lane[lane]);
}

size_t dispatch_lanes_total(const struct dispatch_lanes *l)
{
    return l->total;
}
