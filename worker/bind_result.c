/* A bind's result before it is recorded: its plan's credential lifetime, and its seal. */
#include "bind_result.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"
#include "log.h"

int bind_result_add_expiry(json_t *binding, int64_t ttl_s, time_t now)
{
    if (!json_is_object(binding))
        return -1;
    if (ttl_s <= 0)
        return 0;
    json_t *metadata = json_object_get(binding, "metadata");
    if (metadata == NULL) {
        metadata = json_object();
        if (json_object_set_new(binding, "metadata", metadata) < 0)
            return -1;
    } else if (!json_is_object(metadata)) {
        return -1;
    }
    /* The backend knows best when its credentials really stop working. */
    if (json_object_get(metadata, "expires_at") != NULL)
        return 0;
    if ((int64_t)now < 0 || ttl_s > INT64_MAX - (int64_t)now)
        return -1;
    /* Renewing at 80% leaves a fifth of the lifetime (at least 12 s of the 60 s minimum, hours
     * for real lifetimes) to rotate the credentials before the old ones stop working. */
    time_t times[2] = {(time_t)((int64_t)now + ttl_s), (time_t)((int64_t)now + ttl_s * 8 / 10)};
    static const char *const keys[2] = {"expires_at", "renew_before"};
    for (size_t i = 0; i < 2; i++) {
        struct tm tm;
        char text[64];
        /* The spec's "yyyy-mm-ddThh:mm:ss.sZ": one fractional digit, always 0 here. */
        if (gmtime_r(&times[i], &tm) == NULL ||
            strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S.0Z", &tm) == 0 ||
            json_object_set_new(metadata, keys[i], json_string(text)) < 0)
            return -1;
    }
    return 0;
}

void bind_result_add_plan_expiry(struct backend_call *call)
{
    json_t *binding =
        call->result.binding != NULL ? json_loads(call->result.binding, 0, NULL) : json_object();
    if (bind_result_add_expiry(binding, call->plan->binding_ttl_s, time(NULL)) == 0) {
        if (backend_call_set_binding(call, binding) == 0)
            return;
    } else {
        json_decref(binding);
    }
    log_warnx("operation %s: cannot add the plan's binding_ttl_s to the binding (out of memory "
              "or the backend's metadata is not an object)",
              call->job->operation_id);
    backend_call_fail(call, "The broker could not set the binding's expiry.", true, false);
}

char *bind_result_seal(const struct osbq_secrets *secrets, const char *namespace_,
                       struct backend_call *call)
{
    const struct osbq_job *job = call->job;
    if (secrets == NULL || job->kind != OSBQ_JOB_BIND || !call->result.succeeded ||
        call->result.binding == NULL)
        return NULL;
    const struct osbq_secret_place place = {namespace_, job->instance_id, job->binding_id, NULL};
    char *sealed =
        osbq_secrets_seal(secrets, &place, call->result.binding, strlen(call->result.binding));
    if (sealed != NULL) {
        call->result.binding = sealed;
        return sealed;
    }
    log_warnx("operation %s: cannot seal the binding's credentials (out of memory)",
              job->operation_id);
    backend_call_fail(call, "The broker could not encrypt the binding's credentials.", true, false);
    return NULL;
}
