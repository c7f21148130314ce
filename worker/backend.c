/* The table of backends, the dispatch on an operation's kind, and the helpers backends fill
 * their outcome with. */
#include "backend.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int backend_run(const struct backend *b, struct backend_call *call)
{
    int (*op)(struct backend_call *) = NULL;
    switch (call->job->kind) {
    case OSBQ_JOB_PROVISION:
        op = b->provision;
        break;
    case OSBQ_JOB_UPDATE:
        op = b->update;
        break;
    case OSBQ_JOB_DEPROVISION:
        op = b->deprovision;
        break;
    case OSBQ_JOB_BIND:
        op = b->bind;
        break;
    case OSBQ_JOB_UNBIND:
        op = b->unbind;
        break;
    case OSBQ_JOB_KIND_NONE:
    default:
        /* The decoder refuses unknown kinds, so this is a bug; fail the operation rather than
         * leave it running forever. */
        backend_call_fail(call, "The broker received an operation of an unknown kind.", true,
                          false);
        return 0;
    }
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

void backend_call_succeed(struct backend_call *call, const char *description)
{
    call->result.succeeded = true;
    call->result.instance_usable = true;
    call->result.update_repeatable = false;
    set_description(call, description);
}

void backend_call_fail(struct backend_call *call, const char *description, bool instance_usable,
                       bool update_repeatable)
{
    call->result.succeeded = false;
    /* A failure hands out no credentials: they are not even sent to Redis. */
    call->result.binding = NULL;
    call->result.instance_usable = instance_usable;
    call->result.update_repeatable = update_repeatable;
    set_description(call, description);
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

/* Zeroes and frees a binding text: it holds credentials, and freed heap memory can be read
 * back by a later allocation or show up in a core dump. */
static void free_secret(char *text)
{
    if (text == NULL)
        return;
    sodium_memzero(text, strlen(text));
    free(text);
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
    free_secret(call->binding);
    call->binding = text;
    call->result.binding = text;
    rc = 0;
out:
    json_decref(binding);
    return rc;
}

void backend_call_clear(struct backend_call *call)
{
    free_secret(call->binding);
    call->binding = NULL;
    free(call->dashboard_url);
    free(call->metadata);
    call->dashboard_url = NULL;
    call->metadata = NULL;
    call->description[0] = '\0';
    memset(&call->result, 0, sizeof call->result);
}
