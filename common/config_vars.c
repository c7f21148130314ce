/* The table of OSBQ_* variables and each one's parser: what a value may be and which field of
 * struct osbq_config it sets. Generic values (numbers, addresses, URLs) are read by
 * config_values.c; the loader (config.c) walks the table. */
#include "config_vars.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_values.h"

#ifndef OSBQ_DEFAULT_CATALOG
#define OSBQ_DEFAULT_CATALOG "examples/catalog.json"
#endif

static char *xstrdup(const char *s, struct osbq_error *err)
{
    char *copy = strdup(s);
    if (copy == NULL)
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    return copy;
}

/* Parsers of plain unsigned settings: the field and its bounds. */
#define UINT_SETTING(fn, field, min, max)                                                          \
    static int fn(struct osbq_config *cfg, const char *value, struct osbq_error *err)              \
    {                                                                                              \
        unsigned long n = 0;                                                                       \
        if (osbq_parse_uint(value, min, max, &n, err) < 0)                                         \
            return -1;                                                                             \
        cfg->field = (unsigned)n;                                                                  \
        return 0;                                                                                  \
    }

UINT_SETTING(parse_redis_timeout, redis_timeout_ms, 10, 600000)
UINT_SETTING(parse_max_body, max_body_bytes, 1024, 64ul * 1024 * 1024)
UINT_SETTING(parse_max_header, max_header_bytes, 1024, 1024ul * 1024)
UINT_SETTING(parse_concurrency, worker_concurrency, 1, 1024)
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
UINT_SETTING(parse_counts_refresh, counts_refresh_s, 1, 3600)
UINT_SETTING(parse_events_max, events_max, 0, 100000000)
UINT_SETTING(parse_events_max_age, events_max_age_s, 0, 315360000)
UINT_SETTING(parse_shutdown_grace, shutdown_grace_ms, 0, 3600000)
UINT_SETTING(parse_max_connections, max_connections, 16, 1000000)
UINT_SETTING(parse_max_connections_per_ip, max_connections_per_ip, 0, 1000000)
UINT_SETTING(parse_http_idle_timeout, http_idle_timeout_s, 1, 86400)
UINT_SETTING(parse_redis_min_acks, redis_min_acks, 0, 16)
UINT_SETTING(parse_redis_ack_timeout, redis_ack_timeout_ms, 10, 60000)

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
            rc = osbq_listen_addr_parse(item, &cfg->sentinels[cfg->sentinel_count++], err);
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
    return osbq_listen_addr_parse(value, &cfg->listen, err);
}

static int parse_http_threads(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    unsigned long n = 0;
    if (osbq_parse_uint(value, 0, 256, &n, err) < 0)
        return -1;
    if (n == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (unsigned long)cores : 1;
    }
    cfg->http_threads = (unsigned)n;
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
    return value == NULL || value[0] == '\0'
               ? 0
               : osbq_listen_addr_parse(value, &cfg->metrics_listen, err);
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

static int parse_bus_bind(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    struct osbq_listen_addr addr = {0};
    if (osbq_tcp_endpoint_parse(value, &addr, err) < 0)
        return -1;
    free(addr.host);
    cfg->bus_port = addr.port;
    cfg->bus_bind = xstrdup(value, err);
    return cfg->bus_bind ? 0 : -1;
}

/* The endpoint workers reach this gateway at when OSBQ_BUS_ADVERTISE is unset: its host name when
 * it binds every interface, and the bound address otherwise (a gateway bound to 127.0.0.1 is not
 * reachable by its host name). */
static int default_advertise(const struct osbq_config *cfg, char *buf, size_t size,
                             struct osbq_error *err)
{
    struct osbq_listen_addr bind = {0};
    if (osbq_tcp_endpoint_parse(cfg->bus_bind, &bind, err) < 0)
        return -1;
    char host[256];
    if (osbq_host_is_wildcard(bind.host)) {
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
    (void)snprintf(buf, size, "tcp://%s:%u", host, (unsigned)cfg->bus_port);
    return 0;
}

static int parse_bus_advertise(struct osbq_config *cfg, const char *value, struct osbq_error *err)
{
    char buf[512];
    if (value == NULL) {
        if (default_advertise(cfg, buf, sizeof buf, err) < 0)
            return -1;
        value = buf;
    }
    struct osbq_listen_addr addr = {0};
    if (osbq_tcp_endpoint_parse(value, &addr, err) < 0)
        return -1;
    bool wildcard = osbq_host_is_wildcard(addr.host);
    free(addr.host);
    if (wildcard)
        return osbq_error_set(err, OSBQ_ERR_INVALID,
                              "\"%s\": workers cannot connect to a wildcard address", value);
    cfg->bus_advertise = xstrdup(value, err);
    return cfg->bus_advertise ? 0 : -1;
}

/* The one table of variables; order matters where a default derives from an earlier value. */
const struct osbq_config_var osbq_config_vars[] = {
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
     "keys for values at rest (binding credentials, request parameters and context, saved "
     "step states): 64 hex characters a line, the first encrypts"},
    {"OSBQ_WORKER_CONCURRENCY", OSBQ_ROLE_WORKER, "16", NULL, false, parse_concurrency,
     "jobs one worker runs at once"},
    {"OSBQ_WORKER_EXEC_CONCURRENCY", OSBQ_ROLE_WORKER, "256", NULL, false, parse_exec_concurrency,
     "exec programs one worker runs at once; more wait their turn"},
    {"OSBQ_EVENTS_MAX", OSBQ_ROLE_ALL, "1000000", NULL, false, parse_events_max,
     "events the audit trail keeps in Redis (about: whole blocks are trimmed); 0 writes none"},
    {"OSBQ_EVENTS_MAX_AGE_S", OSBQ_ROLE_GATEWAY, "7776000", "7776000 (90 days)", false,
     parse_events_max_age, "how long events stay in the audit trail, in s; 0 for no bound"},
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
    {"OSBQ_COUNTS_REFRESH_S", OSBQ_ROLE_GATEWAY, "60", NULL, false, parse_counts_refresh,
     "how often each gateway reads the count of live instances for its osbq_instances gauges, "
     "in s"},
    {"OSBQ_SHUTDOWN_GRACE_MS", OSBQ_ROLE_BOTH, "10000", NULL, false, parse_shutdown_grace,
     "on SIGTERM, how long running requests and jobs get to finish"},
    {"OSBQ_METRICS_USERNAME", OSBQ_ROLE_BOTH, NULL, "none (/metrics needs no auth)", true,
     parse_metrics_username, "basic-auth user name for GET /metrics (set with the password)"},
    {"OSBQ_METRICS_PASSWORD", OSBQ_ROLE_BOTH, NULL, "none (/metrics needs no auth)", true,
     parse_metrics_password, "basic-auth password for GET /metrics"},
    {"OSBQ_METRICS_LISTEN", OSBQ_ROLE_WORKER, NULL, "none (no metrics endpoint)", false,
     parse_metrics_listen, "host:port where the worker serves GET /metrics and /healthz"},
};

const size_t osbq_config_var_count = sizeof osbq_config_vars / sizeof osbq_config_vars[0];
