/* Configuration: the table of OSBQ_* variables, their parsers, defaults and help. */
#include "config.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef OSBQ_DEFAULT_CATALOG
#define OSBQ_DEFAULT_CATALOG "examples/catalog.json"
#endif

/* Secrets read from *_FILE paths are small; anything larger is a wrong path. */
#define SECRET_FILE_MAX 4096

/* One variable: its name, who reads it, its default, its parser and its help line. */
struct config_var {
    const char *name;          /* the environment variable */
    enum osbq_role role;       /* which binaries read it */
    const char *default_value; /* parsed when the variable is unset; NULL: parser gets NULL */
    const char *default_help;  /* the default as --help shows it */
    bool file_variant;         /* NAME_FILE names a file holding the value (Docker secrets) */
    int (*parse)(struct osbq_config *cfg, const char *value, struct osbq_error *err);
    const char *help; /* one line for --help */
};

static char *xstrdup(const char *s, struct osbq_error *err)
{
    char *copy = strdup(s);
    if (copy == NULL)
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    return copy;
}

/* Parses a decimal unsigned integer in [min, max] with no sign, space or suffix. */
static int parse_uint(const char *value, unsigned long min, unsigned long max, unsigned long *out,
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

/* Splits "host:port" or "[v6]:port" into a new host string and a port. */
static int parse_host_port(const char *value, struct osbq_listen_addr *out, struct osbq_error *err)
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
    unsigned long port = 0;
    if (parse_uint(colon + 1, 1, 65535, &port, err) < 0)
        return osbq_error_prefix(err, "port");
    char *copy = strndup(host, host_len);
    if (copy == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    out->host = copy;
    out->port = (uint16_t)port;
    return 0;
}

int osbq_redis_addr_parse(const char *url, struct osbq_redis_addr *out, struct osbq_error *err)
{
    struct osbq_redis_addr addr = {0};
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL;
    char *fragment = NULL, *user = NULL, *password = NULL;
    int rc = -1;
    CURLU *u = curl_url();
    if (u == NULL)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");

    if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "\"%s\" is not a URL (expected redis://[user:password@]host:port[/db])",
                       url);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        strcmp(scheme, "redis") != 0) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "unsupported scheme \"%s\" (expected redis://)",
                       scheme ? scheme : "");
        goto out;
    }
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || host[0] == '\0') {
        osbq_error_set(err, OSBQ_ERR_INVALID, "\"%s\" names no host", url);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK ||
        curl_url_get(u, CURLUPART_FRAGMENT, &fragment, 0) == CURLUE_OK) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "query and fragment are not supported in \"%s\"",
                       url);
        goto out;
    }
    addr.port = 6379;
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK) {
        unsigned long n = 0;
        if (parse_uint(port, 1, 65535, &n, err) < 0) {
            osbq_error_prefix(err, "port");
            goto out;
        }
        addr.port = (uint16_t)n;
    }
    if (curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK && strcmp(path, "/") != 0 &&
        path[0] != '\0') {
        unsigned long db = 0;
        if (parse_uint(path + 1, 0, 100000, &db, err) < 0) {
            osbq_error_prefix(err, "database number");
            goto out;
        }
        addr.db = (unsigned)db;
    }
    if (curl_url_get(u, CURLUPART_USER, &user, CURLU_URLDECODE) == CURLUE_OK && user[0] != '\0')
        if ((addr.username = xstrdup(user, err)) == NULL)
            goto out;
    if (curl_url_get(u, CURLUPART_PASSWORD, &password, CURLU_URLDECODE) == CURLUE_OK &&
        password[0] != '\0')
        if ((addr.password = xstrdup(password, err)) == NULL)
            goto out;
    /* hiredis wants IPv6 literals without the URL's brackets. */
    size_t host_len = strlen(host);
    if (host[0] == '[' && host_len > 2)
        addr.host = strndup(host + 1, host_len - 2);
    else
        addr.host = strdup(host);
    if (addr.host == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        goto out;
    }
    *out = addr;
    memset(&addr, 0, sizeof addr);
    rc = 0;
out:
    osbq_redis_addr_clear(&addr);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    curl_free(fragment);
    curl_free(user);
    if (password != NULL) {
        memset(password, 0, strlen(password));
        curl_free(password);
    }
    curl_url_cleanup(u);
    return rc;
}

