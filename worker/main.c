/* osbq-worker: connects to every live gateway, announces its free slots, hands the jobs it
 * receives to the runner, and on SIGTERM or SIGINT stops taking jobs, lets running ones finish
 * within OSBQ_SHUTDOWN_GRACE_MS, then releases the rest to other workers. The main thread owns
 * every ZeroMQ socket; runner threads only talk to Redis. */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "bus.h"
#include "bus_link.h"
#include "catalog.h"
#include "config.h"
#include "job.h"
#include "log.h"
#include "runner.h"
#include "startup.h"
#include "store.h"

#define PROG "osbq-worker"

/* Backoff of registry reads while Redis is away. */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* Random bytes at the end of the worker id, so a restarted process with a reused pid is
 * still a different worker. */
#define WORKER_ID_RANDOM_BYTES 4

/* The main thread's state: what its loop reads and the timers it keeps. */
struct worker {
    struct osbq_store *store;  /* borrowed: registry reads */
    struct runner *runner;     /* borrowed: where jobs go */
    struct bus_link *link;     /* borrowed: the gateway sockets */
    int signal_fd;             /* readable when SIGTERM or SIGINT arrived */
    unsigned announced;        /* free slots last announced; UINT_MAX forces an announce */
    int64_t next_heartbeat_ms; /* when READY goes out again even if nothing changed */
    int64_t next_registry_ms;  /* when the registry is read next */
    int64_t registry_backoff;  /* delay before the next read while reads fail */
    int registry_state;        /* -1 never read, 1 last read worked, 0 failing (logged) */
    unsigned grace_ms;         /* OSBQ_SHUTDOWN_GRACE_MS: time running jobs get to finish */
    bool stopping;             /* a stop signal arrived: no new jobs */
    bool hurried;              /* a second stop signal cut the grace short */
    int64_t stop_deadline_ms;  /* when running jobs get cancelled */
};

static const struct osbq_startup startup = {
    .prog = PROG,
    .version = OSBQ_VERSION,
    .about = "The worker of osbq, an Open Service Broker: runs the jobs gateways send.",
    .role = OSBQ_ROLE_WORKER,
};

static int64_t now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes "<hostname>-<pid>-<8 random hex>" into buf. Needs sodium_init. */
static void make_worker_id(char *buf, size_t size)
{
    char host[256];
    if (gethostname(host, sizeof host) < 0)
        (void)snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    unsigned char random[WORKER_ID_RANDOM_BYTES];
    char hex[2 * WORKER_ID_RANDOM_BYTES + 1];
    randombytes_buf(random, sizeof random);
    sodium_bin2hex(hex, sizeof hex, random, sizeof random);
    (void)snprintf(buf, size, "%s-%ld-%s", host, (long)getpid(), hex);
}

static unsigned free_slots(struct worker *w)
{
    return w->stopping ? 0 : runner_free_slots(w->runner);
}

/* Reads the live gateways and links to exactly those. While Redis fails the current links
 * stay, the failure is logged once, and reads back off. */
static void refresh_registry(struct worker *w, int64_t now)
{
    char **endpoints = NULL;
    size_t count = 0;
    struct osbq_error err = {0};
    if (osbq_store_gateway_list(w->store, &endpoints, &count, &err) < 0) {
        if (w->registry_state != 0)
            log_warnx("cannot read the gateway registry (%s); keeping the %zu gateway "
                      "connections, retrying with backoff",
                      err.text, bus_link_count(w->link));
        w->registry_state = 0;
        w->next_registry_ms = now + w->registry_backoff;
        w->registry_backoff =
            w->registry_backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : w->registry_backoff * 2;
        return;
    }
    if (w->registry_state != 1)
        log_info("Redis reachable: %zu gateways registered", count);
    w->registry_state = 1;
    w->registry_backoff = BACKOFF_MIN_MS;
    w->next_registry_ms = now + OSBQ_BUS_REGISTRY_RENEW_MS;
    bus_link_sync(w->link, endpoints, count, free_slots(w));
    osbq_store_strings_free(endpoints);
}

/* A JOB from a gateway: to the runner when a slot is free, else back to that gateway. */
static void on_job(void *ctx, zsock_t *dealer, const char *endpoint, const void *data, size_t len)
{
    struct worker *w = ctx;
    struct osbq_job job = {0};
    char reason[256];
    if (osbq_job_decode(data, len, &job, reason, sizeof reason) < 0) {
        log_warnx("gateway %s: undecodable job (%s), dropping it", endpoint, reason);
        return;
    }
    if (runner_submit(w->runner, &job) == 0)
        return;
    /* The gateway sent more than the last READY allowed (the two crossed), or we are
     * stopping: it gives the job to another worker. */
    if (osbq_bus_send_reject(dealer, data, len) < 0)
        log_warnx("operation %s: no free slot and gateway %s cannot take the job back (%s); "
                  "it will be resent from Redis",
                  job.operation_id, endpoint, zmq_strerror(zmq_errno()));
    else
        log_debug("operation %s: no free slot, job handed back to %s", job.operation_id, endpoint);
    osbq_job_clear(&job);
}

