/* The accept path: how a checked PUT, PATCH or DELETE of an instance or a binding becomes an
 * operation. The handler of a PUT or PATCH fills a struct accept and calls accept_operation
 * with the descriptor of its resource; a DELETE's calls accept_delete. The rest is the same for
 * every kind: the body's objects become canonical text, the idempotency digest is taken, the
 * job is encoded, the store records the operation (one pipelined script call,
 * osbq_store_begin_call), and its answer becomes a 202, a wait for the outcome, the finished
 * identical request's answer, or a refusal from one table. The job rides in the reply: http.c
 * sends it once the reply is queued or the request suspended. */
#ifndef OSBQ_GATEWAY_ACCEPT_H
#define OSBQ_GATEWAY_ACCEPT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gateway.h"
#include "reply.h"
#include "request.h"

/* The status of a refusal by the broker's policy (deny rule or full quota): 403 (decision 0011),
 * but 422 for an update, for which the spec defines it ("the request cannot currently be
 * fulfilled ... e.g. ... over the quota of the requested Service Plan"). */
enum osbq_err policy_refusal(enum osbq_job_kind kind);

/* What an accepted request needs to become an operation. begin is the platform's request as
 * the store records it: its fields are declared once (store_requests.h) and carried from the
 * handler's checks to the begin call. The handler fills those the request names (instance_id,
 * service_id, plan_id, binding's binding_id and predecessor_binding_id, maintenance_version,
 * dashboard_url, expected_plan_id, quotas, halt, deletion_protection); accept_operation the rest.
 * The members below it are what only the gateway reads. Strings and objects are borrowed for the
 * call; those a resource (or a delete) does not have are NULL. */
struct accept {
    enum osbq_job_kind kind;              /* the operation's kind */
    struct osbq_begin_request begin;      /* the request's fields, as above */
    const struct osbq_plan *plan;         /* the plan in the catalog, or NULL when it is no longer
                                           * offered (deprovision, unbind) */
    const json_t *parameters;             /* the body's object, or NULL */
    const json_t *context;                /* the body's object, or NULL */
    const json_t *maintenance_info;       /* instances: the body's object, or NULL */
    const json_t *bind_resource;          /* bind: the body's object (or one made of app_guid) */
    const char *app_guid;                 /* bind: the body's top-level one (its digest's) */
    const struct osbq_policy_use *quotas; /* the quotas it counts against (their refusals) */
    size_t quota_count;                   /* entries in quotas */
    const char *organization_guid;        /* provision: the top-level one, or NULL (the tenant) */
    const char *space_guid;               /* provision: the top-level one, or NULL (the tenant) */
};

/* Whose operation it is: the column of the store answers' table. */
enum accept_resource {
    ACCEPT_INSTANCE,
    ACCEPT_BINDING,
    ACCEPT_RESOURCE_COUNT_, /* how many there are */
};

/* An accepted request's objects as canonical JSON text (digest_canonical): the text its job
 * carries, the store keeps and its idempotency digest hashes. NULL where absent. */
struct accept_texts {
    const char *parameters;
    const char *context;
    const char *maintenance_info;
    const char *bind_resource;
};

/* What differs between starting an instance operation and a binding one; each handler file
 * declares its own. */
struct accept_desc {
    enum accept_resource resource;
    /* The idempotency digest of a provision, update or bind a, whose objects are texts: the
     * members that make a request the same one, in strcmp order (digest.h). False when out of
     * memory. Deletes have none (""). */
    bool (*digest)(const struct accept *a, const struct accept_texts *texts, char digest[33]);
    /* Answers OSBQ_BEGIN_DONE: the identical request was fulfilled already. service_id is the
     * request's. */
    void (*done)(const struct gateway *gw, const struct request *req, const char *service_id,
                 const struct osbq_begin_reply *got, struct reply *out);
};

/* Checks the plan's asynchronous requirement for an operation on desc's resource: false with
 * a 422 AsyncRequired when plan (NULL: no longer offered, no requirement) requires an
 * asynchronous answer and the request does not allow one. */
bool accept_async_check(const struct request *req, const struct accept_desc *desc,
                        const struct osbq_plan *plan, struct reply *out);

/* Starts the operation a: its objects become text, its digest is taken (desc->digest), and out
 * becomes the deferred store call, which accept_operation_after_begin answers. */
void accept_operation(const struct gateway *gw, const struct request *req,
                      const struct accept_desc *desc, const struct accept *a, struct reply *out);

/* Starts a deprovision (desc: the instances') or an unbind (the bindings') of what the path
 * names, its ids checked. The query names the service and plan, both required; the plan may
 * have left the catalog since the instance or binding was made, and deleting must still work,
 * with the defaults. */
void accept_delete(const struct gateway *gw, const struct request *req,
                   const struct accept_desc *desc, struct reply *out);

#endif
