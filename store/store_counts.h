/* The live records' count: instances and bindings (state not gone) by kind, state, plan and
 * maintenance version, kept by the scripts that write records (store/lua/lib/record_counts.lua,
 * docs/decisions/0056). osbq-ctl stats and the gateways' osbq_instances gauges read it; the
 * gateways build it by a walk where it is missing (an upgrade, osbq-ctl recount). */
#ifndef OSBQ_STORE_COUNTS_H
#define OSBQ_STORE_COUNTS_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* One line of the count. */
struct osbq_record_count {
    bool binding;              /* a binding's; an instance's otherwise */
    char *state;               /* its state (never "gone") */
    char *plan_id;             /* its plan ("" when the record names none) */
    char *maintenance_version; /* an instance's maintenance_info version ("" when none) */
    int64_t count;             /* records in it */
};

/* The whole count. Owned: osbq_record_counts_clear. */
struct osbq_record_counts {
    bool built;                     /* the walk is over: the count holds every live record */
    bool kept;                      /* a count exists (built or being built) */
    struct osbq_record_count *list; /* the lines, in no particular order */
    size_t count;
};

/* Reads the count (one HGETALL: its size is the number of distinct lines, not of records).
 * 0, or -1 with err. */
int osbq_store_record_counts(struct osbq_store *store, struct osbq_record_counts *out,
                             struct osbq_error *err);

void osbq_record_counts_clear(struct osbq_record_counts *counts);

/* Keys of the namespace (of every kind) the walk looks at per step (SCAN's COUNT), and the
 * pause after a step: OSBQ_COUNT_WALK_PAUSE_FACTOR times as long as the step took, at least
 * OSBQ_COUNT_WALK_PAUSE_MS, so that one walker (a gateway, osbq-ctl recount) takes at most a
 * tenth of Redis's time; the walkers share one walk: each step moves it on. */
#define OSBQ_COUNT_WALK_BATCH        1000
#define OSBQ_COUNT_WALK_PAUSE_MS     10
#define OSBQ_COUNT_WALK_PAUSE_FACTOR 9

/* The pause after a step of the walk that took took_ms. */
int64_t osbq_count_walk_pause_ms(int64_t took_ms);

/* One step of the walk that builds the count (store/lua/count_records.lua: SCAN with a COUNT
 * of batch); starts a new count where none exists. Returns 1 when the count is built, 0 when
 * the walk goes on (*counted: the records this step added), -1 with err. */
int osbq_store_count_records_step(struct osbq_store *store, unsigned batch, int64_t *counted,
                                  struct osbq_error *err);

/* Drops the count: the gateways walk every record again (osbq-ctl recount, after a stack ran
 * a release without the count beside this one). 0, or -1 with err. */
int osbq_store_record_counts_drop(struct osbq_store *store, struct osbq_error *err);

#endif
