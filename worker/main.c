/* osbq-worker: connects to every live gateway, announces its free slots, hands the jobs it
 * receives to the runner, and on SIGTERM or SIGINT stops taking jobs, lets running ones finish
 * within OSBQ_SHUTDOWN_GRACE_MS, then releases the rest to other workers. The main thread owns
 * every ZeroMQ socket; runner threads only talk to Redis. It publishes its status (load) for
 * osbq-ctl every 2 s, and serves its metrics on OSBQ_METRICS_LISTEN when set. */
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "backend.h"
#include "bus.h"
#include "bus_link.h"
#include "catalog.h"
#include "clock.h"
#include "config.h"
#include "job.h"
#include "log.h"
#include "metrics.h"
#include "metrics_server.h"
#include "process_metrics.h"
#include "runner.h"
#include "startup.h"
#include "step.h"
#include "store_pipeline.h"
#include "store_registry.h"
#include "worker_metrics.h"

#define PROG "osbq-worker"

/* Backoff of registry reads while Redis is away. */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* Random bytes at the end of the worker id, so a restarted process with a reused pid is
 * still a different worker. */
#define WORKER_ID_RANDOM_BYTES 4

/* The main thread's state: what its loop reads and the timers it keeps. */
struct worker {
    struct osbq_store *store;       /* borrowed: registry reads, status */
    struct runner *runner;          /* borrowed: where jobs go */
    struct bus_link *link;          /* borrowed: the gateway sockets */
    struct worker_metrics *metrics; /* borrowed: rejected jobs, linked gateways */
    const char *id;                 /* borrowed: this worker's id */
    const char *metrics_addr;       /* borrowed: "host:port" of the metrics server, or NULL */
    unsigned slots;                 /* OSBQ_WORKER_CONCURRENCY */
    int64_t started_ms;             /* wall-clock start time, ms since the epoch */
    bool status_published;          /* the last status publish worked */
    int64_t next_status_ms;         /* while stopping: when the status is published next */
    int signal_fd;                  /* readable when SIGTERM or SIGINT arrived */
    unsigned announced;             /* free slots last announced; UINT_MAX forces an announce */
    int64_t next_heartbeat_ms;      /* when READY goes out again even if nothing changed */
    int64_t next_registry_ms;       /* when the registry is read next */
    int64_t registry_backoff;       /* delay before the next read while reads fail */
    int registry_state;             /* -1 never read, 1 last read worked, 0 failing (logged) */
    unsigned grace_ms;              /* OSBQ_SHUTDOWN_GRACE_MS: time running jobs get to finish */
    bool stopping;                  /* a stop signal arrived: no new jobs */
    bool hurried;                   /* a second stop signal cut the grace short */
    int64_t stop_deadline_ms;       /* when running jobs get cancelled */
};

static const struct osbq_startup startup = {
    .prog = PROG,
    .version = OSBQ_VERSION,
    .about = "The worker of osbq, an Open Service Broker: runs the jobs gateways send.",
    .role = OSBQ_ROLE_WORKER,
};

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

/* Publishes this worker's status for osbq-ctl (ns:status:worker:<id>, 10 s TTL): who it is and
 * its load now. Redis may be away: a failure is only a debug line, the next one tries again. */
