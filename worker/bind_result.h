/* A successful bind's result on its way to Redis: the credential lifetime of its plan, and the
 * seal that keeps its credentials out of Redis in plaintext (docs/decisions/0007). */
#ifndef OSBQ_WORKER_BIND_RESULT_H
#define OSBQ_WORKER_BIND_RESULT_H

#include <jansson.h>
#include <stdint.h>
#include <time.h>

#include "secrets.h"

struct backend_call;

/* Gives binding (a bind's result object) a credential lifetime of ttl_s seconds from now,
 * unless its backend set one: when binding has no metadata.expires_at, sets metadata.expires_at
 * to now + ttl_s and metadata.renew_before to now + 80% of ttl_s (replacing a renew_before
 * given alone), both UTC as the spec's "yyyy-mm-ddThh:mm:ss.sZ", e.g.
 * "2026-11-22T03:40:00.0Z". Returns 0 (binding changed or left alone), or -1 when metadata is
 * not an object, a time is out of range or memory ran out (binding possibly half changed). */
int bind_result_add_expiry(json_t *binding, int64_t ttl_s, time_t now);

/* Gives a successful bind (call->result) the credential lifetime of its plan, which sets
 * binding_ttl_s (call only then), through bind_result_add_expiry. A bind that cannot get it
 * fails: credentials the platform believes never expire would outlive what the plan promises.
 * Logs nothing of the binding: it holds credentials. Also the backend authors' kit's
 * (kit/kit_run.c). */
void bind_result_add_plan_expiry(struct backend_call *call);

/* Seals a successful bind's result (call->result.binding) under the first key of secrets
 * (NULL: nothing sealed), bound to its binding in namespace_ (docs/decisions/0007): Redis only
 * ever receives the envelope. Points call->result.binding at the envelope and returns it
 * (caller frees it, after setting call->result.binding back to NULL; the plaintext stays in the
 * call, which zeroes it), or returns NULL when there is nothing to seal. A bind that cannot be
 * sealed fails rather than store plaintext. */
char *bind_result_seal(const struct osbq_secrets *secrets, const char *namespace_,
                       struct backend_call *call);

#endif
