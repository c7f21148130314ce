/* The job: one OSB operation as it travels from a gateway to a worker, and its msgpack codec.
 * No I/O here; see docs/protocol.md for the wire format. */
#ifndef OSBQ_JOB_H
#define OSBQ_JOB_H

#include <stddef.h>
#include <stdint.h>

/* Wire format version; bump it on any change of fields, names or types. */
#define OSBQ_JOB_VERSION 3

/* Largest encoded job the decoder accepts; the gateway's body limit keeps real jobs far below. */
#define OSBQ_JOB_MAX_BYTES (8u * 1024u * 1024u)

/* The operation a job asks for. */
enum osbq_job_kind {
    OSBQ_JOB_KIND_NONE = 0, /* no kind: what osbq_job_kind_from_name returns for unknown names */
    OSBQ_JOB_PROVISION,
    OSBQ_JOB_UPDATE,
    OSBQ_JOB_DEPROVISION,
    OSBQ_JOB_BIND,
    OSBQ_JOB_UNBIND,
};

/* One job. Every string is NUL-terminated; optional strings are NULL when absent. JSON-valued
 * fields hold compact JSON text. A decoded job's strings all point into one block it owns
 * (owned, freed by osbq_job_clear); a job a sender fills for encoding borrows its strings and
 * leaves owned NULL. */
struct osbq_job {
    uint32_t version;             /* format version decoded from; the encoder ignores it and
                                   * always writes OSBQ_JOB_VERSION */
    const char *operation_id;     /* unique id of this operation; required */
    enum osbq_job_kind kind;      /* what to do; required */
    const char *instance_id;      /* service instance id; required */
    const char *binding_id;       /* service binding id; required for bind and unbind, else
                                   * usually NULL (carried when set) */
    const char *service_id;       /* catalog service id; required */
    const char *plan_id;          /* catalog plan id; required */
    const char *parameters;       /* JSON object text of the request's `parameters`, or NULL */
    const char *context;          /* JSON object text of the request's `context`, or NULL */
    const char *bind_resource;    /* JSON object text of the request's `bind_resource`, or NULL */
    const char *maintenance_info; /* JSON object text of the request's `maintenance_info`, or
                                   * NULL */
    uint32_t api_version;         /* X-Broker-API-Version as major*100+minor, e.g. 217; required */
    const char *originating_identity;   /* X-Broker-API-Originating-Identity header, or NULL */
    const char *request_identity;       /* X-Broker-API-Request-Identity header as sent, or NULL */
    const char *trace;                  /* JSON object text of the B3 trace headers sent, or NULL */
    const char *predecessor_binding_id; /* bind: the binding it rotates (2.17), or NULL */
    uint32_t attempt; /* 1 for the first delivery, raised on each resend; required, >= 1 */
    char *owned;      /* the block the strings point into when the job owns them, or NULL */
};

/* Encodes job into a new buffer. On success sets *out (caller frees with free()) and *out_len
 * and returns 0; on failure (a required field missing or invalid: an empty id, api or attempt
 * out of range, an unknown kind; output over OSBQ_JOB_MAX_BYTES; out of memory) returns -1 and
 * leaves *out untouched. errbuf, when not NULL, receives a one-line reason. */
int osbq_job_encode(const struct osbq_job *job, char **out, size_t *out_len, char *errbuf,
                    size_t errbuf_len);

/* Decodes exactly len bytes of buf into *job, its strings in one block the job owns. A block
 * *job already owns is overwritten, not freed: pass a zeroed or cleared job.
 * Never reads outside buf. Rejects an unknown version, an unknown or duplicate key, a
 * wrong type, a missing required field, an unknown kind, truncated or trailing bytes and
 * strings holding NUL. On success returns 0 and the caller owns *job's block (release with
 * osbq_job_clear); on failure returns -1, leaves *job all-NULL, and writes a one-line reason
 * into errbuf when not NULL. */
int osbq_job_decode(const char *buf, size_t len, struct osbq_job *job, char *errbuf,
                    size_t errbuf_len);

/* Copies src into *dst, every string into one block dst owns (osbq_job_clear). Returns 0, or
 * -1 when out of memory (*dst zeroed). */
int osbq_job_copy(const struct osbq_job *src, struct osbq_job *dst);

/* Frees the block the job owns (its strings with it) and zeroes it; accepts a zeroed job. */
void osbq_job_clear(struct osbq_job *job);

/* "provision", "update", ...; NULL for an unknown kind. */
const char *osbq_job_kind_name(enum osbq_job_kind kind);

/* The kind named name, or OSBQ_JOB_KIND_NONE when name is unknown. */
enum osbq_job_kind osbq_job_kind_from_name(const char *name);

#endif