static void publish_status(struct worker *w)
{
    char host[256] = "";
    (void)gethostname(host, sizeof host - 1);
    json_t *status = json_pack("{s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:s?, s:b}", "id", w->id,
                               "pid", (json_int_t)getpid(), "host", host, "version", OSBQ_VERSION,
                               "started_ms", (json_int_t)w->started_ms, "slots",
                               (json_int_t)w->slots, "running", (json_int_t)runner_busy(w->runner),
                               "gateways", (json_int_t)bus_link_count(w->link), "metrics",
                               w->metrics_addr, "stopping", (int)w->stopping);
    char *text = status ? json_dumps(status, JSON_COMPACT) : NULL;
    json_decref(status);
    struct osbq_error err = {0};
    if (text == NULL)
        osbq_error_set(&err, OSBQ_ERR_INTERNAL, "out of memory");
    w->status_published =
        text != NULL && osbq_store_status_publish(w->store, "worker", w->id, text,
                                                  OSBQ_BUS_REGISTRY_TTL_MS, &err) == 0;
    if (!w->status_published)
        log_debug("cannot publish the worker's status (%s); trying again in %d ms", err.text,
                  OSBQ_BUS_REGISTRY_RENEW_MS);
    free(text);
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
    if (w->registry_state != 1) {
        char replication[512];
        int enough = osbq_store_replication_check(w->store, replication, sizeof replication, &err);
        log_info("Redis reachable: %zu gateways registered", count);
        if (enough == 0)
            log_warnx("Redis: %s; OSBQ_REDIS_MIN_ACKS is not met: outcomes wait "
                      "for replicas",
                      replication);
        else if (enough > 0)
            log_info("Redis: %s", replication);
    }
    w->registry_state = 1;
    w->registry_backoff = BACKOFF_MIN_MS;
    w->next_registry_ms = now + OSBQ_BUS_REGISTRY_RENEW_MS;
    bus_link_sync(w->link, endpoints, count, free_slots(w));
    osbq_store_strings_free(endpoints);
    worker_metrics_set_gateways(w->metrics, bus_link_count(w->link));
    /* Redis just answered: the status goes out with the same rhythm (every 2 s). */
    publish_status(w);
}

/* A HALT from a gateway: a delete halted the operation; its step here, if any, stops now
 * rather than at its next lease renewal (docs/decisions/0051). */
static void on_halt(void *ctx, const char *endpoint, const char *operation_id)
{
    struct worker *w = ctx;
    if (runner_halt(w->runner, operation_id))
        log_info("gateway %s: operation %s halted by a delete, stopping its step", endpoint,
                 operation_id);
    else
        log_debug("gateway %s: halt of operation %s, which no step here runs", endpoint,
                  operation_id);
}

/* A JOB from a gateway: to the runner when a slot is free, else back to that gateway. A handed
 * one with no slot (two gateways handed this worker its last slot at once, or it is stopping)
 * is given back in Redis first, so that the worker it goes to next can claim it: waiting for
 * Redis here happens only when the gateways' counts of its free slots crossed. */
static void on_job(void *ctx, zsock_t *dealer, const char *endpoint, unsigned origin,
                   const void *data, size_t len, const struct osbq_bus_handed *handed)
{
    struct worker *w = ctx;
    struct osbq_job job = {0};
    char reason[256];
    if (osbq_job_decode(data, len, &job, reason, sizeof reason) < 0) {
        log_warnx("gateway %s: undecodable job (%s), dropping it", endpoint, reason);
        return;
    }
    if (handed != NULL && handed->present) {
        struct step_handover taken = {
            .until_ms = handed->until_ms,
            .tenant =
                handed->tenant != NULL && handed->tenant[0] != '\0' ? strdup(handed->tenant) : NULL,
        };
        int rc = runner_submit_handed(w->runner, &job, origin, &taken);
        step_handover_clear(&taken);
        if (rc == 0)
            return;
        if (!runner_give_back(w->runner, &job)) {
            osbq_job_clear(&job);
            return;
        }
    } else if (runner_submit(w->runner, &job, origin) == 0) {
        return;
    }
    /* The gateway sent more than the last READY allowed (the two crossed), or we are
     * stopping: it gives the job to another worker. */
    worker_metrics_rejected(w->metrics);
    backend_log_context_set(&job);
    if (osbq_bus_send_reject(dealer, data, len) < 0)
        log_warnx("operation %s: no free slot and gateway %s cannot take the job back (%s); "
                  "it will be resent from Redis",
                  job.operation_id, endpoint, zmq_strerror(zmq_errno()));
    else
        log_debug("operation %s: no free slot, job handed back to %s", job.operation_id, endpoint);
    osbq_log_context_set(NULL);
    osbq_job_clear(&job);
}

/* What the gateway of origin is told in its next READY: when the next step of a wait is due,
 * and which of its jobs ended. */
static void note_for_gateway(void *link, unsigned origin, int64_t due_ms, const char *ended)
{
    if (due_ms > 0)
        bus_link_note_due(link, origin, due_ms);
    if (ended != NULL)
        bus_link_note_ended(link, origin, ended);
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
    w->next_status_ms = now;
    runner_close(w->runner);
}

