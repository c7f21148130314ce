/* Unit tests of the dispatcher's hand-overs (gateway/dispatch.c, docs/decisions/0042-handover.md)
 * over real ZeroMQ sockets (inproc): the dispatcher's thread on a ROUTER, fake workers on DEALERs
 * that announce themselves with READY. A slot is taken for a hand-over only from a worker whose
 * READY said a hand-over lease, only while it has one free and no job waits in a lane; a taken
 * slot is no longer free until given back; a handed job reaches its worker with its lease end
 * and tenant. A synchronous request that found no slot waits for one in its lane and is told how
 * its wait ended, once (docs/decisions/0045). Every wait for the dispatcher's thread is bounded
 * (STATS_WAIT_MS). */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "clock.h"
#include "dispatch.h"
#include "store.h"
#include "test_main.h"

/* How long the tests wait for the dispatcher's thread to handle a READY or a job (it turns at
 * least every 100 ms), and for a fake worker to receive a job. */
#define STATS_WAIT_MS 2000

/* A READY's hand-over lease (a worker's OSBQ_LEASE_MS). */
#define LEASE_MS 15000

/* A handed job's lease end, epoch ms. */

/* How many times a worker's one slot is handed over and its job sent while another thread keeps
 * trying to take it. While a hand-over's slot was given back and counted sent in two steps,
 * about 50 of its tries a round found the slot free in between. */
#define RACE_ROUNDS 100

static const char JOB[] = "encoded job bytes";

/* A dispatcher on a ROUTER bound to endpoint (inproc). */
static struct dispatch *start_dispatcher(const char *endpoint)
{
    osbq_bus_init();
    char bind[64];
    (void)snprintf(bind, sizeof bind, "@%s", endpoint);
    zsock_t *router = zsock_new_router(bind);
    assert_non_null(router);
    struct osbq_error err = {0};
    struct dispatch *d = dispatch_start(&router, 16, NULL, &err);
    assert_non_null(d);
    assert_null(router);
    return d;
}

/* A fake worker's DEALER with the routing id name, connected to endpoint, waiting up to
 * STATS_WAIT_MS for a message. */
static zsock_t *connect_worker(const char *endpoint, const char *name)
{
    zsock_t *dealer = zsock_new(ZMQ_DEALER);
    assert_non_null(dealer);
    zsock_set_identity(dealer, name);
    zsock_set_rcvtimeo(dealer, STATS_WAIT_MS);
    assert_int_equal(zsock_connect(dealer, "%s", endpoint), 0);
    return dealer;
}

static void send_ready(zsock_t *dealer, const char *worker_id, unsigned free_slots,
                       uint64_t received, unsigned handover_lease_ms)
{
    const struct osbq_bus_ready ready = {
        .free_slots = free_slots, .received = received, .handover_lease_ms = handover_lease_ms};
    assert_int_equal(osbq_bus_send_ready(dealer, worker_id, &ready), 0);
}

/* Waits, up to STATS_WAIT_MS, until the dispatcher's thread publishes these figures. */
static void wait_stats(struct dispatch *d, size_t workers, size_t free_slots, size_t queued)
{
    struct dispatch_stats s = {0};
    for (int waited = 0; waited <= STATS_WAIT_MS; waited++) {
        dispatch_get_stats(d, &s);
        if (s.workers == workers && s.free_slots == free_slots && s.queued == queued)
            return;
        osbq_clock_sleep_ms(1);
    }
    fail_msg("dispatcher stats: %zu workers, %zu free slots, %zu queued; waited for %zu, %zu, %zu",
             s.workers, s.free_slots, s.queued, workers, free_slots, queued);
}

/* Receives a JOB on a fake worker's DEALER: plain, or handed with until_ms and tenant. Its job
 * frame is JOB's bytes. */
static void expect_job(zsock_t *dealer, bool handed, int64_t until_ms, const char *tenant)
{
    struct osbq_bus_msg m;
    assert_int_equal(osbq_bus_recv(dealer, OSBQ_BUS_AT_WORKER, &m), 0);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_JOB);
    assert_int_equal(zframe_size(m.job), sizeof JOB);
    assert_memory_equal(zframe_data(m.job), JOB, sizeof JOB);
    assert_int_equal(m.handed.present, handed);
    assert_int_equal(m.frames, handed ? 4 : 2);
    if (handed) {
        assert_true(m.handed.until_ms == until_ms);
        assert_string_equal(m.handed.tenant, tenant);
    }
    osbq_bus_msg_clear(&m);
}

