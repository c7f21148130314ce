/* Configuration: every OSBQ_* environment variable, read once at start-up into a struct that is
 * passed down and never re-read. One table (config_vars.c) drives parsing, defaults and --help;
 * the loader is config.c, the parsers of plain values (numbers, addresses, URLs) config_values.c.
 */
#ifndef OSBQ_CONFIG_H
#define OSBQ_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config_values.h"
#include "error.h"
#include "log.h"

/* Which binary reads a variable. */
enum osbq_role {
    OSBQ_ROLE_GATEWAY = 1 << 0,
    OSBQ_ROLE_WORKER = 1 << 1,
    OSBQ_ROLE_BOTH = OSBQ_ROLE_GATEWAY | OSBQ_ROLE_WORKER,
    OSBQ_ROLE_CTL = 1 << 2, /* osbq-ctl: only what reaching Redis needs */
    OSBQ_ROLE_ALL = OSBQ_ROLE_BOTH | OSBQ_ROLE_CTL,
};

/* Most Sentinels OSBQ_REDIS_SENTINELS may list. */
#define OSBQ_SENTINELS_MAX 16

/* What names a tenant, whose work waits in a queue of its own (docs/reliability.md, fairness):
 * the platform alone, with the organization (Cloud Foundry's organization, Kubernetes'
 * namespace), or with the space too. */
enum osbq_tenant_scope {
    OSBQ_TENANT_PLATFORM,
    OSBQ_TENANT_ORGANIZATION,
    OSBQ_TENANT_SPACE,
};