static void on_signal(struct worker *w, int64_t now)
{
    struct signalfd_siginfo info;
    if (read(w->signal_fd, &info, sizeof info) != (ssize_t)sizeof info)
        return;
    const char *name = info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
    if (w->stopping) {
        log_warnx("received %s again, cancelling the running jobs now", name);
        w->hurried = true;
        w->stop_deadline_ms = now;
        return;
    }
    log_info("received %s, stopping: no new jobs, %u running get %u ms to finish", name,
             runner_holding(w->runner), w->grace_ms);
    w->stopping = true;
    w->stop_deadline_ms = now + w->grace_ms;
    w->announced = UINT_MAX;
    runner_close(w->runner);
}

/* The main loop: registry, credits, jobs, signals. Returns once stopping and either no job
 * holds an operation any more (backends abandoned past their deadline are not waited for) or
 * the grace period is over (the caller then cancels and releases what is left). */
static void run(struct worker *w)
{
    for (;;) {
        int64_t now = now_ms();
        if (!w->stopping && now >= w->next_registry_ms)
            refresh_registry(w, now);
        unsigned free_now = free_slots(w);
        if (free_now != w->announced || now >= w->next_heartbeat_ms) {
            bus_link_announce(w->link, free_now);
            w->announced = free_now;
            w->next_heartbeat_ms = now + OSBQ_BUS_HEARTBEAT_MS;
        }
        int64_t next = w->next_heartbeat_ms;
        if (w->stopping) {
            unsigned holding = runner_holding(w->runner);
            if (holding == 0)
                return;
            if (now >= w->stop_deadline_ms) {
                if (w->hurried)
                    log_warnx("%u jobs still running, cancelling them and releasing their "
                              "operations to other workers",
                              holding);
                else
                    log_warnx("%u jobs still running after the %u ms grace, cancelling them and "
                              "releasing their operations to other workers",
                              holding, w->grace_ms);
                return;
            }
            if (w->stop_deadline_ms < next)
                next = w->stop_deadline_ms;
        } else if (w->next_registry_ms < next) {
            next = w->next_registry_ms;
        }

        /* Sleep until the next timer, a job ending, a message or a signal: no busy loop. */
        zmq_pollitem_t extra[2] = {
            {.fd = w->signal_fd, .events = ZMQ_POLLIN},
            {.fd = runner_event_fd(w->runner), .events = ZMQ_POLLIN},
        };
        long timeout = next > now ? (long)(next - now) : 0;
        if (bus_link_poll(w->link, extra, 2, timeout, on_job, w) < 0) {
            log_errorx("polling the bus failed (%s), stopping", zmq_strerror(zmq_errno()));
            return;
        }
        if (extra[1].revents & ZMQ_POLLIN)
            runner_drain(w->runner);
        if (extra[0].revents & ZMQ_POLLIN)
            on_signal(w, now_ms());
    }
}

int main(int argc, char **argv)
{
    osbq_startup_args(&startup, argc, argv);
    /* Blocked before any thread starts (czmq's, the runner's), so every thread inherits the
     * mask and the signals arrive only through signal_fd. */
    sigset_t stop_signals;
    osbq_startup_block_signals(&stop_signals);

    /* Static, like the catalog and the store: runner threads left behind in a stuck backend
     * (runner_destroy) may use them until the process exits, so they are not freed then, and
     * stay reachable for the leak checker. */
    static struct osbq_config cfg;
    static struct osbq_catalog *catalog;
    static struct osbq_store *store;
    struct osbq_error err = {0};
    osbq_startup_load(&startup, &cfg, &catalog);
    if (sodium_init() < 0)
        fatalx("libsodium cannot start");
    char id[320];
    make_worker_id(id, sizeof id);
    int signal_fd = signalfd(-1, &stop_signals, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signal_fd < 0)
        fatal("signalfd");
    osbq_bus_init();
    store = osbq_store_new(&cfg);
    struct bus_link *link = bus_link_new(id);
    if (store == NULL || link == NULL)
        fatalx("out of memory");
    struct runner *runner = runner_new(&cfg, catalog, store, id, &err);
    if (runner == NULL)
        fatalx("cannot start the runner: %s", err.text);
    log_info("started: id %s, concurrency %u, lease %u ms, shutdown grace %u ms, catalog %s, "
             "redis %s:%u",
             id, cfg.worker_concurrency, cfg.lease_ms, cfg.shutdown_grace_ms, cfg.catalog_path,
             cfg.redis.host, (unsigned)cfg.redis.port);

    struct worker w = {
        .store = store,
        .runner = runner,
        .link = link,
        .signal_fd = signal_fd,
        .announced = UINT_MAX,
        .next_heartbeat_ms = now_ms(),
        .next_registry_ms = now_ms(),
        .registry_backoff = BACKOFF_MIN_MS,
        .registry_state = -1,
        .grace_ms = cfg.shutdown_grace_ms,
    };
    run(&w);

    /* Cancels whatever still runs, releases its operations, then joins the runner threads, or
     * leaves behind those stuck in a backend that ignores cancellation. */
    unsigned left = runner_destroy(&runner);
    bus_link_destroy(&link);
    close(signal_fd);
    if (left == 0) {
        osbq_store_destroy(&store);
        osbq_catalog_destroy(&catalog);
        osbq_config_clear(&cfg);
    }
    /* Otherwise the threads left behind may still use them: the process exit frees them. */
    log_info("stopped");
    return 0;
}
