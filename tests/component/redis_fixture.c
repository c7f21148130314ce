/* A throw-away redis-server for tests of the store's scripts. */
#include "redis_fixture.h"

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
#include <time.h>
#include <unistd.h>

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

int redis_fixture_start(struct redis_fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    (void)snprintf(fx->dir, sizeof fx->dir, "/tmp/osbq-redis-XXXXXX");
    if (mkdtemp(fx->dir) == NULL)
        return -1;
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
        execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", fx->dir, "--loglevel", "warning", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        struct timeval tv = {0, 100000};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", fx->port, tv);
        if (c != NULL && c->err == 0) {
            redisReply *r = redisCommand(c, "PING");
            int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
            freeReplyObject(r);
            redisFree(c);
            if (ok)
                return 0;
        } else if (c != NULL) {
            redisFree(c);
        }
        struct timespec pause = {0, 20000000};
        nanosleep(&pause, NULL);
    }
    redis_fixture_stop(fx);
    return -1;
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
