/* INFO replication as the store reads it (store/store_replication.c): a primary with replicas
 * in and out of sync, a replica, odd and missing fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <string.h>

#include "store.h"
#include "test_main.h"

static const char primary_info[] =
    "# Replication\r\n"
    "role:master\r\n"
    "connected_slaves:2\r\n"
    "slave0:ip=10.0.0.12,port=6379,state=online,offset=91820,lag=0\r\n"
    "slave1:ip=::1,port=6380,state=wait_bgsave,offset=0,lag=7\r\n"
    "master_failover_state:no-failover\r\n"
    "master_repl_offset:91834\r\n";

static void test_primary_with_replicas(void **state)
{
    (void)state;
    struct osbq_store_replication r;
    osbq_store_replication_parse(primary_info, &r);
    assert_string_equal(r.role, "master");
    assert_int_equal(r.offset, 91834);
    assert_int_equal(r.replica_count, 2);
    assert_int_equal(r.online, 1);
    assert_string_equal(r.replicas[0].address, "10.0.0.12:6379");
    assert_string_equal(r.replicas[0].state, "online");
    assert_int_equal(r.replicas[0].offset, 91820);
    assert_int_equal(r.replicas[0].lag_s, 0);
    assert_string_equal(r.replicas[1].address, "[::1]:6380");
    assert_string_equal(r.replicas[1].state, "wait_bgsave");
    assert_int_equal(r.replicas[1].lag_s, 7);
    char line[256];
    (void)osbq_store_replication_describe(&r, line, sizeof line);
    assert_string_equal(line, "role master, 1 replica(s) online: 10.0.0.12:6379 online, lag 0 s; "
                              "[::1]:6380 wait_bgsave, lag 7 s");
    /* Cut to the buffer, always terminated. */
    char small[20];
    size_t len = osbq_store_replication_describe(&r, small, sizeof small);
    assert_true(len < sizeof small);
    assert_int_equal(strlen(small), len);
}

static void test_replica_and_odd_input(void **state)
{
    (void)state;
    struct osbq_store_replication r;
    osbq_store_replication_parse("role:slave\nmaster_host:10.0.0.11\nconnected_slaves:0\n", &r);
    assert_string_equal(r.role, "slave");
    assert_int_equal(r.replica_count, 0);
    assert_int_equal(r.online, 0);
    assert_int_equal(r.offset, -1);
    osbq_store_replication_parse("", &r);
    assert_string_equal(r.role, "unknown");
    /* A replica line without its numbers, and a "slave" key that is not a replica. */
    osbq_store_replication_parse("role:master\nslave0:state=online\nslave_read_only:1\n", &r);
    assert_int_equal(r.replica_count, 1);
    assert_int_equal(r.online, 1);
    assert_string_equal(r.replicas[0].address, "?:?");
    assert_int_equal(r.replicas[0].offset, -1);
    assert_int_equal(r.replicas[0].lag_s, -1);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_primary_with_replicas),
               cmocka_unit_test(test_replica_and_odd_input))
