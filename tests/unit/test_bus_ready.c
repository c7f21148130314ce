/* Unit tests for the READY credit (bus/bus.c): what a gateway may send a worker once the jobs
 * still on their way are taken off its announced free slots, and the frames a READY carries
 * (a real ZeroMQ pair over inproc), the hand-over lease included. */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "test_main.h"

static void test_credit_takes_off_jobs_on_their_way(void **state)
{
    (void)state;
    /* Nothing on the way: the announcement as it is. */
    assert_int_equal(osbq_bus_ready_credit(16, 0, 0), 16);
    assert_int_equal(osbq_bus_ready_credit(16, 40, 40), 16);
    /* Five sent after the worker counted: five of its slots are spoken for. */
    assert_int_equal(osbq_bus_ready_credit(16, 45, 40), 11);
    /* More on the way than free: nothing until the next READY. */
    assert_int_equal(osbq_bus_ready_credit(4, 50, 40), 0);
    assert_int_equal(osbq_bus_ready_credit(0, 50, 50), 0);
    /* A count from another connection (above what was sent here): nothing on the way. */
    assert_int_equal(osbq_bus_ready_credit(8, 3, 10), 8);
    /* Counts far apart cannot wrap the credit. */
    assert_int_equal(osbq_bus_ready_credit(8, UINT64_MAX, 0), 0);
}

/* Sends ready from worker "id" over a real ZeroMQ pair (inproc endpoint) and checks the frames
 * the gateway receives after the identity: expected, count of them, and no more. */
static void expect_ready(const char *endpoint, const char *id, const struct osbq_bus_ready *ready,
                         const char *const *expected, size_t count)
{
    osbq_bus_init();
    zsock_t *gateway = zsock_new_router(endpoint);
    char connect[64];
    (void)snprintf(connect, sizeof connect, ">%s", endpoint);
    zsock_t *worker = zsock_new_dealer(connect);
    assert_non_null(gateway);
    assert_non_null(worker);
    assert_int_equal(osbq_bus_send_ready(worker, id, ready), 0);
    zmsg_t *msg = zmsg_recv(gateway);
    assert_non_null(msg);
    assert_int_equal(zmsg_size(msg), count + 1);
    zframe_t *identity = zmsg_pop(msg);
    zframe_destroy(&identity);
    for (size_t i = 0; i < count; i++) {
        char *frame = zmsg_popstr(msg);
        assert_string_equal(frame, expected[i]);
        free(frame);
    }
    zmsg_destroy(&msg);
    zsock_destroy(&worker);
    zsock_destroy(&gateway);
}

static void test_ready_carries_the_received_count(void **state)
{
    (void)state;
    const struct osbq_bus_ready ready = {.free_slots = 12, .received = 1234567890123ULL};
    const char *expected[] = {OSBQ_BUS_READY, "w-1", "12", "1234567890123"};
    expect_ready("inproc://ready-test", "w-1", &ready, expected, 4);
}

/* A READY with a due time carries it as a fifth frame, after the frames an older gateway
 * reads (it pops those and ignores the rest). */
static void test_ready_carries_a_due_time_last(void **state)
{
    (void)state;
    const struct osbq_bus_ready ready = {.free_slots = 3, .received = 7, .due_ms = 1795000000123LL};
    const char *expected[] = {OSBQ_BUS_READY, "w-2", "3", "7", "1795000000123"};
    expect_ready("inproc://ready-due-test", "w-2", &ready, expected, 5);
    assert_true(osbq_bus_ready_due(expected[4]) == 1795000000123LL);
}

/* Ended operations go in a sixth frame, after a due frame ("0" without a due time). */
static void test_ready_carries_ended_operations_last(void **state)
{
    (void)state;
    const struct osbq_bus_ready ready = {.free_slots = 1, .received = 2, .ended = "op-1 op-2"};
    const char *expected[] = {OSBQ_BUS_READY, "w-3", "1", "2", "0", "op-1 op-2"};
    expect_ready("inproc://ready-ended-test", "w-3", &ready, expected, 6);
}

/* A hand-over lease goes in a seventh frame, after a due frame ("0" without a due time) and an
 * ended frame ("" without ended operations). */
static void test_ready_carries_a_hand_over_lease_last(void **state)
{
    (void)state;
    const struct osbq_bus_ready ready = {
        .free_slots = 5, .received = 6, .handover_lease_ms = 15000};
    const char *expected[] = {OSBQ_BUS_READY, "w-4", "5", "6", "0", "", "15000"};
    expect_ready("inproc://ready-lease-test", "w-4", &ready, expected, 7);

    const struct osbq_bus_ready everything = {.free_slots = 5,
                                              .received = 6,
                                              .due_ms = 1795000000123LL,
                                              .ended = "op-1",
                                              .handover_lease_ms = 3600000};
    const char *all[] = {OSBQ_BUS_READY, "w-5", "5", "6", "1795000000123", "op-1", "3600000"};
    expect_ready("inproc://ready-lease-all-test", "w-5", &everything, all, 7);
}

/* What a gateway takes from the due frame: a positive decimal number, else nothing. */
static void test_ready_due_parse(void **state)
{
    (void)state;
    assert_true(osbq_bus_ready_due(NULL) == 0);
    assert_true(osbq_bus_ready_due("") == 0);
    assert_true(osbq_bus_ready_due("0") == 0);
    assert_true(osbq_bus_ready_due("-5") == 0);
    assert_true(osbq_bus_ready_due("12x") == 0);
    assert_true(osbq_bus_ready_due("99999999999999999999999") == 0);
    assert_true(osbq_bus_ready_due("42") == 42);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_credit_takes_off_jobs_on_their_way),
               cmocka_unit_test(test_ready_carries_the_received_count),
               cmocka_unit_test(test_ready_carries_a_due_time_last),
               cmocka_unit_test(test_ready_due_parse),
               cmocka_unit_test(test_ready_carries_ended_operations_last),
               cmocka_unit_test(test_ready_carries_a_hand_over_lease_last))
