/* The table of backends, the dispatch on an operation's kind, and the helpers backends fill
 * their outcome with. */
#include "backend.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "secrets.h"

/* A new backend adds itself here and its name and settings in common/backend_settings.c. */
const struct backend *const backends[] = {&backend_sim, &backend_redis, &backend_exec, NULL};

const struct backend *backend_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; backends[i] != NULL; i++) {
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    }
    return NULL;
}

void backend_log_context_set(const struct osbq_job *job)
{
    struct osbq_log_context context = {.operation_id = job->operation_id,
                                       .instance_id = job->instance_id,
                                       .binding_id = job->binding_id,
                                       .request_id = job->request_identity};
    osbq_log_context_set(&context);
}

int backend_run(const struct backend *b, struct backend_call *call)
{
    int (*const ops[])(struct backend_call *) = {
        [OSBQ_JOB_PROVISION] = b->provision,     [OSBQ_JOB_UPDATE] = b->update,
        [OSBQ_JOB_DEPROVISION] = b->deprovision, [OSBQ_JOB_BIND] = b->bind,
        [OSBQ_JOB_UNBIND] = b->unbind,
    };
    unsigned kind = (unsigned)call->job->kind;
    if (kind == OSBQ_JOB_KIND_NONE || kind >= sizeof ops / sizeof ops[0]) {
        /* The decoder refuses unknown kinds, so this is a bug; fail the operation rather than
         * leave it running forever. */
        backend_call_fail(call, "The broker received an operation of an unknown kind.", true,
                          false);
        return 0;
    }
    int (*op)(struct backend_call *) = ops[kind];
    if (op == NULL) {
        char text[BACKEND_DESCRIPTION_MAX];
        (void)snprintf(text, sizeof text, "The %s backend does not support %s yet.", b->name,
                       osbq_job_kind_name(call->job->kind));
        backend_call_fail(call, text, true, false);
        return 0;
    }
    return op(call);
}

/* Copies text into the call's description buffer (cut if too long) and points result at it. */
static void set_description(struct backend_call *call, const char *text)
{
    if (text == NULL) {
        call->result.description = NULL;
        return;
    }
    (void)snprintf(call->description, sizeof call->description, "%s", text);
    call->result.description = call->description;
}

/* Forgets an in-progress answer given before (a backend may change its mind within a step). */
static void drop_in_progress(struct backend_call *call)
{
    call->result.in_progress = false;
    call->result.poll_after_ms = 0;
    call->result.resume = NULL;
    free(call->resume_text);
    call->resume_text = NULL;
}

bool backend_call_keep_alive(struct backend_call *call, const char *description)
{
    if (call->keep_alive != NULL)
        return call->keep_alive(call, description);
    if (description == NULL)
        return call->wait(call, 0);
    call->progress(call, description);
    return true;
}

void backend_call_succeed(struct backend_call *call, const char *description)
{
    drop_in_progress(call);
    call->result.succeeded = true;
    call->result.instance_usable = true;
    call->result.update_repeatable = false;
    set_description(call, description);
}

void backend_call_fail(struct backend_call *call, const char *description, bool instance_usable,
                       bool update_repeatable)
{
    drop_in_progress(call);
    call->result.succeeded = false;
    /* A failure hands out no credentials: they are not even sent to Redis. */
    call->result.binding = NULL;
    call->result.instance_usable = instance_usable;
    call->result.update_repeatable = update_repeatable;
    set_description(call, description);
}

int backend_call_wait_for(struct backend_call *call, const char *description, int64_t poll_after_ms,
                          json_t *resume)
{
    char text[BACKEND_DESCRIPTION_MAX];
    char *saved = NULL;
    if (resume != NULL) {
        if (!json_is_object(resume)) {
            json_decref(resume);
            backend_call_fail(call, "The backend's resume state is not a JSON object.", true,
                              false);
            return -1;
        }
        size_t len = json_dumpb(resume, NULL, 0, JSON_COMPACT);
        if (len > BACKEND_RESUME_MAX) {
            json_decref(resume);
            (void)snprintf(text, sizeof text,
                           "The backend's resume state is %zu bytes, over the %d limit.", len,
                           BACKEND_RESUME_MAX);
            backend_call_fail(call, text, true, false);
            return -1;
        }
        saved = malloc(len + 1);
        if (saved == NULL || json_dumpb(resume, saved, len, JSON_COMPACT) != len) {
            free(saved);
            json_decref(resume);
            backend_call_fail(call, "The broker ran out of memory.", true, false);
            return -1;
        }
        saved[len] = '\0';
        json_decref(resume);
    }
    drop_in_progress(call);
    /* A failure's flags are meaningless while in progress; set them as a success would. */
    call->result.succeeded = false;
    call->result.binding = NULL;
    call->result.instance_usable = true;
    call->result.update_repeatable = false;
    call->result.in_progress = true;
    call->result.poll_after_ms = poll_after_ms < 0 ? 0
                                 : poll_after_ms > BACKEND_POLL_AFTER_MAX_MS
                                     ? BACKEND_POLL_AFTER_MAX_MS
                                     : poll_after_ms;
    call->resume_text = saved;
    call->result.resume = saved;
    set_description(call, description);
    return 0;
}

int backend_call_set_dashboard_url(struct backend_call *call, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    char *url = malloc((size_t)n + 1);
    if (url == NULL)
        return -1;
    va_start(ap, fmt);
    (void)vsnprintf(url, (size_t)n + 1, fmt, ap);
    va_end(ap);
    free(call->dashboard_url);
    call->dashboard_url = url;
    call->result.dashboard_url = url;
    return 0;
}

int backend_call_set_binding(struct backend_call *call, json_t *binding)
{
    int rc = -1;
    if (!json_is_object(binding))
        goto out;
    /* json_dumpb into a buffer of the exact size, rather than json_dumps: json_dumps grows a
     * buffer by realloc and so leaves partial copies of the credentials in freed memory. */
    size_t len = json_dumpb(binding, NULL, 0, JSON_COMPACT);
    if (len == 0)
        goto out;
    char *text = malloc(len + 1);
    if (text == NULL)
        goto out;
    if (json_dumpb(binding, text, len, JSON_COMPACT) != len) {
        sodium_memzero(text, len);
        free(text);
        goto out;
    }
    text[len] = '\0';
    osbq_secrets_free_text(call->binding);
    call->binding = text;
    call->result.binding = text;
    rc = 0;
out:
    json_decref(binding);
    return rc;
}

void backend_call_clear(struct backend_call *call)
{
    osbq_secrets_free_text(call->binding);
    call->binding = NULL;
    free(call->dashboard_url);
    free(call->metadata);
    free(call->resume_text);
    call->dashboard_url = NULL;
    call->metadata = NULL;
    call->resume_text = NULL;
    call->description[0] = '\0';
    memset(&call->result, 0, sizeof call->result);
}