void osbq_redis_addr_clear(struct osbq_redis_addr *addr)
{
    free(addr->host);
    free(addr->username);
    if (addr->password != NULL) {
        memset(addr->password, 0, strlen(addr->password));
        free(addr->password);
    }
    memset(addr, 0, sizeof *addr);
}

static int parse_redis_url(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    return osbq_redis_addr_parse(value, &cfg->redis, err);
}

static int parse_sentinels(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    if (value == NULL || value[0] == '\0')
        return 0;
    char *list = xstrdup(value, err);
    if (list == NULL)
        return -1;
    int rc = 0;
    char *save = NULL;
    for (char *item = strtok_r(list, ",", &save); item != NULL && rc == 0;
         item = strtok_r(NULL, ",", &save)) {
        if (cfg->sentinel_count == OSBQ_SENTINELS_MAX)
            rc = osbq_error_set(err, OSBQ_ERR_INVALID, "at most %d Sentinels", OSBQ_SENTINELS_MAX);
        else
            rc = parse_host_port(item, &cfg->sentinels[cfg->sentinel_count++], err);
    }
    free(list);
    if (rc == 0 && cfg->sentinel_count == 0)
        rc = osbq_error_set(err, OSBQ_ERR_INVALID, "\"%s\" names no host:port", value);
    return rc;
}

static int parse_master_name(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    if (value == NULL || value[0] == '\0')
        return 0;
    for (const char *p = value; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return osbq_error_set(err, OSBQ_ERR_INVALID, "no spaces or control characters");
    cfg->redis_master_name = xstrdup(value, err);
    return cfg->redis_master_name ? 0 : -1;
}

static int parse_redis_timeout(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    unsigned long n = 0;
    if (parse_uint(value, 10, 600000, &n, err) < 0)
        return -1;
    cfg->redis_timeout_ms = (unsigned)n;
    return 0;
}

static int parse_namespace(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    /* Only characters that need no escaping in keys or SCAN patterns: the namespace must never
     * match another stack's keys. */
    size_t len = strlen(value);
    if (len == 0 || len > 64)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "must be 1 to 64 characters");
    for (size_t i = 0; i < len; i++) {
        char c = value[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
        if (!ok)
            return osbq_error_set(err, OSBQ_ERR_INVALID,
                                  "\"%s\": only letters, digits, '-', '_' and '.' are allowed",
                                  value);
    }
    cfg->namespace_ = xstrdup(value, err);
    return cfg->namespace_ ? 0 : -1;
}

static int parse_catalog(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    if (value[0] == '\0')
        return osbq_error_set(err, OSBQ_ERR_INVALID, "empty path");
    cfg->catalog_path = xstrdup(value, err);
    return cfg->catalog_path ? 0 : -1;
}

static int parse_tenant_key(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    static const struct {
        const char *name;
        enum osbq_tenant_scope scope;
    } scopes[] = {{"platform", OSBQ_TENANT_PLATFORM},
                  {"organization", OSBQ_TENANT_ORGANIZATION},
                  {"space", OSBQ_TENANT_SPACE}};
    for (size_t i = 0; i < sizeof scopes / sizeof scopes[0]; i++)
        if (strcmp(value, scopes[i].name) == 0) {
            cfg->tenant_scope = scopes[i].scope;
            return 0;
        }
    return osbq_error_set(err, OSBQ_ERR_INVALID,
                          "\"%s\" is not one of platform, organization, space", value);
}

static int parse_log_level(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    if (osbq_log_level_parse(value, &cfg->log_level) < 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "\"%s\" is not one of error, warn, info, debug", value);
    return 0;
}

static int parse_log_format(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    if (osbq_log_format_parse(value, &cfg->log_format) < 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "\"%s\" is not one of logfmt, json", value);
    return 0;
}

static int parse_listen(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    return parse_host_port(value, &cfg->listen, err);
}

static int parse_http_threads(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    unsigned long n = 0;
    if (parse_uint(value, 0, 256, &n, err) < 0)
        return -1;
    if (n == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (unsigned long)cores : 1;
    }
    cfg->http_threads = (unsigned)n;
    return 0;
}

static int parse_max_body(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    unsigned long n = 0;
    if (parse_uint(value, 1024, 64ul * 1024 * 1024, &n, err) < 0)
        return -1;
    cfg->max_body_bytes = n;
    return 0;
}

static int parse_credential(char **out, const char *value, const char *what, bool no_colon,
                            struct osbq_error *err)
{
    if (value == NULL)
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "required: the gateway refuses to start "
                              "without broker credentials");
    if (value[0] == '\0')
        return osbq_error_set(err, OSBQ_ERR_INVALID, "empty %s", what);
    if (no_colon && strchr(value, ':') != NULL)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "a basic-auth user name cannot contain ':'");
    *out = xstrdup(value, err);
    return *out ? 0 : -1;
}

