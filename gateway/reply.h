/* Replies: the only place that turns an osbq error or a success into a status and a JSON body. */
#ifndef OSBQ_GATEWAY_REPLY_H
#define OSBQ_GATEWAY_REPLY_H

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "request.h"

/* The fixed facts of one error code: its HTTP status, the OSB `error` word (or NULL), and the
 * description used when the caller gives none. */
struct reply_error_row {
    unsigned status;
    const char *error;
    const char *description;
};

/* The row for code; codes without an HTTP meaning map to 500. */
const struct reply_error_row *reply_error_row(enum osbq_err code);

/* Fills out with the error's status and {"error"?, "description"} body. description may be
 * NULL or empty for the row's default; the 422 codes always keep their fixed texts. */
void reply_error(struct reply *out, enum osbq_err code, const char *description);

/* Like reply_error, adding the spec's instance_usable / update_repeatable booleans to the
 * body when they are 0 or 1 (-1 leaves a field out). */
void reply_error_flags(struct reply *out, enum osbq_err code, const char *description,
                       int instance_usable, int update_repeatable);

/* Fills out with an error from err (code and text). */
void reply_error_from(struct reply *out, const struct osbq_error *err);

/* Fills out with the error code and a formatted description. */
void reply_errorf(struct reply *out, enum osbq_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fills out with a 400 naming the problem. Returns false, for `return reply_bad_request(...)`. */
bool reply_bad_request(struct reply *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Answers 503 because Redis failed (err, logged here once). */
void reply_store_unavailable(struct reply *out, const struct osbq_error *err);

/* After a store read whose result function returned found: answers 503 when the read failed
 * (found < 0, err), 404 "The <what> does not exist." when there is no record (found 0) or the
 * request may not see it (hidden), and returns true; returns false, answering nothing, when
 * the record is there to show. */
bool reply_read_missing(struct reply *out, int found, bool hidden, const char *what,
                        const struct osbq_error *err);

/* Fills out with status and the JSON object body, which it steals (json_decref'd here). */
void reply_json(struct reply *out, unsigned status, json_t *body);

/* Fills out with status and a body that outlives the reply (borrowed). */
void reply_static(struct reply *out, unsigned status, const char *body, size_t len);

/* Makes out a REPLY_DEFERRED: call goes to Redis, then resume(state) answers. Takes call, and
 * state when state_free is given (state_free NULL: state is borrowed, or NULL). */
void reply_defer(struct reply *out, struct osbq_store_call *call, reply_resume_fn resume,
                 void *state, void (*state_free)(void *state));

/* reply_defer for a call just made: when it could not be made (call NULL, err says why),
 * answers err instead and frees state with state_free. */
void reply_defer_call(struct reply *out, struct osbq_store_call *call, const struct osbq_error *err,
                      reply_resume_fn resume, void *state, void (*state_free)(void *state));

/* Makes out a REPLY_SLOT: the request waits for a worker's slot until deadline_ms at the
 * latest, then resume(state) goes on. Takes state when state_free is given. The caller sets
 * out's operation_id, tenant, weight and platform: the wait's place in the lanes. */
void reply_wait_slot(struct reply *out, int64_t deadline_ms, reply_slot_fn resume, void *state,
                     void (*state_free)(void *state));

/* Frees what a slot wait owns (its state, when resume never ran) and zeroes it. */
void reply_slot_clear(struct reply_slot *slot);

/* Frees what a deferral owns and zeroes it. */
void reply_defer_clear(struct reply_defer *defer);

/* Frees what out owns (its job included) and zeroes it: a REPLY_NOW without a status. */
void reply_clear(struct reply *out);

/* Frees what a wait owns and zeroes it. */
void reply_wait_clear(struct reply_wait *wait);

#endif
