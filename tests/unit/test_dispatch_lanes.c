/* Unit tests of the dispatcher's lanes (gateway/dispatch_lanes.c): the lanes take turns, so a
 * job at the head of its lane leaves before at most one job of each other lane, whatever waits
 * there; jobs of one lane leave in order; a job handed back goes first in its lane. Inside a
 * lane the tenants take rounds by weight (deficit round robin): a tenant's job waits for at
 * most a round of every other tenant, never for another tenant's backlog; memory and time per
 * job stay O(1) with 100,000 tenants; an idle tenant holds nothing. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "assert_destroy.h"
#include "dispatch_lanes.h"
#include "test_main.h"

/* Items are the addresses of these: what a lane holds is opaque to it. */
static int items[64];

static void *pop(struct dispatch_lanes *l, enum dispatch_lane expected_lane)
{
    enum dispatch_lane lane = DISPATCH_LANES;
    void *item = dispatch_lanes_pop(l, &lane, NULL);
    assert_non_null(item);
    assert_int_equal(lane, expected_lane);
    return item;
}

/* Queues items[i] in lane as a job of tenant, of weight 1, not handed back. */
static void push(struct dispatch_lanes *l, enum dispatch_lane lane, const char *tenant, int i)
{
    assert_int_equal(dispatch_lanes_push(l, lane, tenant, 1, &items[i], false), 0);
}

/* Queues items[first] to items[end - 1], in order, as push does. */
static void push_range(struct dispatch_lanes *l, enum dispatch_lane lane, const char *tenant,
                       int first, int end)
{
    for (int i = first; i < end; i++)
        push(l, lane, tenant, i);
}

static void test_empty(void **state)
{
    (void)state;
    struct dispatch_lanes *l = dispatch_lanes_new();
    assert_non_null(l);
    assert_null(dispatch_lanes_pop(l, NULL, NULL));
    assert_int_equal(dispatch_lanes_total(l), 0);
    assert_destroy_twice(dispatch_lanes_destroy, l);
}

/* One lane alone: first in, first out; a job handed back goes before the others. */
static void test_one_lane_in_order(void **state)
{
    (void)state;
    struct dispatch_lanes *l = dispatch_lanes_new();
    push_range(l, DISPATCH_LANE_NEW, "t", 0, 5);
    assert_int_equal(dispatch_lanes_push(l, DISPATCH_LANE_NEW, "t", 1, &items[9], true), 0);
    assert_int_equal(dispatch_lanes_size(l, DISPATCH_LANE_NEW), 6);
    assert_int_equal(dispatch_lanes_size(l, DISPATCH_LANE_WAITING), 0);
    assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[9]);
    for (int i = 0; i < 5; i++)
        assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[i]);
    assert_null(dispatch_lanes_pop(l, NULL, NULL));
    dispatch_lanes_destroy(&l);
}

/* A burst of new jobs queued first: a synchronous request's job queued behind them leaves
 * after at most one of them, and so does a due poll. */
static void test_burst_waits_one_turn(void **state)
{
    (void)state;
    struct dispatch_lanes *l = dispatch_lanes_new();
    push_range(l, DISPATCH_LANE_NEW, "t", 0, 40);
    /* The burst's first job goes, since it was alone. */
    assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[0]);
    assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[1]);
    push(l, DISPATCH_LANE_WAITING, "t", 50);
    push(l, DISPATCH_LANE_DUE, "t", 51);
    assert_int_equal(dispatch_lanes_total(l), 40);
    /* The lane served last was the new lane: the turn goes to the waiting one, then due. */
    assert_ptr_equal(pop(l, DISPATCH_LANE_WAITING), &items[50]);
    assert_ptr_equal(pop(l, DISPATCH_LANE_DUE), &items[51]);
    assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[2]);
    /* Another sync job: one new job went since the last, it goes next. */
    push(l, DISPATCH_LANE_WAITING, "t", 52);
    assert_ptr_equal(pop(l, DISPATCH_LANE_WAITING), &items[52]);
    assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[3]);
    dispatch_lanes_destroy(&l);
    /* The rest are static: nothing to free. */
}

