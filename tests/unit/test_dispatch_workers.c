/* Unit tests of the dispatcher's table of workers (gateway/dispatch_workers.c): a job goes to
 * the worker with the most slots available, and among equals to the one sent a job longest
 * ago, so workers take turns; slots taken for hand-overs are not available; a handed job goes
 * only to a worker that said a hand-over lease; a READY's free slots lose the jobs still on
 * their way to it; a REJECT leaves it none; a worker silent too long is found. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "assert_destroy.h"
#include "dispatch_workers.h"
#include "test_main.h"

/* A worker heard from at now_ms, with free_slots and a hand-over lease (0: none), that counted
 * no JOB received (an older worker's READY). */
static struct dispatch_worker *hear(struct dispatch_workers *t, const char *name,
                                    unsigned free_slots, unsigned lease_ms, int64_t now_ms)
{
    zframe_t *identity = zframe_new(name, strlen(name));
    struct dispatch_worker *w = dispatch_workers_find(t, identity);
    if (w == NULL) {
        char *id = strdup(name);
        w = dispatch_workers_add(t, &identity, &id);
        assert_non_null(w);
        assert_null(identity);
        assert_null(id);
    }
    zframe_destroy(&identity);
    const struct osbq_bus_ready_received ready = {.free_slots = free_slots,
                                                  .handover_lease_ms = lease_ms};
    dispatch_worker_heard(w, &ready, now_ms);
    return w;
}

static void test_most_room_then_longest_ago(void **state)
{
    (void)state;
    struct dispatch_workers *t = dispatch_workers_new();
    assert_non_null(t);
    assert_null(dispatch_workers_roomiest(t, false));
    struct dispatch_worker *a = hear(t, "a", 2, 0, 1);
    struct dispatch_worker *b = hear(t, "b", 3, 0, 1);
    assert_ptr_equal(dispatch_workers_roomiest(t, false), b);
    dispatch_workers_count_sent(t, b);
    assert_int_equal(b->free, 2);
    assert_int_equal(b->sent, 1);
    /* Equal room: a was never sent a job, so a goes first, then b, then a again. */
    assert_ptr_equal(dispatch_workers_roomiest(t, false), a);
    dispatch_workers_count_sent(t, a);
    dispatch_workers_count_sent(t, b);
    assert_int_equal(a->free, 1);
    assert_int_equal(b->free, 1);
    assert_ptr_equal(dispatch_workers_roomiest(t, false), a);
    dispatch_workers_count_sent(t, a);
    dispatch_workers_count_sent(t, b);
    /* No room left anywhere. */
    assert_null(dispatch_workers_roomiest(t, false));
    /* Counting more sends than slots keeps free at 0. */
    dispatch_workers_count_sent(t, b);
    assert_int_equal(b->free, 0);
    assert_int_equal(b->sent, 4);
    assert_destroy_twice(dispatch_workers_destroy, t);
}

/* Slots taken for hand-overs are not available to plain jobs; handed jobs go only to workers
 * that said a hand-over lease. */
static void test_reserved_and_handover_only(void **state)
{
    (void)state;
    struct dispatch_workers *t = dispatch_workers_new();
    struct dispatch_worker *old = hear(t, "old", 5, 0, 1);
    struct dispatch_worker *new = hear(t, "new", 2, 30000, 1);
    assert_ptr_equal(dispatch_workers_roomiest(t, false), old);
    assert_ptr_equal(dispatch_workers_roomiest(t, true), new);
    new->reserved = 2;
    assert_int_equal(dispatch_worker_available(new), 0);
    assert_null(dispatch_workers_roomiest(t, true));
    /* More reserved than free (a READY announced fewer since): none available, not a wrap. */
    new->reserved = 3;
    assert_int_equal(dispatch_worker_available(new), 0);
    size_t workers = 0, available = 0;
    dispatch_workers_totals(t, &workers, &available);
    assert_int_equal(workers, 2);
    assert_int_equal(available, 5);
    dispatch_workers_destroy(&t);
}

/* A READY counts the jobs received: those sent since are on their way and take slots. */
static void test_ready_credit_and_reject(void **state)
{
    (void)state;
    struct dispatch_workers *t = dispatch_workers_new();
    struct dispatch_worker *w = hear(t, "w", 4, 0, 1);
    for (int i = 0; i < 4; i++)
        dispatch_workers_count_sent(t, w);
    assert_int_equal(w->free, 0);
    /* It received 1 of the 4 and has 3 slots free: 3 jobs are on their way, 0 left. */
    struct osbq_bus_ready_received ready = {
        .free_slots = 3, .counts_received = true, .received = 1};
    dispatch_worker_heard(w, &ready, 10);
    assert_int_equal(w->free, 0);
    assert_int_equal(w->last_seen, 10);
    /* It received all 4 and has 6 slots free (it was given more). */
    ready.free_slots = 6;
    ready.received = 4;
    dispatch_worker_heard(w, &ready, 20);
    assert_int_equal(w->free, 6);
    /* A REJECT: no slot after all. */
    dispatch_worker_full(w, 30);
    assert_int_equal(w->free, 0);
    assert_int_equal(w->last_seen, 30);
    assert_null(dispatch_workers_roomiest(t, false));
    dispatch_workers_destroy(&t);
}

/* A silent worker is found, taken out and freed; the others stay. */
static void test_silent_and_unlink(void **state)
{
    (void)state;
    struct dispatch_workers *t = dispatch_workers_new();
    struct dispatch_worker *early = hear(t, "early", 1, 0, 100);
    struct dispatch_worker *late = hear(t, "late", 1, 0, 900);
    assert_null(dispatch_workers_silent(t, 100));
    struct dispatch_worker *silent = dispatch_workers_silent(t, 500);
    assert_ptr_equal(silent, early);
    assert_true(dispatch_workers_unlink(t, silent));
    assert_false(dispatch_workers_unlink(t, silent));
    dispatch_worker_free(&silent);
    assert_null(silent);
    assert_null(dispatch_workers_silent(t, 500));
    zframe_t *identity = zframe_new("late", 4);
    assert_ptr_equal(dispatch_workers_find(t, identity), late);
    zframe_destroy(&identity);
    size_t workers = 0, available = 0;
    dispatch_workers_totals(t, &workers, &available);
    assert_int_equal(workers, 1);
    assert_int_equal(available, 1);
    dispatch_workers_destroy(&t);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_most_room_then_longest_ago),
               cmocka_unit_test(test_reserved_and_handover_only),
               cmocka_unit_test(test_ready_credit_and_reject),
               cmocka_unit_test(test_silent_and_unlink))