/* Everything the binaries are configured with. Strings are owned (osbq_config_clear). */
struct osbq_config {
    struct osbq_redis_addr redis; /* OSBQ_REDIS_URL (with Sentinels: its host and port are
                                   * not used, its user, password and db are) */
    struct osbq_listen_addr sentinels[OSBQ_SENTINELS_MAX]; /* OSBQ_REDIS_SENTINELS */
    size_t sentinel_count;                                 /* 0: no Sentinel, OSBQ_REDIS_URL's
                                                            * host is the primary */
    char *redis_master_name;       /* OSBQ_REDIS_MASTER_NAME: the Sentinels' name of the primary */
    unsigned redis_timeout_ms;     /* OSBQ_REDIS_TIMEOUT_MS: connect and command timeout */
    unsigned redis_min_acks;       /* OSBQ_REDIS_MIN_ACKS (both): replicas that must hold an
                                    * acceptance or outcome (WAIT); 0: the primary alone */
    unsigned redis_ack_timeout_ms; /* OSBQ_REDIS_ACK_TIMEOUT_MS (both): WAIT's timeout */
    char *namespace_;              /* OSBQ_NAMESPACE: prefix of every Redis key */
    char *catalog_path;            /* OSBQ_CATALOG */
    enum osbq_log_level log_level; /* OSBQ_LOG_LEVEL */
    enum osbq_log_format log_format; /* OSBQ_LOG_FORMAT */
    struct osbq_listen_addr listen;  /* OSBQ_LISTEN (gateway) */
    unsigned http_threads;           /* OSBQ_HTTP_THREADS (gateway); 0 in the variable = cores */
    size_t max_body_bytes;           /* OSBQ_MAX_BODY_BYTES (gateway) */
    unsigned max_connections;        /* OSBQ_MAX_CONNECTIONS (gateway): open at once */
    unsigned max_connections_per_ip; /* OSBQ_MAX_CONNECTIONS_PER_IP (gateway); 0: no limit */
    unsigned http_idle_timeout_s;  /* OSBQ_HTTP_IDLE_TIMEOUT_S (gateway): idle connections close */
    char *broker_username;         /* OSBQ_BROKER_USERNAME[_FILE] (gateway); never logged */
    char *broker_password;         /* OSBQ_BROKER_PASSWORD[_FILE] (gateway); never logged */
    char *bus_bind;                /* OSBQ_BUS_BIND (gateway): a tcp:// ZeroMQ endpoint */
    uint16_t bus_port;             /* the port of bus_bind */
    char *bus_advertise;           /* OSBQ_BUS_ADVERTISE (gateway), defaulted from bus_bind */
    unsigned worker_concurrency;   /* OSBQ_WORKER_CONCURRENCY (worker) */
    unsigned retention_s;          /* OSBQ_RETENTION_S: how long finished records stay */
    unsigned lease_ms;             /* OSBQ_LEASE_MS (worker): lease on a running operation */
    unsigned retry_after_min_s;    /* OSBQ_RETRY_AFTER_MIN_S (gateway) */
    unsigned retry_after_max_s;    /* OSBQ_RETRY_AFTER_MAX_S (gateway) */
    unsigned max_waiters;          /* OSBQ_MAX_WAITERS (gateway): suspended sync requests */
    unsigned max_queued_jobs;      /* OSBQ_MAX_QUEUED_JOBS (gateway): jobs awaiting a worker */
    unsigned claim_timeout_ms;     /* OSBQ_CLAIM_TIMEOUT_MS (gateway): resend an unclaimed job */
    unsigned max_attempts;         /* OSBQ_MAX_ATTEMPTS (gateway): claims before giving up */
    unsigned recovery_interval_ms; /* OSBQ_RECOVERY_INTERVAL_MS (gateway) */
    unsigned counts_refresh_s;     /* OSBQ_COUNTS_REFRESH_S (gateway): the count's gauges */
    unsigned events_max;           /* OSBQ_EVENTS_MAX: the audit trail's entries; 0: none */
    unsigned events_max_age_s;     /* OSBQ_EVENTS_MAX_AGE_S (gateway): its age; 0: no bound */
    enum osbq_tenant_scope tenant_scope; /* OSBQ_TENANT_KEY (gateway): what a tenant is */
    unsigned shutdown_grace_ms;          /* OSBQ_SHUTDOWN_GRACE_MS: time to finish on SIGTERM */
    char *metrics_username; /* OSBQ_METRICS_USERNAME[_FILE]: /metrics basic auth, or NULL
                             * (then /metrics is open); never logged */
    char *metrics_password; /* OSBQ_METRICS_PASSWORD[_FILE]: set with the user name */
    struct osbq_listen_addr metrics_listen; /* OSBQ_METRICS_LISTEN (worker); host NULL: off */
    size_t max_header_bytes; /* OSBQ_MAX_HEADER_BYTES (gateway): request line + headers */
    char *tls_cert_path;     /* OSBQ_TLS_CERT (gateway): PEM chain, or NULL (plain HTTP) */
    char *tls_key_path;      /* OSBQ_TLS_KEY (gateway): PEM key; set with tls_cert_path */
    char *secret_key_file;   /* OSBQ_SECRET_KEY_FILE (both): credential keys, or NULL */
    char *bus_server_cert;   /* OSBQ_BUS_CURVE_SERVER_CERT (both): the gateways' CurveZMQ
                              * certificate (gateway: with its secret key; worker: the public
                              * one is enough), or NULL (bus not authenticated) */
    char *bus_client_cert;   /* OSBQ_BUS_CURVE_CLIENT_CERT (worker): its secret certificate */
    char *policy_path;       /* OSBQ_POLICY (gateway, ctl): quotas and deny rules, or NULL */
    char *platforms_path;    /* OSBQ_PLATFORMS (gateway): the platforms file, or NULL */
    char *bus_clients_dir;   /* OSBQ_BUS_CURVE_CLIENTS_DIR (gateway): public certificates of
                              * the workers allowed on the bus */
    /* OSBQ_WORKER_EXEC_CONCURRENCY (worker): exec programs one worker runs at once */
    unsigned worker_exec_concurrency;
};

/* Looks up one environment variable; returns NULL when unset. ctx is passed through. */
typedef const char *(*osbq_config_getenv_fn)(const char *name, void *ctx);

/* Reads and checks every variable that role uses, through lookup (getenv when NULL).
 * On success fills *cfg (caller clears it with osbq_config_clear) and returns 0. On the
 * first bad value returns -1, leaves *cfg untouched, and err->text names the variable and what is
 * wrong, e.g. "OSBQ_REDIS_URL: unsupported scheme \"http\" (expected redis://)". */
int osbq_config_load(struct osbq_config *cfg, enum osbq_role role, osbq_config_getenv_fn lookup,
                     void *ctx, struct osbq_error *err);

/* Frees the strings cfg owns and zeroes it; accepts a zeroed struct. */
void osbq_config_clear(struct osbq_config *cfg);

/* Prints the table of variables role reads (name, default, meaning) for --help. */
void osbq_config_print_help(FILE *out, enum osbq_role role);

/* Whether name is a variable some binary reads, or the _FILE form of one that has it. Every
 * role counts: a deployment gives the gateway and the workers the same environment. */
bool osbq_config_known(const char *name);

/* The known variable (as osbq_config_known) within two edits of name, the closest first in
 * table order; NULL when none is that close. For a warning about a misspelt variable. */
const char *osbq_config_suggest(const char *name);

#endif
