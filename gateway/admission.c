/* Request admission: sizes, credentials and the API version, checked before a handler runs. */
#include "admission.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "client_cert.h"
#include "log.h"
#include "validate.h"

static const char *header(struct MHD_Connection *conn, const char *name)
{
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

static enum MHD_Result add_field_size(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    size_t *total = cls;
    (void)kind;
    *total += strlen(key) + (value ? strlen(value) : 0) + 4; /* "key: value\r\n", "k=v&" */
    return MHD_YES;
}

/* The size of the request line and headers as sent, give or take a few spaces: what
 * OSBQ_MAX_HEADER_BYTES limits. libmicrohttpd keeps them parsed, not as sent. */
static size_t request_head_size(struct MHD_Connection *conn, const char *method, const char *url,
                                const char *version)
{
    size_t total = strlen(method) + strlen(url) + strlen(version) + 6; /* spaces, CRLF x2 */
    (void)MHD_get_connection_values(conn, MHD_HEADER_KIND, add_field_size, &total);
    (void)MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_field_size, &total);
    return total;
}

bool admission_check_sizes(const struct osbq_config *cfg, struct MHD_Connection *conn,
                           const char *method, const char *url, const char *version,
                           struct reply *out)
{
    if (request_head_size(conn, method, url, version) > cfg->max_header_bytes) {
        static const char too_large[] =
            "{\"description\":\"The request line and headers are larger than the broker "
            "accepts (OSBQ_MAX_HEADER_BYTES).\"}";
        reply_static(out, 431, too_large, sizeof too_large - 1);
        out->reason = "HEADERS_TOO_LARGE";
        return false;
    }
    const char *length = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length != NULL) {
        char *end = NULL;
        errno = 0;
        unsigned long long n = strtoull(length, &end, 10);
        if (errno != 0 || *end != '\0' || n > cfg->max_body_bytes) {
            reply_error(out, OSBQ_ERR_TOO_LARGE,
                        "The request body is larger than the broker accepts.");
            return false;
        }
    }
    return true;
}

/* The 401 of a /v2 request whose credentials are not its platform's: names what it accepts. */
static void platform_unauthorized(const struct osbq_platform *platform, struct reply *out)
{
    const char *description =
        platform->token_count == 0
            ? "Authentication failed: send the broker's user name and password with HTTP "
              "basic authentication."
        : !platform->basic ? "Authentication failed: send one of the platform's tokens as "
                             "\"Authorization: Bearer <token>\"."
                           : "Authentication failed: send the platform's user name and password "
                             "with HTTP basic authentication, or one of its Bearer tokens.";
    reply_error(out, OSBQ_ERR_UNAUTHORIZED, description);
    out->auth_schemes = (platform->basic ? REPLY_AUTH_BASIC : 0u) |
                        (platform->token_count ? REPLY_AUTH_BEARER : 0u);
}

/* A platform that names a client certificate: the connection's must be it. False with a 401,
 * the reason logged (the client is told only what to present). */
static bool certificate_accepted(const struct osbq_platform *platform, struct MHD_Connection *conn,
                                 struct reply *out)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t session = info != NULL ? (gnutls_session_t)info->tls_session : NULL;
    char why[OSBQ_ERROR_TEXT_MAX];
    if (client_cert_accepts(platform->client_cert, session, why, sizeof why))
        return true;
    log_warnx("platform %s: request refused: %s", platform->name, why);
    reply_error(out, OSBQ_ERR_UNAUTHORIZED,
                "Authentication failed: present the platform's client certificate over HTTPS.");
    return false;
}

bool admission_check_broker(const struct osbq_platforms *set, const struct osbq_platform *platform,
                            struct MHD_Connection *conn, struct request *req, struct reply *out)
{
    if (platform == NULL) {
        reply_error(out, OSBQ_ERR_NOT_FOUND, "No platform of the broker has this URL prefix.");
        return false;
    }
    if (platform->client_cert != NULL && !certificate_accepted(platform, conn, out))
        return false;
    bool has_secret = platform->basic || platform->token_count > 0;
    if (has_secret &&
        !osbq_platform_authenticate(set, platform, header(conn, MHD_HTTP_HEADER_AUTHORIZATION))) {
        platform_unauthorized(platform, out);
        return false;
    }
    req->platform = platform;
    struct osbq_error err = {0};
    if (validate_api_version(header(conn, "X-Broker-API-Version"), &req->api_version, &err) < 0) {
        reply_error_from(out, &err);
        return false;
    }
    return true;
}

/* Checks basic credentials against auth; false when absent or wrong. */
static bool credentials_match(struct MHD_Connection *conn, const struct osbq_auth *auth)
{
    char *password = NULL;
    char *username = MHD_basic_auth_get_username_password(conn, &password);
    bool authenticated = osbq_auth_check(auth, username, password);
    if (password != NULL) {
        /* memset before a free may be optimised away. */
        sodium_memzero(password, strlen(password));
        MHD_free(password);
    }
    if (username != NULL)
        MHD_free(username);
    return authenticated;
}

bool admission_check_metrics(const struct gateway *gw, struct MHD_Connection *conn,
                             struct reply *out)
{
    if (!gw->metrics_auth_on || credentials_match(conn, &gw->metrics_auth))
        return true;
    reply_error(out, OSBQ_ERR_UNAUTHORIZED,
                "Authentication failed: /metrics needs the metrics user name and password "
                "(OSBQ_METRICS_USERNAME) with HTTP basic authentication.");
    return false;
}
