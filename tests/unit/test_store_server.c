/* INFO server as the store reads it (store/store_server.c): Redis, Valkey (which answers
 * redis_version 7.2.4 and names its own version apart), odd and missing fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <string.h>

#include "store.h"
#include "test_main.h"

/* The start of Redis 7.0.15's INFO server. */
static const char redis_info[] = "# Server\r\n"
                                 "redis_version:7.0.15\r\n"
                                 "redis_git_sha1:00000000\r\n"
                                 "redis_mode:standalone\r\n";

/* The start of Valkey 8.0.1's. */
static const char valkey_info[] = "# Server\r\n"
                                  "redis_version:7.2.4\r\n"
                                  "server_name:valkey\r\n"
                                  "valkey_version:8.0.1\r\n"
                                  "redis_git_sha1:00000000\r\n"
                                  "server_mode:standalone\r\n";

/* Reads info, checking the server's name and version it finds. */
static void assert_server(const char *info, const char *name, const char *version)
{
    struct osbq_store_server s;
    osbq_store_server_parse(info, &s);
    assert_string_equal(s.name, name);
    assert_string_equal(s.version, version);
}

static void test_redis(void **state)
{
    (void)state;
    assert_server(redis_info, "redis", "7.0.15");
}

static void test_valkey(void **state)
{
    (void)state;
    assert_server(valkey_info, "valkey", "8.0.1");
    /* The whole INFO, other sections after the server's, read the same. */
    assert_server("# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\n"
                  "valkey_version:8.0.1\r\n\r\n# Clients\r\nconnected_clients:3\r\n",
                  "valkey", "8.0.1");
}

static void test_odd_input(void **state)
{
    (void)state;
    assert_server("", "", "");
    /* A named server without a version of its own: the one it answers for. */
    assert_server("redis_version:7.2.4\nserver_name:other\n", "other", "7.2.4");
    /* Keys are whole: neither a longer key nor one inside a value counts. */
    assert_server("redis_version_x:1\nx:redis_version:2\nredis_version:7.0.0", "redis", "7.0.0");
    /* Values cut to their buffers, always terminated. */
    struct osbq_store_server s;
    osbq_store_server_parse("server_name:abcdefghijklmnopqrstuvwxyz\r\n"
                            "redis_version:1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16\r\n",
                            &s);
    assert_string_equal(s.name, "abcdefghijklmno");
    assert_int_equal(strlen(s.version), sizeof s.version - 1);
}

OSBQ_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_redis), cmocka_unit_test(test_valkey),
               cmocka_unit_test(test_odd_input))
