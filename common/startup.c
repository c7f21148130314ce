/* What both binaries do first: command line, signals, configuration and catalog. */
#include "startup.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_wipe.h"
#include "log.h"

/* The redis backend's default target variable (REDIS_DEFAULT_URL_ENV in
 * worker/backend_redis.c): read when a plan names none. */
#define REDIS_BACKEND_DEFAULT_URL_ENV "OSBQ_REDIS_TARGET_URL"

/* POSIX's process environment; unistd.h declares it only under _GNU_SOURCE. */
extern char **environ;

/* Whether a plan of catalog names `name` as the variable holding its backend's address. */
static bool catalog_reads(const struct osbq_catalog *catalog, const char *name)
{
    for (size_t i = 0; i < osbq_catalog_service_count(catalog); i++) {
        const struct osbq_service *service = osbq_catalog_service_at(catalog, i);
        for (size_t j = 0; j < service->plan_count; j++) {
            const char *env =
                json_string_value(json_object_get(service->plans[j].settings, "target_url_env"));
            if (env != NULL && strcmp(env, name) == 0)
                return true;
        }
    }
    return false;
}

/* Whether name looks like one of the variables Kubernetes adds for each Service of the
 * namespace (service links: OSBQ_REDIS_SERVICE_HOST, OSBQ_REDIS_PORT_6379_TCP_ADDR, ...). */
static bool service_link(const char *name)
{
    size_t len = strlen(name);
    const char *port = strstr(name, "_PORT_");
    return strstr(name, "_SERVICE_HOST") != NULL || strstr(name, "_SERVICE_PORT") != NULL ||
           (len > 5 && strcmp(name + len - 5, "_PORT") == 0) ||
           (port != NULL && port[6] >= '0' && port[6] <= '9');
}

/* Warns once for each OSBQ_ variable of the environment that nothing reads: most likely a
 * misspelt one, whose setting silently stays at its default otherwise. */
static void warn_unknown_variables(const struct osbq_catalog *catalog)
{
    for (char **entry = environ; *entry != NULL; entry++) {
        if (strncmp(*entry, "OSBQ_", 5) != 0)
            continue;
        char name[128];
        size_t len = strcspn(*entry, "=");
        if (len >= sizeof name)
            len = sizeof name - 1;
        memcpy(name, *entry, len);
        name[len] = '\0';
        if (osbq_config_known(name) || strcmp(name, REDIS_BACKEND_DEFAULT_URL_ENV) == 0 ||
            catalog_reads(catalog, name) || service_link(name))
            continue;
        const char *closest = osbq_config_suggest(name);
        if (closest != NULL)
            log_warnx("%s is set but no osbq variable has that name: did you mean %s?", name,
                      closest);
        else
            log_warnx("%s is set but no osbq variable has that name", name);
    }
}

static void usage(const struct osbq_startup *s, FILE *out)
{
    fprintf(out,
            "usage: %s [--help | --version]\n%s\nIt is configured through the environment "
            "only.\n\n",
            s->prog, s->about);
    osbq_config_print_help(out, s->role);
    if (s->role & OSBQ_ROLE_WORKER)
        fprintf(out,
                "\nRead by the backends (docs/backends.md):\n"
                "  %-24s redis backend: redis://[user:password@]host:port[/db] of the Redis\n"
                "  %-24s the plans' instances live on (a plan's osbq.target_url_env names\n"
                "  %-24s another variable instead)\n"
                "  %-24s exec backend: its programs get the worker's environment without any\n"
                "  %-24s OSBQ_* variable, plus the plan's osbq.env (the PostgreSQL example\n"
                "  %-24s reads PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE)\n",
                REDIS_BACKEND_DEFAULT_URL_ENV, "", "", "(exec programs)", "", "");
}

/* Handles the command line: --help/-h and --version print and exit 0; anything else but no
 * argument prints the usage and exits 2. */
static void handle_args(const struct osbq_startup *s, int argc, char **argv)
{
    if (argc == 1)
        return;
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(s, stdout);
        exit(0);
    }
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("%s %s\n", s->prog, s->version);
        exit(0);
    }
    usage(s, stderr);
    exit(2);
}

/* Blocks SIGINT, SIGTERM and SIGHUP (call before any thread starts, so every thread inherits
 * the mask and only the main thread receives them) and ignores SIGPIPE. *stop gets SIGINT and
 * SIGTERM; SIGHUP stays pending unless the process waits for it (the gateway: TLS reload). */
static void block_signals(sigset_t *stop)
{
    sigemptyset(stop);
    sigaddset(stop, SIGINT);
    sigaddset(stop, SIGTERM);
    sigset_t blocked = *stop;
    /* SIGHUP's default action ends the process. Blocked in every thread, it does nothing
     * unless the process waits for it: the gateway does, to reread its TLS certificate. */
    sigaddset(&blocked, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &blocked, NULL);
    signal(SIGPIPE, SIG_IGN);
}

void osbq_startup_begin(const struct osbq_startup *s, int argc, char **argv, sigset_t *stop)
{
    handle_args(s, argc, argv);
    osbq_json_wipe_on_free();
    block_signals(stop);
}

void osbq_startup_die(const struct osbq_startup *s, const char *what, const struct osbq_error *err)
{
    fprintf(stderr, "%s: %s%s%s\n", s->prog, what ? what : "", what ? ": " : "", err->text);
    exit(1);
}

void osbq_startup_load(const struct osbq_startup *s, struct osbq_config *cfg,
                       struct osbq_catalog **catalog)
{
    struct osbq_error err = {0};
    if (osbq_config_load(cfg, s->role, NULL, NULL, &err) < 0)
        osbq_startup_die(s, NULL, &err);
    osbq_log_init(s->prog, cfg->log_level);
    osbq_log_set_format(cfg->log_format);
    if (osbq_catalog_load_file(cfg->catalog_path, catalog, &err) < 0) {
        char what[600];
        (void)snprintf(what, sizeof what, "OSBQ_CATALOG: %s", cfg->catalog_path);
        osbq_startup_die(s, what, &err);
    }
    warn_unknown_variables(*catalog);
}

void osbq_startup_redis_failed(const struct osbq_startup *s, const struct osbq_error *err)
{
    if (err->code == OSBQ_ERR_MISCONFIGURED)
        osbq_startup_die(s, "OSBQ_REDIS_URL", err);
    log_warnx("Redis is not reachable yet (%s); %s", err->text,
              s->role == OSBQ_ROLE_GATEWAY ? "/readyz fails until it is" : "jobs wait until it is");
}

struct osbq_secrets *osbq_startup_secrets(const struct osbq_startup *s,
                                          const struct osbq_config *cfg)
{
    if (cfg->secret_key_file == NULL)
        return NULL;
    struct osbq_error err = {0};
    struct osbq_secrets *secrets = osbq_secrets_load(cfg->secret_key_file, &err);
    if (secrets == NULL) {
        char what[600];
        (void)snprintf(what, sizeof what, "OSBQ_SECRET_KEY_FILE (%s)", cfg->secret_key_file);
        osbq_startup_die(s, what, &err);
    }
    return secrets;
}

void osbq_startup_secrets_report(const struct osbq_secrets *secrets)
{
    if (secrets == NULL)
        log_warnx("OSBQ_SECRET_KEY_FILE is not set: binding credentials are stored in Redis in "
                  "plaintext (docs/security.md)");
    else
        log_info("binding credentials are sealed with key %s (%zu keys in OSBQ_SECRET_KEY_FILE)",
                 osbq_secrets_current_id(secrets), osbq_secrets_count(secrets));
}