/* With OSBQ_PLATFORMS (parsed before them), the broker credentials are optional: set, they make
 * one more platform, "default" (docs/platforms.md); the pair is checked after loading. */
static int parse_username(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    if (value == NULL && cfg->platforms_path != NULL)
        return 0;
    return parse_credential(&cfg->broker_username, value, "user name", true, err);
}

static int parse_password(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    if (value == NULL && cfg->platforms_path != NULL)
        return 0;
    return parse_credential(&cfg->broker_password, value, "password", false, err);
}

/* Optional metrics credentials: unset (NULL) leaves /metrics open; the pair is checked after
 * loading, since either may come first. */
static int parse_metrics_username(struct osbq_config *cfg, const char *value,
                                  struct osbq_error *err)
{
    return value == NULL ? 0
                         : parse_credential(&cfg->metrics_username, value, "user name", true, err);
}

static int parse_metrics_password(struct osbq_config *cfg, const char *value,
                                  struct osbq_error *err)
{
    return value == NULL ? 0
                         : parse_credential(&cfg->metrics_password, value, "password", false, err);
}

static int parse_metrics_listen(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    return value == NULL || value[0] == '\0' ? 0
                                             : parse_host_port(value, &cfg->metrics_listen, err);
}

/* An optional path that must name a readable file (directory when dir is set) at start-up, so a
 * typo stops the process here instead of at the first request or reload. */
static int parse_path(char **out, const char *value, bool dir, struct osbq_error *err)
{
    if (value == NULL || value[0] == '\0')
        return 0;
    struct stat st;
    if (stat(value, &st) < 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "cannot read %s: %s", value, strerror(errno));
    if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        return osbq_error_set(err, OSBQ_ERR_INVALID, "%s is not a %s", value,
                              dir ? "directory" : "regular file");
    if (access(value, dir ? R_OK | X_OK : R_OK) < 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID, "cannot read %s: %s", value, strerror(errno));
    *out = xstrdup(value, err);
    return *out ? 0 : -1;
}

/* Parsers of optional paths: the field, and whether it names a directory. */
#define PATH_SETTING(fn, field, dir)                                                               \
    static int fn(struct osbq_config *cfg, const char *value, struct osbq_error *err)              \
    {                                                                                              \
        return parse_path(&cfg->field, value, dir, err);                                           \
    }

PATH_SETTING(parse_tls_cert, tls_cert_path, false)
PATH_SETTING(parse_tls_key, tls_key_path, false)
PATH_SETTING(parse_secret_key_file, secret_key_file, false)
PATH_SETTING(parse_bus_server_cert, bus_server_cert, false)
PATH_SETTING(parse_bus_client_cert, bus_client_cert, false)
PATH_SETTING(parse_bus_clients_dir, bus_clients_dir, true)
PATH_SETTING(parse_policy, policy_path, false)
PATH_SETTING(parse_platforms, platforms_path, false)

static int parse_max_header(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    unsigned long n = 0;
    if (parse_uint(value, 1024, 1024ul * 1024, &n, err) < 0)
        return -1;
    cfg->max_header_bytes = n;
    return 0;
}

static int parse_bus_bind(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    if (strncmp(value, "tcp://", 6) != 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "\"%s\": expected a ZeroMQ tcp://host:port endpoint", value);
    struct osbq_listen_addr addr = {0};
    if (parse_host_port(value + 6, &addr, err) < 0)
        return -1;
    free(addr.host);
    cfg->bus_port = addr.port;
    cfg->bus_bind = xstrdup(value, err);
    return cfg->bus_bind ? 0 : -1;
}

/* True for addresses that mean "every interface": nobody can connect to them. */
static bool is_wildcard_host(const char *host)
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

/* Unset: workers reach this gateway by its host name when it binds every interface, and by the
 * bound address otherwise (a gateway bound to 127.0.0.1 is not reachable by its host name). */
