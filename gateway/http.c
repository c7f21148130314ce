/* The HTTP server: libmicrohttpd's epoll thread pool and its callbacks, each handing its request
 * (an exchange, exchange.h) on: created on its first call, its body read, its handler run and
 * its suspensions ended on later ones, completed (metrics, access log) at the end. */
#include "http.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admission.h"
#include "clock.h"
#include "exchange.h"
#include "log.h"
#include "owned.h"

/* Memory pool bytes beyond twice OSBQ_MAX_HEADER_BYTES: the body's read buffer and the
 * response head. */
#define POOL_READ_ROOM 16384

struct http_server {
    const struct gateway *gw;  /* borrowed: what handlers use */
    struct MHD_Daemon *daemon; /* libmicrohttpd's daemon and its threads */
    int listen_fd;             /* the socket it accepts on, until quiesced; -1 after */
    atomic_int inflight;       /* requests between their first callback and completion */
    atomic_bool quiescing;     /* http_quiesce was called: the last request wakes idle */
    pthread_mutex_t idle_lock; /* with idle: http_wait_idle's wait */
    pthread_cond_t idle;       /* broadcast when inflight falls to 0 once quiescing */
};

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    struct http_server *server = cls;
    const struct gateway *gw = server->gw;
    struct exchange *ex = *con_cls;

    if (ex == NULL) {
        ex = exchange_new(gw, conn, url, method);
        if (ex == NULL)
            return MHD_NO;
        atomic_fetch_add(&server->inflight, 1);
        osbq_series_add(gw->metrics->in_flight, 1);
        *con_cls = ex;
        /* An oversized head or announced body is refused before any of the body is read.
         * Answering on this first call makes libmicrohttpd close the connection, which is what
         * we want here; every other answer waits for a later call so keep-alive survives. */
        struct reply r = {0};
        if (!admission_check_sizes(gw->cfg, conn, method, url, version, &r))
            return exchange_answer(conn, ex, &r);
        return MHD_YES;
    }
    if (exchange_answered(ex)) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t size = *upload_data_size;
        *upload_data_size = 0;
        return exchange_upload(gw, ex, upload_data, size);
    }
    return exchange_go_on(gw, conn, ex);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct exchange *ex = *con_cls;
    struct http_server *server = cls;
    (void)conn;
    if (ex == NULL)
        return;
    exchange_complete(server->gw, ex, toe);
    *con_cls = NULL;
    if (atomic_fetch_sub(&server->inflight, 1) == 1 && atomic_load(&server->quiescing)) {
        /* The last request of a quiesced server: http_wait_idle may be waiting for it. */
        pthread_mutex_lock(&server->idle_lock);
        pthread_cond_broadcast(&server->idle);
        pthread_mutex_unlock(&server->idle_lock);
    }
}

/* Leaves the URL as sent: the router decodes each path segment itself, so that an encoded
 * '/' cannot create a segment. */
static size_t keep_escaped(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    return strlen(s);
}

struct http_server *http_start(const struct gateway *gw, int listen_fd, struct tls_credentials *tls,
                               struct osbq_error *err)
{
    struct http_server *server = NULL;
    if (tls != NULL && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "OSBQ_TLS_CERT: this libmicrohttpd was built without TLS");
        goto out_close;
    }
    server = calloc(1, sizeof *server);
    if (server == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out_close;
    }
    server->gw = gw;
    server->listen_fd = listen_fd;
    atomic_init(&server->inflight, 0);
    atomic_init(&server->quiescing, false);
    if (pthread_mutex_init(&server->idle_lock, NULL) != 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out_close;
    }
    if (osbq_clock_cond_init(&server->idle) != 0) {
        pthread_mutex_destroy(&server->idle_lock);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out_close;
    }
    const struct osbq_config *cfg = gw->cfg;
    /* The per-connection memory pool holds the request head and its parsed headers (about 64
     * bytes each besides the text): twice the head limit plus room for reading the body, so a
     * head a little over the limit still reaches on_access and gets the JSON 431. */
    size_t pool = 2 * cfg->max_header_bytes + POOL_READ_ROOM;
    struct MHD_OptionItem limits[] = {
        {MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL},
        {MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)cfg->http_threads, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)cfg->http_idle_timeout_s, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)cfg->max_connections, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)cfg->max_connections_per_ip, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)pool, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    /* ITC: needed to quiesce the daemon (stop accepting) while requests finish. */
    unsigned flags =
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    if (tls == NULL)
        server->daemon = MHD_start_daemon(
            flags, 0, NULL, NULL, on_access, server, MHD_OPTION_EXTERNAL_LOGGER, osbq_log_library,
            "libmicrohttpd", MHD_OPTION_ARRAY, limits, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
            server, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL, MHD_OPTION_END);
    else
        server->daemon = MHD_start_daemon(
            flags | MHD_USE_TLS, 0, NULL, NULL, on_access, server, MHD_OPTION_EXTERNAL_LOGGER,
            osbq_log_library, "libmicrohttpd", MHD_OPTION_ARRAY, limits,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, server, MHD_OPTION_UNESCAPE_CALLBACK,
            keep_escaped, NULL, MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES,
            MHD_OPTION_HTTPS_CERT_CALLBACK, tls_refuse_handshake, MHD_OPTION_NOTIFY_CONNECTION,
            tls_on_connection, tls, MHD_OPTION_END);
    if (server->daemon == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "libmicrohttpd failed to start");
        pthread_cond_destroy(&server->idle);
        pthread_mutex_destroy(&server->idle_lock);
        goto out_close;
    }
    return server;
out_close:
    /* It was given to the server to take over, which failed. */
    close(listen_fd);
    free(server);
    return NULL;
}

void http_quiesce(struct http_server *server)
{
    atomic_store(&server->quiescing, true);
    MHD_socket fd = MHD_quiesce_daemon(server->daemon);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    server->listen_fd = -1;
}

int http_inflight(struct http_server *server)
{
    return atomic_load(&server->inflight);
}

int http_wait_idle(struct http_server *server, int64_t deadline_ms)
{
    pthread_mutex_lock(&server->idle_lock);
    while (atomic_load(&server->inflight) > 0 && osbq_clock_ms() < deadline_ms)
        osbq_clock_wait_until(&server->idle, &server->idle_lock, deadline_ms);
    pthread_mutex_unlock(&server->idle_lock);
    return atomic_load(&server->inflight);
}

void http_stop(struct http_server **sp)
{
    OSBQ_OWNED_OR_RETURN(struct http_server, server, sp);
    /* libmicrohttpd closes a socket given with MHD_OPTION_LISTEN_SOCKET itself, unless the
     * daemon was quiesced (then http_quiesce closed it): closing it here too could close a
     * descriptor another thread has been handed meanwhile. */
    MHD_stop_daemon(server->daemon);
    pthread_cond_destroy(&server->idle);
    pthread_mutex_destroy(&server->idle_lock);
    free(server);
    *sp = NULL;
}
