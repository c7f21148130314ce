/* The audit trail's age bound, kept by each gateway. */
#include "events_trim.h"

#include <stdbool.h>
#include <stdlib.h>

#include "log.h"
#include "periodic.h"
#include "store_events.h"

/* The longest pause between two trims: past the size bound by a minute of events at most. */
#define EVENTS_TRIM_MAX_MS 60000

struct events_trim {
    const struct gateway *gw; /* borrowed */
    bool failing;             /* the last trim failed (logged once) */
};

static void trim(void *arg)
{
    struct events_trim *t = arg;
    struct osbq_error err = {0};
    if (osbq_store_events_trim(t->gw->store, t->gw->cfg->events_max, t->gw->cfg->events_max_age_s,
                               &err) < 0) {
        if (!t->failing)
            log_warnx("cannot trim the audit trail's old events (%s), retrying", err.text);
        t->failing = true;
    } else {
        t->failing = false;
    }
}

struct osbq_periodic *events_trim_start(const struct gateway *gw, struct osbq_error *err)
{
    const struct osbq_config *cfg = gw->cfg;
    if (cfg->events_max == 0)
        return NULL;
    uint64_t interval_ms =
        cfg->events_max_age_s > 0 ? (uint64_t)cfg->events_max_age_s * 100 : EVENTS_TRIM_MAX_MS;
    if (interval_ms < 1000)
        interval_ms = 1000;
    if (interval_ms > EVENTS_TRIM_MAX_MS)
        interval_ms = EVENTS_TRIM_MAX_MS;
    struct events_trim *t = calloc(1, sizeof *t);
    if (t != NULL)
        t->gw = gw;
    return osbq_periodic_start_owning((unsigned)interval_ms, trim, NULL, t, err);
}