static int parse_bus_advertise(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    char buf[512];
    if (value == NULL) {
        struct osbq_listen_addr bind = {0};
        if (parse_host_port(cfg->bus_bind + 6, &bind, err) < 0)
            return -1;
        char host[256];
        if (is_wildcard_host(bind.host)) {
            if (gethostname(host, sizeof host) < 0) {
                free(bind.host);
                return osbq_error_set(err, OSBQ_ERR_INVALID, "cannot read the host name: %s",
                                      strerror(errno));
            }
            host[sizeof host - 1] = '\0';
        } else {
            (void)snprintf(host, sizeof host, strchr(bind.host, ':') ? "[%s]" : "%s", bind.host);
        }
        free(bind.host);
        (void)snprintf(buf, sizeof buf, "tcp://%s:%u", host, (unsigned)cfg->bus_port);
        value = buf;
    }
    if (strncmp(value, "tcp://", 6) != 0)
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "\"%s\": expected a ZeroMQ tcp://host:port endpoint", value);
    struct osbq_listen_addr addr = {0};
    if (parse_host_port(value + 6, &addr, err) < 0)
        return -1;
    bool wildcard = is_wildcard_host(addr.host);
    free(addr.host);
    if (wildcard)
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "\"%s\": workers cannot connect to a wildcard address", value);
    cfg->bus_advertise = xstrdup(value, err);
    return cfg->bus_advertise ? 0 : -1;
}

static int parse_concurrency(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    unsigned long n = 0;
    if (parse_uint(value, 1, 1024, &n, err) < 0)
        return -1;
    cfg->worker_concurrency = (unsigned)n;
    return 0;
}

/* Parsers of plain unsigned settings: the field and its bounds. */
#define UINT_SETTING(fn, field, min, max)                                                          \
    static int fn(struct osbq_config *cfg, const char *value, struct osbq_error *err)              \
    {                                                                                              \
        unsigned long n = 0;                                                                       \
        if (parse_uint(value, min, max, &n, err) < 0)                                              \
            return -1;                                                                             \
        cfg->field = (unsigned)n;                                                                  \
        return 0;                                                                                  \
    }

UINT_SETTING(parse_retention, retention_s, 60, 31536000)
UINT_SETTING(parse_lease, lease_ms, 1000, 3600000)
UINT_SETTING(parse_exec_concurrency, worker_exec_concurrency, 1, 65536)
UINT_SETTING(parse_retry_after_min, retry_after_min_s, 1, 3600)
UINT_SETTING(parse_retry_after_max, retry_after_max_s, 1, 86400)
UINT_SETTING(parse_max_waiters, max_waiters, 1, 1000000)
UINT_SETTING(parse_max_queued_jobs, max_queued_jobs, 1, 10000000)
UINT_SETTING(parse_claim_timeout, claim_timeout_ms, 100, 3600000)
UINT_SETTING(parse_max_attempts, max_attempts, 1, 100)
UINT_SETTING(parse_recovery_interval, recovery_interval_ms, 50, 60000)
UINT_SETTING(parse_shutdown_grace, shutdown_grace_ms, 0, 3600000)
UINT_SETTING(parse_max_connections, max_connections, 16, 1000000)
UINT_SETTING(parse_max_connections_per_ip, max_connections_per_ip, 0, 1000000)
UINT_SETTING(parse_http_idle_timeout, http_idle_timeout_s, 1, 86400)
UINT_SETTING(parse_redis_min_acks, redis_min_acks, 0, 16)
UINT_SETTING(parse_redis_ack_timeout, redis_ack_timeout_ms, 10, 60000)

