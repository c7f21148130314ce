/* osbq-gateway: the stateless HTTP front of the broker. Reads the configuration and the
 * catalog, binds the HTTP and bus sockets, serves until SIGTERM or SIGINT; SIGHUP rereads the
 * TLS certificate and key, and the platforms file. */
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "bus.h"
#include "catalog.h"
#include "clock.h"
#include "config.h"
#include "events_trim.h"
#include "gateway.h"
#include "http.h"
#include "log.h"
#include "platforms.h"
#include "record_gauges.h"
#include "recovery.h"
#include "registry.h"
#include "startup.h"
#include "store.h"
#include "tcp_listen.h"
#include "tls.h"

#define PROG "osbq-gateway"

static const struct osbq_startup startup = {
    .prog = PROG,
    .version = OSBQ_VERSION,
    .about = "The HTTP gateway of osbq, an Open Service Broker (API 2.0 to 2.17).",
    .role = OSBQ_ROLE_GATEWAY,
};

/* Loads the bus's server certificate into *curve and starts the ZAP handler that admits only
 * the workers in OSBQ_BUS_CURVE_CLIENTS_DIR (the handler is returned; the caller destroys it
 * after the bus socket); without the settings, returns NULL. */
static zactor_t *start_bus_security(const struct osbq_config *cfg, struct osbq_bus_curve *curve)
{
    struct osbq_error err = {0};
    const char *variable = NULL;
    if (osbq_bus_curve_load(curve, cfg, OSBQ_ROLE_GATEWAY, &variable, &err) < 0)
        osbq_startup_die(&startup, variable, &err);
    if (!osbq_bus_curve_on(curve))
        return NULL;
    zactor_t *auth =
        osbq_bus_auth_start(cfg->bus_clients_dir, osbq_log_enabled(OSBQ_LOG_DEBUG), &err);
    if (auth == NULL)
        osbq_startup_die(&startup, "OSBQ_BUS_CURVE_CLIENTS_DIR", &err);
    return auth;
}

/* Says how the bus is secured, once it is bound (a start-up failure stays a single line). */
static void log_bus_security(const struct osbq_config *cfg, const struct osbq_bus_curve *curve)
{
    if (osbq_bus_curve_on(curve))
        log_info("job bus: CurveZMQ, server key %s, workers allowed from %s",
                 zcert_public_txt(curve->own), cfg->bus_clients_dir);
    else
        log_warnx("the job bus is not authenticated nor encrypted: anyone who reaches %s can "
                  "take jobs (set OSBQ_BUS_CURVE_SERVER_CERT and OSBQ_BUS_CURVE_CLIENTS_DIR)",
                  cfg->bus_bind);
}

/* The platforms: OSBQ_PLATFORMS (with OSBQ_BROKER_USERNAME's "default" when that is set), or
 * the default platform alone. Returns the set, or NULL with err. */
static struct osbq_platforms *load_platforms(const struct osbq_config *cfg,
                                             const struct osbq_catalog *catalog,
                                             struct osbq_error *err)
{
    const struct osbq_platform_basic dflt = {cfg->broker_username, cfg->broker_password};
    struct osbq_platforms *set = NULL;
    int rc = cfg->platforms_path != NULL
                 ? osbq_platforms_load_file(cfg->platforms_path, catalog, &dflt, &set, err)
                 : osbq_platforms_default(catalog, &dflt, &set, err);
    if (rc < 0)
        return NULL;
    for (size_t i = 0; i < set->count && cfg->tls_cert_path == NULL; i++) {
        if (set->list[i].client_cert != NULL) {
            osbq_error_set(err, OSBQ_ERR_INVALID,
                           "OSBQ_PLATFORMS: platform %s names a client certificate, which needs "
                           "HTTPS (OSBQ_TLS_CERT)",
                           set->list[i].name);
            osbq_platforms_release(set);
            return NULL;
        }
    }
    return set;
}

/* Names the platforms served, one line. */
static void log_platforms(const char *what, const struct osbq_platforms *set)
{
    char names[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < set->count && used < sizeof names; i++) {
        const struct osbq_platform *p = &set->list[i];
        int n = snprintf(names + used, sizeof names - used, "%s%s (%s%s%s%s)", i ? ", " : "",
                         p->name, p->prefix[0] ? p->prefix : "no prefix", p->basic ? ", basic" : "",
                         p->token_count ? ", bearer" : "",
                         p->client_cert ? ", client certificate" : "");
        if (n < 0)
            break;
        used += (size_t)n;
    }
    log_info("%s %zu platform%s: %s", what, set->count, set->count == 1 ? "" : "s", names);
}

/* SIGHUP: the new platforms file replaces the set; requests in flight keep theirs. Its
 * platforms' series of the metrics exist from then on. */