/* A dispatcher and one fake worker, whose routing id is its worker id, that announced itself. */
struct one_worker {
    struct dispatch *d;
    zsock_t *worker;
};

/* Starts a dispatcher on endpoint and a worker that says free_slots and lease_ms (0: none), once
 * the dispatcher knows it. */
static struct one_worker one_worker_start(const char *endpoint, const char *worker_id,
                                          unsigned free_slots, unsigned lease_ms)
{
    struct one_worker w = {start_dispatcher(endpoint), NULL};
    w.worker = connect_worker(endpoint, worker_id);
    send_ready(w.worker, worker_id, free_slots, 0, lease_ms);
    wait_stats(w.d, 1, free_slots, 0);
    return w;
}

static void one_worker_stop(struct one_worker *w)
{
    dispatch_stop(&w->d);
    assert_null(w->d);
    zsock_destroy(&w->worker);
}

/* Sends a job through the hand-over *hp (taken: set to NULL) to w's worker, which had one slot:
 * it receives the job handed, and the dispatcher counts the slot spent. */
static void hand_job(struct one_worker *w, struct dispatch_handover **hp)
{
    const struct dispatch_owner owner = {"t1", 1, NULL};
    int64_t until_ms = dispatch_handover_until(*hp);
    assert_int_equal(
        dispatch_submit_handed(w->d, hp, "op-handed", DISPATCH_LANE_NEW, &owner, JOB, sizeof JOB),
        0);
    assert_null(*hp);
    expect_job(w->worker, true, until_ms, "t1");
    wait_stats(w->d, 1, 0, 0);
}

/* A worker that said a hand-over lease and has one free slot: the slot is taken, naming the
 * worker and its lease; taken, it is not free for a second hand-over; given back, it is. */
static void test_take_cancel_take(void **state)
{
    (void)state;
    struct one_worker w = one_worker_start("inproc://dispatch-handover-take", "w-1", 1, LEASE_MS);

    int64_t before = osbq_store_now_ms();
    struct dispatch_handover *h = dispatch_handover_take(w.d);
    int64_t after = osbq_store_now_ms();
    assert_non_null(h);
    assert_string_equal(dispatch_handover_worker(h), "w-1");
    /* The lease is the one its worker's READY said, from when the slot was taken. */
    assert_in_range(dispatch_handover_until(h), before + LEASE_MS, after + LEASE_MS);
    assert_null(dispatch_handover_take(w.d));
    /* Nor does osbq_worker_free_slots count it. */
    wait_stats(w.d, 1, 0, 0);

    dispatch_handover_cancel(&h);
    assert_null(h);
    wait_stats(w.d, 1, 1, 0);
    dispatch_handover_cancel(&h);
    dispatch_handover_cancel(NULL);
    h = dispatch_handover_take(w.d);
    assert_non_null(h);
    assert_string_equal(dispatch_handover_worker(h), "w-1");
    dispatch_handover_cancel(&h);

    one_worker_stop(&w);
}

/* A handed job goes straight to its worker with its lease end and tenant, and its slot is spent:
 * no other hand-over finds it free. */
static void test_submit_handed_reaches_its_worker(void **state)
{
    (void)state;
    struct one_worker w = one_worker_start("inproc://dispatch-handover-submit", "w-1", 1, LEASE_MS);

    struct dispatch_handover *h = dispatch_handover_take(w.d);
    assert_non_null(h);
    hand_job(&w, &h);
    assert_null(dispatch_handover_take(w.d));

    one_worker_stop(&w);
}

/* A worker whose READY says no hand-over lease (an older one) is handed nothing, however many
 * slots it has free, and still gets plain jobs. */
static void test_worker_without_lease_gets_plain_jobs_only(void **state)
{
    (void)state;
    struct one_worker w = one_worker_start("inproc://dispatch-handover-older", "w-old", 2, 0);

    assert_null(dispatch_handover_take(w.d));
    const struct dispatch_owner owner = {"t1", 1, NULL};
    assert_int_equal(dispatch_submit(w.d, "op-plain", DISPATCH_LANE_NEW, &owner, JOB, sizeof JOB),
                     0);
    expect_job(w.worker, false, 0, NULL);
    wait_stats(w.d, 1, 1, 0);
    assert_null(dispatch_handover_take(w.d));

    one_worker_stop(&w);
}