/* The one table of variables; order matters where a default derives from an earlier value. */
static const struct config_var config_vars[] = {
    {"OSBQ_REDIS_URL", OSBQ_ROLE_ALL, "redis://127.0.0.1:6379/0", NULL, true, parse_redis_url,
     "redis://[user:password@]host:port[/db] of the Redis that holds all state"},
    {"OSBQ_REDIS_TIMEOUT_MS", OSBQ_ROLE_ALL, "2000", NULL, false, parse_redis_timeout,
     "timeout of a Redis connect or command, in ms"},
    {"OSBQ_REDIS_SENTINELS", OSBQ_ROLE_ALL, NULL, "none (OSBQ_REDIS_URL names the primary)", false,
     parse_sentinels, "host:port,host:port of Redis Sentinels that know the primary"},
    {"OSBQ_REDIS_MASTER_NAME", OSBQ_ROLE_ALL, NULL, "none", false, parse_master_name,
     "the Sentinels' name of the primary (set with OSBQ_REDIS_SENTINELS)"},
    {"OSBQ_REDIS_MIN_ACKS", OSBQ_ROLE_BOTH, "0", "0 (answer once the primary has it)", false,
     parse_redis_min_acks,
     "replicas that must hold an acceptance or an outcome before it counts (Redis WAIT)"},
    {"OSBQ_REDIS_ACK_TIMEOUT_MS", OSBQ_ROLE_BOTH, "1000", NULL, false, parse_redis_ack_timeout,
     "how long to wait for OSBQ_REDIS_MIN_ACKS replicas; then 503 (gateway) or wait again "
     "(worker), in ms"},
    {"OSBQ_NAMESPACE", OSBQ_ROLE_ALL, "osbq", NULL, false, parse_namespace,
     "prefix of every Redis key, so several stacks can share one Redis"},
    {"OSBQ_CATALOG", OSBQ_ROLE_ALL, OSBQ_DEFAULT_CATALOG, NULL, false, parse_catalog,
     "path of the catalog JSON"},
    {"OSBQ_LOG_LEVEL", OSBQ_ROLE_ALL, "info", NULL, false, parse_log_level,
     "error, warn, info or debug"},
    {"OSBQ_LOG_FORMAT", OSBQ_ROLE_ALL, "logfmt", NULL, false, parse_log_format,
     "logfmt (key=value) or json (one object per line, the same fields)"},
    {"OSBQ_LISTEN", OSBQ_ROLE_GATEWAY, "0.0.0.0:8080", NULL, false, parse_listen,
     "host:port of the HTTP API"},
    {"OSBQ_HTTP_THREADS", OSBQ_ROLE_GATEWAY, "0", "0 (number of cores)", false, parse_http_threads,
     "HTTP threads (libmicrohttpd's epoll thread pool)"},
    {"OSBQ_MAX_CONNECTIONS", OSBQ_ROLE_GATEWAY, "4096", NULL, false, parse_max_connections,
     "HTTP connections open at once; more are refused at accept"},
    {"OSBQ_MAX_CONNECTIONS_PER_IP", OSBQ_ROLE_GATEWAY, "0", "0 (no limit)", false,
     parse_max_connections_per_ip,
     "HTTP connections one client address may hold (behind a load balancer: leave 0)"},
    {"OSBQ_HTTP_IDLE_TIMEOUT_S", OSBQ_ROLE_GATEWAY, "60", NULL, false, parse_http_idle_timeout,
     "a connection idle (or sending nothing) this long is closed"},
    {"OSBQ_MAX_BODY_BYTES", OSBQ_ROLE_GATEWAY, "1048576", NULL, false, parse_max_body,
     "largest request body accepted; larger ones get 413"},
    {"OSBQ_MAX_HEADER_BYTES", OSBQ_ROLE_GATEWAY, "16384", NULL, false, parse_max_header,
     "largest request line plus headers; larger ones get 431"},
    {"OSBQ_TLS_CERT", OSBQ_ROLE_GATEWAY, NULL, "none (plain HTTP)", false, parse_tls_cert,
     "PEM certificate chain of the HTTPS API (set with OSBQ_TLS_KEY); reread on SIGHUP"},
    {"OSBQ_TLS_KEY", OSBQ_ROLE_GATEWAY, NULL, "none (plain HTTP)", false, parse_tls_key,
     "PEM private key of OSBQ_TLS_CERT; reread on SIGHUP"},
    {"OSBQ_PLATFORMS", OSBQ_ROLE_GATEWAY, NULL, "none (one platform: OSBQ_BROKER_USERNAME)", false,
     parse_platforms,
     "JSON file of the platforms served: credentials, URL prefix, services (docs/platforms.md)"},
    {"OSBQ_BROKER_USERNAME", OSBQ_ROLE_GATEWAY, NULL, "none (required)", true, parse_username,
     "basic-auth user name platforms use"},
    {"OSBQ_BROKER_PASSWORD", OSBQ_ROLE_GATEWAY, NULL, "none (required)", true, parse_password,
     "basic-auth password platforms use"},
    {"OSBQ_BUS_BIND", OSBQ_ROLE_GATEWAY, "tcp://0.0.0.0:5555", NULL, false, parse_bus_bind,
     "ZeroMQ endpoint the gateway binds for jobs"},
    {"OSBQ_BUS_ADVERTISE", OSBQ_ROLE_GATEWAY, NULL, "tcp://<hostname>:<port of OSBQ_BUS_BIND>",
     false, parse_bus_advertise, "endpoint workers connect to, published in Redis"},
    {"OSBQ_BUS_CURVE_SERVER_CERT", OSBQ_ROLE_BOTH, NULL, "none (bus not authenticated)", false,
     parse_bus_server_cert,
     "the gateways' CurveZMQ certificate (gateway: secret file; worker: public file)"},
    {"OSBQ_BUS_CURVE_CLIENT_CERT", OSBQ_ROLE_WORKER, NULL, "none (bus not authenticated)", false,
     parse_bus_client_cert, "the worker's CurveZMQ secret certificate"},
    {"OSBQ_BUS_CURVE_CLIENTS_DIR", OSBQ_ROLE_GATEWAY, NULL, "none (bus not authenticated)", false,
     parse_bus_clients_dir, "directory of the public certificates of workers allowed on the bus"},
    {"OSBQ_POLICY", OSBQ_ROLE_GATEWAY | OSBQ_ROLE_CTL, NULL, "none (no quotas or deny rules)",
     false, parse_policy, "JSON file of instance quotas and deny rules (docs/policies.md)"},
    {"OSBQ_SECRET_KEY_FILE", OSBQ_ROLE_ALL, NULL, "none (credentials stored in plaintext)", false,
     parse_secret_key_file,
     "keys for binding credentials at rest: 64 hex characters a line, the first encrypts"},
    {"OSBQ_WORKER_CONCURRENCY", OSBQ_ROLE_WORKER, "16", NULL, false, parse_concurrency,
     "jobs one worker runs at once"},
    {"OSBQ_WORKER_EXEC_CONCURRENCY", OSBQ_ROLE_WORKER, "256", NULL, false, parse_exec_concurrency,
     "exec programs one worker runs at once; more wait their turn"},
    {"OSBQ_RETENTION_S", OSBQ_ROLE_ALL, "604800", "604800 (7 days)", false, parse_retention,
     "how long finished operations and deleted records stay answerable, in s"},
    {"OSBQ_LEASE_MS", OSBQ_ROLE_WORKER, "15000", NULL, false, parse_lease,
     "lease a worker holds on a running operation, renewed while it runs, in ms"},
    {"OSBQ_RETRY_AFTER_MIN_S", OSBQ_ROLE_GATEWAY, "2", NULL, false, parse_retry_after_min,
     "smallest Retry-After sent with an operation in progress, in s"},
    {"OSBQ_RETRY_AFTER_MAX_S", OSBQ_ROLE_GATEWAY, "60", NULL, false, parse_retry_after_max,
     "largest Retry-After sent with an operation in progress, in s"},
    {"OSBQ_MAX_WAITERS", OSBQ_ROLE_GATEWAY, "10000", NULL, false, parse_max_waiters,
     "synchronous requests one gateway holds while their workers run; more get 503"},
    {"OSBQ_MAX_QUEUED_JOBS", OSBQ_ROLE_GATEWAY, "100000", NULL, false, parse_max_queued_jobs,
     "jobs one gateway holds in memory while no worker has a free slot"},
    {"OSBQ_CLAIM_TIMEOUT_MS", OSBQ_ROLE_GATEWAY, "10000", NULL, false, parse_claim_timeout,
     "a job no worker claimed within this time is sent again (while workers are connected)"},
    {"OSBQ_MAX_ATTEMPTS", OSBQ_ROLE_GATEWAY, "5", NULL, false, parse_max_attempts,
     "claims of an operation whose worker died or hung before it is marked failed"},
    {"OSBQ_TENANT_KEY", OSBQ_ROLE_GATEWAY, "organization", NULL, false, parse_tenant_key,
     "what a tenant is, whose work the workers share fairly with others': platform, "
     "organization (platform + Cloud Foundry organization or Kubernetes namespace) or space"},
    {"OSBQ_RECOVERY_INTERVAL_MS", OSBQ_ROLE_GATEWAY, "1000", NULL, false, parse_recovery_interval,
     "how often each gateway looks for operations to resend"},
    {"OSBQ_SHUTDOWN_GRACE_MS", OSBQ_ROLE_BOTH, "10000", NULL, false, parse_shutdown_grace,
     "on SIGTERM, how long running requests and jobs get to finish"},
    {"OSBQ_METRICS_USERNAME", OSBQ_ROLE_BOTH, NULL, "none (/metrics needs no auth)", true,
     parse_metrics_username, "basic-auth user name for GET /metrics (set with the password)"},
    {"OSBQ_METRICS_PASSWORD", OSBQ_ROLE_BOTH, NULL, "none (/metrics needs no auth)", true,
     parse_metrics_password, "basic-auth password for GET /metrics"},
    {"OSBQ_METRICS_LISTEN", OSBQ_ROLE_WORKER, NULL, "none (no metrics endpoint)", false,
     parse_metrics_listen, "host:port where the worker serves GET /metrics and /healthz"},
};

