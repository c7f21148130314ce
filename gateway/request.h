/* What a handler sees of an HTTP request, and what it answers: plain data, no libmicrohttpd. */
#ifndef OSBQ_GATEWAY_REQUEST_H
#define OSBQ_GATEWAY_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "platforms.h"
#include "tenant.h"

/* HTTP methods the router knows, as bits so a route can accept several. */
enum http_method {
    HTTP_GET = 1 << 0,
    HTTP_PUT = 1 << 1,
    HTTP_PATCH = 1 << 2,
    HTTP_DELETE = 1 << 3,
    HTTP_POST = 1 << 4,
    HTTP_OTHER = 1 << 5,
};

#define ROUTE_MAX_PARAMS 4

/* API versions where behaviour changes (major*100+minor, as request.api_version). */
#define API_ASYNC       207 /* accepts_incomplete, 202, last_operation */
#define API_OPERATION   209 /* the `operation` field */
#define API_FETCH       214 /* GET of instances and bindings; dashboard_url on update */
#define API_RETRY_AFTER 215 /* Retry-After; maintenance_info */
#define API_METADATA    216 /* metadata; instance_usable, update_repeatable */
#define API_ATTRIBUTES  217 /* metadata.attributes */

/* A parsed request. Strings are borrowed from the connection and the exchange: valid until the
 * request completes, so also in a deferred reply's second half. */
struct request {
    enum http_method method; /* HEAD arrives as HTTP_GET: libmicrohttpd drops the body */
    const char *path;        /* the path as sent, still percent-encoded */
    const struct osbq_platform *platform; /* the authenticated platform (/v2), or NULL off /v2 */
    unsigned api_version;                 /* X-Broker-API-Version as major*100+minor; 0 off /v2 */
    const char *request_identity;         /* X-Broker-API-Request-Identity, or NULL */
    const char *originating_identity;     /* X-Broker-API-Originating-Identity, or NULL */
    const char *trace;                    /* JSON object of the B3 trace headers sent, or NULL */
    const char *if_none_match;            /* If-None-Match, or NULL */
    const char *content_type;             /* Content-Type, or NULL */
    const char *params[ROUTE_MAX_PARAMS]; /* decoded path parameters in pattern order */
    const char *accepts_incomplete;       /* decoded query parameters, or NULL when absent */
    const char *query_service_id;         /* ?service_id= */
    const char *query_plan_id;            /* ?plan_id= */
    const char *query_operation;          /* ?operation= */
    const char *body;                     /* request body (NUL-terminated), or NULL when empty */
    size_t body_len;                      /* bytes in body */
};

/* A synchronous request that must wait for its operation: http.c registers a waiter and
 * suspends the connection; osb_sync_reply answers on wake-up. */
struct reply_wait {
    char *operation_id;      /* owned: the operation waited for */
    int64_t timeout_ms;      /* how long it may wait (http.c makes it a deadline) */
    enum osbq_job_kind kind; /* the operation's kind */
    unsigned api_version;    /* the request's API version */
    char *instance_id;       /* owned: for the final read after a timeout */
    char *binding_id;        /* owned: bind and unbind only, else NULL */
    char *dashboard_url;     /* owned: decided at accept (provision), or NULL */
};

struct dispatch_handover;
struct gateway;
struct osbq_store_call;
struct reply;

/* The second half of a handler that needed Redis: runs on an HTTP thread once call is answered
 * (its reply, or why none came, is in it), with the same request and the state the first half
 * kept, and fills out (which may defer again, or wait). */
typedef void (*reply_resume_fn)(const struct gateway *gw, const struct request *req,
                                struct osbq_store_call *call, void *state, struct reply *out);

/* A handler's Redis call: http.c suspends the connection, the store's pipeline sends the call
 * with other requests' calls, and its reply resumes the connection. No HTTP thread waits for
 * Redis. */
struct reply_defer {
    struct osbq_store_call *call;    /* owned; NULL when the request does not defer */
    reply_resume_fn resume;          /* what answers once call is answered */
    void *state;                     /* what resume needs beyond the request, or NULL */
    void (*state_free)(void *state); /* frees state; NULL: state is borrowed (it outlives the
                                      * request, or the exchange owns it) */
};

