/* The recovery loop: every OSBQ_RECOVERY_INTERVAL_MS, and as soon as the earliest entry of the
 * queue falls due, takes the operations Redis says are due (store/lua/recover.lua) and resends,
 * polls or abandons them. It learns of entries due sooner from its last scan and from the
 * workers (a READY's due time, recovery_due): it sleeps until the earliest of them. When the
 * dispatcher sees a worker go, the loop takes the jobs sent to it from it at once
 * (store/lua/revoke.lua, docs/decisions/0052) and sends them the same way. */
#include "recovery.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "job.h"
#include "log.h"
#include "owned.h"
#include "periodic.h"
#include "tenant.h"

/* Operations taken per batch: bounds the due work handed to the dispatcher at once (its due
 * lane), so due work leaves Redis about as fast as the workers run it. */
#define RECOVERY_BATCH 200
/* Batches one pass takes at most while they come back full (many polls due at once: operations
 * accepted together end their waits together); the rest wait for the next pass. */
#define RECOVERY_BATCHES_MAX 50
/* How long a pass waits at most for the workers to take the last batch before the next one. */
#define RECOVERY_ROOM_WAIT_MS 1000
/* How soon the loop looks again at an entry that is due while no worker has room for it (or
 * more was due than one pass takes). */
#define RECOVERY_TICK_MS 50

/* A worker the dispatcher saw go, whose jobs the loop's thread has yet to take from it. */
struct gone_worker {
    struct gone_worker *next;
    char *worker_id;
    char *operation_ids; /* separated by spaces */
};

struct recovery {
    const struct osbq_config *cfg;           /* borrowed */
    struct osbq_store *store;                /* borrowed */
    struct dispatch *dispatch;               /* borrowed: where resent jobs go */
    struct gateway_metrics *metrics;         /* borrowed: retries, lease expiries, abandons */
    struct osbq_platforms_holder *platforms; /* borrowed: the weights of the tenants' platforms */
    bool warned;                             /* the last scan failed (logged once) */
    int64_t next_scan_ms;                    /* epoch ms of the next scan a whole interval after the
                                              * last; only the loop's thread uses these two */
    int64_t next_due_ms;                     /* epoch ms the earliest entry known is due at, or 0 */
    struct osbq_periodic *loop;              /* the thread, running turn */
    pthread_mutex_t gone_lock;               /* guards gone */
    struct gone_worker *gone;                /* told by the dispatcher, not taken yet */
};

bool recovery_has_room(const struct dispatch_stats *stats, size_t batch)
{
    return stats->free_slots > 0 && stats->queued_due < batch;
}

/* Sends the job again, as its tenant's (weights: set's): for a poll, its next step (the
 * attempt unchanged: a poll is not one); else with its attempt number raised to the next
 * claim. */
static void resend(struct recovery *r, const struct osbq_platforms *set,
                   const struct osbq_recovery_item *item)
{
    struct osbq_job job = {0};
    char why[200];
    char *bytes = NULL;
    size_t len = 0;
    if (item->job == NULL || osbq_job_decode(item->job, item->job_len, &job, why, sizeof why) < 0) {
        log_warnx("operation %s: its stored job cannot be read (%s); giving up on it",
                  item->operation_id, item->job ? why : "missing");
        struct osbq_error err = {0};
        (void)osbq_store_abandon(r->store, item->operation_id,
                                 "The operation's job was lost; it cannot be run again.", &err);
        return;
    }
    job.attempt = item->poll && item->claims > 0 ? item->claims : item->claims + 1;
    const struct dispatch_owner owner = {item->tenant, tenant_weight(set, item->tenant),
                                         tenant_platform_label(set, item->tenant)};
    if (osbq_job_encode(&job, &bytes, &len, why, sizeof why) < 0 ||
        dispatch_submit(r->dispatch, item->operation_id, DISPATCH_LANE_DUE, &owner, bytes, len) < 0)
        log_warnx("operation %s: cannot %s it now, the next scan will", item->operation_id,
                  item->poll ? "send the next step of" : "resend");
    else if (item->poll) {
        /* One per step of every waiting operation: too many for the info level. */
        log_debug("operation %s: its next step is due, sent", item->operation_id);
        osbq_series_add(r->metrics->polls, 1);
    } else {
        log_info("operation %s: resent (attempt %u%s)", item->operation_id, job.attempt,
                 item->lease_expired ? ", its worker's lease ran out"
                 : item->revoked     ? ", its worker went"
                                     : "");
        osbq_series_add(r->metrics->retries, 1);
        if (item->lease_expired)
            osbq_series_add(r->metrics->lease_expiries, 1);
        if (item->revoked)
            osbq_series_add(r->metrics->revoked, 1);
    }
    free(bytes);
    osbq_job_clear(&job);
}

