/* Unit tests for the worker's side of the bus (worker/bus_link.c), over real ZeroMQ sockets
 * (inproc): jobs that several gateways send for the same free slots are taken one from each in
 * turn, so no gateway wins every race (docs/reliability.md, several gateways). */
/* cmocka.h uses these without including them, so they come first and in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <string.h>

#include "bus.h"
#include "bus_link.h"
#include "clock.h"
#include "test_main.h"

#define GATEWAYS  2
#define JOBS_EACH 6

/* The endpoints of the jobs taken, in the order taken. */
struct taken {
    char from[GATEWAYS * JOBS_EACH][64];
    size_t count;
};

static void on_job(void *ctx, zsock_t *dealer, const char *endpoint, unsigned origin,
                   const void *job, size_t len, const struct osbq_bus_handed *handed)
{
    (void)dealer;
    (void)origin;
    (void)job;
    (void)len;
    (void)handed;
    struct taken *t = ctx;
    if (t->count < GATEWAYS * JOBS_EACH)
        (void)snprintf(t->from[t->count++], sizeof t->from[0], "%s", endpoint);
}

static void test_gateways_served_in_turn(void **state)
{
    (void)state;
    osbq_bus_init();
    char *endpoints[GATEWAYS] = {"inproc://bus-link-g0", "inproc://bus-link-g1"};
    zsock_t *gateway[GATEWAYS];
    for (int g = 0; g < GATEWAYS; g++) {
        char bind[64];
        (void)snprintf(bind, sizeof bind, "@%s", endpoints[g]);
        gateway[g] = zsock_new_router(bind);
        assert_non_null(gateway[g]);
        zsock_set_rcvtimeo(gateway[g], 5000);
    }
    struct bus_link *link = bus_link_new("w-test", NULL, 0);
    assert_non_null(link);
    bus_link_sync(link, endpoints, GATEWAYS, GATEWAYS * JOBS_EACH);
    assert_int_equal(bus_link_count(link), GATEWAYS);
    /* Each gateway hears the worker's READY, then sends a job for every slot it was offered,
     * all before the worker reads any. */
    for (int g = 0; g < GATEWAYS; g++) {
        zmsg_t *ready = zmsg_recv(gateway[g]);
        assert_non_null(ready);
        zframe_t *identity = zmsg_pop(ready);
        for (int i = 0; i < JOBS_EACH; i++) {
            zmsg_t *job = zmsg_new();
            assert_int_equal(zmsg_append(job, &(zframe_t *){zframe_dup(identity)}), 0);
            assert_int_equal(zmsg_addstr(job, OSBQ_BUS_JOB), 0);
            assert_int_equal(zmsg_addstr(job, "job"), 0);
            assert_int_equal(zmsg_send(&job, gateway[g]), 0);
        }
        zframe_destroy(&identity);
        zmsg_destroy(&ready);
    }
    osbq_clock_sleep_ms(100);
    struct taken taken = {0};
    const struct bus_link_handlers handlers = {.on_job = on_job};
    for (int round = 0; round < 50 && taken.count < GATEWAYS * JOBS_EACH; round++)
        assert_int_equal(bus_link_poll(link, NULL, 0, 100, &handlers, &taken), 0);
    assert_int_equal(taken.count, GATEWAYS * JOBS_EACH);
    /* One from each in turn: the first slots go half to each gateway. */
    for (size_t i = 0; i + 1 < GATEWAYS * JOBS_EACH; i += 2)
        assert_string_not_equal(taken.from[i], taken.from[i + 1]);
    bus_link_destroy(&link);
    for (int g = 0; g < GATEWAYS; g++)
        zsock_destroy(&gateway[g]);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_gateways_served_in_turn))
