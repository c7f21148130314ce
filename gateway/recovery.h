/* The recovery loop: resends jobs whose claim never came or whose worker died or hung, and
 * fails the operations that used up their attempts. Every gateway runs one; Redis decides
 * which gateway handles a given operation. */
#ifndef OSBQ_GATEWAY_RECOVERY_H
#define OSBQ_GATEWAY_RECOVERY_H

#include "config.h"
#include "dispatch.h"
#include "error.h"
#include "gateway_metrics.h"
#include "store_recovery.h"

struct recovery;

/* Starts the loop. Everything is borrowed and must outlive it. NULL with err on failure. */
struct recovery *recovery_start(const struct osbq_config *cfg, struct osbq_store *store,
                                struct dispatch *dispatch, struct gateway_metrics *metrics,
                                struct osbq_error *err);

/* Stops the loop and frees it; sets *rp to NULL; accepts NULL. */
void recovery_stop(struct recovery **rp);

#endif
