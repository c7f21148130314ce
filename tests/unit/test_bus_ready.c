/* Unit tests for the READY credit (bus/bus.c): what a gateway may send a worker once the jobs
 * still on their way are taken off its announced free slots, and the frames a READY carries
 * (a real ZeroMQ pair over inproc). */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdlib.h>
#include <string.h>

#include "bus.h"

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

static void test_ready_carries_the_received_count(void **state)
{
    (void)state;
    osbq_bus_init();
    zsock_t *gateway = zsock_new_router("inproc://ready-test");
    zsock_t *worker = zsock_new_dealer(">inproc://ready-test");
    assert_non_null(gateway);
    assert_non_null(worker);
    const struct osbq_bus_ready ready = {.free_slots = 12, .received = 1234567890123ULL};
    assert_int_equal(osbq_bus_send_ready(worker, "w-1", &ready), 0);
    zmsg_t *msg = zmsg_recv(gateway);
    assert_non_null(msg);
    assert_int_equal(zmsg_size(msg), 5); /* identity, READY, id, free, received */
    zframe_t *identity = zmsg_pop(msg);
    zframe_destroy(&identity);
    const char *expected[] = {OSBQ_BUS_READY, "w-1", "12", "1234567890123"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        char *frame = zmsg_popstr(msg);
        assert_string_equal(frame, expected[i]);
        free(frame);
    }
    zmsg_destroy(&msg);
    zsock_destroy(&worker);
    zsock_destroy(&gateway);
}

/* A READY with a due time carries it as a fifth frame, after the frames an older gateway
 * reads (it pops those and ignores the rest). */
static void test_ready_carries_a_due_time_last(void **state)
{
    (void)state;
    osbq_bus_init();
    zsock_t *gateway = zsock_new_router("inproc://ready-due-test");
    zsock_t *worker = zsock_new_dealer(">inproc://ready-due-test");
    assert_non_null(gateway);
    assert_non_null(worker);
    const struct osbq_bus_ready ready = {.free_slots = 3, .received = 7, .due_ms = 1795000000123LL};
    assert_int_equal(osbq_bus_send_ready(worker, "w-2", &ready), 0);
    zmsg_t *msg = zmsg_recv(gateway);
    assert_non_null(msg);
    assert_int_equal(zmsg_size(msg), 6); /* identity, READY, id, free, received, due */
    zframe_t *identity = zmsg_pop(msg);
    zframe_destroy(&identity);
    const char *expected[] = {OSBQ_BUS_READY, "w-2", "3", "7", "1795000000123"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        char *frame = zmsg_popstr(msg);
        assert_string_equal(frame, expected[i]);
        if (i == 4)
            assert_true(osbq_bus_ready_due(frame) == 1795000000123LL);
        free(frame);
    }
    zmsg_destroy(&msg);
    zsock_destroy(&worker);
    zsock_destroy(&gateway);
}

/* Ended operations go in a sixth frame, after a due frame ("0" without a due time). */
static void test_ready_carries_ended_operations_last(void **state)
{
    (void)state;
    osbq_bus_init();
    zsock_t *gateway = zsock_new_router("inproc://ready-ended-test");
    zsock_t *worker = zsock_new_dealer(">inproc://ready-ended-test");
    assert_non_null(gateway);
    assert_non_null(worker);
    const struct osbq_bus_ready ready = {.free_slots = 1, .received = 2, .ended = "op-1 op-2"};
    assert_int_equal(osbq_bus_send_ready(worker, "w-3", &ready), 0);
    zmsg_t *msg = zmsg_recv(gateway);
    assert_non_null(msg);
    assert_int_equal(zmsg_size(msg), 7);
    zframe_t *identity = zmsg_pop(msg);
    zframe_destroy(&identity);
    const char *expected[] = {OSBQ_BUS_READY, "w-3", "1", "2", "0", "op-1 op-2"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        char *frame = zmsg_popstr(msg);
        assert_string_equal(frame, expected[i]);
        free(frame);
    }
    zmsg_destroy(&msg);
    zsock_destroy(&worker);
    zsock_destroy(&gateway);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credit_takes_off_jobs_on_their_way),
        cmocka_unit_test(test_ready_carries_the_received_count),
        cmocka_unit_test(test_ready_carries_a_due_time_last),
        cmocka_unit_test(test_ready_due_parse),
        cmocka_unit_test(test_ready_carries_ended_operations_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
