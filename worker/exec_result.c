/* The exec backend's outcome from its program's end and output. */
#include "exec_result.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "log.h"

#define EXEC_NO_MEMORY "The broker ran out of memory."

/* Fails the call; a provision that failed leaves no instance, any other kind leaves it as it
 * was unless the program's result says otherwise (instance_usable, update_repeatable). */
static void fail(struct backend_call *call, const char *description, const json_t *result)
{
    bool usable = call->job->kind != OSBQ_JOB_PROVISION;
    bool repeatable = false;
    json_t *v = json_object_get(result, "instance_usable");
    if (json_is_boolean(v))
        usable = json_is_true(v);
    v = json_object_get(result, "update_repeatable");
    if (json_is_boolean(v))
        repeatable = json_is_true(v);
    backend_call_fail(call, description, usable, repeatable);
}

/* The bind's binding from the result: the spec's binding fields it holds, type-checked.
 * Returns 0 (the binding set, or none given), or -1 with a failure recorded. */
static int set_binding(struct backend_call *call, json_t *result)
{
    static const struct {
        const char *key;
        int type;
    } fields[] = {
        {"credentials", JSON_OBJECT},      {"endpoints", JSON_ARRAY},
        {"syslog_drain_url", JSON_STRING}, {"route_service_url", JSON_STRING},
        {"volume_mounts", JSON_ARRAY},     {"metadata", JSON_OBJECT},
    };
    json_t *binding = json_object();
    if (binding == NULL) {
        fail(call, EXEC_NO_MEMORY, NULL);
        return -1;
    }
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        json_t *v = json_object_get(result, fields[i].key);
        if (v == NULL)
            continue;
        if ((int)json_typeof(v) != fields[i].type) {
            char text[BACKEND_DESCRIPTION_MAX];
            (void)snprintf(text, sizeof text, "The service's program returned a %s that is not %s.",
                           fields[i].key,
                           fields[i].type == JSON_OBJECT  ? "an object"
                           : fields[i].type == JSON_ARRAY ? "an array"
                                                          : "a string");
            json_decref(binding);
            fail(call, text, NULL);
            return -1;
        }
        if (json_object_set(binding, fields[i].key, v) < 0) {
            json_decref(binding);
            fail(call, EXEC_NO_MEMORY, NULL);
            return -1;
        }
    }
    if (json_object_size(binding) == 0) {
        json_decref(binding);
        return 0;
    }
    if (backend_call_set_binding(call, binding) < 0) {
        fail(call, EXEC_NO_MEMORY, NULL);
        return -1;
    }
    return 0;
}

/* A provision's or update's dashboard_url and metadata from the result. 0, or -1 with a
 * failure recorded. */
static int set_instance_fields(struct backend_call *call, const json_t *result)
{
    json_t *url = json_object_get(result, "dashboard_url");
    json_t *metadata = json_object_get(result, "metadata");
    if ((url != NULL && !json_is_string(url)) || (metadata != NULL && !json_is_object(metadata))) {
        fail(call,
             url != NULL && !json_is_string(url)
                 ? "The service's program returned a dashboard_url that is not a string."
                 : "The service's program returned a metadata that is not an object.",
             NULL);
        return -1;
    }
    if (url != NULL && backend_call_set_dashboard_url(call, "%s", json_string_value(url)) < 0) {
        fail(call, EXEC_NO_MEMORY, NULL);
        return -1;
    }
    if (metadata != NULL) {
        char *text = json_dumps(metadata, JSON_COMPACT);
        if (text == NULL) {
            fail(call, EXEC_NO_MEMORY, NULL);
            return -1;
        }
        free(call->metadata);
        call->metadata = text;
        call->result.metadata = text;
    }
    return 0;
}

/* Whether the result line answers "in progress": the step ended, the operation did not. */
static bool is_in_progress(const json_t *result)
{
    const char *state = json_string_value(json_object_get(result, "state"));
    return state != NULL && strcmp(state, "in progress") == 0;
}

/* Records an in-progress result line: {"state": "in progress", "description": "...",
 * "poll_after_s": N, "resume": {...}}. A line that breaks the protocol fails the operation
 * with a description saying how: the program is the operator's, and a step that cannot be
 * resumed is better ended than polled forever. */
