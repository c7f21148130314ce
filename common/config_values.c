/* Parsers of configuration values: bounded numbers, host:port, tcp:// endpoints and redis://
 * URLs (read with curl's URL parser, which the project links already). */
#include "config_values.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "secrets.h"

#define TCP_SCHEME "tcp://"

static int no_memory(struct osbq_error *err)
{
    return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
}

int osbq_parse_uint(const char *value, unsigned long min, unsigned long max, unsigned long *out,
                    struct osbq_error *err)
{
    if (value[0] < '0' || value[0] > '9')
        return osbq_error_set(err, OSBQ_ERR_INVALID, "\"%s\" is not a number", value);
    errno = 0;
    char *end = NULL;
    unsigned long n = strtoul(value, &end, 10);
    if (errno != 0 || *end != '\0')
        return osbq_error_set(err, OSBQ_ERR_INVALID, "\"%s\" is not a number", value);
    if (n < min || n > max)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%lu is out of range %lu..%lu", n, min, max);
    *out = n;
    return 0;
}

/* A port number, with "port" before the reason when it is not one. */
static int parse_port(const char *value, uint16_t *out, struct osbq_error *err)
{
    unsigned long port = 0;
    if (osbq_parse_uint(value, 1, 65535, &port, err) < 0)
        return osbq_error_prefix(err, "port");
    *out = (uint16_t)port;
    return 0;
}

int osbq_listen_addr_parse(const char *value, struct osbq_listen_addr *out, struct osbq_error *err)
{
    const char *colon = strrchr(value, ':');
    if (colon == NULL)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "\"%s\" is not host:port", value);
    const char *host = value;
    size_t host_len = (size_t)(colon - value);
    if (host_len >= 2 && host[0] == '[' && host[host_len - 1] == ']') {
        host++;
        host_len -= 2;
    } else if (memchr(host, ':', host_len) != NULL) {
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "\"%s\": write IPv6 addresses in brackets, [::1]:8080", value);
    }
    if (host_len == 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "\"%s\" names no host", value);
    uint16_t port = 0;
    if (parse_port(colon + 1, &port, err) < 0)
        return -1;
    char *copy = strndup(host, host_len);
    if (copy == NULL)
        return no_memory(err);
    out->host = copy;
    out->port = port;
    return 0;
}

int osbq_tcp_endpoint_parse(const char *value, struct osbq_listen_addr *out, struct osbq_error *err)
{
    if (strncmp(value, TCP_SCHEME, strlen(TCP_SCHEME)) != 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "\"%s\": expected a ZeroMQ tcp://host:port endpoint", value);
    return osbq_listen_addr_parse(value + strlen(TCP_SCHEME), out, err);
}

bool osbq_host_is_wildcard(const char *host)
{
    unsigned char addr[sizeof(struct in6_addr)];
    static const unsigned char zeros[sizeof(struct in6_addr)];
    if (strcmp(host, "*") == 0)
        return true;
    if (inet_pton(AF_INET, host, addr) == 1)
        return memcmp(addr, zeros, sizeof(struct in_addr)) == 0;
    if (inet_pton(AF_INET6, host, addr) == 1)
        return memcmp(addr, zeros, sizeof(struct in6_addr)) == 0;
    return false;
}

/* ---- redis:// URLs ---- */

/* A part of the URL, or NULL when it has none; caller curl_frees. */
static char *url_part(CURLU *u, CURLUPart part, unsigned flags)
{
    char *text = NULL;
    if (curl_url_get(u, part, &text, flags) != CURLUE_OK) {
        curl_free(text);
        return NULL;
    }
    return text;
}

/* curl_free for a part that may hold a secret: wiped first. */
static void free_part(char *text)
{
    if (text != NULL)
        memset(text, 0, strlen(text));
    curl_free(text);
}