/* The main loop: registry, credits, jobs, signals. Returns once stopping and either no job
 * holds an operation any more (backends abandoned past their deadline are not waited for) or
 * the grace period is over (the caller then cancels and releases what is left). */
static void run(struct worker *w)
{
    for (;;) {
        int64_t now = osbq_clock_ms();
        if (!w->stopping && now >= w->next_registry_ms)
            refresh_registry(w, now);
        unsigned free_now = free_slots(w);
        if (free_now != w->announced || now >= w->next_heartbeat_ms) {
            bus_link_announce(w->link, free_now);
            w->announced = free_now;
            w->next_heartbeat_ms = now + OSBQ_BUS_HEARTBEAT_MS;
        }
        /* Due times and ended jobs noted while the free slots stayed the same. */
        bus_link_send_notes(w->link);
        int64_t next = w->next_heartbeat_ms;
        if (w->stopping && now >= w->next_status_ms) {
            /* The registry is not read any more: the status (now "stopping") keeps its own
             * timer, and is left to expire once a publish failed (Redis away) so this loop
             * does not wait for Redis timeouts while jobs finish. */
            if (w->status_published)
                publish_status(w);
            w->next_status_ms = now + OSBQ_BUS_REGISTRY_RENEW_MS;
        }
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
            if (w->next_status_ms < next)
                next = w->next_status_ms;
        } else if (w->next_registry_ms < next) {
            next = w->next_registry_ms;
        }

        /* Sleep until the next timer, a job ending, a message or a signal: no busy loop. */
        zmq_pollitem_t extra[2] = {
            {.fd = w->signal_fd, .events = ZMQ_POLLIN},
            {.fd = runner_event_fd(w->runner), .events = ZMQ_POLLIN},
        };
        long timeout = next > now ? (long)(next - now) : 0;
        static const struct bus_link_handlers handlers = {.on_job = on_job, .on_halt = on_halt};
        if (bus_link_poll(w->link, extra, 2, timeout, &handlers, w) < 0) {
            log_errorx("polling the bus failed (%s), stopping", zmq_strerror(zmq_errno()));
            return;
        }
        if (extra[1].revents & ZMQ_POLLIN) {
            runner_drain(w->runner);
            runner_take_notes(w->runner, note_for_gateway, w->link);
        }
        if (extra[0].revents & ZMQ_POLLIN)
            on_signal(w, osbq_clock_ms());
    }
}

/* osbq_jobs_running at each scrape: the runner's busy slots (worker_metrics_attach). */
static size_t running_jobs(void *runner)
{
    return runner_busy(runner);
}

/* What the worker holds from start to stop, made in the order of main's steps. Static (in
 * main): runner threads left behind in a stuck backend (runner_destroy) may use the
 * configuration, the catalog, the store, the pipeline, the metrics and the secrets until the
 * process exits, so these are then not freed, and stay reachable for the leak checker. */
struct worker_process {
    struct osbq_config cfg;                      /* read once at start */
    struct osbq_catalog *catalog;                /* owned */
    struct osbq_secrets *secrets;                /* owned; NULL without OSBQ_SECRET_KEY_FILE */
    int64_t started_ms;                          /* wall-clock start time, ms since the epoch */
    int metrics_fd;                              /* the metrics socket until the server takes it
                                                  * over; -1 without OSBQ_METRICS_LISTEN */
    char metrics_addr[300];                      /* "host:port" it listens on, or "" */
    struct osbq_store *store;                    /* owned */
    char id[320];                                /* this worker's id (make_worker_id) */
    int signal_fd;                               /* owned: SIGTERM and SIGINT */
    struct osbq_bus_curve curve;                 /* the bus keys, loaded once: a certificate
                                                  * changed on disk counts from the next start */
    struct bus_link *link;                       /* owned: the gateway sockets */
    struct osbq_metrics *registry;               /* owned: every series */
    struct osbq_process_metrics process_metrics; /* the process's series */
    struct worker_metrics metrics;               /* the worker's series */
    struct osbq_store_pipeline *pipeline;        /* owned: the runner threads' Redis calls share
                                                  * one connection through it (claims, progress,
                                                  * outcomes and waits go out in the same writes) */
    struct runner *runner;                       /* owned */
    struct metrics_server *server;               /* owned; NULL without OSBQ_METRICS_LISTEN */
};

