/* The gateway's access log: one line per request, written when it completes, with what an
 * on-call person needs to find it again (its status, an error's name and first words, the
 * client, the time it took, its ids). */
#ifndef OSBQ_GATEWAY_ACCESS_LOG_H
#define OSBQ_GATEWAY_ACCESS_LOG_H

#include <stdint.h>

#include "reply.h"

/* An error answer as the access log names it. */
struct access_error {
    char reason[40]; /* its name (the reply's reason, or the body's "error"), or empty */
    char detail[96]; /* the first words of its description, or empty */
};

/* Keeps the name and first words of r, an answer of status 400 or more, in *out: read from the
 * body, since some error bodies are not made by reply_error. Call before the response takes the
 * body. r is borrowed. */
void access_log_note_error(struct access_error *out, const struct reply *r);

/* One request, as its line tells it. Every pointer is borrowed for the call; a NULL string
 * leaves its field out. */
struct access_entry {
    const char *method;               /* the method as sent */
    const char *path;                 /* the raw path */
    unsigned status;                  /* the status answered; 0: cut off before any answer */
    const struct access_error *error; /* its error's name and first words (empty: none) */
    const char *client;               /* the peer's numeric address; "": unknown */
    int64_t duration_us;              /* from its request line to its completion */
    const char *request_id;           /* X-Broker-API-Request-Identity */
    const char *instance_id;          /* the instance of its path */
    const char *binding_id;           /* the binding of its path */
    const char *platform;             /* its platform's name (/v2 requests) */
    const char *operation_id;         /* the operation it started or joined; "": none */
    int aborted;                      /* libmicrohttpd's termination code when the request did
                                       * not complete; 0 when it did */
};

/* Writes entry's line: at warning level for failed authentication and the broker's own failures
 * (401, 403, 5xx), which need a look; at info for the rest, other client errors included. */
void access_log_write(const struct access_entry *entry);

#endif
