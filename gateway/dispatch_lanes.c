/* The dispatcher's lanes: per lane, one FIFO queue per tenant with items waiting, the tenants
 * with items in a ring served by deficit round robin (quantum: the tenant's weight, one item
 * costing one), and the lane whose turn came last. */
#include "dispatch_lanes.h"

#include <czmq.h>
#include <stdlib.h>
#include <string.h>

#include "owned.h"

/* One tenant's items in one lane. Exists only while it holds items: an idle tenant costs
 * nothing. */
struct tenant_queue {
    char *key;                 /* the tenant (owned; also its key in the lane's table) */
    unsigned weight;           /* items it may take per round */
    unsigned deficit;          /* items it may still take in the current round */
    zlistx_t *items;           /* its items, oldest first */
    struct tenant_queue *next; /* the next tenant in the lane's ring */
};

struct lane {
    zhashx_t *tenants;         /* key -> struct tenant_queue *, those with items */
    struct tenant_queue *head; /* the tenant whose round it is; NULL when the lane is empty */
    struct tenant_queue *tail; /* the last tenant of the ring (a FIFO of tenants) */
    size_t size;               /* items in the lane */
};

struct dispatch_lanes {
    struct lane lane[DISPATCH_LANES];
    unsigned last; /* the lane served last */
    size_t total;  /* items in all lanes */
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
        l->lane[i].tenants = zhashx_new();
        if (l->lane[i].tenants == NULL) {
            dispatch_lanes_destroy(&l);
            return NULL;
        }
    }
    return l;
}

static void tenant_free(struct tenant_queue *t)
{
    zlistx_destroy(&t->items);
    free(t->key);
    free(t);
}

/* Takes t out of the lane (prev: the tenant before it in the ring, NULL when t is the head) and
 * frees it. */
static void tenant_remove(struct lane *ln, struct tenant_queue *prev, struct tenant_queue *t)
{
    if (prev != NULL)
        prev->next = t->next;
    else
        ln->head = t->next;
    if (ln->tail == t)
        ln->tail = prev;
    zhashx_delete(ln->tenants, t->key);
    tenant_free(t);
}

void dispatch_lanes_destroy(struct dispatch_lanes **lp)
{
    OSBQ_OWNED_OR_RETURN(struct dispatch_lanes, l, lp);
    for (unsigned i = 0; i < DISPATCH_LANES; i++) {
        for (struct tenant_queue *t = l->lane[i].head, *next; t != NULL; t = next) {
            next = t->next;
            tenant_free(t);
        }
        zhashx_destroy(&l->lane[i].tenants);
    }
    free(l);
    *lp = NULL;
}

/* The tenant's queue in lane, made (at the ring's tail, or its head when first) when it has
 * none. NULL when memory ran out. */
static struct tenant_queue *tenant_in(struct lane *lane, const char *key, unsigned weight,
                                      bool first)
{
    struct tenant_queue *t = zhashx_lookup(lane->tenants, key);
    if (t != NULL) {
        /* A reload may change a weight: the next round uses the latest. */
        t->weight = weight;
        return t;
    }
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->key = strdup(key);
    t->items = zlistx_new();
    if (t->key == NULL || t->items == NULL || zhashx_insert(lane->tenants, key, t) != 0) {
        tenant_free(t);
        return NULL;
    }
    t->weight = weight;
    t->deficit = weight;
    if (lane->head == NULL) {
        lane->head = lane->tail = t;
    } else if (first) {
        /* Before the tenant whose round it is: that one's round resumes after. */
        t->next = lane->head;
        lane->head = t;
    } else {
        lane->tail->next = t;
        lane->tail = t;
    }
    return t;
}

