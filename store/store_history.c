/* An operation's history: one JSON object per line in its `history` field (store/lua/lib/
 * history.lua), without the events the operation's own fields say (docs/decisions/0041). A
 * first claim while the field is still empty is told by started_ms, worker and attempt 1; a
 * worker's outcome by state, finished_ms, worker and description. Operators see them as lines
 * like the others, rebuilt here. */
#include "store_history.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

/* The events an outcome is written with when a script records it (finish.lua's abandon,
 * operator and sync_limit modes, and every outcome of the previous release). */
static const char *const outcome_events[] = {"succeeded", "failed", "abandoned",
                                             "failed_by_operator", "failed_at_sync_limit"};

/* Whether a history line is an outcome's. */
static bool line_is_outcome(const char *line)
{
    json_t *event = json_loads(line, 0, NULL);
    const char *name = json_string_value(json_object_get(event, "event"));
    bool outcome = false;
    for (size_t i = 0; name != NULL && i < sizeof outcome_events / sizeof outcome_events[0]; i++)
        outcome = outcome || strcmp(name, outcome_events[i]) == 0;
    json_decref(event);
    return outcome;
}

/* Adds name: the integer text value to event, when value is one. */
static void set_ms(json_t *event, const char *name, const char *value)
{
    char *end = NULL;
    long long ms = value != NULL ? strtoll(value, &end, 10) : 0;
    if (value != NULL && end != value && *end == '\0')
        json_object_set_new(event, name, json_integer(ms));
}

/* Adds name: value to event when value is not NULL. */
static void set_text(json_t *event, const char *name, const char *value)
{
    if (value != NULL)
        json_object_set_new(event, name, json_string(value));
}

/* The event as one compact JSON line (malloc'd), or NULL. Takes event. */
static char *event_line(json_t *event)
{
    char *line = event != NULL ? json_dumps(event, JSON_COMPACT) : NULL;
    json_decref(event);
    return line;
}

/* The first claim, which claim.lua leaves to started_ms while the history is empty. */
static char *implicit_claim(const struct osbq_fields *op)
{
    json_t *event = json_object();
    set_ms(event, "ms", osbq_fields_get(op, "started_ms"));
    json_object_set_new(event, "event", json_string("claimed"));
    set_text(event, "worker", osbq_fields_get(op, "worker"));
    json_object_set_new(event, "attempt", json_integer(1));
    return event_line(event);
}

/* A worker's outcome, which finish.lua leaves to the fields it writes. */
static char *implicit_outcome(const struct osbq_fields *op, const char *state)
{
    json_t *event = json_object();
    set_ms(event, "ms", osbq_fields_get(op, "finished_ms"));
    json_object_set_new(event, "event", json_string(state));
    set_text(event, "worker", osbq_fields_get(op, "worker"));
    set_text(event, "description", osbq_fields_get(op, "description"));
    return event_line(event);
}

/* Splits text (one JSON object per line) into out[*n ...]; false when out of memory. */
static bool split_lines(const char *text, size_t len, char **out, size_t *n)
{
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != '\n')
            continue;
        if (i > start && (out[(*n)++] = strndup(text + start, i - start)) == NULL)
            return false;
        start = i + 1;
    }
    return true;
}

char **store_history_events(const struct osbq_fields *op, const char *text, size_t len,
                            size_t *count)
{
    size_t lines = 0;
    for (size_t i = 0; text != NULL && i < len; i++)
        lines += text[i] == '\n';
    /* Each line, plus a first claim and an outcome. */
    char **out = calloc(lines + 4, sizeof *out);
    if (out == NULL)
        return NULL;
    size_t n = 0;
    bool ok = true;
    if (text == NULL && osbq_fields_get(op, "started_ms") != NULL)
        ok = (out[n++] = implicit_claim(op)) != NULL;
    ok = ok && split_lines(text != NULL ? text : "", text != NULL ? len : 0, out, &n);
    const char *state = osbq_fields_get(op, "state");
    bool finished =
        state != NULL && (strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0);
    if (ok && finished && (n == 0 || !line_is_outcome(out[n - 1])))
        ok = (out[n++] = implicit_outcome(op, state)) != NULL;
    if (!ok) {
        osbq_store_strings_free(out);
        return NULL;
    }
    *count = n;
    return out;
}
