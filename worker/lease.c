/* The lease on a claimed operation: each renewal writes the latest progress text and moves the
 * lease's end (the progress script), and its answer says whether the operation is still this
 * worker's. */
#include "lease.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "store_operations.h"

/* After a failed renewal, how soon to try again (capped by a third of the lease). */
#define RENEW_RETRY_MS 1000

void lease_init(struct lease *lease, struct osbq_store *store, const char *operation_id,
                const char *worker_id, int64_t lease_ms, int64_t now)
{
    *lease = (struct lease){
        .store = store,
        .operation_id = operation_id,
        .worker_id = worker_id,
        .lease_ms = lease_ms,
        .renew_by_ms = now + lease_ms / 3,
        .text_ms = now,
    };
}

bool lease_due(const struct lease *lease, int64_t now)
{
    return now >= lease->renew_by_ms;
}

bool lease_text_due(const struct lease *lease, int64_t now)
{
    return now - lease->text_ms >= LEASE_TEXT_MIN_INTERVAL_MS || lease_due(lease, now);
}

/* The verdict of the answer rc of a renewal sent at sent_ms (err: why it failed), read at now;
 * sets when the next renewal is due. */
static enum lease_verdict verdict_of(struct lease *lease, int rc, const struct osbq_error *err,
                                     int64_t sent_ms, int64_t now)
{
    if (rc == 2) {
        log_info("operation %s: halted by a delete of its instance or binding, stopping",
                 lease->operation_id);
        lease->failing = false;
        return LEASE_HALTED;
    }
    if (rc > 0) {
        if (lease->failing)
            log_info("operation %s: lease renewed again", lease->operation_id);
        lease->failing = false;
        lease->renew_by_ms = sent_ms + lease->lease_ms / 3;
        return LEASE_HELD;
    }
    if (rc == 0) {
        log_warnx("operation %s: lease lost (the operation ended or another worker took it "
                  "over), stopping without recording a result",
                  lease->operation_id);
        return LEASE_LOST;
    }
    if (!lease->failing)
        log_warnx("operation %s: cannot renew the lease (%s), retrying", lease->operation_id,
                  err->text);
    lease->failing = true;
    int64_t retry_ms = lease->lease_ms / 3;
    lease->renew_by_ms = now + (retry_ms < RENEW_RETRY_MS ? retry_ms : RENEW_RETRY_MS);
    return LEASE_FAILING;
}

/* Reads and frees the answered renewal. */
static enum lease_verdict read_renewal(struct lease *lease)
{
    struct osbq_error err = {0};
    int rc = osbq_store_progress_result(lease->renewal, &err);
    osbq_store_call_free(&lease->renewal);
    return verdict_of(lease, rc, &err, lease->renewal_sent_ms, osbq_clock_ms());
}

/* Sends a renewal without waiting; false when it cannot go (no pipeline, or out of memory). */
static bool send_renewal(struct lease *lease, const char *description, int64_t now)
{
    struct osbq_error err = {0};
    struct osbq_store_call *call = osbq_store_progress_call(
        lease->store, lease->operation_id, lease->worker_id, description, lease->lease_ms, &err);
    if (call == NULL)
        return false;
    if (osbq_store_call_start(lease->store, call) < 0) {
        osbq_store_call_free(&call);
        return false;
    }
    lease->renewal = call;
    lease->renewal_sent_ms = now;
    if (description != NULL)
        lease->text_ms = now;
    /* Not due again before its answer is read (verdict_of sets the next time). */
    lease->renew_by_ms = now + lease->lease_ms / 3;
    return true;
}

/* Renews without waiting unless a renewal is out (description then follows it) or the store
 * cannot send one (then waiting). */
static enum lease_verdict start(struct lease *lease, const char *description, int64_t now)
{
    if (lease->renewal != NULL) {
        /* One at a time: the one out renews the lease; the latest text follows it. */
        if (description != NULL) {
            char *text = strdup(description);
            if (text != NULL) {
                free(lease->pending_text);
                lease->pending_text = text;
            }
        }
        return LEASE_HELD;
    }
    if (send_renewal(lease, description, now))
        return LEASE_HELD;
    return lease_renew(lease, description, now);
}

enum lease_verdict lease_renew(struct lease *lease, const char *description, int64_t now)
{
    if (lease->renewal != NULL) {
        enum lease_verdict settled = lease_settle(lease);
        if (settled == LEASE_LOST || settled == LEASE_HALTED)
            return settled;
    }
    struct osbq_error err = {0};
    int rc = osbq_store_progress(lease->store, lease->operation_id, lease->worker_id, description,
                                 lease->lease_ms, &err);
    /* Counted even when the write failed, so a Redis outage costs one attempt per interval. */
    if (description != NULL)
        lease->text_ms = now;
    return verdict_of(lease, rc, &err, now, now);
}

enum lease_verdict lease_renew_start(struct lease *lease, const char *description, int64_t now)
{
    enum lease_verdict verdict = lease_poll(lease, now);
    if (verdict == LEASE_LOST || verdict == LEASE_HALTED)
        return verdict;
    enum lease_verdict sent = start(lease, description, now);
    return sent != LEASE_HELD ? sent : verdict;
}

enum lease_verdict lease_poll(struct lease *lease, int64_t now)
{
    if (lease->renewal == NULL || !osbq_store_call_answered(lease->renewal))
        return LEASE_HELD;
    enum lease_verdict verdict = read_renewal(lease);
    char *text = lease->pending_text;
    lease->pending_text = NULL;
    if (text != NULL && verdict == LEASE_HELD)
        verdict = start(lease, text, now);
    free(text);
    return verdict;
}

enum lease_verdict lease_settle(struct lease *lease)
{
    if (lease->renewal == NULL)
        return LEASE_HELD;
    osbq_store_call_wait(lease->renewal);
    enum lease_verdict verdict = read_renewal(lease);
    free(lease->pending_text);
    lease->pending_text = NULL;
    return verdict;
}

void lease_clear(struct lease *lease)
{
    if (lease->renewal != NULL) {
        osbq_store_call_wait(lease->renewal);
        osbq_store_call_free(&lease->renewal);
    }
    free(lease->pending_text);
    lease->pending_text = NULL;
}