/* Reads the configuration, the catalog and the secret keys, and binds the metrics socket: a
 * port already taken stops the worker before it starts anything. */
static void configure(struct worker_process *p)
{
    struct osbq_error err = {0};
    osbq_startup_load(&startup, &p->cfg, &p->catalog);
    p->secrets = osbq_startup_secrets(&startup, &p->cfg);
    p->started_ms = osbq_store_now_ms();
    p->metrics_fd = -1;
    if (p->cfg.metrics_listen.host == NULL)
        return;
    p->metrics_fd = metrics_server_listen(&p->cfg.metrics_listen, &err);
    if (p->metrics_fd < 0)
        osbq_startup_die(&startup, "OSBQ_METRICS_LISTEN", &err);
    bool ipv6 = strchr(p->cfg.metrics_listen.host, ':') != NULL;
    (void)snprintf(p->metrics_addr, sizeof p->metrics_addr, ipv6 ? "[%s]:%u" : "%s:%u",
                   p->cfg.metrics_listen.host, (unsigned)p->cfg.metrics_listen.port);
}

/* Connects to Redis. Before any socket: a Redis that refuses the configuration stops the
 * worker here. */
static void open_store(struct worker_process *p)
{
    struct osbq_error err = {0};
    p->store = osbq_store_new(&p->cfg);
    if (p->store == NULL)
        fatalx("out of memory");
    if (osbq_store_ping(p->store, &err) < 0)
        osbq_startup_redis_failed(&startup, &err);
}

/* Names the worker and opens the descriptor its stop signals arrive on (they are blocked). */
static void identify(struct worker_process *p, const sigset_t *stop_signals)
{
    if (sodium_init() < 0)
        fatalx("libsodium cannot start");
    make_worker_id(p->id, sizeof p->id);
    p->signal_fd = signalfd(-1, stop_signals, SFD_NONBLOCK | SFD_CLOEXEC);
    if (p->signal_fd < 0)
        fatal("signalfd");
}

/* Loads the bus keys and makes the link to the gateways (their sockets open with the first
 * registry read). */
static void open_bus(struct worker_process *p)
{
    struct osbq_error err = {0};
    osbq_bus_init();
    const char *variable = NULL;
    if (osbq_bus_curve_load(&p->curve, &p->cfg, OSBQ_ROLE_WORKER, &variable, &err) < 0)
        osbq_startup_die(&startup, variable, &err);
    if (osbq_bus_curve_on(&p->curve))
        log_info("job bus: CurveZMQ, client key %s, gateways' key %s",
                 zcert_public_txt(p->curve.own), p->curve.server_public);
    else
        log_warnx("the job bus is not authenticated nor encrypted: this worker runs jobs from "
                  "any process registered as a gateway (set OSBQ_BUS_CURVE_SERVER_CERT and "
                  "OSBQ_BUS_CURVE_CLIENT_CERT)");
    p->link = bus_link_new(p->id, &p->curve, p->cfg.lease_ms);
    if (p->link == NULL)
        fatalx("out of memory");
}

/* Makes the metrics: the process's, the store's error and acknowledgement counts, the
 * worker's. */
static void make_metrics(struct worker_process *p)
{
    p->registry = osbq_metrics_new();
    if (p->registry == NULL ||
        osbq_process_metrics_add(&p->process_metrics, p->registry, "worker", OSBQ_VERSION, p->store,
                                 osbq_store_error_count) < 0 ||
        osbq_process_metrics_add_ack_timeouts(&p->process_metrics, p->registry,
                                              osbq_store_ack_timeout_count) < 0 ||
        worker_metrics_init(&p->metrics, p->registry, p->catalog, p->cfg.worker_concurrency) < 0)
        fatalx("out of memory");
}

/* Starts the threads: the Redis pipeline, the runner (its threads and the exec watch), the
 * metrics server. */
