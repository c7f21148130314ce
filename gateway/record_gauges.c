/* The gateway's thread for the live records' count: walk where it is missing, read it now and
 * then. */
#include "record_gauges.h"

#include <stdbool.h>
#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "periodic.h"
#include "store_counts.h"

/* After a failed read or step, the next try. */
#define RECORD_GAUGES_RETRY_MS 5000

struct record_gauges {
    const struct gateway *gw; /* borrowed */
    bool walking;             /* the count was not built at the last look */
    bool failing;             /* the last call failed (logged once) */
    int64_t walked;           /* records this gateway counted in the current walk */
};

static void failed(struct record_gauges *rg, const char *what, const struct osbq_error *err)
{
    if (!rg->failing)
        log_warnx("cannot %s the count of live records (%s), retrying", what, err->text);
    rg->failing = true;
}

/* One turn: a step of the walk while the count is not built, else a read for the gauges.
 * Returns when the next turn is due (epoch ms). */
static int64_t turn(void *arg, int64_t told_ms)
{
    (void)told_ms;
    struct record_gauges *rg = arg;
    const struct gateway *gw = rg->gw;
    struct osbq_error err = {0};
    if (rg->walking) {
        int64_t counted = 0, started_ms = osbq_clock_ms();
        int built = osbq_store_count_records_step(gw->store, OSBQ_COUNT_WALK_BATCH, &counted, &err);
        int64_t took_ms = osbq_clock_ms() - started_ms;
        if (built < 0) {
            failed(rg, "build", &err);
            return osbq_store_now_ms() + RECORD_GAUGES_RETRY_MS;
        }
        rg->failing = false;
        rg->walked += counted;
        if (built == 0)
            return osbq_store_now_ms() + osbq_count_walk_pause_ms(took_ms);
        log_info("the count of live records is built (this gateway counted %lld of them)",
                 (long long)rg->walked);
        rg->walking = false;
        rg->walked = 0;
    }
    struct osbq_record_counts counts;
    if (osbq_store_record_counts(gw->store, &counts, &err) < 0) {
        failed(rg, "read", &err);
        return osbq_store_now_ms() + RECORD_GAUGES_RETRY_MS;
    }
    rg->failing = false;
    if (!counts.built) {
        /* Never built, or dropped by osbq-ctl recount: walk (with the other gateways). */
        if (!rg->walking)
            log_info("counting the live records: a walk of the namespace, %d keys a step",
                     OSBQ_COUNT_WALK_BATCH);
        rg->walking = true;
    }
    gateway_metrics_record_counts(gw->metrics, gw->catalog, &counts);
    return osbq_store_now_ms() +
           (rg->walking ? OSBQ_COUNT_WALK_PAUSE_MS : (int64_t)gw->cfg->counts_refresh_s * 1000);
}

struct osbq_periodic *record_gauges_start(const struct gateway *gw, struct osbq_error *err)
{
    struct record_gauges *rg = calloc(1, sizeof *rg);
    if (rg != NULL)
        rg->gw = gw;
    return osbq_periodic_start_owning(0, NULL, turn, rg, err);
}
