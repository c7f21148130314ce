/* osbq-worker: runs the jobs gateways send. For now it checks the configuration and the
 * catalog, keeps a Redis connection alive, and stops cleanly on SIGTERM or SIGINT. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus.h"
#include "catalog.h"
#include "config.h"
#include "log.h"
#include "store.h"

#define PROG "osbq-worker"

/* Redis reconnection backoff bounds. */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* How often a connected worker checks Redis is still there. */
#define HEALTH_INTERVAL_MS 5000

static void usage(FILE *out)
{
    fprintf(out, "usage: " PROG " [--help | --version]\n"
                 "The worker of osbq, an Open Service Broker: runs the jobs gateways send.\n"
                 "It is configured through the environment only.\n\n");
    osbq_config_print_help(out, OSBQ_ROLE_WORKER);
}

static void die(const char *what, const struct osbq_error *err)
{
    fprintf(stderr, PROG ": %s%s%s\n", what ? what : "", what ? ": " : "", err->text);
    exit(1);
}

/* Waits up to ms for a stop signal; returns it, or 0 when the time ran out. */
static int wait_for_signal(const sigset_t *signals, unsigned ms)
{
    struct timespec timeout = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    int signo = sigtimedwait(signals, NULL, &timeout);
    return signo > 0 ? signo : 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf(PROG " %s\n", OSBQ_VERSION);
        return 0;
    }
    if (argc != 1) {
        usage(stderr);
        return 2;
    }

    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct osbq_error err = {0};
    struct osbq_config cfg;
    if (osbq_config_load(&cfg, OSBQ_ROLE_WORKER, NULL, NULL, &err) < 0)
        die(NULL, &err);
    osbq_log_init(PROG, cfg.log_level);
    struct osbq_catalog *catalog = NULL;
    if (osbq_catalog_load_file(cfg.catalog_path, &catalog, &err) < 0) {
        char what[600];
        (void)snprintf(what, sizeof what, "OSBQ_CATALOG: %s", cfg.catalog_path);
        die(what, &err);
    }
    osbq_bus_init();
    struct osbq_store *store = osbq_store_new(&cfg);
    if (store == NULL)
        fatalx("out of memory");
    log_info("started: concurrency %u, catalog %s, redis %s:%u", cfg.worker_concurrency,
             cfg.catalog_path, cfg.redis.host, (unsigned)cfg.redis.port);

    /* Keep checking Redis, reconnecting with exponential backoff while it is away. */
    unsigned backoff = BACKOFF_MIN_MS;
    int reachable = -1;
    int signo = 0;
    while (signo == 0) {
        if (osbq_store_ping(store, &err) == 0) {
            if (reachable != 1)
                log_info("Redis reachable");
            reachable = 1;
            backoff = BACKOFF_MIN_MS;
            signo = wait_for_signal(&stop_signals, HEALTH_INTERVAL_MS);
        } else {
            if (reachable != 0)
                log_warnx("Redis unreachable (%s), retrying with backoff", err.text);
            reachable = 0;
            signo = wait_for_signal(&stop_signals, backoff);
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
        }
    }
    log_info("received %s, stopping", signo == SIGINT ? "SIGINT" : "SIGTERM");

    osbq_store_destroy(&store);
    osbq_catalog_destroy(&catalog);
    osbq_config_clear(&cfg);
    log_info("stopped");
    return 0;
}
