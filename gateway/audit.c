/* Refusals the gateway decides alone, appended to the audit trail at a bounded rate. */
#include "audit.h"

#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "originating_identity.h"
#include "route.h"
#include "store_events.h"

int audit_init(struct audit *a, bool on)
{
    *a = (struct audit){.on = on};
    return pthread_mutex_init(&a->lock, NULL) == 0 ? 0 : -1;
}

void audit_clear(struct audit *a)
{
    pthread_mutex_destroy(&a->lock);
}

/* Whether one more refusal may be written now; *left_out takes the count of those that were
 * not since the last one written. */
static bool audit_admit(struct audit *a, uint64_t *left_out)
{
    int64_t now = osbq_clock_ms();
    pthread_mutex_lock(&a->lock);
    if (now - a->window_ms >= 1000) {
        a->window_ms = now;
        a->written = 0;
    }
    bool admit = a->written < AUDIT_REFUSALS_PER_S;
    if (admit) {
        a->written++;
        *left_out = a->unrecorded;
        a->unrecorded = 0;
    } else {
        a->unrecorded++;
    }
    pthread_mutex_unlock(&a->lock);
    return admit;
}

void audit_refusal(struct audit *a, struct osbq_store *store, const struct request *req,
                   const char *client, const struct audit_refusal *r)
{
    uint64_t left_out = 0;
    if (!a->on || !audit_admit(a, &left_out))
        return;
    char status[8], unrecorded[24], path[256];
    (void)snprintf(status, sizeof status, "%u", r->status);
    (void)snprintf(unrecorded, sizeof unrecorded, "%llu", (unsigned long long)left_out);
    (void)snprintf(path, sizeof path, "%s", req->path != NULL ? req->path : "");
    char *user = originating_identity_decode(req->originating_identity);
    const char *fields[] = {
        "reason",      r->reason,
        "status",      status,
        "kind",        r->kind,
        "instance",    r->instance_id,
        "binding",     r->binding_id,
        "platform",    r->platform,
        "user",        user,
        "request",     req->request_identity,
        "method",      route_method_label(req->method),
        "path",        path,
        "client",      client,
        "description", r->description,
        "unrecorded",  left_out > 0 ? unrecorded : NULL,
    };
    struct osbq_error err = {0};
    if (osbq_store_event_add(store, "refused", fields, sizeof fields / sizeof fields[0] / 2, &err) <
        0)
        log_warnx("the audit trail did not take a %u refusal: %s", r->status, err.text);
    free(user);
}