static const char *lookup_getenv(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

/* Reads a secret from path: at most SECRET_FILE_MAX bytes, one trailing newline removed. */
static char *read_secret_file(const char *path, struct osbq_error *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = calloc(1, SECRET_FILE_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    size_t n = fread(buf, 1, SECRET_FILE_MAX + 1, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || n > SECRET_FILE_MAX || memchr(buf, '\0', n) != NULL) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "%s: %s", path,
                       failed ? "read error" : "not a small text file");
        free(buf);
        return NULL;
    }
    if (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    if (n > 0 && buf[n - 1] == '\r')
        buf[--n] = '\0';
    return buf;
}

int osbq_config_load(struct osbq_config *cfg, enum osbq_role role, osbq_config_getenv_fn lookup,
                     void *ctx, struct osbq_error *err)
{
    struct osbq_config loaded = {0};
    if (lookup == NULL)
        lookup = lookup_getenv;
    for (size_t i = 0; i < sizeof config_vars / sizeof config_vars[0]; i++) {
        const struct config_var *var = &config_vars[i];
        if ((var->role & role) == 0)
            continue;
        const char *value = lookup(var->name, ctx);
        const char *name = var->name;
        char file_name[64];
        char *from_file = NULL;
        if (var->file_variant) {
            (void)snprintf(file_name, sizeof file_name, "%s_FILE", var->name);
            const char *path = lookup(file_name, ctx);
            if (path != NULL && value != NULL) {
                osbq_error_set(err, OSBQ_ERR_INVALID, "%s: set either %s or %s, not both",
                               var->name, var->name, file_name);
                goto fail;
            }
            if (path != NULL) {
                name = file_name;
                from_file = read_secret_file(path, err);
                if (from_file == NULL) {
                    osbq_error_prefix(err, "%s", name);
                    goto fail;
                }
                value = from_file;
            }
        }
        if (value == NULL)
            value = var->default_value;
        int rc = var->parse(&loaded, value, err);
        if (from_file != NULL) {
            memset(from_file, 0, strlen(from_file));
            free(from_file);
        }
        if (rc < 0) {
            osbq_error_prefix(err, "%s", name);
            goto fail;
        }
    }
    if ((loaded.metrics_username == NULL) != (loaded.metrics_password == NULL)) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "%s: set both OSBQ_METRICS_USERNAME and "
                       "OSBQ_METRICS_PASSWORD, or neither",
                       loaded.metrics_username ? "OSBQ_METRICS_PASSWORD" : "OSBQ_METRICS_USERNAME");
        goto fail;
    }
    if ((loaded.sentinel_count == 0) != (loaded.redis_master_name == NULL)) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "%s: set both OSBQ_REDIS_SENTINELS and OSBQ_REDIS_MASTER_NAME, or neither",
                       loaded.sentinel_count ? "OSBQ_REDIS_MASTER_NAME" : "OSBQ_REDIS_SENTINELS");
        goto fail;
    }
    if ((loaded.broker_username == NULL) != (loaded.broker_password == NULL)) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "%s: set both OSBQ_BROKER_USERNAME and OSBQ_BROKER_PASSWORD, or neither "
                       "(with OSBQ_PLATFORMS)",
                       loaded.broker_username ? "OSBQ_BROKER_PASSWORD" : "OSBQ_BROKER_USERNAME");
        goto fail;
    }
    if ((loaded.tls_cert_path == NULL) != (loaded.tls_key_path == NULL)) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "%s: set both OSBQ_TLS_CERT and OSBQ_TLS_KEY, or neither",
                       loaded.tls_cert_path ? "OSBQ_TLS_KEY" : "OSBQ_TLS_CERT");
        goto fail;
    }
    if ((role & OSBQ_ROLE_GATEWAY) &&
        (loaded.bus_server_cert == NULL) != (loaded.bus_clients_dir == NULL)) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "%s: set both OSBQ_BUS_CURVE_SERVER_CERT and OSBQ_BUS_CURVE_CLIENTS_DIR, or "
                       "neither",
                       loaded.bus_server_cert ? "OSBQ_BUS_CURVE_CLIENTS_DIR"
                                              : "OSBQ_BUS_CURVE_SERVER_CERT");
        goto fail;
    }
    if ((role & OSBQ_ROLE_WORKER) &&
        (loaded.bus_server_cert == NULL) != (loaded.bus_client_cert == NULL)) {
        osbq_error_set(err, OSBQ_ERR_INVALID,
                       "%s: set both OSBQ_BUS_CURVE_SERVER_CERT and OSBQ_BUS_CURVE_CLIENT_CERT, or "
                       "neither",
                       loaded.bus_server_cert ? "OSBQ_BUS_CURVE_CLIENT_CERT"
                                              : "OSBQ_BUS_CURVE_SERVER_CERT");
        goto fail;
    }
    *cfg = loaded;
    return 0;