static void reload_platforms(const struct osbq_config *cfg, const struct osbq_catalog *catalog,
                             struct osbq_platforms_holder *holder, struct gateway_metrics *metrics)
{
    if (cfg->platforms_path == NULL)
        return;
    struct osbq_error err = {0};
    struct osbq_platforms *set = load_platforms(cfg, catalog, &err);
    if (set == NULL) {
        log_warnx("received SIGHUP: keeping the current platforms: OSBQ_PLATFORMS: %s", err.text);
        return;
    }
    log_platforms("received SIGHUP: now serving", set);
    gateway_metrics_platforms(metrics, set);
    osbq_platforms_swap(holder, set);
}

/* SIGTERM: workers drop this gateway first; no new connection is accepted; requests in flight
 * (synchronous ones included) get up to OSBQ_SHUTDOWN_GRACE_MS to finish, then the rest are
 * answered 503 (at once those still waiting for a worker's slot: they began nothing); jobs still
 * queued here are in Redis for the other gateways' recovery. Says how
 * long each stage took, so a slow stop names its cause. */
static void stop_serving(const struct osbq_config *cfg, struct gateway *gw,
                         struct registry **registry, struct recovery **recovery,
                         struct http_server **server)
{
    int64_t started = osbq_clock_ms();
    registry_stop(registry);
    int64_t registry_done = osbq_clock_ms();
    recovery_stop(recovery);
    int64_t recovery_done = osbq_clock_ms();
    http_quiesce(*server);
    /* Requests waiting for a worker's slot began nothing: 503 now, their retry goes to another
     * gateway, rather than waiting here for slots that no longer come. */
    dispatch_drain_slots(gw->dispatch);
    int in_flight = http_inflight(*server);
    int left = http_wait_idle(*server, recovery_done + (int64_t)cfg->shutdown_grace_ms);
    int64_t requests_done = osbq_clock_ms();
    waiter_table_drain(gw->waiters);
    /* Calls still travelling end within the Redis timeout; their requests are answered, then
     * new calls are refused (503), so no connection stays suspended when the server stops. */
    osbq_store_pipeline_drain(gw->pipeline);
    int64_t pipeline_done = osbq_clock_ms();
    http_stop(server);
    int64_t done = osbq_clock_ms();
    log_info(
        "stopped serving in %lld ms: registry %lld ms, recovery %lld ms, %d requests in "
        "flight %lld ms (%d left at the grace's end), Redis calls %lld ms, HTTP server %lld ms",
        (long long)(done - started), (long long)(registry_done - started),
        (long long)(recovery_done - registry_done), in_flight,
        (long long)(requests_done - recovery_done), left,
        (long long)(pipeline_done - requests_done), (long long)(done - pipeline_done));
}

/* What the gateway holds from start to stop, made in the order of main's steps and freed in
 * reverse. */
struct gateway_process {
    struct osbq_config cfg;                 /* read once at start */
    struct osbq_catalog *catalog;           /* owned */
    struct osbq_policy *policy;             /* owned; NULL without OSBQ_POLICY */
    struct osbq_platforms_holder platforms; /* the platforms served; a SIGHUP swaps the set */
    struct tls_credentials *tls;            /* owned; NULL: plain HTTP */
    struct osbq_secrets *secrets;           /* owned; NULL without OSBQ_SECRET_KEY_FILE */
    int listen_fd;                          /* the HTTP socket, until the server takes it over */
    zactor_t *bus_auth;                     /* owned: the ZAP handler; NULL without CurveZMQ */
    zsock_t *bus;                           /* the ROUTER, until the dispatcher takes it over */
    struct gateway_metrics metrics;         /* the gateway's series */
    struct audit audit;                     /* the refusals' rate in the audit trail */
    struct gateway gw;                      /* what the handlers share: owns the store, the
                                             * pipeline, the dispatcher and the waiters; borrows
                                             * the rest from above */
    struct http_server *server;             /* owned */
    struct registry *registry;              /* owned */
    struct recovery *recovery;              /* owned */
    struct osbq_periodic *record_gauges;    /* owned: record_gauges.h's thread */
    struct osbq_periodic *events_trim;      /* owned: events_trim.h's; NULL: no events */
};

/* Reads the configuration, the catalog, the policy, the platforms, the TLS certificate and the
 * secret keys; a bad one stops the gateway here, before any socket. */
static void configure(struct gateway_process *p)
{
    struct osbq_error err = {0};
    osbq_startup_load(&startup, &p->cfg, &p->catalog);
    if (p->cfg.policy_path != NULL &&
        osbq_policy_load_file(p->cfg.policy_path, p->catalog, &p->policy, &err) < 0)
        osbq_startup_die(&startup, "OSBQ_POLICY", &err);
    struct osbq_platforms *platforms = load_platforms(&p->cfg, p->catalog, &err);
    if (platforms == NULL)
        osbq_startup_die(&startup, "OSBQ_PLATFORMS", &err);
    if (osbq_platforms_holder_init(&p->platforms, platforms) < 0)
        fatalx("cannot initialise: out of memory");
    if (p->cfg.tls_cert_path != NULL) {
        p->tls = tls_credentials_load(p->cfg.tls_cert_path, p->cfg.tls_key_path, &err);
        if (p->tls == NULL)
            osbq_startup_die(&startup, NULL, &err);
    }
    p->secrets = osbq_startup_secrets(&startup, &p->cfg);
}