int dispatch_lanes_push(struct dispatch_lanes *l, enum dispatch_lane lane, const char *tenant,
                        unsigned weight, void *item, bool front)
{
    struct lane *ln = &l->lane[lane];
    struct tenant_queue *t = tenant_in(ln, tenant ? tenant : "", weight ? weight : 1, front);
    if (t == NULL)
        return -1;
    if ((front ? zlistx_add_start(t->items, item) : zlistx_add_end(t->items, item)) == NULL) {
        if (zlistx_size(t->items) == 0) {
            /* Made for this item: not left in the ring empty. */
            struct tenant_queue *prev = NULL;
            for (struct tenant_queue *p = ln->head; p != t; p = p->next)
                prev = p;
            tenant_remove(ln, prev, t);
        }
        return -1;
    }
    ln->size++;
    l->total++;
    return 0;
}

/* Takes the oldest item of t, which follows prev in the ring (NULL: t is the head). A tenant
 * left empty leaves the ring; the head, once its round's items are taken, goes to the ring's
 * tail with a new round's; another tenant (one preferred for holding fewer running jobs) keeps
 * its place. */
static void *tenant_take(struct lane *ln, struct tenant_queue *prev, struct tenant_queue *t)
{
    void *item = zlistx_first(t->items);
    zlistx_detach_cur(t->items);
    ln->size--;
    bool round_over = --t->deficit == 0;
    if (round_over)
        t->deficit = t->weight;
    if (zlistx_size(t->items) == 0) {
        tenant_remove(ln, prev, t);
    } else if (round_over && prev == NULL && t->next != NULL) {
        ln->head = t->next;
        t->next = NULL;
        ln->tail->next = t;
        ln->tail = t;
    }
    return item;
}

/* Takes the next item of a non-empty lane: the head tenant's oldest, unless load says another of
 * the first DISPATCH_LANES_PREFER_SCAN tenants holds fewer running jobs for its weight (then
 * that one's oldest). */
static void *lane_pop(struct lane *ln, const struct dispatch_load *load)
{
    struct tenant_queue *best = ln->head, *best_prev = NULL;
    if (load != NULL && load->running != NULL) {
        uint64_t best_running = load->running(load->ctx, best->key);
        unsigned scanned = 1;
        for (struct tenant_queue *prev = ln->head, *t = ln->head->next;
             t != NULL && best_running > 0 && scanned < DISPATCH_LANES_PREFER_SCAN;
             prev = t, t = t->next, scanned++) {
            uint64_t running = load->running(load->ctx, t->key);
            if (running * best->weight < best_running * t->weight) {
                best = t;
                best_prev = prev;
                best_running = running;
            }
        }
    }
    return tenant_take(ln, best_prev, best);
}

void *dispatch_lanes_pop(struct dispatch_lanes *l, enum dispatch_lane *lane,
                         const struct dispatch_load *load)
{
    for (unsigned step = 1; step <= DISPATCH_LANES; step++) {
        unsigned i = (l->last + step) % DISPATCH_LANES;
        if (l->lane[i].size == 0)
            continue;
        void *item = lane_pop(&l->lane[i], load);
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
    return l->lane[lane].size;
}

size_t dispatch_lanes_total(const struct dispatch_lanes *l)
{
    return l->total;
}

size_t dispatch_lanes_tenants(const struct dispatch_lanes *l, enum dispatch_lane lane)
{
    return zhashx_size(l->lane[lane].tenants);
}

void *dispatch_lanes_oldest(const struct dispatch_lanes *l, enum dispatch_lane lane,
                            bool (*older)(const void *a, const void *b))
{
    void *oldest = NULL;
    for (const struct tenant_queue *t = l->lane[lane].head; t != NULL; t = t->next) {
        /* Items handed back went to the front, each younger than those behind it: the tenant's
         * oldest is where the queue stops getting older (the head, without any). */
        void *item = zlistx_first(t->items);
        for (void *next = zlistx_next(t->items); next != NULL && older(next, item);
             next = zlistx_next(t->items))
            item = next;
        if (oldest == NULL || older(item, oldest))
            oldest = item;
    }
    return oldest;
}
