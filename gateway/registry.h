/* The gateway's entry in the Redis registry of live gateways, renewed by a small thread, so
 * workers find and connect to it (the pinned bus topology); the same thread publishes its status
 * and load for osbq-ctl. */
#ifndef OSBQ_GATEWAY_REGISTRY_H
#define OSBQ_GATEWAY_REGISTRY_H

#include "error.h"
#include "gateway.h"

struct registry;

/* Publishes gw's bus endpoint and status now (a failure is logged, not fatal: Redis may come
 * later) and keeps them fresh every OSBQ_BUS_REGISTRY_RENEW_MS. gw is borrowed. NULL with err on
 * failure. */
struct registry *registry_start(const struct gateway *gw, struct osbq_error *err);

/* Stops renewing and removes the entry, so workers drop this gateway at once; frees. */
void registry_stop(struct registry **rp);

#endif