/* Connects to Redis. Before any socket: a Redis that refuses the configuration stops the
 * gateway here. */
static void open_store(struct gateway_process *p)
{
    struct osbq_error err = {0};
    p->gw.store = osbq_store_new(&p->cfg);
    if (p->gw.store == NULL)
        fatalx("cannot initialise: out of memory");
    if (osbq_store_ping(p->gw.store, &err) < 0)
        osbq_startup_redis_failed(&startup, &err);
}

/* Binds the HTTP socket and the bus's ROUTER (behind its ZAP handler with CurveZMQ). */
static void bind_sockets(struct gateway_process *p)
{
    struct osbq_error err = {0};
    p->listen_fd = osbq_tcp_listen(&p->cfg.listen, 1024, &err);
    if (p->listen_fd < 0)
        osbq_startup_die(&startup, "OSBQ_LISTEN", &err);
    osbq_bus_init();
    struct osbq_bus_curve curve;
    p->bus_auth = start_bus_security(&p->cfg, &curve);
    p->bus = osbq_bus_gateway_bind(p->cfg.bus_bind, &curve, &err);
    if (p->bus == NULL)
        osbq_startup_die(&startup, "OSBQ_BUS_BIND", &err);
    log_bus_security(&p->cfg, &curve);
    osbq_bus_curve_clear(&curve);
}

/* Fills what the handlers share, the metrics and this gateway's random id; says whether Redis
 * has the replicas OSBQ_REDIS_MIN_ACKS asks for. */
static void describe_gateway(struct gateway_process *p)
{
    struct gateway *gw = &p->gw;
    gw->cfg = &p->cfg;
    gw->catalog = p->catalog;
    gw->policy = p->policy;
    gw->platforms = &p->platforms;
    gw->secrets = p->secrets;
    gw->version = OSBQ_VERSION;
    gw->started_ms = osbq_store_now_ms();
    gw->metrics_auth_on = p->cfg.metrics_username != NULL;
    if ((gw->metrics_auth_on &&
         osbq_auth_init(&gw->metrics_auth, p->cfg.metrics_username, p->cfg.metrics_password) < 0) ||
        gateway_metrics_init(&p->metrics, gw->store, OSBQ_VERSION) < 0)
        fatalx("cannot initialise: out of memory or no random source");
    gw->metrics = &p->metrics;
    if (audit_init(&p->audit, p->cfg.events_max > 0) < 0)
        fatalx("cannot initialise: out of memory");
    gw->audit = &p->audit;
    struct osbq_platforms *set = osbq_platforms_acquire(&p->platforms);
    gateway_metrics_platforms(&p->metrics, set);
    osbq_platforms_release(set);
    unsigned char raw_id[16];
    randombytes_buf(raw_id, sizeof raw_id);
    sodium_bin2hex(gw->gateway_id, sizeof gw->gateway_id, raw_id, sizeof raw_id);
    struct osbq_error err = {0};
    char replication[512];
    int replicas_enough =
        osbq_store_replication_check(gw->store, replication, sizeof replication, &err);
    if (replicas_enough == 0)
        log_warnx("Redis: %s; OSBQ_REDIS_MIN_ACKS=%u is not met: acceptances get 503 "
                  "and /readyz fails until it is",
                  replication, p->cfg.redis_min_acks);
    else if (replicas_enough > 0)
        log_info("Redis: %s", replication);
}

/* Starts the threads, each before those that hand it work: the Redis pipeline, the dispatcher,
 * the event thread, the live records' count, the HTTP server, the registry, the recovery loop. */