/* The second half of a handler that waits for a worker's slot before it goes on (a synchronous
 * operation's begin, docs/decisions/0045-wait-for-a-slot-first.md): runs on an HTTP thread once
 * the wait ended, with the request, slot (the slot taken for it, which it then owns: it begins
 * handed, or gives it back) or NULL (none: it begins plain; stopping: the gateway stops), and
 * state, which it owns from then on; fills out. */
typedef void (*reply_slot_fn)(const struct gateway *gw, const struct request *req,
                              struct dispatch_handover *slot, bool stopping, void *state,
                              struct reply *out);

/* A handler's wait for a worker's slot: http.c suspends the connection and queues the wait in
 * the dispatcher's waiting lane (dispatch_wait_slot), under the reply's operation_id, tenant,
 * weight and platform. */
struct reply_slot {
    reply_slot_fn resume;            /* what goes on once the wait ended */
    void *state;                     /* what resume needs beyond the request, or NULL */
    void (*state_free)(void *state); /* frees state when resume never runs (the client left) */
    int64_t deadline_ms;             /* the wait ends then at the latest (osbq_clock_ms) */
};

/* The schemes a 401's WWW-Authenticate names. */
#define REPLY_AUTH_BASIC  1u
#define REPLY_AUTH_BEARER 2u

/* Which kind of answer a reply is. */
enum reply_kind {
    REPLY_NOW = 0,  /* a status and a body, sent at once */
    REPLY_DEFERRED, /* a Redis call first (defer), then its second half answers */
    REPLY_WAIT,     /* a wait for the operation's outcome (wait), then osb_sync_reply answers */
    REPLY_SLOT,     /* a wait for a worker's slot (slot), then its second half goes on */
};

/* A response under construction: handlers fill it through reply.h, http.c sends it. */
struct reply {
    enum reply_kind kind;     /* which of the answers below it is */
    unsigned status;          /* REPLY_NOW: HTTP status */
    char *body;               /* owned JSON text, or NULL when static_body is used */
    const char *static_body;  /* borrowed body that outlives the daemon (the catalog) */
    size_t body_len;          /* bytes of whichever body is set */
    const char *etag;         /* ETag header value (borrowed, static lifetime), or NULL */
    char allow[64];           /* Allow header for 405, or empty */
    bool www_authenticate;    /* add WWW-Authenticate (401) */
    unsigned auth_schemes;    /* REPLY_AUTH_* bits it names; 0: Basic */
    char retry_after[16];     /* Retry-After header (seconds), or empty */
    const char *content_type; /* Content-Type (static string); NULL: application/json */
    char operation_id[33];    /* the operation the request started or joined, for the access
                               * log and the job; empty when none */
    char *job;                /* owned encoded job of operation_id, or NULL: http.c sends it
                               * once the reply is queued or the request suspended */
    size_t job_len;           /* bytes in job */
    struct dispatch_handover *handover; /* owned: the worker slot the job's operation was
                                         * handed to by its begin script, or NULL: a plain job */
    char tenant[TENANT_KEY_MAX];        /* whose job it is (the dispatcher's queues), or empty */
    unsigned weight;                    /* its platform's weight; 0 counts as 1 */
    char platform[OSBQ_PLATFORM_NAME_MAX + 1]; /* its platform's name (the dispatcher's wait
                                                * metric), or empty */
    const char *reason;       /* an error's name for the access log (static), or NULL */
    char *halt_worker;        /* owned: the worker running the step of a creation this request's
                               * delete halted (HALT goes to it with the job's turn), or NULL */
    char halt_operation[33];  /* with halt_worker: that creation's operation */
    struct reply_wait wait;   /* REPLY_WAIT: what the request waits for */
    struct reply_defer defer; /* REPLY_DEFERRED: the handler's Redis call */
    struct reply_slot slot;   /* REPLY_SLOT: what goes on once a slot is taken */
};

#endif