static void abandon(struct recovery *r, const struct osbq_recovery_item *item)
{
    char description[256];
    /* A halted operation's description is finish.lua's, which names the delete. */
    (void)snprintf(description, sizeof description,
                   "The operation failed: its worker stopped responding %u times (the backend "
                   "crashed or hung), so the broker gave up.",
                   item->claims);
    struct osbq_error err = {0};
    int rc = osbq_store_abandon(r->store, item->operation_id, description, &err);
    if (rc < 0)
        log_warnx("operation %s: cannot mark it failed (%s), retrying", item->operation_id,
                  err.text);
    else if (rc > 0 && item->halted) {
        log_info("operation %s: halted by a delete, no step of it running", item->operation_id);
    } else if (rc > 0) {
        log_warnx("operation %s: failed after %u attempts", item->operation_id, item->claims);
        /* The operation's plan is not among what the scan reads. */
        gateway_metrics_operation(r->metrics, item->kind ? item->kind : "unknown", "abandoned",
                                  OSBQ_CATALOG_UNKNOWN_LABEL, OSBQ_CATALOG_UNKNOWN_LABEL);
    }
}

/* Resends, polls or abandons each of items (count of them), then frees them. */
static void act_on(struct recovery *r, struct osbq_recovery_item *items, size_t count)
{
    struct osbq_platforms *set = r->platforms ? osbq_platforms_acquire(r->platforms) : NULL;
    for (size_t i = 0; i < count; i++) {
        struct osbq_log_context context = {.operation_id = items[i].operation_id};
        osbq_log_context_set(&context);
        if (items[i].abandon)
            abandon(r, &items[i]);
        else
            resend(r, set, &items[i]);
        osbq_log_context_set(NULL);
    }
    osbq_platforms_release(set);
    osbq_recovery_free(items, count);
}

/* Takes one batch of due work and acts on it. Returns how many items it took, or -1 when the
 * scan failed. */
static long scan_batch(struct recovery *r, bool can_resend)
{
    struct osbq_recovery_item *items = NULL;
    size_t count = 0;
    struct osbq_error err = {0};
    if (osbq_store_recover(r->store, RECOVERY_BATCH, r->cfg->max_attempts, r->cfg->claim_timeout_ms,
                           can_resend, &items, &count, &r->next_due_ms, &err) < 0) {
        if (!r->warned)
            log_warnx("recovery scan failed (%s), retrying", err.text);
        r->warned = true;
        return -1;
    }
    r->warned = false;
    act_on(r, items, count);
    return (long)count;
}

/* Whether the workers took most of what the last batch handed the dispatcher. */
static bool room_for_a_batch(const struct dispatch_stats *stats)
{
    return recovery_has_room(stats, RECOVERY_BATCH);
}

/* Waits until they did (recovery_has_room), up to RECOVERY_ROOM_WAIT_MS, woken by the
 * dispatcher's figures. Returns whether they did. */
static bool wait_for_room(struct recovery *r)
{
    return dispatch_wait_stats(r->dispatch, room_for_a_batch,
                               osbq_clock_ms() + RECOVERY_ROOM_WAIT_MS);
}

static void scan(struct recovery *r)
{
    /* Without a worker with room there is nobody to resend to: jobs that only wait for one are
     * not lost, and resending them would only queue copies. Giving up on an operation that used
     * up its attempts needs no worker, so that goes on. */
    struct dispatch_stats stats;
    dispatch_get_stats(r->dispatch, &stats);
    long taken = scan_batch(r, stats.free_slots > 0);
    /* A full batch: more is due (polls of operations that started together). Hand it out as
     * the workers take it, never more than a batch ahead of them: the rest stays in Redis, due,
     * for any gateway's workers (docs/reliability.md, fairness). */
    for (unsigned batches = 1; taken >= RECOVERY_BATCH && batches < RECOVERY_BATCHES_MAX;
         batches++) {
        if (!wait_for_room(r))
            break;
        taken = scan_batch(r, true);
    }
}

int64_t recovery_wake_ms(int64_t now, int64_t next_scan_ms, int64_t next_due_ms)
{
    int64_t wake = next_scan_ms;
    if (next_due_ms > 0) {
        int64_t due = next_due_ms > now ? next_due_ms : now + RECOVERY_TICK_MS;
        if (due < wake)
            wake = due;
    }
    return wake;
}

/* A scan once the interval has passed, or sooner when the earliest entry known is due and a
 * worker has room to take it. Returns the epoch ms to run again at. */
static int64_t tick(struct recovery *r)
{
    int64_t now = osbq_store_now_ms();
    bool due = now >= r->next_scan_ms;
    if (!due && r->next_due_ms > 0 && now >= r->next_due_ms) {
        struct dispatch_stats stats;
        dispatch_get_stats(r->dispatch, &stats);
        due = recovery_has_room(&stats, RECOVERY_BATCH);
    }
    if (due) {
        r->next_scan_ms = now + (int64_t)r->cfg->recovery_interval_ms;
        scan(r);
        now = osbq_store_now_ms();
    }
    return recovery_wake_ms(now, r->next_scan_ms, r->next_due_ms);
}

