/* The jobs the workers run for one gateway's dispatcher: sent, and neither ended (a READY lists
 * it) nor handed back yet. The dispatcher's fair rounds read it as each tenant's load
 * (dispatch_lanes' struct dispatch_load), and a job a worker hands back gets its owner from it.
 * Used by the dispatcher's thread alone: no lock. */
#ifndef OSBQ_GATEWAY_DISPATCH_RUNNING_H
#define OSBQ_GATEWAY_DISPATCH_RUNNING_H

#include <stddef.h>

#include "dispatch.h"
#include "tenant.h"

struct dispatch_running;

/* Whose a running job is, as it was sent. */
struct dispatch_running_job {
    char tenant[TENANT_KEY_MAX];               /* its tenant's key ("" when unknown) */
    unsigned weight;                           /* its tenant's weight */
    char platform[OSBQ_PLATFORM_NAME_MAX + 1]; /* its wait's platform label */
    const void *worker;                        /* the worker it went to: compared, never used */
};

/* An empty table, or NULL when memory ran out. */
struct dispatch_running *dispatch_running_new(void);

/* Frees the table and sets *rp to NULL; accepts NULL and *rp NULL. */
void dispatch_running_destroy(struct dispatch_running **rp);

/* Counts operation_id's job as running on worker for owner (its strings copied, truncated to
 * their sizes above). One already counted, or memory running out, leaves it uncounted: that
 * costs its tenant only its place in the fair rounds. */
void dispatch_running_add(struct dispatch_running *r, const char *operation_id,
                          const struct dispatch_owner *owner, const void *worker);

/* The running job of operation_id, or NULL; valid until the table next changes. */
const struct dispatch_running_job *dispatch_running_find(const struct dispatch_running *r,
                                                         const char *operation_id);

/* operation_id's job ended or came back: no longer counted (nothing when it is not). */
void dispatch_running_end(struct dispatch_running *r, const char *operation_id);

/* Ends the jobs whose operation ids ended lists, separated by spaces (a READY's ended frame:
 * written into, as strtok_r does); accepts NULL. */
void dispatch_running_end_listed(struct dispatch_running *r, char *ended);

/* Ends every job that went to worker: it is gone, and its READYs with it. Returns their
 * operation ids separated by spaces (free it), NULL when there were none (or memory ran out:
 * those left out wait for their leases). */
char *dispatch_running_end_worker(struct dispatch_running *r, const void *worker);

/* How many jobs of tenant (its key) are running: struct dispatch_load's running, ctx the table. */
unsigned dispatch_running_load(void *ctx, const char *tenant);

/* How many jobs are running, of all tenants. */
size_t dispatch_running_count(const struct dispatch_running *r);

#endif