static void wait_for(struct backend_call *call, const struct exec_output *output,
                     const json_t *result)
{
    char text[BACKEND_DESCRIPTION_MAX];
    json_t *after = json_object_get(result, "poll_after_s");
    json_t *description = json_object_get(result, "description");
    json_t *resume = json_object_get(result, "resume");
    if (!json_is_number(after) || json_number_value(after) < 0) {
        fail(call,
             "The program answered in progress without a valid poll_after_s (a number of seconds, "
             "0 or more).",
             NULL);
        return;
    }
    if (description != NULL && !json_is_string(description)) {
        fail(call, "The program answered in progress with a description that is not a string.",
             NULL);
        return;
    }
    if (resume != NULL && !json_is_null(resume) && !json_is_object(resume)) {
        fail(call, "The program answered in progress with a resume that is not an object.", NULL);
        return;
    }
    if (json_is_object(resume)) {
        size_t len = json_dumpb(resume, NULL, 0, JSON_COMPACT);
        if (len > BACKEND_RESUME_MAX) {
            (void)snprintf(text, sizeof text,
                           "The program's resume state is %zu bytes, over the limit of %d.", len,
                           BACKEND_RESUME_MAX);
            fail(call, text, NULL);
            return;
        }
    }
    /* Seconds as a double: 0.5 is half a second; a day and more is cut by the contract. */
    double seconds = json_number_value(after);
    int64_t ms = seconds * 1000.0 > (double)BACKEND_POLL_AFTER_MAX_MS ? BACKEND_POLL_AFTER_MAX_MS
                                                                      : (int64_t)(seconds * 1000.0);
    const char *said = json_string_value(description);
    if (said == NULL || said[0] == '\0')
        said = output->last_progress[0] != '\0' ? output->last_progress : "In progress.";
    (void)backend_call_wait_for(call, said, ms,
                                json_is_object(resume) ? json_deep_copy(resume) : NULL);
}

void exec_result_report(struct backend_call *call, const struct exec_watch_end *end,
                        const struct exec_output *output, int64_t timeout_ms)
{
    const char *op = call->job->operation_id;
    char text[BACKEND_DESCRIPTION_MAX];
    bool result_bad;
    json_t *result = exec_output_result(output, &result_bad);

    if (end->stop == EXEC_WATCH_TIMEOUT) {
        log_warnx("operation %s: the exec program ran past its timeout of %lld ms; killed", op,
                  (long long)timeout_ms);
        (void)snprintf(text, sizeof text, "The program did not finish within %lld ms.",
                       (long long)timeout_ms);
        fail(call, text, NULL);
    } else if (end->lost) {
        log_errorx("operation %s: the exec program's exit status is unknown (reaped elsewhere)",
                   op);
        fail(call, "The broker lost track of the service's program.", NULL);
    } else if (WIFSIGNALED(end->status)) {
        log_warnx("operation %s: the exec program was killed by signal %d", op,
                  WTERMSIG(end->status));
        (void)snprintf(text, sizeof text, "The program was killed by signal %d.",
                       WTERMSIG(end->status));
        fail(call, text, result);
    } else if (!WIFEXITED(end->status) || WEXITSTATUS(end->status) != 0) {
        int code = WIFEXITED(end->status) ? WEXITSTATUS(end->status) : -1;
        log_info("operation %s: the exec program exited with status %d", op, code);
        exec_output_stderr_description(output, text, sizeof text);
        if (text[0] == '\0')
            (void)snprintf(text, sizeof text, "The program exited with status %d.", code);
        fail(call, text, result);
    } else if (output->result_state == EXEC_RESULT_TOO_LONG) {
        (void)snprintf(text, sizeof text,
                       "The program's result (its last stdout line starting with '{') is longer "
                       "than %d bytes.",
                       EXEC_LINE_MAX);
        fail(call, text, NULL);
    } else if (result_bad) {
        fail(call,
             "The program's result (its last stdout line starting with '{') is not a valid JSON "
             "object.",
             NULL);
    } else if (is_in_progress(result)) {
        wait_for(call, output, result);
    } else {
        backend_call_succeed(call, output->last_progress[0] != '\0' ? output->last_progress
                                                                    : "Succeeded.");
        if (result != NULL) {
            if (call->job->kind == OSBQ_JOB_BIND)
                (void)set_binding(call, result);
            else if (call->job->kind == OSBQ_JOB_PROVISION || call->job->kind == OSBQ_JOB_UPDATE)
                (void)set_instance_fields(call, result);
        }
    }
    /* jansson frees its copies of the credentials without zeroing them; they live only here. */
    json_decref(result);
}
