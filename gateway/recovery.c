/* The recovery loop: every OSBQ_RECOVERY_INTERVAL_MS, takes the operations Redis says are due
 * (store/lua/recover.lua) and resends or abandons them. */
#include "recovery.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "job.h"
#include "log.h"
#include "periodic.h"

/* Operations taken per scan: bounds one scan's work; the rest wait for the next. */
#define RECOVERY_BATCH 200

struct recovery {
    const struct osbq_config *cfg;   /* borrowed */
    struct osbq_store *store;        /* borrowed */
    struct dispatch *dispatch;       /* borrowed: where resent jobs go */
    struct gateway_metrics *metrics; /* borrowed: retries, lease expiries, abandons */
    bool warned;                     /* the last scan failed (logged once) */
    struct osbq_periodic *periodic;  /* the scanning thread */
};

/* Sends the job again with its attempt number raised to the next claim. */
static void resend(struct recovery *r, const struct osbq_recovery_item *item)
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
    job.attempt = item->claims + 1;
    if (osbq_job_encode(&job, &bytes, &len, why, sizeof why) < 0 ||
        dispatch_submit(r->dispatch, item->operation_id, bytes, len) < 0)
        log_warnx("operation %s: cannot resend it now, the next scan will", item->operation_id);
    else {
        log_info("operation %s: resent (attempt %u%s)", item->operation_id, job.attempt,
                 item->lease_expired ? ", its worker's lease ran out" : "");
        osbq_series_add(r->metrics->retries, 1);
        if (item->lease_expired)
            osbq_series_add(r->metrics->lease_expiries, 1);
    }
    free(bytes);
    osbq_job_clear(&job);
}

static void abandon(struct recovery *r, const struct osbq_recovery_item *item)
{
    char description[256];
    (void)snprintf(description, sizeof description,
                   "The operation failed: its worker stopped responding %u times (the backend "
                   "crashed or hung), so the broker gave up.",
                   item->claims);
    struct osbq_error err = {0};
    int rc = osbq_store_abandon(r->store, item->operation_id, description, &err);
    if (rc < 0)
        log_warnx("operation %s: cannot mark it failed (%s), retrying", item->operation_id,
                  err.text);
    else if (rc == 1) {
        log_warnx("operation %s: failed after %u attempts", item->operation_id, item->claims);
        /* The operation's plan is not among what the scan reads. */
        gateway_metrics_operation(r->metrics, item->kind ? item->kind : "unknown", "abandoned",
                                  OSBQ_CATALOG_UNKNOWN_LABEL, OSBQ_CATALOG_UNKNOWN_LABEL);
    }
}

static void scan(void *arg)
{
    struct recovery *r = arg;
    /* Without a worker with room there is nobody to resend to: jobs that only wait for one are
     * not lost, and resending them would only queue copies. Giving up on an operation that used
     * up its attempts needs no worker, so that goes on. */
    struct dispatch_stats stats;
    dispatch_get_stats(r->dispatch, &stats);
    struct osbq_recovery_item *items = NULL;
    size_t count = 0;
    struct osbq_error err = {0};
    if (osbq_store_recover(r->store, RECOVERY_BATCH, r->cfg->max_attempts, r->cfg->claim_timeout_ms,
                           stats.free_slots > 0, &items, &count, &err) < 0) {
        if (!r->warned)
            log_warnx("recovery scan failed (%s), retrying", err.text);
        r->warned = true;
        return;
    }
    r->warned = false;
    for (size_t i = 0; i < count; i++) {
        struct osbq_log_context context = {.operation_id = items[i].operation_id};
        osbq_log_context_set(&context);
        if (items[i].abandon)
            abandon(r, &items[i]);
        else
            resend(r, &items[i]);
        osbq_log_context_set(NULL);
    }
    osbq_recovery_free(items, count);
}

struct recovery *recovery_start(const struct osbq_config *cfg, struct osbq_store *store,
                                struct dispatch *dispatch, struct gateway_metrics *metrics,
                                struct osbq_error *err)
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
    r->periodic = osbq_periodic_start(cfg->recovery_interval_ms, scan, r, err);
    if (r->periodic == NULL) {
        free(r);
        return NULL;
    }
    return r;
}

void recovery_stop(struct recovery **rp)
{
    struct recovery *r = rp ? *rp : NULL;
    if (r == NULL)
        return;
    osbq_periodic_stop(&r->periodic);
    free(r);
    *rp = NULL;
}