/* A job waiting in a lane gets the next free slot before any hand-over: a slot given back while
 * a plain job waits is not taken for a new operation (whether or not the dispatcher's thread has
 * sent the waiting job to it yet), and the job reaches the worker. Once the worker has room
 * again and nothing waits, a hand-over takes it. */
static void test_waiting_job_goes_before_a_hand_over(void **state)
{
    (void)state;
    struct one_worker w =
        one_worker_start("inproc://dispatch-handover-waiting", "w-1", 1, LEASE_MS);

    /* The only slot taken: the plain job finds no room and waits in its lane. */
    struct dispatch_handover *h = dispatch_handover_take(w.d);
    assert_non_null(h);
    const struct dispatch_owner owner = {"t1", 1, NULL};
    assert_int_equal(dispatch_submit(w.d, "op-waiting", DISPATCH_LANE_NEW, &owner, JOB, sizeof JOB),
                     0);
    wait_stats(w.d, 1, 0, 1); /* the slot is the hand-over's */

    dispatch_handover_cancel(&h);
    assert_null(dispatch_handover_take(w.d));
    expect_job(w.worker, false, 0, NULL);
    wait_stats(w.d, 1, 0, 0);
    assert_null(dispatch_handover_take(w.d));

    send_ready(w.worker, "w-1", 1, 1, LEASE_MS);
    wait_stats(w.d, 1, 1, 0);
    h = dispatch_handover_take(w.d);
    assert_non_null(h);
    dispatch_handover_cancel(&h);

    one_worker_stop(&w);
}

/* With two workers, the hand-over goes to the one that said a lease, even with less room. */
static void test_only_workers_with_a_lease_are_handed_jobs(void **state)
{
    (void)state;
    const char *endpoint = "inproc://dispatch-handover-mixed";
    struct dispatch *d = start_dispatcher(endpoint);
    zsock_t *older = connect_worker(endpoint, "w-old");
    zsock_t *newer = connect_worker(endpoint, "w-new");
    send_ready(older, "w-old", 4, 0, 0);
    send_ready(newer, "w-new", 1, 0, LEASE_MS);
    wait_stats(d, 2, 5, 0);

    struct dispatch_handover *h = dispatch_handover_take(d);
    assert_non_null(h);
    assert_string_equal(dispatch_handover_worker(h), "w-new");
    assert_null(dispatch_handover_take(d));
    dispatch_handover_cancel(&h);

    dispatch_stop(&d);
    zsock_destroy(&newer);
    zsock_destroy(&older);
}

/* The thread that tries to take a hand-over while the slot is spent, and what it got. */
struct taker {
    struct dispatch *d;
    atomic_bool spent;             /* the slot is taken, or its job on its way: not free */
    atomic_bool stop;              /* the thread returns */
    atomic_uint taken_while_spent; /* hand-overs it got while spent: each a slot given twice */
};

static void *take_while_spent(void *arg)
{
    struct taker *t = arg;
    while (!atomic_load(&t->stop)) {
        /* Idle while the slot is free, so that the test's own take finds it. */
        if (!atomic_load(&t->spent)) {
            sched_yield();
            continue;
        }
        struct dispatch_handover *h = dispatch_handover_take(t->d);
        if (h != NULL) {
            if (atomic_load(&t->spent))
                atomic_fetch_add(&t->taken_while_spent, 1);
            dispatch_handover_cancel(&h);
        }
    }
    return NULL;
}

/* Takes the hand-over of a slot that is free, or about to be (the other thread may still hold
 * it for an instant). */
static struct dispatch_handover *take_free_slot(struct dispatch *d)
{
    struct dispatch_handover *h = dispatch_handover_take(d);
    for (int waited = 0; h == NULL && waited < STATS_WAIT_MS; waited++) {
        osbq_clock_sleep_ms(1);
        h = dispatch_handover_take(d);
    }
    assert_non_null(h);
    return h;
}

/* A slot whose handed job is on its way to the worker is never free for another hand-over, not
 * even while the dispatcher's thread sends the job (another thread takes hand-overs meanwhile,
 * as a gateway's HTTP threads do). */
