/* A throw-away redis-server for tests of the store's scripts: started on a free loopback port
 * in a temporary directory, stopped by PID. */
#ifndef OSBQ_TEST_REDIS_FIXTURE_H
#define OSBQ_TEST_REDIS_FIXTURE_H

#include <sys/types.h>

struct redis_fixture {
    pid_t pid;    /* the redis-server we started */
    int port;     /* its loopback port */
    char dir[64]; /* its working directory */
};

/* The server program the fixture runs: $OSBQ_TEST_REDIS_SERVER (the test command's Valkey
 * pass sets valkey-server), else redis-server. Borrowed from the environment. */
const char *redis_fixture_server(void);

/* A TCP port on 127.0.0.1 that nothing listens on right now, or -1. */
int redis_fixture_free_port(void);

/* Starts redis_fixture_server() and waits until it answers; returns 0 or -1. */
int redis_fixture_start(struct redis_fixture *fx);

/* Stops it (SIGTERM, then waits) and removes its directory. */
void redis_fixture_stop(struct redis_fixture *fx);

#endif
