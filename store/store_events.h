/* The audit trail (docs/events.md, docs/decisions/0057): one Redis stream per namespace,
 * "<ns>:events", written by the scripts that record each fact (lib/events.lua) and here for
 * the facts no script records (osbq-ctl reencrypt); read by osbq-ctl events and usage; its age
 * bound kept by the gateways. */
#ifndef OSBQ_STORE_EVENTS_H
#define OSBQ_STORE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "store_fields.h"

/* One event: its stream id ("<ms>-<seq>", the time Redis appended it) and its fields. */
struct osbq_event {
    char id[48];
    int64_t ms;                /* the id's time, epoch ms */
    struct osbq_fields fields; /* "event" (accepted, ended, operator, refused) and the rest */
};

void osbq_events_free(struct osbq_event *events, size_t count);

/* Appends an event of kind with pairs name/value pairs of fields (a NULL or empty value leaves
 * its pair out); nothing when OSBQ_EVENTS_MAX is 0. 0, or -1 with err. */
int osbq_store_event_add(struct osbq_store *store, const char *kind, const char *const *fields,
                         size_t pairs, struct osbq_error *err);

/* Drops the oldest events past max_entries, and those older than max_age_s (0: no age bound),
 * approximately: XTRIM drops whole blocks of the stream. 0, or -1 with err. */
int osbq_store_events_trim(struct osbq_store *store, unsigned max_entries, unsigned max_age_s,
                           struct osbq_error *err);

/* Up to count events with ids after after_id ("0" or "" for the first) and up to until_ms
 * (epoch ms; 0: no end), oldest first, into *out (free with osbq_events_free; NULL when none).
 * With block_ms > 0 and nothing there yet, waits that long for one (XREAD BLOCK). 0 with *n,
 * or -1 with err. */
int osbq_store_events_read(struct osbq_store *store, const char *after_id, int64_t until_ms,
                           unsigned count, int block_ms, struct osbq_event **out, size_t *n,
                           struct osbq_error *err);

#endif
