/* One request between libmicrohttpd's calls (http.c creates it on the first call and completes
 * it on the last): its state machine, the handler run on it (admitted first: admission.h), its
 * suspensions while it waits, its reply, and the job that reply carries (sent to the
 * dispatcher from one place, respond, once the reply is queued or the request suspended).
 *
 * Its states, and who resumes a suspended one (each resumption runs on a libmicrohttpd thread,
 * in exchange_go_on):
 *
 *   RECEIVING  reading the body, then in the handler        libmicrohttpd's thread
 *   DEFERRED   suspended while its Redis call travels       the store pipeline's thread
 *   WAITING    suspended until its operation ends           the waiter thread (waiter.h)
 *   SLOT       suspended while it waits for a worker's slot the dispatcher's thread, under the
 *                                                            dispatcher's lock
 *   ANSWERED   a response is queued: further calls ignored  - */
#ifndef OSBQ_GATEWAY_EXCHANGE_H
#define OSBQ_GATEWAY_EXCHANGE_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "gateway.h"
#include "reply.h"

struct exchange;

/* A new request on conn for url and method, with what it needs of its headers and query copied;
 * NULL when out of memory. It holds a reference to the platforms in force. */
struct exchange *exchange_new(const struct gateway *gw, struct MHD_Connection *conn,
                              const char *url, const char *method);

/* Queues r as the response (r is consumed); the request is ANSWERED. */
enum MHD_Result exchange_answer(struct MHD_Connection *conn, struct exchange *ex, struct reply *r);

/* True once a response is queued. */
bool exchange_answered(const struct exchange *ex);

/* Appends size bytes of the body; past OSBQ_MAX_BODY_BYTES they are counted and dropped (the
 * request gets 413 at its end), and far past it the connection is closed (MHD_NO). */
enum MHD_Result exchange_upload(const struct gateway *gw, struct exchange *ex, const char *data,
                                size_t size);

/* A call with the body read, or after a suspension ended: runs the handler (RECEIVING) or the
 * second half the suspension was for, and sends what it made (a response, a Redis call, a wait,
 * a job). */
enum MHD_Result exchange_go_on(const struct gateway *gw, struct MHD_Connection *conn,
                               struct exchange *ex);

/* The request ended (toe: how): its job sent if the client left while its call travelled, its
 * metrics and access-log line written; frees ex. */
void exchange_complete(const struct gateway *gw, struct exchange *ex,
                       enum MHD_RequestTerminationCode toe);

#endif