static void test_slot_of_a_job_on_its_way_is_not_taken(void **state)
{
    (void)state;
    struct one_worker w = one_worker_start("inproc://dispatch-handover-race", "w-1", 1, LEASE_MS);
    /* Not on this stack: a failed assertion leaves the thread running. */
    struct taker *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->d = w.d;
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, take_while_spent, t), 0);
    for (uint64_t round = 1; round <= RACE_ROUNDS; round++) {
        struct dispatch_handover *h = take_free_slot(w.d);
        atomic_store(&t->spent, true);
        hand_job(&w, &h);
        atomic_store(&t->spent, false);
        send_ready(w.worker, "w-1", 1, round, LEASE_MS);
        wait_stats(w.d, 1, 1, 0);
    }
    atomic_store(&t->stop, true);
    pthread_join(thread, NULL);
    unsigned taken_while_spent = atomic_load(&t->taken_while_spent);
    free(t);
    assert_int_equal(taken_while_spent, 0);

    one_worker_stop(&w);
}

/* How a request's wait for a slot ended, as its dispatch_slot_fn was told (on the dispatcher's
 * thread). */
struct slot_wait {
    atomic_int calls;                       /* times told (must end at 1) */
    _Atomic(enum dispatch_slot_end) end;    /* how */
    struct dispatch_handover *_Atomic slot; /* the slot taken, or NULL */
};

static void slot_wait_ended(void *ctx, struct dispatch_handover *slot, enum dispatch_slot_end end)
{
    struct slot_wait *w = ctx;
    atomic_store(&w->slot, slot);
    atomic_store(&w->end, end);
    atomic_fetch_add(&w->calls, 1);
}

/* Waits, up to STATS_WAIT_MS, until w's wait ended; fails when it did not, or was told twice. */
static void expect_slot_wait_end(struct slot_wait *w, enum dispatch_slot_end end)
{
    for (int waited = 0; waited <= STATS_WAIT_MS && atomic_load(&w->calls) == 0; waited++)
        osbq_clock_sleep_ms(1);
    assert_int_equal(atomic_load(&w->calls), 1);
    assert_int_equal(atomic_load(&w->end), end);
    assert_true((atomic_load(&w->slot) != NULL) == (end == DISPATCH_SLOT_TAKEN));
}

/* Queues a wait for a slot of tenant t1, ending at the latest in deadline_in_ms. */
static void wait_slot(struct dispatch *d, const char *operation_id, struct slot_wait *w,
                      int64_t deadline_in_ms)
{
    const struct dispatch_owner owner = {"t1", 1, NULL};
    assert_int_equal(dispatch_wait_slot(d, operation_id, DISPATCH_LANE_WAITING, &owner,
                                        osbq_clock_ms() + deadline_in_ms, slot_wait_ended, w),
                     0);
}

/* A request that waits for a slot while every slot is taken waits in its lane behind the job
 * queued before it, of the same lane and tenant: the first slot freed goes to that job, the next
 * is taken for the request, which then holds it (not free for a hand-over, nor for a plain job)
 * until it gives it back. */
static void test_slot_wait_takes_a_slot_in_its_turn(void **state)
{
    (void)state;
    struct one_worker w = one_worker_start("inproc://dispatch-slot-turn", "w-1", 0, LEASE_MS);
    const struct dispatch_owner owner = {"t1", 1, NULL};
    assert_int_equal(
        dispatch_submit(w.d, "op-first", DISPATCH_LANE_WAITING, &owner, JOB, sizeof JOB), 0);
    struct slot_wait sw = {0};
    wait_slot(w.d, "op-second", &sw, 60000);
    wait_stats(w.d, 1, 0, 2);
    assert_null(dispatch_handover_take(w.d)); /* they wait: new operations do not go first */

    send_ready(w.worker, "w-1", 1, 0, LEASE_MS);
    expect_job(w.worker, false, 0, NULL);
    wait_stats(w.d, 1, 0, 1);
    assert_int_equal(atomic_load(&sw.calls), 0);

    send_ready(w.worker, "w-1", 1, 1, LEASE_MS);
    expect_slot_wait_end(&sw, DISPATCH_SLOT_TAKEN);
    struct dispatch_handover *h = atomic_load(&sw.slot);
    assert_string_equal(dispatch_handover_worker(h), "w-1");
    wait_stats(w.d, 1, 0, 0);
    assert_null(dispatch_handover_take(w.d));
    dispatch_handover_cancel(&h);
    wait_stats(w.d, 1, 1, 0);

    one_worker_stop(&w);
}

/* A wait for a slot ends at its deadline without one (the request begins plain), neither before
 * nor long after; the job of its operation, begun plain, is not taken for a second copy of it
 * and gets the slot freed later. */