static void gone_worker_free(struct gone_worker *g)
{
    free(g->worker_id);
    free(g->operation_ids);
    free(g);
}

/* Takes from the workers the dispatcher saw go the jobs it had sent them, and sends them again.
 * One that Redis refuses now waits for its leases, as before (logged). */
static void take_from_gone(struct recovery *r)
{
    pthread_mutex_lock(&r->gone_lock);
    struct gone_worker *gone = r->gone;
    r->gone = NULL;
    pthread_mutex_unlock(&r->gone_lock);
    while (gone != NULL) {
        struct gone_worker *g = gone;
        gone = g->next;
        struct osbq_recovery_item *items = NULL;
        size_t count = 0;
        struct osbq_error err = {0};
        if (osbq_store_revoke(r->store, g->worker_id, g->operation_ids, r->cfg->max_attempts,
                              r->cfg->claim_timeout_ms, &items, &count, &err) < 0) {
            log_warnx("worker %s went: cannot take its steps from it (%s); they run again when "
                      "their leases run out",
                      g->worker_id, err.text);
        } else {
            if (count > 0)
                log_info("worker %s went: %zu of its operations taken from it", g->worker_id,
                         count);
            act_on(r, items, count);
        }
        gone_worker_free(g);
    }
}

/* dispatch_listener.gone: counted, and queued for the loop's thread, woken now. */
static void recovery_worker_gone(void *ctx, const char *worker_id, const char *operation_ids,
                                 const char *why)
{
    struct recovery *r = ctx;
    for (size_t i = 0;
         why != NULL && i < sizeof r->metrics->workers_gone / sizeof r->metrics->workers_gone[0];
         i++)
        if (strcmp(why, gateway_metrics_gone_reasons[i]) == 0)
            osbq_series_add(r->metrics->workers_gone[i], 1);
    if (operation_ids == NULL || operation_ids[0] == '\0')
        return;
    struct gone_worker *g = calloc(1, sizeof *g);
    if (g == NULL || (g->worker_id = strdup(worker_id)) == NULL ||
        (g->operation_ids = strdup(operation_ids)) == NULL) {
        if (g != NULL)
            gone_worker_free(g);
        log_warnx("out of memory: the steps of worker %s run again when their leases run out",
                  worker_id);
        return;
    }
    pthread_mutex_lock(&r->gone_lock);
    g->next = r->gone;
    r->gone = g;
    pthread_mutex_unlock(&r->gone_lock);
    osbq_periodic_sooner(r->loop, osbq_store_now_ms());
}

/* One turn of the loop: told_ms is the earliest due time recovery_due gave since the last (0:
 * none). Returns the epoch ms of the next turn. */
static int64_t turn(void *arg, int64_t told_ms)
{
    struct recovery *r = arg;
    take_from_gone(r);
    if (told_ms > 0 && (r->next_due_ms == 0 || told_ms < r->next_due_ms))
        r->next_due_ms = told_ms;
    return tick(r);
}

/* Tells the loop (ctx, a struct recovery) that an operation falls due at due_ms (epoch ms):
 * it scans then, or at once when a worker has room and due_ms passed. The dispatcher calls it
 * with the due time of a worker's READY (dispatch_listener.due); safe from any thread. */
static void recovery_due(void *ctx, int64_t due_ms)
{
    struct recovery *r = ctx;
    osbq_periodic_sooner(r->loop, due_ms);
}

struct recovery *recovery_start(const struct osbq_config *cfg, struct osbq_store *store,
                                struct dispatch *dispatch, struct gateway_metrics *metrics,
                                struct osbq_platforms_holder *platforms, struct osbq_error *err)
{
    struct recovery *r = calloc(1, sizeof *r);
    if (r == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    r->cfg = cfg;
    r->store = store;
    r->dispatch = dispatch;
    r->metrics = metrics;
    r->platforms = platforms;
    if (pthread_mutex_init(&r->gone_lock, NULL) != 0) {
        free(r);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start the recovery thread");
        return NULL;
    }
    r->loop = osbq_periodic_start_at(turn, r, err);
    if (r->loop == NULL) {
        pthread_mutex_destroy(&r->gone_lock);
        free(r);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start the recovery thread");
        return NULL;
    }
    const struct dispatch_listener listener = {
        .due = recovery_due, .gone = recovery_worker_gone, .ctx = r};
    dispatch_listen(dispatch, &listener);
    return r;
}

void recovery_stop(struct recovery **rp)
{
    OSBQ_OWNED_OR_RETURN(struct recovery, r, rp);
    /* Once this returns, the dispatcher calls recovery_due and recovery_worker_gone no more. */
    dispatch_listen(r->dispatch, NULL);
    osbq_periodic_stop(&r->loop);
    while (r->gone != NULL) {
        struct gone_worker *g = r->gone;
        r->gone = g->next;
        gone_worker_free(g);
    }
    pthread_mutex_destroy(&r->gone_lock);
    free(r);
    *rp = NULL;
}
