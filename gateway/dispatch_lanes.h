/* The dispatcher's queue: one line (lane) per kind of work, served in turn, so that no kind of
 * work waits behind a flood of another; inside a lane, the tenants with work waiting take turns
 * by weight (deficit round robin), so that no tenant waits behind another's backlog
 * (docs/reliability.md, fairness). */
#ifndef OSBQ_GATEWAY_DISPATCH_LANES_H
#define OSBQ_GATEWAY_DISPATCH_LANES_H

#include <stdbool.h>
#include <stddef.h>

/* Where a job waits for a worker. */
enum dispatch_lane {
    DISPATCH_LANE_WAITING, /* a synchronous request's job: its client waits on the connection */
    DISPATCH_LANE_DUE,     /* from the recovery loop: a due poll, or a resend */
    DISPATCH_LANE_NEW,     /* the first step of a new asynchronous operation */
};
#define DISPATCH_LANES 3

/* The lane's name in metrics and logs: "waiting", "due", "new". */
const char *dispatch_lane_name(enum dispatch_lane lane);

struct dispatch_lanes;

/* An empty set of lanes; NULL when memory ran out. */
struct dispatch_lanes *dispatch_lanes_new(void);

/* Frees the lanes (not the items: take them out first); sets *lp to NULL; accepts NULL. */
void dispatch_lanes_destroy(struct dispatch_lanes **lp);

/* Adds item (not NULL) at the tail of tenant's queue in lane, or at its head (a job handed
 * back: its tenant then goes first in the lane too). tenant (copied; NULL: "") names whose work
 * it is; weight (1 and up; 0 counts as 1) is how many of its items may leave per round of the
 * lane's tenants, the latest push's weight applying. Returns 0, or -1 when memory ran out. */
int dispatch_lanes_push(struct dispatch_lanes *l, enum dispatch_lane lane, const char *tenant,
                        unsigned weight, void *item, bool front);

/* How many of a lane's tenants a pop looks at for one holding fewer running jobs. */
#define DISPATCH_LANES_PREFER_SCAN 64

/* What the workers hold of each tenant's: with it, a pop prefers the tenant holding the fewest
 * running jobs for its weight (a newcomer gets the next free slot, even while another tenant's
 * slow steps hold the rest). running(ctx, tenant) is called with the tenant's key. */
struct dispatch_load {
    unsigned (*running)(void *ctx, const char *tenant);
    void *ctx;
};

/* Takes the next item, or NULL when every lane is empty. The rule: the lanes take turns, one
 * item each; the turn goes from the lane served last to the next lane, in the order of enum
 * dispatch_lane, that holds an item. So the item at the head of a lane leaves before at most
 * one item of each other lane. Within a lane the tenants with items take rounds in the order
 * they came: a tenant of weight w gives up to w items, oldest first, then the next tenant's
 * round comes; so a tenant's oldest item leaves before at most w items of each other tenant of
 * weight w, whatever their backlogs. With load (not NULL), a lane first serves, among its first
 * DISPATCH_LANES_PREFER_SCAN tenants in round order, the one holding the fewest running jobs
 * for its weight (the earliest in the round among equals: the plain rounds when all hold as
 * many). *lane (when not NULL) is set to the lane it came from.
 * Time and memory per item are O(1); a tenant with nothing waiting holds nothing. */
void *dispatch_lanes_pop(struct dispatch_lanes *l, enum dispatch_lane *lane,
                         const struct dispatch_load *load);

/* Items in lane, and in all of them. */
size_t dispatch_lanes_size(const struct dispatch_lanes *l, enum dispatch_lane lane);
size_t dispatch_lanes_total(const struct dispatch_lanes *l);

/* Tenants with items waiting in lane. */
size_t dispatch_lanes_tenants(const struct dispatch_lanes *l, enum dispatch_lane lane);

/* The oldest item of any tenant's queue in lane (by older(a, b): whether a waited longer than
 * b), or NULL when the lane is empty: the longest wait of any tenant. A tenant's oldest is its
 * head unless items were pushed at the front (handed back, each younger than what waits behind
 * it): then the first item behind them. O(tenants waiting + items pushed at the front): for a
 * metrics scrape, not per item. */
void *dispatch_lanes_oldest(const struct dispatch_lanes *l, enum dispatch_lane lane,
                            bool (*older)(const void *a, const void *b));

#endif
