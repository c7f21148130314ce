/* What a gateway remembers of Redis's answers so that later requests need not ask again: small
 * values by string key, copied in and out, in a czmq hash table under one mutex (a memo).
 * Bounded: past its most entries a new key makes it forget them all, to be learned again from
 * the next answers. Thread-safe. Two memos: the plans' averages (decision 0043) and the
 * instances' tenants (decision 0045). */
#ifndef OSBQ_GATEWAY_MEMO_H
#define OSBQ_GATEWAY_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tenant.h"

struct memo;

/* A new, empty table of at most max entries; NULL when out of memory. */
struct memo *memo_new(size_t max);
void memo_free(struct memo **mp);

/* ---- The plans' average durations that set a poll's Retry-After, as a gateway last read them
 * from Redis: a poll that names its operation reads only the operation (decision 0043), and an
 * average read a few seconds ago is as good a hint as one read now. ---- */

/* How long an average read from Redis answers polls before it is read again (seconds). */
#define AVERAGES_MAX_AGE_S 10.0

/* The most averages kept (memo_new(AVERAGES_MAX)); past it, all are forgotten and read again
 * as polls need them (the catalog's plans times four kinds stay far below). */
#define AVERAGES_MAX 4096

/* The average of kind on plan (ms, or -1: none recorded yet) when read less than
 * AVERAGES_MAX_AGE_S before now (seconds, osbq_clock_seconds): true with *average_ms. */
bool averages_get(struct memo *averages, const char *plan, const char *kind, double now,
                  int64_t *average_ms);

/* Remembers average_ms (-1: none recorded) for kind on plan, read at now. */
void averages_put(struct memo *averages, const char *plan, const char *kind, double now,
                  int64_t average_ms);

/* ---- The tenants of instances, as a gateway learned them from its begin scripts' answers (an
 * operation is its instance's tenant's): where a synchronous request waits for a worker's slot
 * before its begin (decision 0045) when the request itself does not say its tenant (a DELETE has
 * no body). ---- */

/* The most instances remembered (memo_new(INSTANCE_TENANTS_MAX)); past it, all are forgotten
 * and learned again from the next answers (a lookup that misses only costs the request its
 * wait: it begins at once). */
#define INSTANCE_TENANTS_MAX 16384

/* The tenant key recorded for instance_id, copied into out: true, or false when unknown. */
bool instance_tenants_get(struct memo *tenants, const char *instance_id, char out[TENANT_KEY_MAX]);

/* Remembers tenant (a key of at most TENANT_KEY_MAX - 1 bytes; longer is not kept) as
 * instance_id's. */
void instance_tenants_put(struct memo *tenants, const char *instance_id, const char *tenant);

#endif