fail:
    osbq_config_clear(&loaded);
    return -1;
}

static void free_secret(char **sp)
{
    if (*sp != NULL) {
        memset(*sp, 0, strlen(*sp));
        free(*sp);
        *sp = NULL;
    }
}

void osbq_config_clear(struct osbq_config *cfg)
{
    osbq_redis_addr_clear(&cfg->redis);
    free(cfg->namespace_);
    free(cfg->catalog_path);
    free(cfg->listen.host);
    free_secret(&cfg->broker_username);
    free_secret(&cfg->broker_password);
    free(cfg->bus_bind);
    free(cfg->bus_advertise);
    free_secret(&cfg->metrics_username);
    free_secret(&cfg->metrics_password);
    free(cfg->metrics_listen.host);
    for (size_t i = 0; i < cfg->sentinel_count; i++)
        free(cfg->sentinels[i].host);
    free(cfg->redis_master_name);
    free(cfg->tls_cert_path);
    free(cfg->tls_key_path);
    free(cfg->secret_key_file);
    free(cfg->bus_server_cert);
    free(cfg->bus_client_cert);
    free(cfg->bus_clients_dir);
    free(cfg->policy_path);
    free(cfg->platforms_path);
    memset(cfg, 0, sizeof *cfg);
}

void osbq_config_print_help(FILE *out, enum osbq_role role)
{
    fprintf(out, "Environment variables:\n");
    for (size_t i = 0; i < sizeof config_vars / sizeof config_vars[0]; i++) {
        const struct config_var *var = &config_vars[i];
        if ((var->role & role) == 0)
            continue;
        const char *def = var->default_help ? var->default_help : var->default_value;
        fprintf(out, "  %-24s %s\n  %-24s default: %s\n", var->name, var->help, "", def);
        if (var->file_variant)
            fprintf(out, "  %-24s (%s_FILE: path of a file holding it)\n", "", var->name);
    }
}

