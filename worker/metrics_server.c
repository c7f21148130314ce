/* The worker's metrics endpoint: one libmicrohttpd polling thread answering /metrics and
 * /healthz. */
#include "metrics_server.h"

#include <microhttpd.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "log.h"
#include "owned.h"
#include "tcp_listen.h"

/* Scrapers and probes are few: a small cap keeps a misbehaving client from holding threads'
 * worth of memory, and idle connections go after a short while. */
#define METRICS_CONNECTION_LIMIT     64
#define METRICS_CONNECTION_TIMEOUT_S 30
/* A body sent to these endpoints is read and dropped, up to this much; past it the connection
 * is closed. */
#define METRICS_MAX_DISCARD 65536

#define JSON_TYPE "application/json"

struct metrics_server {
    struct MHD_Daemon *daemon;     /* libmicrohttpd's daemon and its thread */
    struct osbq_metrics *registry; /* borrowed: rendered on each scrape */
    bool auth_on;                  /* /metrics needs auth */
    struct osbq_auth auth;         /* the expected credentials, hashed */
};

/* One request's state between libmicrohttpd's calls. */
struct exchange {
    size_t discarded; /* body bytes dropped */
};

/* The response to a request. body is static unless owned (then malloc'd, freed by MHD). */
struct answer {
    unsigned status;
    const char *content_type;
    const char *body;
    size_t len;
    bool owned;
    bool unauthorized; /* 401 with WWW-Authenticate */
    bool allow;        /* 405: Allow: GET, HEAD */
};

static void json_answer(struct answer *a, unsigned status, const char *body)
{
    *a = (struct answer){
        .status = status, .content_type = JSON_TYPE, .body = body, .len = strlen(body)};
}

static bool credentials_match(struct MHD_Connection *conn, const struct osbq_auth *auth)
{
    char *password = NULL;
    char *username = MHD_basic_auth_get_username_password(conn, &password);
    bool ok = osbq_auth_check(auth, username, password);
    if (password != NULL) {
        sodium_memzero(password, strlen(password));
        MHD_free(password);
    }
    if (username != NULL)
        MHD_free(username);
    return ok;
}

/* Decides the answer to method on path. */
static void route(struct metrics_server *s, struct MHD_Connection *conn, const char *path,
                  const char *method, struct answer *a)
{
    bool is_metrics = strcmp(path, "/metrics") == 0;
    bool is_health = strcmp(path, "/healthz") == 0;
    if (!is_metrics && !is_health) {
        json_answer(a, MHD_HTTP_NOT_FOUND,
                    "{\"description\":\"No such endpoint: this port serves /metrics and "
                    "/healthz.\"}");
        return;
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        json_answer(a, MHD_HTTP_METHOD_NOT_ALLOWED,
                    "{\"description\":\"Method not allowed on this endpoint.\"}");
        a->allow = true;
        return;
    }
    if (is_health) {
        json_answer(a, MHD_HTTP_OK, "{\"status\":\"ok\"}");
        return;
    }
    if (s->auth_on && !credentials_match(conn, &s->auth)) {
        json_answer(a, MHD_HTTP_UNAUTHORIZED,
                    "{\"description\":\"Authentication failed: /metrics needs the metrics user "
                    "name and password (OSBQ_METRICS_USERNAME) with HTTP basic "
                    "authentication.\"}");
        a->unauthorized = true;
        return;
    }
    size_t len = 0;
    char *text = osbq_metrics_render(s->registry, &len);
    if (text == NULL) {
        json_answer(a, MHD_HTTP_INTERNAL_SERVER_ERROR,
                    "{\"description\":\"The worker ran out of memory rendering its metrics.\"}");
        return;
    }
    *a = (struct answer){.status = MHD_HTTP_OK,
                         .content_type = OSBQ_METRICS_CONTENT_TYPE,
                         .body = text,
                         .len = len,
                         .owned = true};
}

static enum MHD_Result queue(struct MHD_Connection *conn, struct answer *a)
{
    struct MHD_Response *resp =
        a->owned ? MHD_create_response_from_buffer(a->len, (void *)(uintptr_t)a->body,
                                                   MHD_RESPMEM_MUST_FREE)
                 : MHD_create_response_from_buffer(a->len, (void *)(uintptr_t)a->body,
                                                   MHD_RESPMEM_PERSISTENT);
    if (resp == NULL) {
        if (a->owned)
            free((void *)(uintptr_t)a->body);
        return MHD_NO;
    }
    bool ok =
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type) == MHD_YES;
    if (a->allow)
        ok &= MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") == MHD_YES;
    enum MHD_Result rc = MHD_NO;
    if (ok && a->unauthorized)
        rc = MHD_queue_basic_auth_fail_response(conn, "osbq-metrics", resp);
    else if (ok)
        rc = MHD_queue_response(conn, a->status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    struct metrics_server *s = cls;
    struct exchange *ex = *con_cls;
    (void)version;
    (void)upload_data;
    if (ex == NULL) {
        /* Answered on a later call, once any body is read, so keep-alive survives. */
        ex = calloc(1, sizeof *ex);
        if (ex == NULL)
            return MHD_NO;
        *con_cls = ex;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        ex->discarded += *upload_data_size;
        *upload_data_size = 0;
        return ex->discarded > METRICS_MAX_DISCARD ? MHD_NO : MHD_YES;
    }
    struct answer a;
    route(s, conn, url, method, &a);
    return queue(conn, &a);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

int metrics_server_listen(const struct osbq_listen_addr *addr, struct osbq_error *err)
{
    return osbq_tcp_listen(addr, 64, err);
}

struct metrics_server *metrics_server_start(const struct osbq_config *cfg, int listen_fd,
                                            struct osbq_metrics *registry, struct osbq_error *err)
{
    struct metrics_server *s = calloc(1, sizeof *s);
    if (s == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out_close;
    }
    s->registry = registry;
    if (cfg->metrics_username != NULL && cfg->metrics_password != NULL) {
        if (osbq_auth_init(&s->auth, cfg->metrics_username, cfg->metrics_password) < 0) {
            osbq_error_set(err, OSBQ_ERR_INTERNAL, "libsodium cannot start");
            goto out_close;
        }
        s->auth_on = true;
    }
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES)
        flags |= MHD_USE_EPOLL;
    /* The logger first, so even the daemon's start-up messages go through it. */
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_access, s, MHD_OPTION_EXTERNAL_LOGGER, osbq_log_library,
        "libmicrohttpd (metrics)", MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, NULL, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_CONNECTION_LIMIT,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_CONNECTION_TIMEOUT_S, MHD_OPTION_END);
    if (s->daemon == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "libmicrohttpd failed to start");
        goto out_close;
    }
    return s;
out_close:
    /* It was given to the server to take over, which failed. */
    close(listen_fd);
    if (s != NULL)
        sodium_memzero(&s->auth, sizeof s->auth);
    free(s);
    return NULL;
}

void metrics_server_stop(struct metrics_server **sp)
{
    OSBQ_OWNED_OR_RETURN(struct metrics_server, s, sp);
    /* Closes the listening socket it was given, and every connection. */
    MHD_stop_daemon(s->daemon);
    sodium_memzero(&s->auth, sizeof s->auth);
    free(s);
    *sp = NULL;
}
