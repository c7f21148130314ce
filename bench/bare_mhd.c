/* The bare libmicrohttpd reference of bench/run.sh's catalog case: answers every request with
 * the bytes of one file (the gateway's own catalog answer), from a response built once, on an
 * epoll thread pool of 2. No auth, no routing, no JSON: the ceiling of the HTTP library osbq
 * is built on. Usage: bare_mhd PORT FILE (listens on 127.0.0.1 only; stops on SIGTERM/SIGINT). */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;

static void on_signal(int signo)
{
    (void)signo;
    stopping = 1;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **state)
{
    (void)url, (void)method, (void)version, (void)upload_data;
    /* The first call only sees the headers: a response queued then makes libmicrohttpd close
     * the connection (the body may be unread), so the answer goes on the second call. */
    static int seen;
    if (*state == NULL) {
        *state = &seen;
        return MHD_YES;
    }
    *upload_data_size = 0;
    return MHD_queue_response(connection, MHD_HTTP_OK, cls);
}

int main(int argc, char **argv)
{
    static char body[1 << 20];
    char *end = NULL;
    unsigned long port = argc == 3 ? strtoul(argv[1], &end, 10) : 0;
    if (port == 0 || port > 65535 || end == NULL || *end != '\0') {
        fprintf(stderr, "usage: bare_mhd PORT FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    size_t len = f != NULL ? fread(body, 1, sizeof body, f) : 0;
    if (f == NULL || ferror(f) || !feof(f)) {
        fprintf(stderr, "bare_mhd: cannot read %s (at most %zu bytes)\n", argv[2], sizeof body);
        return 1;
    }
    fclose(f);
    struct MHD_Response *response =
        MHD_create_response_from_buffer(len, body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD, 0, NULL, NULL, answer, response, MHD_OPTION_SOCK_ADDR, &addr,
        MHD_OPTION_THREAD_POOL_SIZE, 2u, MHD_OPTION_CONNECTION_LIMIT, 4096u, MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "bare_mhd: cannot listen on 127.0.0.1:%lu\n", port);
        return 1;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    while (!stopping) {
        pause();
    }
    MHD_stop_daemon(daemon);
    MHD_destroy_response(response);
    return 0;
}