/* Every lane full: strict turns, waiting, due, new, and each lane in its order. */
static void test_turns(void **state)
{
    (void)state;
    struct dispatch_lanes *l = dispatch_lanes_new();
    for (int i = 0; i < 4; i++) {
        push(l, DISPATCH_LANE_NEW, "t", i);
        push(l, DISPATCH_LANE_DUE, "t", 10 + i);
        push(l, DISPATCH_LANE_WAITING, "t", 20 + i);
    }
    assert_int_equal(dispatch_lanes_total(l), 12);
    for (int i = 0; i < 4; i++) {
        assert_ptr_equal(pop(l, DISPATCH_LANE_WAITING), &items[20 + i]);
        assert_ptr_equal(pop(l, DISPATCH_LANE_DUE), &items[10 + i]);
        assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[i]);
    }
    assert_null(dispatch_lanes_pop(l, NULL, NULL));
    dispatch_lanes_destroy(&l);
}

/* The bound, whatever the order of arrivals: between a job's arrival at the head of its lane
 * and its leaving, at most one job of each other lane leaves. Lanes filled by a fixed
 * pseudo-random sequence of pushes and pops. */
static void test_bound(void **state)
{
    (void)state;
    struct dispatch_lanes *l = dispatch_lanes_new();
    uint32_t seed = 12345;
    /* For each lane: how many jobs of other lanes left since its head job became head. */
    unsigned others[DISPATCH_LANES] = {0};
    for (int round = 0; round < 20000; round++) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = (seed >> 16) % 8;
        if (r < 4) {
            enum dispatch_lane lane = (enum dispatch_lane)(r % DISPATCH_LANES);
            if (dispatch_lanes_size(l, lane) == 0)
                others[lane] = 0;
            push(l, lane, "t", round % 64);
        } else {
            enum dispatch_lane lane = DISPATCH_LANES;
            if (dispatch_lanes_pop(l, &lane, NULL) == NULL)
                continue;
            others[lane] = 0;
            for (unsigned i = 0; i < DISPATCH_LANES; i++) {
                if (i == lane || dispatch_lanes_size(l, (enum dispatch_lane)i) == 0)
                    continue;
                others[i]++;
                assert_true(others[i] <= DISPATCH_LANES - 1);
            }
        }
    }
    while (dispatch_lanes_pop(l, NULL, NULL) != NULL)
        ;
    dispatch_lanes_destroy(&l);
}

/* A tenant with a backlog and one with a single job: the newcomer's job leaves after at most
 * one of the backlog's; a tenant's jobs keep their order; two backlogs alternate. */
static void test_tenants_take_turns(void **state)
{
    (void)state;
    struct dispatch_lanes *l = dispatch_lanes_new();
    push_range(l, DISPATCH_LANE_NEW, "cf/a", 0, 40);
    assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[0]);
    push(l, DISPATCH_LANE_NEW, "cf/b", 50);
    assert_int_equal(dispatch_lanes_tenants(l, DISPATCH_LANE_NEW), 2);
    /* a's round is over once it gave one: b is next. */
    assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[1]);
    assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[50]);
    /* b is idle again: it left the ring and holds nothing. */
    assert_int_equal(dispatch_lanes_tenants(l, DISPATCH_LANE_NEW), 1);
    push_range(l, DISPATCH_LANE_NEW, "cf/b", 51, 55);
    for (int i = 0; i < 4; i++) {
        assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[2 + i]);
        assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[51 + i]);
    }
    for (int i = 6; i < 40; i++)
        assert_ptr_equal(pop(l, DISPATCH_LANE_NEW), &items[i]);
    assert_null(dispatch_lanes_pop(l, NULL, NULL));
    assert_int_equal(dispatch_lanes_tenants(l, DISPATCH_LANE_NEW), 0);
    dispatch_lanes_destroy(&l);
}

