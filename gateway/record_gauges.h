/* The gateway's thread for the live records' count (docs/decisions/0056): it builds the count
 * by a walk in small steps where it is missing (an upgrade, osbq-ctl recount), then reads it
 * every OSBQ_COUNTS_REFRESH_S for the osbq_instances, osbq_instances_outdated and
 * osbq_bindings gauges (gateway_metrics.c renders them). */
#ifndef OSBQ_GATEWAY_RECORD_GAUGES_H
#define OSBQ_GATEWAY_RECORD_GAUGES_H

#include "error.h"
#include "gateway.h"
#include "periodic.h"

/* Starts the thread (its first read or step at once; failures are logged, not fatal: Redis may
 * come later); stop it with osbq_periodic_stop (a step in progress finishes first). gw is
 * borrowed. NULL with err on failure. */
struct osbq_periodic *record_gauges_start(const struct gateway *gw, struct osbq_error *err);

#endif
