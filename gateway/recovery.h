/* The recovery loop: resends jobs whose claim never came or whose worker died or hung, sends
 * waiting operations whose next step is due (polls), and fails the operations that used up
 * their attempts. Every gateway runs one; Redis decides
 * which gateway handles a given operation. */
#ifndef OSBQ_GATEWAY_RECOVERY_H
#define OSBQ_GATEWAY_RECOVERY_H

#include <stdint.h>

#include "config.h"
#include "dispatch.h"
#include "error.h"
#include "gateway_metrics.h"
#include "platforms.h"
#include "store_recovery.h"

struct recovery;

/* Starts the loop; platforms gives the weights of the tenants whose work it resends (NULL:
 * every weight 1). Everything is borrowed and must outlive it. NULL with err on failure. */
struct recovery *recovery_start(const struct osbq_config *cfg, struct osbq_store *store,
                                struct dispatch *dispatch, struct gateway_metrics *metrics,
                                struct osbq_platforms_holder *platforms, struct osbq_error *err);

/* Whether the workers have room for another batch of due work: a free slot, and fewer than
 * batch jobs of the recovery loop still queued in the dispatcher's due lane (the fairness rule:
 * due work is taken from Redis no faster than workers run it, and the lanes take turns so it
 * never delays a new job by more than one; docs/reliability.md). */
bool recovery_has_room(const struct dispatch_stats *stats, size_t batch);

/* When the loop runs next (epoch ms), at now: the next full scan, or the earliest entry known
 * (next_due_ms, 0: none) when sooner; one already due (no worker had room, or more was due than
 * a pass takes) is looked at again a short tick later. */
int64_t recovery_wake_ms(int64_t now, int64_t next_scan_ms, int64_t next_due_ms);

/* Stops the loop and frees it; sets *rp to NULL; accepts NULL. */
void recovery_stop(struct recovery **rp);

#endif
