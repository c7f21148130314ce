/* The audit trail's bounds (OSBQ_EVENTS_MAX entries, OSBQ_EVENTS_MAX_AGE_S, docs/events.md):
 * each gateway drops the oldest events past them now and then (XTRIM, whole blocks); the
 * scripts that append do not trim. */
#ifndef OSBQ_GATEWAY_EVENTS_TRIM_H
#define OSBQ_GATEWAY_EVENTS_TRIM_H

#include "error.h"
#include "gateway.h"
#include "periodic.h"

/* Starts the thread: a trim at once and every tenth of the age bound, between 1 s and a minute
 * (a minute without one); stop it with osbq_periodic_stop. NULL without events (nothing to do:
 * not an error), or with err on failure. */
struct osbq_periodic *events_trim_start(const struct gateway *gw, struct osbq_error *err);

#endif
