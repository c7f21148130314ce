/* The store as the gateway's recovery loop uses it: operations whose claim never came or whose
 * lease ran out, to resend or to abandon, and waiting operations whose next step is due, to
 * send for that step (store/lua/recover.lua). */
#ifndef OSBQ_STORE_RECOVERY_H
#define OSBQ_STORE_RECOVERY_H

#include "store.h"

/* One operation the recovery loop must act on. Owned by the array (osbq_recovery_free). */
struct osbq_recovery_item {
    char *operation_id; /* the operation */
    bool abandon;       /* true: it used up its attempts, fail it; false: send its job again */
    bool halted;        /* with abandon: a delete halted it and no step of it runs (any more):
                         * it ends failed now (docs/decisions/0051), no attempt used up */
    bool poll;          /* it waits and its next step is due: send its job for that step (not
                         * a resend: no attempt used) */
    uint32_t claims;    /* how many times a worker claimed it */
    bool lease_expired; /* resend: it was running and its worker's lease ran out */
    bool revoked;       /* resend: it was running and was taken from a worker seen to go
                         * (osbq_store_revoke) */
    char *kind;         /* the operation's kind, or NULL when unknown */
    char *job;          /* resend: the encoded job as accepted */
    size_t job_len;     /* bytes in job */
    char *tenant;       /* whose work it is (docs/reliability.md, fairness), or NULL when it
                         * was accepted before tenants were recorded */
};

/* Takes up to limit operations whose claim never came (claim_timeout_ms after they were
 * accepted or last sent), whose lease ran out, or whose next step is due (polls), moving each
 * one's due time forward so no other process takes it too. Operations claimed max_attempts
 * times are marked for abandon; the others are taken only when can_resend (a worker has
 * room). Returns 0 with *items (count *count; free with osbq_recovery_free) and *next_due_ms
 * (when not NULL) the epoch ms the earliest entry left is due at (0: none), or -1 with err. */
int osbq_store_recover(struct osbq_store *store, unsigned limit, unsigned max_attempts,
                       int64_t claim_timeout_ms, bool can_resend, struct osbq_recovery_item **items,
                       size_t *count, int64_t *next_due_ms, struct osbq_error *err);
void osbq_recovery_free(struct osbq_recovery_item *items, size_t count);

/* The worker worker_id was seen to go: of the operations operation_ids names (separated by
 * spaces: the jobs this gateway sent it that it did not end), takes those still its own, or
 * still waiting for the claim of the job sent to it, as a lease expiry would take them, at once
 * (store/lua/revoke.lua, docs/decisions/0052). Returns 0 with *items (count *count; free with
 * osbq_recovery_free) to resend, poll or abandon as osbq_store_recover's, or -1 with err. */
int osbq_store_revoke(struct osbq_store *store, const char *worker_id, const char *operation_ids,
                      unsigned max_attempts, int64_t claim_timeout_ms,
                      struct osbq_recovery_item **items, size_t *count, struct osbq_error *err);

/* Fails an operation whose attempts are used up, as osbq_store_finish would, whoever held it.
 * Returns 1, 0 when it ended or was claimed again meanwhile, -1 with err. */
int osbq_store_abandon(struct osbq_store *store, const char *operation_id, const char *description,
                       struct osbq_error *err);

#endif