/* Weights 3 and 1, both saturating: three of the first for each of the second. A job handed
 * back goes first in its tenant's queue. */
static void test_weights(void **state)
{
    (void)state;
    struct dispatch_lanes *l = dispatch_lanes_new();
    for (int i = 0; i < 30; i++) {
        assert_int_equal(dispatch_lanes_push(l, DISPATCH_LANE_DUE, "p3/x", 3, &items[i], false), 0);
        assert_int_equal(
            dispatch_lanes_push(l, DISPATCH_LANE_DUE, "p1/y", 1, &items[32 + i], false), 0);
    }
    int heavy = 0, light = 0;
    for (int n = 0; n < 20; n++) {
        int *item = pop(l, DISPATCH_LANE_DUE);
        if (item < &items[32])
            heavy++;
        else
            light++;
        /* After every whole round the shares are exactly 3:1. */
        if ((n + 1) % 4 == 0)
            assert_int_equal(heavy, 3 * light);
    }
    assert_int_equal(dispatch_lanes_push(l, DISPATCH_LANE_DUE, "p1/y", 1, &items[63], true), 0);
    /* Five whole rounds went: x's round comes, then y's, the handed-back job first. */
    for (int n = 0; n < 3; n++)
        assert_true((int *)pop(l, DISPATCH_LANE_DUE) < &items[32]);
    assert_ptr_equal(pop(l, DISPATCH_LANE_DUE), &items[63]);
    while (dispatch_lanes_pop(l, NULL, NULL) != NULL)
        ;
    dispatch_lanes_destroy(&l);
}

/* 100,000 tenants of one job each, then one more tenant's job: each leaves once, the late one
 * within a round of the others (all of them, here: one job each), and the lane holds no tenant
 * afterwards. A newcomer's oldest job also shows as the longest wait of the lane. */
static bool older(const void *a, const void *b)
{
    return a < b; /* the items array: a lower address was queued first here */
}

static void test_many_tenants(void **state)
{
    (void)state;
    enum { TENANTS = 100000 };
    struct dispatch_lanes *l = dispatch_lanes_new();
    char key[32];
    for (int i = 0; i < TENANTS; i++) {
        (void)snprintf(key, sizeof key, "k8s/ns-%d", i);
        push(l, DISPATCH_LANE_NEW, key, 1 + i % 60);
    }
    assert_int_equal(dispatch_lanes_tenants(l, DISPATCH_LANE_NEW), TENANTS);
    assert_ptr_equal(dispatch_lanes_oldest(l, DISPATCH_LANE_NEW, older), &items[1]);
    push(l, DISPATCH_LANE_NEW, "k8s/late", 0);
    assert_ptr_equal(dispatch_lanes_oldest(l, DISPATCH_LANE_NEW, older), &items[0]);
    size_t popped = 0;
    while (dispatch_lanes_pop(l, NULL, NULL) != NULL)
        popped++;
    assert_int_equal(popped, TENANTS + 1);
    assert_int_equal(dispatch_lanes_tenants(l, DISPATCH_LANE_NEW), 0);
    assert_null(dispatch_lanes_oldest(l, DISPATCH_LANE_NEW, older));
    dispatch_lanes_destroy(&l);
}

/* A job handed back goes first in its tenant's queue with a new time: the tenant's longest wait
 * is still its oldest job's, behind it. */