/* What a redis:// URL must be: that scheme, a host, no query and no fragment. */
static int check_redis_url(CURLU *u, const char *url, struct osbq_error *err)
{
    char *scheme = url_part(u, CURLUPART_SCHEME, 0);
    char *host = url_part(u, CURLUPART_HOST, 0);
    char *query = url_part(u, CURLUPART_QUERY, 0);
    char *fragment = query == NULL ? url_part(u, CURLUPART_FRAGMENT, 0) : NULL;
    int rc = 0;
    if (scheme == NULL || strcmp(scheme, "redis") != 0)
        rc = osbq_error_set(err, OSBQ_ERR_INVALID, "unsupported scheme \"%s\" (expected redis://)",
                            scheme ? scheme : "");
    else if (host == NULL || host[0] == '\0')
        rc = osbq_error_set(err, OSBQ_ERR_INVALID, "\"%s\" names no host", url);
    else if (query != NULL || fragment != NULL)
        rc = osbq_error_set(err, OSBQ_ERR_INVALID, "query and fragment are not supported in \"%s\"",
                            url);
    curl_free(scheme);
    curl_free(host);
    curl_free(query);
    curl_free(fragment);
    return rc;
}

/* The port (6379 when absent) and the database number of the path ("/2"; 0 when absent). */
static int redis_url_numbers(CURLU *u, struct osbq_redis_addr *addr, struct osbq_error *err)
{
    char *port = url_part(u, CURLUPART_PORT, 0);
    char *path = url_part(u, CURLUPART_PATH, 0);
    int rc = 0;
    addr->port = 6379;
    if (port != NULL)
        rc = parse_port(port, &addr->port, err);
    unsigned long db = 0;
    if (rc == 0 && path != NULL && strcmp(path, "/") != 0 && path[0] != '\0') {
        rc = osbq_parse_uint(path + 1, 0, 100000, &db, err);
        if (rc < 0)
            osbq_error_prefix(err, "database number");
    }
    addr->db = (unsigned)db;
    curl_free(port);
    curl_free(path);
    return rc;
}

/* The URL-decoded user name or password into *out, left NULL when absent or empty. */
static int redis_url_credential(CURLU *u, CURLUPart part, char **out, struct osbq_error *err)
{
    char *text = url_part(u, part, CURLU_URLDECODE);
    int rc = 0;
    if (text != NULL && text[0] != '\0' && (*out = strdup(text)) == NULL)
        rc = no_memory(err);
    free_part(text);
    return rc;
}

/* The host as hiredis wants it: IPv6 literals without the URL's brackets. */
static int redis_url_host(CURLU *u, struct osbq_redis_addr *addr, struct osbq_error *err)
{
    char *host = url_part(u, CURLUPART_HOST, 0);
    size_t len = host != NULL ? strlen(host) : 0;
    if (len > 2 && host[0] == '[')
        addr->host = strndup(host + 1, len - 2);
    else if (host != NULL)
        addr->host = strdup(host);
    curl_free(host);
    return addr->host != NULL ? 0 : no_memory(err);
}

int osbq_redis_addr_parse(const char *url, struct osbq_redis_addr *out, struct osbq_error *err)
{
    struct osbq_redis_addr addr = {0};
    CURLU *u = curl_url();
    if (u == NULL)
        return no_memory(err);
    int rc = -1;
    if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "\"%s\" is not a URL (expected redis://[user:password@]host:port[/db])",
                       url);
    else if (check_redis_url(u, url, err) == 0 && redis_url_numbers(u, &addr, err) == 0 &&
             redis_url_credential(u, CURLUPART_USER, &addr.username, err) == 0 &&
             redis_url_credential(u, CURLUPART_PASSWORD, &addr.password, err) == 0 &&
             redis_url_host(u, &addr, err) == 0)
        rc = 0;
    curl_url_cleanup(u);
    if (rc == 0)
        *out = addr;
    else
        osbq_redis_addr_clear(&addr);
    return rc;
}

void osbq_redis_addr_clear(struct osbq_redis_addr *addr)
{
    free(addr->host);
    free(addr->username);
    osbq_secrets_free_text(addr->password);
    memset(addr, 0, sizeof *addr);
}
