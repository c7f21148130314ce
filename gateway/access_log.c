/* The gateway's access log: one line per completed request. */
#include "access_log.h"

#include <jansson.h>
#include <stdio.h>

#include "log.h"

void access_log_note_error(struct access_error *out, const struct reply *r)
{
    const char *text = r->body != NULL ? r->body : r->static_body;
    json_t *body = text != NULL ? json_loadb(text, r->body_len, 0, NULL) : NULL;
    const char *reason =
        r->reason != NULL ? r->reason : json_string_value(json_object_get(body, "error"));
    if (reason != NULL)
        (void)snprintf(out->reason, sizeof out->reason, "%s", reason);
    const char *description = json_string_value(json_object_get(body, "description"));
    if (description != NULL)
        osbq_log_first_words(description, 8, out->detail, sizeof out->detail);
    json_decref(body);
}

void access_log_write(const struct access_entry *entry)
{
    unsigned status = entry->status;
    enum osbq_log_level level =
        status == 401 || status == 403 || status >= 500 ? OSBQ_LOG_WARN : OSBQ_LOG_INFO;
    if (!osbq_log_enabled(level))
        return;
    struct osbq_log_line line;
    osbq_log_line_begin(&line, level, "request");
    osbq_log_line_str(&line, "method", entry->method);
    osbq_log_line_str(&line, "path", entry->path);
    osbq_log_line_int(&line, "status", status);
    if (entry->error->reason[0] != '\0')
        osbq_log_line_str(&line, "reason", entry->error->reason);
    if (entry->error->detail[0] != '\0')
        osbq_log_line_str(&line, "detail", entry->error->detail);
    if (entry->client[0] != '\0')
        osbq_log_line_str(&line, "client", entry->client);
    osbq_log_line_int(&line, "duration_us", entry->duration_us);
    osbq_log_line_str(&line, "request_id", entry->request_id);
    osbq_log_line_str(&line, "instance", entry->instance_id);
    osbq_log_line_str(&line, "binding", entry->binding_id);
    osbq_log_line_str(&line, "platform", entry->platform);
    if (entry->operation_id[0] != '\0')
        osbq_log_line_str(&line, "op", entry->operation_id);
    if (entry->aborted != 0)
        osbq_log_line_int(&line, "aborted", entry->aborted);
    osbq_log_line_end(&line);
}
