/* Listening TCP sockets for the HTTP servers (the gateway's API, the worker's metrics). */
#include "tcp_listen.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int osbq_tcp_listen(const struct osbq_listen_addr *addr, int backlog, struct osbq_error *err)
{
    char port[8];
    (void)snprintf(port, sizeof port, "%u", (unsigned)addr->port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(addr->host, port, &hints, &res);
    if (gai != 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "cannot resolve %s: %s", addr->host,
                              gai_strerror(gai));
    int fd = -1;
    int saved = 0;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int one = 1;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "cannot listen on %s:%u: %s", addr->host,
                              (unsigned)addr->port, strerror(saved));
    return fd;
}