static void test_slot_wait_ends_at_its_deadline(void **state)
{
    (void)state;
    struct one_worker w = one_worker_start("inproc://dispatch-slot-deadline", "w-1", 0, LEASE_MS);
    struct slot_wait sw = {0};
    int64_t started = osbq_clock_ms();
    wait_slot(w.d, "op-late", &sw, 300);
    osbq_clock_sleep_ms(150);
    assert_int_equal(atomic_load(&sw.calls), 0);
    expect_slot_wait_end(&sw, DISPATCH_SLOT_NONE);
    assert_true(osbq_clock_ms() - started >= 300);
    /* Begun plain, its job waits in the lane beside its ended wait, and reaches the worker. */
    const struct dispatch_owner owner = {"t1", 1, NULL};
    assert_int_equal(
        dispatch_submit(w.d, "op-late", DISPATCH_LANE_WAITING, &owner, JOB, sizeof JOB), 0);
    wait_stats(w.d, 1, 0, 2);

    send_ready(w.worker, "w-1", 1, 0, LEASE_MS);
    expect_job(w.worker, false, 0, NULL);
    wait_stats(w.d, 1, 0, 0);
    assert_int_equal(atomic_load(&sw.calls), 1);

    one_worker_stop(&w);
}

/* A request whose turn comes while only a worker that takes no handed jobs has room gets no slot:
 * it begins plain, and its job then goes to that worker. */
static void test_slot_wait_without_a_lease_ends_without_a_slot(void **state)
{
    (void)state;
    struct one_worker w = one_worker_start("inproc://dispatch-slot-older", "w-old", 1, 0);
    struct slot_wait sw = {0};
    wait_slot(w.d, "op-older", &sw, 60000);
    expect_slot_wait_end(&sw, DISPATCH_SLOT_NONE);
    wait_stats(w.d, 1, 1, 0);

    one_worker_stop(&w);
}

/* A stopping gateway ends every wait for a slot at once (nothing was begun), refuses new ones,
 * and a dispatcher stopped without draining still tells the waits it holds. */
static void test_slot_waits_end_when_the_gateway_stops(void **state)
{
    (void)state;
    struct one_worker w = one_worker_start("inproc://dispatch-slot-drain", "w-1", 0, LEASE_MS);
    struct slot_wait sw[2] = {0};
    wait_slot(w.d, "op-a", &sw[0], 60000);
    wait_slot(w.d, "op-b", &sw[1], 60000);
    dispatch_drain_slots(w.d);
    expect_slot_wait_end(&sw[0], DISPATCH_SLOT_STOPPING);
    expect_slot_wait_end(&sw[1], DISPATCH_SLOT_STOPPING);
    struct slot_wait refused = {0};
    const struct dispatch_owner owner = {"t1", 1, NULL};
    assert_int_equal(dispatch_wait_slot(w.d, "op-c", DISPATCH_LANE_WAITING, &owner,
                                        osbq_clock_ms() + 60000, slot_wait_ended, &refused),
                     -1);
    one_worker_stop(&w);
    assert_int_equal(atomic_load(&refused.calls), 0);

    struct one_worker undrained =
        one_worker_start("inproc://dispatch-slot-undrained", "w-1", 0, LEASE_MS);
    struct slot_wait held = {0};
    wait_slot(undrained.d, "op-held", &held, 60000);
    wait_stats(undrained.d, 1, 0, 1);
    one_worker_stop(&undrained);
    expect_slot_wait_end(&held, DISPATCH_SLOT_STOPPING);
}

/* No dispatcher, no hand-over. */ /* No dispatcher, no hand-over. */
static void test_take_without_dispatcher(void **state)
{
    (void)state;
    assert_null(dispatch_handover_take(NULL));
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_take_cancel_take),
               cmocka_unit_test(test_submit_handed_reaches_its_worker),
               cmocka_unit_test(test_worker_without_lease_gets_plain_jobs_only),
               cmocka_unit_test(test_waiting_job_goes_before_a_hand_over),
               cmocka_unit_test(test_only_workers_with_a_lease_are_handed_jobs),
               cmocka_unit_test(test_slot_of_a_job_on_its_way_is_not_taken),
               cmocka_unit_test(test_take_without_dispatcher),
               cmocka_unit_test(test_slot_wait_takes_a_slot_in_its_turn),
               cmocka_unit_test(test_slot_wait_ends_at_its_deadline),
               cmocka_unit_test(test_slot_wait_without_a_lease_ends_without_a_slot),
               cmocka_unit_test(test_slot_waits_end_when_the_gateway_stops))
