/* A throw-away redis-server for tests of the store's scripts. */
#include "redis_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"

const char *redis_fixture_server(void)
{
    const char *server = getenv("OSBQ_TEST_REDIS_SERVER");
    return server != NULL && server[0] != '\0' ? server : "redis-server";
}

int redis_fixture_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* Whether the server answering on c is the one this fixture started: another test's server may
 * have taken the free port first (ours then failed to bind and exited), and must not be used. */
static int is_ours(redisContext *c, pid_t pid)
{
    redisReply *r = redisCommand(c, "INFO server");
    char want[32];
    (void)snprintf(want, sizeof want, "process_id:%ld\r\n", (long)pid);
    int ours = r != NULL && r->type == REDIS_REPLY_STRING && strstr(r->str, want) != NULL;
    freeReplyObject(r);
    return ours;
}

/* Starts a server on a free port: 1 when it answers, 0 when it did not come up there (the
 * port was taken meanwhile: try another), -1 on a failure no retry mends. */
static int start_once(struct redis_fixture *fx);

int redis_fixture_start(struct redis_fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    (void)snprintf(fx->dir, sizeof fx->dir, "/tmp/osbq-redis-XXXXXX");
    if (mkdtemp(fx->dir) == NULL)
        return -1;
    for (int attempt = 0; attempt < 5; attempt++) {
        int rc = start_once(fx);
        if (rc != 0)
            return rc > 0 ? 0 : -1;
    }
    redis_fixture_stop(fx);
    return -1;
}

static int start_once(struct redis_fixture *fx)
{
    fx->port = redis_fixture_free_port();
    if (fx->port < 0)
        return -1;
    char port[8];
    (void)snprintf(port, sizeof port, "%d", fx->port);
    fx->pid = fork();
    if (fx->pid < 0)
        return -1;
    if (fx->pid == 0) {
        /* A test binary killed by CTest's timeout must not leave its server behind. */
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* Its shutdown chatter is noise in test output. */
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            (void)dup2(devnull, STDOUT_FILENO);
        const char *server = redis_fixture_server();
        execlp(server, server, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly",
               "no", "--dir", fx->dir, "--loglevel", "warning", (char *)NULL);
        fprintf(stderr, "redis_fixture: cannot run %s: %s\n", server, strerror(errno));
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        struct timeval tv = {0, 100000};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", fx->port, tv);
        if (c != NULL && c->err == 0) {
            redisReply *r = redisCommand(c, "PING");
            int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
            freeReplyObject(r);
            int ours = ok && is_ours(c, fx->pid);
            redisFree(c);
            if (ours)
                return 1;
            if (ok)
                break; /* another server holds the port */
        } else if (c != NULL) {
            redisFree(c);
        }
        int status = 0;
        if (waitpid(fx->pid, &status, WNOHANG) == fx->pid) {
            fx->pid = 0;
            /* 127: the program could not run (said so above), which no other port mends; any
             * other exit: the port was taken. */
            return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -1 : 0;
        }
        osbq_clock_sleep_ms(20);
    }
    if (fx->pid > 0) {
        kill(fx->pid, SIGKILL);
        (void)waitpid(fx->pid, NULL, 0);
        fx->pid = 0;
    }
    return 0;
}

void redis_fixture_stop(struct redis_fixture *fx)
{
    if (fx->pid > 0) {
        kill(fx->pid, SIGTERM);
        (void)waitpid(fx->pid, NULL, 0);
        fx->pid = 0;
    }
    if (fx->dir[0] != '\0') {
        char path[128];
        (void)snprintf(path, sizeof path, "%s/dump.rdb", fx->dir);
        (void)unlink(path);
        (void)rmdir(fx->dir);
    }
}
