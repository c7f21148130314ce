/* Helpers every OSB handler uses: body parsing, field checks, ids, digests. No I/O. */
#ifndef OSBQ_GATEWAY_OSB_REQUEST_H
#define OSBQ_GATEWAY_OSB_REQUEST_H

#include <jansson.h>
#include <sodium.h>
#include <stdbool.h>

#include "gateway.h"
#include "reply.h"
#include "request.h"

/* API versions where behaviour changes (major*100+minor). */
#define API_ASYNC       207 /* accepts_incomplete, 202, last_operation */
#define API_OPERATION   209 /* the `operation` field */
#define API_FETCH       214 /* GET of instances and bindings; dashboard_url on update */
#define API_RETRY_AFTER 215 /* Retry-After; maintenance_info */
#define API_METADATA    216 /* metadata; instance_usable, update_repeatable */
#define API_ATTRIBUTES  217 /* metadata.attributes */

/* Longest id accepted in a path (bytes, decoded), as the spec's guidance on string lengths. */
#define OSB_ID_MAX 255

/* Parses the request body as a JSON object (duplicate keys rejected). Returns a new reference,
 * or NULL with a 400 in out. */
json_t *osb_parse_body(const struct request *req, struct reply *out);

/* True when the request allows an asynchronous answer (and its version knows them). */
bool osb_accepts_incomplete(const struct request *req);

/* Checks an id from the path; false with a 400 in out. */
bool osb_valid_id(const char *id, const char *what, struct reply *out);

/* Reads body[key] when present: it must be a non-empty string (*value borrowed) or, for the
 * object variant, an object (*value borrowed). Absent: *value = NULL and true. Wrong: false with
 * a 400 in out. */
bool osb_optional_string(json_t *body, const char *key, const char **value, struct reply *out);
bool osb_optional_object(json_t *body, const char *key, json_t **value, struct reply *out);

/* Compact JSON text of value with sorted keys (canonical); NULL for NULL. Caller frees. */
char *osb_canonical(const json_t *value);

/* A request's idempotency digest: hex BLAKE2b-128 of the canonical JSON (osb_canonical) of an
 * object of the members that identify it. The text is hashed as it is streamed from the
 * members' own texts (the canonical parameters and context a request stores anyway), so no
 * object is built and nothing is dumped twice; the digest is the same as the sorted dump's
 * (stored digests stay valid). Members go in strcmp order of their keys, as a sorted dump
 * writes them; a NULL value is JSON null. */
struct osb_digest {
    crypto_generichash_state state; /* BLAKE2b over the text so far */
    bool failed;                    /* out of memory escaping a string */
    char next;                      /* what goes before the next member: '{' or ',' */
};
void osb_digest_begin(struct osb_digest *d);
/* A member whose value is JSON text already canonical (osb_canonical's), or NULL. */
void osb_digest_json(struct osb_digest *d, const char *key, const char *canonical);
/* A member whose value is a string (UTF-8), or NULL. */
void osb_digest_string(struct osb_digest *d, const char *key, const char *value);
/* The hex digest; false when a string could not be escaped (out of memory). */
bool osb_digest_end(struct osb_digest *d, char out[33]);

/* A new random operation id (32 hex characters). */
void osb_new_operation_id(char out[33]);

/* 202 with the operation (2.9+) and, when given, the dashboard URL. */
void osb_reply_accepted(struct reply *out, unsigned api_version, const char *operation_id,
                        const char *dashboard_url);

/* Sets out->wait so http.c suspends the request until operation_id ends or timeout_ms passes;
 * job (owned, may be NULL) is sent once the request is suspended. binding_id is NULL for
 * instance operations. */
void osb_wait_for(struct reply *out, const struct request *req, enum osbq_job_kind kind,
                  const char *instance_id, const char *binding_id, int64_t timeout_ms,
                  const char *operation_id, const char *dashboard_url, char *job, size_t job_len);

/* An operation Redis has just recorded, or the identical one already running. */
struct osb_started {
    enum osbq_job_kind kind; /* the operation's kind */
    const char *instance_id; /* decoded path ids (binding_id NULL for instances) */
    const char *binding_id;
    const char *operation_id;       /* the new operation's id (the running one's comes from
                                     * the begin reply) */
    bool async;                     /* the platform accepts 202 */
    int64_t timeout_ms;             /* how long a synchronous request waits */
    const char *accepted_dashboard; /* dashboard URL for a 202, or NULL */
    const char *wait_dashboard;     /* dashboard URL for the synchronous answer, or NULL */
};

/* Answers OSBQ_BEGIN_ACCEPTED and OSBQ_BEGIN_IN_PROGRESS, the same for every kind: 202 with the
 * operation, or a wait for its outcome. Takes job: sent now (async), sent once the request is
 * suspended (sync), or freed when the operation was already running. */
void osb_reply_started(const struct gateway *gw, const struct request *req,
                       const struct osb_started *s, const struct osbq_begin_reply *got, char *job,
                       size_t job_len, struct reply *out);

/* Fills the job fields every operation takes from the request itself (API version, identity
 * and trace headers) and sets the first attempt. The strings stay borrowed from req. */
void osb_job_from_request(struct osbq_job *job, const struct request *req);

/* Answers 503 because Redis failed (err, logged here once). */
void osb_store_unavailable(struct reply *out, const struct osbq_error *err);

/* Encodes job; NULL with a 400 in out when it cannot be (the caller checked the fields). The
 * caller frees the bytes. */
char *osb_encode_job(const struct osbq_job *job, size_t *len, struct reply *out);

/* Fills out with the error code and a formatted description. */
void osb_error_text(struct reply *out, enum osbq_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fills out with a 400 naming the problem. Returns false, for `return osb_bad_request(...)`. */
bool osb_bad_request(struct reply *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