/* The variable's name, or its _FILE form (variant), in buf; false when it has none. */
static bool variable_name(const struct config_var *var, bool variant, char *buf, size_t size)
{
    if (variant && !var->file_variant)
        return false;
    int n = snprintf(buf, size, "%s%s", var->name, variant ? "_FILE" : "");
    return n > 0 && (size_t)n < size;
}

bool osbq_config_known(const char *name)
{
    char known[64];
    for (size_t i = 0; i < sizeof config_vars / sizeof config_vars[0]; i++)
        for (int variant = 0; variant < 2; variant++)
            if (variable_name(&config_vars[i], variant, known, sizeof known) &&
                strcmp(name, known) == 0)
                return true;
    return false;
}

/* Levenshtein distance of a and b, or limit + 1 when it exceeds limit or a name is too long
 * to compare. */
static size_t edit_distance(const char *a, const char *b, size_t limit)
{
    enum { longest = 64 };
    size_t la = strlen(a);
    size_t lb = strlen(b);
    if (la >= longest || lb >= longest || (la > lb ? la - lb : lb - la) > limit)
        return limit + 1;
    size_t row[longest + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t above = row[j];
            size_t best = diagonal + (a[i - 1] != b[j - 1]);
            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[lb];
}

const char *osbq_config_suggest(const char *name)
{
    const size_t limit = 2;
    const char *best = NULL;
    size_t best_distance = limit + 1;
    for (size_t i = 0; i < sizeof config_vars / sizeof config_vars[0]; i++) {
        /* A _FILE form is suggested as its variable: the caller adds the suffix if meant. */
        size_t d = edit_distance(name, config_vars[i].name, limit);
        if (d < best_distance) {
            best = config_vars[i].name;
            best_distance = d;
        }
    }
    return best;
}