static void start_threads(struct worker_process *p)
{
    struct osbq_error err = {0};
    p->pipeline = osbq_store_pipeline_start(p->store, &err);
    if (p->pipeline == NULL)
        fatalx("cannot start the Redis pipeline: %s", err.text);
    osbq_store_use_pipeline(p->store, p->pipeline);
    p->runner = runner_new(&p->cfg, p->catalog, p->store, p->id, &p->metrics, &err);
    if (p->runner == NULL)
        fatalx("cannot start the runner: %s", err.text);
    runner_set_secrets(p->runner, p->secrets);
    worker_metrics_attach(&p->metrics, running_jobs, p->runner);
    if (p->metrics_fd < 0)
        return;
    p->server = metrics_server_start(&p->cfg, p->metrics_fd, p->registry, &err);
    p->metrics_fd = -1;
    if (p->server == NULL) {
        (void)runner_destroy(&p->runner);
        osbq_startup_die(&startup, "OSBQ_METRICS_LISTEN", &err);
    }
}

/* Runs the main loop (run) until the worker stops. */
static void serve(struct worker_process *p)
{
    osbq_startup_secrets_report(p->secrets);
    const char *metrics_addr = p->metrics_addr[0] != '\0' ? p->metrics_addr : NULL;
    log_info("started: id %s, concurrency %u, lease %u ms, shutdown grace %u ms, catalog %s, "
             "redis %s:%u, metrics %s",
             p->id, p->cfg.worker_concurrency, p->cfg.lease_ms, p->cfg.shutdown_grace_ms,
             p->cfg.catalog_path, p->cfg.redis.host, (unsigned)p->cfg.redis.port,
             metrics_addr != NULL ? metrics_addr : "off");
    /* The first turn of the loop reads the registry at once, and publishes the status with it. */
    struct worker w = {
        .store = p->store,
        .runner = p->runner,
        .link = p->link,
        .metrics = &p->metrics,
        .id = p->id,
        .metrics_addr = metrics_addr,
        .slots = p->cfg.worker_concurrency,
        .started_ms = p->started_ms,
        .signal_fd = p->signal_fd,
        .announced = UINT_MAX,
        .next_heartbeat_ms = osbq_clock_ms(),
        .next_registry_ms = osbq_clock_ms(),
        .registry_backoff = BACKOFF_MIN_MS,
        .registry_state = -1,
        .grace_ms = p->cfg.shutdown_grace_ms,
    };
    run(&w);
}

/* Stops the threads in the reverse order of their start, then closes the bus and the signal
 * descriptor and removes the worker's status. What runner threads left behind may still use is
 * freed only when none was left behind (runner_destroy): otherwise the process exit frees it. */
static void stop(struct worker_process *p)
{
    /* Scrapes read the runner: the server stops first. */
    metrics_server_stop(&p->server);
    /* Cancels whatever still runs, releases its operations, then joins the runner threads, or
     * leaves behind those stuck in a backend that ignores cancellation. */
    unsigned left = runner_destroy(&p->runner);
    /* Drained, calls made from now on (the status removal below, a thread left behind) run on
     * pooled connections; the pipeline itself is kept while a thread left behind may still be
     * about to submit to it. */
    osbq_store_pipeline_drain(p->pipeline);
    if (left == 0) {
        osbq_store_use_pipeline(p->store, NULL);
        osbq_store_pipeline_free(&p->pipeline);
    }
    bus_link_destroy(&p->link);
    osbq_bus_curve_clear(&p->curve);
    close(p->signal_fd);
    struct osbq_error err = {0};
    if (osbq_store_status_remove(p->store, "worker", p->id, &err) < 0)
        log_debug("cannot remove the worker's status (%s); it expires by itself", err.text);
    if (left > 0)
        return;
    osbq_metrics_destroy(&p->registry);
    osbq_store_destroy(&p->store);
    osbq_secrets_destroy(&p->secrets);
    osbq_catalog_destroy(&p->catalog);
    osbq_config_clear(&p->cfg);
}

int main(int argc, char **argv)
{
    /* The stop signals are blocked before any thread starts (czmq's, the runner's), so every
     * thread inherits the mask and the signals arrive only through signal_fd. */
    sigset_t stop_signals;
    osbq_startup_begin(&startup, argc, argv, &stop_signals);
    static struct worker_process p;
    configure(&p);
    open_store(&p);
    identify(&p, &stop_signals);
    open_bus(&p);
    make_metrics(&p);
    start_threads(&p);
    serve(&p);
    stop(&p);
    log_info("stopped");
    return 0;
}