static void start_threads(struct gateway_process *p)
{
    struct gateway *gw = &p->gw;
    struct osbq_error err = {0};
    gw->pipeline = osbq_store_pipeline_start(gw->store, &err);
    if (gw->pipeline == NULL)
        fatalx("%s", err.text);
    gw->dispatch = dispatch_start(&p->bus, p->cfg.max_queued_jobs, p->metrics.dispatch_waits, &err);
    if (gw->dispatch == NULL)
        fatalx("%s", err.text);
    gw->waiters = waiter_table_start(gw->store, &p->cfg, gw->gateway_id, &err);
    if (gw->waiters == NULL)
        fatalx("%s", err.text);
    gw->averages = memo_new(AVERAGES_MAX);
    gw->instance_tenants = memo_new(INSTANCE_TENANTS_MAX);
    if (gw->averages == NULL || gw->instance_tenants == NULL)
        fatalx("out of memory");
    gateway_metrics_attach(&p->metrics, gw->dispatch, gw->waiters);
    p->record_gauges = record_gauges_start(gw, &err);
    if (p->record_gauges == NULL)
        fatalx("%s", err.text);
    p->events_trim = events_trim_start(gw, &err);
    if (p->events_trim == NULL && err.code != OSBQ_OK)
        fatalx("%s", err.text);
    p->server = http_start(gw, p->listen_fd, p->tls, &err);
    p->listen_fd = -1;
    if (p->server == NULL)
        osbq_startup_die(&startup, "OSBQ_LISTEN", &err);
    p->registry = registry_start(gw, &err);
    if (p->registry == NULL)
        fatalx("%s", err.text);
    p->recovery =
        recovery_start(&p->cfg, gw->store, gw->dispatch, &p->metrics, &p->platforms, &err);
    if (p->recovery == NULL)
        fatalx("%s", err.text);
}

/* Says what the gateway serves, once every thread runs. */
static void log_serving(struct gateway_process *p)
{
    osbq_startup_secrets_report(p->secrets);
    struct osbq_platforms *set = osbq_platforms_acquire(&p->platforms);
    log_platforms("serving", set);
    osbq_platforms_release(set);
    log_info("gateway %s listening on %s:%u (%s), bus %s (advertised as %s), %u HTTP threads, "
             "catalog %s",
             p->gw.gateway_id, p->cfg.listen.host, (unsigned)p->cfg.listen.port,
             p->tls ? "HTTPS" : "plain HTTP", p->cfg.bus_bind, p->cfg.bus_advertise,
             p->cfg.http_threads, p->cfg.catalog_path);
}

/* Serves until SIGTERM or SIGINT, whose number it returns; each SIGHUP rereads the platforms
 * file and the TLS certificate. */
static int serve(struct gateway_process *p, const sigset_t *stop_signals)
{
    sigset_t signals = *stop_signals;
    sigaddset(&signals, SIGHUP);
    int signo = 0;
    for (;;) {
        if (sigwait(&signals, &signo) != 0)
            continue;
        if (signo != SIGHUP)
            return signo;
        reload_platforms(&p->cfg, p->catalog, &p->platforms, &p->metrics);
        struct osbq_error err = {0};
        if (p->tls == NULL && p->cfg.platforms_path == NULL)
            log_info("received SIGHUP: nothing to reload (no OSBQ_TLS_CERT nor OSBQ_PLATFORMS)");
        else if (p->tls == NULL)
            continue;
        else if (tls_credentials_reload(p->tls, &err) < 0)
            log_warnx("received SIGHUP: keeping the current TLS certificate: %s", err.text);
        else
            log_info("received SIGHUP: new connections use the reloaded TLS certificate");
    }
}

/* Stops serving (stop_serving), then stops the threads and frees everything in the reverse
 * order of the steps that made them. */
static void stop(struct gateway_process *p)
{
    struct gateway *gw = &p->gw;
    stop_serving(&p->cfg, gw, &p->registry, &p->recovery, &p->server);
    osbq_periodic_stop(&p->record_gauges);
    osbq_periodic_stop(&p->events_trim);
    waiter_table_stop(&gw->waiters);
    dispatch_stop(&gw->dispatch);
    osbq_store_pipeline_free(&gw->pipeline);
    memo_free(&gw->averages);
    memo_free(&gw->instance_tenants);
    gateway_metrics_clear(&p->metrics);
    audit_clear(&p->audit);
    sodium_memzero(&gw->metrics_auth, sizeof gw->metrics_auth);
    zactor_destroy(&p->bus_auth);
    osbq_store_destroy(&gw->store);
    osbq_secrets_destroy(&p->secrets);
    tls_credentials_free(&p->tls);
    osbq_platforms_holder_clear(&p->platforms);
    osbq_policy_destroy(&p->policy);
    osbq_catalog_destroy(&p->catalog);
    osbq_config_clear(&p->cfg);
}

int main(int argc, char **argv)
{
    sigset_t stop_signals;
    osbq_startup_begin(&startup, argc, argv, &stop_signals);
    struct gateway_process p = {.listen_fd = -1};
    configure(&p);
    open_store(&p);
    bind_sockets(&p);
    describe_gateway(&p);
    start_threads(&p);
    log_serving(&p);

    int signo = serve(&p, &stop_signals);
    log_info("received %s, stopping", signo == SIGINT ? "SIGINT" : "SIGTERM");
    int64_t signalled_ms = osbq_clock_ms();
    stop(&p);
    log_info("stopped, %lld ms after the signal", (long long)(osbq_clock_ms() - signalled_ms));
    return 0;
}