static void test_oldest_behind_handed_back(void **state)
{
    (void)state;
    struct dispatch_lanes *l = dispatch_lanes_new();
    push(l, DISPATCH_LANE_NEW, "cf/a", 5);
    push(l, DISPATCH_LANE_NEW, "cf/a", 6);
    push(l, DISPATCH_LANE_NEW, "cf/b", 7);
    assert_int_equal(dispatch_lanes_push(l, DISPATCH_LANE_NEW, "cf/a", 1, &items[9], true), 0);
    assert_int_equal(dispatch_lanes_push(l, DISPATCH_LANE_NEW, "cf/a", 1, &items[10], true), 0);
    assert_ptr_equal(dispatch_lanes_oldest(l, DISPATCH_LANE_NEW, older), &items[5]);
    /* The handed-back jobs leave first (a's round, then b's, then a's again). */
    assert_ptr_equal(dispatch_lanes_pop(l, NULL, NULL), &items[10]);
    assert_ptr_equal(dispatch_lanes_oldest(l, DISPATCH_LANE_NEW, older), &items[5]);
    assert_ptr_equal(dispatch_lanes_pop(l, NULL, NULL), &items[7]);
    assert_ptr_equal(dispatch_lanes_pop(l, NULL, NULL), &items[9]);
    assert_ptr_equal(dispatch_lanes_oldest(l, DISPATCH_LANE_NEW, older), &items[5]);
    assert_ptr_equal(dispatch_lanes_pop(l, NULL, NULL), &items[5]);
    assert_ptr_equal(dispatch_lanes_oldest(l, DISPATCH_LANE_NEW, older), &items[6]);
    assert_ptr_equal(dispatch_lanes_pop(l, NULL, NULL), &items[6]);
    assert_null(dispatch_lanes_oldest(l, DISPATCH_LANE_NEW, older));
    dispatch_lanes_destroy(&l);
}

/* Running jobs by tenant, as a dispatcher counts them. */
struct load_table {
    const char *tenant[4];
    unsigned running[4];
};

static unsigned running_of(void *ctx, const char *tenant)
{
    const struct load_table *t = ctx;
    for (int i = 0; i < 4 && t->tenant[i] != NULL; i++)
        if (strcmp(t->tenant[i], tenant) == 0)
            return t->running[i];
    return 0;
}

/* With the running jobs known: a tenant holding none goes before one holding the slots, whatever
 * the round; weights scale what each may hold; equals keep the rounds. */
static void test_prefers_fewest_running(void **state)
{
    (void)state;
    struct dispatch_lanes *l = dispatch_lanes_new();
    struct load_table t = {{"cf/a", "cf/b", "cf/c"}, {16, 0, 0}};
    const struct dispatch_load load = {running_of, &t};
    push_range(l, DISPATCH_LANE_NEW, "cf/a", 0, 4);
    push_range(l, DISPATCH_LANE_NEW, "cf/b", 10, 13);
    /* a holds 16, b none: b's three first, in order, though a's round came first. */
    for (int i = 0; i < 3; i++)
        assert_ptr_equal(dispatch_lanes_pop(l, NULL, &load), &items[10 + i]);
    assert_int_equal(dispatch_lanes_tenants(l, DISPATCH_LANE_NEW), 1);
    assert_ptr_equal(dispatch_lanes_pop(l, NULL, &load), &items[0]);
    /* c of weight 4 holding 3 against a holding 1 of weight 1: 3/4 < 1/1, c first. */
    t.running[0] = 1;
    t.running[2] = 3;
    assert_int_equal(dispatch_lanes_push(l, DISPATCH_LANE_NEW, "cf/c", 4, &items[20], false), 0);
    assert_ptr_equal(dispatch_lanes_pop(l, NULL, &load), &items[20]);
    /* Equal holdings: the rounds as without load. */
    t.running[0] = 0;
    assert_ptr_equal(dispatch_lanes_pop(l, NULL, &load), &items[1]);
    while (dispatch_lanes_pop(l, NULL, &load) != NULL)
        ;
    assert_int_equal(dispatch_lanes_tenants(l, DISPATCH_LANE_NEW), 0);
    dispatch_lanes_destroy(&l);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_empty), cmocka_unit_test(test_one_lane_in_order),
               cmocka_unit_test(test_burst_waits_one_turn), cmocka_unit_test(test_turns),
               cmocka_unit_test(test_tenants_take_turns), cmocka_unit_test(test_weights),
               cmocka_unit_test(test_many_tenants),
               cmocka_unit_test(test_oldest_behind_handed_back),
               cmocka_unit_test(test_prefers_fewest_running), cmocka_unit_test(test_bound))
