/* Unit tests of the dispatcher's view of the workers' connections (gateway/dispatch_monitor.c,
 * with bus/bus.c's source descriptor and gateway/dispatch_workers.c's lookup by it), over real
 * TCP sockets on loopback: a message a gateway receives names the descriptor of its connection,
 * polled after zmq_poll as the dispatcher does; when the worker's socket closes, the monitor
 * names the same descriptor; and of two workers on one descriptor (reused after an end) the one
 * heard from longest ago is the one that ended. */
/* clang-format off: cmocka needs these before cmocka.h, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format on */

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bus.h"
#include "dispatch_monitor.h"
#include "dispatch_workers.h"
#include "test_main.h"

/* Waits up to timeout_ms for sock to have a message. */
static bool wait_readable(void *sock, long timeout_ms)
{
    zmq_pollitem_t item = {.socket = sock, .events = ZMQ_POLLIN};
    return zmq_poll(&item, 1, timeout_ms) == 1;
}

/* A READY from worker, received at gateway after a poll: its descriptor. */
static int ready_fd(zsock_t *gateway, zsock_t *worker, const char *id)
{
    const struct osbq_bus_ready ready = {.free_slots = 1};
    assert_int_equal(osbq_bus_send_ready(worker, id, &ready), 0);
    assert_true(wait_readable(zsock_resolve(gateway), 5000));
    struct osbq_bus_msg m;
    assert_int_equal(osbq_bus_recv(gateway, OSBQ_BUS_AT_GATEWAY, &m), 0);
    assert_int_equal(m.kind, OSBQ_BUS_MSG_READY);
    assert_string_equal(m.ready.worker_id, id);
    int fd = m.source_fd;
    osbq_bus_msg_clear(&m);
    return fd;
}

/* Waits up to 5 s for the monitor to name an ended connection; returns its descriptor. */
static int next_end(struct dispatch_monitor *monitor)
{
    for (int waited = 0; waited < 50; waited++) {
        int fd = dispatch_monitor_next_end(monitor);
        if (fd >= 0)
            return fd;
        (void)wait_readable(dispatch_monitor_socket(monitor), 100);
    }
    return -1;
}

static zsock_t *connect_to(int port)
{
    char endpoint[64];
    (void)snprintf(endpoint, sizeof endpoint, ">tcp://127.0.0.1:%d", port);
    zsock_t *worker = zsock_new_dealer(endpoint);
    assert_non_null(worker);
    zsock_set_linger(worker, 0);
    return worker;
}

static void test_end_names_the_descriptor_of_the_messages(void **state)
{
    (void)state;
    osbq_bus_init();
    zsock_t *gateway = zsock_new(ZMQ_ROUTER);
    assert_non_null(gateway);
    int port = zsock_bind(gateway, "tcp://127.0.0.1:*");
    assert_true(port > 0);
    zsock_set_rcvtimeo(gateway, 0);
    struct dispatch_monitor *monitor = dispatch_monitor_start(gateway);
    assert_non_null(monitor);
    assert_int_equal(dispatch_monitor_next_end(monitor), -1);

    zsock_t *first = connect_to(port), *second = connect_to(port);
    int first_fd = ready_fd(gateway, first, "w-1");
    int second_fd = ready_fd(gateway, second, "w-2");
    assert_true(first_fd >= 0 && second_fd >= 0 && first_fd != second_fd);
    /* The same connection, the same descriptor, message after message. */
    assert_int_equal(ready_fd(gateway, first, "w-1"), first_fd);
    struct stat st;
    assert_int_equal(fstat(first_fd, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));

    zsock_destroy(&first);
    assert_int_equal(next_end(monitor), first_fd);
    assert_int_equal(dispatch_monitor_next_end(monitor), -1);
    /* The other connection lives on. */
    assert_int_equal(ready_fd(gateway, second, "w-2"), second_fd);
    zsock_destroy(&second);
    assert_int_equal(next_end(monitor), second_fd);

    dispatch_monitor_stop(&monitor, gateway);
    assert_null(monitor);
    dispatch_monitor_stop(&monitor, gateway);
    zsock_destroy(&gateway);
}

/* A worker added from a READY that said its descriptor. */
static struct dispatch_worker *on_fd(struct dispatch_workers *t, const char *name, int fd,
                                     int64_t now_ms)
{
    zframe_t *identity = zframe_new(name, strlen(name));
    char *id = strdup(name);
    struct dispatch_worker *w = dispatch_workers_add(t, &identity, &id);
    assert_non_null(w);
    assert_int_equal(w->fd, -1);
    const struct osbq_bus_ready_received ready = {.free_slots = 1};
    dispatch_worker_heard(w, &ready, now_ms);
    w->fd = fd;
    return w;
}

static void test_workers_by_descriptor(void **state)
{
    (void)state;
    struct dispatch_workers *t = dispatch_workers_new();
    assert_null(dispatch_workers_on_fd(t, 7));
    struct dispatch_worker *newer = on_fd(t, "newer", 7, 900);
    struct dispatch_worker *older = on_fd(t, "older", 7, 100);
    struct dispatch_worker *other = on_fd(t, "other", 8, 50);
    assert_ptr_equal(dispatch_workers_on_fd(t, 7), older);
    assert_ptr_equal(dispatch_workers_on_fd(t, 8), other);
    assert_null(dispatch_workers_on_fd(t, 9));
    assert_true(dispatch_workers_unlink(t, older));
    dispatch_worker_free(&older);
    assert_ptr_equal(dispatch_workers_on_fd(t, 7), newer);
    dispatch_workers_destroy(&t);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_end_names_the_descriptor_of_the_messages),
               cmocka_unit_test(test_workers_by_descriptor))
